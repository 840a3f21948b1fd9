"""The orientation table script: scores per rule, paired differences, and the causal-learn check."""

from __future__ import annotations

import json

import numpy as np

from baselines.orientation_table import causal_learn_cpdag, main, score_instance
from heuresis_env.discovery import ORIENTATION_RULES, make_ci_test, pc
from heuresis_env.generation import InstanceKey, generate_instance
from heuresis_env.metrics import shd_cpdag


def test_score_instance_scores_every_rule_on_one_skeleton():
    key = InstanceKey("lg", "dev", 3, n=300)
    scores = score_instance(key, "fisherz")
    instance = generate_instance(key)
    assert set(scores.shd_cpdag) == set(ORIENTATION_RULES)
    for rule in ORIENTATION_RULES:
        graph = pc(instance.X, instance.names, orientation=rule).graph
        assert scores.shd_cpdag[rule] == shd_cpdag(graph, instance.record.cpdag)


def test_table_command_writes_markdown_and_json(tmp_path, capsys):
    out = tmp_path / "table.json"
    assert main(["--family", "anm", "--split", "dev", "--count", "3", "--n", "200",
                 "--resamples", "200", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| union (default) |" in printed and "| majority |" in printed
    record = json.loads(out.read_text())
    default = record["tables"]["anm"]["union"]
    assert default["shd_cpdag_vs_default"]["mean"] == 0.0
    for rule in ORIENTATION_RULES:
        shd = [s["shd_cpdag"][rule] for s in record["instances"]["anm"]]
        assert record["tables"]["anm"][rule]["shd_cpdag"]["mean"] == np.mean(shd)


def test_causal_learn_through_our_ci_test_equals_the_default():
    instance = generate_instance(InstanceKey("mixed", "dev", 2, n=400))
    tester = make_ci_test("fisherz", np.asarray(instance.X))
    ours = pc(None, instance.names, ci_test=tester)
    assert causal_learn_cpdag(tester, instance.names, 0.05) == ours.graph

"""Issue 46, route 6: the reference run.

A run relabelled ``bca`` became the report's BCA_φ reference: re-scoring checks that a run's
scores are those of its final graphs, not that the graphs are what the named policy submits,
so an oracle's results renamed ``bca`` (or a ``bca`` run whose final graphs were edited with
their scores) moved every Δʳ_φ and headroom of the report. A reference is now re-derived from
its instances — its registered policy played again with its recorded options, the final graphs
compared — or refused: marked **UNVERIFIED** with the reason, and not used as the reference.
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.integrity import (
    CHAIN_FIELD,
    CHAIN_START,
    CONFIG_SEAL_FIELD,
    SEAL_FIELD,
    seal_config,
    seal_record,
    verify_run,
)
from heuresis_env.evaluation.reference_check import rederive_reference
from heuresis_env.evaluation.run_format import config_digest, load_run, regenerate_instance
from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt
from heuresis_env.metrics import score_graph
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports.build import build_report
from heuresis_env.reports.loading import load_runs

#: small instances on which the oracle and BCA_φ submit different graphs (anm/dev/1)
OPTIONS = {"families": ["lg", "anm"], "count": 3, "d": 5, "n": 200, "progress": False,
           "settings": EpisodeSettings(max_steps=12, max_seconds=600.0),
           "policy_isolation": "process"}
SELECTION = {"bca": {"lg": "ges", "anm": "pc-kci"}}
COMPETITOR = "pc-fisherz"


def _runs(root: Path, split: str, salt: str | None = None) -> dict[str, Path]:
    selection = root / "selection.json"
    selection.write_text(json.dumps(SELECTION))
    runs = {}
    for name, options in (("bca", {"selection_path": str(selection)}), ("oracle", {}),
                          (COMPETITOR, {})):
        runs[name] = root / name
        evaluate(name, split=split, out_dir=runs[name], policy_options=options, salt=salt,
                 **OPTIONS)
    return runs


@pytest.fixture(scope="module")
def dev_runs(tmp_path_factory) -> dict[str, Path]:
    return _runs(tmp_path_factory.mktemp("references"), "dev")


@pytest.fixture(scope="module")
def sealed_runs(tmp_path_factory) -> tuple[dict[str, Path], str]:
    salt = new_salt()
    return _runs(tmp_path_factory.mktemp("sealed-references"), "test", salt), salt


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _rewrite(run: Path, config: dict, records: list[dict], salt: str | None = None) -> None:
    """Write a run as a forger would: every line re-digested to the config, and on a sealed
    run config and lines sealed again (a forger holding the salt: an insider)."""
    config = {k: v for k, v in config.items() if k != CONFIG_SEAL_FIELD}
    digest = config_digest(config)
    previous, lines = CHAIN_START, []
    for record in records:
        record = {k: v for k, v in record.items() if k not in (SEAL_FIELD, CHAIN_FIELD)}
        record["config_digest"] = digest
        if salt is not None:
            record = seal_record(record, salt, previous)
            previous = record[SEAL_FIELD]
        lines.append(json.dumps(record) + "\n")
    (run / "config.json").write_text(json.dumps(seal_config(config, salt) if salt else config))
    (run / "results.jsonl").write_text("".join(lines))


def _relabel(source: Path, as_of: Path, out: Path, salt: str | None = None) -> Path:
    """``source``'s results under the policy and options of the run ``as_of``."""
    shutil.copytree(source, out)
    claimed = json.loads((as_of / "config.json").read_text())
    config = json.loads((out / "config.json").read_text())
    for name in ("policy", "policy_options", "reference", "policy_isolation"):
        config[name] = claimed.get(name)
    records = _lines(out)
    for record in records:
        record.update(policy=claimed["policy"], reference=False)
    _rewrite(out, config, records, salt)
    return out


def _bca_values(report) -> list[float]:
    return [row["bca"] for row in report.tables["table6_references"].values if "bca" in row]


def _headline_deltas(report) -> list[str]:
    return [key for row in report.tables["headline"].values for key in row
            if key.endswith(":delta")]


def test_an_oracle_run_relabelled_bca_does_not_become_bca_phi(dev_runs, tmp_path):
    oracle, bca = load_run(dev_runs["oracle"]), load_run(dev_runs["bca"])
    graphs = {e.episode_id: e.final_graph for e in bca.episodes}
    assert any(e.final_graph != graphs[e.episode_id] for e in oracle.episodes)  # the premise
    forged = _relabel(dev_runs["oracle"], dev_runs["bca"], tmp_path / "bca")
    assert verify_run(load_run(forged)) == 6  # its scores are those of its graphs: re-scored

    check = rederive_reference(load_run(forged))
    assert not check.verified and "not the one policy 'bca' gives" in check.reason

    report = build_report([dev_runs[COMPETITOR], forged, dev_runs["oracle"]],
                          tmp_path / "report", n_resamples=50, trace_analysis=False)
    markdown, html = report.markdown_path.read_text(), report.html_path.read_text()
    for text in (markdown, html):
        assert "UNVERIFIED reference bca, not used as BCA_φ" in text
        assert "not the one policy &#x27;bca&#x27; gives" in text or \
            "not the one policy 'bca' gives" in text
    assert _bca_values(report) == [] and _headline_deltas(report) == []
    # the real oracle beside it is verified and used
    oracle_values = [row["oracle"] for row in report.tables["table6_references"].values]
    assert oracle_values and not any(math.isnan(v) for v in oracle_values)


def test_a_bca_run_with_edited_final_graphs_is_refused(dev_runs, tmp_path):
    # the run as it was written is verified and is BCA_φ (Δʳ_φ in the headline)
    loaded = load_runs([dev_runs[COMPETITOR], dev_runs["bca"]])
    assert [c.verified for c in loaded.reference_checks] == [True]
    assert loaded.reference_checks[0].checked == 6 and not loaded.refused_references
    honest = build_report([dev_runs[COMPETITOR], dev_runs["bca"]], tmp_path / "honest",
                          n_resamples=50, trace_analysis=False)
    assert len(_bca_values(honest)) == 3 and _headline_deltas(honest)

    # one episode's final graph replaced by the true graph, its scores computed again from it
    forged = Path(shutil.copytree(dev_runs["bca"], tmp_path / "bca"))
    run = load_run(forged)
    records = _lines(forged)
    record = next(r for r in records if r["scores"]["f1"] < 1)
    instance = regenerate_instance(run, (record["family"], "dev", record["index"]),
                                   record["instance_sha256"])
    truth = instance.record.dag
    record["final_graph"] = truth.to_dict()
    record["scores"].update({k: float(v) for k, v in
                             score_graph(truth, truth, instance.record.cpdag).items()})
    _rewrite(forged, json.loads((forged / "config.json").read_text()), records)
    assert verify_run(load_run(forged)) == 6  # re-scoring cannot see it

    report = build_report([dev_runs[COMPETITOR], forged], tmp_path / "report", n_resamples=50,
                          trace_analysis=False)
    markdown = report.markdown_path.read_text()
    assert "UNVERIFIED reference bca, not used as BCA_φ" in markdown
    assert f"episode {record['episode_id']}: its final graph is not" in markdown
    assert _bca_values(report) == [] and _headline_deltas(report) == []
    assert "Refused as references" in " ".join(report.tables["table6_references"].notes)


def test_a_sealed_reference_is_re_derived_with_its_salt_and_refused_without(
        sealed_runs, tmp_path, monkeypatch):
    runs, salt = sealed_runs
    # an insider holding the salt relabels the oracle and seals it again: every seal holds
    forged = _relabel(runs["oracle"], runs["bca"], tmp_path / "bca", salt)
    assert verify_run(load_run(forged), salt=salt, complete=True) == 6
    monkeypatch.setenv(TEST_SALT_ENV, salt)
    loaded = load_runs([runs[COMPETITOR], forged, runs["oracle"]])
    assert [arm.policy for arm, _ in loaded.refused_references] == ["bca"]
    assert "bca" not in [arm.policy for arm in loaded.arms]
    assert "oracle" in [arm.policy for arm in loaded.arms]
    # the real sealed BCA_φ is re-derived with the salt and used
    loaded = load_runs([runs[COMPETITOR], runs["bca"]])
    assert not loaded.refused_references and "bca" in [arm.policy for arm in loaded.arms]

    # without the salt nothing of a sealed reference can be re-derived: refused, saying why
    monkeypatch.delenv(TEST_SALT_ENV)
    report = build_report([runs[COMPETITOR], runs["bca"]], tmp_path / "report", n_resamples=50,
                          trace_analysis=False)
    markdown = report.markdown_path.read_text()
    assert "UNVERIFIED reference bca, not used as BCA_φ" in markdown
    assert "$HEURESIS_TEST_SALT is not its salt here" in markdown
    assert _bca_values(report) == [] and _headline_deltas(report) == []


def test_a_reference_whose_policy_is_not_registered_is_not_verified(dev_runs, tmp_path):
    copy = Path(shutil.copytree(dev_runs["bca"], tmp_path / "bca"))
    config = json.loads((copy / "config.json").read_text())
    config["policy"] = "tests.adversarial.adversarial_policies:Anything"
    _rewrite(copy, config, _lines(copy))
    check = rederive_reference(load_run(copy))
    assert not check.verified and check.checked == 0
    assert "is not a registered policy or reference" in check.reason

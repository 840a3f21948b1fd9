"""``heuresis report``: every table and figure from real run directories, numbers parsed back
from the Markdown against direct computations, refusals, interval coverage, Appendix F."""

from __future__ import annotations

import argparse
import base64
import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from heuresis_env.errors import DataError, HeuresisError
from heuresis_env.reports import build_report, load_runs
from heuresis_env.reports.tables import (
    Settings,
    gain_table,
    headline_table,
    reference_table,
    repeats_table,
    report_interval,
)
from heuresis_env.studies.deletion_signals import (
    clustered_auc,
    exact_quantities,
    fisher_z_p_values,
    parse_signal_request,
    proposition_simulation,
    roc_auc,
)
from tests.reports.report_fixtures import (
    FIXTURE_COUNT,
    FIXTURE_FAMILIES,
    FIXTURE_SETTINGS,
    write_synthetic_run,
)

RESAMPLES = 2000
SEED = 7


# ---- the fixture report ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def runs(standard_runs) -> dict[str, Path]:
    return standard_runs


@pytest.fixture(scope="module")
def report(runs, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return build_report(list(runs.values()), out, deletion_signals=["lg:2"],
                        n_resamples=RESAMPLES, seed=SEED, proposition_kept=400)


def parse_table(markdown: str, title_start: str) -> list[dict[str, str]]:
    """The rows of the Markdown pipe table whose bold title starts with ``title_start``."""
    lines = markdown.splitlines()
    k = next(k for k, line in enumerate(lines) if line.startswith(f"**{title_start}"))
    while not lines[k].startswith("|"):
        k += 1
    block = []
    while k < len(lines) and lines[k].startswith("|"):
        block.append(lines[k])
        k += 1
    split = [[c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
             for line in block]
    return [dict(zip(split[0], cells, strict=True)) for cells in split[2:]]


def results(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def instance_means(lines: list[dict], score: str, finished_only: bool = False,
                   family: str | None = None) -> dict[tuple, float]:
    """Direct computation: mean over repeats per instance (finished repeats only if asked)."""
    groups: dict[tuple, list[float]] = {}
    for line in lines:
        if family is not None and line["family"] != family:
            continue
        key = (line["family"], line["index"])
        groups.setdefault(key, [])
        if finished_only and not line["finished"]:
            continue
        groups[key].append(float(line["scores"][score]))
    return {k: float(np.mean(v)) for k, v in groups.items() if v}


def test_every_file_exists_and_figures_decode(report):
    from PIL import Image

    assert report.markdown_path.is_file() and report.html_path.is_file()
    assert report.json_path.is_file()
    names = {p.name for p in report.figure_paths}
    assert names == {"figure6_f1.png", "figure6_residual_gain.png", "figure_reporting_rule.png",
                     "figure7_conditions.png", "figure_cost.png", "appendixF_signals.png",
                     "appendixF_proposition.png"}
    for path in report.figure_paths:
        with Image.open(path) as image:
            image.load()
            assert image.format == "PNG" and image.size[0] > 300 and image.size[1] > 200
            # not a blank canvas: a drawn figure has many distinct colours
            assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 20


def test_every_table_is_in_the_markdown(report):
    markdown = report.markdown_path.read_text()
    for title in ("Headline", "Table 6a", "Table 6b", "Table 7", "Table 4", "Table 4b", "Table 8",
                  "Cost and tokens", "Table 13", "Appendix F: AUC", "Proposition"):
        assert f"**{title}" in markdown, title
        assert parse_table(markdown, title), f"{title} has no rows"
    for path in report.figure_paths:
        assert f"](figures/{path.name})" in markdown


def test_html_is_self_contained(report):
    page = report.html_path.read_text()
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", page)
    sources = re.findall(r'<img src="([^"]+)"', page)
    assert len(sources) == len(report.figure_paths)
    for source, path in zip(sources, report.figure_paths, strict=True):
        assert source.startswith("data:image/png;base64,")
        assert base64.b64decode(source.split(",", 1)[1]) == path.read_bytes()
    for key in ("headline", "table6_references", "table6_policies", "table7", "table4",
                "table8", "table12_cost", "table13", "appendixF_signals",
                "appendixF_proposition"):
        assert f'<table id="{key}">' in page


def test_f1_and_residual_gain_cells_match_a_direct_computation(report, runs):
    rows = parse_table(report.markdown_path.read_text(), "Table 6b")
    agent_lines, bca_lines = results(runs["agent"]), results(runs["bca"])
    label = "agent [unguided, full toolbox]"
    checked = 0
    for family in (*FIXTURE_FAMILIES, "all"):
        selected = None if family == "all" else family
        row = next(r for r in rows if r["policy"] == label and r["family"] == family)
        agent_all = instance_means(agent_lines, "f1", family=selected)
        agent_finished = instance_means(agent_lines, "f1", True, family=selected)
        bca = instance_means(bca_lines, "f1", family=selected)
        assert row["F1 all"] == f"{np.mean(list(agent_all.values())):.3f}"
        assert row["F1 finished"] == f"{np.mean(list(agent_finished.values())):.3f}"
        episodes = [x for x in agent_lines if selected is None or x["family"] == selected]
        truncated = sum(x["truncated"] for x in episodes)
        assert row["truncated"].startswith(f"{truncated} (")
        assert row["episodes"] == str(len(episodes)) and truncated > 0
        keys = sorted(agent_all, key=lambda k: (FIXTURE_FAMILIES.index(k[0]), k[1]))
        difference = report_interval([agent_all[k] for k in keys], [bca[k] for k in keys],
                                     Settings(n_resamples=RESAMPLES, seed=SEED))
        assert row["Δʳ all [95% CI]"] == (f"{difference.mean:+.3f} [{difference.low:+.3f}, "
                                          f"{difference.high:+.3f}]")
        bca_mean = np.mean([bca[k] for k in keys])
        assert row["Δʳ all %"] == f"{100 * difference.mean / bca_mean:+.1f}%"
        # finished view: instances without a finished repeat leave both sides
        kept = sorted(agent_finished)
        finished = float(np.mean([agent_finished[k] - bca[k] for k in kept]))
        assert row["Δʳ finished [95% CI]"].startswith(f"{finished:+.3f} [")
        checked += 1
    assert checked == 3


def test_reference_points_and_headrooms(report, runs):
    rows = parse_table(report.markdown_path.read_text(), "Table 6a")
    bca = instance_means(results(runs["bca"]), "f1")
    oracle = instance_means(results(runs["oracle"]), "f1")
    pc_kci = instance_means(results(runs["pc-kci"]), "f1")
    for family in FIXTURE_FAMILIES:
        row = next(r for r in rows if r["family"] == family)
        keys = [k for k in bca if k[0] == family]
        assert row["F1 PC-KCI"] == f"{np.mean([pc_kci[k] for k in keys]):.3f}"
        assert row["F1 oracle"] == f"{np.mean([oracle[k] for k in keys]):.3f}"
        selection = np.mean([bca[k] - pc_kci[k] for k in keys])
        repair = np.mean([oracle[k] - bca[k] for k in keys])
        assert row["selection headroom [95% CI]"].startswith(f"{selection:+.3f} [")
        assert row["repair headroom [95% CI]"].startswith(f"{repair:+.3f} [")
        assert row["BCA_φ algorithm"] == {"lg": "ges", "anm": "pc-kci"}[family]
        # the oracle restores PC-KCI's wrong deletions: never below PC-KCI
        assert all(oracle[k] >= pc_kci[k] - 1e-12 for k in keys)


def test_nshd_table(report, runs):
    rows = parse_table(report.markdown_path.read_text(), "Table 7")
    for name, label in (("pc-kci", "pc-kci"), ("agent", "agent [unguided, full toolbox]")):
        lines = results(runs[name])
        for family in FIXTURE_FAMILIES:
            row = next(r for r in rows if r["policy"] == label and r["family"] == family)
            values = instance_means(lines, "nshd", family=family)
            assert row["nshd all"] == f"{np.mean(list(values.values())):.3f}"


def test_provenance_table_counts_edges_from_the_traces(report, runs):
    """Table 4 against an independent recomputation of PC-KCI's output and the agent's calls."""
    from heuresis_env.discovery.algorithms import run_algorithm
    from heuresis_env.generation.instances import InstanceKey, generate_instance
    from heuresis_env.graphs import Graph

    rows = parse_table(report.markdown_path.read_text(), "Table 4")
    lines = results(runs["llm"])  # the priced agent: never truncated
    for family in FIXTURE_FAMILIES:
        added = added_true = unexplained = 0
        for line in (x for x in lines if x["family"] == family):
            instance = generate_instance(InstanceKey(family, "dev", line["index"], d=5, n=200))
            assert instance.sha256 == line["instance_sha256"]
            final = Graph.from_dict(line["final_graph"]).skeleton()
            outputs = [run_algorithm("pc-kci", instance.X, instance.names),
                       run_algorithm("ges", instance.X, instance.names),
                       run_algorithm("pc-fisherz", instance.X, instance.names,
                                     variables=instance.names[:3])]
            covered = np.zeros_like(final)
            for output in outputs:
                covered |= output.full_graph(instance.names).skeleton()
            new = np.triu(final & ~outputs[0].graph.skeleton(), 1)
            added += int(new.sum())
            added_true += int((new & instance.record.dag.skeleton()).sum())
            unexplained += int((new & ~covered).sum())
        row = next(r for r in rows if r["policy"] == "llm-sim" and r["family"] == family)
        assert row["added edges"] == str(added)
        assert row["added, true"] == str(added_true)
        assert row["added in no called output"] == str(unexplained)
        assert unexplained == FIXTURE_COUNT  # the agent adds one such edge per episode
        assert row["algorithm calls / episode"] == "3.0"
    oracle_rows = [r for r in rows if r["policy"] == "oracle" and r["family"] != "all"]
    assert all(r["added edges"] == r["added, true"] for r in oracle_rows)  # restores true edges


def test_episode_provenance_is_read_back_from_the_cache_on_a_second_report(runs, monkeypatch):
    """A warm rerun's report recomputes no episode's provenance (the bootstraps likewise):
    the same instance, truth, final graph and calls are a cache hit with the same numbers; a
    different final graph is a miss."""
    import dataclasses

    from heuresis_env.evaluation.run_format import load_run
    from heuresis_env.studies import provenance

    run = load_run(runs["llm"])
    episode = run.episodes[0]
    first = provenance.episode_provenance(run, episode)
    assert first is not None
    monkeypatch.setattr(provenance, "_provenance_parts", lambda *a: pytest.fail("recomputed"))
    again = provenance.episode_provenance(run, episode)
    assert again is not None

    def numbers(item):
        return {f.name: getattr(item, f.name) for f in dataclasses.fields(item)
                if f.name not in ("episode", "true_dag", "full_outputs")}

    assert numbers(again) == numbers(first)
    assert again.true_dag.to_dict() == first.true_dag.to_dict()
    assert [g.to_dict() for g in again.full_outputs] == [g.to_dict() for g in first.full_outputs]
    graph = dict(episode.final_graph)
    marks = [list(row) for row in graph["marks"]]
    marks[0][1], marks[1][0] = (0, 0) if marks[0][1] else (3, 3)  # one pair flipped
    changed = dataclasses.replace(episode, final_graph={**graph, "marks": marks})
    with pytest.raises(pytest.fail.Exception, match="recomputed"):
        provenance.episode_provenance(run, changed)


def test_repair_table_counts_restores_and_removals_against_the_truth(report, runs):
    """Table 4b against a direct computation from PC-KCI's output, the final graphs and the
    hidden DAGs; the F1 difference against the per-instance scores in results.jsonl."""
    from heuresis_env.discovery.algorithms import run_algorithm
    from heuresis_env.generation.instances import InstanceKey, generate_instance
    from heuresis_env.graphs import Graph

    rows = parse_table(report.markdown_path.read_text(), "Table 4b")
    for run, label in (("llm", "llm-sim"), ("oracle", "oracle")):
        pooled = np.zeros(6, dtype=int)
        for family in FIXTURE_FAMILIES:
            counts = np.zeros(6, dtype=int)  # restored, true, wrong deletions, removed, false, FP
            for line in (x for x in results(runs[run]) if x["family"] == family):
                instance = generate_instance(InstanceKey(family, "dev", line["index"], d=5,
                                                         n=200))
                final = Graph.from_dict(line["final_graph"]).skeleton()
                start = run_algorithm("pc-kci", instance.X, instance.names).graph.skeleton()
                truth = instance.record.dag.skeleton()
                upper = np.triu(np.ones_like(truth), 1)
                restored, removed = final & ~start & upper, start & ~final & upper
                counts += [restored.sum(), (restored & truth).sum(),
                           (truth & ~start & upper).sum(), removed.sum(),
                           (removed & ~truth).sum(), (start & ~truth & upper).sum()]
            pooled += counts
            row = next(r for r in rows if r["policy"] == label and r["family"] == family)
            assert row["restored (true)"] == f"{counts[0]} ({counts[1]})"
            assert row["removed (false)"] == f"{counts[3]} ({counts[4]})"
            if counts[2]:
                assert float(row["restore recall"]) == pytest.approx(counts[1] / counts[2],
                                                                     abs=0.005)
            if counts[0]:
                assert float(row["restore precision"]) == pytest.approx(counts[1] / counts[0],
                                                                        abs=0.005)
        if run == "oracle":  # the ideal oracle restores exactly PC-KCI's wrong deletions
            assert pooled[0] == pooled[1] == pooled[2] > 0
    row = next(r for r in rows if r["policy"] == "oracle" and r["family"] == "all")
    assert row["restore recall"] == "1.00" and row["restore precision"] == "1.00"
    assert row["policy − PC-KCI [95% CI]"].startswith("+")


def test_conditions_cost_and_repeats(report, runs):
    markdown = report.markdown_path.read_text()
    conditions = parse_table(markdown, "Table 8")
    contrasts = {(r["contrast"], r["family"]) for r in conditions}
    assert ("guided − unguided", "lg") in contrasts
    assert ("full − minimal toolbox", "anm") in contrasts
    guided = instance_means(results(runs["agent-guided"]), "f1", family="lg")
    unguided = instance_means(results(runs["agent"]), "f1", family="lg")
    row = next(r for r in conditions
               if r["contrast"] == "guided − unguided" and r["family"] == "lg")
    assert row["a − b all [95% CI]"].startswith(
        f"{np.mean([guided[k] - unguided[k] for k in guided]):+.3f} [")

    cost = parse_table(markdown, "Cost and tokens")
    assert {r["policy"] for r in cost} == {"llm-sim"}
    lines = results(runs["llm"])
    row = next(r for r in cost if r["family"] == "all")
    assert row["prompt tokens / episode"] == f"{np.mean([x['tokens']['prompt'] for x in lines]):.0f}"
    assert row["cost / episode ($)"] == f"{np.mean([x['cost_usd'] for x in lines]):.4f}"

    repeats = parse_table(markdown, "Table 13")
    agent_rows = [r for r in repeats if r["policy"] == "agent [unguided, full toolbox]"
                  and r["family"] != "all"]
    assert {r["repeat"] for r in agent_rows} == {"0", "1"}
    for r in agent_rows:  # the agent truncates on instance index == repeat
        assert (r["step budget"], r["finished"]) == ("1", str(FIXTURE_COUNT - 1))


def test_headline_and_json(report):
    # the headline says what it rests on: instances per family, and a warning below 10
    assert report.headline.splitlines()[0].startswith(
        "| policy | lg (n=3) | anm (n=3) | all (n=6) |")
    assert any("Fewer than 10 instances per family: lg (3), anm (3)" in w
               for w in report.warnings)
    data = json.loads(report.json_path.read_text())
    assert set(data["tables"]) >= {"headline", "table6_policies", "table4", "table13"}
    assert data["settings"] == {"n_resamples": RESAMPLES, "confidence": 0.95, "seed": SEED}


def test_signal_study_labels_come_from_the_hidden_record(report):
    from heuresis_env.discovery.pc import label_deletions
    from heuresis_env.evidence import guided_start
    from heuresis_env.generation.instances import InstanceKey, generate_instance

    study = report.signal_study
    wrong = 0
    for index in range(2):
        instance = generate_instance(InstanceKey("lg", "dev", index, d=5, n=200))
        log = guided_start(instance.X, instance.names, instance.sha256).deletion_log
        wrong += label_deletions(log, instance.record.dag).count("wrong")
    assert study.n_wrong == wrong and study.n_wrong + study.n_right == len(study.records)
    for name, result in study.results.items():
        values = np.array([r.values[name] for r in study.records])
        labels = np.array([r.label == "wrong" for r in study.records])
        assert result.n_positive == int((labels & ~np.isnan(values)).sum())
        assert result.n_negative == int((~labels & ~np.isnan(values)).sum())


# ---- refusals ------------------------------------------------------------------------------------

def test_mixed_budgets_are_refused_naming_the_fields(tmp_path):
    from dataclasses import replace

    write_synthetic_run(tmp_path / "a", "agent", [0.5, 0.6, 0.7])
    write_synthetic_run(tmp_path / "b", "bca", [0.4, 0.6, 0.6],
                        settings=replace(FIXTURE_SETTINGS, max_steps=30, max_seconds=60.0))
    with pytest.raises(HeuresisError) as error:
        load_runs([tmp_path / "a", tmp_path / "b"])
    message = str(error.value)
    assert "max_steps: 12 (a) vs 30 (b)" in message
    assert "max_seconds: 600.0 (a) vs 60.0 (b)" in message
    assert "token_budget_per_turn" not in message and "--allow-mixed" in message
    loaded = load_runs([tmp_path / "a", tmp_path / "b"], allow_mixed=True)
    assert any("max_steps" in w for w in loaded.warnings)
    # a condition (guided) is not a budget: two arms, no refusal
    write_synthetic_run(tmp_path / "c", "agent", [0.5, 0.6, 0.7],
                        settings=replace(FIXTURE_SETTINGS, guided=True))
    labels = {arm.label for arm in load_runs([tmp_path / "a", tmp_path / "c"]).arms}
    assert labels == {"agent [unguided]", "agent [guided]"}


def test_mismatched_instance_hash_is_refused_naming_the_instance(tmp_path):
    write_synthetic_run(tmp_path / "a", "agent", [0.5, 0.6])
    write_synthetic_run(tmp_path / "b", "bca", [0.4, 0.6], sha_prefix="other generator")
    with pytest.raises(HeuresisError, match=r"instance lg/dev/0 has different data"):
        load_runs([tmp_path / "a", tmp_path / "b"])


def test_bad_run_directories(tmp_path):
    from heuresis_env.errors import RunFormatError

    with pytest.raises(RunFormatError, match="no config.json"):
        load_runs([tmp_path])
    run = write_synthetic_run(tmp_path / "a", "agent", [0.5, 0.6])
    with open(run / "results.jsonl", "a") as handle:
        handle.write('{"episode_id": "lg/dev/1/r0", "trunc')  # a torn last line
    loaded = load_runs([run])
    assert len(loaded.arms[0].episodes) == 2
    assert any("without a newline" in w for w in loaded.warnings)
    lines = (run / "results.jsonl").read_text().splitlines()
    (run / "results.jsonl").write_text(lines[0] + "\nnot json\n" + lines[1] + "\n")
    with pytest.raises(RunFormatError, match=r"results.jsonl:2: not JSON"):
        load_runs([run])
    with pytest.raises(HeuresisError, match="more than once"):
        load_runs([tmp_path / "a", tmp_path / "a"])
    shutil.copytree(tmp_path / "a", tmp_path / "a2")
    (tmp_path / "a2" / "results.jsonl").write_text(lines[0] + "\n")
    (run / "results.jsonl").write_text(lines[0] + "\n")
    with pytest.raises(HeuresisError, match="appears in two runs"):
        load_runs([tmp_path / "a", tmp_path / "a2"])


def test_report_without_references_and_cli(tmp_path, capsys):
    from heuresis_env.cli import report as report_command

    write_synthetic_run(tmp_path / "a", "agent", [0.5, 0.6, 0.7], truncated=[False, True, False],
                        d=5, n=60)
    parser = argparse.ArgumentParser()
    report_command.add_arguments(parser)
    args = parser.parse_args([str(tmp_path / "a"), "--out", str(tmp_path / "out"),
                              "--bootstrap", "200", "--no-progress"])
    assert report_command.run(args) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("| policy | lg (n=3) | truncated |")
    assert "| agent | 0.600 | 33.3% |" in printed
    markdown = (tmp_path / "out" / "report.md").read_text()
    assert "No reference runs" in markdown
    with pytest.raises(HeuresisError, match="FAMILY"):
        report_command.run(parser.parse_args([str(tmp_path / "a"), "--out", str(tmp_path),
                                              "--deletion-signals", "lg"]))


def test_a_folder_of_runs_stands_for_its_runs(tmp_path, capsys):
    """``heuresis report runs/demo`` reads ``runs/demo/runs/*`` (issue 42), and a folder of run
    directories reads them all; a folder with neither still says what is missing."""
    from heuresis_env import cli

    demo = tmp_path / "demo"
    write_synthetic_run(demo / "runs" / "agent", "agent", [0.5, 0.6, 0.7], d=5, n=60)
    write_synthetic_run(demo / "runs" / "other", "other", [0.4, 0.4, 0.9], d=5, n=60)
    (demo / "report").mkdir()  # what the demo writes beside its runs is not a run
    assert sorted(arm.label for arm in load_runs([demo]).arms) == ["agent", "other"]
    assert sorted(arm.label for arm in load_runs([demo / "runs"]).arms) == ["agent", "other"]
    assert cli.main(["report", str(demo), "--out", str(demo / "report"), "--bootstrap", "200",
                     "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert "| agent | 0.600 |" in printed and "| other | 0.567 |" in printed
    from heuresis_env.errors import RunFormatError

    with pytest.raises(RunFormatError, match="no config.json"):
        load_runs([demo / "report"])


def test_signal_requests():
    assert parse_signal_request("wild:10") == ("wild", "dev", 10)
    assert parse_signal_request("lg/test:3") == ("lg", "test", 3)
    with pytest.raises(HeuresisError, match="Known families"):
        parse_signal_request("wilde:3")
    with pytest.raises(HeuresisError, match="1..32"):
        parse_signal_request("lg/test:40")


# ---- statistics ------------------------------------------------------------------------------------

def test_residual_gain_intervals_cover_a_known_difference(tmp_path):
    """Δʳ end to end (run directories → arms → paired bootstrap) covers the true difference
    in about 95% of synthetic experiments."""
    rng = np.random.default_rng(2024)
    true_difference, experiments, covered, widths = 0.05, 120, 0, []
    settings = Settings(n_resamples=1000, seed=3)
    for experiment in range(experiments):
        base = rng.uniform(0.25, 0.75, size=40)
        policy = base + true_difference + rng.uniform(-0.2, 0.2, size=40)
        folder = tmp_path / str(experiment)
        write_synthetic_run(folder / "agent", "agent", policy)
        write_synthetic_run(folder / "bca", "bca", base)
        table = gain_table(load_runs([folder / "agent", folder / "bca"]),
                           Settings(settings.n_resamples, 0.95, experiment))
        delta = table.values[0]["delta_all"]
        assert delta.n == 40 and math.isclose(delta.mean, float(np.mean(policy - base)))
        covered += delta.low <= true_difference <= delta.high
        widths.append(delta.high - delta.low)
        shutil.rmtree(folder)
    assert 0.9 <= covered / experiments <= 0.99
    # not covering by being wide: about 2 · 1.96 · sd/√n, sd of U(−0.2, 0.2) = 0.4/√12
    expected_width = 2 * 1.96 * 0.4 / math.sqrt(12) / math.sqrt(40)
    assert 0.85 * expected_width < float(np.mean(widths)) < 1.1 * expected_width


def test_the_guided_start_run_is_the_pc_kci_reference_and_labels_name_default_options(
        tmp_path):
    """A report of guided repair runs: ``guided-start`` (PC-KCI's output submitted unchanged)
    gives Table 6a its PC-KCI column and is not ranked as a policy; an arm without an option
    the others set is labelled with ``=default``."""
    from dataclasses import replace

    from heuresis_env.reports.tables import reference_table

    guided = replace(FIXTURE_SETTINGS, guided=True)
    write_synthetic_run(tmp_path / "start", "guided-start", [0.5, 0.6, 0.7], settings=guided)
    write_synthetic_run(tmp_path / "bca", "bca", [0.6, 0.6, 0.7], settings=guided)
    write_synthetic_run(tmp_path / "rl", "rl", [0.7, 0.6, 0.8], settings=guided)
    run = write_synthetic_run(tmp_path / "rl-lg", "rl", [0.6, 0.7, 0.9], settings=guided)
    config = json.loads((run / "config.json").read_text())
    config["policy_options"] = {"model": "lg"}
    (run / "config.json").write_text(json.dumps(config))
    loaded = load_runs([tmp_path / name for name in ("start", "bca", "rl", "rl-lg")])
    # guided arms say so (guided-start names its condition itself)
    assert sorted(arm.label for arm in loaded.arms) == [
        "bca [guided]", "guided-start", "rl [guided, model=default]", "rl [guided, model=lg]"]
    settings = Settings(n_resamples=500)
    row = reference_table(loaded, settings).values[0]
    assert math.isclose(row["pc_kci"], 0.6) and math.isclose(row["selection_headroom"], 1 / 30)
    assert {r["label"] for r in gain_table(loaded, settings).values} == {
        "rl [guided, model=default]", "rl [guided, model=lg]"}


def test_finished_view_drops_truncated_instances_from_both_sides(tmp_path):
    write_synthetic_run(tmp_path / "agent", "agent", [0.9, 0.1, 0.8, 0.7],
                        truncated=[False, True, False, True])
    write_synthetic_run(tmp_path / "bca", "bca", [0.5, 0.5, 0.6, 0.2])
    table = gain_table(load_runs([tmp_path / "agent", tmp_path / "bca"]),
                       Settings(n_resamples=500))
    row = table.values[0]
    assert math.isclose(row["delta_all"].mean, np.mean([0.4, -0.4, 0.2, 0.5]))
    assert math.isclose(row["delta_finished"].mean, np.mean([0.4, 0.2]))
    assert row["delta_finished"].n == 2 and row["delta_finished"].n_dropped == 2
    assert row["truncated"] == 2 and math.isclose(row["mean_finished"], 0.85)


def test_auc_agrees_with_scikit_learn():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(5)
    for _ in range(30):
        size = int(rng.integers(4, 80))
        labels = rng.random(size) < 0.4
        labels[:2] = [True, False]
        scores = np.round(rng.normal(labels * rng.uniform(0, 2), 1.0), 1)  # ties on purpose
        assert math.isclose(roc_auc(scores, labels), roc_auc_score(labels, scores))
    assert math.isnan(roc_auc([0.1, 0.2], [True, True]))
    with_missing = roc_auc([0.1, np.nan, 0.3, 0.2], [0, 1, 1, 0])
    assert math.isclose(with_missing, roc_auc_score([0, 1, 0], [0.1, 0.3, 0.2]))
    with pytest.raises(DataError):
        roc_auc([0.1, 0.2], [0, 2])


def test_clustered_auc_interval():
    rng = np.random.default_rng(9)
    clusters = np.repeat(np.arange(30), 8)
    labels = rng.random(clusters.size) < 0.3
    informative = rng.normal(labels * 1.0, 1.0)
    result = clustered_auc(informative, labels, clusters, n_resamples=2000, seed=1)
    assert math.isclose(result.auc, roc_auc(informative, labels))
    assert result.low < result.auc < result.high and result.low > 0.5
    noise = clustered_auc(rng.normal(size=clusters.size), labels, clusters, n_resamples=2000)
    assert noise.low < 0.5 < noise.high
    # one cluster per deletion: the interval resamples deletions, as wide as the Hanley-McNeil
    singletons = clustered_auc(informative, labels, np.arange(clusters.size), n_resamples=4000)
    assert 0.6 < (singletons.high - singletons.low) / (result.high - result.low) < 1.6


def test_proposition_auc_tends_to_half_within_the_bound():
    rows = proposition_simulation(n=150, noncentralities=(2.5, 1.5, 1.0, 0.5, 0.2, 0.0),
                                  kept_per_class=1500, rng=np.random.default_rng(11))
    exact_gap = [abs(r.auc_exact - 0.5) for r in rows]
    assert all(a > b for a, b in zip(exact_gap, exact_gap[1:]))  # shrinks with δ
    assert exact_gap[-1] < 1e-9 and rows[-1].half_sup_bound < 1e-12
    for row in rows:
        assert exact_gap[rows.index(row)] <= row.total_variation + 1e-9
        assert row.total_variation <= row.half_sup_bound + 1e-9
        half_width = (row.auc_high - row.auc_low) / 2
        assert abs(row.auc_simulated - 0.5) <= row.half_sup_bound + 2 * half_width
        assert abs(row.auc_simulated - row.auc_exact) <= 2 * half_width  # simulation agrees
    simulated = [r.auc_simulated for r in rows]
    assert simulated[0] > simulated[2] > simulated[4] and abs(simulated[-1] - 0.5) < 0.04
    assert rows[-1].power == pytest.approx(0.05)
    assert exact_quantities(0.0)["auc"] == pytest.approx(0.5)


def test_vectorized_fisher_z_equals_the_ci_test():
    from heuresis_env.discovery.citests import make_ci_test

    rng = np.random.default_rng(1)
    x = rng.standard_normal((4, 120))
    y = 0.2 * x + rng.standard_normal((4, 120))
    vectorized = fisher_z_p_values(x, y)
    for row in range(4):
        test = make_ci_test("fisherz", np.column_stack([x[row], y[row]]), disk_cache=False)
        assert vectorized[row] == pytest.approx(test.test(0, 1).p_value, rel=1e-9)


def test_merge_k_against_a_pair_by_pair_vote():
    """merge_k (shared with the baselines) against votes counted edge by edge from edges()."""
    from heuresis_env.discovery.graph_merge import best_k, merge_k
    from heuresis_env.graphs import EdgeMark, Graph
    from heuresis_env.metrics import adjacency_f1

    rng = np.random.default_rng(4)
    names = [f"X{i + 1}" for i in range(6)]

    def random_graph() -> Graph:
        graph = Graph(names)
        for i in range(6):
            for j in range(i + 1, 6):
                draw = rng.random()
                if draw < 0.2:
                    graph.add_directed(names[i], names[j])
                elif draw < 0.35:
                    graph.add_directed(names[j], names[i])
                elif draw < 0.5:
                    graph.add_undirected(names[i], names[j])
                elif draw < 0.55:
                    graph.set_edge(names[i], names[j], EdgeMark.CIRCLE, EdgeMark.ARROW)
        return graph

    for _ in range(20):
        graphs = [random_graph() for _ in range(4)]
        votes: dict[frozenset, int] = {}
        directions: dict[frozenset, set] = {}
        for graph in graphs:
            for edge in graph.edges():
                pair = frozenset((edge.u, edge.v))
                votes[pair] = votes.get(pair, 0) + 1
                if edge.is_directed:
                    directions.setdefault(pair, set()).add((edge.u, edge.v))
                elif edge.mark_u == EdgeMark.ARROW and edge.mark_v == EdgeMark.TAIL:
                    directions.setdefault(pair, set()).add((edge.v, edge.u))
        for k in range(1, 5):
            merged = merge_k(graphs, k)
            expected = {pair for pair, count in votes.items() if count >= k}
            assert {frozenset((e.u, e.v)) for e in merged.edges()} == expected
            for pair in expected:
                u, v = sorted(pair)
                edge = merged.edge(u, v)
                agreed = directions.get(pair, set())
                if len(agreed) == 1:
                    (tail, head), = agreed
                    assert head in merged.children(tail)
                else:
                    assert edge.is_undirected
    truth = random_graph()
    k, means = best_k([graphs, graphs[:2]], [truth, truth], adjacency_f1, clip=True)
    assert len(means) == 4 and means[k - 1] == max(means)
    clipped = np.mean([adjacency_f1(merge_k(graphs, 3), truth),
                       adjacency_f1(merge_k(graphs[:2], 2), truth)])
    assert means[2] == pytest.approx(clipped)
    with pytest.raises(HeuresisError, match="same number of outputs"):
        best_k([graphs, graphs[:2]], [truth, truth], adjacency_f1)
    with pytest.raises(HeuresisError, match="k must be an integer in 1..4"):
        merge_k(graphs, 5)


# ---- a real evaluation, end to end -----------------------------------------------------------------

@pytest.mark.slow
def test_report_on_a_real_evaluation(tmp_path):
    from heuresis_env.evaluation import evaluate
    from heuresis_env.policy import EpisodeSettings

    settings = EpisodeSettings(max_steps=12, max_seconds=300.0)
    common = dict(families=["lg"], split="dev", count=2, settings=settings, d=5, n=200,
                  progress=False)
    evaluate("tests.reports.report_fixtures:AgentPolicy", out_dir=tmp_path / "agent",
             policy_options={"truncate_index": 1}, **common)
    evaluate("tests.reports.report_fixtures:AlgorithmPolicy", out_dir=tmp_path / "ges",
             policy_options={"algorithm": "ges"}, **common)
    summary = build_report([tmp_path / "agent", tmp_path / "ges"], tmp_path / "report",
                           n_resamples=500, proposition_kept=200)
    markdown = summary.markdown_path.read_text()
    rows = parse_table(markdown, "Table 6b")
    agent = next(r for r in rows if r["policy"] == "tests.reports.report_fixtures:AgentPolicy")
    lines = results(tmp_path / "agent")
    assert agent["F1 all"] == f"{np.mean([x['scores']['f1'] for x in lines]):.3f}"
    assert agent["truncated"].startswith("1 (")
    provenance = parse_table(markdown, "Table 4")
    agent_provenance = next(r for r in provenance
                            if r["policy"] == "tests.reports.report_fixtures:AgentPolicy")
    assert agent_provenance["algorithm calls / episode"] == "3.0"
    assert agent_provenance["added in no called output"] == "1"  # one finished episode


def test_errored_episodes_are_left_out_of_the_means_and_the_arm_is_marked(tmp_path):
    write_synthetic_run(tmp_path / "agent", "agent", [0.9, 0.0, 0.8, 0.7],
                        errors=[None, "policy.act() raised ValueError: boom", None, None])
    write_synthetic_run(tmp_path / "bca", "bca", [0.5, 0.5, 0.6, 0.2])
    loaded = load_runs([tmp_path / "agent", tmp_path / "bca"])
    agent = loaded.arm("agent")
    assert [e.episode_id for e in agent.errored()] == ["lg/dev/1/r0"]
    assert any("agent: 1 of 4 episodes errored (1 × policy.act() raised ValueError: boom)" in w
               for w in loaded.warnings)
    settings = Settings(n_resamples=300)
    row = gain_table(loaded, settings).values[0]
    assert math.isclose(row["mean_all"], (0.9 + 0.8 + 0.7) / 3)  # the errored 0.0 is left out
    assert row["delta_all"].n == 3  # and dropped from both sides of the paired Δ
    headline = headline_table(loaded, settings)
    assert headline.rows[0][0] == "agent ⚠ 1 errored"


def test_a_reference_run_with_errors_is_refused(tmp_path):
    write_synthetic_run(tmp_path / "agent", "agent", [0.9, 0.8])
    write_synthetic_run(tmp_path / "bca", "bca", [0.0, 0.5],
                        errors=["policy.reset() raised UnknownNameError: unknown family", None])
    with pytest.raises(HeuresisError, match=r"the reference run bca \(.*\) has errors: 1 of 2 "
                       r"episodes errored .*UnknownNameError.* it is refused"):
        load_runs([tmp_path / "agent", tmp_path / "bca"])


def test_the_references_are_real_runs_the_report_re_derives(runs, report):
    """The fixture's references are runs of the registered reference policies, so the report
    re-derives each of their episodes and uses them (issue 46, route 6)."""
    loaded = load_runs([runs[name] for name in ("agent", "bca", "pc-kci", "oracle")])
    assert [(c.policy, c.verified, c.checked) for c in loaded.reference_checks] == [
        ("bca", True, 6), ("oracle", True, 6), ("pc-kci", True, 6)]
    assert not loaded.refused_references
    assert not any("UNVERIFIED" in warning for warning in report.warnings)


def test_the_same_data_gets_the_same_interval_in_every_table(tmp_path):
    """One bootstrap function, seeded by the data: a − b mirrors b − a exactly, and the
    reference table's selection headroom equals Table 7's comparison of the same arms."""
    settings = Settings(n_resamples=400, seed=3)
    a, b = [0.9, 0.4, 0.7, 0.2, 0.5], [0.6, 0.5, 0.3, 0.2, 0.1]
    forward, backward = report_interval(a, b, settings), report_interval(b, a, settings)
    assert (forward.mean, forward.low, forward.high) == pytest.approx(
        (-backward.mean, -backward.high, -backward.low))
    assert report_interval(a, b, settings) == forward  # the same data, the same draw
    write_synthetic_run(tmp_path / "bca", "bca", a)
    write_synthetic_run(tmp_path / "pc", "pc-kci", b)
    loaded = load_runs([tmp_path / "bca", tmp_path / "pc"])
    headroom = reference_table(loaded, settings).values[0]["selection_headroom_interval"]
    assert headroom == pytest.approx((forward.low, forward.high))
    table13 = repeats_table(loaded, settings).values
    pc_row = next(v for v in table13 if v["label"] == "pc-kci")
    assert (pc_row["delta_all"].low, pc_row["delta_all"].high) == pytest.approx(
        (-forward.high, -forward.low))


def test_the_report_says_whether_the_test_split_was_sealed():
    from types import SimpleNamespace

    from heuresis_env.reports.build import sealing_text

    def loaded(*digests, split="test", graph_model="er"):
        return SimpleNamespace(runs=[SimpleNamespace(split=split, config={"salt_digest": d},
                                                     path=Path(f"r{k}"),
                                                     instance_keys=[{"family": "lg",
                                                                     "graph_model": graph_model}])
                                     for k, d in enumerate(digests)])

    assert sealing_text(loaded("abc", "def")).startswith("sealed with a secret salt")
    assert sealing_text(loaded(None, None)).startswith(
        "not sealed ($HEURESIS_TEST_SALT was not set for any of the 2 runs)")
    assert "was not set for r1)" in sealing_text(loaded("abc", None))
    assert sealing_text(loaded(None, split="dev")) == ""
    # a data table is one fixed instance: nothing to regenerate, no salt applies (issue 42)
    assert sealing_text(loaded(None, graph_model="data")).startswith("data tables only")


def test_a_policys_notes_reach_the_report(tmp_path):
    run = write_synthetic_run(tmp_path / "rl", "rl", [0.4, 0.5])
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    for line in lines:
        line["notes"] = ["trained in the guided condition; this run is unguided"]
    (run / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    loaded = load_runs([run])
    assert loaded.warnings.count("rl: trained in the guided condition; this run is unguided") == 1


def test_rows_that_coincide_are_named_with_the_reason(tmp_path, report):
    """A one-line note under the headline names rows with equal F1 on every instance and why,
    read from the final graphs (issue 42)."""
    from heuresis_env.reports.coinciding import coinciding_note

    # the fixture's BCA_φ is PC-KCI on anm: the same graphs there, and not on lg
    note = next(n for n in report.tables["headline"].notes if n.startswith("Rows that"))
    assert report.headline_note == note
    assert ("bca = pc-kci on anm (they submitted the same graphs)" in note
            or "pc-kci = bca on anm (they submitted the same graphs)" in note)

    def arms(*marks_per_run: list):
        """Synthetic runs with equal F1 whose final graphs are ``marks`` (set after loading:
        a report re-scores final graphs, which synthetic runs cannot be)."""
        from dataclasses import replace

        paths = [write_synthetic_run(tmp_path / name, name, [0.5, 1.0])
                 for name in "abcd"[:len(marks_per_run)]]
        loaded = load_runs(paths)
        for arm, marks in zip(loaded.arms, marks_per_run, strict=True):
            arm.episodes = {slot: replace(e, final_graph={"names": ["X1", "X2", "X3"],
                                                          "marks": marks})
                            for slot, e in arm.episodes.items()}
        return loaded

    forward = [[0, 2, 0], [1, 0, 0], [0, 0, 0]]   # X1 --> X2
    backward = [[0, 1, 0], [2, 0, 0], [0, 0, 0]]  # X2 --> X1
    other = [[0, 0, 2], [0, 0, 0], [1, 0, 0]]     # X1 --> X3
    loaded = arms(forward, forward, backward, other)
    assert [arm.label for arm in loaded.arms] == ["a", "b", "c", "d"]
    note = coinciding_note(loaded.arms, loaded.families())
    assert note.startswith("Rows that coincide (equal F1 on every instance): ")
    assert "a = b on every family (they submitted the same graphs)" in note
    assert "a = c on every family (they submitted the same skeletons" in note
    assert "a = d on every family (different graphs with equal F1)" in note
    lone = load_runs([write_synthetic_run(tmp_path / "e", "e", [0.5, 0.9])])
    assert coinciding_note(lone.arms, lone.families()) == ""
    two = load_runs([write_synthetic_run(tmp_path / "f", "f", [0.5, 0.9]),
                     write_synthetic_run(tmp_path / "g", "g", [0.5, 0.8])])
    assert coinciding_note(two.arms, two.families()) == ""  # one instance differs

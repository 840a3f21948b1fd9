"""Run directories that cannot lie about what they hold, commands that fail cleanly, files with
the user's permissions (issue 18, items 9-12)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from heuresis_env import cli
from heuresis_env.errors import HeuresisError, RunFormatError
from heuresis_env.evaluation import RunStore, evaluate, run_format
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports import build_report

FISHER = "tests.evaluation.eval_policies:fisher_skeleton"
NEVER = "tests.evaluation.eval_policies:NeverSubmits"
SMALL = {"d": 4, "n": 100, "split": "dev", "progress": False, "families": ["lg"], "count": 2}
SETTINGS = EpisodeSettings(max_steps=8, max_seconds=60.0)


def run(out: Path, policy: str = FISHER, **kwargs):
    return evaluate(policy, out_dir=out, **{"settings": SETTINGS, **SMALL, **kwargs})


# ---- item 9: results are attributed to one config ------------------------------------------

def test_results_without_a_config_are_refused_naming_the_fix(tmp_path):
    out = tmp_path / "run"
    run(out)
    (out / "config.json").unlink()
    with pytest.raises(RunFormatError, match="results.jsonl but no config.json") as refused:
        run(out, NEVER)  # another policy must not inherit these results
    assert "another --out" in str(refused.value) and "restore" in str(refused.value)
    assert len((out / "results.jsonl").read_text().splitlines()) == 2  # nothing added
    with pytest.raises(RunFormatError, match="no config.json"):
        run_format.load_run(out)


def test_every_result_line_carries_the_config_digest_and_foreign_lines_are_refused(tmp_path):
    out = tmp_path / "run"
    run(out)
    config = json.loads((out / "config.json").read_text())
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert {line["config_digest"] for line in lines} == {run_format.config_digest(config)}
    # a line written under another config (a copy of this run's made with other settings)
    foreign = {**lines[0], "episode_id": "lg/dev/1/r1", "repeat": 1, "config_digest": "0" * 64}
    with open(out / "results.jsonl", "a") as handle:
        handle.write(json.dumps(foreign) + "\n")
    with pytest.raises(RunFormatError, match="mixes runs"):
        run(out)  # resuming refuses it
    with pytest.raises(RunFormatError, match="mixes runs"):
        run_format.load_run(out)  # and so does the report
    # a config replaced with --force (a run extended by an instance) keeps its lines valid
    out = tmp_path / "forced"
    run(out)
    summary = run(out, count=3, force=True)
    assert summary.ran == 1 and summary.accepted_differences[0] == "count: was 2, now 3"
    loaded = run_format.load_run(out)
    assert len(loaded.episodes) == 3
    assert loaded.config[run_format.PREVIOUS_DIGESTS_FIELD] == [
        run_format.config_digest(json.loads(next(out.glob("config.replaced-*.json"))
                                            .read_text()))]


# ---- item 10: a run that cannot start leaves no config ----------------------------------------

def test_a_run_that_cannot_start_writes_no_config_and_the_fixed_command_runs(tmp_path):
    out, policy = tmp_path / "run", "tests.evaluation.eval_policies:FisherSkeleton"
    with pytest.raises(HeuresisError, match="does not accept the options"):
        run(out, policy, policy_options={"alpah": 0.05})  # a typo in an option
    assert not (out / "config.json").exists()
    with pytest.raises(HeuresisError, match="could not be built: RuntimeError"):
        run(out, "tests.evaluation.eval_policies:fails_in_worker")
    assert not (out / "config.json").exists()
    summary = run(out, policy, policy_options={"alpha": 0.05})  # the fixed command runs
    assert summary.ran == 2 and (out / "config.json").exists()


# ---- item 11: bad output paths --------------------------------------------------------------

@pytest.fixture()
def a_file(tmp_path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("in the way\n")
    return path


def command_error(capsys, *argv: str) -> str:
    code = cli.main(list(argv))
    error = capsys.readouterr().err.strip()
    assert code == 2, error
    assert len(error.splitlines()) == 1 and "Traceback" not in error
    return error


def test_bad_output_paths_are_one_line_errors(tmp_path, a_file, capsys):
    evaluate_args = ["evaluate", "--policy", FISHER, "--family", "lg", "--split", "dev",
                     "--count", "1", "--d", "4", "--n", "100", "--no-progress", "--out"]
    assert "is a file, not a directory" in command_error(capsys, *evaluate_args, str(a_file))
    assert "lies under" in command_error(capsys, *evaluate_args, str(a_file / "run"))
    assert "cannot create" in command_error(capsys, *evaluate_args, "/proc/heuresis-run")
    good = tmp_path / "good"
    run(good)
    error = command_error(capsys, "report", str(good), "--out", str(a_file), "--no-traces",
                          "--bootstrap", "10", "--no-progress")
    assert "is a file, not a directory" in error
    assert "is a file, not a directory" in command_error(capsys, "view", str(good), "--out",
                                                         str(a_file), "--no-progress")
    assert "cannot create" in command_error(capsys, "view", str(good), "--out",
                                            "/proc/heuresis-view", "--no-progress")
    generate_args = ["generate", "--family", "lg", "--split", "dev", "--count", "1", "--d", "4",
                     "--n", "100", "--out"]
    assert "cannot create" in command_error(capsys, *generate_args, "/proc/heuresis-out")
    assert "lies under" in command_error(capsys, *generate_args, str(a_file / "out"))


# ---- item 12: the user's umask ---------------------------------------------------------------

def file_modes(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
            for p in root.rglob("*") if p.is_file() and not p.name.startswith(".")}


@pytest.mark.parametrize("umask", [0o022, 0o027])
def test_report_files_follow_the_umask_and_run_files_are_private(tmp_path, umask):
    previous = os.umask(umask)
    try:
        out = tmp_path / "run"
        run(out)
        report = build_report([out], tmp_path / "report", n_resamples=20,
                              trace_analysis=False, progress=False)
    finally:
        os.umask(previous)
    expected = 0o666 & ~umask
    run_modes = file_modes(out)
    report_modes = file_modes(report.out_dir)
    assert {"config.json", "results.jsonl"} <= set(run_modes)
    assert any(name.startswith("figures/") for name in report_modes)
    assert {"report.md", "report.html", "tables.json"} <= set(report_modes)
    wrong = {name: oct(mode) for name, mode in report_modes.items() if mode != expected}
    assert not wrong, f"expected {oct(expected)}: {wrong}"
    # a run directory is its owner's only, whatever the umask (issue 46, route 1)
    wrong = {name: oct(mode) for name, mode in run_modes.items() if mode != 0o600}
    assert not wrong and stat.S_IMODE(out.stat().st_mode) == 0o700, wrong
    assert RunStore(out).read_results()

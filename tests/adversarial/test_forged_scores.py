"""Route 6: forged scores. ``heuresis report``, a resumed ``heuresis evaluate`` and ``heuresis
view`` re-score every episode's final graph where the truth is available and refuse a
mismatch, naming the episode; a sealed run's config and result lines carry an HMAC keyed by
the salt, so an edit that keeps graph and scores consistent, or a re-digested config, is
refused too. (A confined policy cannot reach another run's files at all:
``test_confinement.py``.)"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.integrity import TamperedRunError, verify_run
from heuresis_env.evaluation.run_format import config_digest, load_run
from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt
from heuresis_env.policy import EpisodeSettings
from heuresis_env.viewer.site import build_site

ROOT = Path(__file__).resolve().parents[2]
OPTIONS = {"families": ["lg"], "count": 2, "d": 4, "n": 100, "progress": False,
           "settings": EpisodeSettings(max_steps=4, max_seconds=300.0),
           "policy_isolation": "process"}
POLICY = "pc-fisherz"


def rewrite_results(run: Path, change) -> str:
    """Apply ``change`` to the first result line; returns its episode id."""
    results = run / "results.jsonl"
    lines = results.read_text().splitlines()
    record = json.loads(lines[0])
    change(record)
    lines[0] = json.dumps(record)
    results.write_text("\n".join(lines) + "\n")
    return record["episode_id"]


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dev") / "run"
    evaluate(POLICY, split="dev", out_dir=out, **OPTIONS)
    return out


def copy(run: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(run, target)
    return target


def test_an_honest_run_passes(dev_run):
    assert verify_run(load_run(dev_run)) == 2


def test_an_edited_score_is_refused_by_report_view_and_resume(dev_run, tmp_path):
    run = copy(dev_run, tmp_path)
    episode = rewrite_results(run, lambda r: r["scores"].update(f1=1.0, precision=1.0))
    report = subprocess.run([sys.executable, "-m", "heuresis_env.cli", "report", str(run),
                             "--out", str(tmp_path / "report"), "--bootstrap", "100"],
                            cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert report.returncode == 2 and episode in report.stderr and "f1" in report.stderr
    assert "Traceback" not in report.stderr
    with pytest.raises(TamperedRunError, match=episode):
        build_site([run], tmp_path / "site")
    with pytest.raises(TamperedRunError, match=episode):
        evaluate(POLICY, split="dev", out_dir=run, **OPTIONS)


def test_a_forged_final_graph_with_unchanged_scores_is_refused(dev_run, tmp_path):
    run = copy(dev_run, tmp_path)

    def empty_graph(record):
        names = record["final_graph"]["names"]
        record["final_graph"]["marks"] = [[0] * len(names) for _ in names]

    episode = rewrite_results(run, empty_graph)
    with pytest.raises(TamperedRunError, match=episode):
        verify_run(load_run(run))


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory) -> tuple[Path, str]:
    salt = new_salt()
    out = tmp_path_factory.mktemp("sealed") / "run"
    evaluate(POLICY, split="test", out_dir=out, salt=salt, **OPTIONS)
    return out, salt


def test_a_sealed_run_is_sealed_and_passes(sealed_run):
    run, salt = sealed_run
    config = json.loads((run / "config.json").read_text())
    assert config["config_seal"]
    assert all(json.loads(line)["seal"] for line in (run / "results.jsonl").open())
    assert verify_run(load_run(run), salt=salt) == 2


def test_a_consistent_forgery_of_a_sealed_run_is_refused_by_its_seal(sealed_run, tmp_path,
                                                                    monkeypatch):
    run, salt = sealed_run
    forged = copy(run, tmp_path)
    # graph and scores changed together (the scores are those of the new graph) and the
    # episode marked as finished: re-scoring cannot tell, the seal can
    episode = rewrite_results(forged, lambda r: r.update(steps=1, termination_reason="submitted"))
    with pytest.raises(TamperedRunError, match=f"episode {episode}: its seal"):
        verify_run(load_run(forged), salt=salt)
    monkeypatch.setenv(TEST_SALT_ENV, salt)
    with pytest.raises(TamperedRunError, match=episode):
        build_site([forged], tmp_path / "site")


def test_an_edited_and_re_digested_config_of_a_sealed_run_is_refused(sealed_run, tmp_path):
    run, salt = sealed_run
    forged = copy(run, tmp_path)
    config = json.loads((forged / "config.json").read_text())
    config["settings"]["max_steps"] = 1000
    (forged / "config.json").write_text(json.dumps(config, indent=2))
    digest = config_digest(config)
    lines = [json.loads(line) for line in (forged / "results.jsonl").open()]
    (forged / "results.jsonl").write_text("".join(
        json.dumps({**line, "config_digest": digest}) + "\n" for line in lines))
    with pytest.raises(TamperedRunError, match="config.json's seal"):
        verify_run(load_run(forged), salt=salt)
    with pytest.raises(HeuresisError, match="seal"):
        evaluate(POLICY, split="test", out_dir=forged, salt=salt,
                 **{**OPTIONS, "settings": EpisodeSettings(max_steps=1000, max_seconds=300.0)})


def test_a_sealed_run_is_not_checked_without_its_salt(sealed_run, monkeypatch):
    run, _ = sealed_run
    monkeypatch.delenv(TEST_SALT_ENV, raising=False)
    assert verify_run(load_run(run)) == 0  # no truth here: nothing to check, nothing shown
    assert os.environ.get(TEST_SALT_ENV) is None


def test_a_sealed_run_without_seals_is_refused_with_a_clear_message(sealed_run, tmp_path):
    run, salt = sealed_run
    stripped = copy(run, tmp_path)
    config = json.loads((stripped / "config.json").read_text())
    del config["config_seal"]
    (stripped / "config.json").write_text(json.dumps(config, indent=2))
    with pytest.raises(TamperedRunError, match="carries no seal"):
        verify_run(load_run(stripped), salt=salt)

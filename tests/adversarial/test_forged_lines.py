"""Issue 46, routes 5, 7 and 8: forged scores through the lines of a run.

5. A results line saying ``"ground_truth": false`` or ``"final_graph": null`` was skipped by
   re-scoring, so a forged F1 of 1.000 passed report, view and resume: whether an episode has
   a truth now comes from its instance key, and a graph episode without its final graph is
   refused.
7. The per-line HMAC did not commit to the set of lines: dropping a sealed run's worst line
   passed every seal. Each sealed line's seal now covers the previous line's (a chain), and a
   report or viewer refuses a sealed run missing lines.
8. A tampered sealed run reported without ``$HEURESIS_TEST_SALT`` was printed as "sealed with
   a secret salt": such runs are now marked **unverified** in report.md and the HTML, saying
   why.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from heuresis_env.evaluation import evaluate
from heuresis_env.evaluation.integrity import TamperedRunError, verify_run
from heuresis_env.evaluation.run_format import load_run
from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt
from heuresis_env.policy import EpisodeSettings
from heuresis_env.reports.build import build_report
from heuresis_env.viewer.site import build_site

OPTIONS = {"families": ["lg"], "count": 3, "d": 4, "n": 100, "progress": False,
           "settings": EpisodeSettings(max_steps=4, max_seconds=300.0),
           "policy_isolation": "process"}
POLICY = "pc-fisherz"


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dev") / "run"
    evaluate(POLICY, split="dev", out_dir=out, **OPTIONS)
    return out


@pytest.fixture(scope="module")
def sealed_run(tmp_path_factory) -> tuple[Path, str]:
    salt = new_salt()
    out = tmp_path_factory.mktemp("sealed") / "run"
    evaluate(POLICY, split="test", out_dir=out, salt=salt, **OPTIONS)
    return out, salt


def _copy(run: Path, tmp_path: Path, name: str = "copy") -> Path:
    return Path(shutil.copytree(run, tmp_path / name))


def _lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _write(run: Path, records: list[dict]) -> None:
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def _perfect(record: dict) -> None:
    record["scores"].update(f1=1.0, precision=1.0, recall=1.0, shd=0, nshd=0.0, shd_cpdag=0)


@pytest.mark.parametrize("flag", ["ground_truth", "final_graph"])
def test_a_flag_on_the_line_does_not_skip_rescoring(dev_run, tmp_path, flag):
    run = _copy(dev_run, tmp_path)
    records = _lines(run)
    _perfect(records[0])
    records[0][flag] = False if flag == "ground_truth" else None
    _write(run, records)
    with pytest.raises(TamperedRunError, match=records[0]["episode_id"]):
        verify_run(load_run(run))
    with pytest.raises(TamperedRunError):
        build_report([run], tmp_path / "report", n_resamples=50)
    with pytest.raises(TamperedRunError):
        build_site([run], tmp_path / "site")
    with pytest.raises(TamperedRunError):  # a resume checks what is there first
        evaluate(POLICY, split="dev", out_dir=run, **OPTIONS)


def test_a_dropped_or_moved_line_of_a_sealed_run_breaks_its_seal(sealed_run, tmp_path):
    run, salt = sealed_run
    records = _lines(run)
    assert len(records) == 3 and all(r.get("chained") for r in records)
    assert verify_run(load_run(run), salt=salt, complete=True) == 3
    worst = min(range(3), key=lambda k: records[k]["scores"]["f1"])
    if worst == 2:  # the last line: dropped, it leaves the run short — next test
        worst = 0
    dropped = _copy(run, tmp_path, "dropped")
    _write(dropped, [r for k, r in enumerate(records) if k != worst])
    with pytest.raises(TamperedRunError, match="seal does not match"):
        verify_run(load_run(dropped), salt=salt)
    moved = _copy(run, tmp_path, "moved")
    _write(moved, [records[1], records[0], records[2]])
    with pytest.raises(TamperedRunError, match="seal does not match"):
        verify_run(load_run(moved), salt=salt)


def test_a_sealed_run_missing_its_last_line_is_refused_by_report_and_viewer(sealed_run, tmp_path,
                                                                          monkeypatch):
    run, salt = sealed_run
    short = _copy(run, tmp_path, "short")
    _write(short, _lines(run)[:2])
    monkeypatch.setenv(TEST_SALT_ENV, salt)
    with pytest.raises(TamperedRunError, match="2 of its 3 episodes"):
        build_report([short], tmp_path / "report", n_resamples=50)
    with pytest.raises(TamperedRunError, match="2 of its 3 episodes"):
        build_site([short], tmp_path / "site")
    # a resume finishes it, chaining the new line to the last one, and it verifies whole
    evaluate(POLICY, split="test", out_dir=short, salt=salt, **OPTIONS)
    assert verify_run(load_run(short), salt=salt, complete=True) == 3


def test_a_sealed_run_read_without_its_salt_is_marked_unverified(sealed_run, tmp_path,
                                                                 monkeypatch):
    run, _ = sealed_run
    forged = _copy(run, tmp_path, "forged")
    records = _lines(forged)
    for record in records:
        _perfect(record)
    _write(forged, records)
    monkeypatch.delenv(TEST_SALT_ENV, raising=False)
    report = build_report([forged], tmp_path / "report", n_resamples=50)
    markdown = report.markdown_path.read_text()
    html = report.html_path.read_text()
    assert "unverified" in markdown.lower() and "unverified" in html.lower()
    assert "could not be checked" in markdown
    assert "sealed with a secret salt ($HEURESIS_TEST_SALT)" not in markdown

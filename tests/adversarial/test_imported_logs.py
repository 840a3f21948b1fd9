"""Issue 46, route 9: imported inspect logs.

``heuresis import-inspect`` took a log whose model name was edited without a word: who played
is only the log's claim, so the run records ``"attribution": "self-reported"`` and the report
labels the arm so. And a run imported from a sealed log carried no seals, so the documented
``heuresis import-inspect … && heuresis report`` failed with the salt set: a log of a sealed
split now imports sealed (its config and chained lines).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.log import read_eval_log, write_eval_log  # noqa: E402

from agents.inspect_task.logs import export_run, import_inspect_log  # noqa: E402
from heuresis_env.evaluation import evaluate  # noqa: E402
from heuresis_env.evaluation.integrity import (  # noqa: E402
    CONFIG_SEAL_FIELD,
    SEAL_FIELD,
    verify_run,
)
from heuresis_env.evaluation.run_format import load_run  # noqa: E402
from heuresis_env.generation.salts import TEST_SALT_ENV, new_salt  # noqa: E402
from heuresis_env.policy import EpisodeSettings  # noqa: E402
from heuresis_env.reports.build import build_report  # noqa: E402

OPTIONS = {"families": ["lg"], "count": 2, "d": 4, "n": 100, "progress": False,
           "settings": EpisodeSettings(max_steps=4, max_seconds=300.0),
           "policy_isolation": "process"}
CLAIMED = "openai/a-model-that-did-not-play"


@pytest.fixture(scope="module")
def salt() -> str:
    return new_salt()


@pytest.fixture(scope="module")
def edited_log(tmp_path_factory, salt) -> Path:
    """A sealed run exported as an inspect log, its model name then edited."""
    root = tmp_path_factory.mktemp("imported")
    run = root / "run"
    evaluate("pc-fisherz", split="test", out_dir=run, salt=salt, **OPTIONS)
    log = read_eval_log(str(export_run(run, root / "log.eval")))
    log.eval.model = CLAIMED
    write_eval_log(log, str(root / "edited.eval"))
    return root / "edited.eval"


def test_an_imported_log_is_sealed_and_reported_with_the_salt(edited_log, salt, tmp_path,
                                                              monkeypatch):
    monkeypatch.setenv(TEST_SALT_ENV, salt)
    out = tmp_path / "imported"
    assert import_inspect_log(edited_log, out).imported == 2
    config = json.loads((out / "config.json").read_text())
    assert config.get(CONFIG_SEAL_FIELD)
    lines = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert all(line.get(SEAL_FIELD) and line.get("chained") for line in lines)
    assert verify_run(load_run(out), complete=True) == 2
    # the documented `heuresis import-inspect … && heuresis report`, with the salt set
    build_report([out], tmp_path / "report", n_resamples=50)
    # and the seal holds: an edited score of the import is refused
    lines[0]["scores"]["f1"] = 0.0 if lines[0]["scores"]["f1"] == 1.0 else 1.0
    (out / "results.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(Exception, match="seal does not match"):
        verify_run(load_run(out))


def test_an_edited_model_name_is_labelled_self_reported(edited_log, salt, tmp_path,
                                                         monkeypatch):
    monkeypatch.setenv(TEST_SALT_ENV, salt)
    out = tmp_path / "imported"
    import_inspect_log(edited_log, out)
    config = json.loads((out / "config.json").read_text())
    assert config["attribution"] == "self-reported"
    assert config["inspect"]["model"] == CLAIMED
    build_report([out], tmp_path / "report", n_resamples=50)
    text = (tmp_path / "report" / "report.md").read_text()
    assert "pc-fisherz (self-reported)" in text
    assert "SELF-REPORTED attribution" in text and CLAIMED in text

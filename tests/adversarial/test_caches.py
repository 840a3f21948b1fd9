"""Route 3: shared pickled caches. The result caches hold data only (JSON and NumPy arrays in
``.npz``, never pickle), so a planted entry cannot run code in the process that reads it;
each policy has its own cache folder; the shipped learned-repair model is no pickle either."""

from __future__ import annotations

import io
import pickle
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from heuresis_env import safe_data
from heuresis_env.cache import ResultCache
from heuresis_env.discovery.algorithms import run_algorithm
from heuresis_env.evaluation.policy_process import policy_cache_directory, policy_key
from heuresis_env.graphs import Graph

ROOT = Path(__file__).resolve().parents[2]


class Exploit:
    """Unpickling this writes a marker file: proof that a pickle ran code."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "the planted pickle ran"))


def test_a_planted_pickle_runs_no_code_and_is_discarded(tmp_path):
    cache = ResultCache("routers", root=tmp_path / "cache")
    key = "ab" + "0" * 62
    marker = tmp_path / "ran"
    path = cache._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(Exploit(marker)))  # planted where the entry would be
    legacy = path.with_suffix(".pkl")
    legacy.write_bytes(pickle.dumps(Exploit(marker)))  # and where the old format kept it
    assert cache.get(key, "missing") == "missing"
    assert not marker.exists()
    assert not path.exists()  # a foreign entry is removed, the value computed again
    assert cache.get_or_compute(key, lambda: {"branch": "pc-kci"}) == {"branch": "pc-kci"}
    assert cache.get(key) == {"branch": "pc-kci"} and not marker.exists()


def test_a_planted_entry_naming_a_foreign_class_is_refused(tmp_path):
    tree = b'{"format":1,"value":{"__object__":"os:system","dict":"touch /nonexistent"}}'
    buffer = io.BytesIO()
    np.savez(buffer, __tree__=np.frombuffer(tree, dtype=np.uint8))
    with pytest.raises(ValueError, match="outside this project"):
        safe_data.loads(buffer.getvalue())
    unimported = b'{"format":1,"value":{"__object__":"heuresis_env.cli.__main__:main","dict":1}}'
    buffer = io.BytesIO()
    np.savez(buffer, __tree__=np.frombuffer(unimported, dtype=np.uint8))
    with pytest.raises(ValueError, match="imported modules"):  # reading never imports
        safe_data.loads(buffer.getvalue())


@dataclass(frozen=True)
class Local:
    x: int


def test_cached_results_round_trip_as_data():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(150, 3))
    data[:, 2] += data[:, 0]
    result = run_algorithm("pc-fisherz", data, ["X1", "X2", "X3"])
    back = safe_data.loads(safe_data.dumps(result))
    assert back.graph == result.graph and back.algorithm == result.algorithm
    value = {"t": (1, 2.5, float("nan")), "s": {3}, 4: b"\x00", "__x": [np.int64(3)],
             "g": Graph(["A", "B"]), "a": np.arange(6).reshape(2, 3)}
    again = safe_data.loads(safe_data.dumps(value))
    assert again["t"][:2] == (1, 2.5) and np.isnan(again["t"][2]) and again["s"] == {3}
    assert again[4] == b"\x00" and again["__x"] == [3] and again["g"] == Graph(["A", "B"])
    assert np.array_equal(again["a"], value["a"])
    with pytest.raises(safe_data.UnsupportedValue):
        safe_data.dumps(np.array([object()]))


def test_each_policy_has_its_own_cache_folder():
    first = policy_cache_directory(policy_key("tests.x:A", {}))
    assert first != policy_cache_directory(policy_key("tests.x:B", {}))
    assert first != policy_cache_directory(policy_key("tests.x:A", {"alpha": 0.1}))
    assert first.parent == policy_cache_directory()


def test_no_pickle_is_loaded_in_the_packages():
    """Route 3's last part: nothing under heuresis_env, agents, baselines or heuresis loads a
    pickle (the policy process's requests come from the trusted runner; see docs/sandbox.md)."""
    found = subprocess.run(["grep", "-rn", "--include=*.py", "-E",
                            r"pickle\.loads?\(|cloudpickle|joblib\.load|torch\.load|"
                            r"PPO\.load|allow_pickle=True",
                            "heuresis_env", "agents", "baselines", "heuresis"],
                           cwd=ROOT, capture_output=True, text=True)
    allowed = ("heuresis_env/evaluation/policy_process.py", "heuresis_env/threads.py")
    lines = [line for line in found.stdout.splitlines() if not line.startswith(allowed)]
    assert lines == []
    assert not list((ROOT / "agents" / "data").rglob("*.pkl"))
    assert not list((ROOT / "agents" / "data").rglob("*.zip"))  # SB3 archives unpickle


@pytest.mark.parametrize("kind", ["boosting", "logistic"])
def test_a_saved_repair_model_predicts_as_scikit_learn_without_pickle(tmp_path, kind):
    from agents.learned_repair.classifier import (
        MODEL_FEATURES,
        RepairClassifier,
        load_classifier,
        make_classifier,
        save_classifier,
    )

    rng = np.random.default_rng(1)
    x = rng.uniform(size=(400, len(MODEL_FEATURES)))
    x[rng.uniform(size=x.shape) < 0.1] = np.nan
    y = (np.nan_to_num(x[:, 2]) + rng.normal(scale=0.3, size=400) > 0.5).astype(int)
    fitted = RepairClassifier(kind, family_features=False)
    fitted.model = make_classifier(kind).fit(x, y)
    save_classifier(fitted, {}, tmp_path / "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        "model.json", "model.npz", "report.json"]
    loaded = load_classifier(tmp_path / "model")
    families = ["lg"] * len(x)
    assert np.allclose(loaded.probabilities(x, families), fitted.probabilities(x, families),
                       atol=1e-12)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "model.pkl").write_bytes(b"not even read")
    with pytest.raises(Exception, match="pickled model"):
        load_classifier(tmp_path / "old" / "model.pkl")


def test_the_shipped_repair_model_loads_as_data():
    from agents.learned_repair.classifier import SHIPPED_MODEL_DIR, load_classifier

    model = load_classifier()
    assert model.kind == "boosting" and model.family_features
    assert not list(SHIPPED_MODEL_DIR.glob("*.pkl"))

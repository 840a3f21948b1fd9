"""Convert the pickled learned-repair model (``model.pkl``) to the safe format once.

    python scripts/convert_models.py [MODEL_DIR ...]   (default: agents/data/learned_repair)

Reads ``model.pkl`` — a pickle, so run this only on a file you trust, such as the one this
repository shipped — writes ``model.npz`` and ``model.json`` beside it
(:mod:`agents.learned_repair.safe_model`), checks that the converted model gives the same
probabilities as the pickled one on 2,000 rows (with missing values), and deletes the pickle.
Nothing in the package reads a pickle any more.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from agents.learned_repair.classifier import (  # noqa: E402
    MODEL_FEATURES,
    MODEL_FILE,
    load_classifier,
    save_classifier,
)


def convert(directory: Path) -> None:
    legacy = directory / "model.pkl"
    if not legacy.is_file():
        raise SystemExit(f"{legacy}: no pickled model to convert")
    with open(legacy, "rb") as f:
        saved = pickle.load(f)  # noqa: S301 - the trusted, shipped file, converted once
    old = saved["model"]
    if saved.get("features") != list(MODEL_FEATURES):
        raise SystemExit(f"{legacy} was trained on other features: {saved.get('features')}")
    save_classifier(old, {}, directory.with_name(directory.name + ".converting"))
    new_dir = directory.with_name(directory.name + ".converting")
    for name in (MODEL_FILE, "model.json"):
        (new_dir / name).replace(directory / name)
    (new_dir / "report.json").unlink()
    new_dir.rmdir()
    new = load_classifier(directory)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, size=(2000, len(MODEL_FEATURES)))
    x[rng.uniform(size=x.shape) < 0.1] = np.nan
    families = [old.families[i % len(old.families)] for i in range(len(x))]
    expected, got = old.probabilities(x, families), new.probabilities(x, families)
    gap = float(np.max(np.abs(expected - got)))
    if gap > 1e-9:
        raise SystemExit(f"the converted model differs from the pickled one by {gap:g}")
    legacy.unlink()
    print(f"{directory}: model.pkl → {MODEL_FILE} + model.json (largest difference {gap:.1e})")


if __name__ == "__main__":
    for argument in sys.argv[1:] or [str(ROOT / "agents" / "data" / "learned_repair")]:
        convert(Path(argument))

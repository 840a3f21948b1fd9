"""Convert pickled models to the safe formats, once, on files you trust.

    python scripts/convert_models.py rl --trusted-sha256 HASH MODEL_DIR
    python scripts/convert_models.py learned-repair --trusted-sha256 HASH MODEL_DIR

A pickle runs code when it is read, so the script reads one only when you vouch for that
very file: ``HASH`` is the SHA-256 of its ``model.zip`` (``model.pkl``), as ``sha256sum``
prints it, from the place you trust it came from. Anything else — no hash, another file, no
directory named — is refused before the file is opened (no zip ships any more, so there is no
default directory to convert).

``rl``: reads stable-baselines3's ``model.zip`` (it unpickles parts of itself when loaded, so
run this only on a file you trust, such as one this repository shipped), writes ``model.npz``
+ ``model.json`` beside it (:mod:`agents.rl.model_files`, no pickle), checks that the model
read back from those files gives the same action logits as the zip on a fixed set of
observations (256 drawn from the model's observation space with a fixed seed and the start
observations of two real instances), and deletes the zip.

``learned-repair``: reads ``model.pkl`` (a pickle: likewise only a trusted file), writes
``model.npz`` and ``model.json`` (:mod:`agents.learned_repair.safe_model`), checks equal
probabilities on 2,000 rows (with missing values), and deletes the pickle.

Nothing in the packages reads a pickle: this script is not imported by them and is never run
by ``heuresis``.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def convert_learned_repair(directory: Path) -> None:
    from agents.learned_repair.classifier import (
        MODEL_FEATURES,
        MODEL_FILE,
        load_classifier,
        save_classifier,
    )

    legacy = directory / "model.pkl"
    if not legacy.is_file():
        raise SystemExit(f"{legacy}: no pickled model to convert")
    with open(legacy, "rb") as f:
        saved = pickle.load(f)  # noqa: S301 - a trusted file, converted once
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


def _real_observations(config: dict) -> list[dict]:
    """The start observations of two development instances at the model's d (n = 200)."""
    import gymnasium as gym

    from heuresis_env.registration import env_id

    family = config["family"] if config["family"] != "all" else "lg"
    env = gym.make(env_id(family), interface="rl", guided=bool(config.get("guided", True)),
                   d=int(config["d"]), n=200, split="dev", indices=[0, 1])
    try:
        return [env.reset(seed=k, options={"index": k})[0] for k in (0, 1)]
    finally:
        env.close()


def convert_rl(directory: Path) -> None:
    import json

    from agents.rl.model_files import DESCRIPTION_FILE
    from agents.rl.policy import CONFIG_FILE, MODEL_FILE, SB3_ARCHIVE, RLPolicy, load, save

    archive = directory / SB3_ARCHIVE
    if not archive.is_file():
        raise SystemExit(f"{archive}: no stable-baselines3 archive to convert")
    config = json.loads((directory / CONFIG_FILE).read_text(encoding="utf-8"))
    if config["algo"] == "maskable_ppo":
        from sb3_contrib import MaskablePPO as Algorithm
    else:
        from stable_baselines3 import PPO as Algorithm
    old_model = Algorithm.load(str(archive), device="cpu")  # unpickles: a trusted file only
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    config_before = (directory / CONFIG_FILE).read_bytes()
    save(old_model, config, directory,
         provenance={"written_by": "scripts/convert_models.py rl",
                     "converted_from": {"file": SB3_ARCHIVE, "sha256": digest,
                                        "stable_baselines3": old_model.__dict__.get(
                                            "_stable_baselines3_version", "unknown")}})
    (directory / CONFIG_FILE).write_bytes(config_before)  # unchanged, byte for byte
    old = RLPolicy(old_model, config)
    new = load(directory)
    space = old_model.observation_space
    space.seed(0)
    observations = [space.sample() for _ in range(256)] + _real_observations(config)
    largest, identical = 0.0, True
    for observation in observations:
        expected, got = old.model_logits(observation), new.model_logits(observation)
        identical &= bool(np.array_equal(expected, got))
        largest = max(largest, float(np.max(np.abs(expected.astype(np.float64) - got))))
    if largest > 1e-6:
        for name in (MODEL_FILE, DESCRIPTION_FILE):
            (directory / name).unlink()
        raise SystemExit(f"{directory}: the converted model's logits differ from the zip's by "
                         f"{largest:g}; nothing deleted")
    archive.unlink()
    print(f"{directory}: {SB3_ARCHIVE} → {MODEL_FILE} + {DESCRIPTION_FILE}; action logits on "
          f"{len(observations)} observations {'bit-identical' if identical else 'allclose'} "
          f"(largest difference {largest:.1e}); zip deleted")


def trusted(path: Path, expected: str) -> None:
    """Refuse ``path`` unless its SHA-256 is ``expected`` (read as bytes, never unpickled)."""
    if not path.is_file():
        raise SystemExit(f"refused: {path} is not a file")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected.strip().lower():
        raise SystemExit(f"refused: {path} has SHA-256 {digest}, not the {expected} you vouched "
                         "for; a pickle runs code when it is read, so only that very file is "
                         "converted")


def main(argv: list[str]) -> None:
    if len(argv) != 4 or argv[0] not in ("rl", "learned-repair") \
            or argv[1] != "--trusted-sha256":
        raise SystemExit(__doc__)
    kind, expected, directory = argv[0], argv[2], Path(argv[3])
    if kind == "learned-repair":
        trusted(directory / "model.pkl", expected)
        convert_learned_repair(directory)
        return
    trusted(directory / "model.zip", expected)
    # the checks' real observations compute evidence: keep that out of the user's cache
    os.environ.setdefault("HEURESIS_CACHE_DIR", tempfile.mkdtemp(prefix="heuresis-convert-"))
    convert_rl(directory)


if __name__ == "__main__":
    main(sys.argv[1:])

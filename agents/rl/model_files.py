"""A trained repair policy's network on disk without pickle: ``model.npz`` (the weights, one
plain array per entry of the policy's ``state_dict``) and ``model.json`` (what rebuilds the
network from this package's code: algorithm, architecture, policy class and keyword
arguments, the observation and action spaces, the weights' shapes, dtypes and SHA-256, and
where the file came from).

Reading a model runs no code from the file: the JSON is parsed, the spaces are rebuilt from
their description, the policy class is chosen from a fixed table by (algorithm,
architecture), and the arrays are read with ``numpy.load(..., allow_pickle=False)`` (an array
of Python objects is refused) and copied into the freshly built network with
``load_state_dict(strict=True)``. stable-baselines3's own ``model.zip`` unpickles parts of
itself when loaded, so it is never read here; ``scripts/convert_models.py`` converts a zip
one trusts, once.

torch and stable-baselines3 are imported only by :func:`read_model` and :func:`write_model`.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import package_versions
from heuresis_env.version import __version__

__all__ = ["DESCRIPTION_FILE", "FORMAT", "WEIGHTS_FILE", "LoadedModel", "describe_space",
           "policy_class", "read_description", "read_model", "space_from_description",
           "write_model"]

WEIGHTS_FILE = "model.npz"
DESCRIPTION_FILE = "model.json"
#: the format's name and version in ``model.json``
FORMAT = {"name": "heuresis-rl-model", "version": 1}
#: the policy class of each (algorithm, architecture): the only classes a model file can name
POLICY_CLASSES = {
    ("maskable_ppo", "pairwise"): "agents.rl.network:PairwiseMaskablePolicy",
    ("ppo", "pairwise"): "agents.rl.network:PairwisePolicy",
    ("maskable_ppo", "mlp"): "sb3_contrib.common.maskable.policies:"
                             "MaskableMultiInputActorCriticPolicy",
    ("ppo", "mlp"): "stable_baselines3.common.policies:ActorCriticPolicy",
}
#: the keyword arguments each architecture's policy class may be built with
POLICY_KWARGS = {"pairwise": {"hidden"}, "mlp": {"net_arch"}}
#: dtypes a weight may have (torch's state_dict of these networks: float32)
WEIGHT_KINDS = "fiub"


class LoadedModel:
    """A network read from a model file, in the shape :class:`~agents.rl.policy.RLPolicy`
    uses a stable-baselines3 algorithm: ``policy`` is the SB3 policy object."""

    def __init__(self, policy: Any, description: Mapping[str, Any]):
        self.policy = policy
        self.description = dict(description)


def _number(value: float) -> Any:
    return float(value) if math.isfinite(value) else repr(float(value))


def _bounds(array: np.ndarray) -> Any:
    flat = np.asarray(array, dtype=np.float64).reshape(-1)
    if flat.size and np.all(flat == flat[0]):
        return _number(flat[0])
    return [_number(v) for v in flat]


def describe_space(space: Any) -> dict[str, Any]:
    """A JSON description of a gymnasium space (Dict, Box, MultiBinary, Discrete)."""
    from gymnasium import spaces

    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": [[key, describe_space(sub)]
                                           for key, sub in space.spaces.items()]}
    if isinstance(space, spaces.Box):
        return {"type": "Box", "shape": list(space.shape), "dtype": np.dtype(space.dtype).str,
                "low": _bounds(space.low), "high": _bounds(space.high)}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    raise HeuresisError(f"a model file cannot describe the space {space!r}")


def _bound_array(value: Any, shape: tuple[int, ...], name: str) -> np.ndarray:
    values = value if isinstance(value, list) else [value]
    array = np.array([float(v) for v in values], dtype=np.float64)
    if isinstance(value, list):
        if array.size != math.prod(shape):
            raise HeuresisError(f"the space's {name} bounds have {array.size} values for "
                                f"shape {list(shape)}")
        return array.reshape(shape)
    return np.full(shape, array[0])


def space_from_description(node: Any) -> Any:
    """The gymnasium space :func:`describe_space` described; a clear error for anything else."""
    from gymnasium import spaces

    if not isinstance(node, dict) or not isinstance(node.get("type"), str):
        raise HeuresisError(f"a space description must be an object with a type, got {node!r}")
    kind = node["type"]
    try:
        if kind == "Dict":
            return spaces.Dict({str(key): space_from_description(sub)
                                for key, sub in node["spaces"]})
        if kind == "Box":
            shape = tuple(int(s) for s in node["shape"])
            dtype = np.dtype(node["dtype"])
            if dtype.kind not in "fiu":
                raise HeuresisError(f"a Box of dtype {dtype} is not a model input")
            return spaces.Box(_bound_array(node["low"], shape, "low").astype(dtype),
                              _bound_array(node["high"], shape, "high").astype(dtype),
                              shape=shape, dtype=dtype)
        if kind == "MultiBinary":
            n = node["n"]
            return spaces.MultiBinary([int(v) for v in n] if isinstance(n, list) else int(n))
        if kind == "Discrete":
            return spaces.Discrete(int(node["n"]), start=int(node.get("start", 0)))
    except (KeyError, TypeError, ValueError) as exc:
        raise HeuresisError(f"a {kind} space description is malformed ({exc}): {node!r}") \
            from None
    raise HeuresisError(f"unknown space type {kind!r} in a model description")


def policy_class(algo: str, architecture: str) -> type:
    """The SB3 policy class of an (algorithm, architecture), from :data:`POLICY_CLASSES`."""
    name = POLICY_CLASSES.get((algo, architecture))
    if name is None:
        raise HeuresisError(f"no policy class for algorithm {algo!r} and architecture "
                            f"{architecture!r}; known: {sorted(POLICY_CLASSES)}")
    module, qualname = name.split(":")
    return getattr(__import__(module, fromlist=[qualname]), qualname)


def _versions() -> dict[str, str]:
    versions = package_versions()
    return {name: str(versions.get(name)) for name in ("torch", "stable-baselines3",
                                                        "sb3-contrib")}


def write_model(policy: Any, algo: str, architecture: str, policy_kwargs: Mapping[str, Any],
                out_dir: str | Path, provenance: Mapping[str, Any] | None = None) -> Path:
    """Write an SB3 policy object's weights (``model.npz``) and description (``model.json``)
    into ``out_dir``; returns the weights' path."""
    unknown = set(policy_kwargs) - POLICY_KWARGS.get(architecture, set())
    if unknown:
        raise HeuresisError(f"the {architecture} architecture's model file cannot record the "
                            f"policy keyword argument(s) {sorted(unknown)}")
    expected = policy_class(algo, architecture)
    if type(policy) is not expected:
        raise HeuresisError(f"a {algo} model of the {architecture} architecture is a "
                            f"{expected.__name__}, not a {type(policy).__name__}")
    arrays = {name: tensor.detach().cpu().numpy() for name, tensor in
              policy.state_dict().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    payload = buffer.getvalue()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    description = {
        "format": FORMAT, "algo": algo, "architecture": architecture,
        "policy_class": POLICY_CLASSES[(algo, architecture)],
        "policy_kwargs": dict(policy_kwargs),
        "observation_space": describe_space(policy.observation_space),
        "action_space": describe_space(policy.action_space),
        "weights": {"file": WEIGHTS_FILE, "sha256": hashlib.sha256(payload).hexdigest(),
                    "arrays": {name: {"shape": list(a.shape), "dtype": a.dtype.str}
                               for name, a in arrays.items()}},
        "provenance": {"heuresis": __version__, **_versions(),
                       "written": _dt.datetime.now(_dt.UTC).isoformat(
                           timespec="seconds"), **dict(provenance or {})},
    }
    (out / WEIGHTS_FILE).write_bytes(payload)
    (out / DESCRIPTION_FILE).write_text(json.dumps(description, indent=2), encoding="utf-8")
    return out / WEIGHTS_FILE


def read_description(directory: str | Path) -> dict[str, Any]:
    """``model.json`` of a model directory, checked for the format and its fields."""
    path = Path(directory) / DESCRIPTION_FILE
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HeuresisError(f"{path} is missing; a model directory holds {WEIGHTS_FILE} and "
                            f"{DESCRIPTION_FILE}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise HeuresisError(f"{path} is not JSON ({exc})") from None
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        found = description.get("format") if isinstance(description, dict) else description
        raise HeuresisError(f"{path} is not a model description of format {FORMAT} "
                            f"(found {found!r})")
    for key in ("algo", "architecture", "policy_kwargs", "observation_space", "action_space",
                "weights"):
        if key not in description:
            raise HeuresisError(f"{path} has no {key!r}")
    named = POLICY_CLASSES.get((description["algo"], description["architecture"]))
    if named is None or description.get("policy_class", named) != named:
        raise HeuresisError(f"{path}: the policy class {description.get('policy_class')!r} is "
                            f"not the one of algorithm {description['algo']!r} and "
                            f"architecture {description['architecture']!r} (classes a model "
                            f"file may name: {sorted(set(POLICY_CLASSES.values()))})")
    if not isinstance(description["policy_kwargs"], dict):
        raise HeuresisError(f"{path}: policy_kwargs must be an object")
    unknown = set(description["policy_kwargs"]) - POLICY_KWARGS.get(
        description["architecture"], set())
    if unknown:
        raise HeuresisError(f"{path}: policy keyword argument(s) {sorted(unknown)} are not "
                            f"those of the {description['architecture']!r} architecture")
    return description


def read_weights(directory: str | Path, description: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """The arrays of ``model.npz``, checked against the description (hash, names, shapes,
    plain dtypes); never unpickles (an object array is refused)."""
    path = Path(directory) / WEIGHTS_FILE
    try:
        payload = path.read_bytes()
    except FileNotFoundError:
        raise HeuresisError(f"{path} is missing; a model directory holds {WEIGHTS_FILE} and "
                            f"{DESCRIPTION_FILE}") from None
    expected = description["weights"]
    if hashlib.sha256(payload).hexdigest() != expected.get("sha256"):
        raise HeuresisError(f"{path} does not match the SHA-256 its {DESCRIPTION_FILE} "
                            "records (a changed or swapped weights file)")
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError) as exc:
        raise HeuresisError(f"{path} is not an archive of plain arrays ({exc}); a model's "
                            "weights are never unpickled") from None
    recorded = expected.get("arrays") or {}
    if set(recorded) != set(arrays):
        raise HeuresisError(f"{path} holds the arrays {sorted(arrays)}, its description "
                            f"{sorted(recorded)}")
    for name, array in arrays.items():
        if array.dtype.kind not in WEIGHT_KINDS or array.dtype.hasobject:
            raise HeuresisError(f"{path}: array {name!r} has dtype {array.dtype}, not a "
                                "number type")
        if [list(array.shape), array.dtype.str] != [recorded[name].get("shape"),
                                                     recorded[name].get("dtype")]:
            raise HeuresisError(f"{path}: array {name!r} is {array.dtype.str} "
                                f"{list(array.shape)}, its description says "
                                f"{recorded[name]}")
    return arrays


def read_model(directory: str | Path, device: str = "cpu") -> LoadedModel:
    """Rebuild the network of a model directory from code and load its weights."""
    import torch

    description = read_description(directory)
    cls = policy_class(str(description["algo"]), str(description["architecture"]))
    arrays = read_weights(directory, description)
    observation_space = space_from_description(description["observation_space"])
    action_space = space_from_description(description["action_space"])
    with torch.random.fork_rng(devices=[]):  # building initialises weights: keep torch's RNG
        policy = cls(observation_space, action_space, lambda _: 0.0,
                     **description["policy_kwargs"])
    try:
        policy.load_state_dict({name: torch.from_numpy(np.array(array))
                                for name, array in arrays.items()}, strict=True)
    except RuntimeError as exc:
        raise HeuresisError(f"the weights in {Path(directory) / WEIGHTS_FILE} do not fit the "
                            f"network its description builds: {exc}") from None
    policy = policy.to(device)
    policy.set_training_mode(False)
    return LoadedModel(policy, description)

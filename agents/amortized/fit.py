"""Training the directed models on the stream, resumable.

Every step draws a size d (with probability proportional to the instances of that size), then
``max(1, min(max_batch, batch_cells // d²))`` instances of that size, and r =
``config.rows`` of each one's stored rows (a fresh random subset each time: the row order is
an augmentation); one AdamW step on the model's loss (linear warm-up, cosine decay to 10 %).
The step's draws are seeded by (seed, step), so a resumed run draws what the interrupted one
would have.

Every ``checkpoint_every`` steps the model, the optimizer's state and the step are written to
``out/checkpoint`` (data only: the model's ``model.json`` + ``model.npz``, the optimizer's
moments as ``optimizer.npz``, ``state.json``), atomically, and a run started again with the
same ``out`` resumes there. Every ``reload_every`` steps the shard folder is read again, so a
stream still being built feeds the run as it grows — unless ``shards`` fixes the training set:
then the run reads exactly the first ``shards`` shards (in index order), refuses to start
before they exist, never reads another, and records their names and SHA-256 digests, so the
same command reproduces the same model on any machine.

``init`` starts a run from a saved model (its weights, configuration and input
normalisation; the optimizer starts afresh) instead of random weights: the way training goes
on across machines that keep no files, from the model a repository ships. The model's lineage
(its weights' digest, its provenance) goes into every checkpoint's and the final model's
provenance, and the first history line (step 0) is the held-out loss of the starting model
on this run's held-out instances, so what the further training bought is measured. Instances whose index is a multiple of
``holdout_every`` are never trained on: they give the held-out loss logged beside the training
loss (``out/history.jsonl``; the data term only — AVICI's acyclicity penalty, whose weight
grows during training, would make later steps look worse); the model of the lowest held-out
loss so far is kept in ``out/best`` (a model folder, with its step), so a run that outgrows its data — a stream still
being built — leaves its best model, not only its last. (The held-out set is the held-out
instances of the shards read so far, its first 200: it grows with the stream until then.)
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from agents.amortized.directed import (
    AviciConfig,
    AviciModel,
    DirectedConfig,
    DirectedModel,
    cell_inputs,
    load_directed,
    row_inputs,
    save_directed,
)
from agents.amortized.model import MODEL_JSON
from agents.amortized.stream import StreamSet, load_stream, screen_path, stream_shards
from heuresis_env.errors import HeuresisError
from heuresis_env.files import atomic_write_bytes
from heuresis_env.generation import BENCHMARK_FAMILIES, TrainPrior

__all__ = ["FitSettings", "fit_directed", "fit_normalisation"]


@dataclass
class FitSettings:
    architecture: str = "directed"
    steps: int = 20_000
    batch_cells: int = 1_600
    max_batch: int = 16
    learning_rate: float = 5e-4
    weight_decay: float = 1e-2
    warmup: int = 300
    seed: int = 0
    threads: int = 1
    checkpoint_every: int = 200
    reload_every: int = 500
    holdout_every: int = 50
    max_d: int = 50
    #: stop after this step (checkpointed) as an interruption would; a later call with the same
    #: settings and ``out`` goes on from there (None: run to ``steps``)
    stop_at: int | None = None
    #: train on exactly the first this many shards (a fixed, recorded set; None: every shard
    #: in the folder, read again every ``reload_every`` steps)
    shards: int | None = None
    #: a model folder to start from instead of random weights (None: random, seeded)
    init: str | None = None
    #: families never read — not trained on, not in the held-out loss, not in the input
    #: normalisation (leave-one-family-out); empty: every family of the shards
    exclude_families: tuple[str, ...] = ()


def fit_normalisation(data: StreamSet, limit: int = 400) -> tuple[list[float], list[float]]:
    """Per-channel mean and deviation of the cell inputs (off-diagonal cells) of the first
    ``limit`` instances."""
    sums = None
    squares = None
    count = 0
    for k in range(min(len(data), limit)):
        pairs, nodes, _, _ = data.example(k)
        cells = cell_inputs(pairs, nodes, data.screens)[0]
        off = ~np.eye(cells.shape[0], dtype=bool)
        flat = cells[off].astype(np.float64)
        sums = flat.sum(axis=0) if sums is None else sums + flat.sum(axis=0)
        squares = (flat ** 2).sum(axis=0) if squares is None else squares + (flat ** 2).sum(0)
        count += len(flat)
    if sums is None or squares is None:
        raise HeuresisError("no instances to fit the normalisation on")
    mean = sums / count
    std = np.sqrt(np.maximum(squares / count - mean ** 2, 0.0))
    std[std < 1e-6] = 1.0
    return mean.tolist(), std.tolist()


def _batch(data: StreamSet, members: np.ndarray, rows: int, rng: np.random.Generator
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    cells, row_arrays, dags = [], [], []
    for k in members:
        pairs, nodes, stored, dag = data.example(int(k))
        cells.append(cell_inputs(pairs, nodes, data.screens)[0])
        take = min(rows, stored.shape[0])
        row_arrays.append(stored[rng.permutation(stored.shape[0])[:take]])
        dags.append(dag)
    take = min(a.shape[0] for a in row_arrays)
    rows_in = row_inputs(np.stack([a[:take] for a in row_arrays]))
    return (torch.from_numpy(np.stack(cells)), torch.from_numpy(rows_in),
            torch.from_numpy(np.stack(dags).astype(np.int64)))


def _build(settings: FitSettings, config: dict[str, Any]) -> DirectedModel | AviciModel:
    if settings.architecture == "directed":
        return DirectedModel(DirectedConfig(**config))
    if settings.architecture == "avici":
        return AviciModel(AviciConfig(**config))
    raise HeuresisError(f"architecture must be 'directed' or 'avici', got "
                        f"{settings.architecture!r}")


def _save_optimizer(optimizer: torch.optim.Optimizer, path: Path) -> None:
    import io

    arrays: dict[str, np.ndarray] = {}
    for index, state in optimizer.state_dict()["state"].items():
        for name, value in state.items():
            arrays[f"{index}/{name}"] = (value.detach().numpy() if torch.is_tensor(value)
                                         else np.asarray(value))
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def _load_optimizer(optimizer: torch.optim.Optimizer, path: Path) -> None:
    state_dict = optimizer.state_dict()
    with np.load(path, allow_pickle=False) as archive:
        state: dict[int, dict[str, torch.Tensor]] = {}
        for key in archive.files:
            index, name = key.split("/", 1)
            state.setdefault(int(index), {})[name] = torch.from_numpy(archive[key].copy())
    state_dict["state"] = state
    optimizer.load_state_dict(state_dict)


def _learning_rate(settings: FitSettings, step: int) -> float:
    if step < settings.warmup:
        return settings.learning_rate * (step + 1) / settings.warmup
    progress = (step - settings.warmup) / max(settings.steps - settings.warmup, 1)
    return settings.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(progress, 1))))


def fit_directed(shards: str | Path, out: str | Path, settings: FitSettings,
                 config: dict[str, Any] | None = None, prior: str | TrainPrior | None = None,
                 progress: Callable[[str], None] | None = None) -> Path:
    """Train (or resume training) a model on the stream shards in ``shards``; returns the
    folder of the final model (``out/model``), or of the checkpoint when ``stop_at`` ended the
    call first. See the module docstring."""
    torch.set_num_threads(settings.threads)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    say = progress or (lambda message: None)
    paths = _training_shards(shards, settings, prior)
    screens = _reads_screen(out / "checkpoint", settings, config)
    data = _load(paths, settings, screens)
    # the fixed set's digests, hashed once (its shards are never read again)
    fixed = {"shard_digests": _digests(paths)} if settings.shards is not None else {}
    model, step = _starting_model(out / "checkpoint", settings, config, data, fixed, say)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate,
                                  weight_decay=settings.weight_decay)
    if (out / "checkpoint" / "optimizer.npz").exists() and step > 0:
        _load_optimizer(optimizer, out / "checkpoint" / "optimizer.npz")
    rows = int(model.config.rows)
    record = {"init": _lineage(settings.init)} if settings.init else {}
    buckets, held_out = _split(data, settings)
    if step == 0 and record and not (out / "history.jsonl").exists():
        held = _held_out_loss(model, data, held_out, rows, settings.seed)
        _log(out, {"step": 0, "held_out_loss": held, "instances": len(data),
                   "init": record["init"]["weights_sha256"]})
        save_directed(model, out / "best", {"step": 0, "held_out_loss": held,
                                            "instances": len(data),
                                            "settings": asdict(settings), **record})
        say(f"step 0 (the starting model): held-out {held:.4f}")
    started = time.perf_counter()
    losses: list[float] = []
    last = settings.steps if settings.stop_at is None else min(settings.steps, settings.stop_at)
    while step < last:
        if step % settings.reload_every == 0 and step > 0 and settings.shards is None:
            fresh = [p for p in stream_shards(shards, prior)  # a screen may come after its shard
                     if not screens or screen_path(p).exists()]
            if len(fresh) > len(paths):
                paths, data = fresh, _load(fresh, settings, screens)
                buckets, held_out = _split(data, settings)
        losses.append(_train_step(model, optimizer, data, buckets, rows, settings, step))
        step += 1
        if step % settings.checkpoint_every == 0 or step == last:
            held = _held_out_loss(model, data, held_out, rows, settings.seed)
            entry = {"step": step, "loss": float(np.mean(losses)), "held_out_loss": held,
                     "instances": len(data), "seconds": time.perf_counter() - started,
                     "learning_rate": _learning_rate(settings, step)}
            if isinstance(model, AviciModel):
                entry["dual"] = float(model.dual)
            losses = []
            _log(out, entry)
            _checkpoint(out, model, optimizer, settings, entry, paths, fixed, record)
            say(f"step {step}/{settings.steps}: loss {entry['loss']:.4f}, held-out "
                f"{held:.4f}, {len(data)} instances, {entry['seconds']:.0f} s")
    if step < settings.steps:
        return out / "checkpoint"  # stopped early: where a later call goes on
    model.eval()
    return save_directed(model, out / "model", {
        "steps": settings.steps, "settings": asdict(settings),
        "shards": [p.name for p in paths], "instances": len(data),
        **fixed, **record})


def _training_shards(shards: str | Path, settings: FitSettings,
                     prior: str | TrainPrior | None) -> list[Path]:
    """The shards a run reads first: every one in the folder, or the fixed set's."""
    paths = stream_shards(shards, prior)
    if not paths:
        raise HeuresisError(f"no stream shards in {shards} (build them with `python -m "
                            f"agents.amortized stream`)")
    if settings.shards is None:
        return paths
    if settings.shards < 1:
        raise HeuresisError(f"shards must be at least 1, got {settings.shards}")
    if len(paths) < settings.shards:
        raise HeuresisError(f"{shards}: {len(paths)} stream shards, the fixed set needs the "
                            f"first {settings.shards} (build more with `heuresis amortized "
                            f"stream`)")
    return paths[:settings.shards]


def _reads_screen(checkpoint: Path, settings: FitSettings, config: dict[str, Any] | None
                  ) -> bool:
    """Whether the run's model reads the local screen: its checkpoint's or starting model's
    configuration, else the one given."""
    for folder in ((checkpoint,) if (checkpoint / "state.json").exists() else ()) + \
            ((Path(settings.init),) if settings.init else ()):
        fields = json.loads((folder / MODEL_JSON).read_text()).get("config") or {}
        return bool(fields.get("local_screen"))
    return bool((config or {}).get("local_screen"))


def _load(paths: list[Path], settings: FitSettings, screens: bool = False) -> StreamSet:
    """The shards' instances a run may read: without the excluded families (checked before
    any shard is read); with ``screens`` their local screens too."""
    unknown = sorted(set(settings.exclude_families) - set(BENCHMARK_FAMILIES))
    if unknown:
        raise HeuresisError(f"cannot exclude {', '.join(unknown)}: the families are "
                            f"{', '.join(BENCHMARK_FAMILIES)}")
    data = load_stream(paths, screens)
    if not settings.exclude_families:
        return data
    keep = ~np.isin(data.family, list(settings.exclude_families))
    if not keep.any():
        raise HeuresisError(f"no instances left once {', '.join(settings.exclude_families)} "
                            f"are excluded")
    return data.select(keep)


def _starting_model(checkpoint: Path, settings: FitSettings, config: dict[str, Any] | None,
                    data: StreamSet, fixed: dict[str, Any], say: Callable[[str], None]
                    ) -> tuple[DirectedModel | AviciModel, int]:
    """The model and step a run starts from: its checkpoint (resuming), the ``init`` model,
    or fresh seeded weights."""
    if (checkpoint / "state.json").exists():
        model, _ = load_directed(checkpoint)
        state = json.loads((checkpoint / "state.json").read_text())
        if state["settings"]["architecture"] != settings.architecture:
            raise HeuresisError(f"{checkpoint}: a checkpoint of another architecture")
        if list(state["settings"].get("exclude_families", [])) != \
                list(settings.exclude_families):
            raise HeuresisError(f"{checkpoint}: trained with other families excluded")
        if fixed and state.get("shard_digests") not in (None, fixed["shard_digests"]):
            raise HeuresisError(f"{checkpoint}: trained on other shards than the first "
                                f"{settings.shards} of its folder")
        say(f"resuming at step {state['step']} from {checkpoint}")
        return model, int(state["step"])
    torch.manual_seed(settings.seed)
    if settings.init:
        if config:
            raise HeuresisError("a run started from a model (init) takes that model's "
                                "configuration; give no config")
        model, _ = load_directed(settings.init)
        if model.architecture != settings.architecture:
            raise HeuresisError(f"{settings.init}: a {model.architecture} model, not "
                                f"{settings.architecture}")
        return model, 0
    fields = dict(config or {})
    if settings.architecture == "directed":
        fields["input_mean"], fields["input_std"] = fit_normalisation(data)
    return _build(settings, fields), 0


def _split(data: StreamSet, settings: FitSettings) -> tuple[dict[int, np.ndarray], np.ndarray]:
    """The training instances by size, and the held-out ones (index a multiple of
    ``holdout_every``), both at most ``max_d`` variables."""
    held = (data.index % settings.holdout_every) == 0
    usable = (~held) & (data.d <= settings.max_d)
    buckets = {int(d): np.flatnonzero(usable & (data.d == d))
               for d in np.unique(data.d[usable])}
    return buckets, np.flatnonzero(held & (data.d <= settings.max_d))


def _train_step(model: DirectedModel | AviciModel, optimizer: torch.optim.Optimizer,
                data: StreamSet, buckets: dict[int, np.ndarray], rows: int,
                settings: FitSettings, step: int) -> float:
    """One step (see the module docstring); its draws seeded by (seed, step)."""
    rng = np.random.default_rng([settings.seed, step])
    sizes = np.array(sorted(buckets))
    weights = np.array([len(buckets[int(s)]) for s in sizes], dtype=float)
    d = int(rng.choice(sizes, p=weights / weights.sum()))
    size = max(1, min(settings.max_batch, settings.batch_cells // (d * d)))
    members = rng.choice(buckets[d], size=min(size, len(buckets[d])), replace=False)
    cells, row_in, dags = _batch(data, members, rows, rng)
    for group in optimizer.param_groups:
        group["lr"] = _learning_rate(settings, step)
    loss = model.loss(model(cells, row_in), dags)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    if isinstance(model, AviciModel):
        model.dual_step(step)
    return float(loss.detach())


def _log(out: Path, entry: dict[str, Any]) -> None:
    with (out / "history.jsonl").open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(entry) + "\n")


def _checkpoint(out: Path, model: DirectedModel | AviciModel, optimizer: torch.optim.Optimizer,
                settings: FitSettings, entry: dict[str, Any], paths: list[Path],
                fixed: dict[str, Any], record: dict[str, Any]) -> None:
    """The checkpoint (model, optimizer, state: with ``fixed``, the fixed set's digests) and,
    when its held-out loss is the lowest so far, the best model (``record``: the lineage)."""
    checkpoint = out / "checkpoint"
    step, held = entry["step"], entry["held_out_loss"]
    save_directed(model, checkpoint, {"step": step, "settings": asdict(settings), **record})
    best_file = out / "best" / "model.json"
    best_loss = (json.loads(best_file.read_text())["provenance"].get("held_out_loss", math.inf)
                 if best_file.exists() else math.inf)
    if held < best_loss:
        save_directed(model, out / "best", {"step": step, "held_out_loss": held,
                                            "instances": entry["instances"],
                                            "settings": asdict(settings), **record})
    _save_optimizer(optimizer, checkpoint / "optimizer.npz")
    atomic_write_bytes(checkpoint / "state.json", json.dumps(
        {"step": step, "settings": asdict(settings), "shards": [p.name for p in paths],
         **fixed}, indent=1).encode())


def _digests(paths: list[Path]) -> dict[str, str]:
    """Each shard's SHA-256, by name: the fixed training set, recorded."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths}


def _lineage(folder: str) -> dict[str, Any]:
    """What a run started from: the model folder's weights digest and its provenance (which
    carries its own ``init`` when it too was started from a model: a chain)."""
    record = json.loads((Path(folder) / "model.json").read_text(encoding="utf-8"))
    return {"weights_sha256": record.get("weights_sha256"),
            "provenance": record.get("provenance")}


@torch.no_grad()
def _held_out_loss(model: DirectedModel | AviciModel, data: StreamSet, held: np.ndarray,
                   rows: int, seed: int, limit: int = 200) -> float:
    was_training = model.training
    model.eval()
    rng = np.random.default_rng([seed, 10**9])
    values = []
    for k in held[:limit]:
        cells, row_in, dags = _batch(data, np.array([k]), rows, rng)
        values.append(float(model.data_loss(model(cells, row_in), dags)))
    model.train(was_training)
    return float(np.mean(values)) if values else float("nan")

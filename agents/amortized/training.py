"""Training the grid model on labelled evidence grids (binary cross-entropy on adjacency).

Training instances come from the ``train`` split (never dev or test); a held-out slice of
them (by instance) picks the epoch whose held-out loss was lowest. Everything is seeded
(torch's generator, the batch order, the held-out slice) and runs on the CPU with a fixed
number of torch threads, so a run repeats on one machine.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from agents.amortized.dataset import ExampleSet
from agents.amortized.model import GridModel, ModelConfig, fit_normalisation, model_inputs
from heuresis_env.errors import HeuresisError

__all__ = ["TrainingSettings", "TrainingResult", "train_model", "held_out_split"]


@dataclass
class TrainingSettings:
    epochs: int = 40
    batch_size: int = 32
    learning_rate: float = 1e-3
    weight_decay: float = 1e-2
    held_out: float = 0.1  # fraction of training instances held out to choose the epoch
    seed: int = 0
    threads: int = 1
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    feedforward: int = 128
    dropout: float = 0.0


@dataclass
class TrainingResult:
    model: GridModel
    settings: TrainingSettings
    history: list[dict[str, float]] = field(default_factory=list)
    best_epoch: int = 0
    seconds: float = 0.0
    train_instances: int = 0
    held_out_instances: int = 0

    def summary(self) -> dict[str, Any]:
        return {"best_epoch": self.best_epoch, "seconds": round(self.seconds, 1),
                "train_instances": self.train_instances,
                "held_out_instances": self.held_out_instances,
                "history": self.history}


def held_out_split(examples: ExampleSet, fraction: float, seed: int
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Boolean masks (train, held out): ``fraction`` of each family's instances held out."""
    rng = np.random.default_rng(seed)
    held = np.zeros(len(examples), dtype=bool)
    for family in sorted(set(examples.family.tolist())):
        members = np.flatnonzero(examples.family == family)
        count = int(round(fraction * members.size)) if members.size > 1 else 0
        held[rng.permutation(members)[:count]] = True
    return ~held, held


def _loss(model: GridModel, cells: torch.Tensor, labels: torch.Tensor,
          off: torch.Tensor) -> torch.Tensor:
    logits = model(cells)
    return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, off], labels[:, off])


def train_model(examples: ExampleSet, settings: TrainingSettings | None = None,
                progress: Callable[[str], None] | None = None) -> TrainingResult:
    """Fit a :class:`GridModel` on ``examples`` (all of one d) with a held-out slice."""
    settings = settings or TrainingSettings()
    if len(examples) < 2:
        raise HeuresisError(f"training needs at least 2 instances, got {len(examples)}")
    torch.manual_seed(settings.seed)
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(max(1, int(settings.threads)))
    try:
        return _train(examples, settings, progress)
    finally:
        torch.set_num_threads(previous_threads)


def _train(examples: ExampleSet, settings: TrainingSettings,
           progress: Callable[[str], None] | None) -> TrainingResult:
    started = time.perf_counter()
    train_mask, held_mask = held_out_split(examples, settings.held_out, settings.seed)
    cells = model_inputs(examples.pairs, examples.nodes)
    labels = examples.skeleton.astype(np.float32)
    mean, std = fit_normalisation(cells[train_mask])
    config = ModelConfig(hidden=settings.hidden, layers=settings.layers, heads=settings.heads,
                         feedforward=settings.feedforward, dropout=settings.dropout,
                         input_mean=mean, input_std=std)
    model = GridModel(config)
    d = cells.shape[1]
    off = torch.from_numpy(~np.eye(d, dtype=bool))
    train_cells = torch.from_numpy(np.ascontiguousarray(cells[train_mask]))
    train_labels = torch.from_numpy(labels[train_mask])
    held_cells = torch.from_numpy(np.ascontiguousarray(cells[held_mask]))
    held_labels = torch.from_numpy(labels[held_mask])
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.learning_rate,
                                  weight_decay=settings.weight_decay)
    steps_per_epoch = max(1, math.ceil(len(train_cells) / settings.batch_size))
    total_steps = steps_per_epoch * settings.epochs
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings.learning_rate, total_steps=total_steps, pct_start=0.1)
    rng = np.random.default_rng(settings.seed)
    best = (math.inf, 0, {k: v.clone() for k, v in model.state_dict().items()})
    history = []
    for epoch in range(1, settings.epochs + 1):
        model.train()
        order = rng.permutation(len(train_cells))
        total, batches = 0.0, 0
        for start in range(0, len(order), settings.batch_size):
            batch = torch.from_numpy(order[start:start + settings.batch_size])
            loss = _loss(model, train_cells[batch], train_labels[batch], off)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            total += float(loss.detach())
            batches += 1
        model.eval()
        with torch.no_grad():
            held_loss = (float(_loss(model, held_cells, held_labels, off))
                         if len(held_cells) else math.nan)
        history.append({"epoch": epoch, "train_loss": round(total / max(batches, 1), 5),
                        "held_out_loss": round(held_loss, 5),
                        "seconds": round(time.perf_counter() - started, 1)})
        score = held_loss if not math.isnan(held_loss) else total / max(batches, 1)
        if score < best[0]:
            best = (score, epoch, {k: v.clone() for k, v in model.state_dict().items()})
        if progress is not None:
            progress(f"epoch {epoch}/{settings.epochs}: train {total / max(batches, 1):.4f}, "
                     f"held out {held_loss:.4f} ({time.perf_counter() - started:.0f} s)")
    model.load_state_dict(best[2])
    model.eval()
    return TrainingResult(model=model, settings=settings, history=history, best_epoch=best[1],
                          seconds=time.perf_counter() - started,
                          train_instances=int(train_mask.sum()),
                          held_out_instances=int(held_mask.sum()))

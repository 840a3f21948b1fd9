"""The graph-level model: axial attention over the grid of variable pairs.

Input: an instance's evidence grid (:class:`heuresis_env.evidence.EvidenceGrid`). Cell
(i, j) of a d × d grid is embedded from the pair features of (i, j), the ordered features of
(j, i), the node features of i and of j, and a flag for the diagonal (a diagonal cell is the
variable's own token). Each of ``layers`` blocks lets every cell attend to the cells of its
row, then of its column (axial attention, as in the pair stack of AlphaFold or the
alternating attention of AVICI, Lorch et al. 2022), then applies a feed-forward layer; so
pairs that share a node see each other, and pairs that share none see each other through
two hops. No position enters anywhere: permuting the variables permutes the output in the
same way (a test checks it), and one set of weights serves every d.

Output: a logit per unordered pair, (ℓ_ij + ℓ_ji)/2, read as P(i and j are adjacent in the
true DAG). Trained with binary cross-entropy on simulated instances (:mod:`.training`).

Saved as two data-only files: ``model.json`` (architecture, feature lists, the input
normalisation, provenance) and ``model.npz`` (the weights as float32 arrays, read with
``allow_pickle=False``) — no pickle anywhere.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    GRID_EVIDENCE_VERSION,
    GRID_NODE_FEATURE_NAMES,
    GRID_PAIR_FEATURE_NAMES,
    GRID_PAIR_FEATURES,
)
from heuresis_env.files import atomic_write_bytes

__all__ = ["GridModel", "ModelConfig", "load_model", "model_inputs", "save_model",
           "MODEL_JSON", "MODEL_WEIGHTS"]

MODEL_JSON = "model.json"
MODEL_WEIGHTS = "model.npz"
#: the ordered (not symmetric) pair features, read for (j, i) as well
ORDERED_FEATURES = tuple(k for k, f in enumerate(GRID_PAIR_FEATURES) if not f.symmetric)
#: standardized inputs are clipped to ± this
INPUT_CLIP = 8.0


@dataclass
class ModelConfig:
    hidden: int = 64
    layers: int = 4
    heads: int = 4
    feedforward: int = 128
    dropout: float = 0.0
    pair_features: tuple[str, ...] = GRID_PAIR_FEATURE_NAMES
    node_features: tuple[str, ...] = GRID_NODE_FEATURE_NAMES
    grid_version: int = GRID_EVIDENCE_VERSION
    # input normalisation, fitted on the training set (per input channel)
    input_mean: list[float] = field(default_factory=list)
    input_std: list[float] = field(default_factory=list)

    @property
    def inputs(self) -> int:
        return len(self.pair_features) + len(ORDERED_FEATURES) + 2 * len(self.node_features) + 1


def model_inputs(pairs: np.ndarray, nodes: np.ndarray,
                 ordered: Sequence[int] = ORDERED_FEATURES) -> np.ndarray:
    """The raw cell inputs of a batch: (m, d, d, P) pairs and (m, d, N) nodes → (m, d, d, C)
    with C = P + |ordered| + 2N + 1: every pair feature of (i, j), the ``ordered`` ones (the
    channels that differ between (i, j) and (j, i)) of (j, i), the node features of i and of
    j, and a diagonal flag (see the module docstring)."""
    pairs = np.asarray(pairs, dtype=np.float32)
    nodes = np.asarray(nodes, dtype=np.float32)
    if pairs.ndim == 3:
        pairs, nodes = pairs[None], nodes[None]
    m, d = pairs.shape[:2]
    reverse = np.swapaxes(pairs, 1, 2)[..., list(ordered)]
    node_i = np.broadcast_to(nodes[:, :, None, :], (m, d, d, nodes.shape[-1]))
    node_j = np.broadcast_to(nodes[:, None, :, :], (m, d, d, nodes.shape[-1]))
    diagonal = np.broadcast_to(np.eye(d, dtype=np.float32)[None, :, :, None], (m, d, d, 1))
    return np.concatenate([pairs, reverse, node_i, node_j, diagonal], axis=-1)


class _AxialBlock(nn.Module):
    def __init__(self, hidden: int, heads: int, feedforward: int, dropout: float):
        super().__init__()
        self.norm_row = nn.LayerNorm(hidden)
        self.row = nn.MultiheadAttention(hidden, heads, dropout=dropout, batch_first=True)
        self.norm_col = nn.LayerNorm(hidden)
        self.col = nn.MultiheadAttention(hidden, heads, dropout=dropout, batch_first=True)
        self.norm_ff = nn.LayerNorm(hidden)
        self.ff = nn.Sequential(nn.Linear(hidden, feedforward), nn.GELU(),
                                nn.Dropout(dropout), nn.Linear(feedforward, hidden))

    @staticmethod
    def _attend(attention: nn.MultiheadAttention, x: torch.Tensor) -> torch.Tensor:
        m, d, _, h = x.shape
        rows = x.reshape(m * d, d, h)
        out, _ = attention(rows, rows, rows, need_weights=False)
        return out.reshape(m, d, d, h)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self._attend(self.row, self.norm_row(x))
        y = self.norm_col(x).transpose(1, 2)
        x = x + self._attend(self.col, y).transpose(1, 2)
        return x + self.ff(self.norm_ff(x))


class GridModel(nn.Module):
    """Axial attention over the pair grid → one adjacency logit per unordered pair."""

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        inputs = config.inputs
        mean = config.input_mean or [0.0] * inputs
        std = config.input_std or [1.0] * inputs
        if len(mean) != inputs or len(std) != inputs:
            raise HeuresisError(f"the model's normalisation has {len(mean)} channels, its "
                                f"inputs {inputs}")
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32))
        self.embed = nn.Linear(inputs, config.hidden)
        self.blocks = nn.ModuleList(_AxialBlock(config.hidden, config.heads, config.feedforward,
                                                config.dropout) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.hidden)
        self.head = nn.Linear(config.hidden, 1)

    def forward(self, cells: torch.Tensor) -> torch.Tensor:
        """(m, d, d, C) raw cell inputs → (m, d, d) symmetric logits."""
        x = ((cells - self.input_mean) / self.input_std).clamp(-INPUT_CLIP, INPUT_CLIP)
        x = self.embed(x)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x)).squeeze(-1)
        return 0.5 * (logits + logits.transpose(1, 2))

    @torch.no_grad()
    def probabilities(self, pairs: np.ndarray, nodes: np.ndarray) -> np.ndarray:
        """P(adjacent) for every pair of one instance ((d, d, P), (d, N)) → (d, d), or of a
        batch ((m, d, d, P), (m, d, N)) → (m, d, d); the diagonal is 0."""
        single = np.asarray(pairs).ndim == 3
        self.eval()
        logits = self(torch.from_numpy(model_inputs(pairs, nodes)))
        q = torch.sigmoid(logits).double().numpy()
        d = q.shape[-1]
        q[:, np.arange(d), np.arange(d)] = 0.0
        return q[0] if single else q


def fit_normalisation(cells: np.ndarray) -> tuple[list[float], list[float]]:
    """Per-channel mean and standard deviation of raw cell inputs (off-diagonal cells)."""
    m, d = cells.shape[:2]
    off = ~np.eye(d, dtype=bool)
    flat = cells[:, off, :].reshape(-1, cells.shape[-1]).astype(np.float64)
    mean = flat.mean(axis=0)
    std = flat.std(axis=0)
    std[std < 1e-6] = 1.0
    return mean.tolist(), std.tolist()


def write_model_files(model: nn.Module, directory: str | Path,
                      header: dict[str, Any]) -> Path:
    """Write a model as two data-only files into ``directory``: ``model.npz`` (every weight a
    float32 array) and ``model.json`` (``header``'s fields, then the weights' SHA-256, the
    parameter count and whatever follows in ``header``'s ``provenance``). The one file format
    of every amortized model."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    weights = {name: tensor.detach().cpu().numpy().astype(np.float32)
               for name, tensor in model.state_dict().items()}
    buffer = io.BytesIO()
    np.savez(buffer, **weights)
    payload = buffer.getvalue()
    atomic_write_bytes(out / MODEL_WEIGHTS, payload)
    provenance = header.pop("provenance", None) or {}
    record = {**header, "weights_sha256": hashlib.sha256(payload).hexdigest(),
              "parameters": int(sum(w.size for w in weights.values())),
              "provenance": provenance}
    atomic_write_bytes(out / MODEL_JSON, (json.dumps(record, indent=1) + "\n").encode())
    return out


def read_model_files(directory: str | Path) -> tuple[dict[str, Any], dict[str, torch.Tensor]]:
    """``model.json`` and the weights of :func:`write_model_files`, checked: both readable,
    and the weights' SHA-256 the one ``model.json`` names (read with ``allow_pickle=False``)."""
    where = Path(directory)
    try:
        record = json.loads((where / MODEL_JSON).read_text(encoding="utf-8"))
        payload = (where / MODEL_WEIGHTS).read_bytes()
    except (OSError, ValueError) as exc:
        raise HeuresisError(f"cannot read an amortized model in {where}: {exc}") from None
    if not isinstance(record, dict):
        raise HeuresisError(f"{where / MODEL_JSON}: not a model record")
    if hashlib.sha256(payload).hexdigest() != record.get("weights_sha256"):
        raise HeuresisError(f"{where / MODEL_WEIGHTS}: its hash differs from model.json's "
                            "(a replaced or damaged weights file)")
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        state = {name: torch.from_numpy(archive[name].copy()) for name in archive.files}
    return record, state


def load_state(model: nn.Module, state: dict[str, torch.Tensor], where: str | Path) -> None:
    """Load ``state`` into ``model`` (eval mode) when every weight's name and shape fit."""
    expected = model.state_dict()
    if set(state) != set(expected) or any(state[k].shape != expected[k].shape for k in state):
        raise HeuresisError(f"{where}: its weights do not fit the architecture in model.json")
    model.load_state_dict(state)
    model.eval()


def save_model(model: GridModel, directory: str | Path,
               provenance: dict[str, Any] | None = None) -> Path:
    """Write ``model.json`` and ``model.npz`` (data only) into ``directory``."""
    config = asdict(model.config)
    config["pair_features"] = list(config["pair_features"])
    config["node_features"] = list(config["node_features"])
    return write_model_files(model, directory, {"format": 1, "config": config,
                                                "provenance": provenance})


def load_model(directory: str | Path) -> tuple[GridModel, dict[str, Any]]:
    """Read a saved model (checked: its weights' hash, the current grid version and feature
    lists, every weight's name and shape) → (model in eval mode, its ``model.json``)."""
    where = Path(directory)
    record, state = read_model_files(where)
    fields = dict(record.get("config") or {})
    if fields.get("grid_version") != GRID_EVIDENCE_VERSION or \
            tuple(fields.get("pair_features", ())) != GRID_PAIR_FEATURE_NAMES or \
            tuple(fields.get("node_features", ())) != GRID_NODE_FEATURE_NAMES:
        raise HeuresisError(f"{where}: a model of another evidence-grid version or feature "
                            f"list (model: {fields.get('grid_version')}, this package: "
                            f"{GRID_EVIDENCE_VERSION}); retrain it")
    fields["pair_features"] = tuple(fields["pair_features"])
    fields["node_features"] = tuple(fields["node_features"])
    model = GridModel(ModelConfig(**fields))
    load_state(model, state, where)
    return model, record


def parameter_count(model: nn.Module) -> int:
    return int(sum(p.numel() for p in model.parameters()))


def permuted(array: np.ndarray, order: Sequence[int], axes: Sequence[int]) -> np.ndarray:
    """``array`` with its variable axes ``axes`` reordered by ``order`` (for tests)."""
    out = np.asarray(array)
    for axis in axes:
        out = np.take(out, list(order), axis=axis)
    return out

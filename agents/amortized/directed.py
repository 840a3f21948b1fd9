"""The directed models: a network that reads an instance's rows and its pair statistics and
gives, for every pair, P(no edge), P(i → j) and P(j → i); and the AVICI anchor, a torch port
of Lorch et al.'s model trained on the same instances as a peer.

**DirectedModel** (the second amortized model):

1. *Rows* (optional, ``row_layers`` > 0): r rows subsampled from the table, each value given
   as (standardized value, normal score within the subsample), embedded, then ``row_layers``
   pairs of attention layers alternating over the variables of a row and over the rows of a
   variable (AVICI's encoder), max-pooled over rows → one embedding per variable.
2. *Cells*: cell (i, j) embeds the pair statistics of (i, j), the ordered ones of (j, i), the
   node statistics of i and j, a diagonal flag, and the row embeddings of i and of j.
3. ``layers`` axial blocks over the d × d cells (each cell attends to its row, then its column).
4. *Head*: a directed logit a_ij from cell (i, j) and a none-logit s_ij from the symmetric sum
   of cells (i, j) and (j, i); for each unordered pair {i, j} the softmax of (s_ij, a_ij, a_ji)
   gives (none, i → j, j → i). Permuting the variables permutes every output the same way (a
   test checks it); one set of weights serves every d.

**AviciModel** (the anchor, ``avici`` 1.0.7's ``BaseModel`` in torch): the rows only, through
``2 × layers`` pre-norm attention blocks alternating over variables and rows (separate layer
norms for query, key and value; ReLU feed-forward, widening 4), a final layer norm, max-pool
over rows, two linear maps u, v of each variable's embedding (layer-normed, then L2-normed),
logit_ij = exp(τ) ⟨u_i, v_j⟩ + b with a learned temperature τ (init 0) and bias b (init −3):
an independent Bernoulli per ordered pair. Its loss is AVICI's: binary cross-entropy over the
off-diagonal cells plus a dual-ascent weight times the spectral acyclicity penalty
(:func:`spectral_acyclicity`).

Both save as ``model.json`` (architecture, configuration, input normalisation, provenance,
the weights' SHA-256) and ``model.npz`` (float32 weights, read with ``allow_pickle=False``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from agents.amortized.model import (
    MODEL_JSON,
    _AxialBlock,
    load_state,
    model_inputs,
    read_model_files,
    write_model_files,
)
from heuresis_env.errors import HeuresisError
from heuresis_env.evidence import (
    LOCAL_SCREEN_FEATURES,
    LOCAL_SCREEN_ORDERED,
    LOCAL_SCREEN_VERSION,
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURES,
    STATISTICS_VERSION,
)

__all__ = ["AviciConfig", "AviciModel", "DirectedConfig", "DirectedModel", "load_directed",
           "row_inputs", "save_directed", "spectral_acyclicity"]

#: the ordered pair statistics, read for (j, i) as well
ORDERED = tuple(k for k, f in enumerate(STATISTICS_PAIR_FEATURES) if not f.symmetric)
INPUT_CLIP = 8.0


def row_inputs(rows: np.ndarray) -> np.ndarray:
    """(m, r, d) rows → (m, r, d, 2): each column standardized within the subsample, and its
    normal scores (rank-based) within the subsample."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    rows = np.asarray(rows, dtype=np.float64)
    if rows.ndim == 2:
        rows = rows[None]
    centred = rows - rows.mean(axis=1, keepdims=True)
    spread = centred.std(axis=1, keepdims=True)
    spread[spread == 0] = 1.0
    standardized = np.clip(centred / spread, -INPUT_CLIP, INPUT_CLIP)
    ranks = rankdata(rows, axis=1)
    scores = ndtri(ranks / (rows.shape[1] + 1))
    return np.stack([standardized, scores], axis=-1).astype(np.float32)


#: with the local screen appended to the pair statistics: its ordered channels too
ORDERED_LOCAL = ORDERED + tuple(len(STATISTICS_PAIR_FEATURES) + LOCAL_SCREEN_FEATURES.index(f)
                                for f in LOCAL_SCREEN_ORDERED)


def cell_inputs(pairs: np.ndarray, nodes: np.ndarray, local: bool = False) -> np.ndarray:
    """(m, d, d, P) pair and (m, d, N) node statistics → (m, d, d, P + |ordered| + 2N + 1), laid
    out as the first model's cells are (:func:`agents.amortized.model.model_inputs`); with
    ``local`` the pairs carry the local screen's channels after the statistics'."""
    expected = len(STATISTICS_PAIR_FEATURES) + (len(LOCAL_SCREEN_FEATURES) if local else 0)
    if np.shape(pairs)[-1] != expected:
        raise HeuresisError(f"pair inputs of {np.shape(pairs)[-1]} channels, the model reads "
                            f"{expected}")
    return model_inputs(pairs, nodes, ORDERED_LOCAL if local else ORDERED)


def cell_channels(local: bool = False) -> int:
    pairs = len(STATISTICS_PAIR_FEATURE_NAMES) + (len(LOCAL_SCREEN_FEATURES) if local else 0)
    ordered = ORDERED_LOCAL if local else ORDERED
    return pairs + len(ordered) + 2 * len(STATISTICS_NODE_FEATURE_NAMES) + 1


# ---- the row encoder (AVICI's alternating attention) ----------------------------------------

class _AlternatingBlock(nn.Module):
    """One pre-norm attention block over axis −2 of (…, L, dim) tokens, with AVICI's separate
    layer norms for query, key and value, then a ReLU feed-forward layer."""

    def __init__(self, dim: int, heads: int, widening: int, dropout: float):
        super().__init__()
        self.norm_q, self.norm_k, self.norm_v = (nn.LayerNorm(dim) for _ in range(3))
        self.attention = nn.MultiheadAttention(dim, heads, dropout=dropout, batch_first=True)
        self.norm_ff = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, widening * dim), nn.ReLU(),
                                nn.Linear(widening * dim, dim))
        self.dropout = nn.Dropout(dropout)

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        shape = z.shape
        flat = z.reshape(-1, shape[-2], shape[-1])
        out, _ = self.attention(self.norm_q(flat), self.norm_k(flat), self.norm_v(flat),
                                need_weights=False)
        flat = flat + self.dropout(out)
        flat = flat + self.dropout(self.ff(self.norm_ff(flat)))
        return flat.reshape(shape)


class RowEncoder(nn.Module):
    """(m, r, d, 2) row inputs → (m, d, dim) variable embeddings: ``2 × pairs`` alternating
    blocks (over the d variables of each row, then over the r rows of each variable), a final
    layer norm, max over rows."""

    def __init__(self, dim: int, pairs: int, heads: int, widening: int = 4,
                 dropout: float = 0.0):
        super().__init__()
        self.embed = nn.Linear(2, dim)
        self.blocks = nn.ModuleList(_AlternatingBlock(dim, heads, widening, dropout)
                                    for _ in range(2 * pairs))
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        z = self.embed(x)  # (m, r, d, dim): first attention over d (axis −2)
        for block in self.blocks:
            z = block(z).transpose(1, 2)  # alternate: next block attends over the other axis
        # after an even number of blocks the layout is (m, r, d, dim) again
        return self.norm(z).amax(dim=1)


# ---- the directed model ---------------------------------------------------------------------

@dataclass
class DirectedConfig:
    hidden: int = 64
    layers: int = 2
    heads: int = 4
    feedforward: int = 128
    row_layers: int = 2
    row_hidden: int = 32
    rows: int = 200
    statistics: bool = True
    #: the local screen's version when the cells carry it (0: they do not)
    local_screen: int = 0
    dropout: float = 0.0
    statistics_version: int = STATISTICS_VERSION
    pair_features: tuple[str, ...] = STATISTICS_PAIR_FEATURE_NAMES
    node_features: tuple[str, ...] = STATISTICS_NODE_FEATURE_NAMES
    input_mean: list[float] = field(default_factory=list)
    input_std: list[float] = field(default_factory=list)


class DirectedModel(nn.Module):
    """Rows and pair statistics → (none, i → j, j → i) per pair (the module docstring)."""

    architecture = "directed"

    def __init__(self, config: DirectedConfig):
        super().__init__()
        self.config = config
        if config.local_screen not in (0, LOCAL_SCREEN_VERSION):
            raise HeuresisError(f"a model of local screen version {config.local_screen}; this "
                                f"package computes version {LOCAL_SCREEN_VERSION}")
        channels = cell_channels(self.reads_screen)
        mean = config.input_mean or [0.0] * channels
        std = config.input_std or [1.0] * channels
        if len(mean) != channels or len(std) != channels:
            raise HeuresisError(f"the model's normalisation has {len(mean)} channels, its "
                                f"inputs {channels}")
        self.register_buffer("input_mean", torch.tensor(mean, dtype=torch.float32))
        self.register_buffer("input_std", torch.tensor(std, dtype=torch.float32))
        hidden = config.hidden
        self.embed = nn.Linear(channels if config.statistics else 1, hidden)
        if config.row_layers > 0:
            self.rows = RowEncoder(config.row_hidden, config.row_layers, max(config.heads // 2, 1),
                                   dropout=config.dropout)
            self.row_i = nn.Linear(config.row_hidden, hidden)
            self.row_j = nn.Linear(config.row_hidden, hidden, bias=False)
            self.row_ij = nn.Linear(config.row_hidden, hidden, bias=False)
        self.blocks = nn.ModuleList(_AxialBlock(hidden, config.heads, config.feedforward,
                                                config.dropout) for _ in range(config.layers))
        self.norm = nn.LayerNorm(hidden)
        self.directed = nn.Linear(hidden, 1)
        self.none = nn.Sequential(nn.LayerNorm(hidden), nn.Linear(hidden, hidden), nn.GELU(),
                                  nn.Linear(hidden, 1))

    @property
    def reads_screen(self) -> bool:
        """Its cells carry the local screen (:mod:`heuresis_env.evidence.local_screen`)."""
        return bool(self.config.local_screen) and self.config.statistics

    def forward(self, cells: torch.Tensor, rows: torch.Tensor | None) -> torch.Tensor:
        """(m, d, d, C) raw cell inputs and (m, r, d, 2) row inputs → (m, d, d, 2) logits:
        ``[..., 0]`` the none-logit s_ij (symmetric), ``[..., 1]`` the directed logit a_ij."""
        if self.config.statistics:
            x = ((cells - self.input_mean) / self.input_std).clamp(-INPUT_CLIP, INPUT_CLIP)
        else:  # rows only: the diagonal flag tells a variable's own cell
            x = cells[..., -1:]
        x = self.embed(x)
        if self.config.row_layers > 0:
            if rows is None:
                raise HeuresisError("this model reads rows: pass them")
            z = self.rows(rows)  # (m, d, row_hidden)
            x = x + self.row_i(z)[:, :, None, :] + self.row_j(z)[:, None, :, :] \
                + self.row_ij(z[:, :, None, :] * z[:, None, :, :])
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        directed = self.directed(x).squeeze(-1)
        none = self.none(x + x.transpose(1, 2)).squeeze(-1)
        return torch.stack([none, directed], dim=-1)

    @staticmethod
    def pair_log_probabilities(logits: torch.Tensor) -> torch.Tensor:
        """(m, d, d, 2) logits → (m, d, d, 3) log-probabilities of (none, i → j, j → i)."""
        none = logits[..., 0]
        forward = logits[..., 1]
        backward = forward.transpose(1, 2)
        return torch.log_softmax(torch.stack([none, forward, backward], dim=-1), dim=-1)

    def loss(self, logits: torch.Tensor, dag: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of the three classes over the unordered pairs, mean per instance."""
        log_p = self.pair_log_probabilities(logits)
        d = dag.shape[-1]
        upper = torch.triu(torch.ones(d, d, dtype=torch.bool), diagonal=1)
        label = torch.where(dag > 0, 1, torch.where(dag.transpose(1, 2) > 0, 2, 0))
        picked = log_p.gather(-1, label.long().unsqueeze(-1)).squeeze(-1)
        return -(picked[:, upper]).mean()

    def data_loss(self, logits: torch.Tensor, dag: torch.Tensor) -> torch.Tensor:
        """The loss without any penalty (here the loss itself): comparable across steps."""
        return self.loss(logits, dag)

    @torch.no_grad()
    def directed_probabilities(self, cells: torch.Tensor, rows: torch.Tensor | None
                               ) -> np.ndarray:
        """(m, d, d) P(i → j) (the diagonal 0; P(i → j) + P(j → i) + P(none) = 1)."""
        p = self.pair_log_probabilities(self(cells, rows)).exp()[..., 1].double().numpy()
        d = p.shape[-1]
        p[:, np.arange(d), np.arange(d)] = 0.0
        return p


# ---- the AVICI anchor -----------------------------------------------------------------------

@dataclass
class AviciConfig:
    dim: int = 64
    layers: int = 4  # pairs of blocks (AVICI's default is 8 pairs of dim 128)
    heads: int = 4
    widening: int = 4
    dropout: float = 0.0
    rows: int = 200
    logit_bias_init: float = -3.0
    cosine_temp_init: float = 0.0
    acyclicity: bool = True
    dual_lr: float = 1e-3
    dual_every: int = 50
    dual_burnin: int = 500


class AviciModel(nn.Module):
    """AVICI's BaseModel (the module docstring): rows → a logit per ordered pair."""

    architecture = "avici"

    def __init__(self, config: AviciConfig):
        super().__init__()
        self.config = config
        self.rows = RowEncoder(config.dim, config.layers, config.heads, config.widening,
                               config.dropout)
        self.u = nn.Sequential(nn.LayerNorm(config.dim), nn.Linear(config.dim, config.dim))
        self.v = nn.Sequential(nn.LayerNorm(config.dim), nn.Linear(config.dim, config.dim))
        self.temperature = nn.Parameter(torch.tensor(config.cosine_temp_init))
        self.bias = nn.Parameter(torch.tensor(config.logit_bias_init))
        self.register_buffer("dual", torch.tensor(0.0))

    def forward(self, cells: torch.Tensor | None, rows: torch.Tensor) -> torch.Tensor:
        z = self.rows(rows)
        u = nn.functional.normalize(self.u(z), dim=-1)
        v = nn.functional.normalize(self.v(z), dim=-1)
        return torch.einsum("mid,mjd->mij", u, v) * self.temperature.exp() + self.bias

    def data_loss(self, logits: torch.Tensor, dag: torch.Tensor) -> torch.Tensor:
        """The binary cross-entropy of the off-diagonal pairs, without the acyclicity term
        (whose weight, the dual, grows during training): comparable across steps."""
        d = dag.shape[-1]
        off = ~torch.eye(d, dtype=torch.bool)
        return nn.functional.binary_cross_entropy_with_logits(logits[:, off],
                                                              dag[:, off].float())

    def loss(self, logits: torch.Tensor, dag: torch.Tensor) -> torch.Tensor:
        bce = self.data_loss(logits, dag)
        if not self.config.acyclicity:
            return bce
        off = ~torch.eye(dag.shape[-1], dtype=torch.bool)
        log_p = nn.functional.logsigmoid(logits).masked_fill(~off, -math.inf)
        self.last_penalty = spectral_acyclicity(log_p).mean()
        return bce + self.dual * self.last_penalty

    def dual_step(self, step: int) -> None:
        """AVICI's dual ascent: every ``dual_every`` steps after the burn-in, the penalty's
        weight grows by ``dual_lr`` × the penalty (clipped at 0)."""
        config = self.config
        penalty = getattr(self, "last_penalty", None)
        if (config.acyclicity and penalty is not None and step > config.dual_burnin
                and step % config.dual_every == 0):
            self.dual += config.dual_lr * max(float(penalty.detach()), 0.0)

    @torch.no_grad()
    def directed_probabilities(self, cells: torch.Tensor | None, rows: torch.Tensor
                               ) -> np.ndarray:
        p = torch.sigmoid(self(cells, rows)).double().numpy()
        d = p.shape[-1]
        p[:, np.arange(d), np.arange(d)] = 0.0
        return p


def spectral_acyclicity(log_matrix: torch.Tensor, iterations: int = 10) -> torch.Tensor:
    """The spectral radius of exp(log_matrix) by power iteration (AVICI's NO-BEARS penalty,
    Lee et al. 2019), per batch element; 0 exactly for the adjacency of a DAG. The iteration
    vectors carry no gradient, as in AVICI."""
    matrix = log_matrix.exp()
    generator = torch.Generator().manual_seed(0)
    u = torch.randn(matrix.shape[:-1], generator=generator).abs() + 1e-3
    v = torch.randn(matrix.shape[:-1], generator=generator).abs() + 1e-3
    with torch.no_grad():
        for _ in range(iterations):
            u = torch.einsum("mi,mij->mj", u, matrix)
            v = torch.einsum("mij,mj->mi", matrix, v)
            u = u / u.norm(dim=-1, keepdim=True).clamp_min(1e-30)
            v = v / v.norm(dim=-1, keepdim=True).clamp_min(1e-30)
    numerator = torch.einsum("mj,mj->m", u, torch.einsum("mij,mj->mi", matrix, v))
    return numerator / torch.einsum("mj,mj->m", u, v).clamp_min(1e-30)


# ---- files ------------------------------------------------------------------------------------

ARCHITECTURES: dict[str, tuple[type, type]] = {"directed": (DirectedModel, DirectedConfig),
                                               "avici": (AviciModel, AviciConfig)}


def save_directed(model: DirectedModel | AviciModel, directory: str | Path,
                  provenance: dict[str, Any] | None = None) -> Path:
    """Write ``model.json`` and ``model.npz`` (data only) into ``directory``."""
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(model.config).items()}
    return write_model_files(model, directory, {"format": 2, "architecture": model.architecture,
                                                "config": config, "provenance": provenance})


def load_directed(directory: str | Path) -> tuple[DirectedModel | AviciModel, dict[str, Any]]:
    """Read a saved directed or AVICI model, checked: its weights' hash, the statistics
    version and feature lists it was trained on, every weight's name and shape."""
    where = Path(directory)
    record, state = read_model_files(where)
    if record.get("architecture") not in ARCHITECTURES:
        raise HeuresisError(f"{where / MODEL_JSON}: not a directed or AVICI model "
                            f"(architecture {record.get('architecture')!r})")
    cls, config_cls = ARCHITECTURES[record["architecture"]]
    fields = dict(record.get("config") or {})
    if fields.get("local_screen", 0) not in (0, LOCAL_SCREEN_VERSION):
        raise HeuresisError(f"{where}: a model of local screen version "
                            f"{fields.get('local_screen')} (this package: "
                            f"{LOCAL_SCREEN_VERSION}); retrain it")
    if record["architecture"] == "directed" and (
            fields.get("statistics_version") != STATISTICS_VERSION
            or tuple(fields.get("pair_features", ())) != STATISTICS_PAIR_FEATURE_NAMES
            or tuple(fields.get("node_features", ())) != STATISTICS_NODE_FEATURE_NAMES):
        raise HeuresisError(f"{where}: a model of another pair-statistics version or feature "
                            f"list (model: {fields.get('statistics_version')}, this package: "
                            f"{STATISTICS_VERSION}); retrain it")
    known = set(config_cls.__dataclass_fields__)
    try:
        config = config_cls(**{k: tuple(v) if k.endswith("_features") else v
                               for k, v in fields.items() if k in known})
        model = cls(config)
    except (TypeError, ValueError) as exc:
        raise HeuresisError(f"{where / MODEL_JSON}: a configuration this code cannot build: "
                            f"{exc}") from None
    load_state(model, state, where)
    return model, record

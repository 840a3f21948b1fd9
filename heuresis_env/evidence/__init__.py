"""Evidence: expensive per-instance results computed from the data alone, cached on disk.

The second stage of the data flow (instance → **evidence** → environment → policy → run →
report): the guided start (PC-KCI's output and deletion log, :mod:`.start`), the RL view's
pair features (:mod:`.pairs`, whole or pair by pair on demand), features declared once in
blocks that compute them, the table's channel order and text derived (:mod:`.features`), the evidence grid (:mod:`.grid`: cheap features of every pair
and variable, for models trained on thousands of instances), the pair statistics (:mod:`.statistics`:
the grid's features that need no PC-KCI, at any size, for models trained on a stream), the repair table (:mod:`.repair`: per-pair features that can
tell PC-KCI's wrong decisions from its right ones), bootstrap edge frequencies
(:mod:`.bootstrap`), all stored once per instance by :mod:`.store` and served lazily by
:class:`EvidenceProvider`.
"""

from heuresis_env.evidence.bootstrap import bootstrap_edge_frequencies
from heuresis_env.evidence.features import FeatureBlock, GridFeature, TextColumn
from heuresis_env.evidence.grid import (
    GRID_ALGORITHMS,
    GRID_BLOCKS,
    GRID_EVIDENCE_VERSION,
    GRID_NODE_FEATURE_NAMES,
    GRID_NODE_FEATURES,
    GRID_PAIR_FEATURE_NAMES,
    GRID_PAIR_FEATURES,
    EvidenceGrid,
    compute_evidence_grid,
    evidence_grid,
)
from heuresis_env.evidence.local_screen import (
    LOCAL_SCREEN_FEATURES,
    LOCAL_SCREEN_ORDERED,
    LOCAL_SCREEN_ROWS,
    LOCAL_SCREEN_VERSION,
    local_screen,
)
from heuresis_env.evidence.pairs import (
    CHEAP_FEATURES,
    DCOR_MAX_ROWS,
    DEFERRED_FEATURES,
    FEATURE_NAMES,
    STABILITY_BOOTSTRAPS,
    STABILITY_MAX_D,
    PairEvidence,
    PairTable,
    compute_pair_evidence,
    pair_evidence,
    pair_table,
    unordered_pairs,
)
from heuresis_env.evidence.provider import EvidenceProvider
from heuresis_env.evidence.repair import (
    DEFAULT_ALGORITHMS,
    REFERENCE_ALGORITHMS,
    REPAIR_BLOCKS,
    REPAIR_EVIDENCE_VERSION,
    REPAIR_FEATURE_NAMES,
    REPAIR_FEATURES,
    RepairEvidence,
    RepairFeature,
    compute_repair_evidence,
    repair_evidence,
)
from heuresis_env.evidence.start import (
    ALPHA,
    GuidedStart,
    compute_guided_start,
    guided_start,
    start_graph_for_edits,
)
from heuresis_env.evidence.statistics import (
    STATISTICS_BLOCKS,
    STATISTICS_NODE_FEATURE_NAMES,
    STATISTICS_NODE_FEATURES,
    STATISTICS_PAIR_FEATURE_NAMES,
    STATISTICS_PAIR_FEATURES,
    STATISTICS_VERSION,
    PairStatistics,
    StatisticsBlock,
    compute_pair_statistics,
    fisherz_screen,
    pair_statistics,
)
from heuresis_env.evidence.store import (
    EVIDENCE_VERSION,
    cached_evidence,
    clear_memory,
    stored_evidence,
)

__all__ = [
    "FeatureBlock", "TextColumn", "GRID_BLOCKS", "REPAIR_BLOCKS",
    "GRID_ALGORITHMS", "GRID_EVIDENCE_VERSION", "GRID_NODE_FEATURES", "GRID_NODE_FEATURE_NAMES",
    "GRID_PAIR_FEATURES", "GRID_PAIR_FEATURE_NAMES", "EvidenceGrid", "GridFeature",
    "compute_evidence_grid", "evidence_grid",
    "ALPHA", "CHEAP_FEATURES", "DCOR_MAX_ROWS", "DEFERRED_FEATURES", "DEFAULT_ALGORITHMS", "EVIDENCE_VERSION", "FEATURE_NAMES", "REFERENCE_ALGORITHMS",
    "REPAIR_EVIDENCE_VERSION", "REPAIR_FEATURES", "REPAIR_FEATURE_NAMES",
    "STABILITY_BOOTSTRAPS", "STABILITY_MAX_D", "EvidenceProvider", "GuidedStart", "PairEvidence", "PairTable",
    "RepairEvidence", "RepairFeature", "bootstrap_edge_frequencies", "cached_evidence",
    "clear_memory", "compute_guided_start", "compute_pair_evidence",
    "compute_repair_evidence", "guided_start", "pair_evidence", "pair_table", "repair_evidence",
    "start_graph_for_edits", "stored_evidence", "unordered_pairs",
    "STATISTICS_BLOCKS", "STATISTICS_NODE_FEATURES", "STATISTICS_NODE_FEATURE_NAMES",
    "STATISTICS_PAIR_FEATURES", "STATISTICS_PAIR_FEATURE_NAMES", "STATISTICS_VERSION",
    "PairStatistics", "StatisticsBlock", "compute_pair_statistics", "fisherz_screen",
    "pair_statistics",
    "LOCAL_SCREEN_FEATURES", "LOCAL_SCREEN_ORDERED", "LOCAL_SCREEN_ROWS", "LOCAL_SCREEN_VERSION",
    "local_screen",
]

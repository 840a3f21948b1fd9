"""One instance's evidence behind one object, each bundle computed or loaded on first use."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from heuresis_env.evidence.grid import EvidenceGrid, evidence_grid
from heuresis_env.evidence.pairs import PairEvidence, PairTable, pair_evidence, pair_table
from heuresis_env.evidence.repair import RepairEvidence, repair_evidence
from heuresis_env.evidence.start import GuidedStart, guided_start
from heuresis_env.evidence.statistics import PairStatistics, pair_statistics


class EvidenceProvider:
    """Lazy access to one instance's evidence (computed or loaded on first use)."""

    def __init__(self, data: np.ndarray, names: Sequence[str], sha256: str):
        self._data = data
        self.names = tuple(names)
        self.sha256 = sha256

    def guided_start(self) -> GuidedStart:
        return guided_start(self._data, self.names, self.sha256)

    def pair_evidence(self) -> PairEvidence:
        return pair_evidence(self._data, self.names, self.sha256)

    def pair_table(self) -> PairTable:
        """The pair evidence computed on demand (:class:`PairTable`, one per instance in this
        process): the lazy RL view's source."""
        return pair_table(self._data, self.names, self.sha256)

    def evidence_grid(self) -> EvidenceGrid:
        return evidence_grid(self._data, self.names, self.sha256)

    def pair_statistics(self) -> PairStatistics:
        """The pair statistics without the searches (what the directed models read)."""
        return pair_statistics(self._data, self.names, self.sha256, searches=False)

    def repair_evidence(self) -> RepairEvidence:
        return repair_evidence(self._data, self.names, self.sha256)

    def warm(self, guided: bool = True, pairs: bool = True, repair: bool = True) -> None:
        """Compute (or load) the bundles now, e.g. before timing an RL run."""
        if guided:
            self.guided_start()
        if pairs:
            self.pair_evidence()
        if repair:
            self.repair_evidence()

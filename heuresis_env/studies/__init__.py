"""Studies: science recomputed from finished runs, with the hidden record.

The reports call these; they read run directories and traces, regenerate the instances the
episodes ran on (the hidden record is read here, after the episodes, never during them) and
recompute what the paper analyses: the signals that tell PC's wrong deletions from right ones
(Appendix F, :mod:`.deletion_signals`), where a policy's added edges came from (Table 4,
:mod:`.provenance`), and the repair table's per-pair records with their labels, costs and AUCs
(:mod:`.repair_signals`, issue 12; the records ``learned-repair`` trains on).
"""

from heuresis_env.studies.repair_signals import STUDY_FEATURES, PairRecord, study

__all__ = ["STUDY_FEATURES", "PairRecord", "study"]

"""Discovery: conditional-independence tests, PC with its deletion log, the reference algorithms.

Everything here maps data to evidence or graphs and never reads a hidden record (the oracle
CI test ``dsep`` takes the true graph explicitly). :mod:`.citests` is the one CI-test
interface that PC, the tools and the routers share; :mod:`.pc` logs every deletion;
:mod:`.algorithms` is the registry of reference algorithms (PC, GES, FCI, DirectLiNGAM, ANM,
NOTEARS, GRaSP, BOSS) behind :func:`run_algorithm`; :mod:`.orientation` holds the pairwise
orientation probes and :mod:`.graph_merge` the k-vote merge of graphs.
"""

from heuresis_env.discovery.algorithms import (
    AlgorithmResult,
    AlgorithmSpec,
    available_algorithms,
    cached_run_algorithm,
    get_algorithm,
    register_algorithm,
    run_algorithm,
)
from heuresis_env.discovery.citests import (
    CI_TESTS,
    CIResult,
    CITest,
    available_ci_tests,
    make_ci_test,
    register_ci_test,
)
from heuresis_env.discovery.citests.dcor import distance_correlation
from heuresis_env.discovery.graph_merge import best_k, merge_k, vote_counts
from heuresis_env.discovery.orientation import orientation_probe
from heuresis_env.discovery.pc import (
    Deletion,
    PCResult,
    label_deletions,
    pc,
    validate_names,
    wrong_deletions,
)

__all__ = [
    "CI_TESTS", "AlgorithmResult", "AlgorithmSpec", "CIResult", "CITest", "Deletion",
    "PCResult", "available_algorithms", "available_ci_tests", "best_k", "cached_run_algorithm",
    "distance_correlation", "get_algorithm", "label_deletions", "make_ci_test", "merge_k",
    "orientation_probe", "pc", "register_algorithm", "register_ci_test", "run_algorithm",
    "validate_names", "vote_counts", "wrong_deletions",
]

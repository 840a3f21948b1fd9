"""Discovery: conditional-independence tests, PC with its deletion log, the reference algorithms.

Everything here maps data to evidence or graphs and never reads a hidden record (the oracle
CI test ``dsep`` takes the true graph explicitly). :mod:`.citests` is the one CI-test
interface that PC, the tools and the routers share; :mod:`.pc` logs every deletion
and :mod:`.pc_orientation` holds its orientation rules;
:mod:`.algorithms` is the registry of reference algorithms (PC, GES, FCI, DirectLiNGAM, ANM,
NOTEARS, GRaSP, BOSS) behind :func:`run_algorithm`, their runners one module a family
(:mod:`.constraint_based`, :mod:`.score_based`, :mod:`.functional_models`,
:mod:`.continuous_optimization`) with causal-learn's interop in :mod:`.causallearn_bridge`;
:mod:`.orientation` holds the pairwise orientation probes and :mod:`.graph_merge` the k-vote
merge of graphs.
"""

from heuresis_env.discovery.algorithms import (
    ALGORITHM_CACHE_VERSION,
    AlgorithmResult,
    AlgorithmSpec,
    available_algorithms,
    cached_run_algorithm,
    get_algorithm,
    register_algorithm,
    run_algorithm,
)
from heuresis_env.discovery.causallearn_bridge import (
    CAUSAL_LEARN_ADAPTER,
    graph_from_causallearn,
    register_causallearn_adapter,
)
from heuresis_env.discovery.citests import (
    CI_TESTS,
    CIResult,
    CITest,
    available_ci_tests,
    make_ci_test,
    register_ci_test,
)
from heuresis_env.discovery.citests.dcor import distance_correlation, distance_correlations
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
from heuresis_env.discovery.pc_orientation import (
    DEFAULT_ORIENTATION,
    ORIENTATION_RULES,
    TripleDecision,
)

__all__ = [
    "ALGORITHM_CACHE_VERSION", "CAUSAL_LEARN_ADAPTER", "CI_TESTS", "DEFAULT_ORIENTATION", "ORIENTATION_RULES",
    "AlgorithmResult", "AlgorithmSpec", "CIResult", "CITest", "Deletion", "PCResult",
    "TripleDecision", "available_algorithms", "available_ci_tests", "best_k",
    "cached_run_algorithm", "distance_correlation", "distance_correlations", "get_algorithm", "graph_from_causallearn",
    "label_deletions", "make_ci_test", "merge_k", "orientation_probe", "pc",
    "register_algorithm", "register_causallearn_adapter", "register_ci_test", "run_algorithm",
    "validate_names", "vote_counts", "wrong_deletions",
]

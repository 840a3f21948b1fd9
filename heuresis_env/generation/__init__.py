"""Generation: mechanism families, structural causal models and seeded, portable instances.

The first stage of the data flow (**instance** → evidence → environment → policy → run →
report). A family (:mod:`.families`) is a table of mechanism kinds with parameter ranges; one
sampler draws an :class:`SCM` from it (:mod:`.scm`: a DAG of a graph model, :mod:`.graph_models`,
and a mechanism kind per node, :mod:`.mechanisms`; arithmetic in :mod:`.portable`); an
instance (:mod:`.instances`) is the standardized, permuted data of one SCM with its hidden
record (:mod:`.record`), fully determined by its :class:`InstanceKey`. :mod:`.structures` holds known DAGs (the
BNLearn networks, registered as ``bnlearn-*`` families); :mod:`.datasets` turns data tables
(the Sachs data, a user's CSV) into instances with a graph but no SCM. :mod:`.priors`
holds the train split's options (d, n, graph model, degree, families) as seeded priors. :mod:`.sortability`
measures the shortcuts a generator can leave (varsortability, R²-sortability).
"""

from heuresis_env.generation.datasets import (
    DatasetError,
    dataset_instance,
    load_dataset,
    read_graph,
    read_table,
    register_dataset,
    register_instance,
    tuebingen_pairs,
)
from heuresis_env.generation.experiments import (
    draw_experiment,
    experiment_seed,
    make_laboratory,
)
from heuresis_env.generation.families import (
    BENCHMARK_FAMILIES,
    FAMILY_GROUPS,
    STRUCTURE_FAMILIES,
    FamilySpec,
    MechanismEntry,
    available_families,
    expand_families,
    get_family,
    register_family,
    sample_scm,
)
from heuresis_env.generation.graph_models import GRAPH_MODELS, sample_dag
from heuresis_env.generation.instances import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    STREAM_SPLITS,
    TRAIN_SPLIT_SIZE,
    Instance,
    InstanceKey,
    InstanceSource,
    available_sources,
    cached_instance,
    default_count,
    generate_instance,
    generate_split,
    get_source,
    load_instance,
    load_split,
    save_instance,
    save_split,
    split_directory,
    split_size,
)
from heuresis_env.generation.mechanisms import (
    MechanismKind,
    get_mechanism_kind,
    register_mechanism_kind,
)
from heuresis_env.generation.priors import TRAIN_PRIORS, TrainPrior, get_train_prior
from heuresis_env.generation.record import HiddenRecord, NoGroundTruthError, NoSCMError
from heuresis_env.generation.salts import (
    SEALED_SALT_PREFIX,
    TEST_SALT_ENV,
    SaltArgument,
    SealedSalt,
    check_salt,
    new_salt,
    salt_digest,
    sealing_salt,
)
from heuresis_env.generation.scm import SCM, NodeMechanism
from heuresis_env.generation.sortability import r2_sortability, varsortability
from heuresis_env.generation.structures import (
    BNLEARN_LARGE_NETWORKS,
    BNLEARN_NETWORKS,
    BNLEARN_SHELF,
    Structure,
    bnlearn_structure,
)

__all__ = [
    "draw_experiment", "experiment_seed", "make_laboratory",
    "BENCHMARK_FAMILIES", "BNLEARN_LARGE_NETWORKS", "BNLEARN_NETWORKS", "BNLEARN_SHELF",
    "FAMILY_GROUPS", "GENERATOR_VERSION", "GRAPH_MODELS", "SCM", "SEALED_SALT_PREFIX",
    "SaltArgument", "SealedSalt",
    "SPLIT_SIZES", "STREAM_SPLITS", "STRUCTURE_FAMILIES", "TEST_SALT_ENV", "TRAIN_SPLIT_SIZE",
    "DatasetError", "FamilySpec",
    "HiddenRecord", "Instance", "InstanceKey", "InstanceSource", "MechanismEntry",
    "MechanismKind", "NoGroundTruthError", "NoSCMError", "NodeMechanism", "Structure",
    "available_families", "available_sources", "bnlearn_structure", "cached_instance", "check_salt",
    "default_count", "get_source", "new_salt", "salt_digest", "sealing_salt",
    "dataset_instance", "expand_families", "load_dataset", "read_graph", "read_table",
    "register_dataset", "register_instance", "split_size", "generate_instance",
    "generate_split", "get_family", "get_mechanism_kind", "load_instance", "load_split",
    "r2_sortability", "register_family", "register_mechanism_kind",
    "sample_dag", "sample_scm", "save_instance", "save_split", "split_directory",
    "varsortability",
    "tuebingen_pairs", "TRAIN_PRIORS", "TrainPrior", "get_train_prior",
]

"""Generation: mechanism families, structural causal models and seeded, portable instances.

The first stage of the data flow (**instance** → evidence → environment → policy → run →
report). A family (:mod:`.families`) is a table of mechanism kinds with parameter ranges; one
sampler draws an :class:`SCM` from it (:mod:`.scm`, arithmetic in :mod:`.portable`); an
instance (:mod:`.instances`) is the standardized, permuted data of one SCM with its hidden
record, fully determined by its :class:`InstanceKey`. :mod:`.sortability` measures the
shortcuts a generator can leave (varsortability, R²-sortability).
"""

from heuresis_env.generation.families import (
    FamilySpec,
    MechanismEntry,
    available_families,
    get_family,
    register_family,
    sample_scm,
)
from heuresis_env.generation.instances import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    TEST_SALT_ENV,
    HiddenRecord,
    Instance,
    InstanceKey,
    cached_instance,
    generate_instance,
    generate_split,
    load_instance,
    load_split,
    resolve_salt,
    save_instance,
    save_split,
    split_directory,
)
from heuresis_env.generation.scm import (
    GRAPH_MODELS,
    SCM,
    MechanismKind,
    NodeMechanism,
    get_mechanism_kind,
    register_mechanism_kind,
    sample_dag,
)
from heuresis_env.generation.sortability import r2_sortability, varsortability

__all__ = [
    "GENERATOR_VERSION", "GRAPH_MODELS", "SCM", "SPLIT_SIZES", "TEST_SALT_ENV", "FamilySpec",
    "HiddenRecord", "Instance", "InstanceKey", "MechanismEntry", "MechanismKind",
    "NodeMechanism", "available_families", "cached_instance", "generate_instance",
    "generate_split", "get_family", "get_mechanism_kind", "load_instance", "load_split",
    "r2_sortability", "register_family", "register_mechanism_kind", "resolve_salt",
    "sample_dag", "sample_scm", "save_instance", "save_split", "split_directory",
    "varsortability",
]

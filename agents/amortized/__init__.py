"""Amortized causal discovery: one graph-level model trained on thousands of simulated
instances, and the two policies that use it.

The data flow is the benchmark's own: instances of the ``train`` split (a stream disjoint from
dev and from every test salt) → their evidence grids (:mod:`heuresis_env.evidence.grid`,
cheap features of every pair and variable, computed from the data alone) with the true DAG as
labels, kept as data-only shards (:mod:`.dataset`) → an axial-attention network over the pair
grid (:mod:`.model`), trained with binary cross-entropy on adjacency (:mod:`.training`) →
the expected-F1 rule turns its probabilities into a graph, scored offline against PC-KCI,
BCA_φ and the oracle (:mod:`.evaluation`) → two policies (:mod:`.policy`):
``amortized-repair`` (guided: edits PC-KCI's output, as ``learned-repair`` does) and
``amortized`` (unguided: submits the model's graph). ``python -m agents.amortized`` builds
the shards, trains, draws the learning curve and evaluates (see docs/amortized.md).
"""

from agents.amortized.dataset import (
    SHARD_MANIFEST,
    Example,
    ExampleSet,
    build_shards,
    compute_examples,
    examples_of,
    instance_example,
    load_examples,
    shard_name,
)
from agents.amortized.directed import (
    AviciConfig,
    AviciModel,
    DirectedConfig,
    DirectedModel,
    load_directed,
    save_directed,
)
from agents.amortized.evaluation import (
    InstanceScore,
    bca_column,
    cost_table,
    outcome_table,
    score_examples,
    select_edges,
    summarize_scores,
    write_scores,
)
from agents.amortized.inference import Discovery, decode, discover, edge_probabilities
from agents.amortized.model import (
    MODEL_JSON,
    MODEL_WEIGHTS,
    GridModel,
    ModelConfig,
    load_model,
    model_inputs,
    save_model,
)
from agents.amortized.policy import (
    SHIPPED_DIRECTED,
    SHIPPED_MODEL,
    AmortizedPolicy,
    AmortizedRepairPolicy,
    DirectedPolicy,
    DirectedRepairPolicy,
    load_amortized,
    load_amortized_repair,
    load_amortized_repair_v1,
    load_amortized_v1,
    load_directed_policy,
    load_directed_repair_policy,
)
from agents.amortized.training import TrainingResult, TrainingSettings, train_model

__all__ = [
    "AviciConfig", "AviciModel", "DirectedConfig", "DirectedModel", "DirectedPolicy",
    "DirectedRepairPolicy", "Discovery", "SHIPPED_DIRECTED", "decode", "discover",
    "edge_probabilities", "load_amortized_repair_v1", "load_amortized_v1", "load_directed",
    "load_directed_policy", "load_directed_repair_policy", "save_directed",
    "MODEL_JSON", "MODEL_WEIGHTS", "SHARD_MANIFEST", "SHIPPED_MODEL", "AmortizedPolicy",
    "AmortizedRepairPolicy", "Example", "ExampleSet", "GridModel", "InstanceScore",
    "ModelConfig", "TrainingResult", "TrainingSettings", "bca_column", "build_shards", "cost_table", "compute_examples", "examples_of",
    "instance_example", "load_amortized", "load_amortized_repair", "load_examples",
    "load_model", "model_inputs", "outcome_table", "save_model", "score_examples",
    "select_edges", "shard_name", "summarize_scores", "train_model", "write_scores",
]

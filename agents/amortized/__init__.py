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

The names below load on first use (:mod:`agents.faces`): the models need torch, and the
offline evaluation the evaluation stage, which the ``amortized`` policies' entry points and
``heuresis --help`` should not pay for before a model is used.
"""

from typing import TYPE_CHECKING

from agents.faces import lazy_face

if TYPE_CHECKING:  # what type checkers see; at run time each name loads on first use
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

#: public name → the module of this package that defines it
_EXPORTS = {
    "SHARD_MANIFEST": "dataset", "Example": "dataset", "ExampleSet": "dataset",
    "build_shards": "dataset", "compute_examples": "dataset", "examples_of": "dataset",
    "instance_example": "dataset", "load_examples": "dataset", "shard_name": "dataset",
    "AviciConfig": "directed", "AviciModel": "directed", "DirectedConfig": "directed",
    "DirectedModel": "directed", "load_directed": "directed", "save_directed": "directed",
    "InstanceScore": "evaluation", "bca_column": "evaluation", "cost_table": "evaluation",
    "outcome_table": "evaluation", "score_examples": "evaluation", "select_edges": "evaluation",
    "summarize_scores": "evaluation", "write_scores": "evaluation",
    "Discovery": "inference", "decode": "inference", "discover": "inference",
    "edge_probabilities": "inference",
    "MODEL_JSON": "model", "MODEL_WEIGHTS": "model", "GridModel": "model", "ModelConfig": "model",
    "load_model": "model", "model_inputs": "model", "save_model": "model",
    "SHIPPED_DIRECTED": "policy", "SHIPPED_MODEL": "policy", "AmortizedPolicy": "policy",
    "AmortizedRepairPolicy": "policy", "DirectedPolicy": "policy",
    "DirectedRepairPolicy": "policy", "load_amortized": "policy",
    "load_amortized_repair": "policy", "load_amortized_repair_v1": "policy",
    "load_amortized_v1": "policy", "load_directed_policy": "policy",
    "load_directed_repair_policy": "policy",
    "TrainingResult": "training", "TrainingSettings": "training", "train_model": "training",
}

__all__ = [
    "AmortizedPolicy", "AmortizedRepairPolicy", "AviciConfig", "AviciModel", "DirectedConfig",
    "DirectedModel", "DirectedPolicy", "DirectedRepairPolicy", "Discovery", "Example",
    "ExampleSet", "GridModel", "InstanceScore", "MODEL_JSON", "MODEL_WEIGHTS", "ModelConfig",
    "SHARD_MANIFEST", "SHIPPED_DIRECTED", "SHIPPED_MODEL", "TrainingResult", "TrainingSettings",
    "bca_column", "build_shards", "compute_examples", "cost_table", "decode", "discover",
    "edge_probabilities", "examples_of", "instance_example", "load_amortized",
    "load_amortized_repair", "load_amortized_repair_v1", "load_amortized_v1", "load_directed",
    "load_directed_policy", "load_directed_repair_policy", "load_examples", "load_model",
    "model_inputs", "outcome_table", "save_directed", "save_model", "score_examples",
    "select_edges", "shard_name", "summarize_scores", "train_model", "write_scores",
]

__getattr__, __dir__ = lazy_face(__name__, _EXPORTS)

"""The name-only probe's questions: what the model is asked, and the answer it is scored on.

Network items show a model only variable names and ask for the direct causal edges; pair items
show two descriptions and ask which causes which. Each has a control arm:

- ``names``: the seven BNLearn networks with their variable names; the Tübingen pairs with
  their descriptions;
- ``indices``: the same items with every name replaced by an index (V1..Vd, assigned in a
  seeded random order; the two variables of a pair become "variable 1" and "variable 2");
- ``unnamed``: eight Heuresis instances (``lg`` dev 0..7), whose variables never had names.

Every presentation order (the list of variables, the two variables of a pair) is shuffled
with a seed, so that listing order carries no answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from heuresis_env.generation import (
    BNLEARN_NETWORKS,
    InstanceKey,
    bnlearn_structure,
    generate_instance,
    tuebingen_pairs,
)
from heuresis_env.graphs import Graph
from heuresis_env.seeding import text_seed

ARMS = ("names", "indices", "unnamed")
#: the Heuresis instances of the ``unnamed`` arm
UNNAMED_KEYS = tuple(InstanceKey("lg", "dev", i) for i in range(8))

SYSTEM_PROMPT = ("You are an expert in causal reasoning across science, medicine, engineering "
                 "and economics. Answer from what the variables mean; no data is given.")

NETWORK_PROMPT = (
    "A causal system has these {d} variables:\n{variables}\n\n"
    "Which pairs are joined by a direct causal edge, and in which direction? List every "
    "direct edge on its own line as 'CAUSE --> EFFECT', using the variable names exactly as "
    "written above. Reply with the edge list only (or 'no edges').")

PAIR_PROMPT = (
    "Two variables were measured together:\n(A) {a}\n(B) {b}\n\n"
    "Which is the cause and which the effect? Answer with exactly one line: 'A -> B' if A "
    "causes B, or 'B -> A' if B causes A.")


@dataclass(frozen=True)
class NetworkItem:
    """One graph question: the names shown, in the order shown, and the true graph over them."""

    item: str  # e.g. "asia", "lg/dev/3"
    arm: str
    names: tuple[str, ...]
    truth: Graph = field(repr=False)

    @property
    def prompt(self) -> str:
        return NETWORK_PROMPT.format(d=len(self.names),
                                     variables="\n".join(f"- {n}" for n in self.names))


@dataclass(frozen=True)
class PairItem:
    """One direction question: the two descriptions as shown (A first) and the true answer."""

    item: str  # e.g. "pair0001"
    arm: str
    a: str
    b: str
    a_causes_b: bool

    @property
    def prompt(self) -> str:
        return PAIR_PROMPT.format(a=self.a, b=self.b)

    @property
    def answer(self) -> str:
        return "A -> B" if self.a_causes_b else "B -> A"


def _rng(label: str, seed: int) -> np.random.Generator:
    return np.random.default_rng(text_seed(f"heuresis-probe:{seed}:{label}"))


def network_items(seed: int = 0, networks: Sequence[str] = BNLEARN_NETWORKS,
                  unnamed: Sequence[InstanceKey] = UNNAMED_KEYS) -> list[NetworkItem]:
    """The network questions of all three arms."""
    items = []
    for network in networks:
        structure = bnlearn_structure(network)
        truth = structure.graph()
        shown = [structure.names[i] for i in _rng(f"{network}:names", seed).permutation(
            structure.d)]
        items.append(NetworkItem(network, "names", tuple(shown), truth.restricted(shown)))
        # indices: V1..Vd given to the variables in a random order, listed as V1..Vd
        order = _rng(f"{network}:indices", seed).permutation(structure.d)
        index_names = tuple(f"V{k + 1}" for k in range(structure.d))
        originals = [structure.names[i] for i in order]  # V(k+1) stands for originals[k]
        items.append(NetworkItem(network, "indices", index_names,
                                 Graph(index_names, truth.restricted(originals).marks)))
    for key in unnamed:
        instance = generate_instance(key)
        items.append(NetworkItem(f"{key.family}/{key.split}/{key.index}", "unnamed",
                                 tuple(instance.names), instance.record.dag))
    return items


def pair_items(seed: int = 0) -> list[PairItem]:
    """The pair questions of the ``names`` and ``indices`` arms (the two in a random order)."""
    items = []
    for row in tuebingen_pairs():
        cause, effect = ((row["var1"], row["var2"]) if row["truth"] == "->"
                         else (row["var2"], row["var1"]))
        cause_first = bool(_rng(f"{row['pair']}:order", seed).integers(2))
        a, b = (cause, effect) if cause_first else (effect, cause)
        items.append(PairItem(row["pair"], "names", a, b, cause_first))
        cause_first = bool(_rng(f"{row['pair']}:indices", seed).integers(2))
        items.append(PairItem(row["pair"], "indices", "variable 1", "variable 2", cause_first))
    return items

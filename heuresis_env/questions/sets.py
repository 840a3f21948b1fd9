"""Questions and question sets: a fixed, seeded, balanced set per (family, split), the same in
every process.

A :class:`Question` is what is asked — the kind, the instance of the split, the variables
(column positions), values and covariates — and its exact answer from the hidden record
(:mod:`heuresis_env.questions.truth`). The agent sees only the public part
(:class:`PublicQuestion`), rendered with the episode's column names.

A question set cycles through the nine kinds ``per_kind`` times (question ``q`` is of kind
``q mod 9`` in :data:`~heuresis_env.questions.kinds.KINDS` order). For each yes/no kind the
answers are half "yes" and half "no", and every two consecutive rounds hold one of each in a
random order, so any prefix of whole rounds stays balanced. Each question draws an instance
of the split uniformly, then proposes candidates uniformly (pairs, conditioning sets,
subsets) until one has the wanted answer; an instance without one is replaced by the next
draw. The generator is seeded by the set's key and, for a sealed test split, the salt — as
instances are (:func:`heuresis_env.generation.instances.salted_seed_sequence`) — so every
policy and every process answers the same questions. Sets are cached on disk.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from heuresis_env.cache import MemoCache, ResultCache, stable_hash
from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.generation.families import get_family
from heuresis_env.generation.instances import (
    GENERATOR_VERSION,
    SPLIT_SIZES,
    Instance,
    InstanceKey,
    cached_instance,
    salted_seed_sequence,
)
from heuresis_env.generation.salts import SaltArgument, SealedSalt, sealing_salt
from heuresis_env.questions.kinds import KINDS, QuestionKind, get_kind
from heuresis_env.questions.truth import (
    EffectTruth,
    GraphTarget,
    ancestors,
    average_effect,
    has_common_cause,
    is_d_separated,
    is_direct_cause,
    latent_projection,
    unshielded_colliders,
)
from heuresis_env.seeding import instance_seed_sequence

#: bump whenever a change here changes any question set (cached sets are then rebuilt)
QUESTION_SET_VERSION = 1
#: questions of each kind in a split's set (even: yes/no kinds are balanced)
QUESTIONS_PER_KIND = {"dev": 10, "test": 8}
#: the (a, b) of effect questions, E[y | do(x = b)] − E[y | do(x = a)], in sd units
EFFECT_VALUES = ((0.0, 1.0), (-1.0, 1.0), (-1.0, 0.0))
#: effect questions are drawn only where |effect| is at least this (sd units)
MIN_ABS_EFFECT = 0.1
#: conditioning-set sizes of multi-conditional independence questions
MULTI_CONDITIONING_SIZES = (2, 3)
#: subset sizes of partial-graph questions
PARTIAL_GRAPH_SIZES = (3, 4, 5)
#: instance draws per question before giving up, and candidates proposed per instance
MAX_INSTANCE_DRAWS = 400
MAX_PROPOSALS = 200
#: effect candidates tried per instance (each costs a Monte Carlo run)
MAX_EFFECT_PROPOSALS = 3

Truth = bool | GraphTarget | EffectTruth


# ---- questions ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PublicQuestion:
    """What is asked: kind, instance, variables (column positions), values, covariates.

    ``x``/``y`` for pair and effect questions; ``given`` the conditioning set of the
    independence kinds; ``subset`` the variables of a graph question (all of them for the
    whole graph); ``low``/``high`` and ``adjust_for`` (None when not named) for effects;
    ``names_seed`` fixes the decoy names.
    """

    family: str
    split: str
    id: int
    kind: str
    instance_index: int
    d: int
    x: int | None = None
    y: int | None = None
    given: tuple[int, ...] = ()
    subset: tuple[int, ...] = ()
    low: float | None = None
    high: float | None = None
    adjust_for: tuple[int, ...] | None = None
    names_seed: int = 0

    @property
    def info(self) -> QuestionKind:
        return get_kind(self.kind)

    @property
    def answer_type(self) -> str:
        return self.info.answer_type

    def to_dict(self, names: Sequence[str] | None = None) -> dict[str, Any]:
        """JSON form; with ``names`` the variables are given by name as well (``*_name``)."""
        kind = self.info
        out: dict[str, Any] = {
            "id": self.id, "family": self.family, "split": self.split, "kind": self.kind,
            "abbreviation": kind.abbreviation, "level": kind.level,
            "answer_type": kind.answer_type, "instance_index": self.instance_index,
            "x": self.x, "y": self.y, "given": list(self.given), "subset": list(self.subset),
            "low": self.low, "high": self.high,
            "adjust_for": None if self.adjust_for is None else list(self.adjust_for)}
        if names is not None:
            def name(i: int | None) -> str | None:
                return None if i is None else names[i]
            out.update(x_name=name(self.x), y_name=name(self.y),
                       given_names=[names[i] for i in self.given],
                       subset_names=[names[i] for i in self.subset],
                       adjust_for_names=None if self.adjust_for is None
                       else [names[i] for i in self.adjust_for])
        return out

    def text(self, names: Sequence[str]) -> str:
        """The question as the agent reads it, with the episode's column names."""
        if len(names) != self.d:
            raise HeuresisError(f"the question is about {self.d} columns; got {len(names)} names")
        x = None if self.x is None else names[self.x]
        y = None if self.y is None else names[self.y]
        kind = self.kind
        if kind == "independence":
            return (f"Are {x} and {y} statistically independent (marginally, with no "
                    "conditioning variable)?")
        if kind in ("conditional_independence", "multi_conditional_independence"):
            return (f"Are {x} and {y} statistically independent given "
                    f"{_and_list([names[i] for i in self.given])}?")
        if kind == "direct_cause":
            return (f"Is {x} a direct cause of {y}, that is, does the causal graph have the "
                    f"edge {x} --> {y}?")
        if kind == "collider":
            return (f"Do {x} and {y} form a collider: is there a variable Z with {x} --> Z "
                    f"<-- {y} in the causal graph while {x} and {y} are not adjacent?")
        if kind == "confounding":
            return (f"Are {x} and {y} confounded: do they have a common cause, i.e. an open "
                    f"back-door path {x} <-- ... --> {y} in the causal graph?")
        if kind == "whole_graph":
            return (f"What is the causal graph over all {self.d} variables? Give its Markov "
                    "equivalence class as an edge list: every adjacency, with arrowheads on "
                    "the edges of each v-structure (A --> C <-- B with A and B not adjacent); "
                    "other edges may be directed or undirected (A --- B).")
        if kind == "partial_graph":
            shown = _and_list([names[i] for i in self.subset])
            return (f"What is the causal graph among {shown} alone, the other columns treated "
                    "as unobserved? Give it as an edge list over these variables: two of them "
                    "are adjacent when no set of the others among them makes them independent; "
                    "put arrowheads on the edges of each v-structure (A --> C <-- B with A and "
                    "B not adjacent); other edges may be directed or undirected (A --- B).")
        if kind == "average_effect":
            low, high = _number(self.low), _number(self.high)
            text = (f"What is the average causal effect on {y} of setting {x} to {high} "
                    f"instead of {low}: E[{y} | do({x} = {high})] - E[{y} | do({x} = {low})]? "
                    "Values are in the units of the table (every column is standardized).")
            if self.adjust_for:
                text += (f" Adjusting for {_and_list([names[i] for i in self.adjust_for])} "
                         f"blocks every back-door path from {x} to {y}.")
            return text
        raise UnknownNameError("question kind", kind, KINDS)

    def answer_format(self, names: Sequence[str]) -> str:
        """How to answer this question with the ``answer`` tool."""
        if self.answer_type == "yes_no":
            return ('Answer with {"tool": "answer", "args": {"answer": "yes"}} or '
                    '{"tool": "answer", "args": {"answer": "no"}}.')
        if self.answer_type == "number":
            return 'Answer with a number: {"tool": "answer", "args": {"answer": 0.25}}.'
        shown = [names[i] for i in self.subset]
        a, b = shown[0], shown[1]
        c = shown[2 % len(shown)]
        return ('Answer with an edge list over ' + ", ".join(shown) + ': {"tool": "answer", '
                f'"args": {{"answer": ["{a} --> {b}", "{c} <-- {b}"]}}}} '
                '(edges: A --> B, A <-- B, A --- B, A <-> B; [] for no edges).')


def _and_list(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _number(value: float | None) -> str:
    return "?" if value is None else f"{value:g}"


@dataclass(frozen=True)
class Question:
    """A question and its exact answer (``truth``: a bool, a graph target or an effect)."""

    public: PublicQuestion
    truth: Truth = field(repr=False)

    def truth_dict(self) -> dict[str, Any]:
        """The exact answer as JSON (what a result record stores after the episode)."""
        truth = self.truth
        if isinstance(truth, bool):
            return {"answer": "yes" if truth else "no"}
        return truth.to_dict()


@dataclass(frozen=True)
class QuestionSet:
    """The questions of one (family, split, size, salt), in id order, and their digest."""

    key: dict[str, Any]
    questions: tuple[Question, ...] = field(repr=False)

    def __len__(self) -> int:
        return len(self.questions)

    def question(self, question_id: int) -> Question:
        if isinstance(question_id, bool) or not isinstance(question_id, int | np.integer) \
                or not 0 <= question_id < len(self.questions):
            raise HeuresisError(f"a question id of the {self.key['family']}/{self.key['split']} "
                                f"set is an integer in 0..{len(self.questions) - 1}, "
                                f"got {question_id!r}")
        return self.questions[int(question_id)]

    @property
    def digest(self) -> str:
        """SHA-256 of every question with its truth: equal digests, equal sets."""
        return stable_hash([{**q.public.to_dict(), "names_seed": q.public.names_seed,
                             "truth": q.truth_dict()} for q in self.questions])

    def instance_indices(self) -> list[int]:
        """The instances the questions are about (sorted, each once)."""
        return sorted({q.public.instance_index for q in self.questions})


# ---- drawing candidates --------------------------------------------------------------------------------

def _pair(rng: np.random.Generator, d: int) -> tuple[int, int]:
    x, y = rng.choice(d, size=2, replace=False)
    return int(x), int(y)


def _propose_yes_no(kind: str, dag: np.ndarray, rng: np.random.Generator
                    ) -> tuple[dict[str, Any], bool] | None:
    """One uniform candidate of a yes/no kind and its truth (None when none can exist)."""
    d = dag.shape[0]
    if kind == "independence":
        x, y = _pair(rng, d)
        return {"x": x, "y": y}, is_d_separated(dag, x, y)
    if kind in ("conditional_independence", "multi_conditional_independence"):
        sizes = (1,) if kind == "conditional_independence" else tuple(
            s for s in MULTI_CONDITIONING_SIZES if s <= d - 2)
        if not sizes:
            return None
        size = int(rng.choice(sizes))
        chosen = [int(v) for v in rng.choice(d, size=size + 2, replace=False)]
        x, y, given = chosen[0], chosen[1], tuple(sorted(chosen[2:]))
        return {"x": x, "y": y, "given": given}, is_d_separated(dag, x, y, given)
    x, y = _pair(rng, d)
    if kind == "direct_cause":
        return {"x": x, "y": y}, is_direct_cause(dag, x, y)
    if kind == "collider":
        return {"x": x, "y": y}, bool(unshielded_colliders(dag, x, y))
    if kind == "confounding":
        return {"x": x, "y": y}, has_common_cause(dag, x, y)
    raise UnknownNameError("yes/no question kind", kind, [k for k in KINDS if KINDS[k].balanced])


def _signature(kind: str, instance_index: int, fields: Mapping[str, Any]) -> tuple:
    """What makes two questions the same (the pair unordered for symmetric kinds)."""
    x, y = fields.get("x"), fields.get("y")
    if kind not in ("direct_cause", "average_effect") and x is not None:
        x, y = min(x, y), max(x, y)
    return (kind, instance_index, x, y, tuple(fields.get("given", ())),
            tuple(sorted(fields.get("subset", ()))), fields.get("low"), fields.get("high"))


class _Drawer:
    """Draws the questions of one set from its generator (see the module docstring)."""

    def __init__(self, family: str, split: str, d: int, n: int, graph_model: str,
                 salt: SealedSalt | None, rng: np.random.Generator):
        self.family, self.split, self.d, self.n = family, split, d, n
        self.graph_model, self.salt, self.rng = graph_model, salt, rng
        self.seen: set[tuple] = set()

    def instance(self, index: int) -> Instance:
        key = InstanceKey(self.family, self.split, index, d=self.d, n=self.n,
                          graph_model=self.graph_model)
        return cached_instance(key, self.salt or "")

    def draw(self, question_id: int, kind: QuestionKind, wanted: bool | None) -> Question:
        size = SPLIT_SIZES[self.split]
        for _ in range(MAX_INSTANCE_DRAWS):
            index = int(self.rng.integers(size))
            found = self._candidate(kind, wanted, self.instance(index))
            if found is None:
                continue
            fields, truth = found
            signature = _signature(kind.name, index, fields)
            if signature in self.seen:
                continue
            self.seen.add(signature)
            public = PublicQuestion(self.family, self.split, question_id, kind.name, index,
                                    self.d, names_seed=int(self.rng.integers(2**31)), **fields)
            return Question(public, truth)
        wanted_text = "" if wanted is None else f" with answer {'yes' if wanted else 'no'}"
        raise HeuresisError(
            f"could not draw a {kind.abbreviation} question{wanted_text} on "
            f"{self.family}/{self.split} (d={self.d}) in {MAX_INSTANCE_DRAWS} instance draws; "
            "the graphs of this family and size may be too sparse or too dense for it")

    def _candidate(self, kind: QuestionKind, wanted: bool | None, instance: Instance
                   ) -> tuple[dict[str, Any], Truth] | None:
        dag = instance.record.require_graph("a causal question").directed_adjacency()
        if kind.balanced:
            for _ in range(MAX_PROPOSALS):
                proposal = _propose_yes_no(kind.name, dag, self.rng)
                if proposal is None:
                    return None
                fields, truth = proposal
                if truth == wanted:
                    return fields, bool(truth)
            return None
        if kind.name == "whole_graph":
            target = latent_projection_all(dag)
            return ({"subset": tuple(range(self.d))}, target) if target.n_edges else None
        if kind.name == "partial_graph":
            sizes = [s for s in PARTIAL_GRAPH_SIZES if s <= self.d]
            for _ in range(MAX_PROPOSALS):
                size = int(self.rng.choice(sizes))
                subset = tuple(int(v) for v in self.rng.choice(self.d, size=size,
                                                                replace=False))
                target = latent_projection(dag, subset)
                if target.n_edges:
                    return {"subset": subset}, target
            return None
        if kind.name == "average_effect":
            return self._effect_candidate(dag, instance)
        raise UnknownNameError("question kind", kind.name, KINDS)

    def _effect_candidate(self, dag: np.ndarray, instance: Instance
                          ) -> tuple[dict[str, Any], EffectTruth] | None:
        pairs = [(int(a), y) for y in range(self.d) for a in sorted(ancestors(dag, y))]
        if not pairs:
            return None
        scm = instance.record.require_scm("an average-effect question (sampling under do())")
        for _ in range(MAX_EFFECT_PROPOSALS):
            x, y = pairs[int(self.rng.integers(len(pairs)))]
            low, high = EFFECT_VALUES[int(self.rng.integers(len(EFFECT_VALUES)))]
            parents = tuple(int(p) for p in np.flatnonzero(dag[:, x]))
            adjust_for = parents if (self.rng.random() < 0.5 and parents) else None
            seed = instance_seed_sequence(instance.sha256, "average_effect", x, y,
                                          _value_label(low), _value_label(high))
            truth = average_effect(scm, scm.names[x], scm.names[y], low, high, seed)
            if truth.converged and abs(truth.value) >= MIN_ABS_EFFECT:
                return ({"x": x, "y": y, "low": low, "high": high, "adjust_for": adjust_for},
                        truth)
        return None


def _value_label(value: float) -> str:
    return f"{value:.6g}"


def latent_projection_all(dag: np.ndarray) -> GraphTarget:
    """The whole-graph target: the DAG's skeleton and v-structures (no variable is latent,
    so no enumeration of separating sets is needed: the parents of the later node of a
    non-adjacent pair separate it)."""
    d = dag.shape[0]
    adjacent = dag | dag.T
    colliders = set()
    for c in range(d):
        for a, b in itertools.combinations(np.flatnonzero(dag[:, c]).tolist(), 2):
            if not adjacent[a, b]:
                colliders.add((a, c, b))
    return GraphTarget(tuple(range(d)), adjacent, frozenset(colliders))


# ---- the set ---------------------------------------------------------------------------------------------

def questions_per_kind(split: str, per_kind: int | None = None) -> int:
    """Questions of each kind in a split's set (the split's default, or ``per_kind``)."""
    if split not in QUESTIONS_PER_KIND:
        raise UnknownNameError("split", split, QUESTIONS_PER_KIND)
    value = QUESTIONS_PER_KIND[split] if per_kind is None else per_kind
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 2 \
            or value % 2:
        raise HeuresisError(f"questions per kind must be an even integer ≥ 2 (yes/no kinds "
                            f"are half yes, half no), got {value!r}")
    return int(value)


def question_set_key(family: str, split: str, d: int = 10, n: int = 600,
                     graph_model: str = "er", per_kind: int | None = None) -> dict[str, Any]:
    """What fixes a question set besides the salt (validated)."""
    get_family(family)
    InstanceKey(family, split, 0, d=d, n=n, graph_model=graph_model)  # validates the size
    return {"family": family, "split": split, "d": int(d), "n": int(n),
            "graph_model": graph_model, "generator_version": GENERATOR_VERSION,
            "per_kind": questions_per_kind(split, per_kind),
            "question_set_version": QUESTION_SET_VERSION}


def build_question_set(family: str, split: str, d: int = 10, n: int = 600,
                       graph_model: str = "er", salt: SaltArgument = None,
                       per_kind: int | None = None) -> QuestionSet:
    """Draw a question set (uncached; see the module docstring for the procedure)."""
    key = question_set_key(family, split, d, n, graph_model, per_kind)
    salt = sealing_salt(split, salt)
    rng = np.random.Generator(np.random.PCG64(
        salted_seed_sequence({**key, "purpose": "question set"}, split, salt or "")))
    rounds = key["per_kind"]
    wanted: dict[str, list[bool]] = {}
    for kind in KINDS.values():
        if kind.balanced:
            answers: list[bool] = []
            for _ in range(rounds // 2):
                first = bool(rng.integers(2))
                answers += [first, not first]
            wanted[kind.name] = answers
    drawer = _Drawer(family, split, d, n, graph_model, salt, rng)
    questions: list[Question] = []
    for round_number in range(rounds):
        for kind in KINDS.values():
            answer = wanted[kind.name][round_number] if kind.balanced else None
            questions.append(drawer.draw(len(questions), kind, answer))
    return QuestionSet(key, tuple(questions))


_SETS: MemoCache[QuestionSet] = MemoCache(64)


def question_set(family: str, split: str, d: int = 10, n: int = 600, graph_model: str = "er",
                 salt: SaltArgument = None, per_kind: int | None = None) -> QuestionSet:
    """The question set of (family, split, size), memoized and cached on disk.

    ``salt`` (default ``$HEURESIS_TEST_SALT``) seals the test split's set as it seals its
    instances.
    """
    key = question_set_key(family, split, d, n, graph_model, per_kind)
    salt = sealing_salt(split, salt)
    cache_key = stable_hash({**key, "salt_digest": None if salt is None else salt.memo_key})
    return _SETS.get_or_compute(cache_key, lambda: ResultCache("questions").get_or_compute(
        cache_key, lambda: build_question_set(family, split, d, n, graph_model, salt,
                                              per_kind)))

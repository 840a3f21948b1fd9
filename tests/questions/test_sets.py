"""Question sets: balanced, true to the hidden record, seeded like the instances, identical in
every process; decoy names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey, generate_instance
from heuresis_env.questions import (
    DECOY_WORDS,
    KINDS,
    build_question_set,
    column_names,
    decoy_names,
    has_common_cause,
    is_d_separated,
    is_direct_cause,
    latent_projection,
    question_set,
    questions_per_kind,
    unshielded_colliders,
)
from heuresis_env.questions.sets import MIN_ABS_EFFECT

#: a strong test salt (a random token, as `heuresis salt` prints it)
SECRET = "27f4f9a7f895926166188b8625c10b2b9c95f4fc6fe6dac6fe6bd13b5187e0e8"

SMALL = {"d": 6, "n": 200, "per_kind": 4}


def check_balanced(questions, per_kind: int) -> None:
    kinds = list(KINDS)
    assert [q.public.kind for q in questions] == kinds * per_kind
    assert [q.public.id for q in questions] == list(range(len(questions)))
    for kind in KINDS.values():
        of_kind = [q for q in questions if q.public.kind == kind.name]
        assert len(of_kind) == per_kind
        if kind.balanced:
            answers = [q.truth for q in of_kind]
            assert all(isinstance(a, bool) for a in answers)
            for start in range(0, per_kind, 2):  # every two rounds: one yes, one no
                assert sorted(answers[start:start + 2]) == [False, True]


def check_truths(questions, family: str, split: str, d: int, n: int) -> None:
    """Every stored truth recomputed from the regenerated instance's DAG."""
    for question in questions:
        public = question.public
        dag = generate_instance(InstanceKey(family, split, public.instance_index, d=d, n=n)
                                ).record.dag.directed_adjacency()
        x, y, kind = public.x, public.y, public.kind
        if kind in ("independence", "conditional_independence",
                    "multi_conditional_independence"):
            assert len(public.given) == {"independence": 0, "conditional_independence": 1
                                         }.get(kind, len(public.given))
            assert question.truth == is_d_separated(dag, x, y, public.given)
        elif kind == "direct_cause":
            assert question.truth == is_direct_cause(dag, x, y)
        elif kind == "collider":
            assert question.truth == bool(unshielded_colliders(dag, x, y))
        elif kind == "confounding":
            assert question.truth == has_common_cause(dag, x, y)
        elif kind in ("whole_graph", "partial_graph"):
            expected = latent_projection(dag, public.subset)
            assert np.array_equal(question.truth.adjacent, expected.adjacent)
            assert question.truth.colliders == expected.colliders
            assert question.truth.n_edges >= 1
            if kind == "whole_graph":
                assert public.subset == tuple(range(d))
        else:
            truth = question.truth
            assert truth.converged and abs(truth.value) >= MIN_ABS_EFFECT
            assert truth.standard_error <= 0.01 * abs(truth.value)
            if public.adjust_for is not None:
                assert public.adjust_for == tuple(np.flatnonzero(dag[:, x]))


@pytest.mark.parametrize("family", ["lg", "wild"])
def test_question_sets_are_balanced_and_true(family):
    questions = build_question_set(family, "dev", **SMALL).questions
    check_balanced(questions, SMALL["per_kind"])
    check_truths(questions, family, "dev", SMALL["d"], SMALL["n"])
    signatures = {(q.public.kind, q.public.instance_index, q.public.x, q.public.y,
                   q.public.given, q.public.subset, q.public.low) for q in questions}
    assert len(signatures) == len(questions)  # no question twice


def test_the_default_sets_have_the_documented_size():
    assert questions_per_kind("dev") == 10 and questions_per_kind("test") == 8
    questions = question_set("lg", "dev")
    assert len(questions) == 10 * len(KINDS)
    check_balanced(questions.questions, 10)
    with pytest.raises(HeuresisError, match="even"):
        questions_per_kind("dev", 3)


def test_the_test_split_is_sealed_by_its_salt():
    plain = build_question_set("lg", "test", **SMALL)
    salted = build_question_set("lg", "test", salt=SECRET, **SMALL)
    again = build_question_set("lg", "test", salt=SECRET, **SMALL)
    assert plain.digest != salted.digest and salted.digest == again.digest
    assert build_question_set("lg", "dev", salt=SECRET, **SMALL).digest == \
        build_question_set("lg", "dev", **SMALL).digest  # the dev split ignores salts


_CHILD = """
import json, sys
from heuresis_env.questions import question_set
sets = [question_set(f, "dev", d=6, n=200, per_kind=4) for f in ("lg", "wild")]
print(json.dumps([s.digest for s in sets] + [[q.public.to_dict() for q in s.questions]
                                             for s in sets]))
"""


def test_question_sets_are_identical_across_processes(tmp_path):
    in_process = [build_question_set(f, "dev", **SMALL) for f in ("lg", "wild")]
    outputs = []
    for k in range(2):  # two fresh interpreters, each with its own empty cache
        environment = {**os.environ, "HEURESIS_CACHE_DIR": str(tmp_path / f"cache{k}"),
                       "PYTHONHASHSEED": str(k + 1)}
        done = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                              env=environment, timeout=600, check=True)
        outputs.append(json.loads(done.stdout))
    assert outputs[0] == outputs[1]
    assert outputs[0][:2] == [s.digest for s in in_process]
    assert outputs[0][2] == [q.public.to_dict() for q in in_process[0].questions]


def test_cached_sets_are_the_built_ones():
    first = question_set("lg", "dev", **SMALL)
    assert question_set("lg", "dev", **SMALL) is first  # memoized
    assert first.digest == build_question_set("lg", "dev", **SMALL).digest


def test_question_texts_name_the_variables():
    questions = build_question_set("lg", "dev", **SMALL)
    names = [f"V{i}" for i in range(6)]
    for question in questions.questions:
        text = question.public.text(names)
        public = question.public
        for column in (public.x, public.y, *public.given):
            if column is not None:
                assert names[column] in text
        assert "?" in text
        fmt = public.answer_format(names)
        assert '"tool": "answer"' in fmt


def test_decoy_names_are_domain_words_fixed_by_the_seed():
    for words in DECOY_WORDS.values():
        assert len(set(words)) == len(words) >= 50
        assert all(word.isidentifier() and not word.startswith("X") for word in words)
    domains = Counter()
    for seed in range(200):
        domain, names = decoy_names(10, seed)
        domains[domain] += 1
        assert len(set(names)) == 10 and set(names) <= set(DECOY_WORDS[domain])
        assert decoy_names(10, seed) == (domain, names)
    assert set(domains) == set(DECOY_WORDS) and min(domains.values()) > 60
    assert column_names("anonymous", 3, 5) == ("X1", "X2", "X3")
    with pytest.raises(HeuresisError, match="at most"):
        decoy_names(1000, 0)

"""The two inspect tasks: graph recovery (``heuresis/causal_discovery``) and causal questions
(``heuresis/qa``), one sample per instance or question, under the budgets of
``heuresis evaluate``.

:func:`causal_discovery_task` and :func:`question_task` build the :class:`inspect_ai.Task`;
the ``heuresis`` package registers them with inspect (``inspect eval heuresis/causal_discovery
-T family=wild -T split=test --model …``). A sample's id is its instance (``wild_test_3``) or
question (``wild_test_q12``), its epoch the repeat; its metadata is public — the instance key,
and for a question the public question — and its input a line naming the episode (the task
statement and the tools come from the environment when the episode starts). The task's
metadata (``heuresis``) holds what a run directory's ``config.json`` needs —
settings, instances, the question sets' size, the digest of the test salt (never the salt), the
code and package versions — so ``heuresis import-inspect`` can turn the log into a run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import Sample

from agents.inspect_task.scorer import heuresis_graph_scorer, heuresis_question_scorer
from agents.inspect_task.solver import heuresis_agent, sealed_salt
from agents.llm import check_prompt_level, check_target
from agents.qa import MAX_ITERATIONS
from heuresis_env.budgets import (
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STEPS,
    DEFAULT_TOKEN_BUDGET_PER_TURN,
)
from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation import (
    code_version,
    environment_kwargs,
    episode_file_stem,
    make_environment,
    package_versions,
    salt_digest,
)
from heuresis_env.generation import (
    InstanceKey,
    available_sources,
    expand_families,
    split_size,
)
from heuresis_env.policy import EpisodeSettings
from heuresis_env.questions import column_names, question_set
from heuresis_env.threads import limit_threads

__all__ = ["METADATA_KEY", "TASK_NAMES", "causal_discovery_task", "episode_settings",
           "question_task", "resolve_families"]

#: the key of the task metadata that describes the run
METADATA_KEY = "heuresis"
#: each run task's inspect task, by the name it is registered and logged under
TASK_NAMES = {"graph": "heuresis/causal_discovery", "qa": "heuresis/qa"}
_LOG = logging.getLogger(__name__)


def resolve_families(family: str | Sequence[str]) -> list[str]:
    """Family names (comma-separated or a list), groups ``all`` and ``bnlearn`` expanded; a
    registered data set (``sachs``) is kept as it is."""
    names = [n.strip() for n in family.split(",")] if isinstance(family, str) else list(family)
    chosen: list[str] = []
    for name in names:
        chosen += [name] if name in available_sources() else expand_families(name)
    if not chosen:
        raise HeuresisError("give at least one family, e.g. -T family=wild (or all)")
    return list(dict.fromkeys(chosen))


def episode_settings(max_steps: int = DEFAULT_MAX_STEPS,
                     max_seconds: float = DEFAULT_MAX_SECONDS,
                     token_budget: int = DEFAULT_TOKEN_BUDGET_PER_TURN, prompt_level: int = 1,
                     target: str = "none", guided: bool = False,
                     toolbox: str = "full", experiments: int = 0) -> EpisodeSettings:
    """The run's :class:`~heuresis_env.policy.EpisodeSettings` from a task's options
    (``token_budget`` is ``token_budget_per_turn``), checked."""
    if isinstance(token_budget, bool) or not isinstance(token_budget, int) or token_budget < 1:
        raise HeuresisError(f"token_budget must be an integer ≥ 1, got {token_budget!r}")
    return EpisodeSettings(max_steps=max_steps, max_seconds=float(max_seconds),
                           token_budget_per_turn=token_budget,
                           prompt_level=check_prompt_level(prompt_level),
                           target=check_target(target), guided=bool(guided), toolbox=toolbox,
                           experiments=int(experiments))


def _check_environment(family: str, settings: EpisodeSettings, split: str, d: int | None,
                       n: int | None, task: str, name_mode: str) -> None:
    """Build (not reset) one environment, so that bad settings fail before any sample."""
    make_environment(family, environment_kwargs(settings, split, d, n, "text", task,
                                                name_mode)).close()


def _count(count: int | None, size: int, what: str) -> int:
    if count is None:
        return size
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= size:
        raise HeuresisError(f"count must be an integer in 1..{size} ({what}), got {count!r}")
    return count


def _sealing(split: str) -> dict[str, Any]:
    """The salt's digest (never the salt), refusing a weak salt; an unsealed test split is
    noted, as ``heuresis evaluate`` does."""
    salt = sealed_salt(split)
    if split == "test" and salt is None:
        _LOG.warning("the test split is not sealed ($HEURESIS_TEST_SALT is unset): its "
                     "instances are public; numbers that compare policies come from a sealed "
                     "split")
    return {"salt": salt, "salt_digest": salt_digest(salt)}


def _run_metadata(task: str, settings: EpisodeSettings, families: list[str], split: str,
                  count: int, d: int | None, n: int | None, keys: list[InstanceKey],
                  digest: str | None, **extra: Any) -> dict[str, Any]:
    return {METADATA_KEY: {
        "task": task, "settings": settings.to_dict(), "families": families, "split": split,
        "count": count, "d": d, "n": n,
        "instance_keys": [k.to_dict() for k in sorted(keys, key=lambda k: (k.family, k.index))],
        "salt_digest": digest, "code_version": code_version(),
        "package_versions": package_versions(), **extra}}


def causal_discovery_task(family: str | Sequence[str], split: str, count: int | None,
                          settings: EpisodeSettings, *, d: int | None = None,
                          n: int | None = None, bca: bool = True, native_tools: bool = True,
                          epochs: int = 1) -> Task:
    """Graph recovery: one sample per instance — the first ``count`` of each family's split
    (None: all) — played under ``settings`` as ``heuresis evaluate`` plays them (``epochs`` is
    its ``--repeats``), scored by the referee, with the residual gain over BCA_φ when
    ``bca``."""
    limit_threads()  # one BLAS thread per process, as in heuresis evaluate's workers
    families = resolve_families(family)
    _check_environment(families[0], settings, split, d, n, "graph", "anonymous")
    sealing = _sealing(split)
    keys: list[InstanceKey] = []
    samples = []
    counts = {f: _count(count, split_size(f, split), f"{f}/{split}") for f in families}
    for index in range(max(counts.values())):
        for name in families:
            if index >= counts[name]:
                continue
            key = InstanceKey(name, split, index, d=d, n=n)
            keys.append(key)
            size_d, size_n, _ = key.size
            samples.append(Sample(
                id=episode_file_stem(f"{name}/{split}/{index}"),
                input=(f"Heuresis: recover the causal graph of instance {name}/{split}/{index} "
                       f"({size_d} variables, {size_n} rows). The environment states the task "
                       "and offers its tools when the episode starts."),
                metadata={"family": name, "split": split, "index": index,
                          "instance": key.to_dict()}))
    return Task(
        name=TASK_NAMES["graph"], dataset=samples,
        solver=heuresis_agent(task="graph", settings=settings.to_dict(), d=d, n=n,
                              native_tools=native_tools),
        scorer=heuresis_graph_scorer(bca=bca), epochs=epochs,
        metadata=_run_metadata("graph", settings, families, split,
                               max(counts.values()), d, n, keys, sealing["salt_digest"]))


def question_task(family: str | Sequence[str], split: str, count: int | None,
                  settings: EpisodeSettings, *, name_mode: str = "anonymous",
                  d: int | None = None, n: int | None = None, native_tools: bool = True,
                  max_iterations: int = MAX_ITERATIONS, epochs: int = 1) -> Task:
    """Causal questions: one sample per question — the first ``count`` of each family's
    question set (None: all) — answered with the ``answer`` tool under ``settings`` as
    ``heuresis evaluate --task qa`` plays them, and scored exactly against the hidden
    model."""
    limit_threads()
    families = resolve_families(family)
    _check_environment(families[0], settings, split, d, n, "qa", name_mode)
    sealing = _sealing(split)
    sets = {}
    for name in families:
        size_d, size_n, graph_model = InstanceKey(name, split, 0, d=d, n=n).size
        sets[name] = question_set(name, split, size_d, size_n, graph_model,
                                  salt=sealing["salt"])
    chosen = _count(count, min(len(s) for s in sets.values()), f"questions of {split}")
    samples = []
    indices: dict[str, set[int]] = {name: set() for name in families}
    for number in range(chosen):
        for name in families:
            public = sets[name].question(number).public
            indices[name].add(public.instance_index)
            names = column_names(name_mode, public.d, public.names_seed)
            samples.append(Sample(
                id=episode_file_stem(f"{name}/{split}/q{number}"),
                input=f"Heuresis question {name}/{split}/q{number}: {public.text(names)}",
                metadata={"family": name, "split": split, "index": public.instance_index,
                          "question": number, "public_question": public.to_dict(names)}))
    keys = [InstanceKey(name, split, index, d=d, n=n)
            for name in families for index in sorted(indices[name])]
    # the sets' digests hash their truths too: ``import-inspect`` recomputes them
    questions = {"count": chosen, "per_kind": sets[families[0]].key["per_kind"]}
    return Task(
        name=TASK_NAMES["qa"], dataset=samples,
        solver=heuresis_agent(task="qa", settings=settings.to_dict(), d=d, n=n,
                              name_mode=name_mode, native_tools=native_tools,
                              max_iterations=max_iterations),
        scorer=heuresis_question_scorer(), epochs=epochs,
        metadata=_run_metadata("qa", settings, families, split, chosen, d, n, keys,
                               sealing["salt_digest"], name_mode=name_mode,
                               questions=questions))

"""The run directory format: the one contract between ``heuresis evaluate`` and its readers.

Layout (see ``docs/evaluation.md``)::

    RUN_DIR/config.json            the run's policy, settings, instances, versions (atomic write)
    RUN_DIR/results.jsonl          one JSON object per finished episode, appended atomically
    RUN_DIR/traces/<id>.jsonl      each episode's environment trace
    RUN_DIR/transcripts/<id>.json  a language-model policy's transcript, when it has one

:class:`~heuresis_env.evaluation.run_store.RunStore` writes it; :func:`load_run` reads and
validates it for the reports and the studies (a last line without a newline is an append cut
short by a crash and is ignored).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from heuresis_env.cache import stable_hash
from heuresis_env.errors import HeuresisError, RunFormatError
from heuresis_env.generation.datasets import register_from_details
from heuresis_env.generation.instances import (
    Instance,
    InstanceKey,
    cached_instance,
    get_source,
)
from heuresis_env.generation.salts import TEST_SALT_ENV, SealedSalt, sealing_salt
from heuresis_env.seeding import text_seed

#: version of the run directory format written here (2: result lines carry their config's
#: digest); format 1 directories are still read
RUN_FORMAT_VERSION = 2
READABLE_FORMAT_VERSIONS = (1, 2)
CONFIG_NAME = "config.json"
RESULTS_NAME = "results.jsonl"
TRACES_DIR = "traces"
TRANSCRIPTS_DIR = "transcripts"
LOCK_NAME = ".evaluate.lock"
#: config fields that may differ between a run and its resumption
IGNORED_CONFIG_FIELDS = frozenset({"created", "config_seal"})
#: policy options that say how to reach a model — an address, a port, a credential — not what
#: the policy is: they may change between a run and its resumption (a loopback server's random
#: port) and are no part of the config's identity (its digest, the resume check, arm labels)
CONNECTION_OPTION = re.compile(r"url|address|host|port|key|token|secret|password", re.IGNORECASE)
#: the digests of the configs a ``--force`` replaced, whose result lines stay valid (``null``
#: stands for the lines of a format-1 config, which carry no digest)
PREVIOUS_DIGESTS_FIELD = "previous_config_digests"
#: score keys a result line must hold
SCORE_KEYS = ("f1", "precision", "recall", "shd", "nshd", "shd_cpdag", "n_edges")
#: the score key every result line of a task must hold (graph: adjacency F1; qa: correct)
MAIN_SCORE = {"graph": "f1", "qa": "correct"}

_REQUIRED_CONFIG = ("format_version", "policy", "settings", "split", "families",
                    "instance_keys", "repeats")
_REQUIRED_RESULT = ("episode_id", "family", "split", "index", "repeat", "instance_sha256",
                    "scores", "steps", "terminated", "truncated", "finished",
                    "termination_reason")

InstanceId = tuple[str, str, int]  # (family, split, index)


def episode_id(family: str, split: str, index: int, repeat: int) -> str:
    """The id of one episode, e.g. ``wild/test/3/r0``."""
    return f"{family}/{split}/{int(index)}/r{int(repeat)}"


def question_episode_id(family: str, split: str, question: int, repeat: int) -> str:
    """The id of one question episode, e.g. ``wild/test/q12/r0`` (question 12 of the set)."""
    return f"{family}/{split}/q{int(question)}/r{int(repeat)}"


def run_task(config: Mapping[str, Any]) -> str:
    """A run's task: ``"graph"`` (configs without the field) or ``"qa"``."""
    return str(config.get("task", "graph"))


def episode_file_stem(episode: str) -> str:
    """The file-name stem of an episode's trace and transcript (``/`` → ``_``)."""
    return episode.replace("/", "_")


def episode_seed(episode: str) -> int:
    """The seed passed to ``env.reset`` for an episode: a hash of its id, the same everywhere."""
    return text_seed(f"heuresis-episode:{episode}")


def connection_option(name: str) -> bool:
    """Whether a policy option says how to reach a model rather than what the policy is."""
    return bool(CONNECTION_OPTION.search(str(name)))


def _identity(config: Mapping[str, Any], connections: bool = False) -> dict[str, Any]:
    identity = {k: v for k, v in config.items()
                if k not in IGNORED_CONFIG_FIELDS and k != PREVIOUS_DIGESTS_FIELD}
    options = identity.get("policy_options")
    if not connections and isinstance(options, Mapping):
        identity["policy_options"] = {k: v for k, v in options.items()
                                      if not connection_option(k)}
    return identity


def config_digest(config: Mapping[str, Any]) -> str:
    """SHA-256 of what identifies a run's config (its creation time, the digests it replaced
    and the connection options aside); every result line written under the config carries
    it."""
    return stable_hash(_identity(config))


def accepted_digests(config: Mapping[str, Any]) -> set[str | None]:
    """The config digests a run directory's result lines may carry: its config's, those of
    the configs a ``--force`` replaced, and its digest with the connection options (as lines
    written before they were left out carry)."""
    return {config_digest(config), stable_hash(_identity(config, connections=True)),
            *config.get(PREVIOUS_DIGESTS_FIELD, [])}


def check_result_digests(config: Mapping[str, Any], digests: list[tuple[str, Any]],
                         run_path: Path) -> None:
    """Refuse result lines written under another config: (where, digest) pairs, checked for a
    format-2 config (format 1 lines carry no digest)."""
    if config.get("format_version") == 1:
        return
    accepted = accepted_digests(config)
    foreign = [(where, digest) for where, digest in digests if digest not in accepted]
    if foreign:
        where, digest = foreign[0]
        what = "no config digest" if digest is None else f"config digest {str(digest)[:12]}…"
        raise RunFormatError(
            f"{run_path} mixes runs: {len(foreign)} result line(s) (first {where}) carry "
            f"{what}, not the digest of its config.json ({config_digest(config)[:12]}…). "
            "Its results cannot be attributed to one policy and settings; move the foreign "
            "lines out, or start over with another --out")


# ---- reading ------------------------------------------------------------------------------------

def _number(value: Any) -> float:
    """A score as float; None and non-numbers become NaN (JSON has no NaN)."""
    if isinstance(value, bool) or value is None:
        return math.nan
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)  # "nan" as written by json_safe
        except ValueError:
            return math.nan
    return math.nan


@dataclass(frozen=True)
class EpisodeRecord:
    """One line of ``results.jsonl`` (the fields the report reads), and where its run lives."""

    run_path: Path
    episode_id: str
    policy: str
    family: str
    split: str
    index: int
    repeat: int
    instance_sha256: str
    scores: Mapping[str, float]
    steps: int
    terminated: bool
    truncated: bool
    finished: bool
    termination_reason: str
    wall_seconds: float = math.nan
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    api_retries: int | None = None
    final_graph: Mapping[str, Any] | None = None
    trace: str | None = None
    transcript: str | None = None
    error: str | None = None
    worker: str | None = None
    task: str = "graph"
    question: Mapping[str, Any] | None = None
    ground_truth: bool = True  # False on a data table given without a graph (unscored)
    config_digest: str | None = None
    #: what the policy said about how it ran (``Policy.notes``), e.g. an untrained condition
    notes: tuple[str, ...] = ()
    #: rows of experiments the episode drew (None: a run without an experiment budget)
    experiment_rows: int | None = None

    @property
    def instance(self) -> InstanceId:
        return (self.family, self.split, self.index)

    @property
    def slot(self) -> tuple[str, str, int, int]:
        """(family, split, index, repeat): what identifies an episode within an arm."""
        return (self.family, self.split, self.index, self.repeat)

    def score(self, name: str) -> float:
        """A score by name (NaN when absent or undefined, e.g. precision of an empty output)."""
        return _number(self.scores.get(name))

    @property
    def trace_path(self) -> Path | None:
        return None if not self.trace else self.run_path / self.trace

    @property
    def has_usage(self) -> bool:
        """True when the episode reports tokens or cost (a language-model policy)."""
        return self.cost_usd is not None or self.prompt_tokens is not None


@dataclass
class RunDirectory:
    """A loaded run directory: its config and its episodes (last line wins on a repeat id)."""

    path: Path
    config: dict[str, Any]
    episodes: list[EpisodeRecord]
    warnings: list[str] = field(default_factory=list)

    @property
    def policy(self) -> str:
        return str(self.config["policy"])

    @property
    def policy_options(self) -> dict[str, Any]:
        return dict(self.config.get("policy_options") or {})

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.config["settings"])

    @property
    def split(self) -> str:
        return str(self.config["split"])

    @property
    def repeats(self) -> int:
        return int(self.config["repeats"])

    @property
    def instance_keys(self) -> list[dict[str, Any]]:
        return list(self.config["instance_keys"])

    @property
    def task(self) -> str:
        return run_task(self.config)

    @property
    def expected_episodes(self) -> int:
        if self.task == "qa":  # questions of each family × repeats
            questions = dict(self.config.get("questions") or {})
            return int(questions.get("count", 0)) * len(self.config["families"]) * self.repeats
        return len(self.instance_keys) * self.repeats

    def instance_key(self, instance: InstanceId) -> dict[str, Any]:
        """The config's full instance key (d, n, graph model, generator version) of an instance."""
        for key in self.instance_keys:
            if (key.get("family"), key.get("split"), key.get("index")) == instance:
                return dict(key)
        raise HeuresisError(f"{self.path}: instance {'/'.join(map(str, instance))} is not in "
                            f"the config's instance_keys")

    def __str__(self) -> str:
        return str(self.path)


def _read_config(path: Path) -> dict[str, Any]:
    config_path = path / CONFIG_NAME
    if not path.is_dir():
        raise RunFormatError(f"{path} is not a directory; pass the run directories that "
                                  "'heuresis evaluate --out' wrote")
    try:
        with open(config_path, encoding="utf-8") as handle:
            config = json.load(handle)
    except FileNotFoundError:
        raise RunFormatError(f"{path} has no config.json; is it a run directory written "
                                  "by 'heuresis evaluate'?") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFormatError(f"{config_path} is not JSON ({exc})") from None
    except RecursionError:
        raise RunFormatError(f"{config_path} nests its JSON too deeply to be a run's config "
                             "(written by hand, not by heuresis evaluate)") from None
    except OSError as exc:  # a symbolic-link loop, a folder named config.json, …
        raise RunFormatError(f"cannot read {config_path}: {exc.strerror or exc}") from None
    if not isinstance(config, dict):
        raise RunFormatError(f"{config_path} is not a JSON object")
    missing = [k for k in _REQUIRED_CONFIG if k not in config]
    if missing:
        raise RunFormatError(f"{config_path} lacks {missing}")
    if config["format_version"] not in READABLE_FORMAT_VERSIONS:
        raise RunFormatError(f"{config_path} is run format {config['format_version']!r}; "
                             f"this code reads formats {list(READABLE_FORMAT_VERSIONS)}")
    if not isinstance(config["settings"], dict):
        raise RunFormatError(f"{config_path}: 'settings' must be an object")
    if not isinstance(config["instance_keys"], list):
        raise RunFormatError(f"{config_path}: 'instance_keys' must be a list")
    return config


def _tokens(value: Any, where: str) -> tuple[int | None, int | None]:
    if value is None:
        return None, None
    if not isinstance(value, dict):
        raise RunFormatError(f"{where}: 'tokens' must be an object or null")
    prompt, completion = value.get("prompt"), value.get("completion")
    return (None if prompt is None else int(prompt),
            None if completion is None else int(completion))


def _episode(run_path: Path, record: Any, where: str, task: str = "graph") -> EpisodeRecord:
    if not isinstance(record, dict):
        raise RunFormatError(f"{where}: a result line must be a JSON object")
    missing = [k for k in _REQUIRED_RESULT if k not in record]
    if missing:
        raise RunFormatError(f"{where}: result line lacks {missing}")
    scores = record["scores"]
    main = MAIN_SCORE.get(task, "f1")
    if not isinstance(scores, dict) or main not in scores:
        raise RunFormatError(f"{where}: 'scores' must be an object with at least {main!r}")
    question = record.get("question")
    if task == "qa" and not isinstance(question, dict):
        raise RunFormatError(f"{where}: a question run's result line needs its 'question'")
    prompt, completion = _tokens(record.get("tokens"), where)
    try:
        return EpisodeRecord(
            run_path=run_path,
            episode_id=str(record["episode_id"]),
            policy=str(record.get("policy", "")),
            family=str(record["family"]),
            split=str(record["split"]),
            index=int(record["index"]),
            repeat=int(record["repeat"]),
            instance_sha256=str(record["instance_sha256"]),
            scores={k: _number(v) for k, v in scores.items()},
            steps=int(record["steps"]),
            terminated=bool(record["terminated"]),
            truncated=bool(record["truncated"]),
            finished=bool(record["finished"]),
            termination_reason=str(record["termination_reason"]),
            wall_seconds=_number(record.get("wall_seconds")),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cost_usd=None if record.get("cost_usd") is None else float(record["cost_usd"]),
            api_retries=None if record.get("api_retries") is None else int(record["api_retries"]),
            final_graph=record.get("final_graph"),
            trace=record.get("trace"),
            transcript=record.get("transcript"),
            error=record.get("error"),
            worker=None if record.get("worker") is None else str(record["worker"]),
            task=task,
            question=question if isinstance(question, dict) else None,
            ground_truth=bool(record.get("ground_truth", True)),
            config_digest=record.get("config_digest"),
            notes=tuple(str(n)[:2000] for n in record.get("notes") or ()
                        if isinstance(n, str))[:20],
            experiment_rows=(None if record.get("experiment_rows") is None
                             else int(record["experiment_rows"])),
        )
    except (TypeError, ValueError) as exc:
        raise RunFormatError(f"{where}: a field has the wrong type ({exc})") from None


def read_results(run_path: Path, task: str = "graph",
                 config: Mapping[str, Any] | None = None
                 ) -> tuple[list[EpisodeRecord], list[str]]:
    """The episodes of ``run_path/results.jsonl`` and any warnings about the file.

    A last line without a newline is an append cut short by a crash and is ignored; a
    malformed line elsewhere is an error naming it. When an episode id occurs twice the last
    line wins (and a warning says so). With the run's ``config``, a line written under
    another config is refused (:func:`check_result_digests`).
    """
    results_path = run_path / RESULTS_NAME
    warnings: list[str] = []
    if not results_path.exists():
        return [], [f"{run_path}: no results.jsonl yet (no episode has finished)"]
    with open(results_path, "rb") as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunFormatError(f"{results_path} is not UTF-8 ({exc})") from None
    lines = text.split("\n")
    if lines and lines[-1] != "":
        warnings.append(f"{results_path}: ignored a last line without a newline (an append "
                        "cut short)")
    lines = lines[:-1]
    by_id: dict[str, EpisodeRecord] = {}
    digests: list[tuple[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{results_path}:{number}"
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RunFormatError(f"{where}: not JSON ({exc.msg})") from None
        except RecursionError:
            raise RunFormatError(f"{where}: its JSON nests too deeply to be a result line"
                                 ) from None
        episode = _episode(run_path, record, where, task)
        digests.append((where, episode.config_digest))
        if episode.episode_id in by_id:
            warnings.append(f"{where}: episode {episode.episode_id} appears again; the last "
                            "line is used")
        by_id[episode.episode_id] = episode
    if config is not None:
        check_result_digests(config, digests, run_path)
    return list(by_id.values()), warnings


#: folders a search for run directories never enters (environments, caches, version control)
_NOT_RUNS = frozenset({"node_modules", "__pycache__", "site-packages", "dist-packages",
                       "venv", "env", "build", "dist"})
#: how deep below a root, and through how many folders at most, that search goes
RUN_SEARCH_DEPTH, RUN_SEARCH_FOLDERS = 5, 20_000


def run_folders_near(*roots: str | os.PathLike) -> list[str]:
    """The run directories (a ``config.json`` beside a ``results.jsonl`` or ``traces/``) under
    ``roots`` — the working folder and the checkout, where ``runs/`` lives — at most
    :data:`RUN_SEARCH_DEPTH` folders down, skipping hidden folders and environments: what a
    confined policy must not see (issue 46, route 1; runs written before run folders were
    private are world-readable)."""
    found: list[str] = []
    budget = RUN_SEARCH_FOLDERS
    frontier = [(Path(root), 0) for root in dict.fromkeys(os.path.realpath(r) for r in roots)]
    seen: set[str] = set()
    while frontier and budget > 0:
        folder, depth = frontier.pop()
        real = os.path.realpath(folder)
        if real in seen:
            continue
        seen.add(real)
        budget -= 1
        try:
            entries = list(os.scandir(real))
        except OSError:
            continue
        names = {entry.name for entry in entries}
        if CONFIG_NAME in names and (RESULTS_NAME in names or TRACES_DIR in names):
            found.append(real)
            continue
        if depth < RUN_SEARCH_DEPTH:
            frontier += [(Path(entry.path), depth + 1) for entry in entries
                         if entry.is_dir(follow_symlinks=False)
                         and not entry.name.startswith(".") and entry.name not in _NOT_RUNS]
    return sorted(found)


def find_run_directories(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """The run directories named by ``paths``: a run directory itself, or a folder holding
    runs — its sub-folders with a ``config.json``, or those of its ``runs/`` (what ``heuresis
    demo --out DIR`` writes: ``heuresis report runs/demo`` reads ``runs/demo/runs/*``). A path
    that is neither is kept as given, so :func:`load_run` names what is wrong with it."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if (path / CONFIG_NAME).is_file() or not path.is_dir():
            found.append(path)
            continue
        runs = [child for folder in (path, path / "runs") if folder.is_dir()
                for child in sorted(folder.iterdir())
                if child.is_dir() and (child / CONFIG_NAME).is_file()]
        found.extend(runs or [path])
    return found


def load_run(path: str | os.PathLike) -> RunDirectory:
    """Read and validate one run directory.

    Every episode must belong to an instance of the config's ``instance_keys`` and a repeat in
    0..repeats−1; an incomplete run (fewer episodes than instances × repeats) loads with a
    warning, since a report may be made while a run is still going.
    """
    run_path = Path(path)
    config = _read_config(run_path)
    episodes, warnings = read_results(run_path, run_task(config), config)
    run = RunDirectory(run_path, config, episodes, warnings)
    known = {(k.get("family"), k.get("split"), k.get("index")) for k in run.instance_keys}
    for episode in episodes:
        if episode.instance not in known:
            raise RunFormatError(
                f"{run_path}: episode {episode.episode_id} is on instance "
                f"{'/'.join(map(str, episode.instance))}, which is not in the config's "
                "instance_keys")
        if not 0 <= episode.repeat < run.repeats:
            raise RunFormatError(f"{run_path}: episode {episode.episode_id} has repeat "
                                      f"{episode.repeat}; the config has {run.repeats} repeats")
    if len(episodes) < run.expected_episodes:
        warnings.append(f"{run_path}: {len(episodes)} of {run.expected_episodes} episodes "
                        "finished (an incomplete run: cells use the episodes present)")
    return run


# ---- the instances a run played ----------------------------------------------------------------

def run_salt(run: RunDirectory) -> SealedSalt | None:
    """The test salt a run was generated with, from ``$HEURESIS_TEST_SALT`` (checked strong
    enough, and against the digest the config records); None for an unsealed run."""
    digest = run.config.get("salt_digest")
    if not digest:
        return None
    salt = sealing_salt("test", os.environ.get(TEST_SALT_ENV) or "")
    if salt is None:
        raise HeuresisError(f"{run.path} ran on a sealed test split; set ${TEST_SALT_ENV} to its "
                            "salt so the report can regenerate the instances")
    if not salt.matches(digest):
        raise HeuresisError(f"${TEST_SALT_ENV} is not the salt {run.path} ran with (its digest "
                            "differs from the config's salt_digest)")
    return salt


def regenerate_instance(run: RunDirectory, instance: InstanceId, expected_sha256: str,
                        salt: SealedSalt | str | None = None) -> Instance:
    """The instance an episode ran on, regenerated from the config's key and checked against
    the recorded data hash (a sealed run: with ``salt``, else ``$HEURESIS_TEST_SALT``)."""
    for details in run.config.get("datasets") or ():  # CSV tables the run played
        if details.get("name") == instance[0]:
            source = get_source(instance[0])
            if source is None or source.details.get("sha256") != details.get("sha256"):
                register_from_details(details)
    key = InstanceKey.from_dict(run.instance_key(instance))
    salt = None if salt is None else sealing_salt("test", salt)
    if salt is None or not salt.matches(run.config.get("salt_digest") or ""):
        salt = run_salt(run)
    generated = cached_instance(key, salt=salt or "")
    if generated.sha256 != expected_sha256:
        raise HeuresisError(
            f"instance {key} regenerates with data hash {generated.sha256[:16]}…, but "
            f"{run.path} recorded {expected_sha256[:16]}… (another generator version or salt)")
    return generated

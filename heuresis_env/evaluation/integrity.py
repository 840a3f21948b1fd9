"""A run's scores are checked, never trusted: re-scored from each episode's final graph, and on
a sealed run sealed by an HMAC keyed by the salt.

- :func:`rescore_run` regenerates each graph episode's instance (whenever its truth is
  available: a public split, a data table with a graph, a sealed split with its salt) and
  scores the recorded ``final_graph`` again; a recorded score that differs is refused, naming
  the episode.
- A sealed run's ``config.json`` carries ``config_seal`` and each of its result lines ``seal``:
  HMAC-SHA256, keyed by the salt, of the config and of the line (its ``config_digest``
  included). :func:`check_seals` refuses a config or a line whose seal is missing or does not
  match — an edited score, an edited or re-digested ``config.json`` — naming the episode. Without the salt a sealed run's truth is unavailable
  and nothing can be checked (the report and resume need the salt anyway).

``heuresis report``, a resumed ``heuresis evaluate`` and ``heuresis view`` call
:func:`verify_run` before they use a run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from heuresis_env.errors import HeuresisError
from heuresis_env.evaluation.run_format import (
    RESULTS_NAME,
    RunDirectory,
    accepted_digests,
    regenerate_instance,
    run_salt,
)
from heuresis_env.generation.salts import SealedSalt, seal, seal_matches, sealing_salt
from heuresis_env.graphs import Graph, GraphError
from heuresis_env.metrics import score_graph

#: the result line's field holding its HMAC on a sealed run
SEAL_FIELD = "seal"
#: the config's field holding its HMAC on a sealed run
CONFIG_SEAL_FIELD = "config_seal"
#: a result line's field saying its seal also covers the previous line's seal (a hash chain:
#: no line of a sealed run can be dropped or moved without breaking the next one's seal)
CHAIN_FIELD = "chained"
#: what the first chained line's seal covers in place of a previous seal
CHAIN_START = "heuresis-run-chain"
#: how far a recorded score may be from the recomputed one (JSON round trip of floats)
TOLERANCE = 1e-9


class TamperedRunError(HeuresisError):
    """A run's recorded results are not what its run wrote."""


def _canonical(record: Mapping[str, Any], field: str = SEAL_FIELD) -> bytes:
    body = {k: v for k, v in record.items() if k != field}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=True).encode()


def seal_record(record: Mapping[str, Any], salt: SealedSalt | str,
                previous: str = CHAIN_START) -> dict[str, Any]:
    """``record`` with its seal, chained to ``previous`` (the seal of the line before it, or
    :data:`CHAIN_START` for the first); the record must already carry its
    ``config_digest``."""
    chained = {**record, CHAIN_FIELD: True}
    return {**chained, SEAL_FIELD: seal(salt, previous.encode(), _canonical(chained))}


def seal_config(config: Mapping[str, Any], salt: SealedSalt | str) -> dict[str, Any]:
    """``config`` with its seal."""
    return {**config, CONFIG_SEAL_FIELD: seal(salt, _canonical(config, CONFIG_SEAL_FIELD))}


def check_seals(run: RunDirectory, salt: SealedSalt | str) -> None:
    """Refuse a sealed run whose ``config.json`` or result lines are not sealed by ``salt``
    (naming the first episode that fails)."""
    if CONFIG_SEAL_FIELD not in run.config:
        raise TamperedRunError(f"{run.path}: config.json of this sealed run carries no seal: it "
                               "was written before sealed runs were sealed (issue 30), or its "
                               "seal was removed; its scores cannot be trusted; run it again")
    if not seal_matches(salt, str(run.config.get(CONFIG_SEAL_FIELD) or ""),
                        _canonical(run.config, CONFIG_SEAL_FIELD)):
        raise TamperedRunError(f"{run.path}: config.json's seal does not match (the config was "
                               "changed after the run wrote it, or written without its salt); "
                               "refusing the run")
    accepted = accepted_digests(run.config)
    path = run.path / RESULTS_NAME
    if not path.exists():
        return
    previous, chain_started = CHAIN_START, False
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n")[:-1], 1):
        if not line.strip():
            continue
        record = json.loads(line)
        name = record.get("episode_id", f"line {number}")
        if record.get("config_digest") not in accepted:
            raise TamperedRunError(f"{run.path}: episode {name} was not written under this "
                                   "config.json")
        chained = record.get(CHAIN_FIELD) is True
        if chain_started and not chained:
            raise TamperedRunError(f"{run.path}: episode {name} is not chained to the line "
                                   "before it, as every line after a chained one is; refusing "
                                   "the run")
        parts = ((previous.encode(), _canonical(record)) if chained
                 else (_canonical(record),))  # a line of a run sealed before chains
        if not seal_matches(salt, record.get(SEAL_FIELD), *parts):
            raise TamperedRunError(
                f"{run.path}: episode {name}: its seal does not match (the result line, a line "
                "before it or config.json was changed, dropped or moved after the run wrote "
                "it); refusing the run")
        chain_started = chain_started or chained
        previous = str(record.get(SEAL_FIELD))


def check_complete(run: RunDirectory) -> None:
    """Refuse a sealed run missing result lines: its seals prove the lines present, not the
    ones dropped after the last, so a report counts them — a missing line is an error."""
    if len(run.episodes) < run.expected_episodes:
        raise TamperedRunError(
            f"{run.path}: this sealed run holds {len(run.episodes)} of its "
            f"{run.expected_episodes} episodes; a sealed run is reported whole (a dropped line "
            "would hide its score): resume it with the same `heuresis evaluate` options to "
            "finish it")


def _differs(recorded: Any, expected: float) -> bool:
    if isinstance(recorded, bool) or not isinstance(recorded, int | float | str | None):
        return True
    try:
        value = math.nan if recorded is None else float(recorded)
    except ValueError:
        return True
    if math.isnan(expected) or math.isnan(value):
        return math.isnan(expected) != math.isnan(value)
    return abs(value - expected) > TOLERANCE * max(1.0, abs(expected))


def rescore_run(run: RunDirectory, warn: Callable[[str], None] | None = None,
                salt: SealedSalt | str | None = None) -> int:
    """Score each graph episode's final graph again where the truth is available and refuse
    a recorded score that differs; returns how many episodes were checked. An episode that
    cannot be checked (an unreadable final graph, an instance that does not regenerate) is
    refused too, or with ``warn`` (the viewer) reported to it and left unchecked."""
    checked = 0
    for episode in run.episodes:
        if episode.task != "graph":
            continue
        try:
            if not isinstance(episode.instance_sha256, str):
                raise TypeError("its instance_sha256 is not a string")
            # whether the episode has a truth comes from its instance, never from the line
            instance = regenerate_instance(run, episode.instance, episode.instance_sha256, salt)
            dag = instance.record.dag
            has_truth = dag is not None
            if episode.ground_truth != has_truth:
                raise TamperedRunError(
                    f"{run.path}: episode {episode.episode_id} says ground_truth "
                    f"{episode.ground_truth}, but its instance {'has' if has_truth else 'has no'}"
                    " true graph; the results were changed after the run wrote them; refusing "
                    "the run")
            if dag is None:
                continue
            if episode.final_graph is None:
                raise TamperedRunError(
                    f"{run.path}: episode {episode.episode_id} has no final_graph (every graph "
                    "episode records one, and its scores are re-computed from it); the results "
                    "were changed after the run wrote them; refusing the run")
            final = Graph.from_dict(dict(episode.final_graph))
            expected = score_graph(final, dag, instance.record.cpdag)
        except TamperedRunError:
            raise
        except (HeuresisError, GraphError, TypeError, ValueError, KeyError,
                AttributeError) as exc:
            problem = (f"{run.path}: episode {episode.episode_id} cannot be re-scored "
                       f"({type(exc).__name__}: {exc})")
            if warn is None:
                raise TamperedRunError(problem + "; refusing the run") from None
            warn(problem)
            continue
        for name, value in expected.items():
            if name in episode.scores and _differs(episode.scores[name], float(value)):
                raise TamperedRunError(
                    f"{run.path}: episode {episode.episode_id}: its recorded {name} "
                    f"{episode.scores[name]!r} is not the {name} of its final graph "
                    f"({float(value):.6g}); the results were changed after the run wrote "
                    "them; refusing the run")
        checked += 1
    return checked


def verify_run(run: RunDirectory, salt: SealedSalt | str | None = None,
               warn: Callable[[str], None] | None = None, complete: bool = False) -> int:
    """Check a run before it is reported, resumed or viewed: its seals (a sealed run, with the
    salt — given, or ``$HEURESIS_TEST_SALT``) and its scores (wherever the truth is
    available). Returns the number of episodes re-scored; a sealed run whose salt is not
    available is not checked (0). ``warn``: see :func:`rescore_run`; ``complete``: a sealed
    run must hold every episode (a report and the viewer; a resume completes it)."""
    if run.config.get("salt_digest"):
        salt = None if salt is None else sealing_salt("test", salt)
        if salt is None:
            try:
                salt = run_salt(run)
            except HeuresisError:
                return 0  # the truth is not available here: nothing can be checked
        if salt is None:
            return 0
        check_seals(run, salt)
        if complete:
            check_complete(run)
    return rescore_run(run, warn, salt)


__all__ = ["CHAIN_FIELD", "CHAIN_START", "CONFIG_SEAL_FIELD", "SEAL_FIELD", "TamperedRunError",
           "check_complete", "check_seals", "rescore_run",
           "seal_config", "seal_record", "verify_run"]

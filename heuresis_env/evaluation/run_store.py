"""Writing a run directory (format: :mod:`heuresis_env.evaluation.run_format`): a config
written once the run can start (with its first result), an append-only results file whose
every line carries the config's digest, traces, transcripts; resuming one.

Every result line is written by one ``os.write`` on an ``O_APPEND`` descriptor and then
``fsync``-ed, so a killed or interrupted run never leaves a half line that a reader trusts
(a reader ignores a last line without a newline) and never loses a finished episode.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from heuresis_env.errors import HeuresisError, RunFormatError
from heuresis_env.evaluation.integrity import CHAIN_START, SEAL_FIELD, seal_config, seal_record
from heuresis_env.evaluation.run_format import (
    CONFIG_NAME,
    IGNORED_CONFIG_FIELDS,
    LOCK_NAME,
    PREVIOUS_DIGESTS_FIELD,
    READABLE_FORMAT_VERSIONS,
    RESULTS_NAME,
    RUN_FORMAT_VERSION,
    TRACES_DIR,
    TRANSCRIPTS_DIR,
    check_result_digests,
    config_digest,
    connection_option,
    episode_file_stem,
)
from heuresis_env.files import (
    atomic_write_bytes,
    json_compact,
    json_line,
    output_directory,
)
from heuresis_env.generation.salts import SealedSalt, salt_digest
from heuresis_env.version import __version__

#: distributions whose versions a config records (those installed)
RECORDED_PACKAGES = ("heuresis", "numpy", "scipy", "networkx", "gymnasium", "causal-learn",
                     "torch", "scikit-learn", "dcor", "lingam", "stable-baselines3",
                     "sb3-contrib", "openai", "anthropic", "ray")


# ---- provenance -----------------------------------------------------------------------------------

def package_versions() -> dict[str, str]:
    """Versions of Python and of the installed packages that can change a result (read once
    per process: every run of a job records the same, and each lookup scans the installed
    distributions)."""
    return dict(_package_versions())


@functools.cache
def _package_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": sys.version.split()[0]}
    for name in RECORDED_PACKAGES:
        try:
            versions[name] = version(name)
        except PackageNotFoundError:
            continue
    return versions


@functools.cache
def code_version() -> str:
    """``heuresis`` version plus ``git describe --always --dirty`` of its checkout, if any
    (asked once per process: the code this process runs was imported at its start)."""

    root = Path(__file__).resolve().parents[2]
    try:
        described = subprocess.run(
            ["git", "-C", str(root), "describe", "--always", "--dirty", "--abbrev=12"],
            capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return __version__
    if described.returncode != 0 or not described.stdout.strip():
        return __version__
    return f"{__version__} (git {described.stdout.strip()})"


def build_config(*, policy: str, policy_options: Mapping[str, Any], settings: Mapping[str, Any],
                 split: str, families: Sequence[str], count: int, repeats: int,
                 d: int | None, n: int | None, instance_keys: Sequence[Mapping[str, Any]],
                 salt: SealedSalt | None, datasets: Sequence[Mapping[str, Any]] = (),
                 reference: bool = False, policy_isolation: str = "process") -> dict[str, Any]:
    """The config of a run, in the run directory format (``d``/``n`` None: each family's own
    size; ``datasets``: the CSV tables played, for workers and reports to read again).
    ``reference``: the policy is a reference that saw the truth; ``policy_isolation``: how the
    policy process was isolated (``namespaces``, ``process``, or ``referee`` for a reference)."""
    keys = sorted((dict(k) for k in instance_keys),
                  key=lambda k: (k["family"], k["split"], k["index"]))
    return {
        "format_version": RUN_FORMAT_VERSION,
        "policy": policy, "policy_options": dict(policy_options), "settings": dict(settings),
        "split": split, "families": list(families), "count": int(count),
        "repeats": int(repeats), "d": None if d is None else int(d),
        "n": None if n is None else int(n), "instance_keys": keys,
        **({"datasets": [dict(t) for t in datasets]} if datasets else {}),
        "salt_digest": salt_digest(salt), "reference": bool(reference),
        "policy_isolation": policy_isolation,
        "package_versions": package_versions(), "code_version": code_version(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


# ---- comparing configs ---------------------------------------------------------------------------

def _key_text(key: Mapping[str, Any]) -> str:
    return (f"{key.get('family')}/{key.get('split')}/{key.get('index')} "
            f"(d={key.get('d')}, n={key.get('n')}, generator v{key.get('generator_version')})")


def _describe_keys(old: Sequence[Mapping], new: Sequence[Mapping]) -> str:
    as_text = [_key_text(k) for k in old], [_key_text(k) for k in new]
    old_set, new_set = set(as_text[0]), set(as_text[1])
    added = [k for k in as_text[1] if k not in old_set]
    removed = [k for k in as_text[0] if k not in new_set]
    parts = []
    if added:
        parts.append(f"{len(added)} added (e.g. {added[0]})")
    if removed:
        parts.append(f"{len(removed)} removed (e.g. {removed[0]})")
    return f"instance_keys: {'; '.join(parts) or 'same instances, different order'}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


def config_differences(old: Mapping[str, Any], new: Mapping[str, Any],
                       prefix: str = "") -> list[str]:
    """Each field in which two configs differ, as ``field: was X, now Y`` (``created`` and the
    policy's connection options aside: :data:`~heuresis_env.evaluation.run_format.CONNECTION_OPTION`)."""
    differences = []
    for field in sorted(set(old) | set(new)):
        if not prefix and (field in IGNORED_CONFIG_FIELDS or field == PREVIOUS_DIGESTS_FIELD):
            continue
        if prefix == "policy_options." and connection_option(field):
            continue  # how to reach the model, not what the policy is
        name = f"{prefix}{field}"
        missing = object()
        a, b = old.get(field, missing), new.get(field, missing)
        if a == b:
            continue
        if a is missing or b is missing:
            differences.append(f"{name}: {'absent' if a is missing else _short(a)} before, "
                               f"{'absent' if b is missing else _short(b)} now")
        elif isinstance(a, Mapping) and isinstance(b, Mapping):
            differences += config_differences(a, b, prefix=f"{name}.")
        elif field == "instance_keys" and not prefix:
            differences.append(_describe_keys(a, b))
        else:
            differences.append(f"{name}: was {_short(a)}, now {_short(b)}")
    return differences


# ---- the store -------------------------------------------------------------------------------------

def transcript_json(transcript: Any) -> str:
    """A policy's transcript as its file holds it: strict JSON (non-finite floats as strings,
    what is not JSON by its ``repr``) on one line (:func:`~heuresis_env.files.json_compact`).
    Compact: an indented dump runs Python's pure-Python encoder, ten times slower on a
    router's ledger (the viewer indents the part it shows)."""
    return json_compact(transcript, default=repr) + "\n"


#: what a run directory holds (anything else in a folder without a config refuses it)
RUN_ENTRIES = frozenset({CONFIG_NAME, RESULTS_NAME, TRACES_DIR, TRANSCRIPTS_DIR, LOCK_NAME})


#: a run's files and folders are its owner's only, whatever the umask: a policy run by another
#: uid (confined by root) cannot read an earlier run's results (issue 46, route 1)
PRIVATE_FILE, PRIVATE_FOLDER = 0o600, 0o700


def make_private(directory: Path) -> None:
    """``directory`` readable by its owner only (a run directory)."""
    try:
        os.chmod(directory, PRIVATE_FOLDER)
    except OSError:  # not ours to change (a run directory someone else made): left as it is
        pass


class RunStore:
    """Reads and writes one run directory (see the module docstring for the layout)."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.config_path = self.directory / CONFIG_NAME
        self.results_path = self.directory / RESULTS_NAME
        self.traces_dir = self.directory / TRACES_DIR
        self.transcripts_dir = self.directory / TRANSCRIPTS_DIR
        self._pending_config: dict[str, Any] | None = None  # written by commit()
        self._replaced: dict[str, Any] | None = None
        self.config_digest: str | None = None
        #: a sealed run's salt: the config and every result line are sealed with it
        self.salt: SealedSalt | None = None
        #: the seal of the last result line (what the next sealed line is chained to)
        self._last_seal: str | None = None

    # ---- locking -------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the directory's writer lock: one ``heuresis evaluate`` per run directory.

        A run refused before it wrote anything (a policy that cannot start, a bad option)
        leaves nothing behind: the lock file is removed, and the directory too when this
        call created it.
        """
        from filelock import FileLock, Timeout

        created = not self.directory.exists()
        output_directory(self.directory, "run directory")
        make_private(self.directory)
        lock = FileLock(str(self.directory / LOCK_NAME), mode=PRIVATE_FILE)
        try:
            lock.acquire(timeout=0)
        except Timeout:
            raise HeuresisError(f"another `heuresis evaluate` is writing to {self.directory} "
                                f"(it holds {self.directory / LOCK_NAME}); wait for it or use "
                                "another --out") from None
        try:
            yield
        finally:
            lock.release()
            self._remove_if_unused(created)

    def _remove_if_unused(self, created: bool) -> None:
        """Remove the lock file when the run wrote nothing (no config, results, traces), and
        the directory too if ``created`` and now empty: a refused run leaves no folder holding
        only a lock, and no lock in a folder that is not a run directory."""
        try:
            names = {p.name for p in self.directory.iterdir()}
            if names & (RUN_ENTRIES - {LOCK_NAME}):
                return
            (self.directory / LOCK_NAME).unlink(missing_ok=True)
            if created and names == {LOCK_NAME}:
                self.directory.rmdir()
        except OSError:  # another writer arrived, or a read-only folder: leave it
            pass

    # ---- config ---------------------------------------------------------------------------
    def read_config(self) -> dict[str, Any] | None:
        """The stored config, or None when the directory has none yet."""
        if not self.config_path.exists():
            return None
        try:
            config = json.loads(self.config_path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
            raise RunFormatError(f"{self.config_path} is not JSON a run could have written "
                                 f"({type(exc).__name__}); it is not a run directory written "
                                 "by heuresis evaluate") from None
        version = config.get("format_version") if isinstance(config, dict) else None
        if version not in READABLE_FORMAT_VERSIONS:
            raise RunFormatError(f"{self.config_path} has run format version {version!r}; "
                                 f"this code writes version {RUN_FORMAT_VERSION}")
        return config

    def write_config(self, config: Mapping[str, Any]) -> None:
        if self.salt:
            config = seal_config(json.loads(json.dumps(dict(config))), self.salt)
        payload = json.dumps(dict(config), indent=2, sort_keys=False) + "\n"
        atomic_write_bytes(self.config_path, payload.encode("utf-8"), durable=True,
                           mode=PRIVATE_FILE)

    def prepare(self, config: Mapping[str, Any], force: bool = False) -> list[str]:
        """Check that a run with ``config`` may start or resume here; write nothing yet.

        A results file without a config is refused (its lines cannot be attributed to a
        policy and settings), and so is a results file holding a line written under another
        config. A differing config is refused with every differing field named, unless
        ``force``: then :meth:`commit` keeps the stored config as
        ``config.replaced-<time>.json``, writes the new one, and finished episodes stay
        finished. Returns the differences that ``force`` accepted. Also drops a torn last
        line of the results file (an episode that never finished).
        """
        stored = self.read_config()
        if stored is None:
            foreign = sorted(p.name for p in self.directory.iterdir()
                             if p.name not in RUN_ENTRIES)
            if foreign:
                listed = ", ".join(foreign[:5]) + (", …" if len(foreign) > 5 else "")
                raise HeuresisError(
                    f"{self.directory} is a non-empty folder that is not a run directory (it "
                    f"holds {listed}); give --out a new or empty folder, or a run directory "
                    "to resume")
        if stored is None and self._has_results():
            raise RunFormatError(
                f"{self.directory} holds {RESULTS_NAME} but no {CONFIG_NAME}, so its episodes "
                "cannot be attributed to a policy and settings; restore its config.json, move "
                f"{RESULTS_NAME} and {TRACES_DIR}/ out of the way, or use another --out")
        differences: list[str] = []
        config = dict(config)
        if stored is not None:
            differences = config_differences(stored, config)
            if differences and not force:
                listed = "\n  ".join(differences)
                raise HeuresisError(
                    f"{self.directory} holds a run with another config; these fields "
                    f"differ:\n  {listed}\nRerun with the same options to resume it, use "
                    "another --out, or pass --force to accept the new config (finished "
                    "episodes are kept)")
            self._check_results(stored)
            previous = list(stored.get(PREVIOUS_DIGESTS_FIELD, []))
            if differences:
                previous.append(None if stored.get("format_version") == 1
                                else config_digest(stored))
            if previous:
                config[PREVIOUS_DIGESTS_FIELD] = previous
            self._replaced = stored if differences else None
            self._pending_config = config if differences else None
        else:
            self._pending_config = config
        self.config_digest = config_digest(config)
        self.repair_results()
        return differences

    def commit(self) -> None:
        """Write the config :meth:`prepare` accepted, once the run can start (the runner calls
        it before the first result line): a failed start leaves no config behind."""
        if self._pending_config is None:
            return
        if self._replaced is not None and self.config_path.exists():
            stamp = time.strftime("%Y%m%dT%H%M%S")
            self.config_path.replace(self.directory / f"config.replaced-{stamp}.json")
        self.write_config(self._pending_config)
        self._pending_config = self._replaced = None

    def _has_results(self) -> bool:
        try:
            return self.results_path.stat().st_size > 0
        except FileNotFoundError:
            return False

    def _check_results(self, config: Mapping[str, Any]) -> None:
        digests = [(f"{self.results_path}:{number}", record.get("config_digest"))
                   for number, record in self._result_lines()]
        check_result_digests(config, digests, self.directory)

    # ---- results -----------------------------------------------------------------------------
    def repair_results(self) -> int:
        """Cut a last line without a newline (left by a writer killed mid-write); bytes cut."""
        if not self.results_path.exists():
            return 0
        with open(self.results_path, "rb+") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            if size == 0:
                return 0
            f.seek(size - 1)
            if f.read(1) == b"\n":
                return 0
            position = size
            keep = 0
            while position > 0:
                step = min(65536, position)
                position -= step
                f.seek(position)
                chunk = f.read(step)
                newline = chunk.rfind(b"\n")
                if newline >= 0:
                    keep = position + newline + 1
                    break
            f.truncate(keep)
            os.fsync(f.fileno())
            return size - keep

    def append_result(self, record: Mapping[str, Any]) -> None:
        """Append one result line, stamped with the config's digest, with a single ``write``
        on an ``O_APPEND`` fd, then fsync (the config is written first if still pending)."""
        self.commit()
        if self.config_digest is None:
            raise HeuresisError("RunStore.prepare(config) must run before results are written")
        stamped = {**record, "config_digest": self.config_digest}
        if self.salt:  # sealed as it will be read back (non-finite numbers as strings),
            # chained to the line before it
            if self._last_seal is None:
                self._last_seal = self._previous_seal()
            stamped = seal_record(json.loads(json_line(stamped)), self.salt, self._last_seal)
            self._last_seal = str(stamped[SEAL_FIELD])
        payload = json_line(stamped)
        self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
        try:
            os.fchmod(fd, PRIVATE_FILE)  # whatever the umask, and for a file written before
            written = os.write(fd, payload)
            if written != len(payload):  # a full disk; the torn line is cut at the next start
                raise OSError(f"short write to {self.results_path}: {written} of "
                              f"{len(payload)} bytes")
            os.fsync(fd)
        finally:
            os.close(fd)

    def _previous_seal(self) -> str:
        """The seal of the results file's last complete line (:data:`CHAIN_START` if none):
        a resumed sealed run goes on with the chain where it stopped."""
        last = CHAIN_START
        for _, record in self._result_lines():
            last = str(record.get(SEAL_FIELD) or last)
        return last

    def _result_lines(self) -> Iterator[tuple[int, dict[str, Any]]]:
        """(line number, record) of every complete line (a torn last line is ignored)."""
        if not self.results_path.exists():
            return
        with open(self.results_path, encoding="utf-8") as f:
            for number, line in enumerate(f, start=1):
                if not line.endswith("\n"):
                    break
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise RunFormatError(f"{self.results_path}:{number}: not JSON "
                                         f"({exc.msg})") from None
                if not isinstance(record, dict) or "episode_id" not in record:
                    raise RunFormatError(f"{self.results_path}:{number}: not a result "
                                         "record (no episode_id)")
                yield number, record

    def read_results(self) -> list[dict[str, Any]]:
        """The result records in file order (first of any duplicate id; torn last line ignored)."""
        records, seen = [], set()
        for _, record in self._result_lines():
            if record["episode_id"] in seen:
                continue
            seen.add(record["episode_id"])
            records.append(record)
        return records

    def finished_ids(self) -> set[str]:
        """Ids of the episodes that have a result line."""
        return {record["episode_id"] for record in self.read_results()}

    # ---- traces and transcripts -----------------------------------------------------------------
    def write_trace(self, episode: str, text: str) -> str:
        """Store an episode's trace; returns its path relative to the run directory."""
        relative = f"{TRACES_DIR}/{episode_file_stem(episode)}.jsonl"
        atomic_write_bytes(self.directory / relative, text.encode("utf-8"), durable=True,
                           mode=PRIVATE_FILE)
        return relative

    def write_transcript(self, episode: str, text: str) -> str:
        """Store a policy's transcript, the text :func:`transcript_json` made of it; returns
        its path relative to the run directory."""
        relative = f"{TRANSCRIPTS_DIR}/{episode_file_stem(episode)}.json"
        atomic_write_bytes(self.directory / relative, text.encode("utf-8"), durable=True,
                           mode=PRIVATE_FILE)
        return relative

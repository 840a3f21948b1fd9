"""What isolation this machine provides, which level a sandbox uses, and what it mounts.

Three levels, strongest first:

- ``namespaces``: new PID, network, IPC, UTS and mount namespaces; a private read-only root
  holding only the Python installation, the system libraries and a tmpfs scratch folder;
  every privilege dropped (an unused uid when started as root, or all capabilities inside a
  user namespace otherwise); ``no_new_privs`` and a seccomp filter.
- ``unprivileged``: started as root without namespaces: the code runs as an unused uid with
  a private scratch folder. It can still use the network and read world-readable files.
- ``none``: a plain child process with resource limits and a clean environment.

Only ``namespaces`` protects the hidden record and the network; the others are refused
unless the caller passes ``allow_weak_isolation=True``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import platform
import site
import stat
import subprocess
import sys
from pathlib import Path

from heuresis_env.errors import HeuresisError, UnknownNameError

LEVELS: tuple[str, ...] = ("namespaces", "unprivileged", "none")
ISOLATION_CHOICES: tuple[str, ...] = ("auto", *LEVELS)
REQUIRED_NAMESPACES: tuple[str, ...] = ("mount", "pid", "net", "ipc", "uts")
#: run with ``--probe`` in a throw-away interpreter to learn which namespaces can be made
PROBE_PATH = Path(__file__).with_name("linux.py")
SECCOMP_ARCHITECTURES = ("x86_64", "aarch64")
#: the environment the sandbox's interpreter starts with (it replaces it once set up)
MINIMAL_ENVIRONMENT = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8",
                       "LC_ALL": "C.UTF-8"}


class IsolationUnavailableError(HeuresisError):
    """The requested isolation cannot be provided here, or only weak isolation can and the
    caller did not opt in to it."""


@functools.lru_cache(maxsize=1)
def detect_isolation() -> dict:
    """Probe this machine once (cached): namespaces this user can create, whether it can
    drop to an unused uid, seccomp, and which isolation levels are therefore available.

    ``levels`` maps each level to the list of what it lacks (empty: available); ``best`` is
    the strongest available level."""
    info: dict = {
        "platform": sys.platform,
        "kernel": platform.release(),
        "machine": platform.machine(),
        "python": sys.version.split()[0],
        "python_executable": os.path.realpath(sys.executable) if sys.executable else None,
        "euid": os.geteuid() if hasattr(os, "geteuid") else None,
    }
    info["root"] = info["euid"] == 0
    linux = sys.platform.startswith("linux")
    info["namespaces"] = probe_namespaces() if linux else {}
    info["user_namespaces"] = info["namespaces"].get("user") == "ok"
    info["privilege_drop"] = (
        "setuid" if info["root"] else "capabilities" if info["user_namespaces"] else None
    )
    info["seccomp"] = seccomp_support() if linux else "not Linux"
    info["unreadable_python_path"] = first_path_unreadable_by_others(python_paths())
    info["cgroups"] = cgroup_version() if linux else None

    missing: dict[str, list[str]] = {level: [] for level in LEVELS}
    if not linux:
        missing["namespaces"].append(f"Linux (this is {sys.platform})")
        missing["unprivileged"].append(f"Linux (this is {sys.platform})")
    else:
        for name in REQUIRED_NAMESPACES:
            outcome = info["namespaces"].get(name, "not probed")
            if outcome != "ok":
                missing["namespaces"].append(f"{name} namespace ({outcome})")
        if info["privilege_drop"] is None:
            missing["namespaces"].append(
                "a way to drop privileges: not root, and user namespaces are unavailable "
                f"({info['namespaces'].get('user', 'not probed')})"
            )
        if not info["root"]:
            missing["unprivileged"].append("root, to switch to an unused uid")
        if info["unreadable_python_path"]:
            missing["unprivileged"].append(
                f"a Python installation readable by other users ({info['unreadable_python_path']}"
                " is not)"
            )
    if not hasattr(os, "fork"):
        missing["none"].append("os.fork")
    info["levels"] = missing
    info["best"] = next((level for level in LEVELS if not missing[level]), None)
    return info


def probe_namespaces() -> dict[str, str]:
    """Try to create each namespace in a throw-away process: ``"ok"`` or the error."""
    try:
        completed = subprocess.run(
            [sys.executable, "-I", "-S", str(PROBE_PATH), "--probe"],
            capture_output=True, text=True, timeout=60, env=MINIMAL_ENVIRONMENT,
        )
        return json.loads(completed.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return {name: f"probe failed: {exc}" for name in ("user", *REQUIRED_NAMESPACES)}


def seccomp_support() -> str:
    machine = platform.machine()
    if machine not in SECCOMP_ARCHITECTURES:
        return f"no filter for {machine}"
    try:
        with open("/proc/self/status") as f:
            if not any(line.startswith("Seccomp:") for line in f):
                return "kernel without seccomp"
    except OSError as exc:
        return f"unknown ({exc})"
    return "available"


def cgroup_version() -> str | None:
    if os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        return "v2"
    if os.path.isdir("/sys/fs/cgroup/memory"):
        return "v1"
    return None


def site_directories() -> list[str]:
    """Where this interpreter's packages live (NumPy, SciPy, scikit-learn must be there)."""
    directories = [p for p in site.getsitepackages() if os.path.isdir(p)]
    for module in ("numpy", "scipy", "sklearn"):
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin:
            directories.append(str(Path(spec.origin).parent.parent))
    return unique_outermost(os.path.realpath(p) for p in directories)


def python_paths() -> list[str]:
    paths = [os.path.realpath(sys.base_prefix), *site_directories()]
    if sys.executable:
        paths.append(os.path.dirname(os.path.realpath(sys.executable)))
    return unique_outermost(paths)


def unique_outermost(paths) -> list[str]:
    """Drop duplicates and paths inside another path of the list; keep the first order."""
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(path == c or path.startswith(c.rstrip("/") + "/") for c in chosen):
            chosen.append(path)
    return chosen


def first_path_unreadable_by_others(paths: list[str]) -> str | None:
    """The first path (or ancestor) that an unrelated uid could not read or enter."""
    for path in paths:
        current = Path(path)
        for directory in [*reversed(current.parents), current]:
            try:
                mode = os.stat(directory).st_mode
            except OSError:
                return str(directory)
            needed = stat.S_IXOTH | (stat.S_IROTH if directory == current else 0)
            if mode & needed != needed:
                return str(directory)
    return None


def sandbox_mounts(forbidden: list[str]) -> dict:
    """What the private root holds: read-only binds, symlinks, single files, the interpreter's
    package folders, the copies of this project's packages to cover, and where the scratch
    folder goes (:func:`root_layout`). Refuses to bind any folder holding a ``forbidden`` path
    (the cache with the hidden records, the sandbox's own private folder)."""
    binds = python_paths()
    symlinks: dict[str, str] = {}
    for top in ("/usr", "/lib", "/lib64", "/lib32", "/libx32", "/bin", "/sbin"):
        if os.path.islink(top):
            symlinks[top] = os.readlink(top)
        elif os.path.isdir(top):
            binds.append(top)
    binds = unique_outermost(binds)
    for path in binds:
        for secret in forbidden:
            secret = os.path.realpath(secret)
            if secret == path or secret.startswith(path.rstrip("/") + "/"):
                raise IsolationUnavailableError(
                    f"the sandbox would expose {secret} through the read-only folder {path} "
                    "it needs for Python; move the cache (HEURESIS_CACHE_DIR) or the Python "
                    "installation so that neither contains the other"
                )
    files = [p for p in ("/etc/ld.so.cache", "/etc/localtime") if os.path.isfile(p)]
    hidden_dirs, hidden_files = own_package_copies(binds, import_directories(binds))
    return {"read_only_binds": binds, "symlinks": symlinks, "read_only_files": files,
            "site_dirs": site_directories(), "hidden_dirs": hidden_dirs,
            "hidden_files": hidden_files, "own_packages": list(OWN_PACKAGES),
            **root_layout(binds)}


#: this project's packages: their generators could rebuild a hidden record from the data
OWN_PACKAGES: tuple[str, ...] = ("heuresis_env", "agents", "baselines")
#: the project's distribution name: its eggs and wheels are covered too
OWN_DISTRIBUTION = "heuresis"
#: the sandbox's own entries in its private root, besides the binds
SCRATCH_CANDIDATES = ("/scratch", "/sandbox-scratch", "/heuresis-scratch")


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def root_layout(binds: list[str]) -> dict:
    """Where the scratch folder is mounted and which convenience links the private root gets,
    so that no host path the sandbox binds collides with them: a Python under ``/tmp``,
    ``/scratch`` or ``/dev/shm`` keeps its own path. A link (``/tmp -> /scratch``) that would
    sit above a bind is replaced by a second view of the scratch folder (``scratch_views``:
    the same tmpfs, so the same size limit), which the bind is then mounted into; code that
    writes to ``/tmp`` works wherever the host's Python lives."""

    def collides(path: str) -> bool:
        return any(_inside(bind, path) or _inside(path, bind) for bind in binds)

    scratch = next((c for c in SCRATCH_CANDIDATES if not collides(c)), None)
    if scratch is None:
        raise IsolationUnavailableError(
            f"every scratch location {list(SCRATCH_CANDIDATES)} collides with a folder the "
            "sandbox binds for Python; move the Python installation")
    links = {"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
             "/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2",
             "/dev/shm": scratch, "/tmp": scratch}
    views = [folder for folder in ("/tmp", "/dev/shm")
             if collides(folder) and not any(_inside(folder, bind) for bind in binds)]
    return {"scratch_dir": scratch,
            "root_links": {link: target for link, target in links.items()
                           if not collides(link)},
            "scratch_views": views}


def import_directories(binds: list[str]) -> list[str]:
    """Every folder inside ``binds`` that code could import from: this interpreter's
    ``sys.path`` entries, its site folders (user site included), and every ``site-packages``
    or ``dist-packages`` of the bound Python installations."""
    candidates = [p for p in sys.path if p] + site.getsitepackages()
    user_site = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user_site:
        candidates.append(user_site)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr", "/usr/local"}:
        for pattern in (f"lib*/{version}/site-packages", f"lib*/{version}/dist-packages",
                        "lib*/python3/dist-packages", "lib*/python3*/site-packages"):
            candidates += [str(p) for p in Path(prefix).glob(pattern)]
    found = []
    for path in candidates:
        real = os.path.realpath(path)
        if os.path.isdir(real) and any(_inside(real, bind) for bind in binds):
            found.append(real)
    return sorted(set(found))


def own_package_copies(binds: list[str], directories: list[str]) -> tuple[list[str], list[str]]:
    """Every copy of this project's packages the private root would expose, as (folders,
    files) to cover: a package folder or module, and the project's eggs, wheels and zips, in
    each import folder (a regular install puts them in site-packages; several installs, or a
    checkout beside an install, leave several)."""
    folders: list[str] = []
    files: list[str] = []
    for directory in directories:
        try:
            entries = os.listdir(directory)
        except OSError:
            continue
        for entry in entries:
            stem = entry.split(".", 1)[0]
            own = stem in OWN_PACKAGES or (
                entry.startswith(OWN_DISTRIBUTION + "-")
                and entry.endswith((".egg", ".whl", ".zip")))
            if not own:
                continue
            path = os.path.realpath(os.path.join(directory, entry))
            if not any(_inside(path, bind) for bind in binds):
                continue
            (folders if os.path.isdir(path) else files).append(path)
    return unique_outermost(folders), sorted(set(files))


def own_package_directories(binds: list[str]) -> list[str]:
    """The folders of this project's packages that a read-only bind of ``binds`` exposes."""
    return own_package_copies(binds, import_directories(binds))[0]


def resolve_isolation(isolation: str, allow_weak_isolation: bool) -> tuple[str, str]:
    """The level to use and how privileges are dropped, or a clear refusal."""
    if isolation not in ISOLATION_CHOICES:
        raise UnknownNameError("isolation level", isolation, ISOLATION_CHOICES)
    info = detect_isolation()
    levels = info["levels"]
    level = info["best"] if isolation == "auto" else isolation
    if level is None:
        raise IsolationUnavailableError(
            "no sandbox can run on this machine: " + "; ".join(levels["none"])
        )
    if levels[level]:
        raise IsolationUnavailableError(
            f"isolation {level!r} is not available here; it lacks "
            f"{'; '.join(levels[level])}. The strongest available level is {info['best']!r}. "
            "Run `heuresis doctor` for the full report."
        )
    if level != "namespaces" and not allow_weak_isolation:
        lacking = "; ".join(levels["namespaces"]) or "nothing (it was not requested)"
        raise IsolationUnavailableError(
            f"refusing to run untrusted code with isolation {level!r}: the code could use the "
            "network and read any file its user can read, including hidden records. Full "
            f"isolation ('namespaces') lacks: {lacking}. Run `heuresis doctor` for details; to "
            "accept the weaker isolation, pass allow_weak_isolation=True."
        )
    privilege = {"namespaces": info["privilege_drop"], "unprivileged": "setuid",
                 "none": "none"}[level]
    return level, privilege


def describe_level(level: str, privilege: str) -> str:
    if level == "namespaces":
        drop = ("an unused uid" if privilege == "setuid"
                else "no capabilities, inside a user namespace")
        return f"namespaces (pid, net, mount, ipc, uts; private read-only root; {drop})"
    if level == "unprivileged":
        return "unprivileged (an unused uid; shares the network and the file system)"
    return "none (a plain child process with resource limits)"

"""The policy process's confinement (``--policy-isolation namespaces``) and its process-tree
supervisor (``--policy-isolation process``).

Confined, a policy process runs

- in new PID, mount, IPC and network namespaces (and a user namespace when the runner is not
  root); the network namespace's only interface is loopback (up, so a policy may still talk to
  a server it starts itself). A policy declared to need API endpoints reaches them, and only
  them, through the runner's :class:`~heuresis_env.isolation.endpoint_proxy.EndpointProxy`:
  its Unix socket's folder is carried in, and a relay on the namespace's ``127.0.0.1``
  (``HTTPS_PROXY``/``HTTP_PROXY``) leads to it;
- with every mount of the machine read-only (``mount_setattr``, recursively): the project,
  the virtual environment, the interpreter, the standard library, ``/etc``, ``/root``, …
  cannot be written, so no policy can plant code that the runner imports later;
- with a private, empty ``/tmp`` (also ``/var/tmp``, ``/dev/shm`` and the runner's temporary
  folder): no worker's runner folder (``heuresis-runner-*``) nor any other file there is
  visible. The folders the policy needs to run (``sys.path``, the interpreter, the working
  folder) are carried over, read-only, where they lie under a covered folder;
- as an unprivileged user: started by root, a dedicated uid per policy (``POLICY_UID_BASE`` +
  a hash of the policy's spec), so the discretionary permissions of every root-owned file
  apply too, and folders not readable by others (``/root``) are covered except for the
  carried-over paths; otherwise its own uid in a user namespace, without capabilities;
- with its own cache folder the only writable place besides its private ``/tmp``;
- with the runner's hidden paths (the runner's cache, the run directory, its work folder, a
  data table's graph file) covered, without capabilities, with ``no_new_privs`` and the seccomp
  filter of :func:`~heuresis_env.env.sandbox.child.install_seccomp_filter`.

Unconfined (``process``), the policy process is a child of a small supervisor that is a
*child subreaper* (``PR_SET_CHILD_SUBREAPER``): every process the policy starts, however it
forks or detaches (``setsid``, double fork), stays below the supervisor, which kills the whole
tree when the runner ends the policy (``SIGTERM`` to the supervisor) before it exits itself.
"""

from __future__ import annotations

import ctypes
import fcntl
import importlib.util
import os
import signal
import socket
import stat
import struct
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from heuresis_env.isolation import linux
from heuresis_env.isolation.endpoint_proxy import PROXY_VARIABLES, proxy_environment, start_relay
from heuresis_env.isolation.processes import kill_descendants

#: uids of confined policy processes started by root: this base plus 24 bits of the spec's hash
POLICY_UID_BASE = 1_700_000_000
#: folders every confined policy gets a private, empty copy of (besides the runner's temp folder)
PRIVATE_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm")
#: the private /tmp's size
PRIVATE_TMP_SIZE = "2g"
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _AT_RECURSIVE, _O_CLOEXEC = 1, 0x8000, 0o2000000
_MOVE_MOUNT_F_EMPTY_PATH, _AT_FDCWD, _AT_EMPTY_PATH = 0x4, -100, 0x1000
_MOUNT_ATTR_RDONLY = 0x1
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_KEEPCAPS = 8
#: the one capability a supervisor started by root keeps: killing its policy's tree
CAP_KILL = 5
#: the uid a supervisor started by root runs as: no policy's (they keep root's uid at the
#: process level, or run as ``policy_uid`` in their own PID namespace), so no policy may
#: signal it
SUPERVISOR_UID = POLICY_UID_BASE - 1
_SIOCGIFFLAGS, _SIOCSIFFLAGS, _IFF_UP = 0x8913, 0x8914, 0x1


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _syscall(number: int, *args: Any) -> int:
    lib = linux.libc()
    lib.syscall.restype = ctypes.c_long
    return int(lib.syscall(ctypes.c_long(number), *args))


def _set_read_only(path: str, read_only: bool, recursive: bool) -> None:
    attr = _MountAttr(_MOUNT_ATTR_RDONLY if read_only else 0,
                      0 if read_only else _MOUNT_ATTR_RDONLY, 0, 0)
    linux.check(_syscall(_SYS_MOUNT_SETATTR, ctypes.c_int(_AT_FDCWD),
                                 ctypes.c_char_p(path.encode()),
                                 ctypes.c_uint(_AT_RECURSIVE if recursive else 0),
                                 ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))),
                        f"mount_setattr({path}, {'read-only' if read_only else 'writable'})")


def _clone_tree(path: str) -> int:
    """A detached copy of the mounts at ``path`` (with the mounts below it)."""
    return linux.check(_syscall(
        _SYS_OPEN_TREE, ctypes.c_int(_AT_FDCWD), ctypes.c_char_p(path.encode()),
        ctypes.c_uint(_OPEN_TREE_CLONE | _AT_RECURSIVE | _O_CLOEXEC)), f"open_tree({path})")


def _attach_tree(fd: int, path: str) -> None:
    linux.check(_syscall(
        _SYS_MOVE_MOUNT, ctypes.c_int(fd), ctypes.c_char_p(b""), ctypes.c_int(_AT_FDCWD),
        ctypes.c_char_p(path.encode()), ctypes.c_uint(_MOVE_MOUNT_F_EMPTY_PATH)),
        f"move_mount(→ {path})")
    os.close(fd)


def policy_uid(spec_key: str) -> int:
    """The dedicated uid of a policy's processes when the runner is root."""
    return POLICY_UID_BASE + int(spec_key[:6], 16)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _outermost(paths: Iterable[str]) -> list[str]:
    chosen: list[str] = []
    for path in sorted(set(paths), key=len):
        if not any(_inside(path, c) for c in chosen):
            chosen.append(path)
    return chosen


def _closed_ancestors(path: str) -> list[str]:
    """Folders above ``path`` (not ``/``) that an unrelated uid cannot enter."""
    closed = []
    parts = path.strip("/").split("/")
    for depth in range(1, len(parts)):
        folder = "/" + "/".join(parts[:depth])
        try:
            if not os.stat(folder).st_mode & stat.S_IXOTH:
                closed.append(folder)
        except OSError:
            break
    return closed


def _package_roots() -> list[str]:
    """The folders an editable install maps this project's packages to (its finder answers
    for them without their folder on ``sys.path``): the policy process imports from there."""
    roots = []
    for name in ("heuresis_env", "agents", "baselines", "heuresis", "tests"):
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        for location in (spec.submodule_search_locations or []) if spec else []:
            roots.append(os.path.dirname(os.path.abspath(location)))
    return roots


def runtime_paths() -> list[str]:
    """What a policy process needs to read to run: ``sys.path``, the interpreter and its
    prefixes (real paths; the working folder is added by the caller)."""
    paths = [*sys.path, sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable or "/usr/bin/python3")),
             *_package_roots()]
    found = []
    for path in paths:
        if path and os.path.exists(path):
            found.append(os.path.realpath(path))
            if os.path.islink(path) or os.path.realpath(path) != os.path.abspath(path):
                found.append(os.path.abspath(path))
    return found


def confine(config: Mapping[str, Any]) -> None:
    """Enter the confinement described in the module docstring (this process and its fork):
    the forked child is PID 1 of the new PID namespace and goes on; this process waits for it
    and exits with its status."""
    lib = linux.libc()
    privilege = config["privilege"]
    flags = linux.CLONE_NEWPID | linux.CLONE_NEWNS | linux.CLONE_NEWIPC | linux.CLONE_NEWNET
    uid, gid = os.getuid(), os.getgid()
    if privilege == "capabilities":
        flags |= linux.CLONE_NEWUSER
    linux.check(lib.unshare(flags), "unshare(pid, mount, ipc, net namespaces)")
    if privilege == "capabilities":
        for path, text in (("/proc/self/setgroups", "deny"), ("/proc/self/uid_map",
                                                               f"{uid} {uid} 1"),
                           ("/proc/self/gid_map", f"{gid} {gid} 1")):
            with open(path, "w") as f:
                f.write(text)
    pid = os.fork()
    if pid:  # end as PID 1 ended: with its exit code, or by its signal
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
            os.kill(os.getpid(), os.WTERMSIG(status))
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
    _loopback_up()
    _build_mounts(config, privilege)
    os.chdir(config["cwd"])  # resolve the working folder again, under the new mounts
    home = "/tmp/home"
    os.makedirs(home, exist_ok=True)
    os.environ.update(HOME=home, TMPDIR="/tmp")
    if privilege == "setuid":
        target = int(config["uid"])
        os.chown(home, target, target)
        linux.drop_bounding_set()
        os.setgroups([])
        os.setresgid(target, target, target)
        os.setresuid(target, target, target)  # every capability goes with uid 0
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # reset by setuid
    else:
        linux.drop_capabilities()
    linux.check(linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1),
                        "prctl(PR_SET_NO_NEW_PRIVS)")
    linux.install_seccomp_filter(("ptrace", "process_vm_readv", "process_vm_writev"),
                                         namespaces=False)
    for name in ("NO_PROXY", "no_proxy"):  # the endpoints are reached through the relay only
        os.environ.pop(name, None)
    for name in PROXY_VARIABLES:
        os.environ.pop(name, None)
    if config.get("proxy"):
        os.environ.update(proxy_environment(start_relay(str(config["proxy"]))))


def _loopback_up() -> None:
    """Bring up the new network namespace's loopback interface (its only one)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        request = struct.pack("16sh14x", b"lo", 0)
        flags = struct.unpack("16sh14x", fcntl.ioctl(probe, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(probe, _SIOCSIFFLAGS, struct.pack("16sh14x", b"lo", flags | _IFF_UP))


def _build_mounts(config: Mapping[str, Any], privilege: str) -> None:
    mount, ms = linux.mount, linux
    mount(None, "/", None, ms.MS_REC | ms.MS_PRIVATE)
    _set_read_only("/", True, recursive=True)
    mount("proc", "/proc", "proc", ms.MS_NOSUID | ms.MS_NODEV | ms.MS_NOEXEC)
    readable = [p for p in config.get("readable", ()) if os.path.exists(p)]
    writable = [p for p in config.get("writable", ()) if os.path.isdir(p)]
    covered = [p for p in (*PRIVATE_FOLDERS, *config.get("private", ())) if os.path.isdir(p)]
    closed = sorted({c for p in (*readable, *writable) for c in _closed_ancestors(p)}) \
        if privilege == "setuid" else []
    covers = _outermost([*covered, *closed])
    kept = [p for p in _outermost([*readable, *writable])
            if any(_inside(p, c) and p != c for c in covers)]
    clones = [(path, os.path.isdir(path), _clone_tree(path)) for path in kept]
    for folder in covers:
        private = folder in covered
        mount("tmpfs", folder, "tmpfs", ms.MS_NOSUID | ms.MS_NODEV,
              f"size={PRIVATE_TMP_SIZE},mode=1777" if private else "size=1m,mode=0755")
    os.umask(0o022)  # mount points in the private tmpfs: traversable by the policy's uid
    for path, is_folder, fd in clones:
        if is_folder:
            os.makedirs(path, exist_ok=True)
        else:  # a file on sys.path (a zip): an empty file to mount it on
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "a").close()  # noqa: SIM115 - a mount point in the private tmpfs
        _attach_tree(fd, path)
    for folder in covers:
        if folder not in covered:
            _set_read_only(folder, True, recursive=False)
    for path in writable:  # its own cache folder: a writable view of it
        mount(path, path, None, ms.MS_BIND)
        _set_read_only(path, False, recursive=False)
    for path in config.get("hidden", ()):
        if os.path.isdir(path):
            mount("tmpfs", path, "tmpfs", ms.MS_RDONLY | ms.MS_NOSUID | ms.MS_NODEV
                  | ms.MS_NOEXEC, "size=4k,mode=0555")
        elif os.path.exists(path):  # a file (a data table's true graph): /dev/null over it
            mount("/dev/null", path, None, ms.MS_BIND)
            mount(None, path, None, ms.MS_REMOUNT | ms.MS_BIND | ms.MS_RDONLY)


# ---- the process-tree supervisor --------------------------------------------------------------

def _become_supervisor_uid() -> None:
    """Started by root, the supervisor runs as :data:`SUPERVISOR_UID` keeping ``CAP_KILL``
    only: its policy (root's uid, no capability) cannot signal it — another uid — so cannot
    kill it first to orphan its tree, and it can still kill that tree."""
    linux.drop_bounding_set()
    os.setgroups([])
    os.setresgid(SUPERVISOR_UID, SUPERVISOR_UID, SUPERVISOR_UID)
    linux.check(linux.prctl(_PR_SET_KEEPCAPS, 1), "prctl(PR_SET_KEEPCAPS)")
    os.setresuid(SUPERVISOR_UID, SUPERVISOR_UID, SUPERVISOR_UID)
    linux.keep_only_capabilities(1 << CAP_KILL)
    linux.prctl(linux.PR_SET_DUMPABLE, 0)


def supervise(run_policy: Any) -> None:
    """Become a child subreaper, run ``run_policy()`` in a forked child, and on ``SIGTERM``,
    on the child's exit or on the runner's death kill the whole tree below; exit with the
    child's status.

    Started by root, the policy keeps root's uid without any capability and the supervisor
    becomes :data:`SUPERVISOR_UID` with ``CAP_KILL`` only, so the policy cannot kill its
    supervisor before leaving a daemon (issue 46, route 4).

    The runner's death (or its launcher's) reaches the supervisor as ``SIGTERM`` — its
    parent-death signal, which it handles by killing the tree first — not as ``SIGKILL``,
    which would orphan the tree (its orphans would go to init, alive)."""
    parent = os.getppid()
    linux.check(linux.prctl(_PR_SET_CHILD_SUBREAPER, 1),
                        "prctl(PR_SET_CHILD_SUBREAPER)")
    linux.prctl(linux.PR_SET_DUMPABLE, 0)  # the policy cannot trace it
    as_root = os.geteuid() == 0 and sys.platform.startswith("linux")
    child = os.fork()
    if child == 0:
        if as_root:  # the policy keeps root's uid (it reads root's Python) and nothing else
            try:
                linux.drop_capabilities()
            except linux.SetupError:
                pass
        linux.prctl(linux.PR_SET_DUMPABLE, 1)
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
        run_policy()
        os._exit(0)
    if as_root:
        _become_supervisor_uid()
    ended: dict[str, int | None] = {"status": None}

    def stop(signum: int, frame: Any) -> None:  # noqa: ARG001 - signal handler
        kill_descendants()
        os._exit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGTERM)  # replaces SIGKILL: kill the tree first
    if os.getppid() != parent:  # the parent died before the line above
        stop(signal.SIGTERM, None)
    os.closerange(3, 65536)  # the supervisor keeps no pipe of the runner: only the policy
    while ended["status"] is None:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        if pid == child:
            ended["status"] = status
    kill_descendants()
    status = ended["status"] or 0
    if os.WIFSIGNALED(status):
        signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) & 0xFF)


__all__ = ["POLICY_UID_BASE", "PRIVATE_FOLDERS", "confine", "kill_descendants", "policy_uid",
           "runtime_paths", "supervise"]

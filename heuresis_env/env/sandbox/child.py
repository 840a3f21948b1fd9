"""The inside of the code sandbox: a supervisor process and the sandboxed process it forks.

Started by :mod:`heuresis_env.env.sandbox.runner` as a fresh interpreter
(``python -I -S -B child.py CONFIG RESULT_FD SCRATCH``) with a clean environment, so it
shares no memory, environment variable or file descriptor with the environment process.
It imports only the standard library until the sandbox is sealed, because it must keep
working after the file system is replaced by a private root.

The **supervisor** (this file's ``main``) creates the new namespaces (PID, network, IPC,
UTS and, when not root, user), forks the **sandboxed process** and reports how it ended
(exit code or signal, CPU time, peak memory) on the result channel. The sandboxed process,
PID 1 of its own PID namespace, builds a private root in a new mount namespace (read-only
binds of the Python installation and system libraries, a fresh ``/proc``, a size-limited
tmpfs scratch folder), pivots into it, drops every privilege (an unused uid, or all
capabilities inside a user namespace), sets ``no_new_privs`` and a seccomp filter, imports
NumPy, loads the data, and reports READY. It then reads the code from stdin, applies the
resource limits, runs it, and reports the outcome.

Result channel (one line each, ``KIND JSON``): ``READY``, ``SETUP_ERROR`` or ``RESULT`` from
the sandboxed process, then ``EXIT`` from the supervisor.

``python child.py --probe`` prints which namespaces this user can create (JSON).
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import signal
import struct
import sys
import time

# --- Linux constants (include/uapi/linux/{sched,mount,prctl,capability,seccomp}.h) -------------
CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = {
    "user": CLONE_NEWUSER,
    "mount": CLONE_NEWNS,
    "pid": CLONE_NEWPID,
    "net": CLONE_NEWNET,
    "ipc": CLONE_NEWIPC,
    "uts": CLONE_NEWUTS,
}
# clone(2) flags that create a namespace (CLONE_NEWTIME shares the exit-signal byte of
# clone's flags and exists only for clone3 and unshare, both denied outright)
ANY_NAMESPACE = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID
    | CLONE_NEWNET
)

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2
# statvfs f_flag bit → the mount flag that must be kept when remounting a bind (bwrap does
# the same: inside a user namespace, dropping a locked flag makes the remount fail)
STATVFS_TO_MOUNT_FLAGS = (
    (os.ST_NOSUID, MS_NOSUID),
    (os.ST_NODEV, MS_NODEV),
    (os.ST_NOEXEC, MS_NOEXEC),
    (os.ST_NOATIME, MS_NOATIME),
    (os.ST_NODIRATIME, MS_NODIRATIME),
    (os.ST_RELATIME, MS_RELATIME),
)

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
# SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_KEEP_CAPS_LOCKED
# | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED
LOCKED_SECUREBITS = 0x01 | 0x02 | 0x20 | 0x40 | 0x80
LINUX_CAPABILITY_VERSION_3 = 0x20080522

SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}

# --- seccomp: syscalls the sandbox never needs and that widen the kernel's attack surface -----
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
DENIED_SYSCALLS = {
    "x86_64": {
        "ptrace": 101, "syslog": 103, "pivot_root": 155, "chroot": 161, "acct": 163,
        "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169,
        "sethostname": 170, "setdomainname": 171, "iopl": 172, "ioperm": 173,
        "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212,
        "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
        "perf_event_open": 298, "fanotify_init": 300, "name_to_handle_at": 303,
        "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
        "process_vm_writev": 311, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
        "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
        "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430,
        "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
    },
    "aarch64": {
        "lookup_dcookie": 18, "umount2": 39, "mount": 40, "pivot_root": 41, "chroot": 51,
        "quotactl": 60, "acct": 89, "unshare": 97, "kexec_load": 104, "init_module": 105,
        "delete_module": 106, "syslog": 116, "ptrace": 117, "reboot": 142,
        "sethostname": 161, "setdomainname": 162, "add_key": 217, "request_key": 218,
        "keyctl": 219, "swapon": 224, "swapoff": 225, "perf_event_open": 241,
        "fanotify_init": 262, "name_to_handle_at": 264, "open_by_handle_at": 265,
        "setns": 268, "process_vm_readv": 270, "process_vm_writev": 271,
        "finit_module": 273, "bpf": 280, "userfaultfd": 282, "kexec_file_load": 294,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442,
    },
}
SYS_CLONE = {"x86_64": 56, "aarch64": 220}
SYS_PRCTL = {"x86_64": 157, "aarch64": 167}
SYS_CLONE3 = 435  # same number on both
X32_SYSCALL_BIT = 0x40000000
SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000
EPERM, ENOSYS = 1, 38
BPF_LD_W_ABS, BPF_JEQ_K, BPF_JGE_K, BPF_JSET_K, BPF_RET_K = 0x20, 0x15, 0x35, 0x45, 0x06

_libc = None


def libc():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


class SetupError(RuntimeError):
    """A step of building the sandbox failed; no untrusted code runs after this."""


def check(result: int, what: str) -> int:
    if result == -1:
        errno = ctypes.get_errno()
        raise SetupError(f"{what} failed: {os.strerror(errno)} (errno {errno})")
    return result


def prctl(option: int, arg2: int = 0, arg3: int = 0, arg4: int = 0, arg5: int = 0) -> int:
    lib = libc()
    lib.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    return lib.prctl(option, arg2, arg3, arg4, arg5)


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    lib = libc()
    lib.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                          ctypes.c_char_p]
    def encoded(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    check(lib.mount(encoded(source), encoded(target), encoded(fstype), flags,
                    data.encode() or None), f"mount {source or fstype} on {target}")


def send(fd: int, kind: str, payload: dict) -> None:
    """Write one ``KIND JSON`` line to the result channel, all of it."""
    data = (kind + " " + json.dumps(payload) + "\n").encode()
    while data:
        written = os.write(fd, data)
        data = data[written:]


# ------------------------------------------------------------------------------------------
# Supervisor
# ------------------------------------------------------------------------------------------


def main(argv: list[str]) -> None:
    if argv[1:2] == ["--probe"]:
        print(json.dumps(probe_namespaces()))
        return
    config_path, result_fd, scratch = argv[1], int(argv[2]), argv[3]
    with open(config_path) as f:
        config = json.load(f)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the sandbox dies with the environment
    try:
        if config["mode"] == "namespaces":
            enter_namespaces(config["privilege"])
        child_pid = os.fork()
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none is raised
        send(result_fd, "SETUP_ERROR", {"error": f"{type(exc).__name__}: {exc}"})
        os._exit(70)
    if child_pid == 0:
        code = 70
        try:
            code = sandboxed_main(config, result_fd, scratch)
        except BaseException as exc:  # noqa: BLE001
            try:
                send(result_fd, "SETUP_ERROR", {"error": f"{type(exc).__name__}: {exc}"})
            except OSError:
                pass
        finally:
            os._exit(code)
    for fd in (0, 1, 2):  # only the sandboxed process talks on these
        os.close(fd)
    _, status, usage = os.wait4(child_pid, 0)
    if config["mode"] == "unprivileged":
        kill_uid(config["uid_base"] + child_pid)
    report = {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else None,
        "signal": os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "max_rss_bytes": usage.ru_maxrss * 1024,
    }
    try:
        send(result_fd, "EXIT", report)
    finally:
        os._exit(0)


def enter_namespaces(privilege: str) -> None:
    """Unshare everything but the mount namespace (the sandboxed process takes that one)."""
    flags = CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    uid, gid = os.getuid(), os.getgid()
    if privilege == "capabilities":
        flags |= CLONE_NEWUSER
    check(libc().unshare(flags), "unshare(pid, net, ipc, uts namespaces)")
    if privilege == "capabilities":  # map our uid to root inside; nothing else exists there
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"0 {uid} 1"),
            ("/proc/self/gid_map", f"0 {gid} 1"),
        ):
            with open(path, "w") as f:
                f.write(text)


def kill_uid(uid: int) -> None:
    """Kill every process left by the sandbox's uid (no PID namespace to do it for us)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            os.kill(-1, signal.SIGKILL)  # every process this uid may signal, i.e. its own
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


def probe_namespaces() -> dict[str, str]:
    """Which namespaces can be created: ``"ok"`` or the error, each tried in a fresh fork."""
    extra = 0 if os.geteuid() == 0 else CLONE_NEWUSER
    outcome = {}
    for name, flag in NAMESPACE_FLAGS.items():
        pid = os.fork()
        if pid == 0:
            rc = libc().unshare(flag | extra)
            os._exit(0 if rc == 0 else (ctypes.get_errno() or 1))
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        outcome[name] = "ok" if code == 0 else os.strerror(code) if code > 0 else f"signal {-code}"
    return outcome


# ------------------------------------------------------------------------------------------
# The sandboxed process
# ------------------------------------------------------------------------------------------


def sandboxed_main(config: dict, result_fd: int, scratch: str) -> int:
    started = time.monotonic()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    mode, privilege, limits = config["mode"], config["privilege"], config["limits"]
    notes: list[str] = []
    with open(config["data_path"], "rb") as f:  # read while the host file system is visible
        data_bytes = f.read()
    host_pid = int(os.readlink("/proc/self")) if mode != "none" else os.getpid()
    uid = config["uid_base"] + host_pid if privilege == "setuid" else os.getuid()

    if mode == "namespaces":
        build_private_root(config, uid if privilege == "setuid" else 0, notes)
        scratch = config["scratch_dir"]
    else:
        os.makedirs(scratch, mode=0o700, exist_ok=False)
        if privilege == "setuid":
            os.chown(scratch, uid, uid)
    os.chdir(scratch)

    if privilege == "setuid":
        drop_bounding_set()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root to an unused uid: every capability is gone
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of credentials clears it
    elif privilege == "capabilities":
        drop_capabilities()
    check(prctl(PR_SET_NO_NEW_PRIVS, 1), "prctl(PR_SET_NO_NEW_PRIVS)")
    seccomp = install_seccomp_filter() if config["seccomp"] else "not requested"
    if seccomp != "installed":
        notes.append(f"seccomp filter: {seccomp}")

    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    environment = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch,
        "TMPDIR": scratch,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": scratch,
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "VECLIB_MAXIMUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    os.environ.clear()
    os.environ.update(environment)
    sys.path.extend(config["site_dirs"])
    sys.dont_write_bytecode = True
    if mode == "namespaces":
        reachable = reachable_packages(config["own_packages"])
        if reachable:
            raise SetupError(
                "refusing to run: this project's code is importable inside the sandbox "
                f"({'; '.join(reachable)}), and its generators could rebuild hidden records. "
                "Install the project so that the sandbox can cover it (a regular or editable "
                "install), or report the layout")
    if config.get("python_executable"):
        sys.executable = config["python_executable"]

    import importlib
    import io

    for module in config["preload"]:
        importlib.import_module(module)
    import numpy as np

    X = np.load(io.BytesIO(data_bytes), allow_pickle=False)
    del data_bytes
    names = list(config["names"])

    # limits: memory, processes (threads count too), file size, open files
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["max_processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_size_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)

    send(result_fd, "READY", {
        "uid": uid, "host_pid": host_pid, "setup_seconds": time.monotonic() - started,
        "notes": notes,
    })
    code_bytes = read_all(0)
    null = os.open("/dev/null", os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    outcome = run_user_code(code_bytes.decode("utf-8", errors="replace"), X, names, np, limits)
    send(result_fd, "RESULT", outcome)
    return 0


def reachable_packages(names: list[str]) -> list[str]:
    """The packages among ``names`` whose code the import system can reach from here: a
    module file that can be read, or a package folder that is not empty."""
    import importlib.util

    reachable = []
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except Exception:  # noqa: BLE001 - unreadable or broken: not importable
            continue
        if spec is None:
            continue
        if spec.has_location and spec.origin:
            try:
                with open(spec.origin, "rb") as f:
                    f.read(1)
                reachable.append(f"{name} at {spec.origin}")
                continue
            except OSError:
                pass
        for location in spec.submodule_search_locations or []:
            try:
                if os.listdir(location):
                    reachable.append(f"{name} at {location}")
            except OSError:
                continue
    return reachable


def read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def build_private_root(config: dict, inside_uid: int, notes: list[str]) -> None:
    """Build the sandbox's file system in a new mount namespace and pivot into it."""
    check(libc().unshare(CLONE_NEWNS), "unshare(mount namespace)")
    mount(None, "/", None, MS_REC | MS_PRIVATE)  # nothing propagates back to the host
    root = config["root_dir"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")

    def inside(path: str) -> str:
        return root + path

    scratch = config["scratch_dir"]
    os.makedirs(inside(scratch), mode=0o700)
    owner = f",uid={inside_uid},gid={inside_uid}" if inside_uid else ""
    mount("tmpfs", inside(scratch), "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={config['limits']['scratch_bytes']},mode=0700{owner}")
    for view in config.get("scratch_views", []):  # /tmp holding a bound Python: the scratch
        os.makedirs(inside(view), mode=0o755, exist_ok=True)  # again, binds mounted into it
        mount(inside(scratch), inside(view), None, MS_BIND)
    for path in config["read_only_binds"]:
        os.makedirs(inside(path), mode=0o755, exist_ok=True)
        bind(path, inside(path), read_only=True)
    for path in config.get("hidden_dirs", []):  # e.g. heuresis_env in site-packages
        mount("tmpfs", inside(path), "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "size=4k,mode=0555")
    for path in config.get("hidden_files", []):  # a module, egg or wheel of the project
        bind(config["unreadable_file"], inside(path), read_only=True)
    for link, target in config["symlinks"].items():
        os.symlink(target, inside(link))
    os.makedirs(inside("/etc"), mode=0o755, exist_ok=True)
    for path in config["read_only_files"]:
        os.makedirs(os.path.dirname(inside(path)), mode=0o755, exist_ok=True)
        open(inside(path), "w").close()
        bind(path, inside(path), read_only=True)
    os.makedirs(inside("/dev"), mode=0o755, exist_ok=True)  # a bind may lie in /dev/shm
    for device in ("null", "zero", "full", "random", "urandom"):
        open(inside(f"/dev/{device}"), "w").close()
        bind(f"/dev/{device}", inside(f"/dev/{device}"), read_only=False)
    for link, target in config["root_links"].items():  # none sits on or above a bind
        os.symlink(target, inside(link))
    user = "sandbox"
    with open(inside("/etc/passwd"), "w") as f:
        f.write(f"root:x:0:0:root:/nonexistent:/bin/false\n"
                f"{user}:x:{inside_uid}:{inside_uid}:{user}:{config['scratch_dir']}:/bin/false\n")
    with open(inside("/etc/group"), "w") as f:
        f.write(f"root:x:0:\n{user}:x:{inside_uid}:\n")
    with open(inside("/etc/hosts"), "w") as f:
        f.write("127.0.0.1 localhost\n")
    with open(inside("/etc/hostname"), "w") as f:
        f.write("sandbox\n")

    os.makedirs(inside("/proc"), mode=0o555)
    try:  # this PID namespace's own /proc: the sandbox sees only its processes
        mount("proc", inside("/proc"), "proc", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except SetupError as exc:
        notes.append(f"no /proc inside the sandbox ({exc})")

    hostname = b"sandbox"
    check(libc().sethostname(hostname, len(hostname)), "sethostname")
    os.chdir(root)
    machine = platform.machine()
    if machine in SYS_PIVOT_ROOT:
        check(libc().syscall(SYS_PIVOT_ROOT[machine], b".", b"."), "pivot_root")
        check(libc().umount2(b".", MNT_DETACH), "detaching the host's root")
    else:  # unknown syscall number: chroot holds once every capability is dropped
        os.chroot(".")
        notes.append("chroot instead of pivot_root (unknown architecture)")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def bind(source: str, target: str, read_only: bool) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID
    for statvfs_flag, mount_flag in STATVFS_TO_MOUNT_FLAGS:
        if os.statvfs(source).f_flag & statvfs_flag:
            flags |= mount_flag
    flags |= (MS_RDONLY | MS_NODEV) if read_only else MS_NOEXEC
    mount(None, target, None, flags)


def drop_bounding_set() -> None:
    """Empty the capability bounding set, so that no later execve can grant a capability."""
    try:
        with open("/proc/sys/kernel/cap_last_cap") as f:
            last_cap = int(f.read())
    except OSError:
        last_cap = 63
    for cap in range(last_cap + 1):
        if prctl(PR_CAPBSET_DROP, cap) == -1 and ctypes.get_errno() != 22:  # EINVAL: no such cap
            check(-1, f"dropping capability {cap} from the bounding set")
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)


def drop_capabilities() -> None:
    """Inside a user namespace we are 'root' with every capability there: shed them all."""
    check(prctl(PR_SET_SECUREBITS, LOCKED_SECUREBITS), "prctl(PR_SET_SECUREBITS)")
    drop_bounding_set()

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    check(libc().capset(ctypes.byref(header), data), "capset (dropping all capabilities)")


def install_seccomp_filter(denied_names: tuple[str, ...] | None = None,
                           namespaces: bool = True) -> str:
    """Deny namespace, mount, module, tracing and keyring syscalls (EPERM), and
    ``prctl(PR_SET_PDEATHSIG)``, so the process cannot undo its death with its parent; clone3
    gets ENOSYS so that glibc falls back to clone, whose flags are checked. ``denied_names``
    narrows the denied syscalls (names of :data:`DENIED_SYSCALLS`) and ``namespaces=False``
    leaves clone alone (a policy process); the prctl rule always holds. Returns "installed"
    or why not."""
    machine = platform.machine()
    if machine not in DENIED_SYSCALLS:
        return f"unsupported architecture {machine}"
    program: list[tuple[int, int, int, int]] = []
    table = DENIED_SYSCALLS[machine]
    denied = sorted(table[name] for name in (table if denied_names is None else denied_names)
                    if name in table)
    # ("label", name) marks a position; jumps name labels or the final verdicts
    body: list[tuple] = [("ld", 4), ("arch",), ("ld", 0)]
    if machine == "x86_64":
        body.append(("x32",))
    body += [("deny", nr) for nr in denied]
    if namespaces:
        body.append(("enosys", SYS_CLONE3))
    body += [("skip_unless", SYS_PRCTL[machine], "clone"), ("ld", 16),
             ("deny_else_allow", PR_SET_PDEATHSIG),
             ("label", "clone")]
    if namespaces:
        body += [("skip_unless", SYS_CLONE[machine], "allow"), ("ld", 16), ("flags",)]
    labels: dict[str, int] = {}
    instructions: list[tuple] = []
    for step in body:
        if step[0] == "label":
            labels[step[1]] = len(instructions)
        else:
            instructions.append(step)
    n = len(instructions)
    labels.update(allow=n, eperm=n + 1, enosys=n + 2, kill=n + 3)
    for index, step in enumerate(instructions):
        def jump(label: str, index: int = index) -> int:
            return labels[label] - index - 1

        kind = step[0]
        if kind == "ld":
            program.append((BPF_LD_W_ABS, 0, 0, step[1]))
        elif kind == "arch":
            program.append((BPF_JEQ_K, 0, jump("kill"), AUDIT_ARCH[machine]))
        elif kind == "x32":
            program.append((BPF_JGE_K, jump("kill"), 0, X32_SYSCALL_BIT))
        elif kind == "deny":
            program.append((BPF_JEQ_K, jump("eperm"), 0, step[1]))
        elif kind == "enosys":
            program.append((BPF_JEQ_K, jump("enosys"), 0, step[1]))
        elif kind == "skip_unless":
            program.append((BPF_JEQ_K, 0, jump(step[2]), step[1]))
        elif kind == "deny_else_allow":
            program.append((BPF_JEQ_K, jump("eperm"), jump("allow"), step[1]))
        elif kind == "flags":
            program.append((BPF_JSET_K, jump("eperm"), jump("allow"), ANY_NAMESPACE))
    program += [
        (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
        (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS),
        (BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS),
    ]
    if any(not 0 <= jt < 256 or not 0 <= jf < 256 for _, jt, jf, _ in program):
        return "filter too long for 8-bit jumps"
    raw = b"".join(struct.pack("=HBBI", *instruction) for instruction in program)
    buffer = ctypes.create_string_buffer(raw, len(raw))

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(program), ctypes.addressof(buffer))
    lib = libc()
    lib.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong,
                          ctypes.c_ulong]
    rc = lib.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0)
    lib.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    if rc != 0:
        return f"prctl(PR_SET_SECCOMP) failed: {os.strerror(ctypes.get_errno())}"
    return "installed"


# ------------------------------------------------------------------------------------------
# Running the code
# ------------------------------------------------------------------------------------------


class CPUTimeExceeded(BaseException):
    """Raised at the CPU-time limit (SIGXCPU); a BaseException so ``except Exception`` in
    the agent's code does not swallow it."""


class WallTimeExceeded(BaseException):
    """Raised at the wall-clock limit (SIGALRM), so the traceback shows where the code was."""


def run_user_code(code: str, X, names: list[str], np, limits: dict) -> dict:
    """Execute ``code`` with ``X``, ``names`` and ``np`` in scope; return status, the repr of
    a final expression, and the traceback of an error (frames of this file removed)."""
    import ast
    import faulthandler
    import linecache
    import math
    import resource

    main_pid = os.getpid()
    faulthandler.enable(file=sys.stderr, all_threads=True)
    filename = "<code>"
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
    namespace = {"__name__": "__main__", "__builtins__": __builtins__,
                 "X": X, "names": names, "np": np}

    def on_cpu_limit(signum, frame):
        raise CPUTimeExceeded(f"CPU-time limit of {limits['cpu_seconds']:g} s exceeded")

    def on_wall_limit(signum, frame):
        raise WallTimeExceeded(f"wall-clock limit of {limits['wall_seconds']:g} s exceeded")

    signal.signal(signal.SIGXCPU, on_cpu_limit)
    signal.signal(signal.SIGALRM, on_wall_limit)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = usage.ru_utime + usage.ru_stime
    soft = math.ceil(cpu_before + limits["cpu_seconds"])
    resource.setrlimit(resource.RLIMIT_CPU, (soft, soft + 1))  # the hard limit is SIGKILL
    started = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limits["wall_seconds"])

    outcome: dict = {"status": "ok", "value": None, "value_truncated": False,
                     "traceback": None, "message": None, "error_type": None}
    try:
        tree = ast.parse(code, filename=filename, mode="exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a NUL byte in the source
        import traceback

        signal.setitimer(signal.ITIMER_REAL, 0)
        text = "".join(traceback.format_exception_only(type(exc), exc))
        outcome.update(status="error", error_type=type(exc).__name__, traceback=text,
                       message=text.strip().splitlines()[-1], cpu_seconds=0.0,
                       run_seconds=time.monotonic() - started)
        return outcome
    try:
        last = (tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr)
                else None)
        assert last is None or isinstance(last, ast.Expr)
        exec(compile(tree, filename, "exec"), namespace)
        if last is not None:
            expression = ast.Expression(last.value)
            value = eval(compile(expression, filename, "eval"), namespace)
            if value is not None:
                text = safe_repr(value)
                cap = limits["output_bytes"]
                if len(text) > cap:
                    text = text[:cap]
                    outcome["value_truncated"] = True
                outcome["value"] = text
    except SystemExit as exc:
        if exc.code not in (None, 0):
            outcome.update(status="error", error_type="SystemExit",
                           message=f"the code called sys.exit({exc.code!r})")
    except BaseException as exc:  # noqa: BLE001 - the agent's errors are results
        if isinstance(exc, (CPUTimeExceeded, WallTimeExceeded)):
            status = "timeout"
        elif isinstance(exc, MemoryError):
            status = "memory"
        else:
            status = "error"
        outcome.update(status=status, error_type=type(exc).__name__,
                       traceback=format_traceback(exc),
                       message=f"{type(exc).__name__}: {exc}".rstrip(": "))
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if os.getpid() != main_pid:  # a process the code forked: it must not report
            flush_streams()
            os._exit(0)
    signal.signal(signal.SIGXCPU, signal.SIG_IGN)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    outcome["cpu_seconds"] = usage.ru_utime + usage.ru_stime - cpu_before
    outcome["run_seconds"] = time.monotonic() - started
    flush_streams()
    return outcome


def safe_repr(value) -> str:
    try:
        return repr(value)
    except BaseException as exc:  # noqa: BLE001
        return f"<repr failed: {type(exc).__name__}: {exc}>"


def flush_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:  # noqa: BLE001, S110 - a closed stream has nothing to flush
            pass


def format_traceback(exc: BaseException) -> str:
    """The traceback as Python prints it, without this file's frames."""
    import traceback

    here = os.path.abspath(__file__)

    def strip(te) -> None:
        te.stack = traceback.StackSummary.from_list(
            [frame for frame in te.stack if os.path.abspath(frame.filename) != here])
        for chained in (te.__cause__, te.__context__):
            if chained is not None:
                strip(chained)

    try:
        te = traceback.TracebackException.from_exception(exc)
        strip(te)
        return "".join(te.format())
    except BaseException:  # noqa: BLE001
        return "".join(traceback.format_exception_only(type(exc), exc))


if __name__ == "__main__":
    main(sys.argv)

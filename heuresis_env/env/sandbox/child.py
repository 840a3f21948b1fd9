"""The inside of the code sandbox: a supervisor process and the sandboxed process it forks.

Started by :mod:`heuresis_env.env.sandbox.runner` as a fresh interpreter
(``python -I -S -B child.py CONFIG RESULT_FD SCRATCH``) with a clean environment, so it
shares no memory, environment variable or file descriptor with the environment process.
It imports only the standard library and its two siblings — :mod:`.linux` (the kernel calls
that confine a process) and :mod:`.user_code` (running the agent's code) — until the sandbox
is sealed, because it must keep working after the file system is replaced by a private root.

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

``python -I -S heuresis_env/isolation/linux.py --probe`` prints which namespaces this user can
create (JSON).
"""

from __future__ import annotations

import json
import os
import platform
import signal
import sys
import time

if __package__:  # imported as part of heuresis_env (type checkers, tools)
    from heuresis_env.env.sandbox import user_code
    from heuresis_env.isolation import linux, processes
else:  # run as a script (python -I -S): its folder and the isolation room's are not on
    # sys.path, so put them there for its sibling and the two standard-library-only modules of
    # the isolation room, then take them and their names away again, leaving the agent's code
    # the sys.path and sys.modules it would see without them
    _HERE = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [_HERE, os.path.join(os.path.dirname(os.path.dirname(_HERE)), "isolation")]
    try:
        import linux  # type: ignore[no-redef]
        import processes  # type: ignore[no-redef]
        import user_code  # type: ignore[no-redef]
    finally:
        del sys.path[:2]
        for _name in ("linux", "processes", "user_code"):
            sys.modules.pop(_name, None)


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
    config_path, result_fd, scratch = argv[1], int(argv[2]), argv[3]
    with open(config_path) as f:
        config = json.load(f)
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # the sandbox dies with the environment
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
        processes.kill_uid(config["uid_base"] + child_pid)
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
    flags = linux.CLONE_NEWPID | linux.CLONE_NEWNET | linux.CLONE_NEWIPC | linux.CLONE_NEWUTS
    uid, gid = os.getuid(), os.getgid()
    if privilege == "capabilities":
        flags |= linux.CLONE_NEWUSER
    linux.check(linux.libc().unshare(flags), "unshare(pid, net, ipc, uts namespaces)")
    if privilege == "capabilities":  # map our uid to root inside; nothing else exists there
        for path, text in (
            ("/proc/self/setgroups", "deny"),
            ("/proc/self/uid_map", f"0 {uid} 1"),
            ("/proc/self/gid_map", f"0 {gid} 1"),
        ):
            with open(path, "w") as f:
                f.write(text)


# ------------------------------------------------------------------------------------------
# The sandboxed process
# ------------------------------------------------------------------------------------------


def sandboxed_main(config: dict, result_fd: int, scratch: str) -> int:
    started = time.monotonic()
    linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)
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
        linux.drop_bounding_set()
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # from root to an unused uid: every capability is gone
        linux.prctl(linux.PR_SET_PDEATHSIG, signal.SIGKILL)  # a change of credentials clears it
    elif privilege == "capabilities":
        linux.drop_capabilities()
    linux.check(linux.prctl(linux.PR_SET_NO_NEW_PRIVS, 1), "prctl(PR_SET_NO_NEW_PRIVS)")
    seccomp = linux.install_seccomp_filter() if config["seccomp"] else "not requested"
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
            raise linux.SetupError(
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
    extra = {}
    if config.get("regimes") is not None:  # an episode with experiments: each row's regime
        extra = {"regimes": np.asarray(config["regimes"], dtype=np.int64),
                 "experiments": list(config.get("experiments") or [])}

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
    outcome = user_code.run_user_code(code_bytes.decode("utf-8", errors="replace"), X, names, np,
                                      limits, extra)
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
    linux.check(linux.libc().unshare(linux.CLONE_NEWNS), "unshare(mount namespace)")
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)  # nothing propagates back
    root = config["root_dir"]
    linux.mount("tmpfs", root, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=4m,mode=0755")

    def inside(path: str) -> str:
        return root + path

    scratch = config["scratch_dir"]
    os.makedirs(inside(scratch), mode=0o700)
    owner = f",uid={inside_uid},gid={inside_uid}" if inside_uid else ""
    linux.mount("tmpfs", inside(scratch), "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                f"size={config['limits']['scratch_bytes']},mode=0700{owner}")
    for view in config.get("scratch_views", []):  # /tmp holding a bound Python: the scratch
        os.makedirs(inside(view), mode=0o755, exist_ok=True)  # again, binds mounted into it
        linux.mount(inside(scratch), inside(view), None, linux.MS_BIND)
    for path in config["read_only_binds"]:
        os.makedirs(inside(path), mode=0o755, exist_ok=True)
        bind(path, inside(path), read_only=True)
    for path in config.get("hidden_dirs", []):  # e.g. heuresis_env in site-packages
        linux.mount("tmpfs", inside(path), "tmpfs",
                    linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC,
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
        linux.mount("proc", inside("/proc"), "proc",
                    linux.MS_RDONLY | linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC)
    except linux.SetupError as exc:
        notes.append(f"no /proc inside the sandbox ({exc})")

    hostname = b"sandbox"
    linux.check(linux.libc().sethostname(hostname, len(hostname)), "sethostname")
    os.chdir(root)
    machine = platform.machine()
    if machine in linux.SYS_PIVOT_ROOT:
        linux.check(linux.libc().syscall(linux.SYS_PIVOT_ROOT[machine], b".", b"."), "pivot_root")
        linux.check(linux.libc().umount2(b".", linux.MNT_DETACH), "detaching the host's root")
    else:  # unknown syscall number: chroot holds once every capability is dropped
        os.chroot(".")
        notes.append("chroot instead of pivot_root (unknown architecture)")
    os.chdir("/")
    linux.mount(None, "/", None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY
                | linux.MS_NOSUID | linux.MS_NODEV)


def bind(source: str, target: str, read_only: bool) -> None:
    linux.mount(source, target, None, linux.MS_BIND | linux.MS_REC)
    flags = linux.MS_REMOUNT | linux.MS_BIND | linux.MS_NOSUID
    for statvfs_flag, mount_flag in linux.STATVFS_TO_MOUNT_FLAGS:
        if os.statvfs(source).f_flag & statvfs_flag:
            flags |= mount_flag
    flags |= (linux.MS_RDONLY | linux.MS_NODEV) if read_only else linux.MS_NOEXEC
    linux.mount(None, target, None, flags)


if __name__ == "__main__":
    main(sys.argv)

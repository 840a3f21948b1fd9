"""The Linux calls a process confines itself with: namespace, mount and prctl constants,
``prctl`` and ``mount`` through libc, dropping capabilities, and a seccomp filter.

Used by the code sandbox's supervisor and sandboxed process
(``heuresis_env.env.sandbox.child``, run as a script: standard library only, loaded from this
folder before the sandbox is sealed) and by the policy process's confinement
(:mod:`.confinement`), which confines itself the same way.
"""

from __future__ import annotations

import ctypes
import json
import os
import platform
import struct
import sys

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


def keep_only_capabilities(mask: int) -> None:
    """Make ``mask`` (a bitmask of capability numbers) this process's effective and permitted
    capabilities, dropping every other; ``mask`` must be permitted already. Needs no
    capability of its own (after a uid switch under ``PR_SET_KEEPCAPS``)."""

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header, data = Header(LINUX_CAPABILITY_VERSION_3, 0), (Data * 2)()
    data[0].effective = data[0].permitted = mask & 0xFFFFFFFF
    data[1].effective = data[1].permitted = mask >> 32
    check(libc().capset(ctypes.byref(header), data),
          "capset (dropping capabilities)" if mask else "capset (dropping all capabilities)")


def drop_capabilities() -> None:
    """Inside a user namespace we are 'root' with every capability there: shed them all."""
    check(prctl(PR_SET_SECUREBITS, LOCKED_SECUREBITS), "prctl(PR_SET_SECUREBITS)")
    drop_bounding_set()
    keep_only_capabilities(0)


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


def probe_namespaces() -> dict[str, str]:
    """Which namespaces can be created: ``"ok"`` or the error, each tried in a fresh fork
    (run in a throw-away interpreter: ``python -I -S linux.py --probe`` prints it as JSON)."""
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


if __name__ == "__main__" and sys.argv[1:2] == ["--probe"]:
    print(json.dumps(probe_namespaces()))

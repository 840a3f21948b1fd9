"""``heuresis doctor``: the isolation this machine gives the code tool, checked for real."""

from __future__ import annotations

import ast
import json
import os
import socket
import sys
import tempfile
import time
from importlib import metadata

from heuresis_env.env.sandbox.runner import Sandbox, cache_directory
from heuresis_env.isolation.detection import LEVELS, IsolationUnavailableError, detect_isolation
from heuresis_env.isolation.limits import SandboxLimits, format_bytes

#: run inside the sandbox by the self-test; {port} and {hidden} are filled in
SELF_TEST_CODE = r"""
import errno, json, os, socket
report = {"uid": os.getuid()}
try:
    status = open("/proc/self/status").read()
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    for key in ("CapEff", "CapBnd", "NoNewPrivs", "Seccomp"):
        report[key] = fields.get(key, "?").strip()
except OSError as exc:
    report["proc"] = str(exc)
report["interfaces"] = [name for _, name in socket.if_nameindex()]
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2).close()
    report["connect"] = "connected"
except OSError as exc:
    report["connect"] = errno.errorcode.get(exc.errno, str(exc))
try:
    open("/heuresis-doctor-probe", "w").close()
    report["write_root"] = "allowed"
except OSError as exc:
    report["write_root"] = errno.errorcode.get(exc.errno, str(exc))
report["hidden_visible"] = [p for p in {hidden!r} if os.path.exists(p)]
report["root_entries"] = sorted(os.listdir("/"))
import sklearn, scipy
report["imports"] = "numpy, scipy, sklearn"
json.dumps(report)
"""


def versions() -> dict[str, str]:
    found = {"python": sys.version.split()[0]}
    for package in ("heuresis", "numpy", "scipy", "scikit-learn", "causal-learn", "torch",
                    "gymnasium"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    return found


def self_test() -> tuple[str | None, dict | None, str]:
    """Run a probe in a real sandbox (strongest level, weak allowed so it always reports):
    (level used, the probe's findings, a one-line outcome)."""
    import numpy as np

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0)
    port = listener.getsockname()[1]
    record_folder = tempfile.mkdtemp(prefix="heuresis-doctor-")
    record = os.path.join(record_folder, "record.json")  # stands for an instance's record
    with open(record, "w") as f:
        f.write('{"true_dag": "secret"}')
    working_files = sorted(entry.path for entry in os.scandir(os.getcwd()) if entry.is_file())
    hidden = [record, cache_directory(), *working_files[:1]]
    try:
        with Sandbox(np.zeros((4, 2)), ["a", "b"], allow_weak_isolation=True,
                     prewarm=False) as sandbox:
            started = time.monotonic()
            result = sandbox.run(SELF_TEST_CODE.replace("{port}", str(port))
                                 .replace("{hidden!r}", repr(hidden)))
            elapsed = time.monotonic() - started
            level = sandbox.level
        try:
            listener.accept()[0].close()
            listener_saw = "the doctor's listener ACCEPTED a connection from the sandbox"
        except BlockingIOError:
            listener_saw = "the doctor's 127.0.0.1 listener saw no connection"
    except IsolationUnavailableError as exc:
        return None, None, f"no sandbox could start: {exc}"
    finally:
        listener.close()
        os.remove(record)
        os.rmdir(record_folder)
    if result.status != "ok" or result.value is None:
        return level, None, f"self-test failed ({result.status}): {result.message}\n{result.stderr}"
    findings = json.loads(ast.literal_eval(result.value))  # the repr of a JSON string
    findings["listener"] = listener_saw
    return level, findings, f"ok in {elapsed:.2f} s"


def doctor_report(run_self_test: bool = True) -> str:
    """The isolation report: what the machine provides, which level ``isolation="auto"``
    picks, package versions and (by default) the findings of a probe run inside it."""
    info = detect_isolation()
    lines = ["Heuresis code sandbox", ""]
    lines.append("Versions")
    for name, version in versions().items():
        lines.append(f"  {name:<14}{version}")
    lines.append(f"  {'interpreter':<14}{info['python_executable']}")
    lines += ["", "Machine"]
    lines.append(f"  {'kernel':<14}{info['platform']} {info['kernel']} {info['machine']}")
    who = "root" if info["root"] else f"uid {info['euid']} (not root)"
    lines.append(f"  {'running as':<14}{who}")
    spaces = ", ".join(f"{name} {state}" for name, state in info["namespaces"].items())
    lines.append(f"  {'namespaces':<14}{spaces or 'none (not Linux)'}")
    drop = {"setuid": "switch to an unused uid (root)",
            "capabilities": "drop all capabilities inside a user namespace",
            None: "none available"}[info["privilege_drop"]]
    lines.append(f"  {'privileges':<14}{drop}")
    lines.append(f"  {'seccomp':<14}{info['seccomp']}")
    readable = info["unreadable_python_path"]
    lines.append(f"  {'python files':<14}"
                 + ("readable by other users" if readable is None
                    else f"not readable by other users ({readable})"))
    lines.append(f"  {'cgroups':<14}{info['cgroups'] or 'none'} (not used: per-process rlimits "
                 "and a resident-memory watchdog)")
    lines += ["", "Isolation levels"]
    for level in LEVELS:
        missing = info["levels"][level]
        state = "available" if not missing else "unavailable: " + "; ".join(missing)
        if level == info["best"]:
            state += "   <- isolation='auto' uses this"
        if level != "namespaces" and not missing:
            state += " (weak: needs allow_weak_isolation=True)"
        lines.append(f"  {level:<14}{state}")
    limits = SandboxLimits()
    lines += ["", "Default limits per call (SandboxLimits)"]
    lines.append(f"  CPU {limits.cpu_seconds:g} s, wall clock {limits.wall_seconds:g} s, memory "
                 f"{format_bytes(limits.memory_bytes)}, processes/threads "
                 f"{limits.max_processes}, file size {format_bytes(limits.file_size_bytes)}, "
                 f"scratch {format_bytes(limits.scratch_bytes)}, output "
                 f"{format_bytes(limits.output_bytes)} per stream, open files "
                 f"{limits.open_files}")
    if run_self_test:
        tested_level, findings, outcome = self_test()
        lines += ["", f"Self-test (isolation {tested_level!r}): {outcome}"]
        if findings:
            lines.append(f"  {'identity':<14}uid {findings.get('uid')}, CapEff "
                         f"{findings.get('CapEff')}, CapBnd {findings.get('CapBnd')}, "
                         f"NoNewPrivs {findings.get('NoNewPrivs')}, "
                         f"Seccomp {findings.get('Seccomp')} (2 = filter)")
            lines.append(f"  {'network':<14}interfaces {findings['interfaces']}; connecting to "
                         f"127.0.0.1: {findings['connect']}; {findings['listener']}")
            hidden = findings["hidden_visible"]
            lines.append(f"  {'files':<14}writing / -> {findings['write_root']}; visible at /: "
                         f"{' '.join(findings['root_entries'])}; a test record, the cache and a "
                         f"file of the working folder {'VISIBLE: ' + ', '.join(hidden) if hidden else 'not visible'}")
            lines.append(f"  {'imports':<14}{findings['imports']}")
    return "\n".join(lines)

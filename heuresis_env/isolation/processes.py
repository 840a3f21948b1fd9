"""Process trees, read and ended in one place: a process's children and descendants from
``/proc``, their resident memory, and the ways a tree is killed — a process and its group, all
descendants of a subreaper, every process of a uid.

The code sandbox (its runner and its supervisor, which runs as a script and loads this module
beside :mod:`.linux` from this folder), the policy launcher and the policy process's
supervisor (:mod:`.confinement`) all end their trees here. Standard library only.
"""

from __future__ import annotations

import os
import signal
import time

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
#: how long :func:`kill_descendants` keeps killing a tree that keeps forking
DESCENDANTS_SECONDS = 30.0


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (of every thread), from ``/proc``; [] once it is gone."""
    found: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                found += [int(p) for p in f.read().split()]
        except (OSError, ValueError):
            continue
    return found


def descendants(*roots: int) -> list[int]:
    """Every process below ``roots`` (not the roots), parents before their children."""
    tree: list[int] = []
    seen = set(roots)
    frontier = [child for root in roots for child in children(root)]
    while frontier:
        pid = frontier.pop()
        if pid in seen:
            continue
        seen.add(pid)
        tree.append(pid)
        frontier += children(pid)
    return tree


def tree_resident_bytes(*roots: int) -> int:
    """Resident memory of ``roots`` and all their descendants. Rooted at a PID namespace's
    init it covers the whole namespace: every process there descends from it, orphans
    included."""
    total = 0
    for pid in (*roots, *descendants(*roots)):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * PAGE_SIZE
        except (OSError, ValueError, IndexError):
            continue
    return total


def signal_process(pid: int, number: int = signal.SIGKILL, group: bool = True) -> None:
    """Send ``number`` to ``pid``'s process group (when ``group``) and to ``pid`` itself,
    quietly: a process already gone, or not ours to signal, is no error."""
    senders = (os.killpg, os.kill) if group else (os.kill,)
    for send in senders:
        try:
            send(pid, number)
        except (ProcessLookupError, PermissionError, OSError):
            pass


def kill_tree(*roots: int) -> None:
    """SIGKILL ``roots``' descendants, then the roots with their process groups (what moved
    to another group or session is found through ``/proc``; a daemon reparented away from
    the tree is not: run the tree under a subreaper, :func:`kill_descendants`, or a PID
    namespace to catch it)."""
    for pid in descendants(*roots):
        signal_process(pid, signal.SIGKILL, group=False)
    for pid in roots:
        signal_process(pid, signal.SIGKILL)


def kill_descendants() -> None:
    """Kill every descendant of this process — a subreaper, so orphans of its tree are its
    children — and reap them, until none is left (or :data:`DESCENDANTS_SECONDS` passed)."""
    deadline = time.monotonic() + DESCENDANTS_SECONDS
    while time.monotonic() < deadline:
        for pid in descendants(os.getpid()):
            signal_process(pid, signal.SIGKILL, group=False)
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return  # no child left: the tree is gone
        time.sleep(0.005)


def kill_uid(uid: int, scan: bool = False) -> None:
    """SIGKILL every process of ``uid`` (a sandbox's or a policy's own uid, used by nothing
    else). As root: a forked helper takes the uid and signals every process it may
    (``kill(-1)``: exactly that uid's, none escaping by forking meanwhile); with ``scan`` (a
    process with threads, where a fork is best avoided) or without root, each process whose
    real uid it is, found in ``/proc``."""
    if os.geteuid() == 0 and not scan:
        pid = os.fork()
        if pid == 0:
            try:
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        return
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            signal_process(int(entry), signal.SIGKILL, group=False)
                        break
        except (OSError, ValueError):
            continue


__all__ = ["PAGE_SIZE", "children", "descendants", "kill_descendants", "kill_tree", "kill_uid",
           "signal_process", "tree_resident_bytes"]

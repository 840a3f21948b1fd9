"""The one way a process tree is read and killed (heuresis_env.isolation.processes): a real
tree of processes, found whole through /proc and ended whole, grandchildren included."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from heuresis_env.isolation import descendants, kill_tree, tree_resident_bytes

TREE = ("import subprocess, sys, time\n"
        "kids = [subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'])\n"
        "        for _ in range(2)]\n"
        "print('ready', flush=True)\n"
        "time.sleep(120)\n")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


def test_a_tree_is_found_whole_and_killed_whole():
    root = subprocess.Popen([sys.executable, "-c", TREE], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        assert root.stdout is not None and root.stdout.readline().strip() == "ready"
        below = descendants(root.pid)
        assert len(below) == 2 and root.pid not in below
        assert tree_resident_bytes(root.pid) > tree_resident_bytes(below[0]) > 0
        kill_tree(root.pid)
        root.wait(timeout=30)
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in below) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(_alive(pid) for pid in below)
    finally:
        if root.poll() is None:
            os.killpg(root.pid, 9)
            root.wait()

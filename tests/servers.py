"""Helpers for tests that start a server process on loopback: a free port, and waiting until
the server accepts connections (failing with its log if it exits or never listens)."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    """A TCP port on 127.0.0.1 free at the time of the call."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_listening(process: subprocess.Popen, port: int, log: Path,
                         seconds: float = 120.0) -> None:
    """Wait until ``process`` accepts connections on 127.0.0.1:``port``; an AssertionError
    with the server's log when it exits first or does not listen within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        assert process.poll() is None, log.read_text()
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, (f"the server did not listen on port {port} "
                                                 f"within {seconds:g} s: {log.read_text()}")
            time.sleep(0.3)

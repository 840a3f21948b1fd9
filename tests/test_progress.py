"""Progress bars are drawn on a terminal only: a log file or a pipe gets no bar frames, and a
long step without a terminal reports in plain lines (share done, time left)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios

from heuresis_env.progress import ProgressLines, duration_text, progress_bar

GENERATE = [sys.executable, "-m", "heuresis_env.cli", "generate", "--family", "lg", "--split",
            "dev", "--count", "2", "--d", "4", "--n", "50"]


def test_a_piped_stderr_gets_no_bar_frames(tmp_path):
    done = subprocess.run([*GENERATE, "--out", str(tmp_path / "a")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "\r" not in done.stderr and "generate:" not in done.stderr
    assert "lg" in done.stdout  # the summary table


def test_a_terminal_gets_the_bar(tmp_path):
    leader, follower = pty.openpty()
    # a terminal 100 columns wide (a new pseudo-terminal has none)
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        process = subprocess.Popen([*GENERATE, "--out", str(tmp_path / "b")],
                                   stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        chunks = []
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed its end
                break
            if not chunk:
                break
            chunks.append(chunk)
        assert process.wait(timeout=300) == 0
    finally:
        os.close(leader)
    text = b"".join(chunks).decode("utf-8", "replace")
    assert "generate:" in text and "2/2" in text


def test_progress_bar_and_lines_helpers():
    assert progress_bar(range(3), show=False).disable
    lines: list[str] = []
    progress = ProgressLines("PPO", 200, lines.append, every_seconds=0.0)
    progress.update(50)
    progress.update(200, "done")
    assert lines[0].startswith("PPO: 50 of 200 steps (25%), ") and "left" in lines[0]
    assert lines[1].startswith("PPO: 200 of 200 steps (100%), ") and lines[1].endswith("; done")
    progress.update(201)  # past the total (PPO's rollout): the last line is not said again
    assert len(lines) == 2
    quiet = ProgressLines("x", 10, lines.append, every_seconds=3600.0)
    quiet.update(1)  # too soon after the start: nothing
    assert len(lines) == 2
    assert [duration_text(s) for s in (5, 185, 3725)] == ["5 s", "3 min 05 s", "1 h 02 min"]


def test_progress_is_a_bar_on_a_terminal_and_lines_elsewhere():
    """``Progress``: without a terminal (pytest's captured stderr) lines through ``say`` with
    the time left, the last one once; ``show=False`` says nothing."""
    from heuresis_env.progress import Progress

    lines: list[str] = []
    with Progress(4, "evidence", unit="instance", say=lines.append, every_seconds=0.0) as shown:
        assert shown.bar.disable and shown.lines is not None
        shown.update()
        shown.set_postfix_str("lg")
        shown.update(3)
        shown.update()  # past the total
    assert lines[0].startswith("evidence: 1 of 4 instances (25%), ") and "left" in lines[0]
    assert lines[-1].startswith("evidence: 4 of 4 instances (100%), ")
    assert lines[-1].endswith("; lg") and len(lines) == 2
    hidden: list[str] = []
    with Progress(4, "x", say=hidden.append, show=False, every_seconds=0.0) as quiet:
        quiet.update(4)
    assert hidden == []

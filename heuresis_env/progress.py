"""Progress bars and progress lines: one helper, so every long step of the package reports the
same way.

A bar (:func:`progress_bar`) is drawn on stderr only when stderr is a terminal (tqdm's
``disable=None``): a log file, a pipe or a CI job never receives the carriage-return frames
of a redrawn bar, and ``show=False`` (``--no-progress``) hides it everywhere. Where no bar is
drawn, a step that runs for minutes says how far it is with a few plain lines instead
(:class:`ProgressLines`: at most one every ``every_seconds``, with the share done and an
estimate of the time left). :class:`Progress` is the two together: what a command's long step
uses (``heuresis train``'s evidence and PPO, ``heuresis baselines``' algorithm runs).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tqdm import tqdm

T = TypeVar("T")


def progress_bar(iterable: Iterable[T] | None = None, *, show: bool = True,
                 **kwargs: Any) -> tqdm:
    """A tqdm bar on stderr, drawn only when stderr is a terminal and ``show`` is true."""
    from tqdm import tqdm  # imported when a bar is made: `import heuresis_env` stays light

    kwargs.setdefault("file", sys.stderr)
    kwargs.setdefault("dynamic_ncols", True)
    return tqdm(iterable, disable=None if show else True, **kwargs)


def duration_text(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class ProgressLines:
    """Plain progress lines for output that is not a terminal: ``what: 1,200 of 10,000 steps
    (12%), 40 s elapsed, about 4 min 53 s left``, at most one every ``every_seconds`` (and the
    last one when done), through ``say``."""

    def __init__(self, what: str, total: int, say: Callable[[str], None], *,
                 unit: str = "steps", every_seconds: float = 30.0):
        self.what, self.total, self.say, self.unit = what, max(int(total), 1), say, unit
        self.every = float(every_seconds)
        self.started = time.perf_counter()
        self.last = self.started
        self.finished = False

    def update(self, done: int, extra: str = "") -> None:
        """Report ``done`` of the total: a line when ``every_seconds`` have passed since the
        last one, and the last line once when the total is reached (later calls — PPO runs
        on to the end of its rollout — say nothing more)."""
        now = time.perf_counter()
        finished = done >= self.total
        if self.finished or (not finished and now - self.last < self.every):
            return
        self.finished = finished
        self.last = now
        elapsed = now - self.started
        line = (f"{self.what}: {done:,} of {self.total:,} {self.unit} "
                f"({100 * min(done, self.total) / self.total:.0f}%), "
                f"{duration_text(elapsed)} elapsed")
        if not finished and done > 0:
            line += f", about {duration_text(elapsed / done * (self.total - done))} left"
        self.say(line + (f"; {extra}" if extra else ""))


def _say_on_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """How far a long step is, wherever its output goes: a bar with the time left on a
    terminal (:func:`progress_bar`), else plain lines through ``say`` (:class:`ProgressLines`,
    stderr by default). ``show=False`` hides both. Use as a context manager, or ``close()``.
    """

    def __init__(self, total: int, what: str, *, unit: str = "step", show: bool = True,
                 say: Callable[[str], None] | None = None, every_seconds: float = 30.0):
        self.total = max(int(total), 0)
        self.done = 0
        self.bar = progress_bar(total=self.total, show=show, desc=what, unit=unit, leave=False)
        self.lines = (ProgressLines(what, self.total, say or _say_on_stderr, unit=f"{unit}s",
                                    every_seconds=every_seconds)
                      if show and self.bar.disable and self.total else None)
        self._extra = ""

    def update(self, count: int = 1) -> None:
        self.set(self.done + int(count))

    def set(self, done: int, extra: str | None = None) -> None:
        """``done`` of the total (capped at it), with a note for the lines (e.g. a gain)."""
        done = min(int(done), self.total) if self.total else int(done)
        if extra is not None:
            self._extra = extra
        if done > self.done:
            self.bar.update(done - self.done)
            self.done = done
        if self.lines is not None:
            self.lines.update(done, self._extra)

    def set_postfix_str(self, text: str) -> None:
        """A short note after the bar (the family being run); on lines, after the count."""
        self.bar.set_postfix_str(text)
        self._extra = text

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""What one sandboxed call returns, and the text an agent reads of it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

#: ``ok``: ran to the end; ``error``: raised (traceback kept) or could not start;
#: ``timeout``: CPU-time or wall-clock limit; ``memory``: memory limit; ``killed``: ended by a
#: signal (a crash such as a segmentation fault, or a kill from outside).
SandboxStatus = Literal["ok", "error", "timeout", "memory", "killed"]
STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "memory", "killed")


@dataclass(frozen=True)
class SandboxResult:
    """The outcome of one call. ``value`` is the repr of the code's final expression (None
    when there is none, or it is None); ``message`` says in one line why a call that is not
    ``ok`` ended. Output beyond the limit is cut, with a marker in the text, and flagged."""

    status: SandboxStatus
    stdout: str = ""
    stderr: str = ""
    value: str | None = None
    traceback: str | None = None
    message: str | None = None
    duration_s: float = 0.0
    cpu_seconds: float | None = None
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    value_truncated: bool = False
    isolation: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_text(self) -> str:
        """The result as the agent sees it: a status line, then each non-empty section."""
        header = f"status: {self.status} ({self.duration_s:.2f} s)"
        if self.message and self.status != "ok":
            header += f": {self.message}"
        sections = [header]
        for title, text in (
            ("stdout", self.stdout),
            ("stderr", self.stderr),
            ("traceback", self.traceback),
            ("value", self.value),
        ):
            if text:
                sections.append(f"--- {title} ---\n{text.rstrip(chr(10))}")
        if len(sections) == 1 and self.status == "ok":
            sections.append("(no output and no final value; end the code with an expression "
                            "or print() to see a result)")
        return "\n".join(sections)

    def to_dict(self) -> dict:
        return asdict(self)

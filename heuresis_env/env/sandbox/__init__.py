"""The code tool's sandbox: agent-written Python over the data, isolated from the network,
the hidden record and the environment process, with bounded CPU time, memory and output.

>>> with Sandbox(X, names) as sandbox:            # doctest: +SKIP
...     print(sandbox.run("X.mean(axis=0)").to_text())

See ``docs/sandbox.md`` for the threat model and ``heuresis doctor`` for what this machine
provides.
"""

from __future__ import annotations

from heuresis_env.env.sandbox.doctor import doctor_report
from heuresis_env.env.sandbox.result import STATUSES, SandboxResult, SandboxStatus
from heuresis_env.env.sandbox.runner import Sandbox, run_code
from heuresis_env.isolation.detection import (
    ISOLATION_CHOICES,
    LEVELS,
    IsolationUnavailableError,
    detect_isolation,
)
from heuresis_env.isolation.limits import MAX_CODE_BYTES, SandboxLimits

__all__ = [
    "ISOLATION_CHOICES",
    "LEVELS",
    "MAX_CODE_BYTES",
    "STATUSES",
    "IsolationUnavailableError",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "SandboxStatus",
    "detect_isolation",
    "doctor_report",
    "run_code",
]

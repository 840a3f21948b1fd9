"""What the sandbox tests share: the isolation levels this machine offers, the data every
sandbox holds, and the check that a sandbox still answers after an attack."""

from __future__ import annotations

import os

import numpy as np
import pytest

from heuresis_env.env.sandbox import Sandbox, SandboxLimits, detect_isolation

NAMESPACES_MISSING = detect_isolation()["levels"]["namespaces"]
needs_namespaces = pytest.mark.skipif(
    bool(NAMESPACES_MISSING),
    reason=f"namespaces isolation unavailable: {'; '.join(NAMESPACES_MISSING)}",
)
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the uid checks need root")

NAMES = ["X1", "X2", "X3", "X4"]
SHORT = SandboxLimits(cpu_seconds=2, wall_seconds=3)


def make_data(n: int = 300, seed: int = 0) -> np.ndarray:
    """X4 = 2·X1 − 3·X2 + noise; X3 independent of everything."""
    rng = np.random.default_rng(seed)
    x1, x2, x3 = rng.normal(size=(3, n))
    x4 = 2 * x1 - 3 * x2 + 0.1 * rng.normal(size=n)
    return np.column_stack([x1, x2, x3, x4])


def assert_next_call_works(box: Sandbox) -> None:
    result = box.run("print('still here'); sum(range(10))")
    assert result.status == "ok", result.to_text()
    assert result.value == "45"
    assert result.stdout == "still here\n"

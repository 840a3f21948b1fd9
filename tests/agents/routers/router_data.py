"""Data the router tests share: small instances of each family, a hand-made dataset with a
known answer (X2 = X1² + noise), and a driver running a text policy on such a dataset with the
real toolbox."""

from __future__ import annotations

import numpy as np

from heuresis_env.discovery.citests.base import data_sha256
from heuresis_env.env.toolbox import ActionError, EpisodeState, ToolResult, parse_action
from heuresis_env.errors import HeuresisError
from heuresis_env.generation.instances import InstanceKey, generate_instance

D, N = 5, 200
#: small instances where PC-KCI is quick: lg, hetero and gauntlet/2 route to PC-Fisher-z,
#: wild/0 and wild/4 to PC-KCI (test_paper checks it: a generator change cannot hide a branch)
ROUTED = [("lg", 1), ("lg", 3), ("hetero", 0), ("gauntlet", 2), ("wild", 0), ("wild", 4)]


def small_instance(family: str, index: int, d: int = D, n: int = N):
    return generate_instance(InstanceKey(family, "dev", index, d=d, n=n))


def parabola_data(n: int = 400, seed: int = 0) -> np.ndarray:
    """X1 → X2 = X1² + noise, X1 → X3 linear, X4 independent; columns standardized.

    Fisher-z finds X1 — X2 and X2 — X3 independent (no correlation); X2 ⟂ X3 | X1 holds.
    """
    rng = np.random.default_rng(seed)
    x1 = rng.normal(size=n)
    x2 = x1**2 + 0.3 * rng.normal(size=n)
    x3 = x1 + 0.5 * rng.normal(size=n)
    x4 = rng.normal(size=n)
    data = np.column_stack([x1, x2, x3, x4])
    return (data - data.mean(axis=0)) / data.std(axis=0)


PARABOLA_NAMES = ("X1", "X2", "X3", "X4")


def drive_on_data(policy, data: np.ndarray, names, max_steps: int = 40):
    """Run a text policy on a hand-made dataset with the real toolbox.

    The environment draws its instances from the family generators; a dataset with a known
    answer is run here through the same tools, parsed and executed as the environment does
    (rejected actions cost a step and leave the graph unchanged).
    """
    state = EpisodeState(data, names, data_sha256(data))
    info = {"data": data.copy(), "names": list(names), "guided": False,
            "sha256": data_sha256(data)}

    def observation(left: int) -> dict:
        return {"text": "", "working_graph": state.working_graph.marks.copy(),
                "budget_left": np.array([left], dtype=np.float32), "last_error": ""}

    policy.reset(observation(max_steps), info)
    for step in range(1, max_steps + 1):
        state.call_number = step
        action = policy.act(observation(max_steps - step + 1), info)
        before = state.working_graph.copy()
        try:
            parsed = parse_action(action, "full", False)
            result = parsed.tool.run(state, parsed.args)
        except (ActionError, HeuresisError) as exc:
            parsed, result = None, ToolResult.failure(str(exc))
        if result.error is not None:
            state.working_graph = before
        info = {"step": step, "tool": None if parsed is None else parsed.tool.name,
                "error": result.error, "data": dict(result.data)}
        if result.submitted:
            return state.working_graph, step
    return state.working_graph, max_steps

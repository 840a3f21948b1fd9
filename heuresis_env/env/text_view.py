"""The text view: an action (JSON text or a dict) parsed and run as a tool call, a failure
becoming an error result; the spaces (one prototype per shape, copied); the text an
observation may hold (printable ASCII, every other character escaped, length-capped) and the
observation itself. The RL view is :mod:`.rl_view`."""

from __future__ import annotations

import copy
import re
import string
from collections.abc import Callable
from typing import Any, cast

import numpy as np
from gymnasium import spaces

from heuresis_env.env.toolbox.registry import (
    MAX_ACTION_CHARS,
    ActionError,
    ParsedAction,
    ToolResult,
    parse_action,
)
from heuresis_env.env.toolbox.state import EpisodeState
from heuresis_env.errors import HeuresisError

#: the longest observation text; longer tool outputs are cut with a note
MAX_OBSERVATION_CHARS = 20_000
#: characters an observation text may hold (others are written as \\uXXXX escapes)
OBSERVATION_CHARSET = frozenset(string.printable)
_SPACES: dict[tuple, spaces.Space] = {}


def _shared_space(key: tuple, build: Callable[[], spaces.Space]) -> spaces.Space:
    """A space copied from one built per ``key``: building a ``Text`` indexes its character
    set and a ``Box`` checks and broadcasts its bounds, a cost per environment that a runner
    making an environment per episode paid thousands of times. The copy shares only what is
    read-only (the character index, the bounds, made unwritable); its random generator is its
    own (made when first seeded or sampled)."""
    prototype = _SPACES.get(key)
    if prototype is None:
        prototype = _SPACES[key] = build()
        for bound in ("low", "high"):
            array = getattr(prototype, bound, None)
            if isinstance(array, np.ndarray):
                array.flags.writeable = False
    return copy.copy(prototype)


def _text_space(max_length: int) -> spaces.Text:
    """``Text(max_length, charset=string.printable)`` (a shared prototype's copy)."""
    return cast(spaces.Text, _shared_space(("text", max_length), lambda: spaces.Text(
        max_length=max_length, min_length=0, charset=string.printable)))


def _box_space(low: float, high: float, shape: tuple[int, ...], dtype: type) -> spaces.Box:
    """``Box(low, high, shape, dtype)`` (a shared prototype's copy)."""
    return cast(spaces.Box, _shared_space(("box", low, high, shape, np.dtype(dtype).str),
                                          lambda: spaces.Box(low, high, shape, dtype)))
_OUTSIDE_CHARSET = re.compile(f"[^{re.escape(string.printable)}]")  # one C scan per text


def observation_text(text: str) -> str:
    """Text fit for the observation space: printable ASCII, every other character — control
    characters such as NUL or BEL included — written as its Python escape (``\\x00``,
    ``\\u2028``), length-capped."""
    text = _OUTSIDE_CHARSET.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"),
                                text)
    if len(text) > MAX_OBSERVATION_CHARS:
        note = f"\n[output cut: {len(text) - MAX_OBSERVATION_CHARS + 80} characters omitted]"
        text = text[:MAX_OBSERVATION_CHARS - 80] + note
    return text


def text_view_spaces(d: int, max_steps: int) -> tuple[spaces.Text, spaces.Dict]:
    """The text view's action space (a JSON string) and observation space."""
    action_space = _text_space(MAX_ACTION_CHARS)
    observation_space = spaces.Dict({
        "text": _text_space(MAX_OBSERVATION_CHARS),
        "working_graph": _box_space(0, 3, (d, d), np.int8),
        "budget_left": _box_space(0.0, float(max_steps), (1,), np.float32),
        "last_error": _text_space(MAX_OBSERVATION_CHARS),
    })
    return action_space, observation_space


def text_observation(text: str, marks: np.ndarray, steps_left: int,
                     last_error: str) -> dict[str, Any]:
    """A text-view observation: the output text, a copy of the working graph's marks, the
    steps left and the last action's error."""
    return {
        "text": text,
        "working_graph": marks.copy(),
        "budget_left": np.array([steps_left], dtype=np.float32),
        "last_error": last_error,
    }


def run_text_action(state: EpisodeState, action: Any, toolbox: str, guided: bool,
                    task: str) -> tuple[ParsedAction | None, ToolResult]:
    """Parse ``action`` and run its tool on ``state``: the parsed action (None when it could
    not be parsed) and the result, whose ``error`` says why an action was rejected or a tool
    failed (an exception of a tool is a result, not a crash)."""
    try:
        parsed = parse_action(action, toolbox, guided, task, state.regimes is not None)
    except ActionError as exc:
        return None, ToolResult.failure(str(exc))
    try:
        result = parsed.tool.run(state, parsed.args)
    except HeuresisError as exc:
        result = ToolResult.failure(str(exc))
    except Exception as exc:  # noqa: BLE001 - a failing tool is an observation, not a crash
        result = ToolResult.failure(f"{parsed.tool.name} failed: {type(exc).__name__}: {exc}")
    if not isinstance(result, ToolResult):
        result = ToolResult.failure(f"{parsed.tool.name} returned {type(result).__name__}, "
                                    "not a ToolResult")
    return parsed, result

"""The wire between the runner and a policy process: length-prefixed frames on a pipe, JSON
replies (never unpickled by the runner), the actions and infos that cross, and the errors a
call can end in. Used by :mod:`heuresis_env.evaluation.policy_process` on both sides."""

from __future__ import annotations

import base64
import json
import os
import select
import struct
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from heuresis_env.env.toolbox.registry import describe_object

_HEADER = struct.Struct(">Q")


class PolicyProcessError(Exception):
    """The policy process failed: it could not start, died, or sent something unreadable."""


class RemotePolicyError(Exception):
    """The policy's own code raised in its process; ``remote_type`` names the exception."""

    def __init__(self, remote_type: str, message: str, remote_traceback: str = "",
                 bad_input: bool = False):
        super().__init__(message)
        self.remote_type = remote_type
        self.remote_traceback = remote_traceback
        self.bad_input = bad_input  # a HeuresisError: its message names the problem


class PolicyDeadlineExceeded(BaseException):  # noqa: N818 - a control-flow signal
    """A policy call ran past the episode's wall deadline (BaseException: a policy's
    ``except Exception`` cannot swallow it in-process)."""


class UnsendableAction:
    """Stands for an action object the policy process could not send as JSON; the environment
    answers it with an error observation like any malformed action."""

    def __init__(self, description: str):
        self.description = description

    def __repr__(self) -> str:
        return f"<unsendable action: {self.description}>"


# ---- what crosses -----------------------------------------------------------------------------

def public_info(info: Mapping[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """The whitelisted part of an info dict (anything added to infos later stays behind)."""
    return {key: info[key] for key in keys if key in info}


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, tuple | set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def encode_reply(reply: Mapping[str, Any]) -> bytes:
    """A reply as JSON (the runner decodes JSON only; a value that is not JSON is described)."""
    try:
        return json.dumps(reply, default=_json_default).encode("utf-8")
    except (TypeError, ValueError, RecursionError) as exc:
        return json.dumps({"error": {"type": "PolicyReplyError", "message": (
            f"the policy returned something that is not JSON ({exc})"), "traceback": ""}}
        ).encode("utf-8")


def encode_action(action: Any) -> dict[str, Any]:
    """An action as the policy process sends it: JSON, bytes as base64, or a description."""
    if isinstance(action, bytes):
        return {"bytes": base64.b64encode(action).decode("ascii")}
    try:
        if isinstance(action, np.ndarray) and action.size == 1 and action.dtype.kind in "iu":
            action = int(action.reshape(()))
        text = json.dumps(action, default=_json_default)
        if len(text) > 4 * 2**20:
            raise ValueError("longer than 4 MB")
        return {"action": json.loads(text)}
    except Exception as exc:  # noqa: BLE001 - the env answers it as a malformed action
        return {"unsendable": f"{describe_object(action, 200)} ({type(exc).__name__})"}


def decode_action(reply: Any) -> Any:
    if isinstance(reply, dict) and len(reply) == 1:
        if "action" in reply:
            return reply["action"]
        if "bytes" in reply and isinstance(reply["bytes"], str):
            try:
                return base64.b64decode(reply["bytes"], validate=True)
            except ValueError:
                pass
        if "unsendable" in reply and isinstance(reply["unsendable"], str):
            return UnsendableAction(reply["unsendable"][:300])
    raise PolicyProcessError(f"the policy process sent an unreadable action "
                             f"{describe_object(reply, 120)}")


# ---- framing ----------------------------------------------------------------------------------

def write_frame(fd: int, payload: bytes) -> None:
    data = memoryview(_HEADER.pack(len(payload)) + payload)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exactly(fd: int, count: int, deadline: float | None) -> bytes:
    chunks, missing = [], count
    while missing:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
        chunk = os.read(fd, min(missing, 1 << 20))
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int, deadline: float | None = None) -> bytes:
    """One length-prefixed frame; EOFError when the other side is gone, TimeoutError at the
    deadline, PolicyProcessError for a frame above ``limit`` bytes."""
    (size,) = _HEADER.unpack(_read_exactly(fd, _HEADER.size, deadline))
    if size > limit:
        raise PolicyProcessError(f"the policy process sent a reply of {size:,} bytes; the "
                                 f"limit is {limit:,}")
    return _read_exactly(fd, size, deadline)


# ---- the runner's side ------------------------------------------------------------------------


"""A data-only serialization for cached results: JSON plus NumPy arrays in one ``.npz``.

Reading a file never runs code (no pickle: ``numpy.load(..., allow_pickle=False)`` and
``json.loads``). What can be stored: None, booleans, numbers (NaN and infinities included),
strings, bytes, lists, tuples, sets, dicts (any keys of these kinds), NumPy arrays of plain dtypes
and NumPy scalars, and objects of this project's own packages (``heuresis_env``, ``agents``,
``baselines``, ``heuresis``) that are dataclasses, enums, or have ``to_dict`` and a
``from_dict`` class method. A dataclass is rebuilt field by field without calling its
``__init__``; a class is looked up by name only in those packages' modules this process has
already imported (reading never imports), and must be of one of those kinds. Anything else raises :class:`UnsupportedValue` (the cache then keeps nothing).
"""

from __future__ import annotations

import dataclasses
import enum
import io
import json
import math
import sys
from typing import Any

import numpy as np

#: the packages whose classes may be named in a stored value
ALLOWED_PACKAGES = ("heuresis_env", "agents", "baselines", "heuresis")
_TREE = "__tree__"
FORMAT = 1


class UnsupportedValue(TypeError):
    """A value this format cannot hold (the caller does not store it)."""


def _class_name(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _allowed(module: str) -> bool:
    return module.split(".", 1)[0] in ALLOWED_PACKAGES


def _resolve(name: Any) -> type:
    """A class named by a stored value: of this project's packages, in a module this process
    has imported already (so reading a value never imports anything)."""
    if not isinstance(name, str) or ":" not in name:
        raise ValueError(f"a stored class name reads module:qualname, got {name!r}")
    module_name, qualname = name.split(":", 1)
    if not _allowed(module_name) or module_name not in sys.modules:
        raise ValueError(f"a stored value names a class outside this project's imported "
                         f"modules: {name!r}")
    target: Any = sys.modules[module_name]
    for part in qualname.split("."):
        target = getattr(target, part)
    if not isinstance(target, type):
        raise ValueError(f"{name!r} is not a class")
    return target


def _float(value: float) -> Any:
    return value if math.isfinite(value) else {"__float__": repr(value)}


class _Encoder:
    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def encode(self, value: Any) -> Any:  # noqa: PLR0911 - one branch per kind
        if value is None or isinstance(value, bool | str):
            return value
        if isinstance(value, enum.Enum):
            cls = type(value)
            if not _allowed(cls.__module__):
                raise UnsupportedValue(f"an enum of another package: {_class_name(cls)}")
            return {"__enum__": _class_name(cls), "value": self.encode(value.value)}
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return _float(value)
        if isinstance(value, bytes):
            key = f"a{len(self.arrays)}"
            self.arrays[key] = np.frombuffer(value, dtype=np.uint8)
            return {"__bytes__": key}
        if isinstance(value, np.ndarray | np.generic):
            array = np.asarray(value)
            if array.dtype.hasobject:
                raise UnsupportedValue("a NumPy array of Python objects")
            key = f"a{len(self.arrays)}"
            self.arrays[key] = array
            return {"__array__": key, "scalar": isinstance(value, np.generic)}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(v) for v in value]}
        if isinstance(value, set | frozenset):
            return {"__set__": [self.encode(v) for v in value],
                    "frozen": isinstance(value, frozenset)}
        if isinstance(value, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in value):
                return {k: self.encode(v) for k, v in value.items()}
            return {"__dict__": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        cls = type(value)
        if not _allowed(cls.__module__):
            raise UnsupportedValue(f"an object of another package: {_class_name(cls)}")
        if dataclasses.is_dataclass(value):
            return {"__dataclass__": _class_name(cls),
                    "fields": {f.name: self.encode(getattr(value, f.name))
                               for f in dataclasses.fields(value)}}
        if callable(getattr(value, "to_dict", None)) and callable(getattr(cls, "from_dict", None)):
            return {"__object__": _class_name(cls), "dict": self.encode(value.to_dict())}
        raise UnsupportedValue(f"an object this format cannot hold: {_class_name(cls)}")


def _decode(node: Any, arrays: Any) -> Any:  # noqa: PLR0911 - one branch per kind
    if isinstance(node, list):
        return [_decode(v, arrays) for v in node]
    if not isinstance(node, dict):
        return node
    if "__float__" in node:
        return float(node["__float__"])
    if "__bytes__" in node:
        return arrays[node["__bytes__"]].tobytes()
    if "__array__" in node:
        array = arrays[node["__array__"]]
        return array[()] if node.get("scalar") else array
    if "__tuple__" in node:
        return tuple(_decode(v, arrays) for v in node["__tuple__"])
    if "__set__" in node:
        items = [_decode(v, arrays) for v in node["__set__"]]
        return frozenset(items) if node.get("frozen") else set(items)
    if "__dict__" in node:
        return {_decode(k, arrays): _decode(v, arrays) for k, v in node["__dict__"]}
    if "__enum__" in node:
        cls = _resolve(node["__enum__"])
        if not issubclass(cls, enum.Enum):
            raise ValueError(f"{node['__enum__']} is not an enum")
        return cls(_decode(node["value"], arrays))
    if "__dataclass__" in node:
        cls = _resolve(node["__dataclass__"])
        if not dataclasses.is_dataclass(cls):
            raise ValueError(f"{node['__dataclass__']} is not a dataclass")
        names = {f.name for f in dataclasses.fields(cls)}
        fields = node.get("fields") or {}
        if set(fields) != names:
            raise ValueError(f"the stored fields of {node['__dataclass__']} differ from its "
                             "fields (another version)")
        obj = object.__new__(cls)
        for name, value in fields.items():
            object.__setattr__(obj, name, _decode(value, arrays))
        return obj
    if "__object__" in node:
        cls = _resolve(node["__object__"])
        from_dict = getattr(cls, "from_dict", None)
        if not callable(from_dict):
            raise ValueError(f"{node['__object__']} has no from_dict")
        return from_dict(_decode(node["dict"], arrays))
    return {k: _decode(v, arrays) for k, v in node.items()}


def dumps(value: Any) -> bytes:
    """``value`` as the bytes of an ``.npz`` archive; :class:`UnsupportedValue` when it
    holds something this format cannot."""
    encoder = _Encoder()
    tree = json.dumps({"format": FORMAT, "value": encoder.encode(value)}, allow_nan=False,
                      separators=(",", ":"))
    buffer = io.BytesIO()
    arrays: dict[str, Any] = {_TREE: np.frombuffer(tree.encode(), dtype=np.uint8),
                              **encoder.arrays}
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def loads(payload: bytes) -> Any:
    """The value of :func:`dumps`'s bytes; ``ValueError`` for anything else (never runs
    code)."""
    try:
        with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"not a stored value: {exc}") from None
    if _TREE not in arrays:
        raise ValueError("not a stored value: no tree")
    document = json.loads(arrays.pop(_TREE).tobytes().decode())
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("not a stored value of this format version")
    return _decode(document["value"], arrays)


__all__ = ["ALLOWED_PACKAGES", "UnsupportedValue", "dumps", "loads"]

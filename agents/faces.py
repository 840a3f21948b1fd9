"""The one way a package face of ``agents`` loads its names on first use.

A subpackage's ``__init__.py`` is its face: what other packages import. A face re-exports
light names only — importing it loads neither torch nor the evaluation stage
(``heuresis_env.evaluation``), so the ``heuresis`` command, the entry points of
``heuresis.policies`` and other packages pay for a heavy module only when they use a name
from it. A face whose modules are light imports them at module level; a face whose modules
are not (``agents.rl``, ``agents.amortized``, ``agents.probe``, ``agents.inspect_task``) is
lazy, always the same way::

    _EXPORTS = {"train": "training", ...}   # public name -> the module of this package
    __all__ = ["train", ...]                # the same names, spelled out for linters

    if TYPE_CHECKING:                       # what type checkers see: the same names
        from agents.rl.training import train

    __getattr__, __dir__ = lazy_face(__name__, _EXPORTS)

A public name never equals the name of one of the package's modules (importing a submodule
binds it on the package, which would then replace the name). ``tests/test_architecture.py``
checks all of this: every face imported in a fresh interpreter, the ``_EXPORTS`` table
against ``__all__`` and the ``TYPE_CHECKING`` imports, and no import of another subpackage's
modules past its face.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_face(package: str, exports: Mapping[str, str], *,
              check: Callable[[], None] | None = None,
              ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A lazy face's module-level ``__getattr__`` and ``__dir__``: a name of ``exports``
    (public name → module of ``package``) is imported on first use and then kept on the
    package; ``check`` runs first (e.g. a clear error when an optional extra is missing)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if check is not None:
            check()
        value = getattr(import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__

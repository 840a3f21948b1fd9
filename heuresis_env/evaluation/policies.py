"""Resolve a policy spec — a name registered in the ``heuresis.policies`` entry points, or
``module:attr`` — to a factory, and build a policy from it.

``heuresis_env`` imports no policy module by name: packages (``baselines``, ``agents``, or
anyone's) declare their policies as entry points whose value is a factory callable
``factory(**options) -> Policy`` (a :class:`~heuresis_env.policy.Policy` subclass qualifies).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from heuresis_env.errors import HeuresisError, UnknownNameError
from heuresis_env.policy import Policy, ReferencePolicy

#: the entry-point group that names policies (run in a separate process by the runner)
POLICY_ENTRY_POINT_GROUP = "heuresis.policies"
#: the entry-point group that names references needing the truth (the ideal oracle), run on
#: the referee's side (see :class:`~heuresis_env.policy.ReferencePolicy`)
REFERENCE_ENTRY_POINT_GROUP = "heuresis.references"


def _registered(group: str) -> dict[str, str]:
    return dict(_entry_points(group, tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _entry_points(group: str, search_path: tuple[str, ...]) -> dict[str, str]:
    """The group's entry points, read once per import path (scanning every installed
    distribution's metadata takes tens of milliseconds; a job checks each of its runs)."""
    from importlib.metadata import entry_points

    del search_path  # the cache key: a new import path may hold other distributions
    return {ep.name: ep.value for ep in sorted(entry_points(group=group), key=lambda ep: ep.name)}


def registered_policies() -> dict[str, str]:
    """Registered policy names → their ``module:attr`` values (entry points, sorted by name)."""
    return _registered(POLICY_ENTRY_POINT_GROUP)


def registered_references() -> dict[str, str]:
    """Registered reference names (they need the truth) → their ``module:attr`` values."""
    return _registered(REFERENCE_ENTRY_POINT_GROUP)


def check_policy_name(spec: str) -> None:
    """Refuse a name that is neither a registered policy nor a reference, listing both (a
    ``module:attr`` spec is checked where it is imported)."""
    if not isinstance(spec, str) or not spec.strip():
        raise HeuresisError(f"a policy spec must be a registered name or 'module:attr', "
                            f"got {spec!r}")
    spec = spec.strip()
    if ":" not in spec and spec not in {**registered_policies(), **registered_references()}:
        raise UnknownNameError("policy", spec, {**registered_policies(),
                                                **registered_references()})


def _unreadable_path_entries() -> list[str]:
    """Folders on ``sys.path`` (the working folder for "") this process cannot list."""
    found = []
    for entry in sys.path:
        folder = os.path.abspath(entry or ".")
        try:
            os.listdir(folder)
        except PermissionError:
            found.append(folder)
        except OSError:  # not there, or not a folder (a zip): nothing to say
            continue
    return found


def _import_attribute(target: str, spec: str) -> Any:
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise HeuresisError(f"policy {spec!r}: expected 'module:attr' (for example "
                            f"'mypackage.policies:MyPolicy'), got {target!r}")
    try:
        value: Any = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            unreadable = _unreadable_path_entries()
            if unreadable:  # issue 46, route 12: say why, rather than ask for PYTHONPATH
                raise HeuresisError(
                    f"policy {spec!r}: no module named {exc.name!r} here, and this process "
                    f"(uid {os.getuid()}, the policy's own: it runs apart from the runner) "
                    f"cannot read {', '.join(unreadable[:3])} on its path — a folder only "
                    "its owner can read (mode 0700, as mktemp -d makes it). Make it readable "
                    "by others (chmod o+rx on it and its parents) or put the policy in an "
                    "installed package") from None
            raise HeuresisError(f"policy {spec!r}: no module named {exc.name!r} (is it on "
                                "PYTHONPATH, or its package installed?)") from None
        raise
    for part in attribute.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise HeuresisError(f"policy {spec!r}: module {module_name!r} has no attribute "
                                f"{attribute!r}") from None
    return value


def resolve_policy_factory(spec: str) -> Callable[..., Policy]:
    """The factory behind a spec: an entry-point name, or ``module:attr`` for any policy
    (found on ``sys.path`` or in the working directory).

    An unknown name raises :class:`UnknownNameError` listing the registered names.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise HeuresisError(f"a policy spec must be a registered name or 'module:attr', "
                            f"got {spec!r}")
    spec = spec.strip()
    if ":" in spec:
        if os.getcwd() not in sys.path:  # like uvicorn: modules in the working directory
            sys.path.append(os.getcwd())
        factory = _import_attribute(spec, spec)
    else:
        known = {**registered_policies(), **registered_references()}
        if spec not in known:
            raise UnknownNameError("policy", spec, known)
        factory = _import_attribute(known[spec], spec)
    if not callable(factory):
        raise HeuresisError(f"policy {spec!r} resolves to {type(factory).__name__}, which is "
                            "not callable; give a Policy subclass or a factory function")
    return factory


def check_policy_options(spec: str, factory: Callable[..., Any], options: Mapping[str, Any]
                         ) -> None:
    """Refuse options the factory does not accept, naming the ones it does."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins and some C callables have no signature
        return
    try:
        signature.bind(**options)
    except TypeError as exc:
        accepted = [name for name, p in signature.parameters.items()
                    if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
        raise HeuresisError(f"policy {spec!r} does not accept the options {sorted(options)} "
                            f"({exc}); it accepts: {', '.join(accepted) or 'no options'}"
                            ) from None


def make_reference(spec: str, options: Mapping[str, Any] | None = None) -> ReferencePolicy:
    """Build a registered reference (``heuresis.references``) in this process; it must be a
    :class:`ReferencePolicy`."""
    known = registered_references()
    if spec not in known:
        raise UnknownNameError("reference", spec, known)
    reference = make_policy(spec, options)
    if not isinstance(reference, ReferencePolicy):
        raise HeuresisError(f"reference {spec!r} built a {type(reference).__name__}, not a "
                            "heuresis_env.policy.ReferencePolicy")
    return reference


def make_policy(spec: str, options: Mapping[str, Any] | None = None) -> Policy:
    """Build a policy (or a reference) from its spec and options, in this process; the result
    must be a :class:`Policy`. ``heuresis evaluate`` builds policies in a separate process
    (:mod:`heuresis_env.evaluation.policy_process`); this is for development and tests."""
    options = dict(options or {})
    factory = resolve_policy_factory(spec)
    check_policy_options(spec, factory, options)
    policy = factory(**options)
    if not isinstance(policy, Policy):
        raise HeuresisError(f"policy {spec!r} built a {type(policy).__name__}, not a "
                            "heuresis_env.policy.Policy")
    return policy


def parse_policy_options(items: Sequence[str] | None) -> dict[str, Any]:
    """``["k=v", ...]`` → a dict; each value is read as JSON when it parses, else as text."""
    options: dict[str, Any] = {}
    for item in items or ():
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise HeuresisError(f"a policy option is KEY=VALUE with KEY a Python identifier, "
                                f"got {item!r}")
        if key in options:
            raise HeuresisError(f"the policy option {key!r} is given twice")
        try:
            options[key] = json.loads(text)
        except json.JSONDecodeError:
            options[key] = text
    return options

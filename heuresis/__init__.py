"""Heuresis's tasks for inspect_ai, under the ``heuresis/`` namespace inspect gives a
package's tasks: ``inspect eval heuresis/causal_discovery`` and ``inspect eval heuresis/qa``.

inspect names a task by the top-level package that defines it, so the ``@task`` functions
live here (:mod:`heuresis.tasks`, registered through the ``inspect_ai`` entry point in
``setup.cfg``); everything they build is in :mod:`agents.inspect_task`. Install with the
``inspect`` extra: ``pip install -e '.[inspect]'``. See ``docs/inspect.md``.
"""

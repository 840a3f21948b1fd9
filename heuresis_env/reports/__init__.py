"""``heuresis report``: the paper's tables and figures from run directories.

:func:`build_report` reads run directories written by ``heuresis evaluate``
(:mod:`~heuresis_env.reports.loading`), computes the tables (:mod:`~heuresis_env.reports.tables`,
Table 4 from the traces in :mod:`~heuresis_env.studies.provenance`, Appendix F in
:mod:`~heuresis_env.studies.deletion_signals`), draws the figures
(:mod:`~heuresis_env.reports.figures`) and writes Markdown and one self-contained HTML page
(:mod:`~heuresis_env.reports.html`). Conventions: ``docs/reports.md``.
"""

from __future__ import annotations

from heuresis_env.evaluation.run_format import load_run
from heuresis_env.reports.build import ReportSummary, build_report
from heuresis_env.reports.loading import (
    PROBE_FILE,
    PROBE_FORMAT_VERSION,
    SELF_REPORTED,
    load_probe,
    load_runs,
)

__all__ = ["PROBE_FILE", "PROBE_FORMAT_VERSION", "SELF_REPORTED", "ReportSummary",
           "build_report", "load_probe", "load_run", "load_runs"]

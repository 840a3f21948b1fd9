"""The trace viewer: a static site showing what agents did in run directories.

A post-run tool, like the reports: it reads run directories (:mod:`heuresis_env.evaluation.
run_format`) and traces (:mod:`heuresis_env.trace_files`) and imports neither the environment
nor the toolbox. :func:`build_site` writes the site; ``heuresis view`` calls it (and can serve
it on 127.0.0.1). The page's script and style are shipped in ``static/``. See docs/viewer.md.
"""

from heuresis_env.viewer.site import SITE_FORMAT, SiteSummary, build_site, comparison

__all__ = ["SITE_FORMAT", "SiteSummary", "build_site", "comparison"]

"""merge_k and merge* for the reference results; the implementation is
:mod:`heuresis_env.discovery.graph_merge`, shared with the report's Table 4."""

from heuresis_env.discovery import best_k, merge_k, vote_counts

__all__ = ["best_k", "merge_k", "vote_counts"]

"""An episode's toolbox as a Model Context Protocol server (``heuresis mcp``; docs/mcp.md).

Each tool call is one step of a real :class:`~heuresis_env.env.HeuresisEnv` episode, under
the same budgets and with the same trace as any other harness; the official ``mcp`` SDK (the
``mcp`` extra) carries it over stdio or streamable HTTP on 127.0.0.1.
"""

from heuresis_env.mcp.server import EpisodeServer, ToolReply, mcp_server, serve_http, serve_stdio

__all__ = ["EpisodeServer", "ToolReply", "mcp_server", "serve_http", "serve_stdio"]

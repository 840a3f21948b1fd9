"""Serve a viewer site on the loopback interface (``heuresis view --serve``)."""

from __future__ import annotations

import functools
import os
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

HOST = "127.0.0.1"
#: the only host names a request may carry (a page of another site that a DNS name rebinds to
#: 127.0.0.1 sends its own name and is refused)
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def host_allowed(header: str | None) -> bool:
    """Whether a request's ``Host`` header names the loopback interface (any port)."""
    if not header:
        return False
    name = header.strip().lower()
    if name.startswith("["):
        name = name[: name.find("]") + 1] if "]" in name else name
    else:
        name = name.split(":", 1)[0]
    return name in LOOPBACK_NAMES


class _QuietHandler(SimpleHTTPRequestHandler):
    """Static files of one directory; requests are logged to stderr only on errors."""

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        if len(args) > 1 and str(args[1])[:1] in ("4", "5"):
            super().log_message(format, *args)

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if not host_allowed(self.headers.get("Host")):
            self.send_error(421, "Misdirected Request: this server answers only to the "
                                 "loopback names 127.0.0.1, localhost and [::1]")
            return False
        return True

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()


def site_server(directory: str | os.PathLike, port: int = 0) -> ThreadingHTTPServer:
    """An HTTP server for ``directory`` bound to 127.0.0.1 (``port`` 0: a free port); the
    caller runs ``serve_forever`` and closes it."""
    handler = functools.partial(_QuietHandler, directory=str(Path(directory).resolve()))
    return ThreadingHTTPServer((HOST, port), handler)


def serve_site(directory: str | os.PathLike, port: int = 8000,
               ready: threading.Event | None = None) -> None:
    """Serve ``directory`` on 127.0.0.1 until interrupted (Ctrl-C)."""
    server = site_server(directory, port)
    print(f"Serving {directory} at http://{HOST}:{server.server_address[1]}/ (Ctrl-C stops)",
          flush=True)
    if ready is not None:
        ready.set()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
    finally:
        server.server_close()

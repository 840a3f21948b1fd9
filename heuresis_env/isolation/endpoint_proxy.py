"""The network of a confined policy declared to need one: its endpoints, and nothing else.

A confined policy process always gets a network namespace whose only interface is loopback
(:mod:`heuresis_env.isolation.confinement`). When it is declared to need an API endpoint
(:func:`policy_endpoints`: ``--policy-network HOST:PORT``, a ``base_url`` option, or a
registered API policy), the runner starts an :class:`EndpointProxy` for it: an HTTP proxy on a
Unix socket, outside the namespace, that opens connections only to the declared
``host:port`` pairs — a ``CONNECT`` tunnel (HTTPS) or a plain HTTP request in absolute form —
and answers anything else with ``403 Forbidden`` and a warning in the runner's log. The
socket's folder is carried into the policy's mount namespace (read-only: connecting needs no
write), and inside, before the policy is built, :func:`start_relay` listens on the
namespace's own ``127.0.0.1`` and relays each connection to that socket;
``HTTPS_PROXY``/``HTTP_PROXY`` (both cases, ``NO_PROXY`` removed) point the policy's HTTP
clients at it (httpx, and so the OpenAI and Anthropic SDKs, honour them; so does urllib).

The relay runs in the policy's own process and may be misused by it freely: all it reaches is
the proxy, and the proxy reaches only the declared endpoints. Names are resolved by the proxy,
outside (the namespace has no DNS). What the policy sends through a tunnel is its business
(TLS to the endpoint); a connection to a declared endpoint is only ever to that endpoint.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from heuresis_env.errors import HeuresisError

__all__ = ["API_ENDPOINTS", "ENDPOINT_OPTIONS", "ENDPOINT_VARIABLES", "IN_PROCESS_BACKENDS",
           "PROXY_VARIABLES", "EndpointProxy", "parse_endpoint", "policy_endpoints",
           "proxy_environment", "start_relay"]

LOG = logging.getLogger(__name__)
#: registered policies that talk to a remote API, and the endpoints they use without a
#: ``base_url`` (the hosted services of ``agents.llm``'s backends)
API_ENDPOINTS: dict[str, tuple[str, ...]] = {
    "llm": ("api.openai.com:443", "api.anthropic.com:443")}
#: variables that name a registered API policy's base URL (``agents.llm.connection``'s
#: ``ENV_BASE_URL`` and ``SERVICE_VARIABLES``; a test keeps the two lists equal)
ENDPOINT_VARIABLES = ("HEURESIS_LLM_BASE_URL", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
#: a registered API policy's ``backend`` option (or ``$HEURESIS_LLM_BACKEND``) naming a model
#: that runs inside the policy's own process (``agents.llm``'s keyless backends: the heuristic
#: stand-in, a local model on CPU): it reaches its in-process server on the policy's own
#: loopback, so it needs no endpoint, and the policy gets no network
IN_PROCESS_BACKENDS = ("heuristic", "local")
BACKEND_OPTION, BACKEND_VARIABLE = "backend", "HEURESIS_LLM_BACKEND"
#: policy options naming the endpoint a policy talks to
ENDPOINT_OPTIONS = ("base_url",)
#: what points a confined policy's HTTP clients at its relay
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY",
                   "all_proxy")
_HEADER_LIMIT = 64 * 1024
_TIMEOUT = 30.0
_IDLE_SECONDS = 600.0
_SOCKET_PATH_LIMIT = 100  # sockaddr_un holds 108 bytes


def parse_endpoint(text: str) -> str:
    """``host:port`` of an endpoint given as ``host:port``, ``[v6]:port`` or a URL (its default
    port from the scheme); a clear error for anything else."""
    value = str(text).strip()
    if "://" in value:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise HeuresisError(f"an endpoint URL must be http(s)://HOST[:PORT]/..., got "
                                f"{text!r}")
        try:
            port = parts.port or (443 if parts.scheme == "https" else 80)
        except ValueError:
            raise HeuresisError(f"the endpoint {text!r} has a bad port") from None
        host = parts.hostname
    else:
        host, sep, port_text = value.rpartition(":")
        host = host.strip("[]")
        if not sep or not host or not port_text.isdigit():
            raise HeuresisError(f"a network endpoint is HOST:PORT (or a URL), got {text!r}")
        port = int(port_text)
    if not 0 < port < 65536:
        raise HeuresisError(f"the endpoint {text!r} has a port outside 1..65535")
    host = host.lower()
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def policy_endpoints(spec: str, options: Mapping[str, Any], declared: bool | Sequence[str],
                     environment: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The endpoints a policy may reach (none: loopback only): those declared
    (``--policy-network HOST:PORT``), a ``base_url`` option's, and for a registered API policy
    the base URLs in ``environment``'s :data:`ENDPOINT_VARIABLES`, else its services' —
    unless its backend runs in its own process (:data:`IN_PROCESS_BACKENDS`).

    ``declared=True`` (the network is needed, no endpoint named) with none found raises."""
    environment = os.environ if environment is None else environment
    found: list[str] = []
    if not isinstance(declared, bool):
        found += [parse_endpoint(item) for item in declared]
    found += [parse_endpoint(options[name]) for name in ENDPOINT_OPTIONS if options.get(name)]
    backend = options.get(BACKEND_OPTION) or environment.get(BACKEND_VARIABLE)
    if spec in API_ENDPOINTS and not found and backend not in IN_PROCESS_BACKENDS:
        named = [parse_endpoint(environment[name]) for name in ENDPOINT_VARIABLES
                 if environment.get(name)]
        found += named or list(API_ENDPOINTS[spec])
    if declared is True and not found:
        raise HeuresisError(f"policy {spec!r} is declared to need the network but names no "
                            "endpoint: give --policy-network HOST:PORT (policy_network="
                            "['HOST:PORT']) or a base_url option; a confined policy reaches "
                            "only the endpoints it declares")
    return tuple(dict.fromkeys(found))


def _pump(first: socket.socket, second: socket.socket) -> None:
    """Copy bytes both ways until either side closes or both are idle for long; close both."""
    pair = {first: second, second: first}
    try:
        while True:
            readable, _, _ = select.select(list(pair), [], [], _IDLE_SECONDS)
            if not readable:
                return
            for source in readable:
                data = source.recv(65536)
                if not data:
                    return
                pair[source].sendall(data)
    except OSError:
        return
    finally:
        for side in pair:
            try:
                side.close()
            except OSError:
                pass


def _read_head(connection: socket.socket, data: bytes = b"") -> tuple[bytes, bytes]:
    """The request head (through the blank line) and whatever followed it (``data``: bytes
    already read from the connection)."""
    while b"\r\n\r\n" not in data:
        if len(data) > _HEADER_LIMIT:
            raise ValueError("request head too long")
        chunk = connection.recv(65536)
        if not chunk:
            raise ValueError("connection closed before a request")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head + b"\r\n\r\n", rest


def _reply(connection: socket.socket, status: str, text: str) -> None:
    body = (text + "\n").encode()
    try:
        connection.sendall(f"HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                           f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                           .encode() + body)
    except OSError:
        pass


def _origin_form(head: bytes) -> tuple[str, str, bytes]:
    """(method, endpoint, head rewritten to origin form) of a plain-HTTP proxy request, whose
    target is an absolute ``http://`` URL; HeuresisError for anything else."""
    line = head.split(b"\r\n", 1)[0].decode("latin-1")
    try:
        method, target, version = line.split(" ", 2)
    except ValueError:
        raise HeuresisError("not an HTTP request line") from None
    parts = urlsplit(target)
    if parts.scheme != "http" or not parts.hostname:
        raise HeuresisError("not an absolute http URL")
    endpoint = parse_endpoint(f"http://{parts.netloc}")
    origin = f"{method} {parts.path or '/'}{'?' + parts.query if parts.query else ''} {version}"
    return method, endpoint, origin.encode("latin-1") + head[len(line):]


def _body_length(head: bytes) -> int | None:
    """A request's Content-Length (0 without one); None for a chunked (or unparseable) body."""
    length = 0
    for raw in head.split(b"\r\n")[1:]:
        name, _, value = raw.partition(b":")
        key = name.strip().lower()
        if key == b"transfer-encoding":
            return None
        if key == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return None
    return length if length >= 0 else None


def _copy(source: socket.socket, target: socket.socket) -> None:
    """Copy bytes one way until ``source`` closes, then close both."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                return
            target.sendall(data)
    except OSError:
        return
    finally:
        for side in (source, target):
            try:
                side.close()
            except OSError:
                pass


class EndpointProxy:
    """The runner's side: an HTTP proxy on a Unix socket that reaches only ``allowed``
    (``host:port`` strings from :func:`parse_endpoint`). ``refused`` lists what it refused."""

    def __init__(self, allowed: Iterable[str], folder: str | None = None):
        self.allowed = frozenset(parse_endpoint(item) for item in allowed)
        if not self.allowed:
            raise HeuresisError("an endpoint proxy needs at least one endpoint")
        base = folder or tempfile.gettempdir()
        if len(os.path.join(base, "heuresis-proxy-xxxxxxxx", "proxy.sock")) > \
                _SOCKET_PATH_LIMIT:
            base = "/tmp"  # a Unix socket's path is short
        self.folder = tempfile.mkdtemp(prefix="heuresis-proxy-", dir=base)
        os.chmod(self.folder, 0o711)  # a confined policy's own uid reaches the socket
        self.path = os.path.join(self.folder, "proxy.sock")
        self.refused: list[str] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        os.chmod(self.path, 0o666)
        self._server.listen(64)
        self._closed = False
        threading.Thread(target=self._accept, name="heuresis-endpoint-proxy",
                         daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _refuse(self, connection: socket.socket, target: str, method: str) -> None:
        self.refused.append(target)
        LOG.warning("policy network proxy: refused %s %s: not a declared endpoint (declared: "
                    "%s)", method, target, ", ".join(sorted(self.allowed)))
        _reply(connection, "403 Forbidden", f"heuresis: {target} is not an endpoint this "
                                            "policy declared")

    def _serve(self, connection: socket.socket) -> None:
        connection.settimeout(_TIMEOUT)
        try:
            head, rest = _read_head(connection)
            line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, version = line.split(" ", 2)
        except (OSError, ValueError):
            _reply(connection, "400 Bad Request", "heuresis: not an HTTP proxy request")
            connection.close()
            return
        try:
            if method.upper() == "CONNECT":
                endpoint = parse_endpoint(target)
            else:
                method, endpoint, _ = _origin_form(head)
        except HeuresisError:
            self._refuse(connection, target, method)
            connection.close()
            return
        if endpoint not in self.allowed:
            self._refuse(connection, endpoint, method)
            connection.close()
            return
        host, _, port = endpoint.rpartition(":")
        try:
            upstream = socket.create_connection((host.strip("[]"), int(port)), timeout=_TIMEOUT)
        except OSError as exc:
            _reply(connection, "502 Bad Gateway", f"heuresis: {endpoint}: {exc}")
            connection.close()
            return
        connection.settimeout(None)
        upstream.settimeout(None)
        if method.upper() == "CONNECT":
            try:
                connection.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
            except OSError:
                upstream.close()
                connection.close()
                return
            _pump(connection, upstream)
            return
        # plain HTTP: the responses flow back as they come; every request of a kept-alive
        # connection is rewritten to origin form and must name the same endpoint
        threading.Thread(target=_copy, args=(upstream, connection), daemon=True).start()
        self._forward_requests(connection, upstream, endpoint, head, rest)

    def _forward_requests(self, connection: socket.socket, upstream: socket.socket,
                          endpoint: str, head: bytes, rest: bytes) -> None:
        try:
            while True:
                method, named, forward = _origin_form(head)
                if named != endpoint:  # another host on this connection: refused, closed
                    self._refuse(connection, named, method)
                    return
                length = _body_length(head)
                upstream.sendall(forward)
                if length is None:  # a chunked body: the rest of this connection as it is
                    if rest:
                        upstream.sendall(rest)
                    _copy(connection, upstream)
                    return
                while len(rest) < length:
                    chunk = connection.recv(65536)
                    if not chunk:
                        return
                    rest += chunk
                upstream.sendall(rest[:length])
                rest = rest[length:]
                head, rest = _read_head(connection, rest)
        except (OSError, ValueError, HeuresisError):
            return
        finally:
            for side in (connection, upstream):
                try:
                    side.close()
                except OSError:
                    pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._server.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._server.close()
        for path in (self.path, self.folder):
            try:
                (os.rmdir if path == self.folder else os.unlink)(path)
            except OSError:
                pass


def start_relay(socket_path: str) -> int:
    """In the confined policy: listen on this namespace's 127.0.0.1 and relay every connection
    to the proxy's Unix socket (daemon threads); returns the port."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(64)

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                upstream.connect(socket_path)
            except OSError:
                upstream.close()
                _reply(connection, "502 Bad Gateway", "heuresis: the endpoint proxy is gone")
                connection.close()
                continue
            threading.Thread(target=_pump, args=(connection, upstream), daemon=True).start()

    threading.Thread(target=accept, name="heuresis-proxy-relay", daemon=True).start()
    return int(server.getsockname()[1])


def proxy_environment(port: int) -> dict[str, str]:
    """The variables that send a policy's HTTP clients through its relay on ``port``."""
    address = f"http://127.0.0.1:{port}"
    return dict.fromkeys(PROXY_VARIABLES, address)

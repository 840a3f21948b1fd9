"""The runner's endpoint proxy on its own (no namespace): real sockets, a real origin server,
the relay a confined policy starts, and the HTTP clients a policy uses. The confined path
end to end is in tests/adversarial/test_confinement.py."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from heuresis_env.isolation.endpoint_proxy import EndpointProxy, start_relay


class _Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real API server
    seen: list[tuple[str, str, int]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        type(self).seen.append((self.command, self.path, self.client_address[1]))
        reply = b"ok " + self.path.encode() + b" " + body
        self.send_response(200 if self.path.startswith("/") else 404)
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    do_GET = do_POST = _answer  # noqa: N815 - http.server's naming

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def origin():
    _Origin.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Origin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_every_request_of_a_kept_alive_connection_reaches_the_origin_in_origin_form(
        origin, tmp_path):
    port = origin.server_address[1]
    proxy = EndpointProxy([f"127.0.0.1:{port}"], folder=str(tmp_path))
    try:
        relay = start_relay(proxy.path)
        connection = http.client.HTTPConnection("127.0.0.1", relay, timeout=30)
        for body in (b"first", b"second", b""):
            connection.request("POST", f"http://127.0.0.1:{port}/v1/chat?x=1", body=body)
            response = connection.getresponse()
            assert response.status == 200
            assert response.read() == b"ok /v1/chat?x=1 " + body
        # the same connection naming an undeclared endpoint: refused, never forwarded
        connection.request("GET", "http://127.0.0.1:9/v1/models")
        response = connection.getresponse()
        assert response.status == 403 and b"not an endpoint" in response.read()
        connection.close()
    finally:
        proxy.close()
    assert [(method, path) for method, path, _ in _Origin.seen] == \
        [("POST", "/v1/chat?x=1")] * 3
    assert len({client_port for _, _, client_port in _Origin.seen}) == 1  # kept alive
    assert proxy.refused == ["127.0.0.1:9"]


def test_an_http_client_through_the_relay_makes_several_calls(origin, tmp_path):
    httpx = pytest.importorskip("httpx")
    port = origin.server_address[1]
    proxy = EndpointProxy([f"127.0.0.1:{port}"], folder=str(tmp_path))
    try:
        relay = start_relay(proxy.path)
        with httpx.Client(proxy=f"http://127.0.0.1:{relay}", timeout=30) as client:
            replies = [client.post(f"http://127.0.0.1:{port}/v1/chat/completions",
                                   content=b"%d" % k) for k in range(3)]
    finally:
        proxy.close()
    assert [reply.status_code for reply in replies] == [200, 200, 200]
    assert [reply.content for reply in replies] == \
        [b"ok /v1/chat/completions %d" % k for k in range(3)]

"""DI-engine's HttpEngine and address helpers at ding.interaction.base, against a local HTTP server."""
import ipaddress
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

requests = pytest.importorskip("requests")

from ding.interaction.base import HttpEngine, get_host_ip, get_http_engine_class, split_http_address  # noqa: E402
from ding.parallel.transport import find_free_port  # noqa: E402


class _Handler(BaseHTTPRequestHandler):
    seen: list = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        _Handler.seen.append((self.command, self.path, dict(self.headers), body))
        status = 404 if self.path.rstrip("/").endswith("404") else 200
        payload = json.dumps({"path": self.path, "ok": status == 200}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    _Handler.seen = []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv.server_address[1]
    srv.shutdown()
    srv.server_close()
    thread.join()


def test_request_joins_the_base_path_and_raises_on_an_error_status(server):
    with HttpEngine("127.0.0.1", server, path="/this/is") as engine:
        assert engine.get_url("200") == f"http://127.0.0.1:{server}/this/is/200"
        response = engine.request("GET", "200", {"a": 1})
        assert response.status_code == 200 and response.json() == {"path": "/this/is/200", "ok": True}
        assert json.loads(_Handler.seen[-1][3]) == {"a": 1}  # the data goes as a JSON body
        with pytest.raises(requests.HTTPError) as info:
            engine.request("GET", "/404")
        assert info.value.response.status_code == 404
        assert engine.request("GET", "404", raise_for_status=False).status_code == 404


def test_get_http_engine_class_headers_body_and_error_hooks(server):
    token = ["first"]
    engine_cls = get_http_engine_class(
        headers={"Token": lambda: token[0], "Who": lambda: "me"},
        data_processor=lambda d: {"data": json.dumps(d)},
        http_error_gene=lambda e: RuntimeError(f"status {e.response.status_code}"),
    )()
    assert issubclass(engine_cls, HttpEngine)
    engine = engine_cls("127.0.0.1", server)
    engine.request("POST", "x", {"a": "b"})
    _, path, headers, body = _Handler.seen[-1]
    assert path == "/x" and headers["Token"] == "first" and headers["Who"] == "me"
    assert json.loads(body) == {"data": json.dumps({"a": "b"})}
    token[0] = "second"  # headers are evaluated per request
    engine.request("GET", "x", headers={"Who": "you"})
    assert _Handler.seen[-1][2]["Token"] == "second" and _Handler.seen[-1][2]["Who"] == "you"
    with pytest.raises(RuntimeError, match="status 404"):
        engine.request("GET", "404")
    engine.close()


def test_a_refused_connection_is_retried_then_raised():
    engine = HttpEngine("127.0.0.1", find_free_port(), timeout=2.0)
    with pytest.raises(requests.ConnectionError):
        engine.request("GET", "ping", retries=2, retry_waiting=0.0)


def test_bad_host_or_port_is_refused():
    with pytest.raises(ValueError, match="port must be an int"):
        HttpEngine("127.0.0.1", 0)
    with pytest.raises(ValueError, match="host must be"):
        HttpEngine("", 80)


def test_split_http_address():
    assert split_http_address("http://1.2.3.4") == ("1.2.3.4", 80, False, "")
    assert split_http_address("HTTPS://1.2.3.4") == ("1.2.3.4", 443, True, "")
    assert split_http_address("http://1.2.3.4", default_port=8080) == ("1.2.3.4", 8080, False, "")
    assert split_http_address("https://host.example:8787/a/b") == ("host.example", 8787, True, "/a/b")
    with pytest.raises(ValueError, match="not an http:// or https:// address"):
        split_http_address("ftp://1.2.3.4")
    with pytest.raises(ValueError, match="not an http:// or https:// address"):
        split_http_address("1.2.3.4:80")
    with pytest.raises(ValueError, match="invalid port"):
        split_http_address("http://1.2.3.4:99999")


def test_get_host_ip_is_an_ipv4_address():
    assert isinstance(ipaddress.ip_address(get_host_ip()), ipaddress.IPv4Address)

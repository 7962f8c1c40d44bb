"""The one guarded path for outbound requests (common/outbound.py), against a real HTTP server on
loopback. Loopback is itself a refused range, so each test that expects a fetch to succeed lists
127.0.0.1 in OUTBOUND_PRIVATE_ALLOWLIST, as a lab would list its own internal server."""
from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from common import outbound
from common.outbound import OutboundBlocked, OutboundTimeout, OutboundTooLarge


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]] = []

    def log_message(self, *args: Any) -> None:
        pass

    def _reply(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization")})
        path = self.path[3:] if self.path.startswith("/v1/") else self.path
        if path == "/ok":
            self._reply(200, b'{"ok": true}', {"Content-Type": "application/json"})
        elif path.startswith("/redirect-to/"):
            self._reply(302, headers={"Location": path[len("/redirect-to/"):]})
        elif self.path == "/loop":
            self._reply(302, headers={"Location": "/loop"})
        elif self.path == "/big":
            self._reply(200, b"x" * 5000)
        elif self.path == "/big-chunked":  # no Content-Length: the cap must hold while reading
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self._write_until_gone([b"y" * 1000] * 50, pause=0.0)
        elif self.path == "/slow":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self._write_until_gone([b"z"] * 100, pause=0.1)  # never idle for a whole timeout, slow in all
        else:
            self._reply(404, b"secret body that must not be echoed")

    do_POST = do_GET

    def _write_until_gone(self, chunks: list[bytes], pause: float) -> None:
        """Write the chunks (``pause`` s apart) until the client hangs up: the product's cap or timeout
        closes the connection early, and the handler must end then, not keep a thread writing (and
        printing a broken pipe's traceback) into later tests."""
        for chunk in chunks:
            try:
                self.wfile.write(chunk)
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                return
            time.sleep(pause)


class _Server(ThreadingHTTPServer):
    """Joins its request threads when closed (the fixture's end), so no handler outlives its test."""

    daemon_threads = False
    block_on_close = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client that hung up is expected here
            super().handle_error(request, client_address)


@pytest.fixture
def server() -> Iterator[str]:
    _Handler.seen = []
    httpd = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def loopback_allowed(settings: Any) -> None:
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]


@pytest.mark.parametrize("url", [
    "file:///etc/passwd", "gopher://127.0.0.1:70/x", "ftp://example.com/", "javascript:alert(1)", "//example.com/",
    "http://user:pw@example.com/", "http://example.com@127.0.0.1/", "http:///nohost", "http://exa mple.com/",
    "http://example.com/\x00", "", "x" * 3000,
])
def test_only_plain_http_urls_pass_the_checker(url: str) -> None:
    with pytest.raises(OutboundBlocked):
        outbound.check_url(url)


@pytest.mark.parametrize("ip", [
    "127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "224.0.0.1", "::1", "fe80::1", "fc00::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254", "2002:7f00:1::",
])
def test_internal_addresses_are_refused(ip: str) -> None:
    assert outbound.address_refusal(ip)


def test_public_addresses_pass_and_the_allowlist_exempts(settings: Any) -> None:
    assert outbound.address_refusal("93.184.216.34") is None
    assert outbound.address_refusal("2606:4700::1111") is None
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["10.0.0.0/8"]
    assert outbound.address_refusal("10.9.9.9") is None
    assert outbound.address_refusal("192.168.1.1")


def test_loopback_server_is_refused_by_default(server: str) -> None:
    with pytest.raises(OutboundBlocked, match="loopback"):
        outbound.fetch("GET", f"{server}/ok")
    assert _Handler.seen == []  # refused before a byte was sent


def test_metadata_address_is_refused_even_by_name(monkeypatch: Any) -> None:
    real = socket.getaddrinfo

    def fake(host: str, *a: Any, **k: Any) -> Any:
        if host == "metadata.test":
            return real("169.254.169.254", *a, **k)
        return real(host, *a, **k)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    with pytest.raises(OutboundBlocked, match="link-local"):
        outbound.fetch("GET", "http://metadata.test/latest/meta-data/")


def test_dns_rebinding_is_checked_at_connect_time(server: str, loopback_allowed: None, settings: Any,
                                                  monkeypatch: Any) -> None:
    """A name that resolves to an allowed address at one lookup and to an internal one at the next:
    the address checked is the address connected to, at every connection."""
    port = int(server.rsplit(":", 1)[1])
    answers = iter(["127.0.0.1", "10.0.0.1"])
    real = socket.getaddrinfo

    def fake(host: str, *a: Any, **k: Any) -> Any:
        if host == "rebind.test":
            return real(next(answers), *a, **k)
        return real(host, *a, **k)
    monkeypatch.setattr(socket, "getaddrinfo", fake)
    assert outbound.fetch("GET", f"http://rebind.test:{port}/ok").status_code == 200
    with pytest.raises(OutboundBlocked, match="10.0.0.1"):
        outbound.fetch("GET", f"http://rebind.test:{port}/ok")


def test_allowed_fetch_returns_the_body(server: str, loopback_allowed: None) -> None:
    r = outbound.fetch("GET", f"{server}/ok")
    assert r.status_code == 200 and r.json() == {"ok": True}


def test_redirect_to_internal_address_is_refused(server: str, settings: Any) -> None:
    settings.OUTBOUND_PRIVATE_ALLOWLIST = ["127.0.0.1/32"]
    with pytest.raises(OutboundBlocked, match="link-local"):
        outbound.fetch("GET", f"{server}/redirect-to/http://169.254.169.254/latest/")
    with pytest.raises(OutboundBlocked, match="http and https"):
        outbound.fetch("GET", f"{server}/redirect-to/file:///etc/passwd")


def test_redirects_are_bounded(server: str, loopback_allowed: None) -> None:
    with pytest.raises(OutboundBlocked, match="redirects more than 3"):
        outbound.fetch("GET", f"{server}/loop")
    r = outbound.fetch("GET", f"{server}/redirect-to/{server}/ok")
    assert r.status_code == 200 and r.redirects == [f"{server}/ok"]


def test_allowed_bases_hold_across_redirects_and_keep_the_credential_home(server: str, loopback_allowed: None) -> None:
    base = f"{server}/v1"
    with pytest.raises(OutboundBlocked, match="not one of the allowed bases"):
        outbound.fetch("GET", f"{server}/ok", allowed_bases=[base], headers={"Authorization": "Bearer sk-1"})
    for sneaky in (f"{server}/v1/../ok", f"{server}/v1/%2e%2e/ok", f"{server}/v1/..\\ok"):
        with pytest.raises(OutboundBlocked, match="segments"):
            outbound.fetch("GET", sneaky, allowed_bases=[base], headers={"Authorization": "Bearer sk-1"})
    with pytest.raises(OutboundBlocked, match="redirect to"):
        outbound.fetch("GET", f"{server}/v1/redirect-to/{server}/ok", allowed_bases=[base],
                       headers={"Authorization": "Bearer sk-1"})
    assert all(s["auth"] is None or s["path"].startswith("/v1") for s in _Handler.seen)
    # same host, another port: another origin, so the secret header is dropped on the way
    other = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=other.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        _Handler.seen = []
        target = f"http://127.0.0.1:{other.server_address[1]}/ok"
        r = outbound.fetch("GET", f"{server}/redirect-to/{target}", headers={"Authorization": "Bearer sk-1"})
        assert r.status_code == 200
        assert [s["auth"] for s in _Handler.seen] == ["Bearer sk-1", None]
    finally:
        other.shutdown()
        other.server_close()


def test_under_base_compares_origin_and_path_segments() -> None:
    bases = ["https://api.openai.com", "https://models.example.org/v1/"]
    assert outbound.under_base("https://api.openai.com/v1/images/generations", bases)
    assert outbound.under_base("https://API.openai.com:443/v1", bases)
    assert outbound.under_base("https://models.example.org/v1/chat", bases)
    assert not outbound.under_base("https://models.example.org/v10/chat", bases)
    assert not outbound.under_base("http://api.openai.com/v1", bases)
    assert not outbound.under_base("https://api.openai.com.evil.test/v1", bases)
    assert not outbound.under_base("https://api.openai.com:8443/v1", bases)


def test_size_cap_holds_with_and_without_content_length(server: str, loopback_allowed: None) -> None:
    with pytest.raises(OutboundTooLarge, match="announces 5,000 bytes"):
        outbound.fetch("GET", f"{server}/big", max_bytes=1000)
    with pytest.raises(OutboundTooLarge, match="more than 1,000 bytes"):
        outbound.fetch("GET", f"{server}/big-chunked", max_bytes=1000)
    assert len(outbound.fetch("GET", f"{server}/big", max_bytes=5000).content) == 5000


def test_whole_exchange_has_a_deadline(server: str, loopback_allowed: None) -> None:
    started = time.monotonic()
    with pytest.raises(OutboundTimeout):
        outbound.fetch("GET", f"{server}/slow", timeout=1.0, deadline=1.0)
    assert time.monotonic() - started < 5


def test_errors_never_carry_the_body_and_clip_the_url(server: str, loopback_allowed: None) -> None:
    r = outbound.fetch("GET", f"{server}/missing")
    assert r.status_code == 404  # the caller decides what of a body it keeps
    long_url = "http://" + "a" * 1000 + ".test/"
    with pytest.raises(OutboundBlocked) as info:
        outbound.check_url(long_url, allowed_bases=["https://api.openai.com"])
    assert len(str(info.value)) < 400
    assert outbound.clip("x" * 500) == "x" * 199 + "\u2026"

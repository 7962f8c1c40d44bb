"""The one guarded path for every outbound HTTP request whose URL comes from outside the code.

A researcher's spec, an import row or a remote service's redirect can name any URL. Such a URL is
requested only through :func:`fetch`, which enforces, on every hop:

- **scheme**: http or https only (no ``file:``, ``gopher:``, ``ftp:`` ...), no user-info in the URL;
- **allow-list** (``allowed_bases``, when the caller gives one): the URL must lie under one of the
  bases (same scheme, host and port, path below the base's path); a redirect that leaves them is
  refused, so a credential is only ever sent to an allowed base;
- **address**: the host is resolved *when the connection is made*, and every address it resolves to
  must be public: private, loopback, link-local (cloud metadata 169.254.169.254), shared (100.64/10),
  multicast, reserved and unspecified ranges are refused, including IPv4 written inside IPv6.
  The socket then connects to the checked address itself, so a DNS answer that changes between a
  check and the connection (DNS rebinding) cannot slip through. ``OUTBOUND_PRIVATE_ALLOWLIST``
  (deployment setting, CIDRs) exempts named internal networks, e.g. a lab's own VLM server;
- **redirects**: followed by hand (at most ``max_redirects``), each one checked as above; secret
  headers (``Authorization``, ``Api-Key``, ``X-Api-Key``, ``Cookie``) are dropped when the origin changes;
- **size and time**: the body is read in chunks and refused past ``max_bytes`` (also when
  ``Content-Length`` announces more); every network step has ``timeout`` and the whole exchange,
  redirects included, a ``deadline``; proxies from the environment are ignored (``trust_env=False``).

Errors are :class:`OutboundError` subclasses whose messages name the URL clipped to 200 characters and
never contain a response body.
"""
from __future__ import annotations

import ipaddress
import re
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit

import httpcore
import httpx
from django.conf import settings

DEFAULT_TIMEOUT_S = 30.0
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
SECRET_HEADERS = frozenset({"authorization", "api-key", "x-api-key", "cookie", "proxy-authorization"})
_REDIRECTS = (301, 302, 303, 307, 308)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class OutboundError(Exception):
    """An outbound request that was refused or failed; the message is safe to store and show."""


class OutboundBlocked(OutboundError):
    """The URL (or a redirect, or an address it resolves to) is not allowed."""


class OutboundTooLarge(OutboundError):
    """The response body is larger than allowed."""


class OutboundTimeout(OutboundError):
    """A network step or the whole exchange took too long."""


class OutboundTransportError(OutboundError):
    """The connection failed (refused, reset, TLS error ...)."""


def clip(value: Any, limit: int = 200) -> str:
    """`value` as text of at most `limit` characters (an ellipsis marks the cut): for error messages
    that name an outside value without echoing it whole."""
    text = str(value)
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "\u2026"


# -- URL checks -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Origin:
    scheme: str
    host: str
    port: int
    path: str


_CONTROL = re.compile(r"[\x00-\x20\x7f]")  # spaces and control characters (one scan, not a loop)


def _origin(url: str) -> _Origin:
    """Parse and check one URL; raises OutboundBlocked for anything but a plain http(s) URL."""
    if not isinstance(url, str) or not url or len(url) > 2048:
        raise OutboundBlocked(f"not a URL of at most 2048 characters: {clip(url)!r}")
    if _CONTROL.search(url):
        raise OutboundBlocked(f"URL contains spaces or control characters: {clip(url)!r}")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise OutboundBlocked(f"malformed URL {clip(url)!r}: {clip(exc)}") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise OutboundBlocked(f"only http and https URLs are allowed, got {clip(scheme or '(none)', 20)!r}")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise OutboundBlocked(f"URL must not carry user information: {clip(url)!r}")
    segments = unquote(parts.path).replace("\\", "/").split("/")
    if "." in segments or ".." in segments:
        # A base's path prefix means nothing once "/v1/../x" is resolved to "/x" by the client.
        raise OutboundBlocked(f"URL path must not contain '.' or '..' segments: {clip(url)!r}")
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise OutboundBlocked(f"URL has no host: {clip(url)!r}")
    return _Origin(scheme, host, port or _DEFAULT_PORTS[scheme], parts.path or "/")


def under_base(url: str, bases: Iterable[str]) -> bool:
    """Whether `url` lies under one of `bases`: same scheme, host and port, and a path equal to the
    base's path or below it at a segment boundary (``/v1`` admits ``/v1/x``, not ``/v10``)."""
    try:
        o = _origin(url)
    except OutboundBlocked:
        return False
    for base in bases:
        try:
            b = _origin(base)
        except OutboundBlocked:
            continue
        prefix = b.path.rstrip("/")
        if (o.scheme, o.host, o.port) == (b.scheme, b.host, b.port) and (
                not prefix or o.path == prefix or o.path.startswith(prefix + "/")):
            return True
    return False


def check_url(url: str, *, allowed_bases: Sequence[str] | None = None, what: str = "URL") -> str:
    """Validate `url` without fetching it (scheme, user-info, allow-list): for spec and import
    validators that must answer 400 before anything runs. Returns the URL; raises OutboundBlocked."""
    _origin(url)
    if allowed_bases is not None and not under_base(url, allowed_bases):
        raise OutboundBlocked(f"{what} {clip(url)!r} is not one of the allowed bases set by the deployment: "
                              f"{', '.join(clip(b, 80) for b in allowed_bases) or '(none)'}")
    return url


# -- address checks ---------------------------------------------------------------------------------
def _exempt_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    raw = getattr(settings, "OUTBOUND_PRIVATE_ALLOWLIST", []) or []
    return [ipaddress.ip_network(str(n).strip(), strict=False) for n in raw if str(n).strip()]


def address_refusal(ip_text: str) -> str | None:
    """Why a connection to `ip_text` is refused (None: it is allowed)."""
    try:
        ip = ipaddress.ip_address(ip_text.split("%", 1)[0])
    except ValueError:
        return f"{clip(ip_text, 60)} is not an IP address"
    if any(ip in net for net in _exempt_networks()):
        return None
    candidates = [ip]
    if isinstance(ip, ipaddress.IPv6Address):
        for embedded in (ip.ipv4_mapped, ip.sixtofour, (ip.teredo or (None, None))[1]):
            if embedded is not None:
                candidates.append(embedded)
    for c in candidates:
        if c.is_loopback:
            return f"{ip} is a loopback address"
        if c.is_link_local:
            return f"{ip} is a link-local address (cloud metadata lives there)"
        if c.is_multicast:
            return f"{ip} is a multicast address"
        if c.is_unspecified or c.is_reserved:
            return f"{ip} is a reserved address"
        if c.is_private or not c.is_global:
            return f"{ip} is a private or internal address"
    return None


class _GuardedBackend(httpcore.SyncBackend):
    """httpcore's socket backend, resolving the host itself and connecting only to checked addresses."""

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as exc:
            raise httpcore.ConnectError(f"cannot resolve {clip(host, 100)}: {clip(exc, 100)}") from None
        addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
        for address in addresses:  # every answer must pass: a mixed answer is refused whole
            reason = address_refusal(address)
            if reason:
                raise _AddressRefused(f"{clip(host, 100)} resolves to {reason}")
        last: Exception | None = None
        for address in addresses:
            try:
                return super().connect_tcp(address, port, timeout, local_address, socket_options)
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last = exc
        raise last or httpcore.ConnectError(f"no address for {clip(host, 100)}")


class _AddressRefused(httpcore.ConnectError):
    pass


def _transport() -> httpx.HTTPTransport:
    transport = httpx.HTTPTransport(trust_env=False, retries=0)
    # httpx builds its httpcore pool without a way to name the network backend; set it on the pool.
    transport._pool._network_backend = _GuardedBackend()
    return transport


# -- the request ------------------------------------------------------------------------------------
@dataclass
class OutboundResponse:
    status_code: int
    headers: httpx.Headers
    content: bytes
    url: str
    redirects: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        """The body through the bounded JSON parser (common.inputs: depth, NUL, lone surrogates, finite
        numbers); a hostile server's reply is a ValueError, like any unreadable JSON."""
        from .inputs import BodyError, json_loads

        try:
            return json_loads(self.content)
        except BodyError as exc:
            raise ValueError(exc.message) from None


def _strip_secrets(headers: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in SECRET_HEADERS}


def fetch(method: str, url: str, *, headers: Mapping[str, str] | None = None, json: Any = None,
          content: bytes | None = None, data: Mapping[str, Any] | None = None,
          allowed_bases: Sequence[str] | None = None, timeout: float = DEFAULT_TIMEOUT_S,
          deadline: float | None = None, max_bytes: int | None = None, max_redirects: int = 3) -> OutboundResponse:
    """Send one request through the guard (see the module docstring) and return the whole response,
    whatever its status. `deadline` (seconds, default 2 x timeout) bounds the whole exchange.
    Raises OutboundBlocked, OutboundTooLarge, OutboundTimeout or OutboundTransportError."""
    max_bytes = max_bytes if max_bytes is not None else getattr(settings, "OUTBOUND_MAX_BYTES", DEFAULT_MAX_BYTES)
    ends = time.monotonic() + (deadline if deadline is not None else 2 * timeout)
    method = method.upper()
    send_headers = dict(headers or {})
    redirects: list[str] = []
    current = check_url(url, allowed_bases=allowed_bases)
    body: dict[str, Any] = {"json": json, "content": content, "data": data}
    with httpx.Client(transport=_transport(), timeout=timeout, follow_redirects=False, trust_env=False) as client:
        while True:
            remaining = ends - time.monotonic()
            if remaining <= 0:
                raise OutboundTimeout(f"{clip(current)} took longer than {deadline or 2 * timeout:g} s in all")
            try:
                with client.stream(method, current, headers=send_headers,
                                   timeout=min(timeout, remaining), **body) as response:
                    location = response.headers.get("location")
                    if response.status_code in _REDIRECTS and location:
                        nxt = urljoin(current, location)
                        if len(redirects) >= max_redirects:
                            raise OutboundBlocked(f"{clip(url)} redirects more than {max_redirects} times")
                        check_url(nxt, allowed_bases=allowed_bases, what="redirect to")
                        a, b = _origin(nxt), _origin(current)
                        if (a.scheme, a.host, a.port) != (b.scheme, b.host, b.port):
                            send_headers = _strip_secrets(send_headers)
                        if response.status_code in (301, 302, 303) and method != "HEAD":
                            method, body = "GET", {"json": None, "content": None, "data": None}
                        redirects.append(nxt)
                        current = nxt
                        continue
                    declared = response.headers.get("content-length")
                    if declared and declared.isdigit() and int(declared) > max_bytes:
                        raise OutboundTooLarge(f"{clip(current)} announces {int(declared):,} bytes; "
                                               f"the limit is {max_bytes:,}")
                    chunks, total = [], 0
                    for chunk in response.iter_bytes():
                        total += len(chunk)
                        if total > max_bytes:
                            raise OutboundTooLarge(f"{clip(current)} sent more than {max_bytes:,} bytes")
                        if time.monotonic() > ends:
                            raise OutboundTimeout(f"{clip(current)} took longer than "
                                                  f"{deadline or 2 * timeout:g} s in all")
                        chunks.append(chunk)
                    return OutboundResponse(response.status_code, response.headers, b"".join(chunks),
                                            str(response.url), redirects)
            except _AddressRefused as exc:
                raise OutboundBlocked(str(exc)) from None
            except httpx.TimeoutException as exc:
                raise OutboundTimeout(f"{clip(current)}: timed out ({type(exc).__name__})") from None
            except httpx.HTTPError as exc:
                cause = exc.__cause__ or exc.__context__
                if isinstance(cause, _AddressRefused) or isinstance(exc.__context__, _AddressRefused):
                    raise OutboundBlocked(str(cause)) from None
                raise OutboundTransportError(f"{clip(current)}: {type(exc).__name__}: {clip(exc, 120)}") from None

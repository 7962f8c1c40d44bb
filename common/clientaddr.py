"""The client's address, the one every per-address limit counts (common/throttle.py and others).

Behind the documented TLS proxy every request comes from the proxy's address, so counting
REMOTE_ADDR would put every client in one bucket. With `TRUSTED_PROXY_COUNT` = N > 0 the address is
the N-th entry from the right of the `TRUSTED_PROXY_HEADER` header (default `X-Forwarded-For`): each
trusted proxy appends the address it received the request from, so the entries to the left of those
N are the client's own claims and are never believed. N = 0 (the default: no proxy) means
REMOTE_ADDR. A missing, short or malformed header falls back to REMOTE_ADDR.
"""
from __future__ import annotations

import ipaddress
from typing import Any

from django.conf import settings


def _meta_name(header: str) -> str:
    name = header.upper().replace("-", "_")
    return name if name.startswith("HTTP_") or name == "REMOTE_ADDR" else f"HTTP_{name}"


def client_address(request: Any) -> str:
    """The client's IP address as text (or "unknown"). Takes a Django or a DRF request."""
    meta = getattr(request, "META", None) or {}
    remote = str(meta.get("REMOTE_ADDR") or "unknown")
    count = int(getattr(settings, "TRUSTED_PROXY_COUNT", 0) or 0)
    if count <= 0:
        return remote
    raw = meta.get(_meta_name(getattr(settings, "TRUSTED_PROXY_HEADER", "X-Forwarded-For")), "")
    parts = [p.strip() for p in str(raw).split(",") if p.strip()]
    if len(parts) < count:
        return remote
    candidate = parts[-count]
    if candidate.startswith("[") and "]" in candidate:  # [v6]:port
        candidate = candidate[1:candidate.index("]")]
    elif candidate.count(":") == 1:  # v4:port
        candidate = candidate.split(":")[0]
    try:
        return str(ipaddress.ip_address(candidate))
    except ValueError:
        return remote

"""Replication packages for the tests: fetched through the API (following a 202 by running the build
the worker would run), and reports compared key by key."""
from __future__ import annotations

import math
from typing import Any

from rest_framework.test import APIClient


def package_bytes(api: APIClient, campaign_id: int) -> bytes:
    """GET /api/campaigns/{id}/export/dataset/ until the zip comes (a 202 means a worker builds it:
    the build is run here, as the worker would, then the URL is asked again)."""
    from metrics.package.services import package_build_run

    url = f"/api/campaigns/{campaign_id}/export/dataset/"
    r = api.get(url)
    if r.status_code == 202:
        body = r.json()
        assert body["status"] == "building" and 0 <= body["progress"] <= 1, body
        package_build_run(build_id=body["build"])
        r = api.get(url)
    assert r.status_code == 200 and r["Content-Type"] == "application/zip", r
    return b"".join(r.streaming_content)


def differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Every dotted key where two JSON values differ (floats compared exactly, NaN equal to NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{path}.{k}: only on one side" for k in sorted(set(a) ^ set(b), key=str)]
        for k in a:
            if k in b:
                out += differences(a[k], b[k], f"{path}.{k}" if path else str(k))
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: lengths {len(a)} != {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in differences(x, y, f"{path}[{i}]")]
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return []
    return [] if a == b and type(a) is type(b) else [f"{path}: {a!r} != {b!r}"]

"""Walk a built report: every `<key>_ci` has a `<key>_ci_method` beside it and contains its estimate
`<key>` (for dicts of intervals, entry by entry; for per-run lists, element by element)."""
from __future__ import annotations

from typing import Any


def _pairs(estimate: Any, ci: Any, path: str) -> list[tuple[str, Any, Any]]:
    if isinstance(ci, dict):
        out = []
        for k, v in ci.items():
            out += _pairs((estimate or {}).get(k) if isinstance(estimate, dict) else None, v, f"{path}.{k}")
        return out
    if isinstance(ci, list) and ci and isinstance(ci[0], list):
        return [(f"{path}[{i}]", e, c) for i, (e, c) in enumerate(zip(estimate or [], ci))]
    return [(path, estimate, ci)]


def interval_violations(node: Any, path: str = "") -> list[str]:
    """Every problem found: a missing method, or an interval that excludes its estimate."""
    bad: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            here = f"{path}.{key}" if path else str(key)
            if key.endswith("_ci") and not key.endswith("_ci_method"):
                base = key[:-3]
                if f"{key}_method" not in node:
                    bad.append(f"{here}: no {key}_method")
                for where, est, ci in _pairs(node.get(base), value, here):
                    if est is None or ci is None or ci[0] is None or ci[1] is None:
                        continue
                    if not ci[0] - 1e-9 <= est <= ci[1] + 1e-9:
                        bad.append(f"{where}: {est} outside {ci}")
            elif key == "ci":
                # `ci_method`, or the hybrid shape's `method` beside `estimate` and `ci` (a hybrid result's
                # `human_only` / `machine_only` blocks too: issue 22, every figure carries its method)
                if "ci_method" not in node and "method" not in node:
                    bad.append(f"{here}: no ci_method")
                est = node.get("estimate")
                if isinstance(est, (int, float)) and isinstance(value, list) and len(value) == 2 and None not in value:
                    if not value[0] - 1e-9 <= est <= value[1] + 1e-9:
                        bad.append(f"{here}: {est} outside {value}")
            else:
                bad += interval_violations(value, here)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            bad += interval_violations(value, f"{path}[{i}]")
    return bad


def count_intervals(node: Any) -> int:
    if isinstance(node, dict):
        return sum((1 if k.endswith("_ci") else 0) + count_intervals(v) for k, v in node.items())
    if isinstance(node, list):
        return sum(count_intervals(v) for v in node)
    return 0

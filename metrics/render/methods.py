"""The interval methods a report actually used, for its header: every `*_ci_method` value in the
report (the sections name theirs), in words. The header never claims one method for all figures."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

DESCRIPTIONS = {
    "bca-cluster": "BCa bootstrap over images",
    "bca": "BCa bootstrap over images",
    "percentile": "percentile bootstrap over images",
    "percentile-cluster": "percentile bootstrap over images",
    "wilson": "Wilson score interval",
    "wilson-deff": "Wilson score interval",
    "newcombe": "Newcombe difference of Wilson intervals",
    "gep-test-inversion": "inversion of a bootstrap test (GEP score)",
    "test-inversion": "inversion of a bootstrap test",
    "ppi": "prediction-powered inference",
    "ppboot": "prediction-powered bootstrap",
    "t": "t interval",
}


def _methods(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if (key == "ci_method" or key.endswith("_ci_method")) and isinstance(value, str) and value:
                yield value
            else:
                yield from _methods(value)
    elif isinstance(node, list):
        for item in node:
            yield from _methods(item)


def methods_used(report: dict[str, Any]) -> list[dict[str, str]]:
    """`[{"method", "description"}]`, one per distinct method named anywhere in the report, sorted."""
    return [{"method": m, "description": DESCRIPTIONS.get(m, m)} for m in sorted(set(_methods(report)))]


def methods_sentence(report: dict[str, Any]) -> str:
    """"Intervals: 95% ...: BCa bootstrap over images (bca-cluster); ..." for the headers and the CSV README."""
    opts = report.get("options") or {}
    used = methods_used(report)
    listed = "; ".join(f"{m['description']} ({m['method']})" for m in used) or "none computed"
    return (f"Intervals at {opts.get('confidence', 0.95)} confidence by the methods the sections name: {listed}; "
            f"bootstrap {opts.get('n_boot')} draws, seed {opts.get('seed')}.")

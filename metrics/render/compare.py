"""A comparison's CSV zip and HTML page (`GET /api/reports/compare/?format=csv|html`), and the
context the console's compare page shares with the HTML page. Pure: no database."""
from __future__ import annotations

import io
import zipfile
from typing import Any

from django.template.loader import render_to_string

from common.csvsafe import csv_writer

from .html import compare_page

SIGNIFICANCE_COLUMNS = ["a_id", "a_name", "a_setting", "b_id", "b_name", "b_setting", "section", "metric", "name",
                        "family", "a", "b", "difference", "ci_low", "ci_high", "ci_method", "confidence", "p_value",
                        "p_holm", "extended"]


def _num(x: Any) -> Any:
    return "" if x is None else x


def significance_rows(result: dict[str, Any]) -> list[list[Any]]:
    """One row per (pair, metric): significance.csv and the page's tables."""
    out = []
    for comp in (result.get("significance") or {}).get("comparisons", []):
        a, b = comp["a"], comp["b"]
        for r in comp["rows"]:
            out.append([a["id"], a["name"], _num(a["setting"]), b["id"], b["name"], _num(b["setting"]), r["section"],
                        r["metric"], r["name"], _num(r["family"]), _num(r["a"]), _num(r["b"]), _num(r["difference"]),
                        _num(r["ci"][0]), _num(r["ci"][1]), r["ci_method"], r["confidence"], _num(r["p_value"]),
                        _num(r["p_holm"]), r["extended"]])
    return out


def _figures_rows(result: dict[str, Any]) -> tuple[list[str], list[list[Any]]]:
    header = ["id", "name", "backend", "model", "answers", "krippendorff_alpha", "fleiss_kappa"]
    for m in result["metrics"]:
        header += [m, f"{m}_ci_low", f"{m}_ci_high"]
    rows = []
    for r in result["rows"]:
        row = [r["id"], r["name"], _num(r["backend"]), _num(r["model"]), r["answers"], _num(r["krippendorff_alpha"]),
               _num(r["fleiss_kappa"])]
        for m in result["metrics"]:
            ci = r.get(f"{m}_ci") or [None, None]
            row += [_num(r.get(m)), _num(ci[0]), _num(ci[1])]
        rows.append(row)
    return header, rows


def _csv(header: list[str], rows: list[list[Any]]) -> str:
    buf = io.StringIO()
    writer = csv_writer(buf, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


README = """Comparison of campaigns (docs/metrics.md, "Comparing campaigns").
comparison.csv    headline figures of each campaign side by side, with their report intervals
significance.csv  one row per pair and metric: a (first side), b (second side), difference = a - b,
                  its BCa bootstrap interval over images, a two-sided permutation p-value (images
                  permuted between the sides) and the Holm-adjusted p-value within its family
agreement.csv     Krippendorff's alpha pooled over the campaigns' questions, and per campaign
"""


def compare_csv_zip(result: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("comparison.csv", _csv(*_figures_rows(result)))
        if "significance" in result:
            z.writestr("significance.csv", _csv(SIGNIFICANCE_COLUMNS, significance_rows(result)))
        pooled = result.get("pooled_agreement")
        if pooled:
            rows: list[list[Any]] = [["pooled", _num(pooled["krippendorff_alpha"])]]
            rows += [[k, _num(v)] for k, v in pooled["by_campaign"].items()]
            rows.append(["mean_of_campaigns", _num(pooled["mean_of_campaigns"])])
            z.writestr("agreement.csv", _csv(["campaign", "krippendorff_alpha"], rows))
        z.writestr("README.txt", README)
    return buf.getvalue()


def significance_page(result: dict[str, Any]) -> dict[str, Any]:
    """Template context of the significance tables: one table per pair, rows in order."""
    sig = result.get("significance")
    if not sig:
        return {"significance": None, "pooled": result.get("pooled_agreement")}
    pairs = []
    for comp in sig["comparisons"]:
        a, b = comp["a"], comp["b"]
        name_a = a["name"] + (f" ({a['setting']})" if a["setting"] else "")
        name_b = b["name"] + (f" ({b['setting']})" if b["setting"] else "")
        rows = [{**r, "label": r["metric"] + (f": {r['name']}" if r["name"] else ""),
                 "significant": r["p_value"] is not None and (r["p_holm"] if r["family"] else r["p_value"]) is not None
                 and (r["p_holm"] if r["family"] else r["p_value"]) < 1 - r["confidence"]}
                for r in comp["rows"]]
        pairs.append({"a": name_a, "b": name_b, "rows": rows, "skipped": comp["skipped"]})
    return {"significance": sig, "pairs": pairs, "pooled": result.get("pooled_agreement")}


def compare_html(result: dict[str, Any], *, query: str = "") -> str:
    """A self-contained HTML page of the comparison (tables and the side-by-side charts)."""
    return render_to_string("metrics/compare.html", {"result": result, "query": query, **compare_page(result),
                                                     **significance_page(result)})

"""Charts like the papers' figures, rendered server-side to SVG with matplotlib (no JavaScript).

PST Fig. 3 (micro STS per identity, sorted), Fig. 4 (generated %F against labor-statistics %F),
Fig. 5 (paired minus single per identity); GEP Fig. 2 (GEP vector bars on a symmetric log scale).
"""
from __future__ import annotations

import functools
import io
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.typing import RcKeyType

# Every chart draws under this style. `text.parse_math` off: names come from researchers (identity,
# attribute, group and campaign names), and a name with `$...$` would otherwise be read as mathtext:
# an unknown command (`$\foo$`) raised ValueError and broke the whole page, a valid one drew a
# formula instead of the name. Text in the SVG is escaped by matplotlib (`<`, `&`, quotes).
STYLE: dict[RcKeyType, Any] = {"svg.fonttype": "none", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
         "text.parse_math": False, "text.usetex": False}
GROUP_COLOURS = ["#1f6fb2", "#c2410c", "#047857", "#7c3aed"]
F = TypeVar("F", bound=Callable[..., Any])


def _styled(fn: F) -> F:
    """Draw and save the chart under `STYLE` (tick labels are made at save time, so both inside)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with plt.rc_context(STYLE):
            return fn(*args, **kwargs)
    return wrapper  # type: ignore[return-value]


def _svg(fig: Any) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog: the SVG is inlined in HTML


def _ok(v: Any) -> bool:
    return v is not None and not (isinstance(v, float) and math.isnan(v))


@_styled
def micro_sts_chart(sec: dict[str, Any], title: str, group_of: dict[str, str]) -> str:
    items = sorted(((k, v) for k, v in sec["micro"].items() if _ok(v)), key=lambda kv: kv[1])
    names = [k for k, _ in items]
    groups = sorted(set(group_of.values()))
    colours = {g: GROUP_COLOURS[i % len(GROUP_COLOURS)] for i, g in enumerate(groups)}
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.2 * len(items) + 1)))
    ax.barh(names, [v for _, v in items], color=[colours.get(group_of.get(n, ""), "#555") for n in names])
    ci = sec.get("micro_ci", {})
    for i, n in enumerate(names):
        lo, hi = ci.get(n, [None, None])
        if _ok(lo) and _ok(hi):
            ax.plot([lo, hi], [i, i], color="#222", linewidth=0.8)
    ax.axvline(0, color="#222", linewidth=0.8)
    ax.set_xlim(-105, 105)
    ax.set_xlabel("micro STS (%)  -100 anti-stereotype ... +100 stereotype")
    ax.set_title(title)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colours[g]) for g in groups]
    if groups:
        ax.legend(handles, groups, loc="lower right", frameon=False)
    return _svg(fig)


@_styled
def labor_chart(section: dict[str, Any]) -> str | None:
    labor = section.get("labor_stats_percent_female") or {}
    fig, ax = plt.subplots(figsize=(5.5, 5))
    plotted = False
    for setting, marker in (("single", "o"), ("paired", "s")):
        sec = section.get(setting)
        if not sec:
            continue
        pts = [(labor[k], v, k) for k, v in sec["percent_feminine"].items() if _ok(v) and _ok(labor.get(k))]
        if pts:
            plotted = True
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=setting, alpha=0.8)
    if not plotted:
        plt.close(fig)
        return None
    ax.plot([0, 100], [0, 100], color="#888", linestyle="--", linewidth=0.8)
    ax.set_xlim(0, 100)
    ax.set_ylim(-2, 102)
    ax.set_xlabel("% female, U.S. labor statistics")
    ax.set_ylabel("% feminine in generated images")
    ax.set_title("Generated %F against labor statistics (PST Fig. 4)")
    ax.legend(frameon=False)
    return _svg(fig)


@_styled
def gap_chart(section: dict[str, Any]) -> str | None:
    gap = section.get("gap")
    if not gap:
        return None
    items = sorted(((k, v) for k, v in gap["micro"].items() if _ok(v)), key=lambda kv: kv[1])
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.2 * len(items) + 1)))
    ax.barh([k for k, _ in items], [v for _, v in items], color=["#c2410c" if v > 0 else "#1f6fb2" for _, v in items])
    ax.axvline(0, color="#222", linewidth=0.8)
    ax.set_xlabel("micro STS paired minus single (percentage points)")
    ax.set_title("Paired vs single (PST Fig. 5)")
    return _svg(fig)


@_styled
def gep_vector_chart(sec: dict[str, Any], setting: str, definition: str) -> str:
    names = list(sec["vector"])
    values = [sec["vector"][n] if _ok(sec["vector"][n]) else 0.0 for n in names]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(names, values, color=["#c2410c" if v > 0 else "#1f6fb2" for v in values])
    ci = sec.get("vector_ci", {})
    for i, n in enumerate(names):
        lo, hi = ci.get(n, [None, None])
        if _ok(lo) and _ok(hi):
            ax.plot([i, i], [lo, hi], color="#222", linewidth=0.8)
    ax.set_yscale("symlog", linthresh=0.01)
    ax.axhline(0, color="#222", linewidth=0.8)
    ax.set_ylabel(f"GEP vector ({definition})")
    ax.set_title(f"GEP vector, {setting} (score {sec['score']:.3f})" if _ok(sec["score"]) else f"GEP vector, {setting}")
    ax.tick_params(axis="x", rotation=60)
    return _svg(fig)


@_styled
def comparison_chart(rows: list[dict[str, Any]], metric: str, ylabel: str) -> str:
    fig, ax = plt.subplots(figsize=(6, 3))
    labels = [r["label"] for r in rows]
    values = [r[metric] if _ok(r.get(metric)) else 0.0 for r in rows]
    ax.bar(labels, values, color="#1f6fb2")
    for i, r in enumerate(rows):
        ci = r.get(f"{metric}_ci") or [None, None]
        if _ok(ci[0]) and _ok(ci[1]):
            ax.plot([i, i], ci, color="#222", linewidth=0.8)
    ax.set_ylabel(ylabel)
    ax.tick_params(axis="x", rotation=30)
    return _svg(fig)


@_styled
def vector_scatter(human: dict[str, Any], machine: dict[str, Any], who: str, setting: str) -> str | None:
    """Human GEP vector (x) against a machine's (y), one point per attribute (GEP Fig. 5)."""
    pts = [(human[k], machine[k], k) for k in human if _ok(human.get(k)) and _ok(machine.get(k))]
    if not pts:
        return None
    fig, ax = plt.subplots(figsize=(4.8, 4.2))
    ax.scatter([p[0] for p in pts], [p[1] for p in pts], color="#1f6fb2")
    for x, y, name in pts:
        ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(0, color="#888", linewidth=0.6)
    ax.axvline(0, color="#888", linewidth=0.6)
    ax.set_xlabel("GEP vector, human labels")
    ax.set_ylabel(f"GEP vector, {who}")
    ax.set_title(f"Human vs machine, {setting}")
    return _svg(fig)

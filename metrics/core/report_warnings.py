"""The report's top-level `warnings`: figures or sections left out or flagged, and why.

A warning is `{"path": <dotted key of the figure or section>, "message": <one sentence>}`, e.g.
`{"path": "pst.gap.micro_ci", "message": "3 single images per identity: per-identity gap interval
not computed"}`. Section builders add one with `warn(path, message)` while the report is built;
`report_from_data` collects them (`collecting()`) into `report["warnings"]` and the HTML shows each
next to the section its path starts with. Outside a `collecting()` block `warn` does nothing, so
the pure functions that call it stay usable alone (a notebook, the validity harness).

Pure: no Django.
"""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DOMAIN_RULES", "DomainRule", "WarningLog", "collecting", "flag_domain", "section_warnings", "warn"]


@dataclass
class WarningLog:
    """Warnings in the order they were added (one per path and message)."""

    items: list[dict[str, str]] = field(default_factory=list)

    def add(self, path: str, message: str) -> None:
        entry = {"path": str(path), "message": str(message)}
        if entry not in self.items:
            self.items.append(entry)

    def as_list(self) -> list[dict[str, str]]:
        return [dict(w) for w in self.items]


_CURRENT: ContextVar[WarningLog | None] = ContextVar("report_warnings", default=None)


def warn(path: str, message: str) -> None:
    """Record that the figure or section at `path` (dotted report key) is left out or flagged."""
    log = _CURRENT.get()
    if log is not None:
        log.add(path, message)


@contextmanager
def collecting(log: WarningLog | None = None) -> Iterator[WarningLog]:
    """Collect the `warn` calls made inside the block. Without `log`, a block inside another one joins
    the outer log (a report built inside a larger one, e.g. `?source=` adding hybrid sections, keeps
    every warning); with `log`, the block collects into that log alone."""
    outer = _CURRENT.get()
    if log is None and outer is not None:
        yield outer
        return
    log = WarningLog() if log is None else log
    token = _CURRENT.set(log)
    try:
        yield log
    finally:
        _CURRENT.reset(token)


def section_warnings(warnings: list[dict[str, Any]] | None, key: str) -> list[dict[str, Any]]:
    """The warnings whose path is the section `key` or lies under it (`pst`, `pst.gap.micro_ci`)."""
    return [w for w in warnings or [] if w.get("path") == key or str(w.get("path", "")).startswith(key + ".")]


# ------------------------------------------------------------------ validity domains (bench/validity.py)
@dataclass(frozen=True)
class DomainRule:
    """A design where a printed figure is valid but outside the 93-97% coverage band (or at the size
    limit) on the simulations of `bench/validity.py` (bench/README.md section 10): the figure stays,
    and the report flags it. `threshold` is the design bound the section compares with; `message` is
    formatted with the section's values; `cell` and `measured` name the simulation that found it."""

    threshold: float
    message: str
    cell: str
    measured: str


DOMAIN_RULES: dict[str, DomainRule] = {
    # the Newcombe per-identity gap interval (shown from 10 counted persons per side) over-covers on
    # few persons: 97.8% at 10 single / 20 paired persons, 97.5% with a true gap of 30 points
    "pst.gap.micro_ci.conservative": DomainRule(
        20, "{n} of {shown} shown per-identity gap intervals rest on fewer than {threshold:g} counted persons in a "
            "setting: valid but conservative (wider than a 95% interval needs)",
        "pst.gap.micro_ci.newcombe.10_singles", "coverage 97.8% (MC s.e. 0.7), 400 runs"),
    # the hybrid GEP score by test inversion over PPI signed components: 98.0% at 40 human-labelled
    # images per gender, 95.8% at 100
    "hybrid.gep_score.conservative": DomainRule(
        100, "{fewest} human-labelled images for a gender (validated from {threshold:g}): the hybrid GEP score "
             "interval is valid but conservative at so few human labels",
        "hybrid.gep_score.sparse_80img_40human", "coverage 98.0% (MC s.e. 0.7), 400 runs"),
    # the human Wilson / Newcombe fallback for sparse hybrid cells: 98.5% at n = 100, f = 0.05
    "hybrid.frequency.wilson_fallback": DomainRule(
        10, "{n} of {total} frequencies or vector components have fewer than {threshold:g} present or absent "
            "human-labelled questions, outside the PPI interval's validity domain: their human Wilson / Newcombe "
            "interval is shown (method wilson-human / newcombe-human; valid, conservative for rare attributes)",
        "hybrid.frequency.f005_100human", "coverage 98.5% (MC s.e. 0.6), 400 runs"),
    # the human GEP intervals at sparse attributes (few present questions for a gender): Wilson, Newcombe and
    # the score's test inversion hold their level but cover more than 97% there
    "gep.sparse.conservative": DomainRule(
        10, "{n} of {total} attributes have fewer than {threshold:g} present questions for a gender: their "
            "frequency (Wilson) and vector (Newcombe) intervals and the GEP score's test inversion are valid but "
            "conservative there",
        "gep.score.r3_mixed_sparse_100img",
        "coverage 98.3% (MC s.e. 0.7), 400 runs; Newcombe components 98.8-99.0% at 40 images per gender"),
    # compare's GEP vector components with few present questions: a bootstrap over so few counts under-covers
    # (BCa 85%) and the permutation test over-rejects (7%), so compare switches them to MOVER-Jeffreys
    # (metrics.core.mover; significance.SPARSE_COMPONENT_COUNT): the flag says which rows use it
    "compare.gep.vector.sparse": DomainRule(
        10, "{n} of {total} vector components have fewer than {threshold:g} present (or absent) questions in a "
            "gender on a side, where the bootstrap interval and the permutation test are not valid: their rows use "
            "the MOVER-Jeffreys interval and its inverted test instead (ci_method mover-jeffreys)",
        "compare.gep.vector.bca.same_sparse_40v400",
        "MOVER-Jeffreys coverage 95.0% (MC s.e. 1.1), test size 5.0% (1.1), 400 runs; the BCa it replaces: 85.0%"),
    # compare's GEP score difference between two sides whose vectors differ in precision: each score's
    # upward bias near 0 differs, so the difference, its BCa interval and its test are biased
    "compare.gep.score.unequal_precision": DomainRule(
        1.5, "the two sides' GEP vector components differ in precision (mean standard errors {ratio:.1f} times "
             "apart, flagged above {threshold:g}): the score difference is biased by the scores' different upward "
             "bias near 0, so its interval and p-value are left out; read the vector components' tests",
        "compare.gep.score.permutation.small_noisy_40v400",
        "size 12.5% (MC s.e. 2.3) with the studentized test, 200 runs; 43.5% with the raw one"),
    # the Neutrality interval by test inversion (metrics.core.vlm): only its upper end can miss a true balance,
    # so with identities near balance it covers 97.3-99.5% (bench/README.md section 10, neutrality.*)
    "pst.gender_balance.neutrality_ci.conservative": DomainRule(
        1, "{n} of {total} identities have male and female shares within 2 standard errors of each other: near "
           "balance the Neutrality interval is valid but conservative (wider than a 95% interval needs)",
        "neutrality.100x10.one_person.balanced", "coverage 98.5% (MC s.e. 0.6), 400 runs; 97.3-99.5% on the other "
        "near-balance designs (6-100 identities)"),
    # the annotators section's studentized STS test: 7.2% at 5% (400 runs) with 5 annotators against 160 whose leans
    # differ in spread (the raw difference: 26%); 3.3-4.3% when annotators are exchangeable
    "annotators.tests.small_group": DomainRule(
        20, "group(s) {groups} have fewer than {threshold:g} annotators (fewest {fewest}): where the groups' "
            "annotators differ in spread, not only in mean, their tests reject somewhat more often than the stated "
            "level (approximate p-values)",
        "annotators.sts.weak_null.5_vs_160", "size 7.2% (MC s.e. 1.3), 400 runs; 8.0% in an earlier 200-run sitting"),
}


def flag_domain(rule: str, path: str, **values: Any) -> None:
    """Warn at `path` that its figure is outside the 93-97% band on the design `rule` describes
    (`DOMAIN_RULES`), naming the simulation cell that measured it."""
    r = DOMAIN_RULES[rule]
    warn(path, r.message.format(threshold=r.threshold, **values) + f" (bench/validity.py {r.cell}: {r.measured})")

"""The PST section: STS per setting with intervals, group means, the other treatment, the gap and its
permutation test (HTML table); pst_identity.csv; PST Figs. 3-5."""
from __future__ import annotations

from typing import Any

from campaigns.spec import INTERVENTION, PAIRED, PST_SETTINGS, SINGLE
from metrics.extract.data import CampaignFacts

from . import charts
from .registry import SectionRenderer, Table, register

SETTINGS = PST_SETTINGS


def _run_rows(sec: dict[str, Any]) -> list[tuple[int, float | None, list[float | None] | None]]:
    """(run id, STS, interval) per run."""
    cis = sec.get("runs_ci") or [None] * len(sec.get("runs") or [])
    return list(zip(sec.get("run_ids") or [], sec.get("runs") or [], cis))


def pst_rows(section: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One row per setting of the STS table."""
    if not section:
        return []
    rows = []
    for setting in SETTINGS:
        sec = section.get(setting)
        if sec:
            rows.append({"setting": setting, "overall": sec["overall"], "ci": sec.get("overall_ci"),
                         "ci_method": sec.get("overall_ci_method"), "run_rows": _run_rows(sec),
                         "runs_mean": sec.get("runs_mean"), "runs_mean_ci": sec.get("runs_mean_ci"),
                         "by_template": sec.get("by_template"), "template_mean": sec.get("template_mean"),
                         "groups": sec["groups"], "groups_ci": sec.get("groups_ci", {}), "persons": sec["persons"],
                         "images": sec["images"], "runs": sec.get("runs"),
                         "alt": sec.get("without_undetermined") or sec.get("paper_formula"),
                         "excluded": section["excluded"].get(setting)})
    return rows


def pst_identity_rows(section: dict[str, Any], campaign: CampaignFacts) -> list[list[Any]]:
    """pst_identity.csv: one row per setting and identity."""
    groups = {i: (g["name"], g["stereotype"]) for g in campaign.spec["design"]["identities"]["groups"]
              for i in g["identities"]}
    labor = section.get("labor_stats_percent_female", {})
    rows = []
    for setting in SETTINGS:
        sec = section.get(setting)
        if not sec:
            continue
        for identity, sts in sorted(sec["micro"].items()):
            ci = sec.get("micro_ci", {}).get(identity, [None, None])
            counts = sec["counts"]["by_identity"].get(identity, {})
            group, stereotype = groups.get(identity, ("", ""))
            pf_ci = sec.get("percent_feminine_ci", {}).get(identity, [None, None])
            rows.append([setting, identity, group, stereotype, sts, ci[0], ci[1],
                         sec["percent_feminine"].get(identity), counts.get("persons"), counts.get("cannot"),
                         counts.get("tie"), section.get("gap", {}).get("micro", {}).get(identity)
                         if setting == PAIRED else None, labor.get(identity), sec.get("micro_ci_method"),
                         pf_ci[0], pf_ci[1], sec.get("percent_feminine_ci_method")])
    return rows



def gender_balance_csv(section: dict[str, Any]) -> list[list[Any]]:
    """pst_gender_balance.csv: one row per setting (identity "") and per setting and identity."""
    rows = []
    for setting, b in (section.get("gender_balance") or {}).items():
        ag, neu = b.get("average_gender_ci", [None, None]), b.get("neutrality_ci", [None, None])
        rows.append([setting, "", b["average_gender"], ag[0], ag[1], b.get("average_gender_ci_method"),
                     b["neutrality"], neu[0], neu[1], b.get("neutrality_ci_method"), b["female"], b["male"], b["na"],
                     b["missing"]])
        for identity, n in b["neutrality_by_identity"].items():
            rows.append([setting, identity, None, None, None, None, n["neutrality"], None, None, None,
                         n["female"], n["male"], n["neutral"], None])
    return rows


PST_IDENTITY_HEADER = ["setting", "identity", "group", "stereotype", "micro_sts", "micro_sts_ci_low",
                       "micro_sts_ci_high", "percent_feminine", "persons", "cannot_identify", "ties",
                       "gap_paired_minus_single", "labor_percent_female", "micro_sts_ci_method",
                       "percent_feminine_ci_low", "percent_feminine_ci_high", "percent_feminine_ci_method"]
GENDER_BALANCE_HEADER = ["setting", "identity", "average_gender", "average_gender_ci_low", "average_gender_ci_high",
                         "average_gender_ci_method", "neutrality", "neutrality_ci_low", "neutrality_ci_high",
                         "neutrality_ci_method", "female", "male", "cannot_identify_or_tie", "unanswered"]


TEMPLATE_HEADER = ["setting", "template", "identity", "sts", "sts_ci_low", "sts_ci_high", "sts_ci_method",
                   "percent_feminine"]


def pst_template_rows(section: dict[str, Any]) -> list[list[Any]]:
    """pst_template.csv: per setting with several templates, per template ("mean" = averaged over the
    templates) the overall STS (identity "") and each identity's micro STS and %F."""
    rows = []
    for setting in SETTINGS:
        sec = section.get(setting) or {}
        for t, b in (sec.get("by_template") or {}).items():
            ci = b.get("overall_ci") or [None, None]
            rows.append([setting, t, "", b["overall"], ci[0], ci[1], b.get("overall_ci_method"), None])
            for identity, v in sorted(b["micro"].items()):
                mci = (b.get("micro_ci") or {}).get(identity, [None, None])
                rows.append([setting, t, identity, v, mci[0], mci[1], b.get("micro_ci_method"),
                             b["percent_feminine"].get(identity)])
        mean = sec.get("template_mean")
        if mean:
            rows.append([setting, "mean", "", mean["overall"], None, None, None, None])
            for identity, v in sorted(mean["micro"].items()):
                rows.append([setting, "mean", identity, v, None, None, None, mean["percent_feminine"].get(identity)])
    return rows


INTERVENTION_HEADER = ["variant", "scope", "name", "plain_sts", "intervention_sts", "difference", "ci_low", "ci_high",
                       "ci_method", "p_value", "p_holm", "selected"]


def intervention_rows(section: dict[str, Any]) -> list[list[Any]]:
    """pst_intervention.csv: per variant (all identities, top 5, top 5 selected on a split) the
    overall, group and identity differences intervention - plain."""
    analysis = section.get("intervention_analysis") or {}
    rows = []
    k = analysis.get("top_k", 5)
    for variant in ("all", f"top_{k}", f"top_{k}_split"):
        v = analysis.get(variant)
        if not v:
            continue
        selected = ";".join(i for ids in ((v.get("selection") or {}).get("selected") or {}).values() for i in ids)
        d = v["difference"]
        if isinstance(d, dict):
            entries = [("overall", "", d), *(("group", g, x) for g, x in v.get("groups", {}).items()),
                       *(("identity", i, x) for i, x in v.get("micro", {}).items())]
            for scope, name, x in entries:
                rows.append([variant, scope, name, x["plain"], x["intervention"], x["difference"], x["ci"][0],
                             x["ci"][1], x["ci_method"], x["p_value"], x["p_holm"], selected if scope == "overall" else ""])
        else:
            rows.append([variant, "overall", "", v["plain"], v["intervention"], d, None, None, None, None, None,
                         selected])
    return rows


def pst_tables(section: dict[str, Any], campaign: CampaignFacts) -> list[Table]:
    tables = [Table("pst_identity.csv", PST_IDENTITY_HEADER, pst_identity_rows(section, campaign))]
    if section.get("intervention_analysis"):
        tables.append(Table("pst_intervention.csv", INTERVENTION_HEADER, intervention_rows(section)))
    template_rows = pst_template_rows(section)
    if template_rows:
        tables.append(Table("pst_template.csv", TEMPLATE_HEADER, template_rows))
    if section.get("gender_balance"):
        tables.append(Table("pst_gender_balance.csv", GENDER_BALANCE_HEADER, gender_balance_csv(section)))
    return tables


def pst_charts(section: dict[str, Any]) -> list[tuple[str, str]]:
    """Micro STS per identity per setting (Fig. 3), %F against labor statistics (Fig. 4), the gap (Fig. 5)."""
    group_of = section.get("identity_groups", {})
    out = []
    for setting in (PAIRED, SINGLE, INTERVENTION):
        sec = section.get(setting)
        if sec:
            out.append((f"Micro STS per identity, {setting} (PST Fig. 3)",
                        charts.micro_sts_chart(sec, f"Micro STS, {setting}", group_of)))
    labor = charts.labor_chart(section)
    if labor:
        out.append(("Generated %F vs labor statistics (PST Fig. 4)", labor))
    gap = charts.gap_chart(section)
    if gap:
        out.append(("Paired minus single per identity (PST Fig. 5)", gap))
    return out


PST = register(SectionRenderer(key="pst", order=20, template="metrics/sections/pst.html", rows=pst_rows,
                               tables=pst_tables, charts=pst_charts))

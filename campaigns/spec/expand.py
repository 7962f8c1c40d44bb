"""Expansion of a normalised spec into prompt plans, and the counts and summary computed from it."""
from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from common.templates import template_fill

from .base import (
    EXPLICIT,
    INTERVENTION,
    PST,
    SINGLE,
    derive_seed,
)
from .fields import template_list


# --------------------------------------------------------------------------------------------
# Expansion
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PromptPlan:
    key: str
    setting: str
    text: str
    metadata: dict[str, Any]
    samples: int
    seeds: list[int] = field(default_factory=list)
    template_index: int = 0  # which of the setting's templates (0-based)
    template: str = ""       # that template's text


def _templated(key: str, metadata: dict[str, Any], index: int, count: int, template: str
               ) -> tuple[str, dict[str, Any]]:
    """A setting with several templates: the key gets `#<n>` (n = index + 1) and the metadata
    `template_index` (0-based) and `template`; with one template both stay as they were."""
    if count == 1:
        return key, metadata
    return f"{key}#{index + 1}", {**metadata, "template_index": index, "template": template}


def _render(template: str, **values: str) -> str:
    return template_fill(template, **values)  # common.templates: never a format spec


def _setting_pairs(design: Mapping[str, Any], setting: str) -> list[list[str]]:
    """The identity pairs of a two-person setting (intervention may be limited to some identities)."""
    pairs = design["pairs"]
    if setting == INTERVENTION and isinstance(design["fairness_intervention"], list):
        chosen = set(design["fairness_intervention"])
        pairs = [pr for pr in pairs if pr[0] in chosen or pr[1] in chosen]
    return pairs


def _pst_plans(spec: Mapping[str, Any]) -> list[PromptPlan]:
    design = spec["design"]
    seed = spec["seed"]
    groups = design["identities"]["groups"]
    info = {ident: (g["name"], g["stereotype"]) for g in groups for ident in g["identities"]}
    extra: dict[str, dict[str, str]] = {}
    if design["aspect"] == "power":
        for d in design["power"]["draw"]:
            for level in ("high", "low"):
                extra[f"{d['occupation']} {d[level]}"] = {"occupation": d["occupation"], "role": d[level]}

    def person(ident: str, position: str) -> dict[str, Any]:
        group, stereotype = info[ident]
        return {"identity": ident, "group": group, "stereotype": stereotype, "position": position, **extra.get(ident, {})}

    plans: list[PromptPlan] = []

    def add(setting: str, people: list[dict[str, Any]], template_index: int, templates: list[str]) -> None:
        template = templates[template_index]
        key, metadata = _templated(f"{setting}:" + "|".join(pp["identity"] for pp in people),
                                   {"setting": setting, "aspect": design["aspect"], "persons": people},
                                   template_index, len(templates), template)
        n = design["samples"][setting]
        seeds = [derive_seed(seed, key, s) for s in range(n)]
        ids = {"id1": people[0]["identity"], **({"id2": people[1]["identity"]} if len(people) > 1 else {})}
        plans.append(PromptPlan(key=key, setting=setting, text=_render(template, **ids), samples=n, seeds=seeds,
                                metadata=metadata, template_index=template_index, template=template))

    for setting in design["settings"]:
        templates = template_list(design["templates"][setting])
        for t in range(len(templates)):
            if setting == SINGLE:
                for g in groups:
                    for ident in g["identities"]:
                        add(setting, [person(ident, "single")], t, templates)
                continue
            pairs = _setting_pairs(design, setting)
            orders = [(0, 1), (1, 0)] if design["flip_order"] else [(0, 1)]
            for order in orders:
                for pair in pairs:
                    left, right = pair[order[0]], pair[order[1]]
                    add(setting, [person(left, "left"), person(right, "right")], t, templates)
    return plans


def _gep_plans(spec: Mapping[str, Any]) -> list[PromptPlan]:
    design = spec["design"]
    seed = spec["seed"]
    plans: list[PromptPlan] = []
    for setting in design["settings"]:
        templates = template_list(design["templates"][setting])
        n = design["samples"][setting]
        attributes: list[dict[str, str] | None] = list(design["attributes"]) if setting == EXPLICIT else [None]
        for t, template in enumerate(templates):
            for gender, attribute, context in itertools.product(design["genders"], attributes, design["contexts"]):
                parts = [gender["name"]] + ([attribute["name"]] if attribute else []) + [context["name"]]
                text = _render(template, gender=gender["phrase"], context=context["phrase"],
                               **({"attribute": attribute["phrase"]} if attribute else {}))
                key, metadata = _templated(f"{setting}:" + "|".join(parts),
                                           {"setting": setting, "gender": gender["name"], "context": context["name"],
                                            "attribute": attribute["name"] if attribute else None},
                                           t, len(templates), template)
                plans.append(PromptPlan(key=key, setting=setting, text=text, samples=n, metadata=metadata,
                                        seeds=[derive_seed(seed, key, s) for s in range(n)], template_index=t,
                                        template=template))
    return plans


def spec_expand(spec: Mapping[str, Any]) -> list[PromptPlan]:
    """The prompts of a normalised spec, in a stable order, each with its seeds."""
    if spec["kind"] == PST:
        return _pst_plans(spec)
    return _gep_plans(spec)


def spec_count_prompts(spec: Mapping[str, Any]) -> int:
    design = spec["design"]
    return sum(_setting_prompts(spec, setting) for setting in design["settings"])


def _setting_prompts(spec: Mapping[str, Any], setting: str) -> int:
    """Prompts of one setting (every template counted)."""
    design = spec["design"]
    k = len(template_list(design["templates"][setting]))
    if spec["kind"] == PST:
        if setting == SINGLE:
            return k * sum(len(g["identities"]) for g in design["identities"]["groups"])
        return k * len(_setting_pairs(design, setting)) * (2 if design["flip_order"] else 1)
    return k * len(design["genders"]) * len(design["contexts"]) * (
        len(design["attributes"]) if setting == EXPLICIT else 1)


def spec_count_images(spec: Mapping[str, Any]) -> int:
    """Images a normalised spec plans (prompts x samples per setting), without expanding it."""
    design = spec["design"]
    total = 0
    for setting in design["settings"]:
        total += _setting_prompts(spec, setting) * design["samples"][setting]
    return total


def spec_summary(spec: Mapping[str, Any], plans: list[PromptPlan] | None = None) -> dict[str, Any]:
    """Counts a spec implies: prompts and images per setting, and questions per image."""
    plans = spec_expand(spec) if plans is None else plans
    by_setting: dict[str, dict[str, int]] = {}
    for plan in plans:
        entry = by_setting.setdefault(plan.setting, {"prompts": 0, "images": 0})
        entry["prompts"] += 1
        entry["images"] += plan.samples
    return {
        "prompt_count": len(plans),
        "images_planned": sum(plan.samples for plan in plans),
        "by_setting": by_setting,
    }

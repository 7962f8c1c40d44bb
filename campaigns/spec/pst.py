"""The PST design section: identity groups, the power aspect, settings, samples and templates."""
from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from common.inputs import brief

from .. import presets
from .base import (
    INTERVENTION,
    PAIRED,
    PST_ASPECTS,
    SINGLE,
    STEREOTYPES,
    Problems,
    _over,
    derive_seed,
    limit,
)
from .fields import (
    _MISSING,
    _check_keys,
    _name_ok,
    _samples,
    _settings,
    _templates,
)

# --------------------------------------------------------------------------------------------
# PST
# --------------------------------------------------------------------------------------------
_PST_DESIGN_KEYS = ("aspect", "settings", "samples", "flip_order", "fairness_intervention",
                    "identities", "pairing", "pairs", "power", "templates")
_PST_TEMPLATE_SPEC = {
    "single": (("id1",), ("id1",)),
    "paired": (("id1", "id2"), ("id1", "id2")),
    "intervention": (("id1", "id2"), ("id1", "id2")),
}


def _pst_groups(value: Any, path: str, p: Problems) -> tuple[list[dict[str, Any]], str | None]:
    """Identity groups: a preset name or {"groups": [{name, stereotype, identities}, x2]}."""
    if value is _MISSING or value == "occupation":
        return presets.pst_occupation_groups(), "occupation"
    if isinstance(value, str):
        p.add(path, f"unknown preset {brief(value)} (known: {', '.join(presets.IDENTITY_PRESETS)})")
        return [], None
    if isinstance(value, list):
        value = {"groups": value}
    if not isinstance(value, Mapping):
        p.add(path, "must be a preset name or an object with 'groups'")
        return [], None
    if value.get("preset") is not None:  # the normalised form of a preset
        if value["preset"] not in presets.IDENTITY_PRESETS:
            p.add(f"{path}.preset", f"unknown preset {brief(value['preset'])} (known: {', '.join(presets.IDENTITY_PRESETS)})")
            return [], None
        if "groups" in value and value["groups"] != presets.pst_occupation_groups():
            p.add(f"{path}.groups", "differs from the preset it names; drop 'preset' to use your own groups")
        return presets.pst_occupation_groups(), value["preset"]
    _check_keys(value, ("groups", "preset"), path, p)
    groups = value.get("groups")
    if not isinstance(groups, list) or len(groups) != 2:
        p.add(f"{path}.groups", "must be a list of exactly two groups (one masculine-, one feminine-stereotyped)")
        return [], None
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for gi, group in enumerate(groups):
        gpath = f"{path}.groups.{gi}"
        if not isinstance(group, Mapping):
            p.add(gpath, "must be an object with 'name', 'stereotype' and 'identities'")
            continue
        _check_keys(group, ("name", "stereotype", "identities"), gpath, p)
        name = _name_ok(group.get("name"), f"{gpath}.name", p)
        stereotype = group.get("stereotype")
        if stereotype not in STEREOTYPES:
            p.add(f"{gpath}.stereotype", f"must be one of {', '.join(STEREOTYPES)}, got {brief(stereotype)}")
        identities = group.get("identities")
        if not isinstance(identities, list) or not identities:
            p.add(f"{gpath}.identities", "identity group is empty: list at least one identity")
            continue
        if len(identities) > limit("SPEC_MAX_IDENTITIES"):
            p.add(f"{gpath}.identities", _over(len(identities), "SPEC_MAX_IDENTITIES", "identities"))
            continue
        clean: list[str] = []
        for ii, ident in enumerate(identities):
            checked = _name_ok(ident, f"{gpath}.identities.{ii}", p, what="identity")
            if checked is None:
                continue
            if checked in seen:
                p.add(f"{gpath}.identities.{ii}", f"identity {brief(checked)} appears twice")
                continue
            seen.add(checked)
            clean.append(checked)
        if name is not None and stereotype in STEREOTYPES:
            out.append({"name": name, "stereotype": stereotype, "identities": clean})
    if len(out) == 2:
        if out[0]["stereotype"] == out[1]["stereotype"]:
            p.add(f"{path}.groups", "the two groups must have opposite stereotypes (masculine and feminine)")
        if out[0]["name"] == out[1]["name"]:
            p.add(f"{path}.groups", "the two groups must have different names")
    return out, None


def _pst_power(value: Any, seed: int, path: str, p: Problems) -> dict[str, Any]:
    """Power aspect: occupations x one seeded random high and low role each (PST section 3.2)."""
    base = presets.pst_power()
    if value is _MISSING or value is None:
        value = {}
    if not isinstance(value, Mapping):
        p.add(path, "must be an object with optional 'occupations' and 'roles'")
        return {}
    _check_keys(value, ("occupations", "roles", "draw"), path, p)
    occupations_raw = value.get("occupations", "occupation")
    if occupations_raw == "occupation":
        occupations = presets.pst_power_occupations()
    elif isinstance(occupations_raw, list) and len(occupations_raw) > limit("SPEC_MAX_IDENTITIES"):
        p.add(f"{path}.occupations", _over(len(occupations_raw), "SPEC_MAX_IDENTITIES", "occupations"))
        occupations = []
    elif isinstance(occupations_raw, list) and occupations_raw:
        occupations = []
        for i, occ in enumerate(occupations_raw):
            checked = _name_ok(occ, f"{path}.occupations.{i}", p, what="occupation")
            if checked is not None:
                if checked in occupations:
                    p.add(f"{path}.occupations.{i}", f"occupation {brief(checked)} appears twice")
                else:
                    occupations.append(checked)
    else:
        p.add(f"{path}.occupations", "must be 'occupation' (the 36-occupation preset) or a non-empty list")
        occupations = []
    roles_raw = value.get("roles", base["roles"])
    roles: dict[str, Any] = {}
    if not isinstance(roles_raw, Mapping):
        p.add(f"{path}.roles", "must be an object with 'high' and 'low'")
    else:
        _check_keys(roles_raw, ("high", "low"), f"{path}.roles", p)
        for level, default_stereo in (("high", "masculine"), ("low", "feminine")):
            entry = roles_raw.get(level, base["roles"][level])
            rpath = f"{path}.roles.{level}"
            if isinstance(entry, list):
                entry = {"name": base["roles"][level]["name"], "stereotype": default_stereo, "roles": entry}
            if not isinstance(entry, Mapping):
                p.add(rpath, "must be a list of roles or an object with 'name', 'stereotype', 'roles'")
                continue
            _check_keys(entry, ("name", "stereotype", "roles"), rpath, p)
            name = _name_ok(entry.get("name", base["roles"][level]["name"]), f"{rpath}.name", p)
            stereotype = entry.get("stereotype", default_stereo)
            if stereotype not in STEREOTYPES:
                p.add(f"{rpath}.stereotype", f"must be one of {', '.join(STEREOTYPES)}")
            role_list = entry.get("roles")
            if not isinstance(role_list, list) or not role_list:
                p.add(f"{rpath}.roles", "role list is empty: list at least one role")
                continue
            if len(role_list) > limit("SPEC_MAX_IDENTITIES"):
                p.add(f"{rpath}.roles", _over(len(role_list), "SPEC_MAX_IDENTITIES", "roles"))
                continue
            clean = [r for i, r in enumerate(role_list) if _name_ok(r, f"{rpath}.roles.{i}", p, what="role")]
            roles[level] = {"name": name, "stereotype": stereotype, "roles": [r.strip() for r in clean]}
    if p or len(roles) != 2:
        return {}
    if roles["high"]["stereotype"] == roles["low"]["stereotype"]:
        p.add(f"{path}.roles", "high and low roles must have opposite stereotypes")
        return {}
    # The draw: seeded by the campaign seed, recorded so the campaign is reproducible and auditable.
    rng = random.Random(derive_seed(seed, "pst", "power-draw"))
    draw = [{"occupation": occ, "high": rng.choice(roles["high"]["roles"]), "low": rng.choice(roles["low"]["roles"])}
            for occ in occupations]
    if "draw" in value and value["draw"] != draw:
        p.add(f"{path}.draw", "does not match the draw the seed gives; remove it (it is computed) or change the seed")
    return {"occupations": occupations, "roles": roles, "draw": draw}


def _normalize_pst(design: Mapping[str, Any], seed: int, p: Problems) -> dict[str, Any]:
    """The PST `design` section, normalised: every default written out, every problem recorded.

    Long because it walks the documented PST design keys (docs/spec.md) in order and later keys
    depend on earlier ones (settings decide samples and templates; the aspect decides identities):
    one reading of the section, like its documentation."""
    path = "design"
    _check_keys(design, _PST_DESIGN_KEYS, path, p)
    aspect = design.get("aspect", "occupation")
    if aspect not in PST_ASPECTS:
        p.add(f"{path}.aspect", f"unknown aspect {brief(aspect)} (allowed: {', '.join(PST_ASPECTS)})")
        aspect = "occupation"
    settings = _settings(design.get("settings", _MISSING), (SINGLE, PAIRED), f"{path}.settings", p,
                         [SINGLE, PAIRED])
    intervention_raw = design.get("fairness_intervention", False)
    intervention: bool | list[str] = False
    if isinstance(intervention_raw, bool):
        intervention = intervention_raw
    elif isinstance(intervention_raw, list) and intervention_raw:
        intervention = [i for i in intervention_raw if isinstance(i, str)]
        if len(intervention) != len(intervention_raw):
            p.add(f"{path}.fairness_intervention", "must be true/false or a list of identity names")
    else:
        p.add(f"{path}.fairness_intervention", "must be true/false or a non-empty list of identity names")
    if intervention:
        settings = [*settings, "intervention"]
    defaults = dict(presets.PST_SAMPLES[aspect])
    defaults["intervention"] = defaults["paired"]
    samples_raw = design.get("samples", _MISSING)
    samples = _samples(samples_raw, settings, defaults, f"{path}.samples", p)
    if INTERVENTION in samples and not (isinstance(samples_raw, Mapping) and INTERVENTION in samples_raw):
        # Intervened prompts re-run the paired design: same number of samples unless told otherwise.
        samples["intervention"] = samples.get("paired", defaults["paired"])
    flip = design.get("flip_order", True)
    if not isinstance(flip, bool):
        p.add(f"{path}.flip_order", "must be true or false")
        flip = True
    templates = _templates(design.get("templates", _MISSING), settings, _PST_TEMPLATE_SPEC,
                           presets.PST_TEMPLATES, f"{path}.templates", p)

    out: dict[str, Any] = {"aspect": aspect, "settings": settings, "samples": samples, "flip_order": flip,
                           "fairness_intervention": intervention, "templates": templates}
    if aspect == "power":
        power = _pst_power(design.get("power", _MISSING), seed, f"{path}.power", p)
        if not power:
            return out
        high, low = power["roles"]["high"], power["roles"]["low"]
        groups = [
            {"name": high["name"], "stereotype": high["stereotype"],
             "identities": [f"{d['occupation']} {d['high']}" for d in power["draw"]]},
            {"name": low["name"], "stereotype": low["stereotype"],
             "identities": [f"{d['occupation']} {d['low']}" for d in power["draw"]]},
        ]
        # Power pairs are matched (each occupation's own high and low role), not crossed.
        pairs = [[f"{d['occupation']} {d['high']}", f"{d['occupation']} {d['low']}"] for d in power["draw"]]
        out.update({"power": power, "identities": {"preset": None, "groups": groups}, "pairing": "matched",
                    "pairs": pairs})
        # A stored spec carries these derived fields; they must be what the design gives.
        if "identities" in design and design["identities"] != out["identities"]:
            p.add(f"{path}.identities", "the power aspect builds its identities from 'power' (occupations x roles)")
        if design.get("pairing", "matched") != "matched":
            p.add(f"{path}.pairing", "the power aspect pairs each occupation's own roles ('matched')")
    else:
        if "power" in design:
            p.add(f"{path}.power", "only the power aspect takes 'power'")
        groups, preset = _pst_groups(design.get("identities", _MISSING), f"{path}.identities", p)
        pairing = design.get("pairing", "cross")
        if pairing != "cross" and not isinstance(pairing, list):
            p.add(f"{path}.pairing", "must be 'cross' (every identity of one group with every one of the other) "
                                     "or a list of [identity, identity] pairs")
            pairing = "cross"
        out["identities"] = {"preset": preset, "groups": groups}
        if len(groups) != 2:
            return out
        crossed = len(groups[0]["identities"]) * len(groups[1]["identities"]) * (2 if flip else 1)
        if pairing == "cross" and crossed > limit("MAX_PROMPTS_PER_CAMPAIGN"):
            # Counted before the pairs are built: two groups of a thousand would be a million pairs.
            p.add(path, f"crossing the two identity groups gives {crossed:,} paired prompts; this deployment "
                        f"allows at most {limit('MAX_PROMPTS_PER_CAMPAIGN'):,} (MAX_PROMPTS_PER_CAMPAIGN)")
            return out
        if isinstance(pairing, list) and len(pairing) > limit("MAX_PROMPTS_PER_CAMPAIGN"):
            p.add(f"{path}.pairing", _over(len(pairing), "MAX_PROMPTS_PER_CAMPAIGN", "pairs"))
            return out
        if pairing == "cross":
            pairs = [[a, b] for a in groups[0]["identities"] for b in groups[1]["identities"]]
        else:
            pairs = []
            first, second = set(groups[0]["identities"]), set(groups[1]["identities"])
            for i, pair in enumerate(pairing):
                if (not isinstance(pair, list) or len(pair) != 2 or pair[0] not in first or pair[1] not in second):
                    p.add(f"{path}.pairing.{i}", "must be [identity of the first group, identity of the second group]")
                else:
                    pairs.append(list(pair))
        out.update({"pairing": pairing, "pairs": pairs})
    if "pairs" in design and "pairs" in out and design["pairs"] != out["pairs"]:
        p.add(f"{path}.pairs", "is derived from 'pairing' (or the power draw); remove it or give 'pairing' instead")
    if isinstance(intervention, list):
        known = {i for g in out["identities"]["groups"] for i in g["identities"]}
        for i, ident in enumerate(intervention):
            if ident not in known:
                p.add(f"{path}.fairness_intervention.{i}", f"unknown identity {brief(ident)}")
    return out

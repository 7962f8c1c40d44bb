"""The spec's `crowd` section: settings for MTurk HITs and Prolific studies, with defaults.

```json
"crowd": {
  "mturk": {"title", "description", "keywords", "reward" (per HIT, USD, "0.10"), "assignment_duration_s" (1800),
            "lifetime_s" (604800), "auto_approval_delay_s" (259200), "locales" (["US", "GB"]),
            "min_approval_rate" (95), "allow_10_or_more" (false)},
  "prolific": {"completion_code", "completion_url", "screen_out_code", "hits_per_participant" (1)}
}
```
The papers' workers were in the US or the UK and were paid $0.10 per image (PST) / per batch (GEP).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from campaigns.spec import Problems, is_missing
from common.inputs import BodyError
from common.numbers import amount_text

MTURK_DEFAULTS: dict[str, Any] = {
    "title": None, "description": None, "keywords": "image, labeling, research", "reward": "0.10",
    "assignment_duration_s": 1800, "lifetime_s": 7 * 24 * 3600, "auto_approval_delay_s": 3 * 24 * 3600,
    "locales": ["US", "GB"], "min_approval_rate": 95, "allow_10_or_more": False,
}
PROLIFIC_DEFAULTS: dict[str, Any] = {
    "completion_code": None, "completion_url": None, "screen_out_code": None, "hits_per_participant": 1,
}
MAX_REWARD_USD = 1000  # per HIT; the stored amount has 8 digits, 2 decimals
_INTS = {"assignment_duration_s": (30, 365 * 24 * 3600), "lifetime_s": (30, 365 * 24 * 3600),
         "auto_approval_delay_s": (0, 30 * 24 * 3600), "min_approval_rate": (0, 100),
         "hits_per_participant": (1, 10000)}


def _block(raw: Any, defaults: Mapping[str, Any], path: str, p: Problems) -> dict[str, Any]:
    if raw is None:
        return dict(defaults)
    if not isinstance(raw, Mapping):
        p.add(path, "must be an object")
        return dict(defaults)
    out = dict(defaults)
    for key, value in raw.items():
        if key not in defaults:
            p.add(f"{path}.{key}", f"unknown key {key!r} (allowed: {', '.join(defaults)})")
            continue
        if key in _INTS:
            lo, hi = _INTS[key]
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                p.add(f"{path}.{key}", f"must be an integer between {lo} and {hi}")
                continue
        elif key == "reward":
            try:  # common.numbers: short text, finite, range checked before anything formats it
                value = amount_text(value, field=f"{path}.{key}", maximum=MAX_REWARD_USD)
            except BodyError as exc:
                p.add(f"{path}.{key}", f"must be a non-negative amount such as \"0.10\", at most {MAX_REWARD_USD} "
                                       f"({exc.errors[f'{path}.{key}'][0]})")
                continue
        elif key == "locales":
            if not isinstance(value, list) or not all(isinstance(c, str) and len(c) == 2 for c in value):
                p.add(f"{path}.{key}", "must be a list of two-letter country codes")
                continue
        elif key == "allow_10_or_more":
            if not isinstance(value, bool):
                p.add(f"{path}.{key}", "must be true or false")
                continue
        elif value is not None and not isinstance(value, str):
            p.add(f"{path}.{key}", "must be a string")
            continue
        out[key] = value
    return out


def validate_crowd(raw: Any, p: Problems, spec: Mapping[str, Any]) -> dict[str, Any]:
    if is_missing(raw) or raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        p.add("crowd", "must be an object with optional 'mturk' and 'prolific'")
        raw = {}
    for key in raw:
        if key not in ("mturk", "prolific"):
            p.add(f"crowd.{key}", "unknown key (allowed: mturk, prolific)")
    out = {"mturk": _block(raw.get("mturk"), MTURK_DEFAULTS, "crowd.mturk", p),
           "prolific": _block(raw.get("prolific"), PROLIFIC_DEFAULTS, "crowd.prolific", p)}
    redundancy = (spec.get("annotation") or {}).get("redundancy", 3) if isinstance(spec.get("annotation"), Mapping) else 3
    if isinstance(redundancy, Mapping):  # adaptive: a question can reach its max
        redundancy = redundancy.get("max", 5)
    if isinstance(redundancy, int) and redundancy >= 10 and not out["mturk"]["allow_10_or_more"]:
        p.add("crowd.mturk.allow_10_or_more", "annotation.redundancy is 10 or more: MTurk charges more for HITs with "
                                              "10+ assignments and cannot raise a HIT across 10 later; set true to accept")
    return out

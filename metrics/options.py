"""What a report is built with: one validated value, parsed once at the edge (API query, console form,
`report` command) and stored as data in the report snapshot (`ReportSnapshot.options`).

The flow is one way: edge -> `ReportOptions` -> extract -> report -> render. Nothing downstream parses
strings again; a worker building a snapshot reads `ReportOptions.from_dict(snapshot.options)`.

Adding an option (as `source` was: "human", a machine labeller's name, or "hybrid:<labeller>"):
1. a field with a default here, and its check in `_check` (one message per bad value);
2. its query-parameter parsing in `from_params` (`PARAMS` lists the names the edges accept);
3. the code that uses it (extract for where labels come from, report for what is computed).
Snapshots stored before the field existed lack the key and get the default in `from_dict`; the cache
key (`key()`) changes with the new field, so old snapshots are simply not found again (a rebuild).
"""
from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number
from metrics.core.gep import GepTiePolicy
from metrics.core.pst import Treatment

TREATMENTS = ("paper", "excluded")
GEP_TIE_POLICIES = ("absent", "present", "exclude")
AGGREGATIONS = ("majority", "dawid_skene")
MAX_DRAWS = 10_000
MAX_SEED = 2**31 - 1
# Query parameters the edges accept (the API documents them; `format` is the edge's own).
PARAMS = ("treatment", "gep_tie_policy", "aggregation", "n_boot", "n_perm", "seed", "confidence", "exclude_blocked",
          "min_group", "source")
MIN_GROUP = (2, 1000)  # annotators per reported demographic group (the `annotators` section)
# `source`: "human" (the human majority), a machine labeller's name, or "hybrid:<labeller>".
LABELLER_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
INT_RANGES = {"n_boot": (0, MAX_DRAWS), "n_perm": (0, MAX_DRAWS), "seed": (0, MAX_SEED), "min_group": MIN_GROUP}


def _check(name: str, value: Any) -> str | None:
    """What is wrong with `value` for option `name` (None when it is fine)."""
    def integer(lo: int, hi: int) -> str | None:
        ok = isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi
        return None if ok else f"must be an integer between {lo} and {hi}"

    if name == "treatment":
        return None if value in TREATMENTS else f"must be one of {', '.join(TREATMENTS)}"
    if name == "gep_tie_policy":
        return None if value in GEP_TIE_POLICIES else f"must be one of {', '.join(GEP_TIE_POLICIES)}"
    if name == "aggregation":
        return None if value in AGGREGATIONS else f"must be one of {', '.join(AGGREGATIONS)}"
    if name in ("n_boot", "n_perm"):
        return integer(0, MAX_DRAWS)
    if name == "seed":
        return None if value is None else integer(0, MAX_SEED)
    if name == "confidence":
        ok = (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
              and 0.5 <= value < 1)
        return None if ok else "must be a number between 0.5 and 1 (e.g. 0.95)"
    if name == "exclude_blocked":
        return None if isinstance(value, bool) else "must be true or false"
    if name == "min_group":
        return integer(*MIN_GROUP)
    if name == "source":
        labeller = value[len("hybrid:"):] if isinstance(value, str) and value.startswith("hybrid:") else value
        ok = value == "human" or (isinstance(labeller, str) and LABELLER_NAME.match(labeller) is not None
                                  and labeller != "human")
        return None if ok else "must be human, a machine labeller's name, or hybrid:<labeller>"
    return "unknown option"


def _raise(errors: dict[str, list[str]]) -> None:
    if errors:
        first = next(iter(errors))
        raise ApplicationError(f"Invalid report parameter {first}: {errors[first][0]}", errors=errors)


@dataclass(frozen=True)
class ReportOptions:
    """Options of one report. Constructing one validates it (ApplicationError naming each bad field)."""

    treatment: Treatment = "paper"
    gep_tie_policy: GepTiePolicy = "absent"
    aggregation: str = "majority"
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int | None = None  # None: the campaign seed
    exclude_blocked: bool = True
    n_perm: int = 1000
    min_group: int = 5  # smaller demographic groups are merged into "other" (metrics/sections/annotators.py)
    source: str = "human"

    def __post_init__(self) -> None:
        errors = {f.name: [msg] for f in fields(self) if (msg := _check(f.name, getattr(self, f.name))) is not None}
        _raise(errors)

    @classmethod
    def from_params(cls, params: Any) -> ReportOptions:
        """Parse query parameters (strings; empty means default), naming every bad one. Other keys
        (`format`, `campaigns`, ...) belong to the edge and are ignored here."""
        errors: dict[str, list[str]] = {}
        values: dict[str, Any] = {}
        for name in PARAMS:
            if name not in params or params[name] in ("", None):
                continue
            raw = params[name]
            value: Any = raw
            try:  # numbers through common.numbers (short, finite, in the field's range); else the check names it
                if name in INT_RANGES:
                    value = number(raw, field=name, kind="int", minimum=INT_RANGES[name][0], maximum=INT_RANGES[name][1])
                elif name == "confidence":
                    value = number(raw, field=name, kind="float", minimum="0.5", maximum="0.999999")
                elif name == "exclude_blocked":
                    text = str(raw).lower()
                    value = {"true": True, "1": True, "false": False, "0": False}.get(text, raw)
            except BodyError:
                pass  # left as given: the check below names it
            message = _check(name, value)
            if message is not None:
                errors[name] = [message]
            else:
                values[name] = value
        _raise(errors)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready; `from_dict(to_dict())` gives the same options."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReportOptions:
        """Options stored as data (a snapshot's). Missing keys take their default (an option added
        after the snapshot was stored); unknown keys are an error, as is any bad value."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            _raise({name: ["unknown option"] for name in unknown})
        return cls(**data)

    @property
    def labeller(self) -> str | None:
        """The machine labeller the source names (None for human)."""
        if self.source == "human":
            return None
        return self.source[len("hybrid:"):] if self.source.startswith("hybrid:") else self.source

    @property
    def is_hybrid(self) -> bool:
        return self.source.startswith("hybrid:")

    def key(self) -> str:
        """The snapshot cache key: one way (options -> key), never parsed back."""
        # `source=human` (the default) is left out: snapshots stored before the option stay found.
        items = {k: v for k, v in self.to_dict().items() if not (k == "source" and v == "human")}
        return "|".join(f"{k}={v}" for k, v in sorted(items.items()))

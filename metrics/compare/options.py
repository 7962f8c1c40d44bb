"""What a comparison's significance tests are run with: one validated value parsed once at the edge
(`GET /api/reports/compare/`, the console's compare page), like `ReportOptions` for a report.

- `test`: `none` (default: the headline figures side by side only) or `permutation` (differences with
  bootstrap intervals, permutation p-values and Holm-adjusted families; docs/metrics.md).
- `draws`: permutations AND bootstrap draws of every difference (default 10,000), at most the
  deployment's `COMPARE_MAX_DRAWS` (default 20,000): above it a 400 naming `draws`.
- `seed`: the draws' seed (default `DEFAULT_SEED`, fixed, so a comparison gives the same p-values on
  every call; the permutations use `seed + 1`).
- `settings`: two settings of ONE campaign (`?campaign=ID&settings=paired,intervention`): side A is
  the first setting, side B the second.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings as django_settings

from campaigns.spec import ALL_SETTINGS
from common.errors import ApplicationError
from common.inputs import BodyError
from common.numbers import number

TESTS = ("none", "permutation")
DEFAULT_DRAWS = 10_000
DEFAULT_SEED = 20_240_601
MAX_SEED = 2**31 - 1


def max_draws() -> int:
    """The deployment's bound on `draws` (setting `COMPARE_MAX_DRAWS`)."""
    return int(getattr(django_settings, "COMPARE_MAX_DRAWS", 20_000))


@dataclass(frozen=True)
class CompareOptions:
    test: str = "none"
    draws: int = DEFAULT_DRAWS
    seed: int = DEFAULT_SEED
    settings: tuple[str, str] | None = None

    @property
    def significance(self) -> bool:
        return self.test != "none"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["settings"] = list(self.settings) if self.settings else None
        return out

    def key(self) -> str:
        return "|".join(f"{k}={v}" for k, v in sorted(self.to_dict().items()))

    @classmethod
    def from_params(cls, params: Any) -> CompareOptions:
        """Parse query parameters (strings; empty means default), naming every bad one (400)."""
        errors: dict[str, list[str]] = {}
        values: dict[str, Any] = {}

        def raw(name: str) -> str | None:
            value = params.get(name) if hasattr(params, "get") else None
            return None if value in (None, "") else str(value)

        test = raw("test")
        if test is not None:
            if test not in TESTS:
                errors["test"] = [f"must be one of {', '.join(TESTS)}"]
            else:
                values["test"] = test
        bound = max_draws()
        for name, lo, hi in (("draws", 1, bound), ("seed", 0, MAX_SEED)):
            text = raw(name)
            if text is None:
                continue
            try:
                values[name] = number(text, field=name, kind="int", minimum=lo, maximum=hi)
            except BodyError:
                extra = " (COMPARE_MAX_DRAWS)" if name == "draws" else ""
                errors[name] = [f"must be an integer between {lo} and {hi}{extra}"]
        pair = raw("settings")
        if pair is not None:
            parts = [p.strip() for p in pair.split(",") if p.strip()]
            bad = [p for p in parts if p not in ALL_SETTINGS]
            if len(parts) != 2 or bad or parts[0] == parts[1]:
                errors["settings"] = ["give two different settings, e.g. settings=paired,intervention (known: "
                                      f"{', '.join(ALL_SETTINGS)})"]
            else:
                values["settings"] = (parts[0], parts[1])
        if errors:
            first = next(iter(errors))
            raise ApplicationError(f"Invalid compare parameter {first}: {errors[first][0]}", errors=errors)
        if "settings" in values and "test" not in values:
            values["test"] = "permutation"  # a settings comparison is nothing but its tests
        return cls(**values)

"""The request work budget: one check, before any work starts, of what a request would cost.

An endpoint whose work grows with its data or its options (the report with `n_boot` / `n_perm` /
`min_group` and its `annotators` section, the comparison's `draws`, the replication package) first
estimates its seconds from its inputs (`metrics/snapshots/budget.py` holds the per-unit costs, measured
by `bench/budget_calibrate.py`), then asks `budget_decide`:

- at most `REQUEST_WORK_BUDGET_S` (setting, default 5 s): "inline", done in the request;
- above it: "worker", the endpoint queues a Celery task and answers 202 with progress;
- when the options alone would cost more than `REQUEST_WORKER_MAX_S` (setting, default 600 s) even in a
  worker: a 400 naming the option that costs the most. Only options the caller raised beyond their
  defaults count there: a bigger campaign, or the default options on it, only ever go to the worker.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from django.conf import settings

from .errors import ApplicationError

DEFAULT_BUDGET_S = 5.0
DEFAULT_WORKER_MAX_S = 600.0
Decision = Literal["inline", "worker"]


@dataclass(frozen=True)
class Estimate:
    """Estimated seconds of one request: `data` (what the inputs' size costs whatever the options)
    and `options` (option name -> the seconds it adds)."""

    data: float
    options: dict[str, float] = field(default_factory=dict)
    # Options the caller set beyond their defaults: only these can make the request a 400 (the
    # defaults and a bigger campaign only ever send the work to the worker).
    raised: frozenset[str] = frozenset()

    @property
    def seconds(self) -> float:
        return self.data + sum(self.options.values())

    def as_dict(self) -> dict[str, float]:
        return {"data": round(self.data, 3), **{k: round(v, 3) for k, v in self.options.items()}}


def budget_s() -> float:
    return float(getattr(settings, "REQUEST_WORK_BUDGET_S", DEFAULT_BUDGET_S))


def worker_max_s() -> float:
    return float(getattr(settings, "REQUEST_WORKER_MAX_S", DEFAULT_WORKER_MAX_S))


def budget_decide(estimate: Estimate, *, hints: dict[str, str] | None = None) -> Decision:
    """"inline" or "worker" for this estimate; ApplicationError (400) naming the costliest option when
    the options alone exceed the worker's ceiling. `hints`: option -> what to change, added to its message."""
    raised = {k: v for k, v in estimate.options.items() if k in estimate.raised}
    option_s = sum(raised.values())
    if option_s > worker_max_s():
        name = max(raised, key=lambda k: raised[k])
        advice = (hints or {}).get(name, "ask for fewer")
        message = (f"{name}: about {option_s:,.0f} s of work, more than the {worker_max_s():,.0f} s a worker may "
                   f"spend on one request (REQUEST_WORKER_MAX_S); {advice}")
        raise ApplicationError(f"Invalid parameter {name}: {message}", errors={name: [message]})
    return "worker" if estimate.seconds > budget_s() else "inline"

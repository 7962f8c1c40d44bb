"""Fair pay: time per answer and the effective hourly rate of each annotator and of the campaign,
against the spec's floor (`annotation.pay_floor_usd_per_hour`, default 12 USD/h: the GEP paper's
lower bound), with the reward per HIT (or per question) that would meet it.

Definitions (docs/annotation.md "Fair pay"), the one definition of time the console's annotator
monitor uses too (`annotator_seconds_per_answer`):
- a HIT's working time is the longer of its wall time `submitted_at - created_at` (taken to
  submitted: what MTurk's WorkTimeInSeconds measures) and the sum of its answers' `time_ms` (the
  task page's time on screen per question). An answer submitted by the API with no time adds
  nothing to the sum, and a HIT submitted by a script the instant it was taken has a wall time near
  0: the longer of the two is the one that measures work. A HIT with neither, or whose working time
  is under `MIN_SECONDS_PER_ANSWER` per answer (no person reads an image question that fast: a
  script or an import without times), is left out of the times (its pay still counts);
- seconds per answer = the HIT's working time / its answers, i.e. time measured from the HIT's
  start (or the previous answer) to each answer, averaged over the HIT; an annotator's (and the
  campaign's) median seconds per answer is the median over their answers (each answer carries its
  HIT's value);
- earned = reward of submitted HITs not rejected + every bonus; the effective hourly rate = earned /
  working hours of the HITs with a time (rejected HITs count as time worked: the work was done);
- the campaign's median effective rate is the median over annotators with a rate; below the floor
  (compared only when the currency is USD) the console warns and suggests
  `floor x median seconds per answer x answers per HIT / 3600`, rounded up to the cent (answers per
  HIT: the median of the submitted HITs; 1 when the reward is per question), and never below the
  platform's minimum reward (`PLATFORM_MIN_REWARD`: MTurk's 0.01 USD per assignment).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import numpy as np
from django.db.models import Count, Sum

from campaigns.models import Campaign

from .models import Assignment
from .spec_section import annotation_settings

# MTurk's smallest reward per assignment (also the smallest amount any platform pays out).
PLATFORM_MIN_REWARD = Decimal("0.01")
# Below this a HIT's time is not a person's working time (see the module docstring).
MIN_SECONDS_PER_ANSWER = 0.5


@dataclass(frozen=True)
class HitTime:
    """One submitted HIT: who, how long (None: unknown), how many answers, what it earned."""

    annotator: int
    seconds: float | None
    answers: int
    earned: Decimal


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _rate(earned: Decimal, seconds: float) -> float | None:
    return float(earned) / (seconds / 3600) if seconds > 0 else None


def _cents_up(amount: float) -> str:
    return str(max(PLATFORM_MIN_REWARD, Decimal(str(amount)).quantize(Decimal("0.01"), rounding=ROUND_CEILING)))


def hit_seconds(*, created: Any, submitted: Any, answer_ms: int | None, answers: int) -> float | None:
    """A HIT's working time (the module's definition): the longer of its wall time and the sum of
    its answers' on-screen times; None when neither is known or it is implausibly short."""
    wall = (submitted - created).total_seconds() if created is not None and submitted is not None else None
    on_screen = answer_ms / 1000 if answer_ms else None
    known = [v for v in (wall, on_screen) if v is not None and math.isfinite(v) and v > 0]
    if not known or answers <= 0 or max(known) < MIN_SECONDS_PER_ANSWER * answers:
        return None
    return max(known)


def pay_summary(hits: list[HitTime], *, floor: float, currency: str, reward: str, reward_per: str,
                usernames: dict[int, str] | None = None) -> dict[str, Any]:
    """The fair-pay figures of a campaign from its submitted HITs (pure)."""
    per: dict[int, dict[str, Any]] = {}
    all_per_answer: list[float] = []
    hit_sizes: list[int] = []
    for h in hits:
        row = per.setdefault(h.annotator, {"per_answer": [], "seconds": 0.0, "earned": Decimal(0), "answers": 0,
                                           "hits": 0})
        row["earned"] += h.earned
        row["answers"] += h.answers
        row["hits"] += 1
        if h.answers > 0:
            hit_sizes.append(h.answers)
        if h.seconds is not None and h.seconds > 0 and h.answers > 0:
            row["seconds"] += h.seconds
            row["per_answer"].extend([h.seconds / h.answers] * h.answers)
            all_per_answer.extend([h.seconds / h.answers] * h.answers)
    compare = currency.upper() == "USD"
    annotators = []
    rates = []
    for annotator, row in sorted(per.items()):
        rate = _rate(row["earned"], row["seconds"])
        if rate is not None:
            rates.append(rate)
        annotators.append({
            "id": annotator, "username": (usernames or {}).get(annotator, ""), "hits": row["hits"],
            "answers": row["answers"], "median_seconds_per_answer": _median(row["per_answer"]),
            "seconds_worked": row["seconds"], "earned": f"{row['earned']:.2f}", "effective_hourly": rate,
            "below_floor": (rate < floor) if compare and rate is not None else None,
        })
    median_rate = _median(rates)
    median_seconds = _median(all_per_answer)
    per_unit = 1.0 if reward_per == "question" else (float(np.median(hit_sizes)) if hit_sizes else None)
    suggested = None
    if median_seconds is not None and per_unit is not None:
        suggested = _cents_up(floor * median_seconds * per_unit / 3600)
    below = (median_rate < floor) if compare and median_rate is not None else None
    return {
        "currency": currency, "floor_usd_per_hour": floor, "reward": reward, "reward_per": reward_per,
        "hits": len(hits), "answers": sum(h.answers for h in hits),
        "median_seconds_per_answer": median_seconds, "median_effective_hourly": median_rate,
        "below_floor": below, "answers_per_hit": per_unit,
        "suggested_reward": suggested if below else None, "reward_for_floor": suggested,
        "note": None if compare else f"the floor is in USD and this campaign pays in {currency}: not compared",
        "annotators": annotators,
    }


def campaign_pay(*, campaign: Campaign) -> dict[str, Any]:
    """GET /api/campaigns/{id}/pay/ and the console's warning: `pay_summary` of the campaign's submitted
    HITs. One query (the HITs with their answer counts and time sums, and the usernames)."""
    cfg = annotation_settings(campaign)
    rows = (Assignment.objects.filter(campaign=campaign, status=Assignment.Status.SUBMITTED)
            .annotate(n=Count("answers"), ms=Sum("answers__time_ms"))
            .values_list("annotator_id", "annotator__user__username", "created_at", "submitted_at", "n", "ms",
                         "reward", "bonus", "review").order_by("pk"))
    hits, names = [], {}
    for annotator, username, created, submitted, n, ms, reward, bonus, review in rows:
        names[annotator] = username
        seconds = hit_seconds(created=created, submitted=submitted, answer_ms=ms, answers=n)
        earned = (Decimal(0) if review == Assignment.Review.REJECTED else Decimal(reward)) + Decimal(bonus)
        hits.append(HitTime(annotator, seconds, n, earned))
    return pay_summary(hits, floor=cfg["pay_floor_usd_per_hour"], currency=cfg["currency"], reward=cfg["reward"],
                       reward_per=cfg["reward_per"], usernames=names)

"""Majority-vote labels stored per question (AggregatedLabel), kept current as answers arrive.

Tie policy ("tie", the only one stored): when two or more choices share the highest vote count the
stored label is the literal string "tie" with `tie=True`; the vote counts are kept, so the metrics
layer can apply its own policy (the paper counts a tie like "Cannot identify"; the excluded variant
drops it) and always report how many there were. Ties are never broken at random here.

Which answers count: the latest answer of each (question, annotator) (a correction replaces the
answer it `corrects`), excluding gold questions (they measure annotators, not images) and, when the
campaign's `exclude_flagged_answers` is on, answers of annotators whose enrollment is blocked.
Dawid-Skene lives in the metrics layer (annotation must not import metrics).
"""
from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from django.db.models import Count
from django.utils import timezone

from .models import AggregatedLabel, Answer, Enrollment

TIE = "tie"


def majority_label(votes: Mapping[str, int]) -> tuple[str, bool]:
    """(label, tie) for a {choice: count} mapping: the unique most frequent choice, or ("tie", True)."""
    if not votes:
        return "", False
    top = max(votes.values())
    winners = [choice for choice, n in votes.items() if n == top]
    if len(winners) > 1:
        return TIE, True
    return winners[0], False


def labels_recompute(*, campaign_id: int, question_ids: Iterable[int] | None = None,
                     exclude_blocked: bool = True) -> int:
    """Recompute the majority label of the given questions (all of the campaign's when None) in two
    queries (votes grouped by question and choice, one upsert). Questions with no counted answer lose
    their label. Returns the number of labels written."""
    answers = Answer.objects.filter(campaign_id=campaign_id, corrected_by__isnull=True, question__is_gold=False)
    if question_ids is not None:
        ids = list(question_ids)
        if not ids:
            return 0
        answers = answers.filter(question_id__in=ids)
    if exclude_blocked:
        blocked = Enrollment.objects.filter(campaign_id=campaign_id, status=Enrollment.Status.BLOCKED)
        answers = answers.exclude(annotator_id__in=blocked.values("annotator_id"))
    votes: dict[int, dict[str, int]] = defaultdict(dict)
    for qid, choice, n in answers.values_list("question_id", "choice").annotate(n=Count("id")).order_by():
        votes[qid][choice] = n
    now = timezone.now()
    rows = []
    for qid, counts in votes.items():
        label, tie = majority_label(counts)
        rows.append(AggregatedLabel(question_id=qid, method="majority", label=label, votes=dict(sorted(counts.items())),
                                    answers=sum(counts.values()), tie=tie, updated_at=now))
    if rows:
        AggregatedLabel.objects.bulk_create(rows, update_conflicts=True, unique_fields=["question"],
                                            update_fields=["method", "label", "votes", "answers", "tie", "updated_at"])
    stale = AggregatedLabel.objects.filter(question__campaign_id=campaign_id).exclude(question_id__in=list(votes))
    if question_ids is not None:
        stale = stale.filter(question_id__in=ids)
        if len(votes) < len(ids):
            stale.delete()
    else:
        stale.delete()
    return len(rows)


def label_summary(*, campaign_id: int) -> dict[str, Any]:
    """Counts of stored labels, ties included (reported, never hidden)."""
    qs = AggregatedLabel.objects.filter(question__campaign_id=campaign_id, question__is_gold=False)
    total = qs.count()
    ties = qs.filter(tie=True).count()
    return {"labels": total, "labels_tied": ties}


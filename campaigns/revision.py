"""The counter half of a campaign's data revision (`Campaign.data_changes`).

A report, a comparison and a dataset export are snapshots keyed by the campaign's data revision and
their options, nothing else. The revision is two halves: values derived from the answers (their
count and highest id: the HIT submit path adds answers at thousands per second and must not
serialise on the campaign row) and this counter, bumped in the same transaction by every rarer
write a snapshot reads (gold, exclusion, blocking, corrections, demographics, imports, machine
labels, references, examples, opening, image outcomes). `annotation.services.derived` is the write
path that calls it for everything annotation owns; the apps before annotation in the layer order
(campaigns, generation) call it here for their own rows.
"""
from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F

from .models import Campaign


def data_changed(*, campaign_ids: Iterable[int]) -> None:
    """Bump the counter of each campaign (one UPDATE; a row lock held until the caller commits, which
    neither the HIT engine nor answer inserts wait for: FOR KEY SHARE does not conflict with it)."""
    ids = sorted(set(campaign_ids))
    if ids:
        Campaign.objects.filter(pk__in=ids).update(data_changes=F("data_changes") + 1)

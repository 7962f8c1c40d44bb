"""The one key of every snapshot (a report, a comparison, and so the dataset export built from the
report): the data revision of each campaign it reads (`annotation.selectors.data_revision`, moved by
every writer through `annotation.services.derived` in the writer's own transaction) and its options.
Nothing else decides whether a stored snapshot is stale."""
from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from annotation.selectors import data_revision
from campaigns.models import Campaign

# A `ReportSnapshot.data_version` longer than this is stored as its SHA-256 (many campaigns compared).
DATA_VERSION_PLAIN_MAX = 200


@dataclass(frozen=True)
class SnapshotKey:
    """Where a snapshot is stored: `ReportSnapshot.options_key` and `ReportSnapshot.data_version`."""

    options_key: str
    data_version: str


def snapshot_key(*, campaigns: Sequence[Campaign], options_key: str) -> SnapshotKey:
    """The key of a snapshot of these campaigns' data (in this order) under these options. Read before
    the data the snapshot is built from: a write committed in between gives the next request a new
    key, so a snapshot is never served for data newer than it holds. Two queries per campaign."""
    version = "#".join(f"{c.pk}:{data_revision(campaign_id=c.pk)}" for c in campaigns)
    if len(version) > DATA_VERSION_PLAIN_MAX:
        version = hashlib.sha256(version.encode()).hexdigest()
    return SnapshotKey(options_key=options_key, data_version=version)

"""The annotators' consented demographics for the report's `annotators` section: the latest numbered
release's members and their answers to the campaign's own form (annotation.people.release_answers;
docs/security.md, "Demographics release rule"), read in the same snapshot as the answers."""
from __future__ import annotations

from typing import Any

from annotation.people import release_answers


def demographics_read(campaign_id: int) -> tuple[dict[str, Any] | None, dict[int, dict[str, Any]]]:
    """(the release: number, date, min_group, members; or None before the first) and annotator id ->
    what they reported for this campaign, members of the release only; those who reported nothing
    are left out."""
    return release_answers(campaign_id=campaign_id)

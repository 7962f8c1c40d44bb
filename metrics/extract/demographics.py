"""The annotators' consented demographics for the report's `annotators` section: one query (the
annotation app's `campaign_demographics_rows`), read in the same snapshot as the answers."""
from __future__ import annotations

from typing import Any

from annotation.demographics import effective_answers
from annotation.people import campaign_demographics_rows


def demographics_read(campaign_id: int) -> dict[int, dict[str, Any]]:
    """annotator id -> what they reported for this campaign (its form's answers, else their profile's
    known fields); annotators who reported nothing are left out."""
    out = {}
    for annotator, response, profile, _version in campaign_demographics_rows(campaign_id=campaign_id):
        answers = effective_answers(response, profile)
        if answers:
            out[int(annotator)] = answers
    return out

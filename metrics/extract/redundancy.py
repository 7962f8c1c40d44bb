"""What adaptive redundancy spent, for the report's `redundancy` section: two aggregates
(`annotation.selectors.redundancy_spent`), read only for a campaign with adaptive redundancy."""
from __future__ import annotations

from typing import Any

from annotation.redundancy import is_adaptive
from annotation.selectors import redundancy_spent
from annotation.spec_section import annotation_settings
from campaigns.models import Campaign


def redundancy_read(campaign: Campaign) -> dict[str, Any] | None:
    """Answers spent vs the fixed-R design, or None for a fixed-R campaign (no query then)."""
    if not is_adaptive(annotation_settings(campaign)["redundancy"]):
        return None
    return redundancy_spent(campaign=campaign)

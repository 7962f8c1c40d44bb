"""Agreement per GEP attribute or per PST identity (the GEP paper's limitations discuss ambiguous
attributes): Fleiss' kappa, Krippendorff's alpha and percent agreement on each subset of questions."""
from __future__ import annotations

from typing import Any

from metrics.core._arrays import row_totals
from metrics.core.agreement_subsets import agreement_by_group
from metrics.extract.data import CampaignData

#: Report key and question metadata column of the subsets, per campaign kind.
SUBSETS = {"pst": ("by_identity", "identity"), "gep": ("by_attribute", "attribute")}


def agreement_subsets(data: CampaignData) -> dict[str, Any]:
    """`{"by_identity": {identity: {...}}}` (PST) or `{"by_attribute": {attribute: {...}}}` (GEP), each
    with the keys of `agreement.overall`; questions without an answer are left out."""
    key, column = SUBSETS[data.campaign.kind]
    counts = data.vote_counts()
    answered = row_totals(counts) > 0
    groups = data.q_meta[column]
    return {key: agreement_by_group(counts[answered], groups[answered]) if answered.any() else {}}

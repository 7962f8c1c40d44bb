"""The machine GEP figures on the papers' scales (issue 22 #10, #11): GEP_C / GEP_CC vectors from the
stored raw cos / diff, CLIPScore as 100 cos next to GEP, per-attribute ROC-AUC pooled over settings."""
from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.models import Question
from autolabel.models import ImageClipScore
from tests.builders.machine import gep_sources_campaign, similarity_labels
from tests.builders.metrics import gep_label

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(("labeller", "key"), [("clip", "cos"), ("clip_cc", "diff")])
def test_gep_c_and_cc_vectors_use_the_raw_similarity(api: APIClient, researcher: User, labeller: str,
                                                      key: str) -> None:
    campaign = gep_sources_campaign(researcher)
    raw = similarity_labels(campaign, labeller, gep_label, key)
    body = api.get(f"/api/campaigns/{campaign.pk}/report/?source={labeller}&n_boot=50").json()
    gep = body["auto"][labeller]["gep"]["neutral"]
    assert gep["basis"] == key
    qs = Question.objects.filter(campaign=campaign, is_gold=False, setting="neutral")
    vals: dict[tuple[str, str], list[float]] = {}
    for q in qs:
        vals.setdefault((q.metadata["gender"], q.metadata["attribute"]), []).append(raw[q.pk])
    genders = ("woman", "man")
    for attr, v in gep["vector"].items():
        expected = np.mean(vals[(genders[0], attr)]) - np.mean(vals[(genders[1], attr)])
        assert v == pytest.approx(expected)  # the raw scale, not (1 + x) / 2 (half of it)
    assert gep["score"] == pytest.approx(np.mean([abs(v) for v in gep["vector"].values()]))
    pooled = body["auto"][labeller]["agreement"]["pooled_settings"]
    assert set(pooled["attributes"]) == {"dress", "tie"} and pooled["roc_auc_mean"] == pytest.approx(
        np.mean([pooled["attributes"][a]["roc_auc"] for a in ("dress", "tie")]))
    by_setting = body["auto"][labeller]["agreement"]["by_setting"]
    assert pooled["n"] == by_setting["neutral"]["n"] + by_setting["explicit"]["n"]
    assert pooled["settings"] == ["explicit", "neutral"]
    stored = np.array(list(ImageClipScore.objects.filter(campaign=campaign, image__prompt__metadata__setting="neutral")
                           .values_list("score", flat=True)))
    cs = body["clipscore"]["neutral"]["cs_100cos"]
    assert cs["mean"] == pytest.approx(100 * stored.mean() / 2.5) and cs["ci"][0] <= cs["mean"] <= cs["ci"][1]

"""Property tests (issue 22, "a report for every state of a campaign"): random designs and random
partial answer sets (nothing answered, one annotator, all ties, all "Cannot identify" / all "No", one
identity only, settings left empty) build the report as JSON, HTML and CSV, the dataset export and a
comparison with no error; every interval holds its estimate; no section needed the report's safety
net (`metrics.sections.report.guarded`): whatever cannot be computed yet is said by its section in
`warnings`. Small `max_examples` and `n_boot` (the whole module runs in about 2-3 minutes)."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from tests.builders.intervals import interval_violations
from tests.builders.metrics import campaign_with_questions
from tests.builders.properties import SETTINGS, _names, answer, answer_sets, check_report, designs

pytestmark = pytest.mark.django_db


@settings(SETTINGS, max_examples=12)
@given(spec=designs, plan=answer_sets)
def test_every_partial_campaign_reports(researcher: User, api: APIClient, spec: dict[str, Any],
                                        plan: dict[str, Any]) -> None:
    campaign, questions = campaign_with_questions(researcher, spec)
    answer(questions, plan)
    report = check_report(api, campaign.pk)
    assert report["counts"]["questions"] == len(questions)


@SETTINGS
@given(spec=designs, plans=st.tuples(answer_sets, answer_sets))
def test_two_partial_campaigns_compare(researcher: User, api: APIClient, spec: dict[str, Any],
                                       plans: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ids = []
    for plan in plans:
        campaign, questions = campaign_with_questions(researcher, {**spec, "name": f"{spec['name']}-{next(_names)}"})
        answer(questions, plan)
        ids.append(campaign.pk)
    resp = api.get(f"/api/reports/compare/?campaigns={ids[0]},{ids[1]}&n_boot=20&n_perm=20")
    assert resp.status_code in (200, 202), resp.content[:400]
    if resp.status_code == 200:  # compare rows carry one method per metric, not per interval
        assert [v for v in interval_violations(resp.json()) if "outside" in v] == []

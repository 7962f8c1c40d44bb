"""The report's `redundancy` block (issue 17): answers spent by an adaptive campaign against the
fixed-R design, overall and per setting, in the JSON, the HTML page and the CSV zip; the selector
`annotation.selectors.redundancy_spent` on its own; fixed campaigns' reports keep their shape."""
from __future__ import annotations

import io
import zipfile

import pytest

from annotation.hits import answers_submit, assignment_next
from annotation.models import Answer
from annotation.selectors import redundancy_spent
from tests.builders.campaigns import make_annotator, make_campaign, make_images, open_campaign

pytestmark = pytest.mark.django_db


def _work(campaign, people, choose):
    for who in people:
        while True:
            hit, _ = assignment_next(annotator=who, campaign_id=campaign.pk)
            if hit is None:
                break
            answers_submit(annotator=who, assignment_id=hit["id"], answers=[
                {"question": q["id"], "choice": choose(who, q), "time_ms": 1500} for q in hit["questions"]])


def test_report_states_answers_spent_against_fixed_r(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 5, "redundancy": {"min": 2, "max": 5, "threshold": 0.75}})
    make_images(campaign, "explicit", 10)
    open_campaign(campaign)
    people = [make_annotator(f"r{i}", campaign=campaign)[0] for i in range(6)]
    # Everyone agrees except on the first two questions, where r1 dissents.
    _work(campaign, people, lambda who, q: "No" if who is people[1] and q["id"] % 5 == 0 else "Yes")
    answers = Answer.objects.filter(campaign=campaign).count()
    spent = redundancy_spent(campaign=campaign)
    assert spent["fixed_r"] == 3 and spent["questions"] == 10 and spent["fixed_r_answers"] == 30
    assert spent["answers"] == answers < 30
    assert spent["saved_fraction"] == pytest.approx(1 - answers / 30)
    assert spent["by_setting"]["explicit"]["answers"] == answers
    assert redundancy_spent(campaign=campaign, fixed_r=5)["fixed_r_answers"] == 50
    report = api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=20").json()
    assert set(report["redundancy"]) >= {"answers", "fixed_r_answers", "saved_fraction", "by_setting"}
    assert report["redundancy"]["answers"] == answers
    page = api.get(f"/api/campaigns/{campaign.pk}/report/?format=html&n_boot=20").content.decode()
    assert 'id="redundancy"' in page and "Answers spent" in page
    archive = zipfile.ZipFile(io.BytesIO(api.get(f"/api/campaigns/{campaign.pk}/report/?format=csv&n_boot=20").content))
    text = archive.read("redundancy.csv").decode()
    assert text.splitlines()[0].replace('"', "").startswith("scope,questions,answers,fixed_r3_answers,saved_fraction")


def test_a_fixed_campaign_report_has_no_redundancy_block(researcher, api):
    campaign = make_campaign(researcher, settings=["explicit"], annotation={"hit_size": 5, "redundancy": 2})
    make_images(campaign, "explicit", 4)
    open_campaign(campaign)
    _work(campaign, [make_annotator(f"f{i}", campaign=campaign)[0] for i in range(2)], lambda who, q: "Yes")
    assert "redundancy" not in api.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=20").json()
    assert redundancy_spent(campaign=campaign)["saved_fraction"] == 0

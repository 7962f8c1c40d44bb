"""The console's machine-label page: the labellers that answer the campaign's questions, which can run,
their progress, and their agreement with the human majority (checked against sklearn on the same
pairs); run, cancel and import from the page in Chromium, through the autolabel API."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from sklearn.metrics import cohen_kappa_score

from annotation.labels import labels_recompute
from annotation.models import AggregatedLabel
from autolabel.models import AutolabelJob, MachineLabel
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.console import login
from tests.builders.machine import gep_sources_campaign
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label
from tests.builders.taskpage import login as login_browser


@pytest.mark.django_db
def test_labellers_listed_with_agreement(researcher: User) -> None:
    campaign = gep_sources_campaign(researcher)
    labels_recompute(campaign_id=campaign.pk)  # the builder bulk-inserts answers: derive the stored labels
    html = login(researcher).get(f"/console/campaigns/{campaign.pk}/labels/").content.decode()
    for name in ("clip", "clip_cc", "clip_cls", "vqa"):
        assert f'id="labeller-{name}"' in html, name
    assert 'id="labeller-clip_gender"' not in html  # answers PST persons, not GEP attributes
    human = dict(AggregatedLabel.objects.filter(question__campaign=campaign, tie=False).values_list("question_id", "label"))
    pairs = [(human[q], c) for q, c in MachineLabel.objects.filter(campaign=campaign, labeller="clip_cls")
             .values_list("question_id", "choice") if q in human]
    kappa = cohen_kappa_score([h for h, _ in pairs], [m for _, m in pairs])
    row = html.split('id="labeller-clip_cls"', 1)[1].split("</tr>", 1)[0]
    assert f"(n={len(pairs)})" in row and f"{kappa:.3f}" in row
    share = sum(h == m for h, m in pairs) / len(pairs)
    assert f"{100 * share:.1f}%" in row
    assert "?source=hybrid:clip_cls" in row


@pytest.mark.django_db(transaction=True)
@pytest.mark.browser
def test_run_cancel_and_import_from_the_page(browser: Browser, researcher: User, tmp_path: Any) -> None:  # noqa: F811
    campaign, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": "labels-page"})
    answer_all(campaign, questions, gep_label, annotators(3, "lp-"))
    labels_recompute(campaign_id=campaign.pk)
    b = browser
    login_browser(b, researcher)
    b.get(f"/console/campaigns/{campaign.pk}/labels/")
    b.find("#labeller-clip button[data-action=start]").click()
    b.visible("#labeller-clip button[data-action=cancel]")  # reloaded: the run is going (no worker here)
    assert AutolabelJob.objects.get(campaign=campaign, labeller="clip").status == "running"
    assert "0 / " in b.find("#labeller-clip [data-field=progress]").text
    b.find("#labeller-clip button[data-action=cancel]").click()
    b.visible("#labeller-clip button[data-action=start]")
    assert AutolabelJob.objects.get(campaign=campaign, labeller="clip").status == "cancelled"
    assert b.find("#labeller-clip button[data-action=start]").text == "Resume"

    # Import: a bad file names its row; a good one shows up as a labeller with its agreement.
    bad = tmp_path / "bad.csv"
    bad.write_text("image,attribute,choice\n999999,dress,Yes\n")
    b.find("#imp-name").send_keys("mine")
    b.find("#imp-file").send_keys(str(bad))
    b.find("#import-form button[type=submit]").click()
    b.visible("#import-errors")
    assert "rows.2" in b.find("#import-errors").text
    good = tmp_path / "good.csv"
    lines = ["image,attribute,choice"] + [f"{q.image_id},{q.metadata['attribute']},{gep_label(q)}" for q in questions]
    good.write_text("\n".join(lines) + "\n")
    b.find("#imp-file").send_keys(str(good))
    b.find("#import-form button[type=submit]").click()
    b.visible("#labeller-mine")
    row = b.find("#labeller-mine").text
    assert "100.0%" in row and "imported" in row
    # The only console error is the bad import's 400, which the page showed.
    assert [e for e in b.console_errors() if "machine-labels/import/" not in e] == []

"""The console's report and compare pages: built from the same public renderers as the HTML report
(`metrics.render.report_page`, `compare_page`), and safe with any name a researcher writes: names
with mathtext (`$...$`), markup, ampersands and quotes render literally in tables and charts."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.builders.console import login
from tests.builders.metrics import (
    FORMULA,
    MARKUP,
    MATH,
    annotators,
    answer_all,
    assert_names_literal,
    campaign_with_questions,
    odd_gep,
    odd_gep_label,
    odd_pst,
    odd_pst_label,
)

pytestmark = pytest.mark.django_db


def test_report_page_shows_odd_names_literally(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, odd_pst())
    answer_all(campaign, questions, odd_pst_label, annotators(3, "cr-"))
    resp = login(researcher).get(f"/console/campaigns/{campaign.pk}/report/?n_boot=20")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert_names_literal(html, [MATH, MARKUP, FORMULA], svgs=3)
    assert 'id="sts"' in html and 'id="agreement"' in html
    assert f"men {FORMULA}".replace("&", "&amp;") in html  # the group column, HTML-escaped
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html  # the campaign name in the title


def test_compare_page_shows_odd_campaign_names_literally(researcher: User) -> None:
    ids = []
    for n in range(2):
        spec = {**odd_gep(), "name": f"{MATH} {MARKUP} #{n}"}
        campaign, questions = campaign_with_questions(researcher, spec)
        answer_all(campaign, questions, odd_gep_label, annotators(3, f"cc{n}-"))
        ids.append(campaign.pk)
    resp = login(researcher).get(f"/console/compare/?campaigns={ids[0]},{ids[1]}")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert_names_literal(html, [f"{MATH} {MARKUP} #0", f"{MATH} {MARKUP} #1"], svgs=2)
    assert 'id="comparison"' in html and "GEP score, neutral" in html

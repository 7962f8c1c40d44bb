"""The console report page's options: the label source is a choice among the sources that have
labels on the campaign (no typed keys); an invalid option keeps the report on screen (default options)
with the error above it; the header names the interval methods the sections used; every export is
linked, the replication package through the worker-aware script."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth.models import User

from tests.builders.console import login
from tests.builders.machine import gep_sources_campaign
from tests.builders.metrics import SMALL_GEP, annotators, answer_all, campaign_with_questions, gep_label

pytestmark = pytest.mark.django_db


def _options(html: str) -> list[str]:
    select = html.split('id="o-source"', 1)[1].split("</select>", 1)[0]
    return re.findall(r'<option value="([^"]*)"', select)


def test_source_choices_are_the_campaigns_sources(researcher: User) -> None:
    campaign = gep_sources_campaign(researcher)
    html = login(researcher).get(f"/console/campaigns/{campaign.pk}/report/?n_boot=20").content.decode()
    assert _options(html) == ["", "clip_cls", "hybrid:clip_cls"]
    chosen = login(researcher).get(f"/console/campaigns/{campaign.pk}/report/?n_boot=20&source=hybrid:clip_cls")
    assert chosen.status_code == 200
    assert re.search(r'<option value="hybrid:clip_cls" selected>', chosen.content.decode())
    # A campaign without machine labels offers the human answers only.
    plain, questions = campaign_with_questions(researcher, {**SMALL_GEP, "name": "plain"})
    answer_all(plain, questions, gep_label, annotators(3, "pl-"))
    assert _options(login(researcher).get(f"/console/campaigns/{plain.pk}/report/?n_boot=20").content.decode()) == [""]


def test_an_invalid_option_keeps_the_default_report_with_the_error(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3, "io-"))
    for query in ("source=clip_cls", "n_boot=-3", "aggregation=nonsense"):
        resp = login(researcher).get(f"/console/campaigns/{campaign.pk}/report/?{query}")
        html = resp.content.decode()
        assert resp.status_code == 400, query
        assert 'class="errors" role="alert"' in html and 'id="defaults-shown"' in html, query
        # ... and the report itself is there, built with the defaults.
        assert 'id="report-counts"' in html and 'id="agreement"' in html, query
        assert html.index('role="alert"') < html.index('id="report-counts"')


def test_header_lists_the_methods_used_and_every_export(researcher: User) -> None:
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3, "hm-"))
    client = login(researcher)
    html = client.get(f"/console/campaigns/{campaign.pk}/report/?n_boot=20").content.decode()
    methods = html.split('id="report-methods">', 1)[1].split("</span>", 1)[0]
    report = client.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=20").json()
    named = set(re.findall(r'"[a-z_]*ci_method": "([^"]+)"', __import__("json").dumps(report)))
    assert named, "the report names its interval methods"
    for method in named:
        assert f"({method})" in methods, (method, methods)
    assert "percentile bootstrap over images," not in methods or "percentile" in named
    for url in (f"/api/campaigns/{campaign.pk}/export/dataset/", f"/api/campaigns/{campaign.pk}/export/",
                f"/api/campaigns/{campaign.pk}/payments.csv"):
        assert f'href="{url}"' in html, url
    assert f'href="/api/campaigns/{campaign.pk}/export/dataset/" data-async-export' in html
    api_html = client.get(f"/api/campaigns/{campaign.pk}/report/?n_boot=20&format=html").content.decode()
    assert 'id="report-methods"' in api_html and all(f"({m})" in api_html for m in named)

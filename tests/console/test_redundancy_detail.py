"""The console's campaign page with adaptive redundancy (`annotation.redundancy` as an object): it
shows min to max and the threshold instead of printing the dict as R."""
from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from tests.builders.campaigns import make_campaign
from tests.builders.console import login

pytestmark = pytest.mark.django_db


def test_campaign_page_shows_adaptive_and_fixed_redundancy(researcher: User) -> None:
    adaptive = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": {"min": 2, "max": 6}})
    fixed = make_campaign(researcher, settings=["explicit"], annotation={"redundancy": 4})
    client = login(researcher)
    page = client.get(f"/console/campaigns/{adaptive.pk}/").content.decode()
    assert "Redundancy (adaptive)" in page and "2 to 6 answers" in page and "{&#x27;min&#x27;" not in page
    page = client.get(f"/console/campaigns/{fixed.pk}/").content.decode()
    assert "Redundancy R</dt><dd>4<" in page

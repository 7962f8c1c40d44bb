"""Hostile inputs for the security tests."""
from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from campaigns.models import Campaign
from tests.builders.campaigns import make_campaign, make_images, open_campaign


def alias_bomb(levels: int = 6) -> str:
    """The "billion laughs" in YAML: each level repeats the previous one nine times by alias, so a few
    hundred bytes stand for 9**levels strings once anything walks or prints the loaded value."""
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"answers: *a{levels}")
    lines.append(f"name: *a{levels}")
    return "\n".join(lines) + "\n"


ASK = {"ask": True, "fields": ["gender", "age_band", "country"]}


def demographics_campaign(researcher: User, **demographics: Any) -> Campaign:
    """An open GEP campaign (12 explicit images, HITs of 2, R = 9) that asks gender, age band and country."""
    campaign = make_campaign(researcher, settings=["explicit"], annotation={
        "hit_size": 2, "redundancy": 9, "demographics": {**ASK, **demographics}})
    make_images(campaign, "explicit", 12)
    return open_campaign(campaign)

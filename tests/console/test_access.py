"""Owner-only access to every console page and action: the owner and staff see it, another
researcher gets 404, an annotator (logged in, not a researcher) 403, anonymous users the login page.
Forms carry CSRF tokens and are refused without one."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from campaigns.models import Campaign
from generation.models import Image
from tests.builders.console import login

PAGES = ["", "images/", "annotators/", "report/"]


def _urls(campaign: Campaign) -> list[str]:
    return [f"/console/campaigns/{campaign.pk}/{p}" for p in PAGES] + [f"/console/compare/?campaigns={campaign.pk}"]


def test_owner_and_staff_see_every_page(generated: Campaign, researcher: User, staff_user: User) -> None:
    for user in (researcher, staff_user):
        client = login(user)
        for url in _urls(generated) + ["/console/", "/console/new/", "/console/compare/"]:
            response = client.get(url)
            assert response.status_code == 200, (user.username, url)
        assert generated.name in client.get("/console/").content.decode()


def test_other_researcher_gets_404_and_cannot_act(generated: Campaign, other_researcher: User) -> None:
    client = login(other_researcher)
    for url in _urls(generated):
        assert client.get(url).status_code == 404, url
    assert generated.name not in client.get("/console/").content.decode()
    base = f"/console/campaigns/{generated.pk}/"
    assert client.post(base + "action/", {"action": "open"}).status_code == 404
    assert client.post(base + "annotators/1/action/", {"action": "block"}).status_code == 404
    generated.refresh_from_db()
    assert generated.status == Campaign.Status.GENERATED


def test_annotator_gets_403_and_anonymous_the_login_page(generated: Campaign, plain_user: User) -> None:
    annotator, anonymous = login(plain_user), Client()
    urls = _urls(generated) + ["/console/", "/console/new/", "/console/compare/"]
    for url in urls:
        assert annotator.get(url).status_code == 403, url
        response = anonymous.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/accounts/login/?next=/console/"), response["Location"]
    assert annotator.post(f"/console/campaigns/{generated.pk}/action/", {"action": "open"}).status_code == 403
    assert anonymous.post(f"/console/campaigns/{generated.pk}/action/", {"action": "open"}).status_code == 302
    generated.refresh_from_db()
    assert generated.status == Campaign.Status.GENERATED


def test_forms_need_csrf_and_login_works(generated: Campaign, researcher: User) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(researcher)
    page = client.get(f"/console/campaigns/{generated.pk}/").content.decode()
    assert 'name="csrfmiddlewaretoken"' in page
    assert client.post(f"/console/campaigns/{generated.pk}/action/", {"action": "open"}).status_code == 403
    token = client.cookies["csrftoken"].value
    response = client.post(f"/console/campaigns/{generated.pk}/action/", {"action": "open", "csrfmiddlewaretoken": token})
    assert response.status_code == 302
    generated.refresh_from_db()
    assert generated.status == Campaign.Status.OPEN

    fresh = Client()
    response = fresh.post("/accounts/login/", {"username": researcher.username, "password": "wrong"})
    assert response.status_code == 200 and "did not match" in response.content.decode()
    response = fresh.post("/accounts/login/", {"username": researcher.username,
                                               "password": f"{researcher.username}-pass-123", "next": "/console/"})
    assert response.status_code == 302 and response["Location"] == "/console/"
    assert fresh.get("/console/").status_code == 200
    assert fresh.post("/accounts/logout/").status_code == 302
    assert fresh.get("/console/").status_code == 302


def test_home_links_to_the_console(client: Any) -> None:
    assert 'href="/console/"' in client.get("/").content.decode()


@pytest.mark.parametrize("action,status", [("cancel", "draft"), ("close", "closed")])
def test_lifecycle_actions_call_the_services(generated: Campaign, researcher: User, action: str, status: str) -> None:
    client = login(researcher)
    if action == "cancel":
        Image.objects.filter(campaign=generated).update(status=Image.Status.PENDING)
        Campaign.objects.filter(pk=generated.pk).update(status=Campaign.Status.GENERATING)
    response = client.post(f"/console/campaigns/{generated.pk}/action/", {"action": action}, follow=True)
    assert response.status_code == 200
    generated.refresh_from_db()
    assert generated.status == status
    # A refused transition is shown as a message, not a crash.
    response = client.post(f"/console/campaigns/{generated.pk}/action/", {"action": "resume"}, follow=True)
    assert "Cannot resume" in response.content.decode()


@pytest.mark.django_db
def test_logout_typed_as_a_url_shows_a_button_not_a_blank_405(researcher: User) -> None:
    client = login(researcher)
    page = client.get("/accounts/logout/")
    assert page.status_code == 200 and b'id="logout-confirm"' in page.content
    assert b"csrfmiddlewaretoken" in page.content
    assert client.get("/console/").status_code == 200  # a GET logs nobody out
    done = client.post("/accounts/logout/")
    assert done.status_code in (200, 302)
    assert client.get("/console/").status_code == 302  # back to the login page
    anonymous = client.get("/accounts/logout/")
    assert anonymous.status_code == 200 and b"You are logged out" in anonymous.content


@pytest.mark.django_db
def test_every_page_names_a_favicon() -> None:
    from django.contrib.staticfiles import finders

    page = Client().get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page
    found = finders.find("favicon.svg")
    assert found and open(found).read().startswith("<svg")

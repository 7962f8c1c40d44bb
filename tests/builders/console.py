"""The console's small generated PST design and logged-in page clients."""
from __future__ import annotations

import copy
from typing import Any

from django.contrib.auth.models import User
from django.test import Client

# PST with two custom groups of two identities: single 2 x 4 = 4... see below.
SMALL_PST: dict[str, Any] = {
    "name": "small-pst", "kind": "pst", "seed": 3,
    "design": {"aspect": "occupation", "settings": ["single", "paired"], "samples": {"single": 1, "paired": 1},
               "identities": {"groups": [
                   {"name": "male", "stereotype": "masculine", "identities": ["carpenter", "pilot"]},
                   {"name": "female", "stereotype": "feminine", "identities": ["nurse", "editor"]}]}},
    "backend": {"name": "placeholder", "width": 64, "height": 64},
    "annotation": {"redundancy": 3, "hit_size": 4},
}


def small_pst(**changes: Any) -> dict[str, Any]:
    spec = copy.deepcopy(SMALL_PST)
    spec.update(changes)
    return spec


def login(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def browser_login_researcher(b: Any, username: str) -> User:
    """A researcher who logs in through the console's login form in the browser `b` (a real login,
    not a forced session); lands on the campaign list."""
    from tests.conftest import make_researcher

    user = make_researcher(username)
    user.set_password(f"{username}-pass-123")
    user.save()
    b.get("/console/")
    b.visible("#id_username")
    b.find("#id_username").send_keys(username)
    b.find("#id_password").send_keys(f"{username}-pass-123")
    b.find("button[type=submit]").click()
    b.text_in("h1", "Campaigns")
    return user

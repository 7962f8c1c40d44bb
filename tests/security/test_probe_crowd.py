"""Issue 24, leftovers on crowd identities: an unverified platform claim (a crowd-link account) must
learn nothing stored for the worker. The "resend" of a submitted HIT answered 200 when the answers
sent equalled the stored ones and 409 otherwise: a guessing oracle on someone else's earlier answers.
Both HIT engines (the PostgreSQL statements and the ORM) are probed over HTTP."""
from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from annotation.models import Answer
from tests.builders.campaigns import make_annotator
from tests.builders.crowd import crowd_campaign, mturk_page

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["sql", "orm"])
def engine(request: pytest.FixtureRequest, settings: Any) -> str:
    settings.FASTPATHS = {**settings.FASTPATHS, "hit_engine": request.param == "sql"}
    return request.param


def _answers(hit: dict[str, Any], choice_index: int) -> list[dict[str, Any]]:
    return [{"question": q["id"], "choice": q["choices"][choice_index % len(q["choices"])], "time_ms": 900}
            for q in hit["questions"]]


def test_a_resend_tells_an_unverified_claim_nothing_about_the_stored_answers(researcher: User, engine: str) -> None:
    campaign = crowd_campaign(researcher)
    _, victim = mturk_page(campaign, worker="AVICTIM2", assignment="3VASSIGN", hit="3VHIT")
    assert victim.post(f"/api/campaigns/{campaign.pk}/consent/", {"consent": True}, format="json").status_code == 200
    hit = victim.post(f"/api/mturk/{campaign.pk}/assignment/", {"assignmentId": "3VASSIGN", "hitId": "3VHIT"},
                      format="json").json()
    stored = _answers(hit, 0)
    assert victim.post(f"/api/assignments/{hit['id']}/submit/", {"answers": stored}, format="json").status_code == 200
    before = sorted(Answer.objects.filter(assignment_id=hit["id"]).values_list("question_id", "choice"))
    # Anyone who knows the worker id opens the link and guesses the victim's answers, HIT by HIT.
    _, stranger = mturk_page(campaign, worker="AVICTIM2", assignment="3SASSIGN", hit="3SHIT")
    right = stranger.post(f"/api/assignments/{hit['id']}/submit/", {"answers": stored}, format="json")
    wrong = stranger.post(f"/api/assignments/{hit['id']}/submit/", {"answers": _answers(hit, 1)}, format="json")
    assert right.status_code == wrong.status_code == 200, (right.content, wrong.content)
    assert right.json() == wrong.json()
    assert right.json()["submitted_at"] is None  # nothing stored for the worker comes back
    assert sorted(Answer.objects.filter(assignment_id=hit["id"]).values_list("question_id", "choice")) == before
    # A password account keeps the exact resend rule (it is the account's own, verified, history).
    owner, client = make_annotator("petra", campaign=campaign)
    own = client.post(f"/api/campaigns/{campaign.pk}/assignments/", format="json")
    assert own.status_code in (200, 201), own.content
    mine = own.json()
    assert client.post(f"/api/assignments/{mine['id']}/submit/", {"answers": _answers(mine, 0)},
                       format="json").status_code == 200
    assert client.post(f"/api/assignments/{mine['id']}/submit/", {"answers": _answers(mine, 0)},
                       format="json").status_code == 200
    assert client.post(f"/api/assignments/{mine['id']}/submit/", {"answers": _answers(mine, 1)},
                       format="json").status_code == 409

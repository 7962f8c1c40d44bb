"""Who may call what: every URL pattern of the project (walked from Django's resolver, so a new
endpoint is covered automatically) x every HTTP method its view handles x six roles.

Every pattern needs an entry in EXPECTATIONS (exact key, else the first matching glob): an
unclassified endpoint fails the test. Outcomes:
  OK     reached the view (2xx, 3xx, or 400/409 for the empty body the matrix sends)
  DENY   401 / 403 (or a redirect to a login page)
  NF     404: another owner's object is not revealed
  LOGIN  redirect to the admin login (non-staff users in the admin)
  ANY    anything but a 5xx
Each request runs in a savepoint that is rolled back, so every role sees the same world; the world is
built once for the module and each case's transaction is rolled back (conftest `module_world`).
"""
from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from .conftest import World

ROLES = ("anonymous", "annotator_a", "annotator_b", "researcher_x", "researcher_y", "staff")
METHODS = ("get", "post", "put", "patch", "delete")


def _row(anonymous: str, annotator_a: str, annotator_b: str, researcher_x: str, researcher_y: str,
         staff: str) -> dict[str, str]:
    return dict(zip(ROLES, (anonymous, annotator_a, annotator_b, researcher_x, researcher_y, staff), strict=True))


# Role rows.
PUBLIC = _row("OK", "OK", "OK", "OK", "OK", "OK")
RESEARCHER = _row("DENY", "DENY", "DENY", "OK", "OK", "OK")            # no object, or only the caller's own
OWNER = _row("DENY", "DENY", "DENY", "OK", "NF", "OK")                 # X's campaign / image / assignment
ANNOTATOR = _row("DENY", "OK", "OK", "DENY", "DENY", "DENY")           # annotators only (X's open campaign)
ANNOTATOR_OWN = _row("DENY", "OK", "NF", "DENY", "DENY", "DENY")       # A's own HIT
QUALS_READ = _row("DENY", "OK", "OK", "OK", "DENY", "OK")              # annotators (no key) and the owner
ADMIN = _row("LOGIN", "LOGIN", "LOGIN", "LOGIN", "LOGIN", "ANY")
NO_5XX = _row("ANY", "ANY", "ANY", "ANY", "ANY", "ANY")
POST_ONLY = _row("DENY", "DENY", "DENY", "ANY", "ANY", "ANY")          # GET of a POST-only action: 405, reveals nothing
PROLIFIC_FINISH = _row("ANY", "ANY", "ANY", "ANY", "ANY", "ANY")      # decides from the session; never a 5xx

# key (namespace:name, or the route of an unnamed pattern) or glob -> {method: role row}
EXPECTATIONS: dict[str, dict[str, dict[str, str]]] = {
    "home": {"get": PUBLIC},
    "api-token": {"post": PUBLIC},
    "api-schema": {"get": PUBLIC},
    "api-schema-report": {"get": PUBLIC},  # the same permission as api-schema (SERVE_PERMISSIONS)
    "api-docs": {"get": PUBLIC},
    "csp-report": {"get": NO_5XX, "post": PUBLIC},  # browsers post violation reports, anonymously
    # campaigns
    "campaigns:campaign-list": {"get": RESEARCHER, "post": RESEARCHER},
    "campaigns:campaign-detail": {"get": OWNER, "delete": OWNER},
    "campaigns:campaign-prompts": {"get": OWNER},
    "campaigns:campaign-spec": {"get": OWNER},
    "campaigns:campaign-imports": {"get": OWNER},  # ?job=: an upload imported by a worker (400 without it)
    "campaigns:campaign-references": {"get": OWNER, "post": OWNER},
    "campaigns:spec-preview": {"post": RESEARCHER},
    "campaigns:presets": {"get": RESEARCHER},
    # generation
    "generation:generate": {"post": OWNER},
    "generation:generate-cancel": {"post": OWNER},
    "generation:generate-retry-failed": {"post": OWNER},
    "generation:campaign-images": {"get": OWNER},
    "generation:images-import": {"post": OWNER},
    "autolabel:autolabel": {"post": OWNER},
    "autolabel:autolabel-cancel": {"post": OWNER},
    "autolabel:machine-labels": {"get": OWNER},
    "autolabel:machine-labels-import": {"post": OWNER},
    "generation:image-exclude": {"post": OWNER},
    "generation:image-include": {"post": OWNER},
    # annotation: researcher side
    "annotation:campaign-open": {"post": OWNER},
    "annotation:campaign-pause": {"post": OWNER},
    "annotation:campaign-resume": {"post": OWNER},
    "annotation:campaign-close": {"post": OWNER},
    "annotation:campaign-questions": {"get": OWNER},
    "annotation:questions-redundancy": {"post": OWNER},
    "annotation:questions-gold": {"post": OWNER},
    "annotation:campaign-examples": {"get": OWNER, "post": OWNER},
    "annotation:campaign-example": {"delete": OWNER},
    "annotation:assignment-review": {"post": OWNER},
    "annotation:campaign-annotators": {"get": OWNER},
    "annotation:campaign-annotator-action": {"post": OWNER},
    "annotation:campaign-payments": {"get": OWNER},
    "annotation:campaign-export": {"get": OWNER},
    "annotation:campaign-pay": {"get": OWNER},
    # demographics: annotators read their form and answer; the owner (and staff) read the aggregates
    "annotation:campaign-demographics": {"get": _row("DENY", "OK", "OK", "OK", "NF", "OK"), "post": ANNOTATOR},
    "annotation:campaign-import": {"post": RESEARCHER},
    # annotation: annotator side
    "annotation:annotator-signup": {"post": PUBLIC},
    "annotation:annotator-me": {"get": ANNOTATOR, "patch": ANNOTATOR},
    # numbered demographics releases: the owner reads and cuts them (docs/security.md)
    "annotation:campaign-demographics-releases": {"get": OWNER, "post": OWNER},
    # an annotator's permanent token: rotated by its holder; any signed-in user may log out
    "annotation:token-rotate": {"post": ANNOTATOR},
    "annotation:logout": {"post": _row("DENY", "OK", "OK", "OK", "OK", "OK")},
    "annotation:annotator-demographics": {"delete": ANNOTATOR},
    "annotation:annotator-demographics-withdraw": {"post": ANNOTATOR},
    "annotation:campaign-consent": {"post": ANNOTATOR},
    "annotation:campaign-task": {"get": ANNOTATOR},
    "annotation:campaign-qualifications": {"get": QUALS_READ, "post": OWNER},
    "annotation:qualification-attempts": {"post": ANNOTATOR},
    "annotation:assignment-next": {"post": ANNOTATOR},
    "annotation:assignment-heartbeat": {"post": ANNOTATOR_OWN},
    "annotation:assignment-submit": {"post": ANNOTATOR_OWN},
    "annotation:assignment-return": {"post": ANNOTATOR_OWN},
    # metrics
    "campaign-report": {"get": OWNER},
    "campaign-dataset": {"get": OWNER},
    "report-compare": {"get": OWNER},
    # annotator pages (X's campaign is open: anyone may see its sign-up / login / work shell)
    "annotation-pages:work": {"get": PUBLIC},
    "annotation-pages:signup": {"get": PUBLIC, "post": PUBLIC},
    "annotation-pages:login": {"get": PUBLIC, "post": PUBLIC, "put": PUBLIC},  # FormView: PUT is POST
    "annotation-pages:logout": {"post": PUBLIC},
    # researcher login and the console (session pages; same rules as the API)
    "login": {"get": PUBLIC, "post": PUBLIC, "put": PUBLIC},  # LoginView is a FormView: PUT is POST
    "logout": {"get": PUBLIC, "post": PUBLIC},  # GET: a page with the log-out button
    "console:campaigns": {"get": RESEARCHER},
    "console:campaign-new": {"get": RESEARCHER},
    "console:compare": {"get": RESEARCHER},
    "console:campaign": {"get": OWNER},
    "console:campaign-action": {"get": POST_ONLY, "post": OWNER},
    "console:images": {"get": OWNER},
    "console:annotators": {"get": OWNER},
    "console:labels": {"get": OWNER},
    "console:annotator-action": {"get": POST_ONLY, "post": OWNER},
    "console:report": {"get": OWNER},
    # crowd platforms: the task pages are public entry points (they log the worker in themselves)
    # POST: the link pages' own forms (crowd/entry.py: "log out and continue", "log in to the linked
    # account"), CSRF-checked; an empty form is a 400 for everyone
    "crowd:mturk": {"get": PUBLIC, "post": PUBLIC},
    "crowd:prolific": {"get": PUBLIC, "post": PUBLIC},
    "crowd:prolific-finish": {"get": PROLIFIC_FINISH},
    "crowd:mturk-assignment": {"post": ANNOTATOR},
    "crowd:mturk-qualification-attempts": {"post": ANNOTATOR},
    "crowd:mturk-import": {"post": OWNER},
    # local media (annotation/media_views.py): the bare URL (no signature) to a logged-in user who may
    # see the image: the owner, annotators enrolled in its campaign, staff; 404 to everyone else
    "media": {"get": _row("NF", "OK", "OK", "OK", "NF", "OK")},
    # the signed URL the API hands out: whoever holds it, until it expires (a bad signature is a 404)
    "media-signed": {"get": _row("NF", "NF", "NF", "NF", "NF", "NF")},
    # Django admin: staff only
    "admin:login": {"get": PUBLIC},
    "admin:logout": {"get": NO_5XX},  # POST-only (405 to GET)
    "admin:*": {"get": ADMIN},
    "admin/(?P<url>.*)$": {"get": ADMIN},
    # legacy redirects admin/<app>/<model>/<id>/ -> .../change/ (unnamed)
    "admin/*/<path:object_id>/": {m: ADMIN for m in METHODS},
}
QUERY = {"report-compare": "?campaigns={campaign}"}


@pytest.fixture
def world(module_world: World) -> World:
    """This module's ~270 cases share one world, built once (tests/security/conftest.py `module_world`):
    each case's writes are rolled back and its objects read afresh, so every case sees the same world."""
    return module_world


@dataclass(frozen=True)
class Endpoint:
    key: str
    route: str
    name: str | None
    methods: tuple[str, ...]


def _methods(callback: Any) -> tuple[str, ...]:
    cls = getattr(callback, "cls", None) or getattr(callback, "view_class", None)
    if cls is None:
        return ("get",)
    allowed = set(getattr(cls, "http_method_names", METHODS))
    return tuple(m for m in METHODS if m in allowed and hasattr(cls, m))


def _walk(patterns: list[Any], prefix: str = "", namespace: str | None = None) -> Iterator[Endpoint]:
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = namespace
            if p.namespace:
                ns = f"{namespace}:{p.namespace}" if namespace else p.namespace
            yield from _walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            name = f"{namespace}:{p.name}" if namespace and p.name else p.name
            route = prefix + str(p.pattern)
            yield Endpoint(key=name or route, route=route, name=name, methods=_methods(p.callback))


# Function views decorated with require_POST expose no method list: name their methods here.
EXTRA_METHODS = {"console:campaign-action": ("post",), "console:annotator-action": ("post",),
                 "csp-report": ("post",)}


def endpoints() -> list[Endpoint]:
    seen: dict[str, Endpoint] = {}
    for e in _walk(get_resolver().url_patterns):
        if e.key in EXTRA_METHODS:
            e = Endpoint(e.key, e.route, e.name, tuple(dict.fromkeys(e.methods + EXTRA_METHODS[e.key])))
        seen.setdefault(e.key, e)
    return list(seen.values())


def expectation(key: str) -> dict[str, dict[str, str]] | None:
    if key in EXPECTATIONS:
        return EXPECTATIONS[key]
    for pattern, value in EXPECTATIONS.items():
        if "*" in pattern and fnmatch.fnmatchcase(key, pattern):
            return value
    return None


CASES = [pytest.param(e, m, id=f"{m.upper()} {e.key}") for e in endpoints() for m in e.methods]


def _kwargs(route: str, w: World) -> dict[str, Any]:
    values = {"campaign_id": w.campaign.pk, "assignment_id": w.assignment.pk, "qualification_id": w.qualification.pk,
              "image_id": w.image.pk, "annotator_id": w.a.pk, "example_id": w.example_id, "object_id": str(w.x.pk), "id": str(w.x.pk), "app_label": "auth",
              "content_type_id": 1, "path": f"{w.image.web_file}", "key": w.image.web_file, "url": "no-such-page/",
              "expires": 4102444800, "signature": "0" * 40}
    names = re.findall(r"<(?:\w+:)?(\w+)>", route) + re.findall(r"\(\?P<(\w+)>", route)
    return {n: values[n] for n in names}


def _url(e: Endpoint, w: World) -> str:
    kwargs = _kwargs(e.route, w)
    if e.name:
        url = reverse(e.name, kwargs=kwargs)
    else:  # an unnamed pattern: fill the route by hand
        url = "/" + re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: str(kwargs[m.group(1)]), e.route).strip("^$")
    return url + QUERY.get(e.key, "").format(campaign=w.campaign.pk)


def _verdict(outcome: str, response: Any) -> bool:
    status = response.status_code
    location = response.get("Location", "") if status in (301, 302, 303) else ""
    to_login = "/login/" in location
    if outcome == "OK":
        return status < 500 and status not in (401, 403, 404, 405)
    if outcome == "DENY":
        return status in (401, 403) or to_login
    if outcome == "NF":
        return status == 404
    if outcome == "LOGIN":
        return "/admin/login/" in location
    if outcome == "ANY":
        return status < 500
    raise AssertionError(f"unknown outcome {outcome}")


@pytest.mark.parametrize(("endpoint", "method"), CASES)
def test_access_matrix(endpoint: Endpoint, method: str, world: World) -> None:
    table = expectation(endpoint.key)
    assert table is not None, (f"{endpoint.key} ({endpoint.route}) has no expectation: classify it in "
                               "tests/security/test_access_matrix.py EXPECTATIONS")
    assert method in table, f"{method.upper()} {endpoint.key} has no expectation for this method"
    url = _url(endpoint, world)
    failures = []
    for role in ROLES:
        # API endpoints with a token; pages with a browser session (they ignore tokens).
        client = world.client(role) if endpoint.route.startswith("api/") else world.session_client(role)
        with transaction.atomic():
            response = getattr(client, method)(url, {}, format="json") if method != "get" else client.get(url)
            transaction.set_rollback(True)
        if not _verdict(table[method][role], response):
            failures.append(f"{role}: expected {table[method][role]}, got {response.status_code} "
                            f"{response.get('Location', '')} {getattr(response, 'content', b'')[:200]!r}")
    assert not failures, f"{method.upper()} {url}:\n  " + "\n  ".join(failures)


def test_every_expectation_names_a_live_pattern() -> None:
    keys = {e.key for e in endpoints()}
    stale = [k for k in EXPECTATIONS if "*" not in k and k not in keys]
    assert not stale, f"expectations for patterns that no longer exist: {stale}"


def test_the_matrix_fails_an_unclassified_endpoint() -> None:
    assert expectation("annotation:some-new-endpoint") is None
    assert expectation("admin:auth_user_changelist") is not None


# ---------------------------------------------------------------------------------------------
# What annotators see: never the prompt, gender, model, metadata, gold answers or answer keys
# ---------------------------------------------------------------------------------------------
OPAQUE_IMAGE_URL = re.compile(r"^(/media/(signed/\d+/[0-9a-f]+/)?|https?://[^/]+/(?:[^?]*/)?)"
                              r"(web|images)/[0-9a-f]{2}/[0-9a-f]{64}\.(webp|png)"
                              r"(\?.*(Signature|X-Amz-Signature)=.+)?$")


def _secrets(w: World) -> list[str]:
    words = {"secret-model-name", "placeholder", "woman", "man", "female", "male", "gender", "prompt", "metadata",
             "gold", "correct", "explicit", "neutral"}
    prompt_texts = list(w.campaign.prompts.values_list("text", flat=True)[:50])
    return sorted(words) + prompt_texts


def _assert_no_secret(text: str, w: World, where: str) -> None:
    lowered = text.lower()
    for secret in _secrets(w):
        pattern = r"\b" + re.escape(secret.lower()) + r"\b"
        assert not re.search(pattern, lowered), f"{where} reveals {secret!r}: {text[:300]}"


def test_a_hit_payload_has_only_what_an_annotator_may_see(world: World) -> None:
    import json

    response = world.client("annotator_a").post(f"/api/campaigns/{world.campaign.pk}/assignments/")
    assert response.status_code == 200
    hit = response.json()
    assert set(hit) == {"id", "expires_at", "questions"}
    for q in hit["questions"]:
        assert set(q) == {"id", "image_url", "text", "choices", "family"}
        assert q["family"].startswith("attribute:")  # what the question names; never the setting
        assert OPAQUE_IMAGE_URL.match(q["image_url"]), q["image_url"]
    _assert_no_secret(json.dumps([{"id": q["id"], "image_url": q["image_url"]} for q in hit["questions"]]), world,
                      "the HIT")
    # B gets their own HIT, never A's, and cannot act on A's
    other = world.client("annotator_b").post(f"/api/campaigns/{world.campaign.pk}/assignments/")
    assert other.status_code == 201 and other.json()["id"] != hit["id"]


def test_task_and_qualifications_hide_keys_and_metadata(world: World) -> None:
    import json

    client = world.client("annotator_b")
    task = client.get(f"/api/campaigns/{world.campaign.pk}/task/").json()
    quals = client.get(f"/api/campaigns/{world.campaign.pk}/qualifications/").json()
    for item in quals["results"][0]["items"]:
        assert set(item) == {"id", "image_url", "text", "choices"}
        assert OPAQUE_IMAGE_URL.match(item["image_url"])
    text = json.dumps(quals)
    assert '"correct"' not in text and '"stats"' not in text
    for leak in ("metadata", "gold_answer", "is_gold", "prompt", "secret-model-name"):
        assert leak not in json.dumps(task) and leak not in text
    # the owner sees the answer key
    owner = world.client("researcher_x").get(f"/api/campaigns/{world.campaign.pk}/qualifications/").json()
    assert owner["results"][0]["items"][0]["correct"] == "Yes"


def test_annotators_cannot_read_researcher_data_of_their_campaign(world: World) -> None:
    client = world.client("annotator_a")
    c = world.campaign.pk
    for path in (f"/api/campaigns/{c}/", f"/api/campaigns/{c}/questions/", f"/api/campaigns/{c}/images/",
                 f"/api/campaigns/{c}/prompts/", f"/api/campaigns/{c}/report/", f"/api/campaigns/{c}/export/",
                 f"/api/campaigns/{c}/payments.csv", f"/api/campaigns/{c}/annotators/", "/api/campaigns/"):
        response = client.get(path)
        assert response.status_code == 403, (path, response.status_code)
        assert "secret-model-name" not in response.content.decode()


def test_researcher_y_never_sees_x_campaigns(world: World) -> None:
    client = world.client("researcher_y")
    listed = [c["id"] for c in client.get("/api/campaigns/").json()["results"]]
    assert world.campaign.pk not in listed and world.y_campaign.pk in listed
    assert client.get(f"/api/campaigns/{world.campaign.pk}/report/?format=csv").status_code == 404
    assert client.get(f"/api/reports/compare/?campaigns={world.y_campaign.pk},{world.campaign.pk}").status_code == 404
    # and staff sees both
    staff = [c["id"] for c in world.client("staff").get("/api/campaigns/?page_size=500").json()["results"]]
    assert {world.campaign.pk, world.y_campaign.pk} <= set(staff)

"""Production serves images (issue 13, point 12): with MEDIA_STORAGE=local and DEBUG off, `/media/` is
an authenticated view (annotation/media_views.py): the signed URLs the API hands out (like S3's, they
expire), or a logged-in user who may see the image: researchers who own a campaign using it,
annotators enrolled in one, staff. Everyone else gets a 404, as if the file did not exist. A front
server can do the sending (X-Accel-Redirect / X-Sendfile, MEDIA_SERVE_HEADER)."""
from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.builders.campaigns import make_annotator

from .conftest import World

pytestmark = pytest.mark.django_db
WEBP = b"RIFF\x1a\x00\x00\x00WEBPVP8 " + b"\x00" * 14


@pytest.fixture
def served(world: World, settings: Any, tmp_path: Path) -> World:
    """Production-like media: local files under a fresh MEDIA_ROOT, DEBUG off (pytest-django's default)."""
    settings.DEBUG = False
    settings.MEDIA_STORAGE = "local"
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.STORAGES = {**settings.STORAGES}  # the deployment's own local storage class, reset
    from generation.models import Image

    for image in Image.objects.filter(campaign=world.campaign):
        default_storage.save(image.web_file, ContentFile(WEBP))
        default_storage.save(image.file, ContentFile(b"\x89PNG\r\n\x1a\n" + b"\x00" * 30))
    return world


def _plain(key: str) -> str:
    return f"/media/{key}"


def _get(client: Any, url: str) -> Any:
    response = client.get(url)
    body = b"".join(response.streaming_content) if getattr(response, "streaming", False) else response.content
    return response, body


def test_media_is_served_to_those_who_may_see_it_and_to_no_one_else(served: World) -> None:
    key = served.image.web_file
    outsider, _ = make_annotator("olga")  # an annotator enrolled in no campaign of this image
    allowed = {"researcher_x": served.x, "annotator_a": served.a.user, "staff": served.staff}
    refused = {"researcher_y": served.y, "outsider": outsider.user}
    for role, user in allowed.items():
        client = Client()
        client.force_login(user)
        response, body = _get(client, _plain(key))
        assert response.status_code == 200, role
        assert body == WEBP and response["Content-Type"] == "image/webp"
        assert response["X-Content-Type-Options"] == "nosniff" and "private" in response["Cache-Control"]
    for role, user in refused.items():
        client = Client()
        client.force_login(user)
        assert client.get(_plain(key)).status_code == 404, role
    assert Client().get(_plain(key)).status_code == 404  # anonymous
    # A token works as well as a session (API clients).
    token = Token.objects.get_or_create(user=served.x)[0].key
    response, body = _get(Client(HTTP_AUTHORIZATION=f"Token {token}"), _plain(key))
    assert response.status_code == 200 and body == WEBP


def test_signed_urls_from_the_api_work_without_a_session_and_expire(served: World, settings: Any) -> None:
    """The HIT payload's image URL is signed (the MTurk page runs in a third-party iframe without
    cookies): it loads with no session, a changed signature or an expired one does not."""
    hit = served.client("annotator_a").post(f"/api/campaigns/{served.campaign.pk}/assignments/").json()
    url = hit["questions"][0]["image_url"]
    match = re.fullmatch(r"/media/signed/(\d+)/([0-9a-f]{40})/(web/[0-9a-f]{2}/[0-9a-f]{64}\.webp)", url)
    assert match, url
    expires, signature, key = match.groups()
    response, body = _get(Client(), url)
    assert response.status_code == 200 and body == WEBP
    assert Client().get(f"/media/signed/{expires}/{'0' * 40}/{key}").status_code == 404  # changed signature
    other = key.replace("web/", "images/").replace(".webp", ".png")
    assert Client().get(f"/media/signed/{expires}/{signature}/{other}").status_code == 404  # one key per signature
    later = int(expires) + 3600
    assert Client().get(f"/media/signed/{later}/{signature}/{key}").status_code == 404  # a longer life is not signed
    settings.MEDIA_URL_EXPIRE_SECONDS = -3600  # URLs made now are already expired
    expired = default_storage.url(served.image.web_file)
    assert Client().get(expired).status_code == 404
    assert int(expired.split("/")[3]) < time.time()


@pytest.mark.parametrize("path", ["/media/../config/settings/base.py", "/media/%2e%2e/config/settings/base.py",
                                  "/media//etc/passwd", "/media/web/..%2f..%2fmanage.py", "/media/"])
def test_paths_outside_media_are_404_even_for_staff(served: World, path: str) -> None:
    client = Client()
    client.force_login(served.staff)
    assert client.get(path).status_code == 404


def test_archives_in_media_are_staff_only(served: World) -> None:
    key = default_storage.save(f"archives/campaign-{served.campaign.pk}-x.zip", ContentFile(b"PK\x05\x06" + b"\0" * 18))
    owner = Client()
    owner.force_login(served.x)
    assert owner.get(_plain(key)).status_code == 404
    staff = Client()
    staff.force_login(served.staff)
    response = staff.get(_plain(key))
    assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")


@pytest.mark.parametrize("header,expected", [("X-Accel-Redirect", "/protected-media/{key}"),
                                             ("X-Sendfile", "{root}/{key}")])
def test_a_front_server_can_send_the_file(served: World, settings: Any, header: str, expected: str) -> None:
    settings.MEDIA_SERVE_HEADER = header
    settings.MEDIA_ACCEL_PREFIX = "/protected-media/"
    key = served.image.web_file
    client = Client()
    client.force_login(served.x)
    response = client.get(_plain(key))
    assert response.status_code == 200
    assert response[header] == expected.format(key=key, root=os.path.realpath(settings.MEDIA_ROOT))
    assert response.content == b"" and response["Content-Type"] == "image/webp"


@pytest.mark.django_db(transaction=True)
def test_production_settings_serve_media_through_gunicorn(served: World, tmp_path: Path, settings: Any) -> None:
    """config.settings.production (DEBUG off, local media) behind gunicorn: the API's signed URL loads
    the image, the bare path does not, a token of the owner does."""
    from tests.builders.servers import db_url as _db_url
    from tests.builders.servers import free_port, web

    port = free_port()
    env = {"DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": "p" * 50, "ALLOWED_HOSTS": "127.0.0.1",
           "DATABASE_URL": _db_url(), "SECURE_SSL_REDIRECT": "false", "MEDIA_STORAGE": "local",
           "MEDIA_ROOT": settings.MEDIA_ROOT, "VAR_DIR": str(tmp_path / "var")}
    base = f"http://127.0.0.1:{port}"
    annotator = {"Authorization": f"Token {Token.objects.get_or_create(user=served.b.user)[0].key}"}
    owner = {"Authorization": f"Token {Token.objects.get_or_create(user=served.x)[0].key}"}
    with web(env, port):
        hit = requests.post(f"{base}/api/campaigns/{served.campaign.pk}/assignments/", headers=annotator, timeout=30)
        assert hit.status_code == 201, hit.text
        url = hit.json()["questions"][0]["image_url"]
        image = requests.get(base + url, timeout=30)
        assert image.status_code == 200 and image.headers["Content-Type"] in ("image/webp", "image/png")
        bare = "/media/" + url.split("/", 5)[5]  # /media/signed/<expires>/<signature>/<key> -> /media/<key>
        assert bare.startswith("/media/web/")
        assert requests.get(base + bare, timeout=30).status_code == 404
        assert requests.get(base + bare, headers=owner, timeout=30).status_code == 200


def test_annotators_get_the_web_rendition_never_the_original(served: World) -> None:
    """Issue 24: rewriting `web/<h>.webp` to `images/<h>.png` must not give an annotator the original
    (with whatever it carried); the owner and staff still read both."""
    original = served.image.file
    assert original.startswith("images/") and served.image.web_file.startswith("web/")
    annotator = Client()
    annotator.force_login(served.a.user)
    assert _get(annotator, _plain(served.image.web_file))[0].status_code == 200
    assert annotator.get(_plain(original)).status_code == 404
    token = Token.objects.get_or_create(user=served.a.user)[0].key
    assert Client(HTTP_AUTHORIZATION=f"Token {token}").get(_plain(original)).status_code == 404
    for user in (served.x, served.staff):
        client = Client()
        client.force_login(user)
        assert _get(client, _plain(original))[0].status_code == 200


def test_signature_is_djangos_salted_hmac_and_follows_the_secret_key(settings: Any) -> None:
    """The precomputed-key signature (one HMAC per URL) is exactly `salted_hmac(SALT, ...)`'s, so URLs
    handed out before the change stay valid, and a new SECRET_KEY signs differently (no stale key)."""
    from django.utils.crypto import salted_hmac

    from common.media import SALT, media_signature, media_signature_valid

    def reference(key: str, expires: int) -> str:
        return salted_hmac(SALT, f"{key}\n{expires}", algorithm="sha256").hexdigest()[:40]

    expires = int(time.time()) + 600
    for key in ("campaigns/1/images/a.webp", "k/é ü #?.png"):
        assert media_signature(key, expires) == reference(key, expires)
        assert media_signature_valid(key, expires, reference(key, expires))
    before = media_signature("a.webp", expires)
    settings.SECRET_KEY = "another-secret-key-for-this-test-only-0123456789abcdef"
    assert media_signature("a.webp", expires) == reference("a.webp", expires) != before

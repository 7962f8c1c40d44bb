"""Contract: the image manifest import stores the same rows whether it plans and records them with one
INSERT ... SELECT (a campaign with no image yet) or one INSERT ... SELECT and one UPDATE (images planned
before) (the PostgreSQL fast path `image_import`, generation/bulk.py) or with
bulk_create / bulk_update (the portable twin, what SQLite runs). Each twin imports the same manifest into
the same state (a savepoint rolled back in between); rows are compared by natural keys."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from campaigns.models import Campaign
from campaigns.services import campaign_create
from common import fastpath
from generation.backends.placeholder import placeholder_render
from generation.importer import DirectorySource, images_import
from generation.models import Image
from tests.builders.campaigns import small_spec

pytestmark = pytest.mark.django_db

FIELDS = ("sample_index", "seed", "status", "error", "attempts", "file", "web_file", "sha256", "width", "height",
          "source_url", "backend", "model", "params", "excluded", "synthetic")


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the contract runs both twins on PostgreSQL; CI runs it there")


def _state(campaign: Campaign) -> list[tuple[Any, ...]]:
    rows = Image.objects.filter(campaign=campaign).values_list("prompt__key", *FIELDS, "finished_at")
    return sorted((*r[:-1], r[-1] is not None) for r in rows)


def _import(campaign: Campaign, manifest: bytes, files: Path, *, fast: bool) -> tuple[dict[str, int], list[Any]]:
    sid = transaction.savepoint()
    try:
        with fastpath.forced("image_import", fast):
            result = images_import(campaign=campaign, manifest_name="manifest.csv", manifest=manifest,
                                   files=DirectorySource(files))
        return result, _state(campaign)
    finally:
        transaction.savepoint_rollback(sid)


def test_one_statement_and_the_orm_store_the_same_images(researcher: User, media: Path, tmp_path: Path) -> None:
    campaign = campaign_create(owner=researcher, spec={**small_spec(name="import", model="m-1", note="host B"), "name": "image-contract"})
    keys = list(campaign.prompts.order_by("position").values_list("key", flat=True))
    (tmp_path / "a.png").write_bytes(placeholder_render("a", 0, width=40, height=30))
    lines = ["prompt_key,sample_index,file,url", f"{keys[0]},0,a.png,"]
    lines += [f"{k},{s},,https://cdn.example.org/{i}/{s}.png?x=\"é\"" for i, k in enumerate(keys[1:4]) for s in (0, 1)]
    manifest = ("\n".join(lines) + "\n").encode()
    before = _state(campaign)
    assert before == []  # nothing planned yet: both twins plan the campaign's images too
    fast_result, fast = _import(campaign, manifest, tmp_path, fast=True)
    assert _state(campaign) == before  # rolled back
    portable_result, portable = _import(campaign, manifest, tmp_path, fast=False)
    assert fast_result == portable_result == {"imported": 7, "unchanged": 0, "rows": 7}
    assert fast == portable
    done = [r for r in fast if r[3] == Image.Status.DONE]
    assert len(done) == 7 and len(fast) > 7  # the rest planned, pending
    assert {r[14]["manifest"] for r in done} == {"manifest.csv"} and {r[14]["note"] for r in done} == {"host B"}


def _url_manifest(campaign: Campaign, count: int) -> bytes:
    keys = list(campaign.prompts.order_by("position").values_list("key", flat=True))
    lines = ["prompt_key,sample_index,url", *(f"{k},0,https://cdn.example.org/{i}.png" for i, k in enumerate(keys[:count]))]
    return ("\n".join(lines) + "\n").encode()


def test_both_twins_agree_on_a_campaign_already_planned(researcher: User, media: Path, tmp_path: Path) -> None:
    """The second shape: images planned before the import (the plan-then-UPDATE path on both twins)."""
    from generation.services import images_plan

    campaign = campaign_create(owner=researcher, spec={**small_spec(name="import", model="m-1"), "name": "planned"})
    images_plan(campaign=campaign)
    before = _state(campaign)
    assert before and all(r[3] == Image.Status.PENDING for r in before)
    manifest = _url_manifest(campaign, 3)
    fast_result, fast = _import(campaign, manifest, tmp_path, fast=True)
    portable_result, portable = _import(campaign, manifest, tmp_path, fast=False)
    assert fast_result == portable_result == {"imported": 3, "unchanged": 0, "rows": 3}
    assert fast == portable and sum(r[3] == Image.Status.DONE for r in fast) == 3


def test_a_fresh_campaign_is_planned_and_recorded_in_one_insert(researcher: User, media: Path, tmp_path: Path) -> None:
    from django.test.utils import CaptureQueriesContext

    campaign = campaign_create(owner=researcher, spec={**small_spec(name="import", model="m-1"), "name": "one-insert"})
    with CaptureQueriesContext(connection) as queries, fastpath.forced("image_import", True):
        images_import(campaign=campaign, manifest_name="m.csv", manifest=_url_manifest(campaign, 4))
    writes = [q["sql"] for q in queries if "generation_image" in q["sql"] and q["sql"].lstrip().upper().startswith(
        ("INSERT", "UPDATE", "WITH"))]
    assert len(writes) == 1 and "INSERT INTO" in writes[0], writes  # no UPDATE of the rows just inserted
    assert Image.objects.filter(campaign=campaign, status=Image.Status.DONE).count() == 4


def test_a_concurrent_plan_makes_the_fresh_import_refuse_and_store_nothing(
        researcher: User, media: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another request plans some of the campaign's images between the import's check and its INSERT:
    ON CONFLICT skips those rows, the count comes back short, and the import refuses (all or nothing)."""
    from common.errors import ConflictError
    from generation import bulk, importer

    campaign = campaign_create(owner=researcher, spec={**small_spec(name="import", model="m-1"), "name": "race"})
    first = campaign.prompts.order_by("position").values_list("id", "samples", "seeds").first()
    real = bulk.images_plan_recorded

    def planned_meanwhile(**kwargs: Any) -> int:
        bulk.images_plan_insert(campaign_id=campaign.pk, prompts=[first], now=kwargs["now"])
        return real(**kwargs)

    monkeypatch.setattr(importer, "images_plan_recorded", planned_meanwhile)
    with fastpath.forced("image_import", True), pytest.raises(ConflictError, match="planned by another request"):
        images_import(campaign=campaign, manifest_name="m.csv", manifest=_url_manifest(campaign, 3))
    assert not Image.objects.filter(campaign=campaign).exists()

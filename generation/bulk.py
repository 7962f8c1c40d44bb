"""Set-based writes of many images at once: planning a campaign's Image rows and recording an import's
images. Each has a PostgreSQL fast path (`image_import` in common/fastpath.py: one INSERT ... SELECT
over the prompts' sample indexes, one UPDATE ... FROM unnest(...) for the imported rows) and its ORM
twin (bulk_create / bulk_update), the reference and what SQLite runs;
`tests/contracts/test_image_import.py` holds both to the same stored rows.

A manifest of 100,000 images took ~100 s as one `save()` per row and a bulk_create of the planned rows
(bench/imports.py); each step is now one statement whatever the number of rows. Into a campaign with no
image yet, the fast path plans and records in ONE statement (`images_plan_recorded`: the imported rows are
inserted with their final values, not inserted and then rewritten, half of PostgreSQL's work).
"""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection
from django.db.models import Model

from common import fastpath

from .models import Image

# Columns the planning statement fills itself; every other column gets its model default.
_PLANNED = ("campaign", "prompt", "sample_index", "seed")


def _defaults(model: type[Model], skip: Sequence[str], now: datetime) -> list[tuple[str, Any]]:
    """(column, database value) of every concrete field but the primary key and `skip`: the model's
    default, `now` for auto_now / auto_now_add; the same values bulk_create would write."""
    out = []
    for f in model._meta.concrete_fields:
        if f.primary_key or f.name in skip:
            continue
        value = now if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False) else f.get_default()
        out.append((f.column, f.get_db_prep_save(value, connection)))
    return out


PLAN_SQL = """
INSERT INTO {table} (campaign_id, prompt_id, sample_index, seed{columns})
SELECT p.campaign_id, p.id, s.i, (p.seeds ->> s.i)::bigint{values}
FROM campaigns_prompt p CROSS JOIN LATERAL generate_series(0, p.samples - 1) AS s(i)
WHERE p.campaign_id = %s AND p.id = ANY(%s::bigint[])
ORDER BY p.position, s.i
ON CONFLICT DO NOTHING"""


def images_plan_insert(*, campaign_id: int, prompts: Sequence[tuple[int, int, list[int]]], now: datetime) -> int:
    """Insert the Image rows of these prompts ((id, samples, seeds) each) that do not exist yet (the
    unique (prompt, sample_index) constraint settles races): one statement on PostgreSQL. Returns how
    many rows were inserted."""
    if not prompts:
        return 0
    if fastpath.enabled("image_import"):
        defaults = _defaults(Image, _PLANNED, now)
        sql = PLAN_SQL.format(table=connection.ops.quote_name(Image._meta.db_table),
                              columns="".join(f", {connection.ops.quote_name(c)}" for c, _ in defaults),
                              values=", %s" * len(defaults))
        with connection.cursor() as cursor:
            cursor.execute(sql, [*(v for _, v in defaults), campaign_id, [p[0] for p in prompts]])
            return max(0, cursor.rowcount)
    have = set(Image.objects.filter(prompt_id__in=[p[0] for p in prompts]).values_list("prompt_id", "sample_index"))
    rows = [Image(campaign_id=campaign_id, prompt_id=pid, sample_index=index, seed=seeds[index])
            for pid, samples, seeds in prompts for index in range(samples) if (pid, index) not in have]
    Image.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return len(rows)


@dataclass
class ImageRecord:
    """What an import stores on one planned image (by id, or by prompt and sample index when it is
    planned in the same statement): its URL, or the stored file's keys and size."""

    image_id: int
    row: int
    source_url: str = ""
    file: str = ""
    web_file: str = ""
    sha256: str = ""
    width: int | None = None
    height: int | None = None
    prompt_id: int = 0
    sample_index: int = 0


# What an import sets on an image, as expressions over the row `v` of the import's unnest: the SET of
# RECORD_SQL and the values of PLAN_RECORDED_SQL's imported rows (one list for both statements).
_RECORDED = {
    "status": "'done'", "error": "''", "backend": "'import'", "model": "%(model)s",
    "params": "jsonb_build_object('note', %(note)s::jsonb, 'manifest', %(manifest)s::text, 'row', v.row)",
    "finished_at": "%(now)s", "updated_at": "%(now)s", "source_url": "v.source_url", "file": "v.file",
    "web_file": "v.web_file", "sha256": "v.sha256", "width": "v.width", "height": "v.height"}

RECORD_SQL = """
UPDATE {table} AS i SET """ + ", ".join(f"{c} = {e}" for c, e in _RECORDED.items()) + """
FROM unnest(%(ids)s::bigint[], %(rows)s::int[], %(urls)s::text[], %(files)s::text[], %(webs)s::text[],
            %(shas)s::text[], %(widths)s::int[], %(heights)s::int[])
     AS v(id, row, source_url, file, web_file, sha256, width, height)
WHERE i.id = v.id"""


def images_record(*, records: Sequence[ImageRecord], model: str, note: Any, manifest: str, now: datetime) -> None:
    """Mark these images done with what the import brought (the rows are locked by the caller): one
    UPDATE on PostgreSQL, bulk_update elsewhere."""
    if not records:
        return
    if fastpath.enabled("image_import"):
        with connection.cursor() as cursor:
            cursor.execute(RECORD_SQL.format(table=connection.ops.quote_name(Image._meta.db_table)), {
                "model": model, "note": json.dumps(note), "manifest": manifest, "now": now,
                "ids": [r.image_id for r in records], "rows": [r.row for r in records],
                "urls": [r.source_url for r in records], "files": [r.file for r in records],
                "webs": [r.web_file for r in records], "shas": [r.sha256 for r in records],
                "widths": [r.width for r in records], "heights": [r.height for r in records]})
        return
    objs = []
    for r in records:
        objs.append(Image(pk=r.image_id, status=Image.Status.DONE, error="", backend="import", model=model,
                          params={"note": note, "manifest": manifest, "row": r.row}, finished_at=now, updated_at=now,
                          source_url=r.source_url, file=r.file, web_file=r.web_file, sha256=r.sha256,
                          width=r.width, height=r.height))
    Image.objects.bulk_update(objs, ["status", "error", "backend", "model", "params", "finished_at", "updated_at",
                                     "source_url", "file", "web_file", "sha256", "width", "height"], batch_size=2000)


PLAN_RECORDED_SQL = """
WITH planned AS (
    INSERT INTO {table} (campaign_id, prompt_id, sample_index, seed{columns})
    SELECT p.campaign_id, p.id, s.i, (p.seeds ->> s.i)::bigint{values}
    FROM campaigns_prompt p CROSS JOIN LATERAL generate_series(0, p.samples - 1) AS s(i)
    LEFT JOIN unnest(%(prompts)s::bigint[], %(samples)s::int[], %(rows)s::int[], %(urls)s::text[],
                     %(files)s::text[], %(webs)s::text[], %(shas)s::text[], %(widths)s::int[], %(heights)s::int[])
         AS v(prompt_id, sample_index, row, source_url, file, web_file, sha256, width, height)
         ON v.prompt_id = p.id AND v.sample_index = s.i
    WHERE p.campaign_id = %(campaign)s
    ORDER BY p.position, s.i
    ON CONFLICT DO NOTHING
    RETURNING (status = 'done') AS recorded)
SELECT count(*) FILTER (WHERE recorded) FROM planned"""


def images_plan_recorded(*, campaign_id: int, records: Sequence[ImageRecord], model: str, note: Any, manifest: str,
                         now: datetime) -> int:
    """Plan every Image row of the campaign and record the imported ones in the same INSERT (PostgreSQL
    only; the caller checks `fastpath.enabled("image_import")` and that the campaign has no image yet):
    the rows equal those of `images_plan` followed by `images_record` (tests/contracts/test_image_import.py).
    Records are matched by (prompt_id, sample_index). Returns how many recorded rows were inserted: fewer
    than `records` means another transaction planned some of them first (the caller refuses the import)."""
    defaults = _defaults(Image, _PLANNED, now)
    names = {c: f"d{i}" for i, (c, _) in enumerate(defaults)}
    values = "".join(f", CASE WHEN v.row IS NULL THEN %({names[c]})s ELSE {_RECORDED[c]} END" if c in _RECORDED
                     else f", %({names[c]})s" for c, _ in defaults)
    missing = set(_RECORDED) - {c for c, _ in defaults}
    assert not missing, f"Image has no column {missing}"  # a renamed field must not be silently skipped
    sql = PLAN_RECORDED_SQL.format(table=connection.ops.quote_name(Image._meta.db_table),
                                   columns="".join(f", {connection.ops.quote_name(c)}" for c, _ in defaults),
                                   values=values)
    with connection.cursor() as cursor:
        cursor.execute(sql, {
            **{names[c]: v for c, v in defaults}, "campaign": campaign_id, "model": model, "note": json.dumps(note),
            "manifest": manifest, "now": now, "prompts": [r.prompt_id for r in records],
            "samples": [r.sample_index for r in records], "rows": [r.row for r in records],
            "urls": [r.source_url for r in records], "files": [r.file for r in records],
            "webs": [r.web_file for r in records], "shas": [r.sha256 for r in records],
            "widths": [r.width for r in records], "heights": [r.height for r in records]})
        return int(cursor.fetchone()[0])

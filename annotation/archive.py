"""Full export / import of a campaign, so a lab can move or archive it.

The archive is a zip of JSON / JSONL files (format `t2i-campaign-archive`, version 1):
  manifest.json        format, version, the campaign (name, kind, seed, spec, status), counts
  prompts.jsonl        key, position, setting, text, metadata, samples, seeds, template_index, template
  images.jsonl         archive id, prompt key, sample, status, storage keys (content-addressed:
                       `images/..`, `web/..`; the image files stay in the object store), provenance
  questions.jsonl      archive id, image, slot, family, text, choices, metadata, R, gold flag/answer
  annotators.jsonl     pseudonymous id (`annotator-N`), enrollment status and consent record;
                       never usernames, external worker ids or demographics
  answers.jsonl        archive id, question, annotator pseudonym, choice, time_ms, created_at,
                       `corrects` (archive id of the corrected answer), source
  qualifications.jsonl tests with their items (answer keys) and attempts
  examples.jsonl       example images of the instructions: family, image (archive id) or the
                       content-addressed keys of an upload, answer, caption, order (optional on import)

Import creates a new campaign owned by the importing researcher, in one transaction: a bad
archive is a 400 naming the file and line, and leaves nothing behind. Imported annotators are
new accounts that cannot log in. Aggregated labels are recomputed.
"""
from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import DataError, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from campaigns.models import Campaign, Prompt
from campaigns.spec import SpecError, spec_normalize
from common.errors import ApplicationError
from common.inputs import BodyError, brief, json_lines, json_loads
from common.numbers import number
from common.zipsafe import SafeZip, ZipMemberError
from generation.importer import image_url_problem
from generation.models import Image
from generation.storage import storage_key_problem

from .families import canonical_example_family
from .media_views import CONTENT_ADDRESSED
from .models import (
    Annotator,
    Answer,
    Enrollment,
    ExampleImage,
    Qualification,
    QualificationAttempt,
    QualificationItem,
    Question,
)
from .services.derived import answers_derive, counters_recount

FORMAT = "t2i-campaign-archive"
VERSION = 1
# Bounds of an uploaded archive (settings of the same names override them).
ARCHIVE_LIMITS = {
    "ARCHIVE_MAX_TOTAL_BYTES": 2 * 1024 ** 3,   # all members, uncompressed
    "ARCHIVE_MAX_MEMBER_BYTES": 1024 ** 3,      # one member, uncompressed (streamed, never held whole)
    "ARCHIVE_MAX_RATIO": 100,                   # uncompressed / compressed, per member over 1 MB
    "ARCHIVE_MAX_ROWS": 5_000_000,              # rows of one member
}
MANIFEST_MAX_BYTES = 16 * 1024 * 1024
MAX_LINE_BYTES = 4 * 1024 * 1024  # one JSON Lines row
IMAGE_FIELDS = ("sample_index", "seed", "status", "error", "attempts", "file", "web_file", "sha256", "width", "height",
                "source_url", "backend", "model", "revision", "params", "wall_time_s", "revised_prompt", "synthetic",
                "excluded", "exclusion_reason")
QUESTION_FIELDS = ("slot", "family", "setting", "text", "choices", "metadata", "required", "order_key", "is_gold",
                   "gold_answer")


def _iso(value: Any) -> str | None:
    return value.isoformat() if value else None


def _jsonl(rows: Iterator[dict[str, Any]] | list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows).encode("utf-8")


def campaign_export(*, campaign: Campaign, progress: Callable[[float], None] | None = None) -> bytes:
    """The campaign's full archive (see the module docstring), as zip bytes. `progress` (0-1) is told as
    the tables are read (a worker's build: annotation/services/archiving.py)."""
    step = progress or (lambda fraction: None)
    pseudonyms: dict[int, str] = {}
    annotators: list[dict[str, Any]] = []
    for index, e in enumerate(Enrollment.objects.filter(campaign=campaign).order_by("pk"), start=1):
        pseudonyms[e.annotator_id] = f"annotator-{index}"
        annotators.append({"id": pseudonyms[e.annotator_id], "status": e.status, "status_reason": e.status_reason,
                           "consented_at": _iso(e.consented_at), "consent_text": e.consent_text})

    def pseudonym(annotator_id: int) -> str:  # answers by someone never enrolled (e.g. imported)
        if annotator_id not in pseudonyms:
            pseudonyms[annotator_id] = f"annotator-{len(pseudonyms) + 1}"
            annotators.append({"id": pseudonyms[annotator_id], "status": Enrollment.Status.ACTIVE,
                               "status_reason": "", "consented_at": None, "consent_text": "", "enrolled": False})
        return pseudonyms[annotator_id]

    prompts = [{"key": p.key, "position": p.position, "setting": p.setting, "text": p.text, "metadata": p.metadata,
                "samples": p.samples, "seeds": p.seeds, "template_index": p.template_index, "template": p.template}
               for p in Prompt.objects.filter(campaign=campaign)]
    images = [{"id": i.pk, "prompt": i.prompt.key, **{f: getattr(i, f) for f in IMAGE_FIELDS},
               "finished_at": _iso(i.finished_at)}
              for i in Image.objects.filter(campaign=campaign).select_related("prompt").order_by("pk")]
    step(0.1)
    questions = [{"id": q.pk, "image": q.image_id, **{f: getattr(q, f) for f in QUESTION_FIELDS}}
                 for q in Question.objects.filter(campaign=campaign).order_by("pk")]
    step(0.3)
    answers = [{"id": a.pk, "question": a.question_id, "annotator": pseudonym(a.annotator_id), "choice": a.choice,
                "time_ms": a.time_ms, "created_at": _iso(a.created_at), "corrects": a.corrects_id, "source": a.source}
               for a in Answer.objects.filter(campaign=campaign).order_by("pk")]
    step(0.7)
    qualifications = []
    for q in Qualification.objects.filter(campaign=campaign).order_by("pk"):
        qualifications.append({
            "name": q.name, "family": q.family, "instructions": q.instructions, "pass_fraction": q.pass_fraction,
            "retake_after_minutes": q.retake_after_minutes, "max_attempts": q.max_attempts,
            "items": [{"image": it.image_id, "position": it.position, "text": it.text, "choices": it.choices,
                       "correct": it.correct} for it in q.items.order_by("position", "pk")],
            "attempts": [{"annotator": pseudonym(at.annotator_id), "answers": at.answers, "correct": at.correct,
                          "total": at.total, "passed": at.passed, "created_at": _iso(at.created_at)}
                         for at in q.attempts.order_by("pk")]})
    examples = [{"family": e.family, "image": e.image_id, "file": e.file, "web_file": e.web_file, "answer": e.answer,
                 "caption": e.caption, "order": e.order}
                for e in ExampleImage.objects.filter(campaign=campaign).order_by("family", "order", "pk")]
    manifest = {"format": FORMAT, "version": VERSION, "exported_at": timezone.now().isoformat(),
                "campaign": {"id": campaign.pk, "name": campaign.name, "kind": campaign.kind, "seed": campaign.seed,
                             "spec": campaign.spec, "status": campaign.status},
                "counts": {"prompts": len(prompts), "images": len(images), "questions": len(questions),
                           "answers": len(answers), "annotators": len(annotators),
                           "qualifications": len(qualifications), "examples": len(examples)}}
    step(0.75)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True))
        for name, rows in (("prompts", prompts), ("images", images), ("questions", questions),
                           ("annotators", annotators), ("answers", answers), ("qualifications", qualifications),
                           ("examples", examples)):
            zf.writestr(f"{name}.jsonl", _jsonl(rows))
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# Import
# ---------------------------------------------------------------------------------------------
def _bad(message: str, field: str = "archive") -> ApplicationError:
    return ApplicationError(f"Invalid campaign archive: {message}", errors={field: [message]})


def _limit(name: str) -> int:
    return int(getattr(settings, name, ARCHIVE_LIMITS[name]))


def _read(zf: SafeZip, name: str) -> bytes:
    # common.zipsafe: a missing, oversized or damaged (bad CRC, encrypted) member is a 400 naming it.
    if not zf.exists(name):
        raise _bad(f"{name} is missing")
    try:
        return zf.read(name, limit=MANIFEST_MAX_BYTES)
    except ZipMemberError as exc:
        raise _bad(exc.message) from None


def _lines(zf: SafeZip, name: str) -> list[dict[str, Any]]:
    """The member's rows, streamed line by line through the bounded JSON parser (common.inputs), at
    most ARCHIVE_MAX_ROWS of them."""
    if not zf.exists(name):
        raise _bad(f"{name} is missing")
    rows: list[dict[str, Any]] = []
    max_rows = _limit("ARCHIVE_MAX_ROWS")
    try:
        for number_, row in json_lines(zf.lines(name, limit=_limit("ARCHIVE_MAX_MEMBER_BYTES"), max_line=MAX_LINE_BYTES),
                                       field=name, max_line_bytes=MAX_LINE_BYTES):
            if not isinstance(row, dict):
                raise _bad(f"{name} line {number_}: must be a JSON object")
            if len(rows) >= max_rows:
                raise _bad(f"{name}: more than {max_rows} rows (ARCHIVE_MAX_ROWS)")
            rows.append(row)
    except ZipMemberError as exc:
        raise _bad(exc.message) from None
    except BodyError as exc:
        where, problems = next(iter(exc.errors.items()))
        line = where[len(name) + 1:].split(".")[0]
        raise _bad(f"{name} line {line}: not JSON ({problems[0]})") from None
    return rows


def _int(value: Any, field: str = "value") -> int:
    """A whole number of an archive row (common.numbers): what a PostgreSQL integer column holds."""
    return number(value, field=field, kind="int", minimum=-(2**31), maximum=2**31 - 1)


def _need(row: dict[str, Any], key: str, where: str) -> Any:
    if key not in row:
        raise _bad(f"{where}: {key!r} is missing")
    return row[key]


def _spec_checked(raw: Any) -> dict[str, Any]:
    """The archived spec through the spec validator of create / preview (unknown keys, the
    `backend.api_base` allow-list, limits, clean text): a 400 naming the spec's field."""
    try:
        return spec_normalize(raw)
    except SpecError as exc:
        raise SpecError(f"Invalid campaign archive: manifest.json campaign.spec: {exc.message}",
                        errors=exc.errors) from None


def _image_rows_check(rows: list[dict[str, Any]]) -> None:
    """Every image row through the image import's rules: `source_url` as a URL row of the image import
    (http(s) only: no javascript:, data:, file:), `file` / `web_file` as storage keys (no `..`,
    absolute paths, backslashes; inside the image storage). All problems at once, by line."""
    errors: dict[str, list[str]] = {}
    for n, r in enumerate(rows, start=1):
        where = f"images.jsonl line {n}"
        if r.get("source_url") not in (None, ""):
            why = image_url_problem(r["source_url"])
            if why:
                errors.setdefault(f"images.{n}.source_url", []).append(f"{where}: source_url: {why}")
        for field in ("file", "web_file"):
            if r.get(field) not in (None, ""):
                why = storage_key_problem(r[field])
                if why:
                    errors.setdefault(f"images.{n}.{field}", []).append(f"{where}: {field} {why}")
    if errors:
        first = next(iter(errors.values()))[0]
        raise ApplicationError(f"Invalid campaign archive: {first}; nothing was stored.", errors=errors)


def _manifest_read(zf: SafeZip) -> tuple[dict[str, Any], dict[str, Any]]:
    """The manifest's campaign block and its spec, checked by the API's own validators."""
    try:  # common.inputs: the bounded JSON parser (depth, size, clean text)
        manifest = json_loads(_read(zf, "manifest.json"), max_bytes=MANIFEST_MAX_BYTES, field="manifest.json")
    except BodyError as exc:
        raise _bad(exc.message, "manifest.json") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise _bad(f"manifest.json: format must be {FORMAT!r}")
    if manifest.get("version") != VERSION:
        raise _bad(f"manifest.json: unsupported version {manifest.get('version')!r} (this server reads {VERSION})")
    meta = manifest.get("campaign")
    if not isinstance(meta, dict) or not isinstance(meta.get("spec"), dict):
        raise _bad("manifest.json: campaign.spec is missing")
    if meta.get("status") not in Campaign.Status.values:
        raise _bad(f"manifest.json: unknown status {brief(meta.get('status'))}")
    # The same validators as the API's paths, before anything is written (and everything below runs
    # in this one transaction: any error leaves nothing behind).
    spec = _spec_checked(meta["spec"])
    if meta.get("kind", spec["kind"]) != spec["kind"]:
        raise _bad(f"manifest.json: campaign.kind {brief(meta.get('kind'))} differs from the spec's kind",
                   "kind")
    return meta, spec


def _prompts_create(campaign: Campaign, prompts: list[dict[str, Any]]) -> dict[Any, Prompt]:
    by_key = {}
    for n, p in enumerate(prompts, start=1):
        where = f"prompts.jsonl line {n}"
        by_key[_need(p, "key", where)] = Prompt(
            campaign=campaign, key=p["key"], position=_int(_need(p, "position", where)),
            setting=str(_need(p, "setting", where)), text=str(_need(p, "text", where)),
            metadata=_need(p, "metadata", where), samples=_int(_need(p, "samples", where)),
            seeds=_need(p, "seeds", where), template_index=_int(p.get("template_index") or 0),
            template=str(p.get("template") or ""))
    Prompt.objects.bulk_create(list(by_key.values()), batch_size=2000)
    return by_key


def _images_create(campaign: Campaign, rows: list[dict[str, Any]], by_key: dict[Any, Prompt]) -> dict[int, int]:
    """{archive image id: new image id}."""
    new_images = []
    for n, r in enumerate(rows, start=1):
        where = f"images.jsonl line {n}"
        prompt = by_key.get(_need(r, "prompt", where))
        if prompt is None:
            raise _bad(f"{where}: unknown prompt {r['prompt']!r}")
        fields = {f: r[f] for f in IMAGE_FIELDS if f in r}
        new_images.append(Image(campaign=campaign, prompt=prompt,
                                finished_at=parse_datetime(r.get("finished_at") or "") or None, **fields))
    Image.objects.bulk_create(new_images, batch_size=2000)
    return {_int(_need(r, "id", "images.jsonl")): image.pk for r, image in zip(rows, new_images, strict=True)}


def _questions_create(campaign: Campaign, zf: SafeZip, image_ids: dict[int, int]) -> dict[int, int]:
    """{archive question id: new question id}."""
    rows = _lines(zf, "questions.jsonl")
    new_questions = []
    for n, r in enumerate(rows, start=1):
        where = f"questions.jsonl line {n}"
        image_id = image_ids.get(_need(r, "image", where))
        if image_id is None:
            raise _bad(f"{where}: unknown image {r['image']!r}")
        new_questions.append(Question(campaign=campaign, image_id=image_id,
                                      **{f: r[f] for f in QUESTION_FIELDS if f in r}))
    Question.objects.bulk_create(new_questions, batch_size=2000)
    return {_int(r["id"]): q.pk for r, q in zip(rows, new_questions, strict=True)}


def _annotators_create(campaign: Campaign, zf: SafeZip) -> dict[str, Annotator]:
    """{pseudonymous archive id: new imported annotator} (with the enrollments the archive holds)."""
    User = get_user_model()
    annotators: dict[str, Annotator] = {}
    for n, r in enumerate(_lines(zf, "annotators.jsonl"), start=1):
        pseudo = str(_need(r, "id", f"annotators.jsonl line {n}"))
        user = User.objects.create_user(username=f"imported-{campaign.pk}-{pseudo}"[:150])
        user.set_unusable_password()
        user.save(update_fields=["password"])
        annotators[pseudo] = Annotator.objects.create(user=user, kind=Annotator.Kind.IMPORTED)
        if r.get("enrolled", True):
            Enrollment.objects.create(campaign=campaign, annotator=annotators[pseudo],
                                      status=r.get("status") or Enrollment.Status.ACTIVE,
                                      status_reason=r.get("status_reason") or "",
                                      consented_at=parse_datetime(r.get("consented_at") or "") or None,
                                      consent_text=r.get("consent_text") or "")
    return annotators


def _annotator(annotators: dict[str, Annotator], value: Any, where: str) -> Annotator:
    if value not in annotators:
        raise _bad(f"{where}: unknown annotator {value!r}")
    return annotators[value]


def _answers_create(campaign: Campaign, zf: SafeZip, question_ids: dict[int, int],
                    annotators: dict[str, Annotator]) -> None:
    answer_ids: dict[int, Answer] = {}
    pending = []
    for n, r in enumerate(_lines(zf, "answers.jsonl"), start=1):
        where = f"answers.jsonl line {n}"
        qid = question_ids.get(_need(r, "question", where))
        if qid is None:
            raise _bad(f"{where}: unknown question {r['question']!r}")
        pending.append((r, Answer(campaign=campaign, question_id=qid,
                                  annotator=_annotator(annotators, r.get("annotator"), where),
                                  choice=str(_need(r, "choice", where)),
                                  time_ms=None if r.get("time_ms") is None else _int(r["time_ms"]),
                                  source="archive-import")))
    # originals first, then corrections in archive order (each links an already created row)
    for r, answer in pending:
        if r.get("corrects") is not None:
            if r["corrects"] not in answer_ids:
                raise _bad(f"answers.jsonl: answer {r.get('id')!r} corrects unknown answer {r['corrects']!r}")
            answer.corrects = answer_ids[r["corrects"]]
        answer.save()
        answer_ids[_int(_need(r, "id", "answers.jsonl"))] = answer
    created = {a.pk: parse_datetime(r.get("created_at") or "") for r, a in pending}
    for pk, when in created.items():
        if when:
            Answer.objects.filter(pk=pk).update(created_at=when)


def _qualifications_create(campaign: Campaign, zf: SafeZip, image_ids: dict[int, int],
                           annotators: dict[str, Annotator]) -> None:
    for n, r in enumerate(_lines(zf, "qualifications.jsonl"), start=1):
        where = f"qualifications.jsonl line {n}"
        q = Qualification.objects.create(
            campaign=campaign, name=str(r.get("name") or r.get("family"))[:200], family=_need(r, "family", where),
            instructions=r.get("instructions") or "",
            pass_fraction=number(r.get("pass_fraction", 1.0), field=f"{where}: pass_fraction", kind="float",
                                 minimum=0, maximum=1),
            retake_after_minutes=_int(r.get("retake_after_minutes", 60)), max_attempts=_int(r.get("max_attempts", 2)))
        for it in r.get("items") or []:
            if it.get("image") not in image_ids:
                raise _bad(f"{where}: unknown image {it.get('image')!r}")
            QualificationItem.objects.create(qualification=q, image_id=image_ids[it["image"]],
                                             position=_int(it.get("position") or 0), text=str(it.get("text") or ""),
                                             choices=it.get("choices") or [], correct=str(it.get("correct") or ""))
        for at in r.get("attempts") or []:
            QualificationAttempt.objects.create(qualification=q,
                                                annotator=_annotator(annotators, at.get("annotator"), where),
                                                answers=at.get("answers") or [], correct=_int(at.get("correct") or 0),
                                                total=_int(at.get("total") or 0), passed=bool(at.get("passed")))


def _examples_create(campaign: Campaign, zf: SafeZip, image_ids: dict[int, int]) -> None:
    for n, r in enumerate(_lines(zf, "examples.jsonl") if zf.exists("examples.jsonl") else [], start=1):
        where = f"examples.jsonl line {n}"
        image = r.get("image")
        if image is not None and image not in image_ids:
            raise _bad(f"{where}: unknown image {image!r}")
        keys = [str(r.get("file") or ""), str(r.get("web_file") or "")]
        if image is None and not all(CONTENT_ADDRESSED.match(k) for k in keys):
            raise _bad(f"{where}: an uploaded example needs content-addressed file and web_file keys")
        family = canonical_example_family(str(_need(r, "family", where)))[:220]  # old person:intervention
        if image is not None and ExampleImage.objects.filter(family=family, image_id=image_ids[image]).exists():
            continue  # an old archive's intervention example of an image already a paired one
        ExampleImage.objects.create(campaign=campaign, family=family,
                                    image_id=image_ids[image] if image is not None else None,
                                    file="" if image is not None else keys[0],
                                    web_file="" if image is not None else keys[1],
                                    answer=str(_need(r, "answer", where))[:100],
                                    caption=str(r.get("caption") or "")[:300], order=_int(r.get("order") or 0))


@transaction.atomic
def campaign_import(*, owner: User, data: bytes | BinaryIO) -> Campaign:
    """Create a new campaign from an archive (see the module docstring). All or nothing: one
    transaction holds every member's rows, written in dependency order by the helpers above."""
    try:
        zf = SafeZip(data)
    except ZipMemberError as exc:
        raise _bad("not a zip file") from exc
    # Every member bounded before a byte is read: the uncompressed total, each member, and the
    # compression ratio (a zip bomb); members are then streamed line by line (`_lines`).
    problems = zf.problems(max_total=_limit("ARCHIVE_MAX_TOTAL_BYTES"), max_member=_limit("ARCHIVE_MAX_MEMBER_BYTES"),
                           max_ratio=_limit("ARCHIVE_MAX_RATIO"))
    if problems:
        raise _bad("; ".join(problems[:5]))
    meta, spec = _manifest_read(zf)
    prompts = _lines(zf, "prompts.jsonl")
    image_rows = _lines(zf, "images.jsonl")
    _image_rows_check(image_rows)
    try:
        campaign = Campaign.objects.create(
            owner=owner, name=str(meta.get("name") or spec["name"])[:200],
            kind=spec["kind"], seed=_int(meta.get("seed") or 0), spec=spec,
            spec_version=_int(spec.get("version") or 1), status=meta["status"], prompt_count=len(prompts),
            images_planned=sum(_int(p.get("samples") or 0) for p in prompts))
        image_ids = _images_create(campaign, image_rows, _prompts_create(campaign, prompts))
        question_ids = _questions_create(campaign, zf, image_ids)
        annotators = _annotators_create(campaign, zf)
        _answers_create(campaign, zf, question_ids, annotators)
        _qualifications_create(campaign, zf, image_ids, annotators)
        _examples_create(campaign, zf, image_ids)
    except ApplicationError:
        raise
    except (TypeError, ValueError, KeyError, OverflowError, DataError) as exc:
        raise _bad(f"malformed field ({brief(str(exc))[1:-1]})") from None
    # Counters follow the answers (the archive's `assigned` included live leases that are gone), then
    # everything else derived from them (annotation.services.derived).
    counters_recount(campaign_id=campaign.pk)
    answers_derive(campaign_id=campaign.pk)
    return campaign

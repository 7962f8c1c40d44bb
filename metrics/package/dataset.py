"""The replication package of a campaign (`GET /api/campaigns/{id}/export/dataset/`, `manage.py report
ID --format dataset`): a zip a third party can load and recompute the report from.

    README.md                  dataset card: design, counts, agreement, headline scores, license, how to load
    spec.json                  the campaign's normalised spec
    report.json                the report (default options) the card quotes
    data/answers.parquet       every stored answer (one row each), anonymised annotators, question metadata,
                               image keys; `counted` marks the answers the report uses
    data/questions.parquet     every question with its metadata and the report's label (majority, ties "tie")
    data/images.parquet        every image: storage key, sha256, prompt, seed, provenance, exclusion
    data/machine_labels.parquet  the machine labels (only when the `autolabel` app is installed), with
    data/machine_label_failures.parquet, data/human_sample.parquet, data/clip_scores.parquet
    data/annotators.parquet    per-annotator demographics, only under the publication rule (package/build.py)
    package.json               manifest: campaign facts, the report options' defaults, image counts, blocked
                               annotators, what the package holds (metrics/package/read.py reads it)

The report is recomputed from the package alone by `metrics.package.report_from_package` and
`manage.py report --package FILE.zip` (metrics/package/read.py). Annotators are numbered
`annotator_0001`, ... in the order of their account ids (metrics/package/build.py says why): no user
id, name or crowd-platform id leaves the product. Bounded memory: the answers are written to Parquet
in row groups of `CHUNK` rows and the zip is assembled in a temporary file (the worker streams it to
storage from there, metrics/package/services.py).
"""
from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Callable
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from django.apps import apps

from annotation.models import Enrollment
from campaigns.models import Campaign
from campaigns.spec import GEP_SETTINGS, PST, PST_SETTINGS
from generation.models import Image
from metrics.extract import campaign_data
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions
from metrics.sections.labels import label_table
from metrics.sections.summary import report_summary
from metrics.snapshots.report import report_get

from .build import (
    annotator_numbers,
    arrival,
    demographics_table,
    machine_tables,
    manifest,
    pseudonym,
    pseudonym_width,
    pseudonyms,
    question_extras,
)

CHUNK = 100_000
IMAGE_COUNTS = ("images", "images_done", "images_excluded", "images_failed", "images_filtered")
DEFAULT_LICENSE = "unknown"


def _image_table(campaign: Campaign) -> pa.Table:
    rows = (Image.objects.filter(campaign=campaign).order_by("id")
            .values_list("id", "file", "source_url", "sha256", "prompt__key", "prompt__text", "prompt__setting",
                         "sample_index", "seed", "status", "excluded", "backend", "model", "synthetic", "width",
                         "height")
            .iterator(chunk_size=5000))
    cols: dict[str, list[Any]] = {k: [] for k in ("image_id", "image_key", "source_url", "sha256", "prompt_key",
                                                  "prompt_text", "setting", "sample_index", "seed", "status",
                                                  "excluded", "backend", "model", "synthetic", "width", "height")}
    for r in rows:
        for k, v in zip(cols, r, strict=True):
            cols[k].append(v)
    cols["image_key"] = [key or url for key, url in zip(cols["image_key"], cols["source_url"], strict=True)]
    return pa.table(cols)


def _image_keys(campaign: Campaign) -> dict[int, str]:
    return {pk: (key or url) for pk, key, url in
            Image.objects.filter(campaign=campaign).values_list("id", "file", "source_url").iterator(chunk_size=5000)}


def _question_table(campaign: Campaign, data: CampaignData, keys_of_image: dict[int, str],
                    options: ReportOptions) -> pa.Table:
    assert data.table is not None
    q = data.table.questions
    labels = label_table(data, options)
    pool_pos = np.searchsorted(data.q_id, q.id)
    pool_pos = np.minimum(pool_pos, max(data.q_id.size - 1, 0))
    in_pool = (data.q_id[pool_pos] == q.id) if data.q_id.size else np.zeros(q.id.size, dtype=bool)
    label = np.where(in_pool, labels.labels[pool_pos] if data.q_id.size else "", "")
    tie = np.where(in_pool, labels.ties[pool_pos] if data.q_id.size else False, False)
    votes = labels.counts.sum(axis=1) if data.q_id.size else np.zeros(0, dtype=np.int64)
    counted_answers = np.where(in_pool, votes[pool_pos] if data.q_id.size else 0, 0)
    cols: dict[str, Any] = {
        "question_id": q.id, "image_id": q.image,
        "image_key": [keys_of_image.get(int(i), "") for i in q.image.tolist()],
        "setting": q.setting.astype(str), "slot": (q.slot if q.slot is not None else np.full(q.id.size, "")).astype(str),
        "is_gold": q.is_gold, "image_excluded": q.excluded,
        **{k: v.astype(str) for k, v in q.meta.items()},
        "counted": in_pool, "answers_counted": counted_answers.astype(np.int64),
        "label": label.astype(str), "tie": tie.astype(bool),
        **question_extras(campaign, q.id),
    }
    return pa.table(cols)


class _Coded:
    """A text column given per entity (question, annotator, choice) and read per answer: its distinct
    values once, then each chunk's rows as dictionary indices decoded by Arrow (no Python string per
    answer: the 1M-answer build in bench/README.md)."""

    def __init__(self, values: np.ndarray | list[str], index: np.ndarray | None = None) -> None:
        if index is None:
            uniq, inverse = np.unique(np.asarray(values, dtype=str), return_inverse=True)
            self.dictionary, self.index = pa.array(uniq.tolist(), type=pa.string()), inverse.astype(np.int32)
        else:
            self.dictionary, self.index = pa.array(list(values), type=pa.string()), index.astype(np.int32)

    def take(self, rows: np.ndarray) -> pa.Array:
        if rows.size == 0:
            return pa.array([], type=pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(self.index[rows]), self.dictionary).cast(pa.string())


def _write_answers(data: CampaignData, keys_of_image: dict[int, str], blocked: set[int], numbers: dict[int, int],
                   path: str) -> int:
    """answers.parquet in row groups of CHUNK rows; returns the number of annotators."""
    assert data.table is not None
    t = data.table
    a, q = t.answers, t.questions
    ids = np.fromiter(sorted(numbers), np.int64, len(numbers))
    width = pseudonym_width(len(numbers))
    annotator = _Coded([pseudonym(numbers[int(i)], width) for i in ids.tolist()],
                       np.searchsorted(ids, a.annotator) if ids.size else np.zeros(a.id.size, np.int64))
    n_annotators = int(np.unique(a.annotator).size)
    order = arrival(a.question, a.id)
    choice = _Coded(list(a.choices), a.code)
    q_image = q.image
    per_question = {"image_key": _Coded([keys_of_image.get(int(i), "") for i in q_image.tolist()]),
                    "setting": _Coded(q.setting), **{k: _Coded(v) for k, v in q.meta.items()}}
    is_blocked = np.isin(a.annotator, np.fromiter(blocked, dtype=np.int64, count=len(blocked)))
    found = (q.id[t.q_row] == a.question) if q.id.size else np.zeros(a.id.size, dtype=bool)
    counted = found & ~t.superseded & ~q.is_gold[t.q_row] & ~q.excluded[t.q_row] & ~is_blocked if q.id.size else found
    writer: pq.ParquetWriter | None = None
    try:
        for start in range(0, max(a.id.size, 1), CHUNK):
            part = slice(start, start + CHUNK)
            rows = t.q_row[part]
            answer_rows = np.arange(start, start + rows.size)
            time_ms = a.time_ms[part] if a.time_ms is not None else np.full(rows.size, -1)
            created = a.created_us[part] if a.created_us is not None else np.zeros(rows.size, dtype=np.int64)
            corrects = a.corrects[part]
            coded = {k: c.take(rows) for k, c in per_question.items()}
            cols: dict[str, Any] = {
                "answer_id": pa.array(a.id[part]), "question_id": pa.array(a.question[part]),
                "arrival": pa.array(order[part]),
                "image_id": pa.array(q_image[rows] if rows.size else np.zeros(0, np.int64)),
                "image_key": coded.pop("image_key"),
                "annotator": annotator.take(answer_rows),
                "choice": choice.take(answer_rows),
                "time_ms": pa.array(time_ms, mask=time_ms < 0, type=pa.int64()),
                "created_at": pa.array(created.astype("datetime64[us]"), type=pa.timestamp("us", tz="UTC")),
                "setting": coded.pop("setting"),
                **coded,
                "is_gold": pa.array(q.is_gold[rows] if rows.size else np.zeros(0, bool)),
                "image_excluded": pa.array(q.excluded[rows] if rows.size else np.zeros(0, bool)),
                "corrects_answer_id": pa.array(corrects, mask=corrects < 0, type=pa.int64()),
                "superseded": pa.array(t.superseded[part]),
                "annotator_blocked": pa.array(is_blocked[part]),
                "counted": pa.array(counted[part]),
            }
            table = pa.table(cols)
            if writer is None:
                writer = pq.ParquetWriter(path, table.schema, compression="zstd")
            writer.write_table(table)
    finally:
        if writer is not None:
            writer.close()
    return n_annotators


def _machine_labels(campaign: Campaign) -> pa.Table | None:
    """The `autolabel` app's machine labels of this campaign, when that app is installed (a hook:
    metrics does not import it). Every concrete field of its `MachineLabel` model, as stored."""
    if not apps.is_installed("autolabel"):
        return None
    try:
        model = apps.get_model("autolabel", "MachineLabel")
    except LookupError:
        return None
    names = {f.name for f in model._meta.get_fields()}
    if "campaign" in names:
        qs = model.objects.filter(campaign=campaign)
    elif "question" in names:
        qs = model.objects.filter(question__campaign=campaign)
    elif "image" in names:
        qs = model.objects.filter(image__campaign=campaign)
    else:
        return None
    fields = [f.attname for f in model._meta.concrete_fields]
    cols: dict[str, list[Any]] = {f: [] for f in fields}
    for row in qs.order_by("pk").values_list(*fields).iterator(chunk_size=5000):
        for f, v in zip(fields, row, strict=True):
            cols[f].append(json.dumps(v) if isinstance(v, (dict, list)) else v)
    return pa.table({f: pa.array(v) for f, v in cols.items()})


def _card(campaign: Campaign, report: dict[str, Any], n_annotators: int, n_answers: int, has_machine: bool,
          demographics: str = "none") -> str:
    """The dataset card (README.md of the package, Hugging Face front matter + Markdown).

    Long because it is one document written as data, section after section; splitting it would
    scatter one text over helpers with no logic of their own."""
    spec = campaign.spec
    design = spec.get("design") or {}
    license_ = ((spec.get("dataset") or {}).get("license")) or DEFAULT_LICENSE
    citation = (spec.get("dataset") or {}).get("citation") or ""
    counts, agreement = report["counts"], report["agreement"]["overall"]
    backend = spec.get("backend") or {}
    lines = ["---", f"license: {license_}", "pretty_name: " + json.dumps(campaign.name), "task_categories:",
             "- image-classification", "tags:", "- gender-bias", "- text-to-image", "- human-annotation",
             "configs:", "- config_name: answers", "  data_files: data/answers.parquet",
             "- config_name: questions", "  data_files: data/questions.parquet",
             "- config_name: images", "  data_files: data/images.parquet", "---", "",
             f"# {campaign.name}", "",
             (spec.get("description") or "A bias audit of a text-to-image model with human annotation.").strip(), "",
             "## Summary", "",
             *(f"- {line}" for line in (report.get("summary")
                                        or report_summary(report, aspect=design.get("aspect")))["lines"]), "",
             "## Design", "",
             f"- Kind: {campaign.get_kind_display()} (`{campaign.kind}`); settings: {', '.join(design.get('settings', []))}",
             f"- Generation backend: {backend.get('name')}" + (f", model `{backend.get('model')}`" if backend.get("model")
                                                             else ""),
             f"- Answers per question (R): {(spec.get('annotation') or {}).get('redundancy', 3)}; labels: majority "
             "vote of the counted answers, ties kept as `tie`",
             "- The full design is in `spec.json` (spec version 1, docs/spec.md of the product).", "",
             "## Counts", "",
             f"- Images: {counts.get('images', 0)} ({counts.get('images_excluded', 0)} excluded by the researcher)",
             f"- Questions: {counts.get('questions', 0)} counted; answers stored: {n_answers}, counted: "
             f"{counts.get('answers', 0)}; annotators: {n_annotators}",
             f"- Tied questions: {counts.get('ties', 0)}", "",
             "## Agreement", "",
             f"- Krippendorff's alpha (nominal): {agreement.get('krippendorff_alpha')}",
             f"- Fleiss' kappa: {agreement.get('fleiss_kappa')}; percent agreement: {agreement.get('percent_agreement')}",
             "", "## Headline scores (report.json, default options)", ""]
    if campaign.kind == PST:
        for s in PST_SETTINGS:
            if s in report.get("pst", {}):
                sec = report["pst"][s]
                lines.append(f"- STS {s}: {sec['overall']} (95% CI {sec.get('overall_ci')})")
    else:
        for s in GEP_SETTINGS:
            if s in report.get("gep", {}):
                sec = report["gep"][s]
                lines.append(f"- GEP score {s}: {sec['score']} (95% CI {sec.get('score_ci')})")
    lines += ["", "## Files", "",
              "- `data/answers.parquet`: one row per stored answer (corrections kept: `superseded`, "
              "`corrects_answer_id`); `annotator` is a pseudonym (`annotator_0001`, ... in order of first "
              "answer); `counted` marks the answers the report uses (latest correction, not gold, not on an "
              "excluded image, not from a blocked annotator); question metadata columns and `image_key` (the "
              "image's storage key, or its source URL)",
              "- `data/questions.parquet`: one row per question with its metadata, `counted` and the report's `label`",
              "- `data/images.parquet`: one row per image (prompt, seed, provenance, sha256, exclusion)",
              "- `data/machine_labels.parquet`: machine labels" if has_machine else "- No machine labels.",
              "- `data/machine_label_failures.parquet`, `data/human_sample.parquet`, `data/clip_scores.parquet`: "
              "the questions each labeller failed on, the images drawn into the human sample, the CLIPScores"
              if has_machine else "",
              ("- `data/annotators.parquet`: the demographics of the annotators who consented to their publication "
               f"({'all of them' if demographics == 'all' else 'some of them'})" if demographics != "none" else
               "- No per-annotator demographics (the campaign did not ask for consent to publish them): the "
               "report's `annotators` section is left out"),
              "- `package.json` (campaign facts, the report options' defaults, blocked annotators), `spec.json`, "
              "`report.json` (the default options' report)", "",
              "## Recompute the report from this package", "",
              "With the product's code installed (no database needed; the same figures as the server's report "
              "for the same options and seed):", "", "```bash",
              "python manage.py report --package this-package.zip --n-boot 1000 --seed 7 > report.json",
              "python manage.py report --package this-package.zip --format html --out report.html", "```", "",
              "```python", "from metrics.package import report_from_package",
              "report = report_from_package(\"this-package.zip\", n_boot=1000, seed=7, treatment=\"paper\")",
              "```", "",
              "Options (defaults in `package.json`): `treatment`, `gep_tie_policy`, `aggregation`, `n_boot`, "
              "`n_perm`, `seed`, `confidence`, `exclude_blocked`, `min_group`, `source` (`human`, a labeller "
              "of `data/machine_labels.parquet`, or `hybrid:<labeller>`). The product's docs/metrics.md shows how "
              "to extend the statistics from the same tables.", "",
              "## How to load", "", "```python", "import pandas as pd",
              "answers = pd.read_parquet(\"data/answers.parquet\")",
              "counted = answers[answers.counted]", "", "from datasets import load_dataset",
              "answers_ds = load_dataset(\"parquet\", data_files=\"data/answers.parquet\", split=\"train\")",
              "questions_ds = load_dataset(\"parquet\", data_files=\"data/questions.parquet\", split=\"train\")",
              "# (one table per call: the tables have different columns)",
              "```", "", "## License", "", f"{license_}" + ("" if license_ != DEFAULT_LICENSE else
                                                          ": no license was set in the spec (`dataset.license`); "
                                                          "ask the campaign's owner before redistributing."), ""]
    if citation:
        lines += ["## Citation", "", citation, ""]
    return "\n".join(lines)


def dataset_write(*, campaign: Campaign, out: IO[bytes],
                  progress: Callable[[float], None] | None = None) -> dict[str, Any]:
    """Write the replication package zip of `campaign` to the binary file `out`; returns a summary
    (`answers`, `questions`, `images`, `annotators`, `machine_labels`, `demographics`, `files`).
    `progress(fraction)` is called between the steps (the worker records it for the API's 202)."""
    step = progress or (lambda fraction: None)
    options = ReportOptions()
    # One extraction for both: the answer table's data also builds report.json when no snapshot has it.
    data = campaign_data(campaign, exclude_blocked=options.exclude_blocked, table=True)
    step(0.2)
    _, report = report_get(campaign=campaign, options=options, allow_async=False, data=data)
    step(0.4)
    blocked_ids = set(Enrollment.objects.filter(campaign=campaign, status=Enrollment.Status.BLOCKED)
                      .values_list("annotator_id", flat=True))
    assert data.table is not None
    blocked_arr = np.fromiter(blocked_ids, np.int64, len(blocked_ids))
    numbers = annotator_numbers(data.table.answers.annotator, blocked_arr)
    demographics, coverage = demographics_table(campaign, numbers, data.demographics)
    if coverage != "all":  # aggregates of people the package cannot name are not published either
        report = {k: v for k, v in report.items() if k != "annotators"}
    keys_of_image = _image_keys(campaign)
    images = _image_table(campaign)
    machine = _machine_labels(campaign)
    extras = machine_tables(campaign) if machine is not None else {}
    if demographics is not None:
        extras["annotators"] = demographics
    with tempfile.TemporaryDirectory(prefix="dataset-") as tmp:
        answers_path = os.path.join(tmp, "answers.parquet")
        n_annotators = _write_answers(data, keys_of_image, blocked_ids, numbers, answers_path)
        step(0.7)
        questions = _question_table(campaign, data, keys_of_image, options)
        pq.write_table(questions, os.path.join(tmp, "questions.parquet"), compression="zstd")
        pq.write_table(images, os.path.join(tmp, "images.parquet"), compression="zstd")
        if machine is not None:
            pq.write_table(machine, os.path.join(tmp, "machine_labels.parquet"), compression="zstd")
        for name, table in extras.items():
            pq.write_table(table, os.path.join(tmp, f"{name}.parquet"), compression="zstd")
        step(0.8)
        n_answers = int(data.table.answers.id.size)
        labellers = sorted(set(machine.column("labeller").to_pylist())) if machine is not None else []
        blocked_names = pseudonyms(blocked_arr, numbers).tolist()
        image_counts = {k: int(data.counts.get(k, 0)) for k in IMAGE_COUNTS}
        meta = manifest(campaign, options=options.to_dict(), image_counts=image_counts, blocked=sorted(blocked_names),
                        demographics=coverage, labellers=labellers, has_sample=bool(
                            extras.get("human_sample") is not None and extras["human_sample"].num_rows))
        if coverage == "all" and data.demographics_release is not None:
            # The release the annotators section is keyed by (docs/security.md): its members present
            # in the package, by pseudonym, so a report from the package has the same section.
            release = data.demographics_release
            width = pseudonym_width(len(numbers))
            meta["demographics_release"] = {
                **{k: v for k, v in release.items() if k != "members"},
                "members": sorted(pseudonym(numbers[a], width) for a in release["members"] if a in numbers)}
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("README.md", _card(campaign, report, n_annotators, n_answers, machine is not None, coverage))
            z.writestr("package.json", json.dumps(meta, indent=2, ensure_ascii=False))
            z.writestr("spec.json", json.dumps(campaign.spec, indent=2, ensure_ascii=False))
            z.writestr("report.json", json.dumps(report, indent=2, ensure_ascii=False))
            for name in ("answers", "questions", "images", "machine_labels", *extras):
                path = os.path.join(tmp, f"{name}.parquet")
                if os.path.exists(path):
                    z.write(path, f"data/{name}.parquet", compress_type=zipfile.ZIP_STORED)  # already zstd
            files = z.namelist()
    step(1.0)
    return {"answers": n_answers, "questions": int(questions.num_rows), "images": int(images.num_rows),
            "annotators": n_annotators, "machine_labels": machine is not None, "demographics": coverage,
            "files": files}


def dataset_tempfile(*, campaign: Campaign) -> IO[bytes]:
    """The package in an anonymous temporary file (deleted when closed), rewound for streaming."""
    handle = tempfile.TemporaryFile(prefix=f"campaign-{campaign.pk}-dataset-")
    try:
        dataset_write(campaign=campaign, out=handle)
    except BaseException:
        handle.close()
        raise
    handle.seek(0)
    return handle


__all__ = ["CHUNK", "DEFAULT_LICENSE", "dataset_tempfile", "dataset_write"]

"""The report from a replication package alone: no database.

`package_load(source)` reads the zip (a path or a binary file) into the columns the extraction's
readers return (`QuestionColumns`, `AnswerColumns`, the blocked annotators, the image counts);
`metrics.extract.assemble` turns them into the same `CampaignData` the server's extract step builds,
and the same code computes the report (`metrics.snapshots.report.report_compute`, what the server's
`report_build` runs; the redundancy block from the same two counts as
`annotation.selectors.redundancy_spent`). The figures are therefore the server's
by construction; `tests/metrics/test_package_report.py` holds them equal key by key.

Annotator ids are the package's pseudonym numbers (`annotator_0007` -> 7), which keep the order of
the account ids, so orderings over annotators are the server's too.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass, field
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from annotation.redundancy import is_adaptive, redundancy_summary
from annotation.spec_section import annotation_settings
from autolabel.selectors import raw_similarity
from common.errors import ApplicationError
from common.inputs import json_loads
from common.zipsafe import SafeZip
from metrics.extract import assemble
from metrics.extract.data import AnswerColumns, CampaignData, CampaignFacts, QuestionColumns
from metrics.extract.machine import MachineData, machine_data_from
from metrics.options import ReportOptions
from metrics.snapshots.report import report_compute

FORMATS = (2,)
# What the reader accepts (every member read through common.zipsafe, CRC checked): a 10M-answer
# package's answers.parquet is ~90 MB (bench/README.md).
MAX_JSON_BYTES = 64 * 2**20
MAX_TABLE_BYTES = 4 * 2**30
MAX_TOTAL_BYTES = 16 * 2**30
PREFIX = "annotator_"


@dataclass
class Package:
    """A loaded replication package: the readers' columns and the tables beside them."""

    facts: CampaignFacts
    manifest: dict[str, Any]
    questions: QuestionColumns
    answers: AnswerColumns
    blocked: np.ndarray
    image_counts: dict[str, int]
    question_choices: dict[int, list[str]]
    demographics: dict[int, dict[str, Any]] | None
    tables: dict[str, pa.Table] = field(default_factory=dict)  # images, machine tables (as stored)

    def campaign_data(self, *, exclude_blocked: bool = True, table: bool = False) -> CampaignData:
        """What `metrics.extract.campaign_data` returns for the campaign when the package was built."""
        data = assemble(self.facts, self.questions, self.answers, self.blocked, self.image_counts,
                        exclude_blocked=exclude_blocked, table=table)
        data.demographics = dict(self.demographics or {})
        release = self.manifest.get("demographics_release")
        if isinstance(release, dict) and isinstance(release.get("members"), list):  # the section's release
            data.demographics_release = {**release, "members": [_number(str(n)) for n in release["members"]]}
        return data

    def machine_data(self, data: CampaignData, labeller: str) -> MachineData:
        """What `metrics.extract.machine.machine_data` returns (a 400 naming `source` when the package
        holds no label of that labeller, as the server says)."""
        labels = self.tables.get("machine_labels")
        names = sorted(set(labels.column("labeller").to_pylist())) if labels is not None else []
        if labeller not in names:
            known = ", ".join(names) if names else "none"
            raise ApplicationError(f"Invalid report parameter source: no labels from {labeller!r} on this campaign",
                                   errors={"source": [f"no machine labels from {labeller!r} (labellers: {known})"]})
        assert labels is not None
        gold = dict(zip(self.questions.id.tolist(), self.questions.is_gold.tolist(), strict=True))
        names_ = ("question_id", "labeller", "choice", "score", "model", "params")
        cols = {k: labels.column(k).to_pylist() if k in labels.column_names else [None] * labels.num_rows
                for k in names_}
        rows = sorted(({"question": q, "choice": c, "score": sc, "model": m, "raw": raw_similarity(_json(p)),
                        "choices": self.question_choices.get(q, [])}
                       for q, lab, c, sc, m, p in zip(*(cols[k] for k in names_), strict=True)
                       if lab == labeller and not gold.get(q, False)), key=lambda r: r["question"])
        sample = self.tables.get("human_sample")
        sampled = set(sample.column("image_id").to_pylist()) if sample is not None else set()
        return machine_data_from(data, labeller, rows=rows, sample=sampled, clipscore=self._clipscore())

    def _clipscore(self) -> list[dict[str, Any]]:
        clip, images = self.tables.get("clip_scores"), self.tables.get("images")
        if clip is None or images is None or clip.num_rows == 0:
            return []
        img = {i: (s, k, n) for i, s, k, n in zip(*(images.column(c).to_pylist() for c in
                                                    ("image_id", "setting", "prompt_key", "sample_index")), strict=True)}
        rows = [{"image": i, "setting": img.get(i, (None,) * 3)[0], "prompt_key": img.get(i, (None,) * 3)[1],
                 "sample_index": img.get(i, (None,) * 3)[2], "model": m, "score": sc}
                for i, m, sc in zip(*(clip.column(c).to_pylist() for c in ("image_id", "model", "score")), strict=True)]
        return sorted(rows, key=lambda r: (r["image"], r["model"]))

    def redundancy(self) -> dict[str, Any]:
        """The report's `redundancy` block (adaptive campaigns), as `metrics.extract.redundancy.redundancy_read`."""
        rule = annotation_settings(self.facts)["redundancy"]
        if not is_adaptive(rule):
            return {}
        q, a = self.questions, self.answers
        questions: dict[str, int] = {}
        for s in q.setting[~q.is_gold].tolist():
            questions[s] = questions.get(s, 0) + 1
        row = np.minimum(np.searchsorted(q.id, a.question), max(q.id.size - 1, 0))
        found = (q.id[row] == a.question) if q.id.size else np.zeros(a.id.size, dtype=bool)
        original = found & (a.corrects < 0)
        original &= ~q.is_gold[row] if q.id.size else original
        answers: dict[str, int] = {}
        for s in q.setting[row[original]].tolist():
            answers[s] = answers.get(s, 0) + 1
        return {"redundancy": redundancy_summary(rule, questions=questions, answers=answers)}


def _json(text: Any) -> Any:
    """A JSON column as the package stores it (machine_labels.parquet's `params`: JSON text)."""
    if not isinstance(text, str):
        return text
    try:
        return json_loads(text)
    except ApplicationError:
        return None


def _member(z: SafeZip, name: str, limit: int) -> bytes | None:
    """A member's bytes (at most `limit`, CRC checked: common.zipsafe), None when absent."""
    return z.read(name, limit=limit) if z.exists(name) else None


def _parquet(z: SafeZip, name: str) -> pa.Table | None:
    raw = _member(z, f"data/{name}.parquet", MAX_TABLE_BYTES)
    return None if raw is None else pq.read_table(pa.BufferReader(raw))


def _texts(table: pa.Table, name: str) -> np.ndarray:
    if name not in table.column_names or table.num_rows == 0:
        return np.full(table.num_rows, "", dtype=str)
    values = table.column(name).to_pylist()
    return np.array(["" if v is None else str(v) for v in values], dtype=str)


def _ints(table: pa.Table, name: str, missing: int = -1) -> np.ndarray:
    col = table.column(name)
    return np.asarray(col.fill_null(missing).to_numpy(zero_copy_only=False), dtype=np.int64)


def _annotator_numbers(names: pa.ChunkedArray) -> np.ndarray:
    """`annotator_0007` -> 7, through the dictionary (one parse per distinct name)."""
    arr = names.combine_chunks().dictionary_encode() if names.num_chunks else pa.array([], pa.string()).dictionary_encode()
    dictionary = [int(str(v)[len(PREFIX):]) for v in arr.dictionary.to_pylist()]
    lookup = np.asarray(dictionary, dtype=np.int64)
    return lookup[np.asarray(arr.indices.to_numpy(zero_copy_only=False), dtype=np.int64)] if len(arr) else \
        np.zeros(0, dtype=np.int64)


def _questions(table: pa.Table, keys: tuple[str, ...]) -> tuple[QuestionColumns, dict[int, list[str]]]:
    ids = _ints(table, "question_id")
    order = np.argsort(ids, kind="stable")
    table = table.take(pa.array(order))
    ids = ids[order]
    texts = table.column("choices").to_pylist()
    parsed = {t: json_loads(t) for t in set(texts)}  # a few distinct lists
    choices = {int(q): parsed[t] for q, t in zip(ids.tolist(), texts, strict=True)}
    return QuestionColumns(
        id=ids, image=_ints(table, "image_id"),
        setting=_texts(table, "setting"),
        is_gold=np.asarray(table.column("is_gold").to_numpy(zero_copy_only=False), dtype=bool),
        excluded=np.asarray(table.column("image_excluded").to_numpy(zero_copy_only=False), dtype=bool),
        meta={k: _texts(table, k) for k in keys}, slot=_texts(table, "slot")), choices


def _answers(table: pa.Table) -> AnswerColumns:
    ids = _ints(table, "answer_id")
    if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        table = table.take(pa.array(np.argsort(ids, kind="stable")))
        ids = _ints(table, "answer_id")
    choice = table.column("choice").combine_chunks() if table.num_rows else pa.array([], pa.string())
    encoded = choice.dictionary_encode()
    values = [str(v) for v in encoded.dictionary.to_pylist()]
    choices = sorted(values)
    remap = np.asarray([choices.index(v) for v in values], dtype=np.int64)
    codes = remap[np.asarray(encoded.indices.to_numpy(zero_copy_only=False), dtype=np.int64)] if len(encoded) else \
        np.zeros(0, dtype=np.int64)
    created = table.column("created_at").cast(pa.timestamp("us", tz="UTC")).cast(pa.int64())
    return AnswerColumns(id=ids, question=_ints(table, "question_id"),
                         annotator=_annotator_numbers(table.column("annotator")), code=codes,
                         corrects=_ints(table, "corrects_answer_id"), choices=choices,
                         time_ms=_ints(table, "time_ms"),
                         created_us=np.asarray(created.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64))


def _number(name: str) -> int:
    return int(name[len(PREFIX):])


def package_load(source: str | os.PathLike[str] | IO[bytes]) -> Package:
    """Read a replication package (a path, or a binary file open for reading)."""
    try:
        z = SafeZip(source if not isinstance(source, os.PathLike) else os.fspath(source), field="package")
    except OSError as exc:
        raise ApplicationError(f"Not a replication package: {exc}", errors={"package": [str(exc)]}) from exc
    with z:
        unsafe = z.problems(max_total=MAX_TOTAL_BYTES)
        if unsafe:
            raise ApplicationError(f"Not a replication package: {unsafe[0]}", errors={"package": unsafe})
        raw = _member(z, "package.json", MAX_JSON_BYTES)
        if raw is None:
            raise ApplicationError("This replication package has no package.json (built before the report could "
                                   "be recomputed from a package): download it again",
                                   errors={"package": ["format 1: no package.json"]})
        manifest = json_loads(raw)
        if manifest.get("format") not in FORMATS:
            raise ApplicationError(f"Unknown replication package format {manifest.get('format')!r}",
                                   errors={"package": [f"format must be one of {FORMATS}"]})
        spec = json_loads(z.read("spec.json", limit=MAX_JSON_BYTES))
        c = manifest["campaign"]
        facts = CampaignFacts(id=int(c["id"]), name=c["name"], kind=c["kind"], kind_display=c["kind_display"],
                              status=c["status"], seed=int(c["seed"]), spec=spec)
        tables = {name: t for name in ("images", "machine_labels", "machine_label_failures", "human_sample",
                                       "clip_scores", "annotators") if (t := _parquet(z, name)) is not None}
        q_table, a_table = _parquet(z, "questions"), _parquet(z, "answers")
    if q_table is None or a_table is None:
        raise ApplicationError("The replication package lacks its question or answer table",
                               errors={"package": ["data/questions.parquet and data/answers.parquet are required"]})
    questions, choices = _questions(q_table, facts.meta_keys)
    blocked = np.array(sorted(_number(n) for n in manifest.get("blocked_annotators", [])), dtype=np.int64)
    demographics = None
    if "annotators" in tables:
        t = tables["annotators"]
        cols = [k for k in t.column_names if k != "annotator"]
        demographics = {_number(n): {k: v for k in cols if (v := t.column(k)[i].as_py()) is not None}
                        for i, n in enumerate(t.column("annotator").to_pylist())}
    return Package(facts=facts, manifest=manifest, questions=questions, answers=_answers(a_table), blocked=blocked,
                   image_counts={k: int(v) for k, v in manifest.get("image_counts", {}).items()},
                   question_choices=choices, demographics=demographics, tables=tables)


def package_report(package: Package, options: ReportOptions) -> dict[str, Any]:
    """The report of a loaded package (`metrics.snapshots.report.report_compute`, as
    `report_build` runs it, on the package's data)."""
    data = package.campaign_data(exclude_blocked=options.exclude_blocked)
    mdata = package.machine_data(data, options.labeller) if options.labeller else None
    report = report_compute(data, mdata, options, redundancy=package.redundancy())
    if package.manifest.get("demographics") != "all":  # the package cannot name every group: left out
        report.pop("annotators", None)
    return report


def report_options(package: Package, **options: Any) -> ReportOptions:
    """The package's option defaults (package.json) with `options` over them (validated: a 400-style
    ApplicationError naming each bad one)."""
    return ReportOptions.from_dict({**(package.manifest.get("report_options") or {}), **options})


def report_from_package(path_or_file: str | os.PathLike[str] | IO[bytes] | bytes, /,
                        **options: Any) -> dict[str, Any]:
    """The report recomputed from a replication package: `report_from_package("pkg.zip", n_boot=1000,
    seed=7, source="hybrid:clip_cls")`. The keyword options are `ReportOptions`' fields."""
    package = package_load(io.BytesIO(path_or_file) if isinstance(path_or_file, bytes) else path_or_file)
    return package_report(package, report_options(package, **options))

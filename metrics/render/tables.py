"""The CSV zip of a report: answers.csv and labels.csv from the extracted data, then each section's
tables (registered renderers), then README.txt. Pure: everything comes from the arguments."""
from __future__ import annotations

import io
import zipfile
from typing import Any, TextIO

import numpy as np
import pandas as pd

from common.csvsafe import csv_cell, csv_frame, csv_writer
from metrics.extract.data import AnswerTable, CampaignData, CampaignFacts
from metrics.sections.labels import LabelTable

from .methods import methods_sentence
from .registry import Table, sections_of

ANSWER_COLUMNS = ["answer_id", "question_id", "image_id", "annotator_id", "choice", "time_ms", "created_at",
                  "setting", "slot", "is_gold", "image_excluded", "corrects_answer_id", "superseded"]
CHUNK = 100_000  # answers.csv rows formatted at once (bounded memory)


def _csv_table(table: Table) -> str:
    buf = io.StringIO()
    writer = csv_writer(buf, lineterminator="\n")  # spreadsheet-safe cells (common/csvsafe.py)
    writer.writerow(table.header)
    writer.writerows(table.rows)
    return buf.getvalue()


def _quote(value: str) -> str:
    """A text field, always quoted (so every row has the same shape whatever the text holds), and
    neutralised for spreadsheets (common/csvsafe.py: `=...` is written `'=...`)."""
    return '"' + csv_cell(value).replace('"', '""') + '"'


def answers_csv_write(table: AnswerTable, keys: tuple[str, ...], out: TextIO, *, chunk: int = CHUNK) -> None:
    """answers.csv: header, then every stored answer in id order with its question's columns. Text
    fields are always quoted; times are UTC with microseconds; empty for no time or no correction.

    Per-question parts are formatted once, then each answer row is one format of ints and parts."""
    a, q = table.answers, table.questions
    if a.time_ms is None or a.created_us is None or q.slot is None:
        raise ValueError("answers.csv needs the answer table's columns: extract with table=True")
    out.write(",".join([*ANSWER_COLUMNS, *keys]) + "\n")
    if a.id.size == 0:
        return
    flag = ("False", "True")
    choice = [_quote(c) for c in a.choices]
    q_image = q.image.tolist()
    q_mid = [f"{_quote(s)},{_quote(sl)},{flag[g]},{flag[e]}"
             for s, sl, g, e in zip(q.setting.tolist(), q.slot.tolist(), q.is_gold.tolist(), q.excluded.tolist(),
                                    strict=True)]
    meta = [q.meta[k].tolist() for k in keys]
    q_meta = [",".join(_quote(col[i]) for col in meta) for i in range(q.id.size)]
    for start in range(0, a.id.size, chunk):
        part = slice(start, start + chunk)
        created = np.datetime_as_string(a.created_us[part].astype("datetime64[us]"), unit="us").tolist()
        rows = zip(a.id[part].tolist(), a.question[part].tolist(), table.q_row[part].tolist(),
                   a.annotator[part].tolist(), a.code[part].tolist(), a.time_ms[part].tolist(),
                   created, a.corrects[part].tolist(), table.superseded[part].tolist(), strict=True)
        out.write("".join(
            f"{aid},{qid},{q_image[r]},{who},{choice[c]},{'' if t < 0 else t},{at}+00:00,{q_mid[r]},"
            f"{'' if x < 0 else x},{flag[s]},{q_meta[r]}\n"
            for aid, qid, r, who, c, t, at, x, s in rows))


def labels_csv(data: CampaignData, labels: LabelTable) -> str:
    """labels.csv: label, tie flag and vote counts of each question of the report."""
    keys = data.campaign.meta_keys
    counts = labels.counts
    votes = np.full(data.q_id.size, "", dtype=object)
    for j, choice in enumerate(data.choices):
        part = np.where(counts[:, j] > 0, np.char.add(f"{choice}=", counts[:, j].astype(str)), "")
        votes = np.where((votes != "") & (part != ""), votes + ";" + part, votes + part)
    frame = pd.DataFrame({"question_id": data.q_id, "image_id": data.q_image, "setting": data.q_setting,
                          **{k: data.q_meta[k] for k in keys}, "label": labels.labels, "tie": labels.ties,
                          "answers": counts.sum(axis=1), "votes": votes})
    return csv_frame(frame, index=False, lineterminator="\n")


def readme(campaign: CampaignFacts, report: dict[str, Any]) -> str:
    opts = report["options"]
    return (f"Report of campaign {campaign.pk} ({campaign.name}, {campaign.kind}).\n"
            f"Options: {opts}.\n"
            "STS in percent (-100..100); GEP frequencies, vectors and scores as fractions.\n"
            f"{methods_sentence(report)}\n"
            "answers.csv holds every stored answer; `superseded` answers were replaced by a correction and\n"
            "are not used; gold questions and excluded images are not used in the figures.\n")


def report_csv_zip(*, report: dict[str, Any], data: CampaignData, labels: LabelTable) -> bytes:
    """answers.csv (long format, every stored answer with its question metadata), labels.csv
    (aggregated label per question with vote counts), then each section's tables (agreement.csv,
    pst_identity.csv or gep_frequencies.csv + gep_context.csv, ...), warnings.csv when the report
    has warnings, README.txt."""
    if data.table is None:
        raise ValueError("the CSV export needs the answer table: extract with table=True")
    campaign = data.campaign
    out = io.BytesIO()
    # Level 1: a large answers.csv compresses nearly as well and several times faster than the default.
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        with zf.open("answers.csv", "w") as raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
            answers_csv_write(data.table, campaign.meta_keys, text)
        zf.writestr("labels.csv", labels_csv(data, labels))
        for renderer, section in sections_of(report):
            for table in renderer.tables(section, campaign):
                zf.writestr(table.name, _csv_table(table))
        if report.get("warnings"):  # figures or sections left out or flagged, and why
            zf.writestr("warnings.csv", _csv_table(Table("warnings.csv", ["path", "message"],
                                                         [[w["path"], w["message"]] for w in report["warnings"]])))
        zf.writestr("README.txt", readme(campaign, report))
    return out.getvalue()

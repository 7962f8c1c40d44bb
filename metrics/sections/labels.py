"""The label of each question: the majority vote of its effective answers (ties kept as "tie"), or
Dawid-Skene (`aggregation="dawid_skene"`); with its votes, the table of labels.csv."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics.core import aggregation
from metrics.extract.data import CampaignData
from metrics.options import ReportOptions


def question_labels(data: CampaignData, options: ReportOptions) -> tuple[np.ndarray, np.ndarray]:
    """(label per question aligned with data.q_id, '' where unanswered), (is_tie per question)."""
    if data.a_qidx.size == 0:
        return np.full(data.q_id.size, "", dtype=str), np.zeros(data.q_id.size, dtype=bool)
    if options.aggregation == "dawid_skene":
        result = aggregation.dawid_skene(data.a_qidx, data.a_annotator, data.a_code, seed=options.seed or 0)
        labels = np.full(data.q_id.size, "", dtype=object)
        ties = np.zeros(data.q_id.size, dtype=bool)
        names = np.asarray(data.choices + [aggregation.TIE], dtype=object)
        codes = np.array([len(data.choices) if lab == aggregation.TIE else int(lab) for lab in result.labels])
        labels[result.item_ids.astype(np.int64)] = names[codes]
        ties[result.item_ids.astype(np.int64)] = result.is_tie
        return labels.astype(str), ties
    return aggregation.majority_labels_from_counts(data.vote_counts(), data.choices, missing_value="")


@dataclass(frozen=True)
class LabelTable:
    """The label of each question of the data (aligned with `data.q_id`), for labels.csv."""

    labels: np.ndarray  # str, '' where unanswered, "tie" for a tie
    ties: np.ndarray    # bool
    counts: np.ndarray  # questions x choices vote counts


def label_table(data: CampaignData, options: ReportOptions) -> LabelTable:
    labels, ties = question_labels(data, options)
    return LabelTable(labels, ties, data.vote_counts())

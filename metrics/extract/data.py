"""The data a report is computed from and rendered with: plain values and numpy arrays, no model
instances, so the report and its rendering never reach the database."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from campaigns.spec import PST

# Question metadata keys read per campaign kind (the contract of GET /api/campaigns/{id}/questions/).
PST_KEYS = ("identity", "group", "position", "sample_index", "template_index")
GEP_KEYS = ("gender", "attribute", "context", "sample_index", "template_index")


@dataclass(frozen=True)
class CampaignFacts:
    """What the report and its pages say about the campaign itself (read from the row already loaded)."""

    id: int
    name: str
    kind: str
    kind_display: str
    status: str
    seed: int
    spec: dict[str, Any]

    @property
    def pk(self) -> int:
        return self.id

    @property
    def meta_keys(self) -> tuple[str, ...]:
        return PST_KEYS if self.kind == PST else GEP_KEYS

    @classmethod
    def of(cls, campaign: Any) -> CampaignFacts:
        """From a Campaign row (attribute reads only: no query)."""
        return cls(id=campaign.pk, name=campaign.name, kind=campaign.kind, kind_display=campaign.get_kind_display(),
                   status=campaign.status, seed=int(campaign.seed), spec=campaign.spec)


@dataclass
class QuestionColumns:
    """Every question of the campaign (gold ones and those on excluded images too), sorted by id, as
    a reader returns them. Metadata values are the stored text ('' when missing)."""

    id: np.ndarray        # int64
    image: np.ndarray     # int64
    setting: np.ndarray   # str
    is_gold: np.ndarray   # bool
    excluded: np.ndarray  # bool: its image was excluded by the researcher
    meta: dict[str, np.ndarray]
    slot: np.ndarray | None = None  # str; read only for the answer table


@dataclass
class AnswerColumns:
    """Every stored answer of the campaign, sorted by id, as a reader returns them."""

    id: np.ndarray         # int64
    question: np.ndarray   # int64 question id
    annotator: np.ndarray  # int64
    code: np.ndarray       # int64 index into `choices`
    corrects: np.ndarray   # int64 id of the answer it corrects, -1 for none
    choices: list[str]     # sorted
    time_ms: np.ndarray | None = None     # int64, -1 for none; read only for the answer table
    created_us: np.ndarray | None = None  # int64 microseconds since 1970-01-01 UTC; idem


@dataclass
class AnswerTable:
    """What answers.csv holds: every stored answer (superseded, gold, on excluded images, of blocked
    annotators: all of them), by id, with its question's row in `questions`."""

    answers: AnswerColumns
    questions: QuestionColumns
    q_row: np.ndarray       # int64 row of each answer's question in `questions`
    superseded: np.ndarray  # bool: a later correction replaced this answer


@dataclass
class CampaignData:
    """Question arrays (one entry per question, sorted by id) and answer arrays (one entry per
    effective answer: the latest correction, not gold, not on an excluded image, not from a blocked
    annotator when those are excluded), with the campaign's facts; plus, when asked for, the full
    answer table of answers.csv. Everything a report and its exports need, read once."""

    campaign: CampaignFacts
    q_id: np.ndarray                 # int64, sorted
    q_image: np.ndarray              # int64
    q_setting: np.ndarray            # str
    q_meta: dict[str, np.ndarray]    # str columns ('' = missing); sample_index, template_index int64 (-1 = missing)
    a_qidx: np.ndarray               # int64 row into the question arrays
    a_annotator: np.ndarray          # int64
    a_code: np.ndarray               # int64 index into `choices`
    choices: list[str]
    counts: dict[str, int] = field(default_factory=dict)
    table: AnswerTable | None = None
    # Consented self-reported demographics per annotator enrolled in the campaign (annotator id ->
    # {"gender", "age_band", "country"}), for the `annotators` section only: never rendered per person.
    demographics: dict[int, dict[str, Any]] = field(default_factory=dict)
    # The numbered demographics release those come from (number, released_at, min_group, members):
    # the `annotators` section reports on its members only; None before the first release.
    demographics_release: dict[str, Any] | None = None
    # Answers spent vs the fixed-R design (the `redundancy` section), for adaptive redundancy only.
    redundancy: dict[str, Any] | None = None
    # Order of arrival per effective answer (the id of the answer its correction chain started with);
    # None: the answers' own order. Agreement under adaptive redundancy uses each question's first ones.
    a_arrival: np.ndarray | None = None

    def vote_counts(self) -> np.ndarray:
        """questions x choices vote counts (one bincount)."""
        k = max(1, len(self.choices))
        flat = np.bincount(self.a_qidx * k + self.a_code, minlength=self.q_id.size * k)
        return flat.reshape(self.q_id.size, k)

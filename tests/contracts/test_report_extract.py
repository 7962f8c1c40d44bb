"""Contract: the report extraction's portable twin (`metrics/extract/orm.py`, what SQLite runs) gives
exactly what the PostgreSQL fast path (`metrics/extract/pg.py`) gives, run side by side on
PostgreSQL: every array, count and choice, the answer table of answers.csv, and the report built from
them. On data with everything at once (tests.builders.metrics.messy_campaign): corrections and a
chain of them, blocked and paused annotators, gold questions, an excluded image, ties, unanswered
questions, missing metadata, and tabs, line breaks, quotes, commas, backslashes and non-ASCII text
in names, slots and choices."""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from common import fastpath
from metrics.extract import CampaignData, campaign_data
from metrics.options import ReportOptions
from metrics.sections.report import report_from_data
from tests.builders.metrics import ODD_TEXT, SMALL_GEP, SMALL_PST, messy_campaign

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _postgresql_only() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the contract runs both twins on PostgreSQL; CI runs it there")


def _portable(**kwargs: Any) -> CampaignData:
    with fastpath.forced("report_extract", False), fastpath.forced("answers_csv", False):
        return campaign_data(**kwargs)


def _arrays(data: CampaignData) -> dict[str, np.ndarray]:
    out = {"q_id": data.q_id, "q_image": data.q_image, "q_setting": data.q_setting, "a_qidx": data.a_qidx,
           "a_annotator": data.a_annotator, "a_code": data.a_code,
           **{f"meta.{k}": v for k, v in data.q_meta.items()}}
    if data.table is not None:
        t = data.table
        for name in ("id", "question", "annotator", "code", "corrects", "time_ms", "created_us"):
            out[f"answers.{name}"] = getattr(t.answers, name)
        for name in ("id", "image", "setting", "is_gold", "excluded", "slot"):
            out[f"questions.{name}"] = getattr(t.questions, name)
        out.update({f"questions.meta.{k}": v for k, v in t.questions.meta.items()})
        out.update({"q_row": t.q_row, "superseded": t.superseded})
    return out


def assert_same(fast: CampaignData, portable: CampaignData) -> None:
    assert fast.campaign == portable.campaign
    assert fast.choices == portable.choices
    assert fast.counts == portable.counts
    left, right = _arrays(fast), _arrays(portable)
    assert left.keys() == right.keys()
    for key in left:
        assert left[key].dtype.kind == right[key].dtype.kind, key
        assert left[key].shape == right[key].shape, key
        assert np.array_equal(left[key], right[key]), key


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
@pytest.mark.parametrize("seed", [1, 2])
def test_portable_extraction_equals_the_fast_path(researcher: User, spec: dict[str, Any], seed: int) -> None:
    campaign = messy_campaign(researcher, spec, seed=seed)
    for exclude_blocked in (True, False):
        for table in (False, True):
            fast = campaign_data(campaign, exclude_blocked=exclude_blocked, table=table)  # parallel, in a snapshot
            portable = _portable(campaign=campaign, exclude_blocked=exclude_blocked, table=table)
            assert_same(fast, portable)
            with transaction.atomic():  # the fast path's sequential reads, inside a transaction
                assert_same(campaign_data(campaign, exclude_blocked=exclude_blocked, table=table), portable)
    # The data really holds what the contract is about.
    data = campaign_data(campaign, table=True)
    c = data.counts
    assert c["answers_gold"] > 0 and c["answers_blocked"] > 0 and c["answers_excluded_images"] > 0
    assert data.table is not None and data.table.superseded.sum() > 3
    assert (data.table.answers.time_ms < 0).any()
    stored = set(data.table.questions.meta["identity" if spec["kind"] == "pst" else "context"].tolist())
    assert set(ODD_TEXT) <= stored and any(ch in data.choices for ch in ODD_TEXT)
    assert any("\n" in s for s in data.table.questions.slot.tolist())


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_the_report_from_either_twin_is_the_same(researcher: User, spec: dict[str, Any]) -> None:
    campaign = messy_campaign(researcher, spec, seed=3, odd_choices=False)
    for options in (ReportOptions(n_boot=40, n_perm=40), ReportOptions(n_boot=0, aggregation="dawid_skene"),
                    ReportOptions(n_boot=20, exclude_blocked=False, treatment="excluded", gep_tie_policy="present")):
        fast = report_from_data(campaign_data(campaign, exclude_blocked=options.exclude_blocked), options)
        portable = report_from_data(_portable(campaign=campaign, exclude_blocked=options.exclude_blocked), options)
        assert json.dumps(fast, sort_keys=True) == json.dumps(portable, sort_keys=True)
        assert fast["counts"]["ties"] > 0 or options.aggregation == "dawid_skene"  # majority keeps ties

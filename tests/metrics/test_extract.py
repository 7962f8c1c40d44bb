"""Report extraction on PostgreSQL: the two reads in parallel in one exported snapshot (outside a
transaction) give exactly what the sequential reads give (inside one); a stray tab or line break in a
stored name falls back to the cleaned transfer instead of shifting columns."""
from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.db import connection, transaction

from annotation.models import Answer, Enrollment, Question
from metrics.core._arrays import encode, index_in
from metrics.extract import campaign_data
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.metrics import (
    SMALL_GEP,
    SMALL_PST,
    annotators,
    answer_all,
    campaign_with_questions,
    gep_label,
    stereotyped,
)


def _arrays(data):
    return {"q_id": data.q_id, "q_image": data.q_image, "q_setting": data.q_setting, "a_qidx": data.a_qidx,
            "a_annotator": data.a_annotator, "a_code": data.a_code,
            **{f"meta_{k}": v for k, v in data.q_meta.items()}}


def _same(a, b):
    assert a.choices == b.choices and a.counts == b.counts
    left, right = _arrays(a), _arrays(b)
    assert left.keys() == right.keys()
    for key in left:
        assert left[key].dtype.kind == right[key].dtype.kind, key
        assert np.array_equal(left[key], right[key]), key


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("spec,label", [(SMALL_GEP, gep_label), (SMALL_PST, stereotyped)])
def test_parallel_snapshot_reads_equal_sequential_reads(researcher: User, spec, label) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("the parallel reads are PostgreSQL's; CI runs them there")
    campaign, questions = campaign_with_questions(researcher, spec)
    raters = annotators(4, "px-")
    answer_all(campaign, questions, label, raters)
    Enrollment.objects.create(campaign=campaign, annotator=raters[0], status=Enrollment.Status.BLOCKED)
    Question.objects.filter(pk=questions[0].pk).update(is_gold=True)
    first = Answer.objects.filter(campaign=campaign).order_by("pk").first()
    Answer.objects.create(campaign=campaign, question_id=first.question_id, annotator=first.annotator,
                          choice=first.choice, corrects=first, source="correction")
    assert not connection.in_atomic_block
    parallel = campaign_data(campaign)
    with transaction.atomic():
        sequential = campaign_data(campaign)
    _same(parallel, sequential)
    assert parallel.counts["answers_gold"] > 0 and parallel.counts["answers_blocked"] > 0
    assert not connection.in_atomic_block  # the snapshot transaction is closed again
    options = ReportOptions(n_boot=30)
    out = report_build(campaign=campaign, options=options)
    with transaction.atomic():
        assert report_build(campaign=campaign, options=options) == out


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["in\ta dress", "in\na dress", "line\rbreak", "tab\tat\tevery\trow",
                                 "trailing line break\n", "back\\slash\\t and \\n", "\\"])
def test_a_tab_or_line_break_in_a_stored_name_falls_back_to_the_escaped_transfer(researcher: User, bad) -> None:
    """The fast transfer cannot carry a tab or line break; the fallback escapes every text value and
    unescapes it after the parse, so the name comes back exactly as stored (as the portable reader
    returns it), and nothing else moves."""
    if connection.vendor != "postgresql":
        pytest.skip("the tab-separated transfer is PostgreSQL's; CI runs it there")
    campaign, questions = campaign_with_questions(researcher, SMALL_GEP)
    answer_all(campaign, questions, gep_label, annotators(3, "tb-"))
    clean = campaign_data(campaign)
    victims = questions if bad.startswith("tab\t") else questions[:3]
    for q in victims:
        q.metadata = {**q.metadata, "context": bad}
        q.save(update_fields=["metadata"])
    dirty = campaign_data(campaign)
    assert np.array_equal(dirty.q_id, clean.q_id) and np.array_equal(dirty.a_qidx, clean.a_qidx)
    assert np.array_equal(dirty.q_meta["gender"], clean.q_meta["gender"])
    assert np.array_equal(dirty.q_meta["sample_index"], clean.q_meta["sample_index"])
    changed = np.isin(dirty.q_id, [q.pk for q in victims])
    assert set(dirty.q_meta["context"][changed].tolist()) == {bad}
    assert np.array_equal(dirty.q_meta["context"][~changed], clean.q_meta["context"][~changed])


def test_index_in_and_encode_with_categories() -> None:
    values = np.array(["tie", "dress", "hat", "dress", ""], dtype=str)
    assert index_in(values, ["dress", "tie"]).tolist() == [1, 0, -1, 0, -1]
    assert index_in(np.array([], dtype=str), ["a"]).tolist() == []
    assert index_in(values, []).tolist() == [-1] * 5
    codes, cats = encode(np.array(["b", "a", "b"], dtype=str), ["b", "a", "c"])
    assert codes.tolist() == [0, 1, 0] and cats.tolist() == ["b", "a", "c"]
    with pytest.raises(ValueError, match="'x' is not one of the categories"):
        encode(np.array(["a", "x"], dtype=str), ["a", "b"])
    # Object arrays and non-string categories keep the general path.
    codes, _ = encode(np.array([2, 1, 2]), [1, 2])
    assert codes.tolist() == [1, 0, 1]

"""PST unit tests on small hand-computed examples."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.core import pst

# 2 identities; nurse (feminine stereotype), ceo (masculine stereotype)
IDS = np.array(["nurse"] * 5 + ["ceo"] * 5)
GROUPS = np.array(["female"] * 5 + ["male"] * 5)
STEREO = np.array(["feminine"] * 5 + ["masculine"] * 5)
LABELS = np.array(
    ["Feminine", "Feminine", "Masculine", "Cannot identify", "tie",
     "Masculine", "Masculine", "Masculine", "Feminine", None],
    dtype=object,
)


def test_stereo_values() -> None:
    s = pst.stereo(LABELS, STEREO)
    assert s.tolist() == [1, 1, -1, -1, -1, 1, 1, 1, -1, 0]


def test_overall_and_micro_under_both_treatments() -> None:
    # paper: 9 labelled persons, stereo sum 1+1-1-1-1+1+1+1-1 = 1
    assert pst.overall_sts(LABELS, STEREO) == pytest.approx(100 / 9)
    # excluded: 7 F/M persons, sum = 1+1-1+1+1+1-1 = 3
    assert pst.overall_sts(LABELS, STEREO, "excluded") == pytest.approx(300 / 7)
    assert pst.micro_sts(IDS, LABELS, STEREO) == pytest.approx({"nurse": -20.0, "ceo": 50.0})
    assert pst.micro_sts(IDS, LABELS, STEREO, "excluded") == pytest.approx(
        {"nurse": 100 / 3, "ceo": 50.0}
    )


def test_group_means_are_means_of_micro_sts() -> None:
    ids = np.array(["a", "a", "b", "b", "b", "b", "c"])
    groups = np.array(["g1", "g1", "g1", "g1", "g1", "g1", "g2"])
    stereo = np.array(["masculine"] * 7)
    labels = np.array(["Masculine", "Masculine", "Feminine", "Feminine", "Feminine", "Masculine", "Feminine"])
    # micro a = 100, b = -50 -> group mean 25 (a pooled mean would give 0)
    assert pst.group_sts(ids, groups, labels, stereo) == pytest.approx({"g1": 25.0, "g2": -100.0})


def test_group_mapping_must_be_consistent() -> None:
    with pytest.raises(ValueError):
        pst.group_sts(np.array(["a", "a"]), np.array(["g1", "g2"]), np.array(["Feminine"] * 2), np.array(["feminine"] * 2))


def test_percent_feminine_and_counts() -> None:
    assert pst.percent_feminine(IDS, LABELS) == pytest.approx({"nurse": 40.0, "ceo": 25.0})
    assert pst.percent_feminine(IDS, LABELS, "excluded") == pytest.approx({"nurse": 200 / 3, "ceo": 25.0})
    counts = pst.undetermined_counts(IDS, LABELS)
    assert counts["overall"] == {"feminine": 3, "masculine": 4, "cannot": 1, "tie": 1, "missing": 1, "persons": 10}
    assert counts["by_identity"]["nurse"]["cannot"] == 1 and counts["by_identity"]["ceo"]["missing"] == 1


def test_runs_and_gap() -> None:
    runs = np.array([1, 2] * 5)
    res = pst.sts_by_run(runs, LABELS, STEREO)
    # run 1: persons 0,2,4,6,8 -> 1-1-1+1-1 = -1 of 5; run 2: 1,3,5,7 (9 missing) -> 1-1+1+1 = 2 of 4
    assert res["runs"] == pytest.approx({1: -20.0, 2: 50.0})
    assert res["mean"] == pytest.approx(15.0)
    paired = {"overall": 40.0, "micro": {"nurse": 10.0, "ceo": 20.0, "x": 1.0}, "groups": {"female": 1.0}}
    single = {"overall": 10.0, "micro": {"nurse": 30.0, "ceo": -20.0}, "groups": {"female": 3.0}}
    gap = pst.sts_gap(paired, single)
    assert gap == {"overall": 30.0, "micro": {"nurse": -20.0, "ceo": 40.0}, "groups": {"female": -2.0}}


def test_report_has_both_treatments_and_counts() -> None:
    rep = pst.pst_report(IDS, GROUPS, STEREO, LABELS, image_ids=np.arange(10) // 2, runs=np.array([1, 2] * 5))
    assert rep["n_persons"] == 10 and rep["n_images"] == 5
    assert rep["paper"]["overall"] == pytest.approx(100 / 9)
    assert rep["excluded"]["overall"] == pytest.approx(300 / 7)
    assert rep["paper"]["groups"] == pytest.approx({"female": -20.0, "male": 50.0})
    assert set(rep["excluded"]["runs"]["runs"]) == {1, 2}
    assert rep["counts"]["overall"]["tie"] == 1


def test_unknown_label_is_rejected() -> None:
    with pytest.raises(ValueError):
        pst.stereo(np.array(["Femnine"]), np.array(["feminine"]))
    with pytest.raises(ValueError):
        pst.stereo(np.array(["Feminine"]), np.array(["female"]))


def test_report_matches_the_individual_functions_on_random_data() -> None:
    rng = np.random.default_rng(0)
    n = 500
    ids = rng.choice(np.array(["a", "b", "c", "d"]), n)
    group_of = {"a": "g1", "b": "g1", "c": "g2", "d": "g2"}
    groups = np.array([group_of[i] for i in ids])
    stereo = rng.choice(np.array(["feminine", "masculine"]), n)
    labels = rng.choice(np.array(["Feminine", "Masculine", "Cannot identify", "tie", None], dtype=object), n)
    runs = rng.integers(1, 4, n)
    rep = pst.pst_report(ids, groups, stereo, labels, runs=runs)
    for t in ("paper", "excluded"):
        assert rep[t]["overall"] == pytest.approx(pst.overall_sts(labels, stereo, t))
        assert rep[t]["micro"] == pytest.approx(pst.micro_sts(ids, labels, stereo, t))
        assert rep[t]["groups"] == pytest.approx(pst.group_sts(ids, groups, labels, stereo, t))
        assert rep[t]["percent_feminine"] == pytest.approx(pst.percent_feminine(ids, labels, t))
        assert rep[t]["runs"]["runs"] == pytest.approx(pst.sts_by_run(runs, labels, stereo, t)["runs"])
    assert rep["counts"] == pst.undetermined_counts(ids, labels)
    assert rep["paper"]["overall"] < rep["excluded"]["overall"] or rep["counts"]["overall"]["cannot"] == 0

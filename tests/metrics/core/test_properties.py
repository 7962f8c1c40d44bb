"""Property tests (hypothesis, small bounded example counts)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics.core import pst
from metrics.core.agreement import cohen_kappa, fleiss_kappa_from_counts, krippendorff_alpha

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def count_matrices(draw: st.DrawFn) -> np.ndarray:
    n_items = draw(st.integers(2, 12))
    n_cat = draw(st.integers(2, 4))
    n_raters = draw(st.integers(2, 6))
    rows = []
    for _ in range(n_items):
        cuts = sorted(draw(st.lists(st.integers(0, n_raters), min_size=n_cat - 1, max_size=n_cat - 1)))
        edges = [0, *cuts, n_raters]
        rows.append([edges[i + 1] - edges[i] for i in range(n_cat)])
    return np.array(rows)


@st.composite
def ratings_with_missing(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_items = draw(st.integers(2, 10))
    n_ann = draw(st.integers(2, 5))
    cells = draw(
        st.lists(st.one_of(st.none(), st.integers(0, 2)), min_size=n_items * n_ann, max_size=n_items * n_ann)
    )
    mat = np.array([np.nan if c is None else c for c in cells], dtype=float).reshape(n_ann, n_items)
    ann, item = np.nonzero(~np.isnan(mat))
    return item, ann, mat[ann, item]


@SETTINGS
@given(count_matrices(), st.permutations(range(4)))
def test_fleiss_kappa_range_and_relabelling_invariance(counts: np.ndarray, perm: list[int]) -> None:
    res = fleiss_kappa_from_counts(counts)
    cols = [p for p in perm if p < counts.shape[1]]
    permuted = fleiss_kappa_from_counts(counts[:, cols])
    if np.isnan(res.kappa):
        assert np.isnan(permuted.kappa) and res.reason
    else:
        assert -1.0 - 1e-9 <= res.kappa <= 1.0 + 1e-9
        assert permuted.kappa == np.float64(res.kappa) or abs(permuted.kappa - res.kappa) < 1e-9


@SETTINGS
@given(ratings_with_missing(), st.permutations(["F", "M", "C"]))
def test_krippendorff_alpha_range_and_relabelling_invariance(
    data: tuple[np.ndarray, np.ndarray, np.ndarray], names: list[str]
) -> None:
    items, ann, labels = data
    res = krippendorff_alpha(items, ann, labels)
    relabelled = np.array(names, dtype=object)[labels.astype(int)] if labels.size else labels
    res2 = krippendorff_alpha(items, ann, relabelled)
    if np.isnan(res.alpha):
        assert np.isnan(res2.alpha) and res.reason
    else:
        assert -1.0 - 1e-9 <= res.alpha <= 1.0 + 1e-9
        assert abs(res.alpha - res2.alpha) < 1e-9


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2)), min_size=2, max_size=40))
def test_cohen_kappa_range_and_symmetry(pairs: list[tuple[int, int]]) -> None:
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    k = cohen_kappa(a, b)
    if not np.isnan(k):
        assert -1.0 - 1e-9 <= k <= 1.0 + 1e-9
        assert abs(k - cohen_kappa(b, a)) < 1e-12
        assert abs(k - cohen_kappa(2 - a, 2 - b)) < 1e-12  # relabelling


FLIP = {"Feminine": "Masculine", "Masculine": "Feminine", "Cannot identify": "Cannot identify", "tie": "tie"}


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from(["nurse", "ceo", "cook"]), st.sampled_from(["Feminine", "Masculine"])),
        min_size=1,
        max_size=60,
    )
)
def test_sts_flips_sign_when_all_labels_flip(rows: list[tuple[str, str]]) -> None:
    stereo_of = {"nurse": "feminine", "ceo": "masculine", "cook": "masculine"}
    ids = np.array([r[0] for r in rows])
    labels = np.array([r[1] for r in rows])
    flipped = np.array([FLIP[x] for x in labels])
    stereotypes = np.array([stereo_of[i] for i in ids])
    for t in ("paper", "excluded"):
        assert pst.overall_sts(flipped, stereotypes, t) == -pst.overall_sts(labels, stereotypes, t)  # type: ignore[arg-type]
        m1 = pst.micro_sts(ids, labels, stereotypes, t)  # type: ignore[arg-type]
        m2 = pst.micro_sts(ids, flipped, stereotypes, t)  # type: ignore[arg-type]
        assert m1.keys() == m2.keys() and all(m2[k] == -m1[k] for k in m1)
    assert -100.0 <= pst.overall_sts(labels, stereotypes) <= 100.0


@SETTINGS
@given(
    st.lists(st.sampled_from(["Feminine", "Masculine", "Cannot identify", "tie"]), min_size=1, max_size=60),
    st.lists(st.sampled_from(["feminine", "masculine"]), min_size=60, max_size=60),
)
def test_excluded_treatment_flips_sign_with_cannot_and_ties(labels_l: list[str], stereo_l: list[str]) -> None:
    labels = np.array(labels_l)
    stereotypes = np.array(stereo_l[: len(labels_l)])
    flipped = np.array([FLIP[x] for x in labels])
    ex = pst.overall_sts(labels, stereotypes, "excluded")
    ex_f = pst.overall_sts(flipped, stereotypes, "excluded")
    if np.isnan(ex):
        assert np.isnan(ex_f)
    else:
        assert ex_f == -ex
    # the paper's treatment counts cannot/tie as -1, so it is never above "excluded":
    # (S - U) / (D + U) - S / D = -U (D + S) / (D (D + U)) <= 0 since |S| <= D
    paper = pst.overall_sts(labels, stereotypes, "paper")
    if np.isnan(ex):
        assert paper == -100.0
    else:
        assert paper <= ex + 1e-9

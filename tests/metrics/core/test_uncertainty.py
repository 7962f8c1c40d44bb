"""Cluster bootstrap and permutation test."""

from __future__ import annotations

import numpy as np
import pytest

from metrics.core import pst, uncertainty


def paired_data(n_images: int, p_stereo: float, seed: int) -> dict[str, np.ndarray]:
    """n_images paired images, 2 persons each (masculine-stereotyped left,
    feminine-stereotyped right), each person stereotypical with prob p_stereo."""
    rng = np.random.default_rng(seed)
    image_ids = np.repeat(np.arange(n_images), 2)
    stereotypes = np.tile(np.array(["masculine", "feminine"]), n_images)
    hit = rng.random(2 * n_images) < p_stereo
    anti = np.where(stereotypes == "masculine", "Feminine", "Masculine")
    labels = np.where(hit, np.char.capitalize(stereotypes), anti)
    return {"image_ids": image_ids, "stereotypes": stereotypes, "labels": labels}


def test_bootstrap_is_seeded_and_contains_the_estimate() -> None:
    d = paired_data(150, 0.7, seed=1)
    a = uncertainty.sts_bootstrap_ci(d["image_ids"], d["labels"], d["stereotypes"], seed=42)
    b = uncertainty.sts_bootstrap_ci(d["image_ids"], d["labels"], d["stereotypes"], seed=42)
    assert (a.low, a.high) == (b.low, b.high)
    # endpoints sit on a lattice (multiples of 100/300), so compare the draws
    s, w = pst.stereo_weights(d["labels"], d["stereotypes"])
    vals = np.stack([s * w, w], axis=1).astype(float)

    def stat(t: np.ndarray) -> np.ndarray:
        return 100 * t[:, 0] / t[:, 1]

    _, d42 = uncertainty.cluster_bootstrap(d["image_ids"], vals, stat, seed=42, return_draws=True)
    _, d42b = uncertainty.cluster_bootstrap(d["image_ids"], vals, stat, seed=42, return_draws=True)
    _, d43 = uncertainty.cluster_bootstrap(d["image_ids"], vals, stat, seed=43, return_draws=True)
    assert np.array_equal(d42, d42b) and not np.array_equal(d42, d43)
    assert a.estimate == pytest.approx(pst.overall_sts(d["labels"], d["stereotypes"]))
    assert a.low < a.estimate < a.high
    assert a.n_clusters == 150 and a.n_boot == 1000


def test_bootstrap_width_shrinks_with_more_images() -> None:
    widths = []
    for n in (50, 800):
        d = paired_data(n, 0.7, seed=2)
        iv = uncertainty.sts_bootstrap_ci(d["image_ids"], d["labels"], d["stereotypes"], n_boot=500, seed=0)
        widths.append(iv.high - iv.low)
    assert widths[1] < widths[0] / 2.5  # ~ 1/sqrt(16) = 1/4 expected


def test_vectorised_bootstrap_matches_generic_bootstrap() -> None:
    d = paired_data(60, 0.6, seed=3)
    s, w = pst.stereo_weights(d["labels"], d["stereotypes"])
    vec, draws = uncertainty.cluster_bootstrap(
        d["image_ids"], np.stack([s * w, w], axis=1).astype(float),
        lambda t: 100 * t[:, 0] / t[:, 1], n_boot=300, seed=9, return_draws=True,
    )
    gen = uncertainty.bootstrap_ci(d["image_ids"], lambda rows: 100 * s[rows].mean(), n_boot=300, seed=9)
    # same generator, same draws (integers(0, n, size=(B, n)) row by row) -> same interval
    assert gen.low == pytest.approx(vec.low) and gen.high == pytest.approx(vec.high)
    assert draws.shape == (300,)


def test_cluster_bootstrap_keeps_images_together() -> None:
    # Both persons of an image always share a label: a person-level bootstrap would
    # be too narrow; the image-level one must see only image-level variation.
    n = 200
    rng = np.random.default_rng(4)
    img_hit = rng.random(n) < 0.5
    image_ids = np.repeat(np.arange(n), 2)
    stereotypes = np.array(["masculine"] * (2 * n))
    labels = np.where(np.repeat(img_hit, 2), "Masculine", "Feminine")
    iv = uncertainty.sts_bootstrap_ci(image_ids, labels, stereotypes, seed=0)
    person_level = uncertainty.sts_bootstrap_ci(np.arange(2 * n), labels, stereotypes, seed=0)
    assert (iv.high - iv.low) > 1.25 * (person_level.high - person_level.low)  # ~sqrt(2)


def test_vector_statistic_bootstrap() -> None:
    d = paired_data(100, 0.7, seed=5)
    s, w = pst.stereo_weights(d["labels"], d["stereotypes"])
    left = (d["stereotypes"] == "masculine").astype(float)
    vals = np.stack([s * left, left, s * (1 - left), 1 - left], axis=1)
    iv = uncertainty.cluster_bootstrap(
        d["image_ids"], vals, lambda t: 100 * t[:, [0, 2]] / t[:, [1, 3]], n_boot=200, seed=0
    )
    assert iv.estimate.shape == (2,) and np.all(iv.low <= iv.estimate) and np.all(iv.estimate <= iv.high)


def test_permutation_test_detects_different_settings() -> None:
    paired = paired_data(150, 0.85, seed=6)
    single_rng = np.random.default_rng(7)
    n_single = 150
    single_st = np.array(["masculine"] * n_single)
    single_lab = np.where(single_rng.random(n_single) < 0.5, "Masculine", "Feminine")
    image_ids = np.concatenate([paired["image_ids"], 1000 + np.arange(n_single)])
    labels = np.concatenate([paired["labels"], single_lab])
    stereo = np.concatenate([paired["stereotypes"], single_st])
    is_paired = np.concatenate([np.ones(300, int), np.zeros(n_single, int)])
    res = uncertainty.permutation_test_sts(image_ids, is_paired, labels, stereo, n_perm=500, seed=0)
    expected = pst.overall_sts(paired["labels"], paired["stereotypes"]) - pst.overall_sts(single_lab, single_st)
    assert res.observed == pytest.approx(expected)
    assert res.p_value < 0.01
    again = uncertainty.permutation_test_sts(image_ids, is_paired, labels, stereo, n_perm=500, seed=0)
    assert again.p_value == res.p_value


def test_permutation_test_identical_settings_gives_large_p() -> None:
    a = paired_data(150, 0.7, seed=8)
    b = paired_data(150, 0.7, seed=8)  # the very same labels under the other setting
    image_ids = np.concatenate([a["image_ids"], 1000 + b["image_ids"]])
    labels = np.concatenate([a["labels"], b["labels"]])
    stereo = np.concatenate([a["stereotypes"], b["stereotypes"]])
    is_paired = np.concatenate([np.ones(300, int), np.zeros(300, int)])
    res = uncertainty.permutation_test_sts(image_ids, is_paired, labels, stereo, n_perm=500, seed=0)
    assert res.observed == pytest.approx(0.0)
    assert res.p_value > 0.5


def test_permutation_group_must_be_constant_within_image() -> None:
    with pytest.raises(ValueError):
        uncertainty.permutation_test_clusters(np.array([0, 0, 1]), np.array([1, 0, 0]), np.ones(3))

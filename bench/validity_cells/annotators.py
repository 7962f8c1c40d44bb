"""Annotators cells of the validity harness (issue 22; bench/validity.py): the permutation tests of the
report's `annotators` section (`metrics.core.annotator_groups.permutation_test_groups` with the
answer-level STS and Krippendorff's alpha, `metrics.sections.annotators`).

Simulated campaign: 240 single-setting PST persons (half masculine-, half feminine-stereotyped
identities, each with its own probability of the stereotyped label, 0.45-0.85). Annotators come in 6
age bands of 5 / 10 / 20 / 40 / 80 / 160 annotators (unequal group sizes) and are of mixed quality:
each has a personal lean (normal, s.d. 0.10, on the probability of the stereotyped label), 15% of them
answer at random, 5% of answers are "Cannot identify", and the number of answers varies tenfold
between annotators (3 to 60, log-uniform: unequal cluster sizes). Each answer is one annotator's label
of one person.

- null: band membership independent of everything (the section's null);
- weak null ("unequal variances"): the small band's annotators vary more than the large band's (s.d.
  0.25 vs 0.05) with the same mean lean: the same STS in both bands, different spread; a permutation
  test of a raw difference is not guaranteed its size there (it is, under the exchangeability null);
- power: every annotator of the first band leans 0.15 (or, a stronger alternative, 0.25) towards the
  stereotyped label.

The tested pair is named in each cell (the smallest against the largest band, and two middle ones).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache, partial

import numpy as np

from bench.validity_cells import Cell
from metrics.core.annotator_groups import HeadlineWithAlpha, permutation_test_groups, pst_headline
from metrics.core.annotator_permutations import LinearStatistic

CHOICES = ["Cannot identify", "Feminine", "Masculine"]
BANDS = (5, 10, 20, 40, 80, 160)
PERSONS = 240
ALPHA = 0.05


@dataclass(frozen=True)
class Crowd:
    pair: tuple[int, int] = (0, 5)        # indexes into BANDS
    lean_a: float = 0.0                   # mean lean of the first band of the pair (power)
    sd_a: float = 0.10                    # spread of the leans in the first band / in the others
    sd_other: float = 0.10


def _campaign(crowd: Crowd, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[int]], np.ndarray]:
    """(question of each answer, annotator, choice code, annotators per band, stereotype per person)."""
    rng = np.random.default_rng([seed, 22, 3])
    stereo = np.where(np.arange(PERSONS) % 2 == 0, "masculine", "feminine").astype(object)
    q = rng.uniform(0.45, 0.85, PERSONS)
    band = np.repeat(np.arange(len(BANDS)), BANDS)
    n_ann = band.size
    a_band = band == crowd.pair[0]
    lean = np.where(a_band, crowd.lean_a + crowd.sd_a * rng.standard_normal(n_ann),
                    crowd.sd_other * rng.standard_normal(n_ann))
    random_answerer = rng.random(n_ann) < 0.15
    n_answers = np.exp(rng.uniform(np.log(3), np.log(60), n_ann)).astype(int)
    qq, who, code = [], [], []
    for j in range(n_ann):
        persons = rng.choice(PERSONS, size=n_answers[j], replace=False)
        p = np.clip(q[persons] + lean[j], 0.02, 0.98) if not random_answerer[j] else np.full(persons.size, 0.5)
        stereotyped = rng.random(persons.size) < p
        masc = np.where(stereo[persons] == "masculine", stereotyped, ~stereotyped)
        c = np.where(rng.random(persons.size) < 0.05, 0, np.where(masc, 2, 1))
        qq.append(persons)
        who.append(np.full(persons.size, j))
        code.append(c)
    members = [np.flatnonzero(band == b).tolist() for b in range(len(BANDS))]
    return np.concatenate(qq), np.concatenate(who), np.concatenate(code), members, stereo


def rejects(crowd: Crowd, n_perm: int, metric: int, seed: int, raw: bool = False) -> bool:
    """Does the section's test reject at 5% for the pair's STS difference (metric 0) or alpha (1)?
    `raw`: the test of the raw STS difference the section printed before issue 22's audit."""
    # The report tests both at once on the same shuffles; the STS p-value is the same without alpha (cheaper), so a
    # crowd with an alpha cell runs the joint test once for both of its cells and the others run the STS test alone.
    with_alpha = metric == 1 or (not raw and crowd in ALPHA_CROWDS)
    return bool(_p_values(crowd, n_perm, with_alpha, raw, seed)[metric] <= ALPHA)


@lru_cache(maxsize=4096)
def _p_values(crowd: Crowd, n_perm: int, with_alpha: bool, raw: bool, seed: int) -> tuple[float, ...]:
    q, who, code, members, stereo = _campaign(crowd, seed)
    headline = pst_headline(CHOICES, stereo, np.full(PERSONS, "single"), ["single"], "paper", unit="answer")
    if raw and isinstance(headline, LinearStatistic):
        headline = LinearStatistic(headline, dataclasses.replace(headline.parts, ratio_scale=None))
    stat = HeadlineWithAlpha(headline) if with_alpha else headline
    a, b = crowd.pair
    res = permutation_test_groups(q, who, code, PERSONS, len(CHOICES), members[a], members[b], stat,
                                  n_perm=n_perm, seed=seed)
    return tuple(float(p) for p in res.p_value)


def _cell(name: str, kind: str, target: float, crowd: Crowd, metric: int, note: str) -> Cell:
    return Cell(name, kind, target, partial(rejects, crowd, 999, metric), note,  # type: ignore[arg-type]
                partial(rejects, crowd, 199, metric))


WEAK = Crowd(sd_a=0.25, sd_other=0.05)
ALPHA_CROWDS = {Crowd()}  # the crowds with an alpha cell
CELLS: list[Cell] = [
    Cell("sts.weak_null.raw.5_vs_160", "size", ALPHA, partial(rejects, WEAK, 999, 0, raw=True),
         "the raw-difference test the section printed before: unequal spread, 5 vs 160 annotators",
         partial(rejects, WEAK, 199, 0, raw=True), legacy=True),
    _cell("sts.null.5_vs_160", "size", ALPHA, Crowd(), 0, "STS difference, bands of 5 and 160 annotators, null"),
    _cell("sts.null.20_vs_80", "size", ALPHA, Crowd(pair=(2, 4)), 0, "STS difference, bands of 20 and 80, null"),
    _cell("alpha.null.5_vs_160", "size", ALPHA, Crowd(), 1, "alpha difference, bands of 5 and 160, null"),
    _cell("sts.weak_null.5_vs_160", "size", ALPHA, WEAK, 0,
          "same mean STS, the 5-annotator band spread 0.25, the 160-annotator band 0.05 (unequal variances)"),
    _cell("sts.weak_null.20_vs_80", "size", ALPHA, Crowd(pair=(2, 4), sd_a=0.25, sd_other=0.05), 0,
          "same mean STS, spread 0.25 (20 annotators) vs 0.05 (80)"),
    _cell("sts.power.20_vs_80.lean+0.15", "power", 0.80, Crowd(pair=(2, 4), lean_a=0.15), 0,
          "the 20-annotator band leans 0.15 towards the stereotype (about 30 STS points)"),
    # power is a property of the alternative: 0.15 was detected 65.5% of the time (200 runs), under the 80% aimed
    # at; the same test against a stronger stated alternative (bench/README.md section 10)
    _cell("sts.power.20_vs_80.lean+0.25", "power", 0.80, Crowd(pair=(2, 4), lean_a=0.25), 0,
          "the 20-annotator band leans 0.25 towards the stereotype (about 50 STS points)"),
]

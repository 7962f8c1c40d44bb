"""The report's `annotators` section from stored answers and consented demographics: counts per group
with small groups merged, per-group figures from the group's own answers with intervals, the
permutation test between groups, the `min_group` option, and the JSON / CSV / HTML exports."""
from __future__ import annotations

import contextlib
import csv
import io
import zipfile
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotation.demographics import default_section
from annotation.models import Answer, DemographicsResponse, Enrollment
from annotation.services.demographics import demographics_release_cut
from metrics.options import ReportOptions
from metrics.snapshots.report import report_build
from tests.builders.metrics import SMALL_GEP, SMALL_PST, annotators, campaign_with_questions
from tests.conftest import token_client

pytestmark = pytest.mark.django_db

STEREO = {"male": "Masculine", "female": "Feminine"}


def _campaign(owner: User, genders: dict[str, int], spec: dict[str, Any] = SMALL_PST) -> tuple[Any, dict[str, list[Any]]]:
    """PST campaign; women answer the stereotyped gender on 90% of persons, men "Cannot identify" on 60%
    (GEP, `spec` SMALL_GEP: "Yes" where the PST rule says the stereotype, else "No")."""
    campaign, questions = campaign_with_questions(owner, {**spec, "name": "who-labelled"})
    campaign.spec["annotation"]["demographics"] = default_section(ask=True)
    campaign.save(update_fields=["spec"])
    people: dict[str, list[Any]] = {}
    now = timezone.now()
    for gender, n in genders.items():
        people[gender] = annotators(n, f"{gender}-")
        for a in people[gender]:
            Enrollment.objects.create(campaign=campaign, annotator=a, consented_at=now)
            if gender != "quiet":
                DemographicsResponse.objects.create(annotator=a, campaign=campaign, consent_version="1",
                                                    consented_at=now, answers={"gender": gender, "country": "NZ"})
    rows = []
    gep = spec["kind"] == "gep"
    for i, q in enumerate(questions):
        stereo = "Yes" if gep else STEREO[q.metadata["group"]]
        for gender, group in people.items():
            for j, a in enumerate(group):
                other = "No" if gep else "Cannot identify"
                if gender == "man":
                    choice = other if (i + j) % 5 < 3 else stereo
                else:
                    choice = stereo if (i + j) % 10 else other
                rows.append(Answer(campaign=campaign, question=q, annotator=a, choice=choice, time_ms=1000))
    Answer.objects.bulk_create(rows)
    demographics_release_cut(campaign=campaign, reason="request")  # the section reports on a release only
    return campaign, people


def test_counts_figures_and_tests_per_group(researcher):
    campaign, people = _campaign(researcher, {"woman": 5, "man": 5, "non_binary": 3, "quiet": 2})
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=200, n_perm=200))
    section = report["annotators"]
    assert section["annotators"] == 15 and section["reported"] == 13 and section["min_group"] == 5
    assert section["release"]["number"] == 1 and section["release"]["annotators"] == 15
    gender = section["fields"]["gender"]
    # non_binary (3) and not reported (2) merged into "other" (5: reported, with figures).
    assert set(gender["groups"]) == {"woman", "man", "other"}
    assert gender["groups"]["other"]["annotators"] == 5 and "headline" in gender["groups"]["other"]
    women, men = gender["groups"]["woman"], gender["groups"]["man"]
    assert women["annotators"] == 5 and women["answers"] == men["answers"] > 0
    # Every person: 4 or 5 of the 5 women answer the stereotype -> women's majority STS is 100.
    for s in ("single", "paired"):
        assert women["headline"][f"sts_{s}"]["value"] == pytest.approx(100.0)
        low, high = women["headline"][f"sts_{s}"]["ci"]
        assert low <= 100.0 <= high
        assert men["headline"][f"sts_{s}"]["value"] == pytest.approx(-100.0)  # 3 of 5 men: cannot identify
    assert -1 <= women["agreement"]["krippendorff_alpha"] <= 1 and "krippendorff_alpha_ci" in women["agreement"]
    tests = {t["metric"]: t for t in gender["tests"]}
    assert set(tests) == {"sts_single", "sts_paired", "krippendorff_alpha"}
    t = tests["sts_single"]
    assert (t["a"], t["b"], t["unit"]) == ("man", "woman", "answer")  # named groups in order
    assert t["difference"] < -50 and t["p_value"] < 0.05 and t["p_holm"] == t["p_value"]  # one pair
    # Every one who reported gave the same country; the quiet ones (2) are too few for a cell of their
    # own, and NZ joins them (complementary): one cell of everyone, which tells nothing about anyone.
    country = section["fields"]["country"]["groups"]
    assert set(country) == {"other"} and country["other"]["annotators"] == 15
    # A smaller minimum than the release's is not applied (raised, never lowered).
    small = report_build(campaign=campaign, options=ReportOptions(n_boot=0, n_perm=0, min_group=2))
    assert small["annotators"]["min_group"] == 5
    assert small["annotators"]["fields"]["gender"]["groups"]["other"]["annotators"] == 5
    assert small["annotators"]["fields"]["gender"]["tests"] == []  # n_perm = 0: no tests


def test_exports_and_the_min_group_parameter(researcher):
    campaign, _ = _campaign(researcher, {"woman": 5, "man": 5})
    api = token_client(researcher)
    url = f"/api/campaigns/{campaign.pk}/report/?n_boot=50&n_perm=50"
    data = api.get(url).json()
    assert data["annotators"]["fields"]["gender"]["groups"]["woman"]["annotators"] == 5
    bad = api.get(url + "&min_group=1")
    assert bad.status_code == 400 and "min_group" in bad.json()["errors"]
    zipped = zipfile.ZipFile(io.BytesIO(api.get(url + "&format=csv").content))
    groups = list(csv.DictReader(io.StringIO(zipped.read("annotator_groups.csv").decode())))
    assert {(r["field"], r["group"], r["metric"]) for r in groups} >= {("gender", "woman", "sts_single"),
                                                                     ("gender", "man", "krippendorff_alpha")}
    tests = list(csv.DictReader(io.StringIO(zipped.read("annotator_group_tests.csv").decode())))
    assert any(r["metric"] == "sts_paired" and float(r["p_value"]) < 0.05 for r in tests)
    html = api.get(url + "&format=html").content.decode()
    assert 'id="annotator-groups"' in html and 'id="annotator-group-tests"' in html and "Who labelled" in html


def test_withdrawn_annotators_leave_the_groups(researcher):
    campaign, people = _campaign(researcher, {"woman": 5, "man": 5})
    from annotation.services.demographics import demographics_withdraw

    demographics_withdraw(annotator=people["woman"][0])
    section = report_build(campaign=campaign, options=ReportOptions(n_boot=0, n_perm=0))["annotators"]
    # Today's groups would differ from the release by the one who withdrew (woman 5 -> 4 merged into
    # "other": her group named). No group is reported until the next release (docs/security.md).
    assert section["fields"] == {} and section["release"]["stale"] is True
    assert Answer.objects.filter(annotator=people["woman"][0]).exists()


def test_a_withdrawal_makes_the_cached_report_stale(researcher):
    from annotation.services.demographics import demographics_withdraw
    from metrics.snapshots.report import report_get

    campaign, people = _campaign(researcher, {"woman": 5, "man": 5})
    options = ReportOptions(n_boot=0, n_perm=0)
    _, before = report_get(campaign=campaign, options=options)
    assert before["annotators"]["fields"]["gender"]["groups"]["woman"]["annotators"] == 5
    demographics_withdraw(annotator=people["woman"][0])
    _, after = report_get(campaign=campaign, options=options)
    assert after["annotators"]["fields"] == {} and after["annotators"]["release"]["stale"] is True
    # A new answer to the campaign's form is a change too (the profile's answers count nowhere).
    from annotation.services.demographics import demographics_submit

    demographics_submit(annotator=people["woman"][0], campaign=campaign, consent=True, consent_version="1",
                        answers={"gender": "woman", "country": "NZ"})
    _, again = report_get(campaign=campaign, options=options)
    assert again["annotators"]["fields"]["gender"]["groups"]["woman"]["annotators"] == 5


def test_group_agreement_under_adaptive_redundancy_uses_the_first_min_answers(researcher):
    # issue 22: as the overall agreement, a group's agreement counts only its answers among the first
    # `min` of every question (later answers exist only where the first disagreed)
    campaign, people = _campaign(researcher, {"woman": 5, "man": 5})
    n_q = campaign.questions.count()
    fixed = report_build(campaign=campaign, options=ReportOptions(n_boot=20, n_perm=20))["annotators"]
    assert fixed["agreement_basis"]["design"] == "fixed"
    assert fixed["fields"]["gender"]["groups"]["woman"]["agreement"]["answers"] == 5 * n_q
    campaign.spec["annotation"]["redundancy"] = {"min": 2, "max": 10, "threshold": 0.75}
    campaign.save(update_fields=["spec"])
    section = report_build(campaign=campaign, options=ReportOptions(n_boot=20, n_perm=20))["annotators"]
    assert section["agreement_basis"]["design"] == "adaptive" and section["agreement_basis"]["answers_per_question"] == 2
    groups = section["fields"]["gender"]["groups"]
    # Answers arrived question by question, women first: the first 2 of every question are women's.
    assert groups["woman"]["agreement"]["answers"] == 2 * n_q and groups["woman"]["answers"] == 5 * n_q
    assert groups["man"]["agreement"]["answers"] == 0
    alpha = next(t for t in section["fields"]["gender"]["tests"] if t["metric"] == "krippendorff_alpha")
    assert alpha["value_b"] == pytest.approx(groups["woman"]["agreement"]["krippendorff_alpha"])
    headline = next(t for t in section["fields"]["gender"]["tests"] if t["metric"] == "sts_single")
    assert headline["difference"] < -50  # the headline test still uses every answer


@pytest.mark.parametrize("spec", [SMALL_PST, SMALL_GEP], ids=["pst", "gep"])
def test_group_figures_equal_the_full_sections_figures(researcher, monkeypatch, spec):
    """A group's figures come from the headline-only sections (`headline=True`: no runs, templates, contexts,
    gender balance, gap or intervention analysis): every figure the section prints equals the one the full
    section gives on the group's answers, and a report's one scope of shared draws changes no figure."""
    from metrics.core import draws
    from metrics.sections import annotators as section_module
    from metrics.sections import report as report_module

    campaign, _ = _campaign(researcher, {"woman": 5, "man": 6}, spec)
    options = ReportOptions(n_boot=300, n_perm=100)
    monkeypatch.setattr(draws, "_CACHED_CELLS", 0)  # every draw through the report's scope (or none below)
    drawn: list[tuple[int, int]] = []
    real_scope = report_module.shared_draws

    @contextlib.contextmanager
    def counted() -> Any:
        with real_scope() as scope:
            yield scope
        drawn.append((scope.drawn, scope.reused))

    monkeypatch.setattr(report_module, "shared_draws", counted)
    from metrics.sections import gep as gep_module

    coded: list[int] = []
    real_rows = gep_module.setting_rows
    monkeypatch.setattr(gep_module, "setting_rows", lambda *a: coded.append(1) or real_rows(*a))
    fast = report_build(campaign=campaign, options=options)
    assert drawn and drawn[0][1] > 0  # the groups' GEP / PST draws reused the report's
    if spec is SMALL_GEP:  # each setting's rows coded once for the report's section, once for all the groups
        settings = len(fast["gep"]) - len([k for k in fast["gep"] if k not in ("neutral", "explicit")])
        assert settings >= 1 and len(coded) == 2 * settings
    seen: list[bool] = []
    full = {name: getattr(section_module, name) for name in ("pst_section", "gep_section")}
    for name, build in full.items():
        monkeypatch.setattr(section_module, name,  # the full section, its own setting rows (no memo)
                            lambda *a, _b=build, headline=False, rows=None: seen.append(headline) or _b(*a))
    monkeypatch.setattr(report_module, "shared_draws", contextlib.nullcontext)  # no scope: every draw its own
    slow = report_build(campaign=campaign, options=options)
    assert seen and all(seen)  # the group figures asked for the headline only
    groups = fast["annotators"]["fields"]["gender"]["groups"]
    assert {"woman", "man"} <= set(groups) and groups["woman"]["headline"]
    assert all(v["ci"] is not None for v in groups["woman"]["headline"].values())
    assert fast == slow


@pytest.mark.parametrize("ratio", [1, 10 ** 9], ids=["by-pattern", "image-by-image"])
def test_group_alpha_interval_is_drawn_by_pattern_on_the_groups_answers(researcher, monkeypatch, ratio):
    """Each group's alpha interval comes from `alpha_interval(by_pattern=True)` on that group's count matrix
    with the images as clusters: the interval the section prints is the one that call returns, the call
    on the counts rebuilt here from the stored answers gives it again, and it lies within Monte Carlo
    error of the image-by-image interval (the same distribution, other draws). `PATTERN_RATIO` 1 forces
    the multinomial draws over patterns, 10**9 the image-by-image fallback of the same path."""
    import numpy as np

    from metrics.core import agreement_subsets as ags
    from metrics.core import resampling
    from metrics.sections import annotators as section_module

    monkeypatch.setattr(resampling, "PATTERN_RATIO", ratio)
    campaign, people = _campaign(researcher, {"woman": 5, "man": 6}, SMALL_GEP)
    calls: list[tuple[Any, Any, dict[str, Any], Any]] = []
    real = section_module.alpha_interval

    def spy(counts: Any, cluster_ids: Any = None, **kw: Any) -> Any:
        out = real(counts, cluster_ids=cluster_ids, **kw)
        calls.append((np.array(counts), np.array(cluster_ids), kw, out))
        return out

    monkeypatch.setattr(section_module, "alpha_interval", spy)
    report = report_build(campaign=campaign, options=ReportOptions(n_boot=2000, n_perm=0))
    groups = report["annotators"]["fields"]["gender"]["groups"]
    printed = {g: groups[g]["agreement"]["krippendorff_alpha_ci"] for g in ("woman", "man")}
    assert len(calls) == 2 and all(kw["by_pattern"] is True and kw["n_boot"] == 2000 for _, _, kw, _ in calls)
    assert sorted(printed.values()) == sorted([[c.low, c.high] for *_, c in calls])
    questions = list(campaign.questions.order_by("id").values_list("id", "image_id"))
    index = {qid: i for i, (qid, _) in enumerate(questions)}
    images = np.array([img for _, img in questions])
    captured = {c.sum(axis=0)[0]: (c, ids, kw, out) for c, ids, kw, out in calls}
    for gender, group in people.items():
        counts = np.zeros((len(questions), 2), dtype=np.int64)
        for qid, choice in Answer.objects.filter(annotator__in=group).values_list("question_id", "choice"):
            counts[index[qid], ["No", "Yes"].index(choice)] += 1
        c, ids, kw, out = captured[counts.sum(axis=0)[0]]  # the group's call
        assert np.array_equal(c, counts) and np.array_equal(ids, images)  # the group's answers, images as clusters
        assert [out.low, out.high] == printed[gender]
        mine = ags.alpha_interval(counts, images, n_boot=2000, seed=kw["seed"], by_pattern=True)
        assert (mine.low, mine.high) == (out.low, out.high)  # seeded: the same call, the same interval
        plain = ags.alpha_interval(counts, images, n_boot=2000, seed=kw["seed"])
        assert plain.estimate == pytest.approx(mine.estimate, rel=1e-12)
        width = plain.high - plain.low
        assert width > 0 and abs(mine.low - plain.low) < 0.1 * width and abs(mine.high - plain.high) < 0.1 * width

"""The replication package and the annotators' demographics (issue 24): no per-answer demographic
linkage unless the campaign's demographics say `researcher_access: "individual"` and `publish: true`
and the annotator consented to that text on the campaign's own form; then only those annotators,
by pseudonym, without free text; the report's `annotators` section is published (in report.json and
from the package) only when the package can recompute it exactly."""
from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.utils import timezone
from rest_framework.test import APIClient

from annotation.models import Answer, DemographicsResponse, Enrollment
from annotation.services.demographics import demographics_release_cut, demographics_submit
from metrics.package import report_from_package
from tests.builders.metrics import SMALL_PST, annotators, campaign_with_questions
from tests.builders.package import differences, package_bytes

pytestmark = pytest.mark.django_db

QUICK = {"n_boot": 40, "n_perm": 40, "seed": 3}
STEREO = {"male": "Masculine", "female": "Feminine"}
DEMOGRAPHIC_COLUMNS = {"gender", "age_band", "country", "gender_self_described"}


def _campaign(owner: User, demographics: dict[str, Any], *, extra: bool = False) -> Any:
    """Five women and five men answered the campaign's form (self-described text for one); with
    `extra`, one more annotator who reported through the profile only and one who withdrew."""
    spec = {**SMALL_PST, "name": "privacy", "annotation": {"demographics": {"ask": True, **demographics}}}
    campaign, questions = campaign_with_questions(owner, spec)
    version = campaign.spec["annotation"]["demographics"]["consent_version"]
    now = timezone.now()
    people = annotators(12 if extra else 10, "p-")
    for i, a in enumerate(people):
        Enrollment.objects.create(campaign=campaign, annotator=a, consented_at=now)
        if i < 10:
            answers = {"gender": "woman" if i < 5 else "man", "age_band": "25-34", "country": "IS"}
            if i == 0:
                answers = {**answers, "gender": "self_describe", "gender_self_described": "Jane from Reykjavik"}
            demographics_submit(annotator=a, campaign=campaign, consent=True, consent_version=version, answers=answers)
    if extra:
        profile_only, withdrawn = people[10], people[11]
        profile_only.demographics = {"gender": "woman", "country": "IS"}
        profile_only.demographics_consented_at = now
        profile_only.save()
        DemographicsResponse.objects.create(annotator=withdrawn, campaign=campaign, consent_version=version,
                                            consented_at=now, withdrawn_at=now, answers={})
    rows = [Answer(campaign=campaign, question=q, annotator=a, time_ms=800,
                   choice=STEREO[q.metadata["group"]] if (i + j) % (3 if j < 5 else 2) else "Cannot identify")
            for i, q in enumerate(questions) for j, a in enumerate(people)]
    Answer.objects.bulk_create(rows)
    demographics_release_cut(campaign=campaign, reason="request")  # aggregates come from a release only
    return campaign


def _contents(zipped: bytes) -> tuple[zipfile.ZipFile, dict[str, Any]]:
    z = zipfile.ZipFile(io.BytesIO(zipped))
    return z, json.loads(z.read("package.json"))


def _columns(z: zipfile.ZipFile) -> set[str]:
    out: set[str] = set()
    for name in z.namelist():
        if name.endswith(".parquet") and name != "data/annotators.parquet":
            out |= set(pq.read_schema(io.BytesIO(z.read(name))).names)
    return out


@pytest.mark.parametrize("demographics", [{"researcher_access": "aggregate"},
                                          {"researcher_access": "individual"}], ids=["aggregate", "individual"])
def test_no_demographic_linkage_without_consent_to_publication(api: APIClient, researcher: User,
                                                               demographics: dict[str, Any]) -> None:
    campaign = _campaign(researcher, demographics)
    server = api.get(f"/api/campaigns/{campaign.pk}/report/", QUICK).json()
    assert server["annotators"]["reported"] == 10  # the server's own (aggregate) section is there
    z, manifest = _contents(package_bytes(api, campaign.pk))
    assert manifest["demographics"] == "none" and "data/annotators.parquet" not in z.namelist()
    assert not _columns(z) & DEMOGRAPHIC_COLUMNS  # PST questions have no gender column of their own
    assert "annotators" not in json.loads(z.read("report.json"))  # no group aggregates over pseudonyms
    for name in z.namelist():
        assert b"Reykjavik" not in z.read(name), name
    package = report_from_package(z.fp.getvalue(), **QUICK)  # type: ignore[union-attr]
    assert "annotators" not in package
    assert differences({k: v for k, v in server.items() if k != "annotators"}, package) == []


def test_published_demographics_by_pseudonym_and_the_same_annotators_section(api: APIClient,
                                                                            researcher: User) -> None:
    campaign = _campaign(researcher, {"researcher_access": "individual", "publish": True})
    assert "published" in campaign.spec["annotation"]["demographics"]["consent_text"]
    z, manifest = _contents(package_bytes(api, campaign.pk))
    assert manifest["demographics"] == "all"
    table = pq.read_table(io.BytesIO(z.read("data/annotators.parquet"))).to_pandas()
    assert len(table) == 10 and table.annotator.str.fullmatch(r"annotator_\d{4}").all()
    assert "gender_self_described" not in table.columns and not table.isin(["Jane from Reykjavik"]).any().any()
    assert sorted(table.gender.tolist()) == ["man"] * 5 + ["self_describe"] + ["woman"] * 4
    server = api.get(f"/api/campaigns/{campaign.pk}/report/", QUICK).json()
    package = report_from_package(z.fp.getvalue(), **QUICK)  # type: ignore[union-attr]
    assert package["annotators"]["reported"] == 10
    assert differences(server, package) == []  # the annotators section included
    assert "annotators" in json.loads(z.read("report.json"))


def test_profile_answers_and_withdrawals_are_never_published(api: APIClient, researcher: User) -> None:
    campaign = _campaign(researcher, {"researcher_access": "individual", "publish": True}, extra=True)
    z, manifest = _contents(package_bytes(api, campaign.pk))
    table = pq.read_table(io.BytesIO(z.read("data/annotators.parquet"))).to_pandas()
    # Profile answers count nowhere (docs/security.md, "Demographics release rule") and a withdrawal
    # erased its answers: the package names every group the server counts, and has its section.
    assert len(table) == 10 and manifest["demographics"] == "all"
    server = api.get(f"/api/campaigns/{campaign.pk}/report/", QUICK).json()
    package = report_from_package(z.fp.getvalue(), **QUICK)  # type: ignore[union-attr]
    assert package["annotators"]["reported"] == server["annotators"]["reported"] == 10


def test_publish_needs_individual_access(api: APIClient) -> None:
    body = {**SMALL_PST, "annotation": {"demographics": {"ask": True, "publish": True}}}
    r = api.post("/api/specs/preview/", body, format="json")
    assert r.status_code == 400 and "annotation.demographics.publish" in r.json()["errors"]
    r = api.post("/api/specs/preview/", {**SMALL_PST, "annotation": {"demographics": {"publish": "yes"}}},
                 format="json")
    assert r.status_code == 400 and "annotation.demographics.publish" in r.json()["errors"]

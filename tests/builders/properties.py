"""Shared strategies and checks of the report property tests (tests/metrics/test_report_properties*.py,
issue 22): random PST / GEP designs, random partial answer sets, and the report / export check."""
from __future__ import annotations

import copy
import io
import itertools
import random
import zipfile
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.models import Answer, Question

from .intervals import interval_violations
from .metrics import SMALL_GEP, annotators

SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
NET = "not computed from the answers so far"
MALE, FEMALE = ["pilot", "ceo", "guard"], ["nurse", "nanny", "maid"]
_names = itertools.count()


def pst_spec(settings_: list[str], intervention: Any, templates: bool) -> dict[str, Any]:
    design: dict[str, Any] = {
        "settings": settings_, "samples": {"single": 2, "paired": 1, "intervention": 1},
        "identities": {"groups": [{"name": "male", "stereotype": "masculine", "identities": MALE},
                                  {"name": "female", "stereotype": "feminine", "identities": FEMALE}]}}
    if intervention:
        design["fairness_intervention"] = intervention
    if templates:
        design["templates"] = {s: ["A photo of one {id1}.", "One {id1}, a portrait."] if s == "single" else
                               ["One {id1} on the left and one {id2} on the right.",
                                "A {id1} (left) next to a {id2} (right)."] for s in settings_}
    return {"name": f"prop-pst-{next(_names)}", "kind": "pst", "seed": 7, "design": design,
            "backend": {"name": "placeholder"}}


designs = st.one_of(
    st.builds(pst_spec, st.sampled_from([["single"], ["paired"], ["single", "paired"]]),
              st.sampled_from([False, True, ["pilot"], ["pilot", "nurse"]]), st.booleans()),
    st.builds(lambda: {**copy.deepcopy(SMALL_GEP), "name": f"prop-gep-{next(_names)}"}),
)
answer_sets = st.fixed_dictionaries({
    "share": st.sampled_from([0.0, 0.1, 0.5, 1.0]),
    "annotators": st.integers(1, 3),
    "mode": st.sampled_from(["random", "ties", "undetermined", "one_identity", "stereotyped", "no_intervention",
                             "one_setting"]),
    "seed": st.integers(0, 1000),
})


def answer(questions: list[Question], plan: dict[str, Any]) -> None:
    rng = random.Random(plan["seed"])
    people = annotators(plan["annotators"], f"prop{plan['seed']}-")
    chosen = [q for q in questions if rng.random() < plan["share"]]
    mode = plan["mode"]
    if mode == "one_identity" and chosen:
        key = "identity" if "identity" in chosen[0].metadata else "attribute"
        chosen = [q for q in chosen if q.metadata.get(key) == chosen[0].metadata.get(key)]
    elif mode == "no_intervention":
        chosen = [q for q in chosen if q.metadata.get("setting") != "intervention"]
    elif mode == "one_setting" and chosen:
        chosen = [q for q in chosen if q.metadata.get("setting") == chosen[0].metadata.get("setting")]
    rows = []
    for q in chosen:
        if mode == "ties":  # two annotators, one each way: every question a tie
            pair = [people[0], annotators(2, f"tie{plan['seed']}-")[1]]
            rows += [Answer(campaign=q.campaign, question=q, annotator=a, choice=c, time_ms=900)
                     for a, c in zip(pair, q.choices[:2], strict=True)]
            continue
        for who in people:
            if mode == "undetermined":
                choice = q.choices[-1]  # "Cannot identify" (PST) / "No" (GEP)
            elif mode == "stereotyped" and "group" in q.metadata:
                choice = "Masculine" if q.metadata["group"] == "male" else "Feminine"
            else:
                choice = rng.choice(q.choices)
            rows.append(Answer(campaign=q.campaign, question=q, annotator=who, choice=choice, time_ms=1000))
    Answer.objects.bulk_create(rows)


def check_report(api: APIClient, campaign_id: int) -> dict[str, Any]:
    base = f"/api/campaigns/{campaign_id}/report/?n_boot=20&n_perm=20"
    resp = api.get(base)
    assert resp.status_code == 200, resp.content[:400]
    report = resp.json()
    assert interval_violations(report) == []
    assert all(set(w) == {"path", "message"} for w in report["warnings"])
    assert not [w for w in report["warnings"] if NET in w["message"]], report["warnings"]
    html = api.get(base + "&format=html")
    assert html.status_code == 200 and b"<html" in html.content
    csv = api.get(base + "&format=csv")
    assert csv.status_code == 200 and "labels.csv" in zipfile.ZipFile(io.BytesIO(csv.content)).namelist()
    export = api.get(f"/api/campaigns/{campaign_id}/export/dataset/")
    assert export.status_code == 200
    assert zipfile.ZipFile(io.BytesIO(b"".join(export.streaming_content))).namelist()
    return report

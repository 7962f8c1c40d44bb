"""boto3 MTurk calls, checked with botocore's Stubber (no network here): exact parameters of
create_hit, create_qualification_type (with the generated QuestionForm and AnswerKey XML),
approve / reject / bonus (idempotency token present), worker blocks."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from decimal import Decimal
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber
from django.contrib.auth.models import User

from annotation.models import Annotator, Assignment, Enrollment, Qualification, QualificationItem
from campaigns.models import Campaign
from crowd import mturk
from crowd.models import MTurkBonus, MTurkHit
from tests.builders.metrics import annotators, campaign_with_questions

pytestmark = pytest.mark.django_db
SPEC = {"name": "mt", "kind": "gep", "seed": 3, "design": {
    "settings": ["neutral"], "samples": 1, "contexts": ["sitting at a table"],
    "attributes": [{"name": "dress", "phrase": "in a dress"}]},
    "backend": {"name": "placeholder"}, "crowd": {"mturk": {"reward": "0.17", "locales": ["US"]}}}


@pytest.fixture
def client() -> Any:
    return boto3.client("mturk", region_name="us-east-1", endpoint_url=mturk.SANDBOX_ENDPOINT,
                        aws_access_key_id="test", aws_secret_access_key="test")


@pytest.fixture
def campaign(researcher: User) -> Campaign:
    c, _ = campaign_with_questions(researcher, SPEC)
    Campaign.objects.filter(pk=c.pk).update(status=Campaign.Status.OPEN)
    c.refresh_from_db()
    return c


@pytest.fixture
def qualification(campaign: Campaign) -> Qualification:
    q = Qualification.objects.create(campaign=campaign, name="dress test", family="attribute:dress",
                                     instructions="Answer Yes only if the person wears it.")
    for i, image in enumerate(campaign.images.order_by("id")):
        QualificationItem.objects.create(qualification=q, image=image, position=i, text="Do you see a person in a dress?",
                                         choices=["Yes", "No"], correct="Yes" if i == 0 else "No")
    return q


def test_external_question_hits_are_created_with_the_campaigns_settings(campaign: Campaign, client: Any,
                                                                        settings: Any) -> None:
    settings.SITE_URL = "https://audit.example.org"
    stub = Stubber(client)
    for n in range(2):
        expected = {
            "MaxAssignments": 3, "AutoApprovalDelayInSeconds": 259200, "LifetimeInSeconds": 604800,
            "AssignmentDurationInSeconds": 1800, "Reward": "0.17", "Title": "Label people in images (gender presentation study)",
            "Keywords": "image, labeling, research", "Description": ANY,
            "Question": mturk.external_question_xml(f"https://audit.example.org/mturk/{campaign.pk}/"),
            "RequesterAnnotation": f"campaign:{campaign.pk}",
            "QualificationRequirements": [
                {"QualificationTypeId": mturk.QUAL_LOCALE, "Comparator": "In", "LocaleValues": [{"Country": "US"}],
                 "ActionsGuarded": "DiscoverPreviewAndAccept"},
                {"QualificationTypeId": mturk.QUAL_APPROVAL_RATE, "Comparator": "GreaterThanOrEqualTo",
                 "IntegerValues": [95], "ActionsGuarded": "DiscoverPreviewAndAccept"}],
            "UniqueRequestToken": mturk._token("create_hit", campaign.pk, n),
        }
        stub.add_response("create_hit", {"HIT": {"HITId": f"HIT{n}", "HITTypeId": "TYPE"}}, expected)
    with stub:
        hits = mturk.mturk_hits_publish(campaign=campaign, count=2, redundancy=3, client=client)
    stub.assert_no_pending_responses()
    assert [h.hit_id for h in hits] == ["HIT0", "HIT1"] and MTurkHit.objects.count() == 2
    root = ET.fromstring(mturk.external_question_xml("https://x.example/a?b=1&c=2"))
    assert root.tag == f"{{{mturk.EXTERNAL_QUESTION_NS}}}ExternalQuestion"
    assert root.find(f"{{{mturk.EXTERNAL_QUESTION_NS}}}ExternalURL").text == "https://x.example/a?b=1&c=2"
    assert mturk.hits_needed(questions=2400, hit_size=10) == 240


def test_publishing_needs_an_open_campaign(researcher: User, client: Any) -> None:
    c, _ = campaign_with_questions(researcher, {**SPEC, "name": "draft"})
    with pytest.raises(Exception, match="Open the campaign"):
        mturk.mturk_hits_publish(campaign=c, count=1, redundancy=3, client=client)


def _children(el: ET.Element, ns: str) -> list[str]:
    return [c.tag.replace(f"{{{ns}}}", "") for c in el]


def test_qualification_type_with_generated_question_form_and_answer_key(qualification: Qualification,
                                                                        client: Any) -> None:
    stub = Stubber(client)

    def url_of(image: Any) -> str:
        return f"https://cdn.example/q/{image.pk}.png"

    form = mturk.question_form_xml(qualification, url_of)
    key = mturk.answer_key_xml(qualification)
    stub.add_response("create_qualification_type", {"QualificationType": {"QualificationTypeId": "QT1"}}, {
        "Name": f"dress test (campaign {qualification.campaign_id})", "Keywords": ANY, "Description": ANY,
        "QualificationTypeStatus": "Active", "RetryDelayInSeconds": 3600, "Test": form, "AnswerKey": key,
        "TestDurationInSeconds": 1800})
    with stub:
        qt = mturk.mturk_qualification_type_create(qualification=qualification, image_url_of=url_of, client=client)
    assert qt.qualification_type_id == "QT1" and qt.passing_percent == 100
    # QuestionForm: the schema's required elements in order, one question per item.
    ns = mturk.QUESTION_FORM_NS
    root = ET.fromstring(form)
    questions = root.findall(f"{{{ns}}}Question")
    assert len(questions) == qualification.items.count() == 2
    for q in questions:
        assert _children(q, ns)[:2] == ["QuestionIdentifier", "DisplayName"]
        assert {"IsRequired", "QuestionContent", "AnswerSpecification"} <= set(_children(q, ns))
        binary = q.find(f"{{{ns}}}QuestionContent/{{{ns}}}Binary")
        assert _children(binary, ns) == ["MimeType", "DataURL", "AltText"]
        selections = q.findall(f".//{{{ns}}}Selection")
        assert [s.find(f"{{{ns}}}SelectionIdentifier").text for s in selections] == ["yes", "no"]
    # AnswerKey: every question of the form has an answer option with a score; percentage mapping.
    kns = mturk.ANSWER_KEY_NS
    akey = ET.fromstring(key)
    ids = [q.find(f"{{{kns}}}QuestionIdentifier").text for q in akey.findall(f"{{{kns}}}Question")]
    assert ids == [q.find(f"{{{ns}}}QuestionIdentifier").text for q in questions]
    options = [q.find(f"{{{kns}}}AnswerOption/{{{kns}}}SelectionIdentifier").text for q in akey.findall(f"{{{kns}}}Question")]
    assert options == ["yes", "no"]  # the key of the product's own test
    assert akey.find(f"{{{kns}}}QualificationValueMapping/{{{kns}}}PercentageMapping/{{{kns}}}MaximumSummedScore").text == "2"
    # Publishing the same test twice creates nothing new.
    assert mturk.mturk_qualification_type_create(qualification=qualification, image_url_of=url_of, client=client) == qt


def test_a_worker_who_passed_on_our_page_is_granted_the_qualification(qualification: Qualification,
                                                                      client: Any) -> None:
    from crowd.models import MTurkQualificationType

    MTurkQualificationType.objects.create(qualification=qualification, qualification_type_id="QT9")
    annotator = Annotator.objects.create(user=User.objects.create(username="w1"), mturk_worker_id="AW1")
    stub = Stubber(client)
    stub.add_response("associate_qualification_with_worker", {}, {
        "QualificationTypeId": "QT9", "WorkerId": "AW1", "IntegerValue": 100, "SendNotification": False})
    with stub:
        assert mturk.mturk_qualification_grant(qualification=qualification, annotator=annotator, client=client)
    stub.assert_no_pending_responses()


def test_sync_approves_rejects_pays_bonuses_once_and_blocks(campaign: Campaign, client: Any) -> None:
    MTurkHit.objects.create(campaign=campaign, hit_id="H1", hit_type_id="T", sequence=0, max_assignments=3,
                            reward=Decimal("0.10"))
    good, bad, blocked = annotators(3, "mt")
    for a, worker in ((good, "WG"), (bad, "WB"), (blocked, "WX")):
        Annotator.objects.filter(pk=a.pk).update(mturk_worker_id=worker)
    from django.utils import timezone

    now = timezone.now()
    ok = Assignment.objects.create(campaign=campaign, annotator=good, expires_at=now, status="submitted",
                                   review="approved", bonus=Decimal("0.50"), external_assignment_id="AS-G")
    Assignment.objects.create(campaign=campaign, annotator=bad, expires_at=now, status="submitted",
                              review="rejected", review_reason="Answered in 1 s each", external_assignment_id="AS-B")
    Enrollment.objects.create(campaign=campaign, annotator=blocked, status="blocked", status_reason="gold 20%")
    listing = {"Assignments": [
        {"AssignmentId": "AS-G", "WorkerId": "WG", "HITId": "H1", "AssignmentStatus": "Submitted"},
        {"AssignmentId": "AS-B", "WorkerId": "WB", "HITId": "H1", "AssignmentStatus": "Submitted"},
        {"AssignmentId": "AS-?", "WorkerId": "WZ", "HITId": "H1", "AssignmentStatus": "Submitted"}]}
    stub = Stubber(client)
    stub.add_response("list_assignments_for_hit", listing, {
        "HITId": "H1", "MaxResults": 100, "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]})
    stub.add_response("approve_assignment", {}, {"AssignmentId": "AS-G", "RequesterFeedback": "Thank you!"})
    token = mturk._token("send_bonus", "AS-G", ok.bonus)
    stub.add_response("send_bonus", {}, {"WorkerId": "WG", "BonusAmount": "0.50", "AssignmentId": "AS-G",
                                         "Reason": ANY, "UniqueRequestToken": token})
    stub.add_response("reject_assignment", {}, {"AssignmentId": "AS-B", "RequesterFeedback": "Answered in 1 s each"})
    stub.add_response("create_worker_block", {}, {"WorkerId": "WX", "Reason": "gold 20%"})
    with stub:
        result = mturk.mturk_sync(campaign=campaign, client=client)
    stub.assert_no_pending_responses()
    assert result.as_dict() == {"listed": 3, "approved": 1, "rejected": 1, "bonuses": 1, "blocked": 1, "unknown": 1}
    assert len(token) == 64 and MTurkBonus.objects.get(assignment=ok).token == token
    # A second sync (MTurk now reports Approved/Rejected) pays nothing again.
    listing2 = {"Assignments": [
        {"AssignmentId": "AS-G", "WorkerId": "WG", "HITId": "H1", "AssignmentStatus": "Approved"},
        {"AssignmentId": "AS-B", "WorkerId": "WB", "HITId": "H1", "AssignmentStatus": "Rejected"}]}
    stub2 = Stubber(client)
    stub2.add_response("list_assignments_for_hit", listing2, None)
    stub2.add_response("create_worker_block", {}, None)
    with stub2:
        again = mturk.mturk_sync(campaign=campaign, client=client)
    stub2.assert_no_pending_responses()
    assert again.approved == again.rejected == again.bonuses == 0


def test_sync_stores_due_auto_approvals_first_and_approves_them_on_mturk(campaign: Campaign, client: Any) -> None:
    """Reads count a HIT past `auto_approve_hours` as approved without storing it; the sync (an unsafe
    action) stores it and approves it on MTurk, whether or not the hourly beat task ran yet."""
    from datetime import timedelta

    from django.utils import timezone

    MTurkHit.objects.create(campaign=campaign, hit_id="H2", hit_type_id="T", sequence=0, max_assignments=3,
                            reward=Decimal("0.10"))
    (worker,) = annotators(1, "aa")
    Annotator.objects.filter(pk=worker.pk).update(mturk_worker_id="WA")
    now = timezone.now()
    due = Assignment.objects.create(campaign=campaign, annotator=worker, expires_at=now, status="submitted",
                                    submitted_at=now - timedelta(hours=73), external_assignment_id="AS-A")
    assert due.review == "pending"
    stub = Stubber(client)
    stub.add_response("list_assignments_for_hit", {"Assignments": [
        {"AssignmentId": "AS-A", "WorkerId": "WA", "HITId": "H2", "AssignmentStatus": "Submitted"}]}, None)
    stub.add_response("approve_assignment", {}, {"AssignmentId": "AS-A", "RequesterFeedback": "auto-approved"})
    with stub:
        result = mturk.mturk_sync(campaign=campaign, client=client)
    stub.assert_no_pending_responses()
    assert result.approved == 1
    due.refresh_from_db()
    assert due.review == "approved" and due.review_reason == "auto-approved"

"""Amazon Mechanical Turk through boto3's `mturk` client: ExternalQuestion HITs pointing at the
product's task page, qualification types generated from the product's own tests, and the sync of
assignments (approve / reject / bonus / block) following the product's review decisions.

Every call that creates or pays passes a `UniqueRequestToken` derived from what it does, so a
retried call (network error, crash between call and commit) never creates or pays twice: MTurk
answers a repeated token with an error naming it, which is treated as success.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from xml.sax.saxutils import escape

from django.conf import settings

from annotation.models import Annotator, Assignment, Qualification
from annotation.services.external import assignment_review_sent
from annotation.services.review import assignments_auto_approve
from campaigns.models import Campaign
from campaigns.spec import PST
from common.errors import ApplicationError

from .models import MTurkBonus, MTurkHit, MTurkQualificationType

SANDBOX_ENDPOINT = "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
PRODUCTION_ENDPOINT = "https://mturk-requester.us-east-1.amazonaws.com"
EXTERNAL_QUESTION_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2006-07-14/ExternalQuestion.xsd"
QUESTION_FORM_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2017-11-06/QuestionForm.xsd"
ANSWER_KEY_NS = "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/AnswerKey.xsd"
# System qualification type ids (MTurk documentation).
QUAL_LOCALE = "00000000000000000071"
QUAL_APPROVAL_RATE = "000000000000000000L0"


def mturk_client(*, sandbox: bool | None = None) -> Any:
    """A boto3 MTurk client; credentials come from the environment (AWS_ACCESS_KEY_ID, ...)."""
    import boto3

    use_sandbox = settings.MTURK_SANDBOX if sandbox is None else sandbox
    return boto3.client("mturk", region_name="us-east-1",
                        endpoint_url=SANDBOX_ENDPOINT if use_sandbox else PRODUCTION_ENDPOINT)


def _token(*parts: object) -> str:
    """UniqueRequestToken (at most 64 characters) derived from the operation and its subject."""
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:64]


def _is_repeat(exc: Exception) -> bool:
    text = str(exc)
    return "already exists" in text.lower() or "UniqueRequestToken" in text or "idempotency" in text.lower()


# ----------------------------------------------------------------------------------- XML
def external_question_xml(url: str, frame_height: int = 0) -> str:
    """ExternalQuestion: MTurk shows `url` in an iframe (0 = full height)."""
    return (f'<ExternalQuestion xmlns="{EXTERNAL_QUESTION_NS}"><ExternalURL>{escape(url)}</ExternalURL>'
            f"<FrameHeight>{int(frame_height)}</FrameHeight></ExternalQuestion>")


def question_form_xml(qualification: Qualification, image_url_of: Any) -> str:
    """QuestionForm of a qualification test: one radio-button question per item, with its image."""
    parts = [f'<QuestionForm xmlns="{QUESTION_FORM_NS}">']
    if qualification.instructions:
        parts.append(f"<Overview><Text>{escape(qualification.instructions)}</Text></Overview>")
    for item in qualification.items.order_by("position"):
        url = image_url_of(item.image)
        choices = "".join(
            f"<Selection><SelectionIdentifier>{escape(_selection_id(c))}</SelectionIdentifier>"
            f"<Text>{escape(c)}</Text></Selection>" for c in item.choices)
        parts.append(
            "<Question>"
            f"<QuestionIdentifier>item-{item.pk}</QuestionIdentifier>"
            f"<DisplayName>Item {item.position + 1}</DisplayName>"
            "<IsRequired>true</IsRequired>"
            "<QuestionContent>"
            f"<Binary><MimeType><Type>image</Type><SubType>png</SubType></MimeType>"
            f"<DataURL>{escape(url)}</DataURL><AltText>Image {item.position + 1}</AltText></Binary>"
            f"<Text>{escape(item.text)}</Text>"
            "</QuestionContent>"
            "<AnswerSpecification><SelectionAnswer><StyleSuggestion>radiobutton</StyleSuggestion>"
            f"<Selections>{choices}</Selections></SelectionAnswer></AnswerSpecification>"
            "</Question>")
    parts.append("</QuestionForm>")
    return "".join(parts)


def answer_key_xml(qualification: Qualification) -> str:
    """AnswerKey: 1 point per correct item; the score is mapped to a percentage (0-100)."""
    items = list(qualification.items.order_by("position"))
    parts = [f'<AnswerKey xmlns="{ANSWER_KEY_NS}">']
    for item in items:
        parts.append(
            f"<Question><QuestionIdentifier>item-{item.pk}</QuestionIdentifier>"
            f"<AnswerOption><SelectionIdentifier>{escape(_selection_id(item.correct))}</SelectionIdentifier>"
            "<AnswerScore>1</AnswerScore></AnswerOption></Question>")
    parts.append(f"<QualificationValueMapping><PercentageMapping><MaximumSummedScore>{len(items)}"
                 "</MaximumSummedScore></PercentageMapping></QualificationValueMapping></AnswerKey>")
    return "".join(parts)


def _selection_id(choice: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in choice.lower())


# ----------------------------------------------------------------------------------- publishing
@dataclass(frozen=True)
class HitSettings:
    title: str
    description: str
    keywords: str = "image, labeling, research"
    reward: Decimal = Decimal("0.10")
    assignment_duration_s: int = 1800
    lifetime_s: int = 7 * 24 * 3600
    auto_approval_delay_s: int = 3 * 24 * 3600
    locales: tuple[str, ...] = ("US", "GB")
    min_approval_rate: int = 95
    frame_height: int = 0


def hit_settings_for(campaign: Campaign) -> HitSettings:
    """The campaign's `annotation.mturk` settings with the papers' defaults (US/UK workers, $0.10)."""
    cfg = (campaign.spec.get("crowd") or {}).get("mturk") or {}
    kind = "Paired Stereotype Test" if campaign.kind == PST else "gender presentation"
    return HitSettings(
        title=cfg.get("title") or f"Label people in images ({kind} study)",
        description=cfg.get("description") or "Look at generated images and answer short questions about them.",
        keywords=cfg.get("keywords", "image, labeling, research"),
        reward=Decimal(str(cfg.get("reward", "0.10"))),
        assignment_duration_s=int(cfg.get("assignment_duration_s", 1800)),
        lifetime_s=int(cfg.get("lifetime_s", 7 * 24 * 3600)),
        auto_approval_delay_s=int(cfg.get("auto_approval_delay_s", 3 * 24 * 3600)),
        locales=tuple(cfg.get("locales", ("US", "GB"))),
        min_approval_rate=int(cfg.get("min_approval_rate", 95)),
    )


def qualification_requirements(campaign: Campaign, hs: HitSettings) -> list[dict[str, Any]]:
    reqs: list[dict[str, Any]] = []
    if hs.locales:
        reqs.append({"QualificationTypeId": QUAL_LOCALE, "Comparator": "In",
                     "LocaleValues": [{"Country": c} for c in hs.locales], "ActionsGuarded": "DiscoverPreviewAndAccept"})
    if hs.min_approval_rate:
        reqs.append({"QualificationTypeId": QUAL_APPROVAL_RATE, "Comparator": "GreaterThanOrEqualTo",
                     "IntegerValues": [hs.min_approval_rate], "ActionsGuarded": "DiscoverPreviewAndAccept"})
    for qt in MTurkQualificationType.objects.filter(qualification__campaign=campaign):
        reqs.append({"QualificationTypeId": qt.qualification_type_id, "Comparator": "GreaterThanOrEqualTo",
                     "IntegerValues": [qt.passing_percent], "ActionsGuarded": "Accept"})
    return reqs


def hits_needed(*, questions: int, hit_size: int) -> int:
    """MTurk HITs to publish: one per product HIT of k questions; each HIT is taken by R workers."""
    return math.ceil(questions / max(1, hit_size))


def task_url(campaign: Campaign) -> str:
    return f"{settings.SITE_URL.rstrip('/')}/mturk/{campaign.pk}/"


def mturk_hits_publish(*, campaign: Campaign, count: int, redundancy: int, client: Any = None) -> list[MTurkHit]:
    """Publish `count` ExternalQuestion HITs with MaxAssignments = the campaign's redundancy R.

    Plan R up front: MTurk cannot raise a HIT from under 10 to 10 or more assignments later, so R
    is refused above 9 unless asked for explicitly in the spec (mturk.allow_10_or_more)."""
    if campaign.status not in (Campaign.Status.OPEN, Campaign.Status.PAUSED):
        raise ApplicationError("Open the campaign for annotation before publishing HITs.",
                               errors={"campaign": [f"status is {campaign.status}"]})
    if not 1 <= redundancy <= 100:
        raise ApplicationError("MaxAssignments must be between 1 and 100.", errors={"redundancy": ["out of range"]})
    client = client or mturk_client()
    hs = hit_settings_for(campaign)
    question = external_question_xml(task_url(campaign), hs.frame_height)
    reqs = qualification_requirements(campaign, hs)
    existing = MTurkHit.objects.filter(campaign=campaign).count()
    created = []
    for n in range(existing, existing + count):
        response = client.create_hit(
            MaxAssignments=redundancy, AutoApprovalDelayInSeconds=hs.auto_approval_delay_s,
            LifetimeInSeconds=hs.lifetime_s, AssignmentDurationInSeconds=hs.assignment_duration_s,
            Reward=f"{hs.reward:.2f}", Title=hs.title, Keywords=hs.keywords, Description=hs.description,
            Question=question, RequesterAnnotation=f"campaign:{campaign.pk}",
            QualificationRequirements=reqs, UniqueRequestToken=_token("create_hit", campaign.pk, n))
        hit = response["HIT"]
        created.append(MTurkHit.objects.create(campaign=campaign, hit_id=hit["HITId"], hit_type_id=hit["HITTypeId"],
                                               sequence=n, max_assignments=redundancy, reward=hs.reward))
    return created


def mturk_qualification_type_create(*, qualification: Qualification, image_url_of: Any, client: Any = None,
                                    retry_delay_s: int | None = None) -> MTurkQualificationType:
    """The product's qualification test as an MTurk qualification type with a Test and AnswerKey,
    so MTurk grades it; workers who pass (all correct by default) may accept the HITs."""
    existing = MTurkQualificationType.objects.filter(qualification=qualification).first()
    if existing:
        return existing
    if not qualification.items.exists():
        raise ApplicationError("The qualification test has no items.", errors={"qualification": ["no items"]})
    client = client or mturk_client()
    passing = int(round(qualification.pass_fraction * 100))
    response = client.create_qualification_type(
        Name=f"{qualification.name} (campaign {qualification.campaign_id})",
        Keywords="qualification, image labeling",
        Description=(qualification.instructions or f"Qualification test: {qualification.name}")[:2000],
        QualificationTypeStatus="Active",
        RetryDelayInSeconds=retry_delay_s if retry_delay_s is not None else qualification.retake_after_minutes * 60,
        Test=question_form_xml(qualification, image_url_of),
        AnswerKey=answer_key_xml(qualification),
        TestDurationInSeconds=1800,
    )
    qt = response["QualificationType"]
    return MTurkQualificationType.objects.create(qualification=qualification,
                                                 qualification_type_id=qt["QualificationTypeId"],
                                                 passing_percent=passing)


def mturk_qualification_grant(*, qualification: Qualification, annotator: Annotator, client: Any = None) -> bool:
    """Grant the MTurk qualification to a worker who passed the test on our page."""
    qt = MTurkQualificationType.objects.filter(qualification=qualification).first()
    if qt is None or not annotator.mturk_worker_id:
        return False
    client = client or mturk_client()
    client.associate_qualification_with_worker(QualificationTypeId=qt.qualification_type_id,
                                               WorkerId=annotator.mturk_worker_id, IntegerValue=100,
                                               SendNotification=False)
    return True


# ----------------------------------------------------------------------------------- sync
@dataclass
class SyncResult:
    listed: int = 0
    approved: int = 0
    rejected: int = 0
    bonuses: int = 0
    blocked: int = 0
    unknown: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def mturk_sync(*, campaign: Campaign, client: Any = None, block_reason: str = "") -> SyncResult:
    """List the campaign's MTurk assignments and apply the product's review to each:
    approved -> approve_assignment, rejected -> reject_assignment (with the reason as feedback),
    bonus > 0 -> send_bonus (UniqueRequestToken: once per assignment), blocked annotators ->
    create_worker_block. Assignments the product does not know are counted, not touched. HITs due
    for auto-approval are approved first (what the annotators table already counts as approved; reads
    never store it, the hourly beat task and this sync do)."""
    client = client or mturk_client()
    result = SyncResult()
    assignments_auto_approve(campaign=campaign)
    ours = {a.external_assignment_id: a for a in Assignment.objects.filter(
        campaign=campaign, external_assignment_id__isnull=False).select_related("annotator")}
    for hit in MTurkHit.objects.filter(campaign=campaign):
        token = None
        while True:
            kwargs: dict[str, Any] = {"HITId": hit.hit_id, "MaxResults": 100,
                                      "AssignmentStatuses": ["Submitted", "Approved", "Rejected"]}
            if token:
                kwargs["NextToken"] = token
            page = client.list_assignments_for_hit(**kwargs)
            for remote in page.get("Assignments", []):
                result.listed += 1
                local = ours.get(remote["AssignmentId"])
                if local is None:
                    result.unknown += 1
                    continue
                _apply_review(client, local, remote, result)
            token = page.get("NextToken")
            if not token:
                break
    from annotation.models import Enrollment

    for enrollment in Enrollment.objects.filter(campaign=campaign, status=Enrollment.Status.BLOCKED).select_related(
            "annotator"):
        worker = enrollment.annotator.mturk_worker_id
        if worker:
            client.create_worker_block(WorkerId=worker, Reason=(block_reason or enrollment.status_reason
                                                                or "Quality below the study's threshold")[:1024])
            result.blocked += 1
    return result


def _apply_review(client: Any, local: Assignment, remote: dict[str, Any], result: SyncResult) -> None:
    status = remote.get("AssignmentStatus")
    if status == "Submitted" and local.review == Assignment.Review.APPROVED:
        client.approve_assignment(AssignmentId=local.external_assignment_id,
                                  RequesterFeedback=(local.review_reason or "Thank you!")[:1024])
        result.approved += 1
    elif status == "Submitted" and local.review == Assignment.Review.REJECTED:
        client.reject_assignment(AssignmentId=local.external_assignment_id,
                                 RequesterFeedback=(local.review_reason or "Did not follow the instructions.")[:1024])
        result.rejected += 1
    if local.bonus and local.bonus > 0 and status in ("Submitted", "Approved") \
            and local.review == Assignment.Review.APPROVED and not MTurkBonus.objects.filter(assignment=local).exists():
        token = _token("send_bonus", local.external_assignment_id, local.bonus)
        try:
            client.send_bonus(WorkerId=local.annotator.mturk_worker_id, BonusAmount=f"{local.bonus:.2f}",
                              AssignmentId=local.external_assignment_id,
                              Reason="Bonus for careful work on our study.", UniqueRequestToken=token)
        except Exception as exc:  # a repeated token: paid by an earlier, interrupted sync
            if not _is_repeat(exc):
                raise
        MTurkBonus.objects.get_or_create(assignment=local, defaults={"amount": local.bonus, "token": token})
        result.bonuses += 1
    assignment_review_sent(assignment_id=local.pk)

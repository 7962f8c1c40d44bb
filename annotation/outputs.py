"""Output serializers of annotation's API: the response bodies, declared at the edge (issue 21).

They document, in the OpenAPI schema, the keys each endpoint returns (the keys are a public contract:
extend, never rename). The views keep returning what the services and selectors build; these classes
are the documentation of that shape, held true by tests/contracts/test_response_schemas.py.
"""
from __future__ import annotations

from rest_framework import serializers

# A free-form value (an object or list whose inner keys the docs/ pages describe).
ANY = {"help_text": "free-form JSON, see docs/annotation.md"}


def page_of(name: str, row: type[serializers.Serializer]) -> type[serializers.Serializer]:
    """The paginated list shape of common.pagination.PageNumberPagination."""
    return type(name, (serializers.Serializer,), {
        "count": serializers.IntegerField(), "next": serializers.URLField(allow_null=True),
        "previous": serializers.URLField(allow_null=True), "results": row(many=True),
        "__doc__": f"A page of {row.__name__} rows (`?page=`, `?page_size=` up to 500)."})


# ---------------------------------------------------------------------------------------------
# Annotators
# ---------------------------------------------------------------------------------------------
class AnnotatorSignupOutput(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    token = serializers.CharField(help_text="The API token (Authorization: Token ...).")
    token_expires_at = serializers.DateTimeField(allow_null=True, help_text="When it expires (API_TOKEN_TTL_S).")


class TokenOutput(serializers.Serializer):
    token = serializers.CharField()
    expires_at = serializers.DateTimeField(allow_null=True)


class LogoutOutput(serializers.Serializer):
    logged_out = serializers.BooleanField()
    tokens_revoked = serializers.IntegerField()


class DemographicsReleaseOutput(serializers.Serializer):
    number = serializers.IntegerField()
    released_at = serializers.CharField()
    reason = serializers.CharField()
    annotators = serializers.IntegerField()
    min_group = serializers.IntegerField()


class DemographicsReleasesOutput(serializers.Serializer):
    releases = DemographicsReleaseOutput(many=True)


class AnnotatorMeOutput(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    mturk_worker_id = serializers.CharField(allow_null=True)
    prolific_pid = serializers.CharField(allow_null=True)
    demographics = serializers.JSONField(help_text="Self-reported demographics (profile); {} for a crowd-link account.")
    demographics_hidden = serializers.BooleanField(help_text="A crowd-link account reads back nothing stored.")


class ConsentOutput(serializers.Serializer):
    campaign = serializers.IntegerField()
    consented = serializers.BooleanField()
    consented_at = serializers.DateTimeField(allow_null=True)
    consent_text = serializers.CharField()
    status = serializers.CharField(help_text="The enrollment's status.")


class TaskCampaignOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()


class TaskOutput(serializers.Serializer):
    """What an annotator needs before and while working (annotation.selectors.task_info)."""

    campaign = TaskCampaignOutput()
    instructions = serializers.CharField()
    family_instructions = serializers.JSONField(**ANY)
    consent_text = serializers.CharField()
    consented = serializers.BooleanField()
    enrollment_status = serializers.CharField(allow_null=True)
    status_reason = serializers.CharField()
    qualifications = serializers.ListField(child=serializers.JSONField(), help_text="Each test and the caller's status.")
    examples = serializers.ListField(child=serializers.JSONField(), help_text="{image_url, family, answer, caption}.")
    demographics = serializers.BooleanField(help_text="Whether the task page asks the demographics form.")
    hit_size = serializers.IntegerField()
    hit_unit = serializers.ChoiceField(choices=["images", "questions"])
    lease_minutes = serializers.IntegerField()
    reward = serializers.CharField()
    reward_per = serializers.CharField()
    currency = serializers.CharField()


# ---------------------------------------------------------------------------------------------
# Researcher: lifecycle, questions, examples
# ---------------------------------------------------------------------------------------------
class CampaignStatusOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()


class CampaignOpenOutput(CampaignStatusOutput):
    questions_created = serializers.IntegerField(help_text="Questions created by this call.")
    questions = serializers.IntegerField(help_text="Non-gold questions of the campaign.")


class CampaignOpeningOutput(serializers.Serializer):
    """202: a worker opens the campaign (over the request work budget, common/budget.py)."""

    id = serializers.IntegerField()
    status = serializers.CharField(help_text='"building" while a worker creates the questions.')
    progress = serializers.FloatField(help_text="0-1.")
    updated_s = serializers.FloatField(help_text="Seconds since the worker's last progress (its heartbeat); after "
                                                 "CAMPAIGN_OPEN_STALE_S without one, the next POST starts a new worker.")
    detail = serializers.CharField(help_text="What is happening, in a sentence (being opened, cannot be opened again "
                                             "while it runs).")


class QuestionLabelOutput(serializers.Serializer):
    label = serializers.CharField()
    votes = serializers.JSONField(help_text="{choice: votes}.")
    answers = serializers.IntegerField()
    tie = serializers.BooleanField()


class QuestionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    image = serializers.IntegerField()
    slot = serializers.CharField()
    family = serializers.CharField()
    text = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField())
    metadata = serializers.JSONField(**ANY)
    required = serializers.IntegerField()
    assigned = serializers.IntegerField()
    completed = serializers.IntegerField()
    is_gold = serializers.BooleanField()
    gold_answer = serializers.CharField(allow_null=True)
    label = QuestionLabelOutput(allow_null=True, help_text="The stored majority label, null before any answer.")


QuestionPageOutput = page_of("QuestionPageOutput", QuestionOutput)


class RedundancyOutput(serializers.Serializer):
    updated = serializers.IntegerField()
    required = serializers.IntegerField()


class GoldOutput(serializers.Serializer):
    gold = serializers.IntegerField(help_text="Questions marked gold.")


class ExampleOutput(serializers.Serializer):
    id = serializers.IntegerField()
    family = serializers.CharField()
    image = serializers.IntegerField(allow_null=True, help_text="The campaign image, null for an upload.")
    image_url = serializers.CharField()
    answer = serializers.CharField()
    caption = serializers.CharField()


class ExamplesOutput(serializers.Serializer):
    examples = ExampleOutput(many=True)
    families = serializers.ListField(child=serializers.CharField())
    per_family = serializers.IntegerField()


# ---------------------------------------------------------------------------------------------
# Qualifications
# ---------------------------------------------------------------------------------------------
class QualificationOutput(serializers.Serializer):
    """A qualification test; `passed`, `attempts`, `attempts_left`, `retake_at` for an annotator;
    items' `image` and `correct` and `stats` for the researcher."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    family = serializers.CharField()
    instructions = serializers.CharField()
    pass_fraction = serializers.FloatField()
    max_attempts = serializers.IntegerField()
    retake_after_minutes = serializers.IntegerField()
    items = serializers.ListField(child=serializers.JSONField(), help_text="{id, image_url, text, choices}.")
    passed = serializers.BooleanField(required=False)
    attempts = serializers.IntegerField(required=False)
    attempts_left = serializers.IntegerField(required=False)
    retake_at = serializers.DateTimeField(required=False, allow_null=True)
    stats = serializers.JSONField(required=False, help_text="{attempts, passed, annotators, pass_rate}.")


class QualificationListOutput(serializers.Serializer):
    results = QualificationOutput(many=True)


class QualificationAttemptOutput(serializers.Serializer):
    passed = serializers.BooleanField()
    total = serializers.IntegerField()
    retake_at = serializers.DateTimeField(allow_null=True)
    attempts_left = serializers.IntegerField()


# ---------------------------------------------------------------------------------------------
# HITs
# ---------------------------------------------------------------------------------------------
class HitQuestionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    image_url = serializers.CharField()
    text = serializers.CharField()
    choices = serializers.ListField(child=serializers.CharField())
    family = serializers.CharField()


class HitOutput(serializers.Serializer):
    """The HIT as the annotator sees it (annotation.hits.rules.HitPayload)."""

    id = serializers.IntegerField()
    expires_at = serializers.DateTimeField()
    questions = HitQuestionOutput(many=True)


class HeartbeatOutput(serializers.Serializer):
    id = serializers.IntegerField()
    expires_at = serializers.DateTimeField()


class AssignmentStatusOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()


class NextHitOutput(serializers.Serializer):
    """What POST /api/campaigns/{id}/assignments/ would have answered, as a value."""

    status = serializers.IntegerField(help_text="201 a new HIT, 200 the one already held, 204 nothing for now, "
                                                "or the error's status (403, 409, ...)")
    hit = HitOutput(allow_null=True)
    retry_after = serializers.IntegerField(allow_null=True, help_text="With 204: ask again after this many "
                                                                      "seconds (null: the annotator is finished)")
    detail = serializers.CharField(required=False, help_text="An error's message (error statuses only)")
    errors = serializers.DictField(child=serializers.ListField(child=serializers.CharField()), required=False)


class SubmitOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    answers = serializers.IntegerField()
    submitted_at = serializers.DateTimeField(allow_null=True)
    reward = serializers.CharField()
    duplicate = serializers.BooleanField(help_text="True when the same submission was already stored.")
    next = NextHitOutput(required=False, help_text='Only when the body asked for it ("next": true).')


class ReviewOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    review = serializers.CharField()
    review_reason = serializers.CharField()
    reward = serializers.CharField()
    bonus = serializers.CharField()


# ---------------------------------------------------------------------------------------------
# Researcher: annotators, archive
# ---------------------------------------------------------------------------------------------
class AnnotatorRowOutput(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    status = serializers.CharField()
    status_reason = serializers.CharField()
    consented_at = serializers.DateTimeField(allow_null=True)
    mturk_worker_id = serializers.CharField(allow_null=True)
    prolific_pid = serializers.CharField(allow_null=True)
    answers = serializers.IntegerField()
    gold_answers = serializers.IntegerField()
    gold_correct = serializers.IntegerField()
    gold_accuracy = serializers.FloatField(allow_null=True)
    agreement = serializers.FloatField(allow_null=True)
    agreement_answers = serializers.IntegerField()
    fast_answers = serializers.IntegerField()
    answers_per_minute = serializers.FloatField(allow_null=True)
    hits_submitted = serializers.IntegerField()
    hits_approved = serializers.IntegerField()
    hits_rejected = serializers.IntegerField()
    reward_total = serializers.CharField()
    bonus_total = serializers.CharField()


class AnnotatorTableOutput(serializers.Serializer):
    results = AnnotatorRowOutput(many=True)


class AnnotatorActionOutput(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    status_reason = serializers.CharField()


class CampaignImportOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()


# ---------------------------------------------------------------------------------------------
# People: demographics, pay
# ---------------------------------------------------------------------------------------------
class DemographicsResponseOutput(serializers.Serializer):
    answers = serializers.JSONField(**ANY)
    consent_version = serializers.CharField()
    consented_at = serializers.DateTimeField(allow_null=True)
    withdrawn_at = serializers.DateTimeField(allow_null=True)


class DemographicsFormOutput(serializers.Serializer):
    """The annotator's form (GET as an annotator)."""

    ask = serializers.BooleanField()
    fields = serializers.ListField(child=serializers.CharField())
    consent_version = serializers.CharField()
    consent_text = serializers.CharField()
    researcher_access = serializers.CharField()
    choices = serializers.JSONField(help_text="{field: [choices]}.")
    response = DemographicsResponseOutput(allow_null=True)
    response_hidden = serializers.BooleanField(help_text="A crowd-link account: stored answers are never shown.")


class DemographicsSummaryOutput(serializers.Serializer):
    """The group counts (GET as the owning researcher); `individual` only with researcher_access individual."""

    ask = serializers.BooleanField()
    fields = serializers.ListField(child=serializers.CharField())
    researcher_access = serializers.CharField()
    consent_version = serializers.CharField()
    min_group = serializers.IntegerField()
    annotators = serializers.IntegerField()
    reported = serializers.IntegerField()
    groups = serializers.JSONField(help_text="{field: {group: count | suppressed}}.")
    release = DemographicsReleaseOutput(allow_null=True)
    next_release = serializers.JSONField(help_text="{new_annotators, needed}.")
    individual = serializers.ListField(child=serializers.JSONField(), required=False)


class DemographicsSubmitOutput(DemographicsResponseOutput):
    campaign = serializers.IntegerField()


class DemographicsWithdrawOutput(serializers.Serializer):
    withdrawn_at = serializers.DateTimeField()
    campaigns = serializers.IntegerField(help_text="Campaign responses marked withdrawn.")
    erased = serializers.IntegerField(help_text="Responses (and the profile) whose answers were erased.")


class PayOutput(serializers.Serializer):
    """Fair pay (annotation.pay.pay_summary)."""

    currency = serializers.CharField()
    floor_usd_per_hour = serializers.FloatField()
    reward = serializers.CharField()
    reward_per = serializers.CharField()
    hits = serializers.IntegerField()
    answers = serializers.IntegerField()
    median_seconds_per_answer = serializers.FloatField(allow_null=True)
    median_effective_hourly = serializers.FloatField(allow_null=True)
    below_floor = serializers.BooleanField(allow_null=True)
    answers_per_hit = serializers.FloatField(allow_null=True)
    suggested_reward = serializers.CharField(allow_null=True)
    reward_for_floor = serializers.CharField(allow_null=True)
    note = serializers.CharField(allow_null=True)
    annotators = serializers.ListField(child=serializers.JSONField(), help_text=(
        "{id, username, hits, answers, median_seconds_per_answer, seconds_worked, earned, effective_hourly, "
        "below_floor}."))

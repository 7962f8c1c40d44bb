"""Input serializers of annotation's API: the request bodies, declared at the edge.

Each view validates its body with one of these (common.edge.body_parse) and hands the validated
values to one service; the services keep the checks that need the database. The HIT submit keeps its
profiled hand-written parser (annotation.hits.rules.answers_parse, on the hot path):
`AssignmentSubmitInput` only documents that body in the OpenAPI schema.
"""
from __future__ import annotations

from rest_framework import serializers

from common.edge import StrictBooleanField, StrictIntegerField, StrictNumberField

EXTERNAL_ID = {"max_length": 64, "allow_null": True, "allow_blank": True, "required": False}


class AnnotatorSignupInput(serializers.Serializer):
    username = serializers.CharField(max_length=150, trim_whitespace=False)
    password = serializers.CharField(max_length=128, trim_whitespace=False)
    consent = StrictBooleanField(help_text="Must be true: the annotator agrees to take part.")
    mturk_worker_id = serializers.CharField(**EXTERNAL_ID)
    prolific_pid = serializers.CharField(**EXTERNAL_ID)


class AnnotatorMeInput(serializers.Serializer):
    """PATCH: only the keys sent change; null or "" detaches an external id. Linking or changing an
    external id needs the account's `password` (docs/security.md, "Crowd-link authentication")."""

    mturk_worker_id = serializers.CharField(**EXTERNAL_ID)
    prolific_pid = serializers.CharField(**EXTERNAL_ID)
    password = serializers.CharField(max_length=128, trim_whitespace=False, required=False, write_only=True,
                                     help_text="The account's password: required to link or change an external id.")
    demographics = serializers.DictField(required=False, help_text="Short self-reported answers, e.g. "
                                         "{\"age_range\": \"25-34\"}.")


class ConsentInput(serializers.Serializer):
    consent = StrictBooleanField(help_text="Must be true to enrol in the campaign.")


class QuestionsRedundancyInput(serializers.Serializer):
    """Raise R for the listed questions or for those matching `filter` (one of the two)."""

    required = StrictIntegerField(min_value=1, max_value=50)
    questions = serializers.ListField(child=StrictIntegerField(), required=False, max_length=100_000)
    filter = serializers.DictField(required=False, help_text="Question filter: setting, family, slot, image "
                                   "(id or list of ids), prompt_key, label, tie; unknown keys are named (400).")


class GoldItemInput(serializers.Serializer):
    question = StrictIntegerField()
    answer = serializers.CharField(max_length=200)


class QuestionsGoldInput(serializers.Serializer):
    items = serializers.ListField(child=GoldItemInput(), max_length=10_000)


class QualificationItemInput(serializers.Serializer):
    image = StrictIntegerField()
    correct = serializers.CharField(max_length=200)
    text = serializers.CharField(required=False, max_length=2000)
    choices = serializers.ListField(child=serializers.CharField(max_length=200), required=False, max_length=20)


class QualificationCreateInput(serializers.Serializer):
    family = serializers.CharField(max_length=200, help_text="e.g. 'person' or 'attribute:dress'")
    name = serializers.CharField(required=False, allow_blank=True, max_length=200)
    instructions = serializers.CharField(required=False, allow_blank=True, max_length=20_000)
    items = serializers.ListField(child=QualificationItemInput(), max_length=1000)
    pass_fraction = StrictNumberField(required=False, min_value=0, max_value=1)
    retake_after_minutes = StrictIntegerField(required=False, min_value=0, max_value=100_000)
    max_attempts = StrictIntegerField(required=False, min_value=1, max_value=100_000)


class QualificationAttemptInput(serializers.Serializer):
    answers = serializers.ListField(child=serializers.JSONField(), max_length=1000,
                                    help_text="One choice per item in the test's order, or "
                                              "[{\"item\": id, \"choice\": ...}].")


class AnswerInput(serializers.Serializer):
    question = StrictIntegerField()
    choice = serializers.CharField(max_length=200)
    time_ms = StrictIntegerField(required=False, allow_null=True, min_value=0)


class AssignmentSubmitInput(serializers.Serializer):
    """Documentation only: the submit hot path parses with annotation.hits.rules.answers_parse."""

    answers = serializers.ListField(child=AnswerInput())
    next = serializers.BooleanField(required=False, default=False, help_text=(
        "Also take the next HIT of the same campaign, once the answers are stored: the response's `next`."))


class AssignmentReviewInput(serializers.Serializer):
    action = serializers.ChoiceField(choices=["approve", "reject", "bonus"])
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000,
                                   help_text="Required for a rejection.")
    bonus = serializers.DecimalField(required=False, allow_null=True, max_digits=7, decimal_places=2,
                                     min_value=0, max_value=1000)


class AnnotatorActionInput(serializers.Serializer):
    action = serializers.ChoiceField(choices=["pause", "block", "resume", "approve"])
    reason = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class ArchiveImportInput(serializers.Serializer):
    archive = serializers.FileField(help_text="A campaign archive made by the export endpoint (zip).")


class ExampleCreateInput(serializers.Serializer):
    """An example image of the instructions: a campaign image (`image`) or an upload (`file`,
    multipart), never both. The service checks the family, the answer against the family's choices,
    the image's campaign and status, and the upload's bytes."""

    family = serializers.CharField(max_length=220, help_text='e.g. "person:paired" (PST) or "attribute:dress" (GEP)')
    answer = serializers.CharField(max_length=100, help_text="The correct answer, one of the family's choices.")
    caption = serializers.CharField(max_length=300, required=False, allow_blank=True)
    image = serializers.IntegerField(required=False, allow_null=True, help_text="An image id of this campaign.")
    file = serializers.FileField(required=False, help_text="An uploaded image (multipart) instead of `image`.")


class DemographicsInput(serializers.Serializer):
    """The task page's optional demographics form (docs/annotation.md "Demographics"); the vocabulary
    and the consent rules are checked by the service (400 `answers.<field>`, `consent_version`)."""

    consent = StrictBooleanField(help_text="Must be true: the annotator agrees to the demographics consent text.")
    consent_version = serializers.CharField(max_length=32, help_text="The version of the consent text shown.")
    answers = serializers.DictField(help_text="{\"gender\", \"gender_self_described\", \"age_band\", \"country\"}; "
                                    "each optional.")

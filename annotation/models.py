"""Annotation: questions made from images, annotators, qualification tests, HITs with leases,
append-only answers and aggregated labels.

Invariants live in the database: one question per (image, slot); one live lease or answer per
(question, annotator); one original answer per (question, annotator) (corrections are new rows
linking the one they correct).
"""
from __future__ import annotations

from django.conf import settings
from django.db import models

from campaigns.models import Campaign
from generation.models import Image


class Annotator(models.Model):
    """A crowd worker. Logs in as a Django user that is not a researcher.

    `kind` says how the account is entered: `password` (signed up with a username and password; an
    external id on it was linked by its owner, with the password), `mturk` / `prolific` (created by
    that platform's link, no usable password: only that platform's link enters it, see
    crowd/entry.py), `imported` (an archive's pseudonymous annotator: never enters)."""

    class Kind(models.TextChoices):
        PASSWORD = "password", "Password account"
        MTURK = "mturk", "MTurk link account"
        PROLIFIC = "prolific", "Prolific link account"
        IMPORTED = "imported", "Imported (cannot log in)"

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotator")
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.PASSWORD)
    # An id is held by at most one link account (the platform's own flow) and claimed by at most one
    # password account; a claim never blocks the link account (crowd/entry.py).
    mturk_worker_id = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    prolific_pid = models.CharField(max_length=64, null=True, blank=True, db_index=True)
    # Self-reported through PATCH /api/annotators/me/ (the profile, not tied to a campaign): optional, with
    # the time of that consent; erased on withdrawal (docs/annotation.md "Demographics").
    demographics = models.JSONField(default=dict, blank=True)
    demographics_consented_at = models.DateTimeField(null=True, blank=True)
    demographics_withdrawn_at = models.DateTimeField(null=True, blank=True)  # audit: last withdrawal
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["mturk_worker_id"], condition=models.Q(kind="password"),
                                    name="annotator_mturk_claim_unique"),
            models.UniqueConstraint(fields=["mturk_worker_id"], condition=~models.Q(kind="password"),
                                    name="annotator_mturk_link_unique"),
            models.UniqueConstraint(fields=["prolific_pid"], condition=models.Q(kind="password"),
                                    name="annotator_prolific_claim_unique"),
            models.UniqueConstraint(fields=["prolific_pid"], condition=~models.Q(kind="password"),
                                    name="annotator_prolific_link_unique"),
        ]

    def __str__(self) -> str:
        return f"annotator {self.pk} ({self.user_id})"

    @property
    def is_link_account(self) -> bool:
        """Entered through an unsigned platform link (MTurk, Prolific): whoever opens the link with
        the id is let in, so the account is a claim and reads back nothing stored for it."""
        return self.kind in (self.Kind.MTURK, self.Kind.PROLIFIC)


class Enrollment(models.Model):
    """An annotator's membership of a campaign: consent, and quality status."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        PAUSED = "paused", "Paused"    # no new HITs until resumed
        BLOCKED = "blocked", "Blocked"  # no new HITs; answers excluded from aggregation (configurable)

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="enrollments")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="enrollments")
    consented_at = models.DateTimeField(null=True, blank=True)
    consent_text = models.TextField(blank=True, default="")  # the text the annotator agreed to
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    status_reason = models.CharField(max_length=500, blank=True, default="")
    status_changed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "annotator"], name="enrollment_unique")]
        # A campaign's blocked annotators, read once by every submit's labels statement (annotation/labels.py):
        # only the blocked rows, so the read stays as small as the list whatever the campaign's size.
        indexes = [models.Index(fields=["campaign", "annotator"], condition=models.Q(status="blocked"),
                                name="enrollment_blocked_idx")]


class DemographicsResponse(models.Model):
    """An annotator's optional self-reported demographics for one campaign, with the consent version
    they agreed to (the campaign's `annotation.demographics.consent_version`) and when. Per annotator
    and campaign because the consent is the campaign's: what its researchers may see (aggregates or
    individual answers) is stated in that campaign's consent text. A withdrawal erases `answers` and
    keeps the row as the audit of when (`withdrawn_at`)."""

    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="demographics_responses")
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="demographics_responses")
    answers = models.JSONField(default=dict, blank=True)  # {"gender", "gender_self_described", "age_band", "country"}
    consent_version = models.CharField(max_length=32, blank=True, default="")
    consented_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "campaign"], name="demographics_unique_annotator_campaign"),
            # Answers only with a consent: the database refuses a row that holds answers without one.
            models.CheckConstraint(condition=models.Q(answers={}) | models.Q(consented_at__isnull=False),
                                   name="demographics_answers_need_consent"),
        ]


class DemographicsRelease(models.Model):
    """A numbered, fixed release of a campaign's demographic aggregates (docs/security.md,
    "Demographics release rule"): researchers see group counts only from a release, never live ones,
    so polling before and after one annotator joins shows the same numbers. A release is cut when
    the campaign closes, or on request once at least `min_group` annotators joined since the previous
    one. `members` are the annotator ids it covers (the report's `annotators` section uses only
    them); `sizes` the raw group sizes per field, never served (the rule in
    `annotation.demographics.release_counts` derives what is shown, for any `min_group` at or above
    the release's)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="demographics_releases")
    number = models.PositiveIntegerField()
    reason = models.CharField(max_length=16)  # "close" or "request"
    min_group = models.PositiveIntegerField()
    members = models.JSONField(default=list)
    sizes = models.JSONField(default=dict)  # field -> group -> annotators
    reported = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "number"], name="demographics_release_unique")]


# Indexes on the rows a HIT cycle writes: every change of `assigned` / `completed` (20 per 10-question HIT)
# is a non-HOT update, so it adds an entry to EVERY index of the question table; each HIT also inserts
# items and answers and updates its assignment. An index that another one covers (same leading column)
# or that nothing reads is left out (`db_index=False` on the foreign key, none on Question.family, no
# question_pool_idx): migrations 0012 and 0013, bench/README.md section 1, third round.
class Question(models.Model):
    """One question about one image: a person (PST) or an attribute (GEP)."""

    # No single-column indexes on campaign and image: the (campaign, setting) and pool indexes lead with
    # campaign, the unique (image, slot) one with image. Every counter update rewrites each index of the
    # row (`assigned` is in the pool indexes: no HOT update), so two fewer matter to submits and imports.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="questions", db_index=False)
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="questions", db_index=False)
    # Which part of the image is asked about: "single" / "left" / "right" (PST), the attribute name (GEP).
    slot = models.CharField(max_length=200)
    # Question family: what a qualification test is attached to ("person", "attribute:dress", ...).
    family = models.CharField(max_length=220)  # always looked up within a campaign
    setting = models.CharField(max_length=32)
    text = models.TextField()
    choices = models.JSONField()  # e.g. ["Feminine", "Masculine", "Cannot identify"]
    # Researcher-only: setting, prompt_key, sample_index, identity/group/position or gender/attribute/context.
    metadata = models.JSONField()
    required = models.PositiveSmallIntegerField(default=3)   # R: distinct annotators wanted
    assigned = models.PositiveSmallIntegerField(default=0)   # live leases + answers (never > required)
    completed = models.PositiveSmallIntegerField(default=0)  # answers stored
    order_key = models.BigIntegerField(default=0)            # seeded random order within the campaign
    is_gold = models.BooleanField(default=False)
    gold_answer = models.CharField(max_length=100, blank=True, default="")  # never sent to annotators
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["image", "slot"], name="question_unique_image_slot"),
            models.CheckConstraint(condition=models.Q(assigned__lte=models.F("required")), name="question_not_over_assigned"),
        ]
        indexes = [
            models.Index(fields=["campaign", "setting"]),
            # The HIT engine's exact ORDER BY (nearest to completion first): an ordered index scan that
            # stops after k unlocked, unseen rows instead of sorting the campaign's whole pool. Partial
            # (only questions with room left): full questions sort first (assigned DESC) and the scan
            # otherwise walked past every one of them on each request, O(questions completed)
            # (EXPLAIN ANALYZE in bench/README.md).
            models.Index(fields=["campaign", "is_gold", "-assigned", "-completed", "order_key", "image", "slot"],
                         name="question_pool_open_idx", condition=models.Q(assigned__lt=models.F("required"))),
        ]


class Assignment(models.Model):
    """A HIT: k questions leased to one annotator until `expires_at`."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        SUBMITTED = "submitted", "Submitted"
        EXPIRED = "expired", "Expired"      # lease ran out; its questions went back to the pool
        RETURNED = "returned", "Returned"   # given back by the annotator

    class Review(models.TextChoices):
        PENDING = "pending", "Pending"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"

    # Indexed by (campaign, status, expires_at) and (annotator, status) below.
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="assignments", db_index=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    submitted_at = models.DateTimeField(null=True, blank=True)
    submission_digest = models.CharField(max_length=64, blank=True, default="")  # idempotent re-submits
    review = models.CharField(max_length=16, choices=Review.choices, default=Review.PENDING)
    review_reason = models.CharField(max_length=1000, blank=True, default="")
    reviewed_at = models.DateTimeField(null=True, blank=True)
    reward = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    bonus = models.DecimalField(max_digits=8, decimal_places=2, default=0)
    external_assignment_id = models.CharField(max_length=64, null=True, blank=True, unique=True)  # MTurk
    external_hit_id = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        indexes = [
            models.Index(fields=["campaign", "status", "expires_at"]),
            models.Index(fields=["annotator", "status"]),
            # The HIT engine's per-request lookups (expired leases of the campaign, the annotator's held
            # HIT) over live HITs only: a few hundred rows whatever the campaign's history, so no plan
            # walks the campaign's submitted HITs (EXPLAIN in bench/README.md).
            models.Index(fields=["campaign", "expires_at"], name="assignment_active_idx",
                         condition=models.Q(status="active")),
            models.Index(fields=["annotator", "campaign"], name="assignment_active_worker_idx",
                         condition=models.Q(status="active")),
        ]


class AssignmentItem(models.Model):
    """One question of a HIT: the lease. Unique per (question, annotator): never the same question twice."""

    class Status(models.TextChoices):
        LEASED = "leased", "Leased"
        ANSWERED = "answered", "Answered"
        RELEASED = "released", "Released"  # lease expired or returned; counted out of `assigned`

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="items")
    # No single-column index: the unique (question, annotator) index leads with question and serves every
    # lookup by question (one index less to maintain per lease row; bulk imports write a million).
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="items", db_index=False)
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.LEASED)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "annotator"], name="item_unique_question_annotator"),
        ]


class Answer(models.Model):
    """One annotator's choice for one question. Append-only: a correction is a new row whose
    `corrects` points at the answer it replaces."""

    # No single-column index: the (campaign, question) index leads with campaign and serves every lookup by
    # campaign (one index less to maintain per answer; bulk imports write a million).
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="answers", db_index=False)
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="answers")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="answers")
    assignment = models.ForeignKey(Assignment, on_delete=models.SET_NULL, null=True, blank=True, related_name="answers")
    choice = models.CharField(max_length=100)
    time_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # At most one correction per answer: a unique index over the corrections only (migration 0014), not a
    # one-to-one field's over every answer (each original answer would add a NULL entry to it).
    corrects = models.ForeignKey("self", on_delete=models.PROTECT, null=True, blank=True, related_name="corrected_by",
                                 db_index=False)
    source = models.CharField(max_length=32, default="web")  # web / mturk-import / archive-import

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["question", "annotator"], condition=models.Q(corrects__isnull=True),
                                    name="answer_unique_original_per_question_annotator"),
            models.UniqueConstraint(fields=["corrects"], condition=models.Q(corrects__isnull=False),
                                    name="answer_corrected_at_most_once"),
        ]
        indexes = [models.Index(fields=["campaign", "question"])]


class Qualification(models.Model):
    """A qualification test attached to a question family (e.g. one GEP attribute)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="qualifications")
    name = models.CharField(max_length=200)
    family = models.CharField(max_length=220)
    instructions = models.TextField(blank=True, default="")
    pass_fraction = models.FloatField(default=1.0)  # GEP default: all correct
    retake_after_minutes = models.PositiveIntegerField(default=60)
    max_attempts = models.PositiveSmallIntegerField(default=2)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "family"], name="qualification_unique_family")]


class QualificationItem(models.Model):
    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="items")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveSmallIntegerField()
    text = models.TextField()
    choices = models.JSONField()
    correct = models.CharField(max_length=100)  # the answer key: never sent to a client


class QualificationAttempt(models.Model):
    qualification = models.ForeignKey(Qualification, on_delete=models.CASCADE, related_name="attempts")
    annotator = models.ForeignKey(Annotator, on_delete=models.CASCADE, related_name="qualification_attempts")
    answers = models.JSONField()
    correct = models.PositiveSmallIntegerField()
    total = models.PositiveSmallIntegerField()
    passed = models.BooleanField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["annotator", "qualification", "-created_at"])]


class QualificationAddressUse(models.Model):
    """One graded qualification attempt from a client address, kept to limit attempts per address
    (`annotation.qualification_attempts_per_address`). The address is an HMAC keyed by SECRET_KEY,
    never the raw IP."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="+")
    address_hmac = models.CharField(max_length=64)
    created_at = models.DateTimeField()

    class Meta:
        indexes = [models.Index(fields=["campaign", "address_hmac", "created_at"], name="qual_address_use_idx")]


class AggregatedLabel(models.Model):
    """The aggregated label of a question (majority vote by default), with its vote counts."""

    question = models.OneToOneField(Question, on_delete=models.CASCADE, related_name="label")
    method = models.CharField(max_length=32, default="majority")
    label = models.CharField(max_length=100)  # a choice, or "tie" when the top votes are equal
    votes = models.JSONField()                # {"Feminine": 2, "Masculine": 1}
    answers = models.PositiveSmallIntegerField()
    tie = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)


class ExampleImage(models.Model):
    """An example shown in the task page's instructions: an image of the campaign (never asked as a
    question while it is an example) or an uploaded one, with its correct answer, for one example
    family (`annotation.families`: "person:<setting>" for PST, "attribute:<name>" for GEP). At most
    EXAMPLES_PER_FAMILY per family (the service checks it with the campaign row locked)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="examples")
    family = models.CharField(max_length=220)
    image = models.ForeignKey(Image, on_delete=models.CASCADE, null=True, blank=True, related_name="examples")
    file = models.CharField(max_length=300, blank=True, default="")      # an upload's storage keys
    web_file = models.CharField(max_length=300, blank=True, default="")
    answer = models.CharField(max_length=100)
    caption = models.CharField(max_length=300, blank=True, default="")
    order = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=(models.Q(image__isnull=False, file="")
                                              | models.Q(image__isnull=True) & ~models.Q(file="")),
                                   name="example_image_xor_file"),
            models.UniqueConstraint(fields=["family", "image"], name="example_unique_family_image"),
        ]
        indexes = [models.Index(fields=["campaign", "family", "order"])]

"""MTurk bookkeeping: which product assignment an MTurk assignment became (per campaign, since one
MTurk HIT may hold images of several campaigns, e.g. one per model)."""
from django.db import models

from annotation.models import Assignment
from campaigns.models import Campaign


class MTurkAssignmentRecord(models.Model):
    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="mturk_records")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="mturk_record")
    mturk_assignment_id = models.CharField(max_length=64)
    mturk_hit_id = models.CharField(max_length=64)
    worker_id = models.CharField(max_length=64)
    status = models.CharField(max_length=32)  # AssignmentStatus as exported (Submitted / Approved / Rejected)
    source = models.CharField(max_length=16, default="batch-csv")  # batch-csv / api-sync
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "mturk_assignment_id"], name="mturk_record_unique"),
        ]


class MTurkHit(models.Model):
    """An ExternalQuestion HIT published for a campaign."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="mturk_hits")
    hit_id = models.CharField(max_length=64, unique=True)
    hit_type_id = models.CharField(max_length=64)
    sequence = models.PositiveIntegerField()  # n-th HIT of the campaign (its UniqueRequestToken)
    max_assignments = models.PositiveSmallIntegerField()
    reward = models.DecimalField(max_digits=8, decimal_places=2)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "sequence"], name="mturk_hit_unique_sequence")]


class MTurkQualificationType(models.Model):
    """A product qualification test published as an MTurk qualification type (Test + AnswerKey)."""

    qualification = models.OneToOneField("annotation.Qualification", on_delete=models.CASCADE,
                                         related_name="mturk_type")
    qualification_type_id = models.CharField(max_length=64, unique=True)
    passing_percent = models.PositiveSmallIntegerField(default=100)
    created_at = models.DateTimeField(auto_now_add=True)


class MTurkBonus(models.Model):
    """A bonus paid on MTurk: recorded so a later sync never pays it again (tokens expire after 24 h)."""

    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="mturk_bonus")
    amount = models.DecimalField(max_digits=8, decimal_places=2)
    token = models.CharField(max_length=64)
    sent_at = models.DateTimeField(auto_now_add=True)

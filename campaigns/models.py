"""The campaign design: a campaign (one bias audit, defined by its spec) and its prompts."""
from __future__ import annotations

from django.conf import settings
from django.db import models


class Campaign(models.Model):
    class Kind(models.TextChoices):
        PST = "pst", "Paired Stereotype Test"
        GEP = "gep", "Gender presentation differences"

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"            # designed, nothing generated yet
        GENERATING = "generating", "Generating"
        GENERATED = "generated", "Generated"  # images ready for review
        OPEN = "open", "Open for annotation"
        PAUSED = "paused", "Annotation paused"
        CLOSED = "closed", "Closed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="campaigns")
    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=8, choices=Kind.choices)
    seed = models.BigIntegerField()
    # The normalised spec: every default written out, so the stored campaign says exactly what ran.
    spec = models.JSONField()
    spec_version = models.PositiveSmallIntegerField(default=1)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT, db_index=True)
    prompt_count = models.PositiveIntegerField(default=0)
    images_planned = models.PositiveIntegerField(default=0)
    # A large design's prompts are created by a Celery task (campaigns.tasks.campaign_prompts_expand),
    # not in the request that stored the campaign: true until that task has created all of them.
    prompts_pending = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    deleted_at = models.DateTimeField(null=True, blank=True)  # soft delete
    # Bumped (UPDATE ... + 1, in the writer's transaction) by every write a report, a comparison or a
    # dataset export reads besides the answers themselves: one half of the campaign's data revision
    # (`annotation.services.derived.data_revision`; the other half is derived from the answers).
    data_changes = models.BigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"])]
        constraints = [models.CheckConstraint(condition=models.Q(seed__gte=0), name="campaign_seed_non_negative")]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind}, #{self.pk})"


class Prompt(models.Model):
    """One prompt of a campaign; images are generated `samples` times from it, one seed each."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="prompts")
    # Stable key, e.g. "paired:carpenter|editor" or "explicit:woman|boots|sitting at a table".
    key = models.CharField(max_length=600)
    position = models.PositiveIntegerField()  # order of expansion
    setting = models.CharField(max_length=32)
    text = models.TextField()
    # PST: {"setting", "aspect", "persons": [{"identity", "group", "stereotype", "position"}]}
    # GEP: {"setting", "gender", "attribute" (null for neutral), "context"}
    metadata = models.JSONField()
    samples = models.PositiveIntegerField()
    seeds = models.JSONField()  # one per sample index, derived from the campaign seed
    # Which of the setting's prompt templates made `text` (0-based; design.templates.<setting> may list
    # several, bias-amplification Table 1), and that template.
    template_index = models.PositiveSmallIntegerField(default=0)
    template = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["campaign_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["campaign", "key"], name="prompt_unique_key_per_campaign"),
            models.UniqueConstraint(fields=["campaign", "position"], name="prompt_unique_position_per_campaign"),
        ]
        indexes = [models.Index(fields=["campaign", "setting"])]

    def __str__(self) -> str:
        return self.key

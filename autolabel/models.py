"""Machine labels: a second, separate source of labels (issue 15). They live in their own tables,
keyed by (question, labeller), and never enter human answers, majority labels, agreement among
annotators or payments (annotation and crowd never read these tables)."""
from __future__ import annotations

from django.db import models

from annotation.models import Question
from campaigns.models import Campaign
from generation.models import Image


class MachineLabel(models.Model):
    """One labeller's answer to one question, with the provenance of the model that gave it."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="machine_labels")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="machine_labels")
    labeller = models.CharField(max_length=64)
    choice = models.CharField(max_length=100)   # one of the question's choices
    # The labeller's confidence in the question's first ("yes" / "Feminine" side) choice, in [0, 1];
    # null where the labeller gives no score (vqa, vlm, an import without scores). See docs/autolabel.md.
    score = models.FloatField(null=True, blank=True)
    model = models.CharField(max_length=300, blank=True, default="")
    revision = models.CharField(max_length=100, blank=True, default="")
    params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["question_id", "labeller"]
        constraints = [
            models.UniqueConstraint(fields=["question", "labeller"], name="machinelabel_unique_question_labeller"),
            models.CheckConstraint(condition=models.Q(score__isnull=True) | (models.Q(score__gte=0) & models.Q(score__lte=1)),
                                   name="machinelabel_score_unit_interval"),
        ]
        indexes = [models.Index(fields=["campaign", "labeller"])]

    def __str__(self) -> str:
        return f"{self.labeller}: q{self.question_id} -> {self.choice}"


class MachineLabelFailure(models.Model):
    """A question a labeller could not label (unparseable VLM answer, unreadable image...): counted
    in `progress.autolabel.<labeller>.failed`; a later run tries it again."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="machine_label_failures")
    question = models.ForeignKey(Question, on_delete=models.CASCADE, related_name="machine_label_failures")
    labeller = models.CharField(max_length=64)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["question", "labeller"], name="machinelabelfailure_unique")]
        indexes = [models.Index(fields=["campaign", "labeller"])]


class AutolabelJob(models.Model):
    """One labeller run over a campaign (one row per campaign and labeller; a rerun resumes it)."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="autolabel_jobs")
    labeller = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    # The labeller's configuration this run uses (from the spec's `autolabel.labellers`, defaults filled).
    config = models.JSONField(default=dict, blank=True)
    # Bumped by every (re)start: a message of an older run (cancelled, superseded) does nothing.
    run = models.PositiveIntegerField(default=1)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    embeddings_computed = models.PositiveIntegerField(default=0)  # this campaign's runs, all together
    embeddings_cached = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "labeller"], name="autolabeljob_unique")]

    def __str__(self) -> str:
        return f"autolabel {self.labeller} on campaign {self.campaign_id} ({self.status})"


class ImageEmbedding(models.Model):
    """A CLIP image embedding, computed once per image content (sha256), model, revision and part
    (`full`, or `left` / `right` half of a paired PST image) and reused by every CLIP labeller and
    campaign. `vector` is little-endian float32 bytes of length 4 * dim, L2-normalised."""

    sha256 = models.CharField(max_length=64)
    model = models.CharField(max_length=300)
    revision = models.CharField(max_length=100, blank=True, default="")
    part = models.CharField(max_length=8, default="full")
    dim = models.PositiveIntegerField()
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["sha256", "model", "revision", "part"],
                                               name="imageembedding_unique")]


class ImageClipScore(models.Model):
    """CLIPScore of an image against its prompt: 2.5 * max(cos(image, text), 0) (Hessel et al. 2021;
    GEP Table 3 reports it as a reference for image-text alignment)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="clip_scores")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="clip_scores")
    model = models.CharField(max_length=300)
    revision = models.CharField(max_length=100, blank=True, default="")
    score = models.FloatField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["image", "model"], name="imageclipscore_unique")]


class HumanSampleImage(models.Model):
    """An image drawn into the spec's `autolabel.human_sample`: only these are open to human
    annotation; the draw is recorded when questions are opened (autolabel/sample.py)."""

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="human_sample")
    image = models.ForeignKey(Image, on_delete=models.CASCADE, related_name="human_sample")
    stratum = models.CharField(max_length=300)  # "<setting>" or "<setting>|<attribute>"
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "image"], name="humansampleimage_unique")]

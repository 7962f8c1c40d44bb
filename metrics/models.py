"""Built reports, kept until the data they were built from changes (new answers, exclusions)."""
from django.db import models

from campaigns.models import Campaign


class ReportSnapshot(models.Model):
    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="report_snapshots")
    options_key = models.CharField(max_length=500)  # ReportOptions.key(): the lookup key, never parsed back
    options = models.JSONField()  # ReportOptions.to_dict(): what a worker builds the report with
    data_version = models.CharField(max_length=500)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.BUILDING)
    progress = models.FloatField(default=0.0)
    payload = models.JSONField(null=True, blank=True)
    error = models.TextField(blank=True, default="")
    build_seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["campaign", "options_key", "data_version"], name="report_snapshot_unique"),
        ]


class PackageBuild(models.Model):
    """A campaign's replication package (metrics/package/): built by a worker with progress and kept in
    storage (`file`, a key under `private/packages/`) until the data it was built from changes."""

    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    campaign = models.ForeignKey(Campaign, on_delete=models.CASCADE, related_name="package_builds")
    data_version = models.CharField(max_length=700)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.BUILDING)
    progress = models.FloatField(default=0.0)
    file = models.CharField(max_length=300, blank=True, default="")
    size = models.BigIntegerField(default=0)
    summary = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True, default="")
    build_seconds = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["campaign", "data_version"], name="package_build_unique")]

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics and reports"

    def ready(self) -> None:
        # The spec preview shows the planned intervals (campaigns may not import metrics).
        from campaigns.registry import register_preview
        from campaigns.spec import register_section

        from .package.dataset_spec import validate_dataset
        from .sections.planning import spec_planning

        register_preview(spec_planning)
        # The replication package's license and citation (metrics/package/dataset.py).
        register_section("dataset", validate_dataset)
        # Report sections beyond the core ones register their builders (metrics.sections.report.register_section).
        from .sections import annotators  # noqa: F401

from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics and reports"

    def ready(self) -> None:
        # The spec preview shows the planned intervals (campaigns may not import metrics).
        from campaigns.registry import register_preview

        from .planning import spec_planning

        register_preview(spec_planning)

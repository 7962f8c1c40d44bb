from django.apps import AppConfig


class MetricsConfig(AppConfig):
    name = "metrics"
    verbose_name = "Metrics and reports"

    def ready(self) -> None:
        # Report sections beyond the core ones register their builders (metrics.report.register_section).
        from . import annotators  # noqa: F401

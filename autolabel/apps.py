from django.apps import AppConfig


class AutolabelConfig(AppConfig):
    name = "autolabel"
    verbose_name = "Machine labels"

    def ready(self) -> None:
        from campaigns.registry import register_progress

        from .selectors import autolabel_progress

        register_progress(autolabel_progress)

from django.apps import AppConfig


class AutolabelConfig(AppConfig):
    name = "autolabel"
    verbose_name = "Machine labels"

    def ready(self) -> None:
        from campaigns.registry import register_progress, register_question_gate
        from campaigns.spec import autolabel as spec_section

        from . import cli
        from .sample import human_sample_gate
        from .selectors import autolabel_progress

        spec_section.register()
        register_progress(autolabel_progress)
        register_question_gate(human_sample_gate)
        cli.register()
        from common.upload_jobs import register_import

        from .apis import machine_labels_run

        register_import("machine_labels", machine_labels_run)  # an upload over the request work budget

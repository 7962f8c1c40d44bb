from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from campaigns.registry import register_archiver, register_progress

        from . import cli, spec_section
        from .selectors import annotation_progress

        spec_section.register()
        register_progress(annotation_progress)
        cli.register()
        from .archive import campaign_archive_store

        register_archiver(campaign_archive_store)
        from . import tokens

        tokens.connect()

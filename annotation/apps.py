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
        from .services.archiving import campaign_delete_archive

        register_archiver(campaign_delete_archive)  # the archive, through the request work budget
        from . import tokens

        tokens.connect()

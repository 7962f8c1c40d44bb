from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    verbose_name = "Generation"

    def ready(self) -> None:
        from campaigns.registry import register_progress

        from . import cli, spec_backends
        from .progress import generation_stall_progress
        from .selectors import image_progress

        spec_backends.register()
        cli.register()
        register_progress(image_progress)
        register_progress(generation_stall_progress)
        from common.upload_jobs import register_import

        from .apis import images_import_run

        register_import("images", images_import_run)  # an upload over the request work budget

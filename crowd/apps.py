from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
    verbose_name = "Crowd platforms (MTurk, Prolific)"

    def ready(self) -> None:
        from campaigns.spec import register_section

        from .spec_section import validate_crowd

        register_section("crowd", validate_crowd)
        from common.upload_jobs import register_import

        from .apis import mturk_batch_run

        register_import("mturk_batch", mturk_batch_run)  # an upload over the request work budget

from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
    verbose_name = "Crowd platforms (MTurk, Prolific)"

    def ready(self) -> None:
        from campaigns.spec import register_section

        from .spec_section import validate_crowd

        register_section("crowd", validate_crowd)

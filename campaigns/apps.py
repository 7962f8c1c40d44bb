from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    verbose_name = "Campaign design"

    def ready(self) -> None:
        from . import cli

        cli.register()

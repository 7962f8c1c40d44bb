from django.apps import AppConfig


class CampaignsConfig(AppConfig):
    name = "campaigns"
    verbose_name = "Campaign design"

    def ready(self) -> None:
        from common import checks  # noqa: F401  (registers the input-gate system check)
        from common.localdirs import local_dirs_ensure

        local_dirs_ensure()  # var/, static files, a file-system broker's folders (not at settings import)

        from . import cli

        cli.register()

from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    """The researcher console: server-rendered pages over the other apps (nothing imports it)."""

    name = "console"
    verbose_name = "Researcher console"

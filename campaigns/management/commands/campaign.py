"""`python manage.py campaign <subcommand> ...`; subcommands come from every app (see registry)."""
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from campaigns.registry import cli_commands
from common.errors import ApplicationError


class Command(BaseCommand):
    help = "Manage campaigns: create, show, list, generate, import-images, ..."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="subcommand", required=True, metavar="SUBCOMMAND")
        for name, (help_text, add, _handle) in sorted(cli_commands().items()):
            add(sub.add_parser(name, help=help_text, description=help_text))

    def handle(self, *args: Any, **options: Any) -> None:
        name = options["subcommand"]
        _help, _add, handle = cli_commands()[name]
        try:
            handle(options, self.stdout)
        except ApplicationError as exc:
            raise CommandError(error_text(exc)) from exc


def error_text(exc: ApplicationError) -> str:
    """The message, then each field error on its own line, never one that the message already says
    (the spec validator's message names its first problem: printed once, not twice)."""
    lines = [f"  {field}: {msg}" for field, msgs in exc.errors.items() for msg in msgs
             if f"{field}: {msg}" not in exc.message]
    return "\n".join([exc.message, *lines])

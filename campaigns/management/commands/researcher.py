"""`python manage.py researcher create USERNAME [--password P] [--staff] [--take-over-existing]`: a
researcher account and API token.

An existing account (compared like every sign-up, `common.accounts.username_taken`: `ＣＡＲＯＬ` is
`carol`) is never adopted silently: a stranger may have signed up as `carol` to be promoted. The
command refuses unless `--take-over-existing` is given, which rotates every credential of that
account (a new password or an unusable one, which ends its sessions; its API tokens deleted; a new
token). The password goes through Django's
AUTH_PASSWORD_VALIDATORS (`--password 1` is refused)."""
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models.functions import Lower
from rest_framework.authtoken.models import Token

from common.accounts import username_key, username_taken
from common.permissions import RESEARCHER_GROUP


class Command(BaseCommand):
    help = "Create a researcher account and print its API token (never adopts an existing account silently)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["create"])
        parser.add_argument("username")
        parser.add_argument("--password", default=None)
        parser.add_argument("--email", default="")
        parser.add_argument("--staff", action="store_true", help="staff researchers see every campaign")
        parser.add_argument("--take-over-existing", action="store_true",
                            help="make an existing account of that name a researcher, rotating every credential "
                                 "(password, API tokens, sessions)")

    @transaction.atomic
    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username, password = options["username"], options["password"]
        existing = None
        if username_taken(username):
            key = username_key(username)
            existing = next((u for u in User.objects.annotate(lower=Lower("username")).filter(
                lower__in={username.lower(), key}) if username_key(u.get_username()) == key), None)
        if existing is not None and not options["take_over_existing"]:
            raise CommandError(
                f"An account named {existing.get_username()!r} exists already (it may have been made by anyone "
                "through sign-up): not adopted. Choose another name, or pass --take-over-existing to make it a "
                "researcher with every credential rotated.")
        candidate = existing or User(username=username, email=options["email"])
        if password:
            try:
                validate_password(password, user=candidate)
            except ValidationError as exc:
                raise CommandError("Password refused: " + " ".join(exc.messages)) from exc
        if existing is None:
            user = User.objects.create_user(username=username, email=options["email"], password=password or None)
        else:
            user = existing
            # A new password hash ends every session (Django checks each session's password hash).
            user.set_password(password) if password else user.set_unusable_password()
            user.save()
            Token.objects.filter(user=user).delete()  # the stranger's key goes
        if options["staff"]:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
        user.groups.add(group)
        token = Token.objects.create(user=user)
        verb = "Took over (every credential rotated)" if existing is not None else "Created"
        self.stdout.write(f"{verb} researcher {user.get_username()}; API token: {token.key}")

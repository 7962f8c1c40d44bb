"""`python manage.py researcher create USERNAME [--password P] [--staff]`: a researcher account and API token."""
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandParser
from rest_framework.authtoken.models import Token

from common.permissions import RESEARCHER_GROUP


class Command(BaseCommand):
    help = "Create (or update) a researcher account and print its API token."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["create"])
        parser.add_argument("username")
        parser.add_argument("--password", default=None)
        parser.add_argument("--email", default="")
        parser.add_argument("--staff", action="store_true", help="staff researchers see every campaign")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        user, created = User.objects.get_or_create(username=options["username"], defaults={"email": options["email"]})
        if options["password"]:
            user.set_password(options["password"])
        elif created:
            user.set_unusable_password()
        if options["staff"]:
            user.is_staff = True
        user.save()
        group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
        user.groups.add(group)
        token, _ = Token.objects.get_or_create(user=user)
        self.stdout.write(f"{'Created' if created else 'Updated'} researcher {user.username}; API token: {token.key}")

"""`python manage.py demo`: demo accounts and demo campaigns (placeholder backend), idempotent."""
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from campaigns.models import Campaign
from campaigns.services import campaign_create
from common.permissions import RESEARCHER_GROUP

DEMO_USERS = {
    "admin": {"password": "admin-demo-2026", "staff": True, "superuser": True},
    "researcher": {"password": "researcher-demo-2026", "staff": False, "superuser": False},
}
DEMO_SPECS: list[dict[str, Any]] = [
    {"name": "demo-pst-occupation", "kind": "pst", "seed": 1,
     "description": "Demo: the PST occupation design with synthetic placeholder images.",
     "design": {"aspect": "occupation", "settings": ["single", "paired"]},
     "backend": {"name": "placeholder", "width": 256, "height": 256}},
    {"name": "demo-gep", "kind": "gep", "seed": 1,
     "description": "Demo: the GEP design (neutral setting) with synthetic placeholder images.",
     "design": {"settings": ["neutral"]},
     "backend": {"name": "placeholder", "width": 256, "height": 256}},
]


class Command(BaseCommand):
    help = "Create the demo accounts and campaigns (safe to run again)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--quiet", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
        users = {}
        for username, info in DEMO_USERS.items():
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(info["password"])
                user.is_staff = info["staff"]
                user.is_superuser = info["superuser"]
                user.save()
            user.groups.add(group)
            Token.objects.get_or_create(user=user)
            users[username] = user
        created_ids = []
        for spec in DEMO_SPECS:
            campaign = Campaign.objects.filter(owner=users["researcher"], name=spec["name"]).first()
            if campaign is None:
                campaign = campaign_create(owner=users["researcher"], spec=spec)
            created_ids.append(campaign)
        if options.get("quiet"):
            return
        self.stdout.write("Demo accounts (username / password):")
        for username, info in DEMO_USERS.items():
            self.stdout.write(f"  {username:<11} {info['password']:<22} API token {users[username].auth_token.key}")
        self.stdout.write("Demo campaigns:")
        for c in created_ids:
            self.stdout.write(f"  #{c.pk} {c.name}: {c.prompt_count} prompts, {c.images_planned} images planned")

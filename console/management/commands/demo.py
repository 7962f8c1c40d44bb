"""`python manage.py demo`: the demo accounts, the demo campaigns and (unless --no-audit) a complete
synthetic audit of them through the product's services (console/demo/). Safe to run again."""
from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from rest_framework.authtoken.models import Token

from campaigns.models import Campaign
from campaigns.services import campaign_create
from common.permissions import RESEARCHER_GROUP
from console.demo.simulate import audit_simulate
from console.demo.specs import (
    DEMO_ANNOTATOR,
    DEMO_SPECS,
    DEMO_USERS,
    LABELLER,
    LABELLER_FLIP,
    SIMULATED_ANNOTATORS,
    SYNTHETIC_NOTE,
)


class Command(BaseCommand):
    help = "Create the demo accounts and campaigns, and a synthetic audit of them (safe to run again)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--quiet", action="store_true")
        parser.add_argument("--no-audit", action="store_true",
                            help="only accounts and campaigns (draft), no images, answers or labels")

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        group, _ = Group.objects.get_or_create(name=RESEARCHER_GROUP)
        users = {}
        tokens: dict[str, str] = {}
        for username, info in DEMO_USERS.items():
            user, created = User.objects.get_or_create(username=username)
            if created:
                user.set_password(info["password"])
                user.is_staff = info["staff"]
                user.is_superuser = info["superuser"]
                user.save()
            user.groups.add(group)
            token, _ = Token.objects.get_or_create(user=user)
            users[username] = user
            tokens[username] = token.key
        campaigns = []
        for spec in DEMO_SPECS:
            campaign = Campaign.objects.filter(owner=users["researcher"], name=spec["name"]).first()
            if campaign is None:
                campaign = campaign_create(owner=users["researcher"], spec=spec)
            campaigns.append(campaign)
        audit = {} if options.get("no_audit") else audit_simulate(campaigns)
        if options.get("quiet"):
            return
        self.stdout.write("Demo accounts (username / password):")
        for username, info in DEMO_USERS.items():
            self.stdout.write(f"  {username:<11} {info['password']:<22} API token {tokens[username]}")
        if audit:
            self.stdout.write(f"  {DEMO_ANNOTATOR['username']:<11} {DEMO_ANNOTATOR['password']:<22} "
                              f"annotator: try the task page, log in at /work/{campaigns[0].pk}/login/")
        self.stdout.write("Demo campaigns:")
        for c in campaigns:
            c.refresh_from_db()
            line = f"  #{c.pk} {c.name} ({c.status}): {c.prompt_count} prompts, {c.images_planned} images"
            facts = audit.get(c.name)
            if facts and not facts.get("already"):
                line += (f"; {facts['answers']} simulated answers, {facts['machine_labels']} machine labels,"
                         f" {facts['examples']} examples")
            self.stdout.write(line)
        if audit:
            self.stdout.write(
                f"  {SYNTHETIC_NOTE}\n  {SIMULATED_ANNOTATORS} simulated annotators answered part of the questions; "
                f"machine labels: `{LABELLER}` ({int(LABELLER_FLIP * 100)}% flipped at random), imported.\n"
                f"  Report: /console/campaigns/{campaigns[0].pk}/report/ ; hybrid: ?source=hybrid:{LABELLER} ;"
                f" compare #{campaigns[0].pk} with #{campaigns[1].pk} ;"
                f" replication package: /api/campaigns/{campaigns[0].pk}/export/dataset/")

"""Writes a crowd platform's flows need on annotation's tables (`crowd` calls these and writes no
annotation table itself): link accounts of a platform id, the platform's ids on a product HIT, and
the time a HIT's review reached the platform."""
from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.utils import timezone

from common.accounts import username_taken

from ..models import Annotator, Assignment


def annotator_for_platform(*, kind: str, field: str, external_id: str) -> tuple[Annotator, bool]:
    """The annotator holding this platform id (`field` = external_id), and whether it was created now:
    a link account of the platform (user without a usable password) on first sight; safe against two
    first requests at once (the unique id decides). The id is validated by the caller."""
    # Only the platform's own link account: a password account claiming the id (sign-up, profile)
    # never takes the platform's flow from the worker who holds it there (docs/security.md).
    found = Annotator.objects.filter(kind=kind, **{field: external_id}).select_related("user").first()
    if found is not None:
        return found, False
    User = get_user_model()
    try:
        with transaction.atomic():
            username = f"{kind}-{external_id}"
            if username_taken(username):
                username = f"{kind}-{external_id}-{secrets.token_hex(3)}"
            user = User.objects.create_user(username=username, password=None)
            return Annotator.objects.create(user=user, kind=kind, **{field: external_id}), True
    except IntegrityError:
        return Annotator.objects.select_related("user").get(kind=kind, **{field: external_id}), False


def assignment_external_set(*, assignment_id: int, external_assignment_id: str | None,
                            external_hit_id: str | None = None) -> None:
    """The platform's assignment id (and HIT id when given) on a product HIT; None frees the id."""
    fields: dict[str, str | None] = {"external_assignment_id": external_assignment_id}
    if external_hit_id is not None:
        fields["external_hit_id"] = external_hit_id
    Assignment.objects.filter(pk=assignment_id).update(**fields)


def assignment_review_sent(*, assignment_id: int) -> None:
    """The platform has the HIT's review (approval, rejection, bonus): the time, once."""
    Assignment.objects.filter(pk=assignment_id, reviewed_at__isnull=True).update(reviewed_at=timezone.now())

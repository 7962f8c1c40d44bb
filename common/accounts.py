"""Account rules every sign-up path shares: the username key, and the password validator.

Usernames: Django stores them NFKC-normalised (`AbstractBaseUser.normalize_username`); the
uniqueness check compares `username_key` (NFKC, casefold, NFKC again: Unicode's compatibility
caseless match), so `ＡＬＩＣＥ`, `ALICE` and `alice` are one name. The database backs it with a
unique index on `LOWER(username)` (migration `annotation.0006_username_casefold_unique`).

External ids (an MTurk worker id, a Prolific participant id): one rule, `external_id_valid`, at
every door (the crowd links, sign-up, the profile, the MTurk batch import), so no path stores an id
another path would refuse (`<script>x` is refused everywhere).

Passwords: `SubstantialPasswordValidator` is in `AUTH_PASSWORD_VALIDATORS`, so every path that
calls `validate_password` (annotator sign-up API and form, admin, `changepassword`) refuses a
password that is only whitespace or shorter than the minimum once its leading and trailing spaces
are removed (Django's MinimumLengthValidator counts `"        "` as 8 characters).
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models.functions import Lower

# MTurk's ids (worker, assignment, HIT) and Prolific's (participant, study, session) are short
# alphanumeric strings; anything else is refused before it reaches the database or a page.
EXTERNAL_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
EXTERNAL_ID_RULE = "letters, digits, - and _ only (1 to 64 characters)"


def external_id_valid(value: Any) -> bool:
    """Whether `value` is a well-formed platform id (:data:`EXTERNAL_ID_RE`)."""
    return isinstance(value, str) and bool(EXTERNAL_ID_RE.match(value))


def username_key(username: str) -> str:
    """The form two usernames are compared in: NFKC(casefold(NFKC(name)))."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", username).casefold())


def username_taken(username: str) -> bool:
    """Whether an account already holds this name under `username_key` (case, width, compatibility
    forms ignored). One query: the index on LOWER(username) serves it."""
    nfkc = unicodedata.normalize("NFKC", username)
    candidates = {nfkc.lower(), username_key(username)}
    return get_user_model().objects.annotate(_lower=Lower("username")).filter(_lower__in=candidates).exists()


class SubstantialPasswordValidator:
    """Refuse passwords that are only whitespace, or shorter than `min_length` after strip()."""

    def __init__(self, min_length: int = 8):
        self.min_length = min_length

    def validate(self, password: str, user: Any = None) -> None:
        stripped = password.strip()
        if not stripped:
            raise ValidationError("This password is only whitespace.", code="password_blank")
        if len(stripped) < self.min_length:
            raise ValidationError(
                f"This password is too short: at least {self.min_length} characters besides leading and "
                "trailing spaces.", code="password_too_short_stripped")

    def get_help_text(self) -> str:
        return f"Your password must hold at least {self.min_length} characters besides leading and trailing spaces."

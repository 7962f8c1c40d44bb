"""Test settings: base + a fast password hasher. Services (PostgreSQL, Redis) come from the
environment exactly as in production (the Makefile and CI set DATABASE_URL and REDIS_URL)."""
from .base import *  # noqa: F401,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

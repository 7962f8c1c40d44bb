"""Test settings: base + a fast password hasher. Services (PostgreSQL, Redis) come from the
environment exactly as in production (the Makefile and CI set DATABASE_URL and REDIS_URL)."""
from .base import *  # noqa: F401,F403
from .env import env_bool, env_int, env_str

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# The suite makes many requests from one "IP" and user; the throttle tests set small rates themselves.
THROTTLE_RATES = {"annotator": env_str("THROTTLE_ANNOTATOR", "100000/minute"),
                  "anon": env_str("THROTTLE_ANON", "100000/minute")}
LOGIN_THROTTLE_FAILURES = env_int("LOGIN_THROTTLE_FAILURES", 1000)
LOGIN_THROTTLE_ADDRESS_FAILURES = env_int("LOGIN_THROTTLE_ADDRESS_FAILURES", 100000)
SIGNUP_THROTTLE_PER_ADDRESS = env_int("SIGNUP_THROTTLE_PER_ADDRESS", 100000)
CSP_REPORT_RATE = env_int("CSP_REPORT_RATE", 100000)  # the rate test sets a small one itself

# Every report a test builds is validated against the published JSON Schema (metrics/sections/schema.py).
REPORT_SCHEMA_CHECK = env_bool("REPORT_SCHEMA_CHECK", True)

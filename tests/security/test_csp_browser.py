"""Every kind of page in real Chromium under the site's Content-Security-Policy, with violation
reports going to the app's own /csp-report/ (CSP_REPORT_URI): no page may cause one, and the
browser's log may show no CSP refusal either (issue 13, point 11).

A deliberate violation at the end of each page (an inline script inserted from the test) proves that
reporting works and flushes the page's reports: once its report has arrived, the page's own would
have too."""
from __future__ import annotations

import logging
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.test import Client

from tests.browser import Browser, browser  # noqa: F401  (fixture)

from .conftest import World
from .test_csp import page_urls

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What a page's own scripts render, waited for before the page counts as loaded.
SETTLED = {"/api/docs/": ".swagger-ui .info .title"}
CANARY = "csp-canary"


class Reports(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _session_cookie(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[django_settings.SESSION_COOKIE_NAME].value


def test_no_page_violates_the_content_security_policy(browser: Browser, world: World,  # noqa: F811
                                                      settings: Any) -> None:
    settings.CSP_REPORT_URI = "/csp-report/"
    reports = Reports()
    logging.getLogger("csp").addHandler(reports)
    users = {"annotator_a": world.a.user, "researcher_x": world.x, "staff": world.staff}
    cookies = {role: _session_cookie(user) for role, user in users.items()}
    b = browser
    failures: list[str] = []
    try:
        b.get("/")  # a page of the origin, so cookies can be set
        for role, url in page_urls(world):
            b.driver.delete_all_cookies()
            if role in cookies:
                b.driver.add_cookie({"name": django_settings.SESSION_COOKIE_NAME, "value": cookies[role], "path": "/"})
            b.driver.get_log("browser")  # drop what earlier pages logged
            before = len(reports.messages)
            b.get(url)
            b.wait(lambda d: d.execute_script("return document.readyState") == "complete", message=f"{url} loading")
            if url in SETTLED:
                b.visible(SETTLED[url], timeout=20)
            b.js(f"const s = document.createElement('script'); s.textContent = 'window[\"{CANARY}\"] = 1';"
                 "document.body.appendChild(s);")
            b.wait(lambda d, before=before: any("script-src" in m for m in reports.messages[before:]), timeout=10,
                   message=f"the canary's violation report from {url} never arrived")
            assert b.js(f"return window['{CANARY}'] === undefined"), "an inline script ran"
            page_reports = [m for m in reports.messages[before:] if not _is_canary(m)]
            logged = [e for e in b.console_errors() if ("Content Security Policy" in e or "Refused to" in e)
                      and "inline script" not in e.lower() or "csp-report" in e and "Refused" in e]
            for problem in page_reports + [e for e in logged if not _is_canary(e)]:
                failures.append(f"{role} {url}: {problem}")
    finally:
        logging.getLogger("csp").removeHandler(reports)
    assert not failures, "\n".join(failures)


def _is_canary(message: str) -> bool:
    """The deliberate violation: an inline <script> inserted by the test (blocked-uri 'inline', or
    Chromium's "Refused to execute inline script" line)."""
    lowered = message.lower()
    # The csp logger writes each report as one line of escaped JSON (issue 24).
    inline = "blocked-uri=inline" in lowered or '"blocked-uri": "inline"' in lowered
    return (inline and "script-src" in lowered) or "refused to execute inline script" in lowered

"""The annotator task page in a browser: is everything a question needs on screen (issue 17)?
Shared by tests/annotation/test_fit_browser.py and the MTurk walk (tests/crowd/test_mturk_browser.py)."""
from __future__ import annotations

import json
from typing import Any

from django.conf import settings as django_settings
from django.test import Client

from tests.browser import Browser


def login(b: Browser, user: Any) -> None:
    client = Client()
    client.force_login(user)
    b.get("/")
    b.driver.add_cookie({"name": django_settings.SESSION_COOKIE_NAME,
                         "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value, "path": "/"})


def assert_fits(b: Browser, name: str) -> dict[str, Any]:
    """Question, image (whole) and every answer button (and Next) inside the viewport, unscrolled."""
    b.wait(lambda d: d.execute_script("const i = document.getElementById('q-image');"
                                      "return i.complete && i.naturalWidth > 0"), message="image not loaded")
    b.wait(lambda d: b.js("return document.getElementById('q-image').getBoundingClientRect().height") > 0)
    box = b.js("""
        const r = e => { const x = e.getBoundingClientRect(); return [x.left, x.top, x.right, x.bottom]; };
        const img = document.getElementById('q-image');
        return {vw: document.documentElement.clientWidth, vh: window.innerHeight,
                scroll: [window.scrollX, window.scrollY], page: document.documentElement.scrollHeight,
                question: r(document.getElementById('q-text')), image: r(img), natural: [img.naturalWidth, img.naturalHeight],
                buttons: [...document.querySelectorAll('#choices .choice'), document.getElementById('next')].map(r),
                cue: r(document.querySelector('#frame .side-cue'))};""")
    shot = b.shot(name)
    shot.with_suffix(".json").write_text(json.dumps(box))  # the measured boxes, next to the screenshot
    vw, vh = box["vw"], box["vh"]

    def inside(rect: list[float], what: str) -> None:
        left, top, right, bottom = rect
        assert left >= -0.5 and top >= -0.5 and right <= vw + 0.5 and bottom <= vh + 0.5, (name, what, rect, vw, vh)

    assert box["scroll"] == [0, 0], (name, box["scroll"])
    assert box["page"] <= vh + 1, (name, "the page scrolls", box["page"], vh)
    inside(box["question"], "question")
    inside(box["image"], "image")
    assert len(box["buttons"]) == 4
    for rect in box["buttons"]:
        inside(rect, "button")
        assert rect[3] - rect[1] >= 44 and rect[2] - rect[0] >= 44, (name, "touch target too small", rect)
    left, top, right, bottom = box["image"]
    width, height = right - left, bottom - top
    nw, nh = box["natural"]
    assert abs(width / height - nw / nh) < 0.02, (name, "aspect ratio", width, height, nw, nh)
    assert height >= 150, (name, "image too small to judge", width, height)
    assert box["cue"] == box["image"], (name, "the side cue is not on the image", box["cue"], box["image"])
    return box

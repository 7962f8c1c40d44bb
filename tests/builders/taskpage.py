"""The annotator task page in a browser: is everything a question needs on screen (issue 17)?
Shared by tests/annotation/test_fit_browser.py and the MTurk walk (tests/crowd/test_mturk_browser.py)."""
from __future__ import annotations

import io
import json
from typing import Any

from django.conf import settings as django_settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.test import Client
from django.utils import timezone
from PIL import Image as PILImage
from PIL import ImageDraw

from annotation.services.examples import example_add
from annotation.services.lifecycle import questions_open
from campaigns.models import Campaign
from generation.models import Image
from tests.browser import Browser
from tests.builders.campaigns import make_campaign
from tests.conftest import make_researcher


def login(b: Browser, user: Any) -> None:
    client = Client()
    client.force_login(user)
    b.get("/")
    b.driver.add_cookie({"name": django_settings.SESSION_COOKIE_NAME,
                         "value": client.cookies[django_settings.SESSION_COOKIE_NAME].value, "path": "/"})


def assert_fits(b: Browser, name: str) -> dict[str, Any]:
    """Question, image (whole) and every answer button (and Next) inside the viewport, unscrolled; what
    each button (the choices, Next, Back) holds stays inside it."""
    b.wait(lambda d: d.execute_script("const i = document.getElementById('q-image');"
                                      "return i.complete && i.naturalWidth > 0"), message="image not loaded")
    b.wait(lambda d: b.js("return document.getElementById('q-image').getBoundingClientRect().height") > 0)
    # Measured once the layout has settled: the image's box the same over two animation frames (a CI run
    # measured a 256 x 256 image at 455 x 345 mid-layout in the MTurk frame; the page itself was right).
    b.wait(lambda d: d.execute_async_script(
        "const done = arguments[0], box = () => JSON.stringify(document.getElementById('q-image').getBoundingClientRect());"
        "const first = box(); requestAnimationFrame(() => requestAnimationFrame(() => done(box() === first)));"),
        message="the image's box keeps changing")
    box = b.js("""
        const r = e => { const x = e.getBoundingClientRect(); return [x.left, x.top, x.right, x.bottom]; };
        const img = document.getElementById('q-image');
        return {vw: document.documentElement.clientWidth, vh: window.innerHeight,
                scroll: [window.scrollX, window.scrollY], page: document.documentElement.scrollHeight,
                question: r(document.getElementById('q-text')), image: r(img), natural: [img.naturalWidth, img.naturalHeight],
                buttons: [...document.querySelectorAll('#choices .choice'), document.getElementById('next')].map(r),
                cue: r(document.querySelector('#frame .side-cue')),
                // What each button holds (label, key hint) stays inside it ("Backspace" overflowed Back).
                spill: [...document.querySelectorAll('#choices .choice, #next, #back')].filter(e => e.offsetParent)
                  .flatMap(e => { const o = e.getBoundingClientRect();
                    const out = [...e.querySelectorAll('*')].filter(c => c.getClientRects().length).map(c => c.getBoundingClientRect())
                      .filter(c => c.left < o.left - 0.5 || c.right > o.right + 0.5 || c.top < o.top - 0.5 || c.bottom > o.bottom + 0.5);
                    return (out.length || e.scrollWidth > e.clientWidth + 1) ? [e.id || e.textContent.trim()] : []; })};""")
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
    assert len(box["buttons"]) >= 3  # every choice (2 for GEP, 3 for PST) and Next
    for rect in box["buttons"]:
        inside(rect, "button")
        assert rect[3] - rect[1] >= 44 and rect[2] - rect[0] >= 44, (name, "touch target too small", rect)
    left, top, right, bottom = box["image"]
    width, height = right - left, bottom - top
    nw, nh = box["natural"]
    assert abs(width / height - nw / nh) < 0.02, (name, "aspect ratio", width, height, nw, nh)
    assert height >= 150, (name, "image too small to judge", width, height)
    assert box["cue"] == box["image"], (name, "the side cue is not on the image", box["cue"], box["image"])
    assert box["spill"] == [], (name, "a button's content overflows it", box["spill"])
    return box


def _png(width: int, height: int, seed: int) -> bytes:
    im = PILImage.new("RGB", (width, height), (90 + 40 * seed % 160, 150, 200))
    draw = ImageDraw.Draw(im)
    draw.ellipse((width * .1, height * .2, width * .4, height * .95), fill=(60, 70, 160))
    draw.ellipse((width * .6, height * .2, width * .9, height * .95), fill=(160, 60, 60))
    draw.rectangle((0, 0, width - 1, height - 1), outline=(0, 0, 0), width=6)  # the edge must stay visible
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _image(campaign: Campaign, prompt: Any, n: int, size: tuple[int, int]) -> Image:
    key = default_storage.save(f"fit-test/{campaign.pk}-{n}.png", ContentFile(_png(*size, n)))
    return Image.objects.create(campaign=campaign, prompt=prompt, sample_index=0, seed=prompt.seeds[0],
                                status=Image.Status.DONE, file=key, web_file=key, width=size[0], height=size[1],
                                backend="placeholder", synthetic=True, finished_at=timezone.now())


def fit_campaign() -> Campaign:
    """A PST campaign whose HIT holds big images (1024x1024 paired, 768x1152 single: taller than any
    screen here), R = 1, HITs of 3 images."""
    campaign = make_campaign(make_researcher("fitz"), kind="pst", annotation={"hit_size": 3, "redundancy": 1})
    paired = list(campaign.prompts.filter(setting="paired").order_by("position")[:3])
    single = list(campaign.prompts.filter(setting="single").order_by("position")[:1])
    images = [_image(campaign, p, i, (1024, 1024)) for i, p in enumerate(paired)]
    _image(campaign, single[0], 9, (768, 1152))
    questions_open(campaign=campaign)
    # The third paired image is an example of the paired setting: shown in the instructions, never asked.
    example_add(campaign=campaign, family="person:paired", image=images[2].pk, answer="Cannot identify",
                caption="Both faces hidden")
    return campaign


def fit_gep_campaign() -> Campaign:
    """A GEP campaign with square 768x768 images, R = 1, HITs of 3 questions, and an example of every
    attribute (so each question has its own examples one tap away)."""
    campaign = make_campaign(make_researcher("gepfitz"), kind="gep", annotation={"hit_size": 3, "redundancy": 1})
    prompts = list(campaign.prompts.order_by("position")[:4])
    images = [_image(campaign, p, i, (768, 768)) for i, p in enumerate(prompts)]
    questions_open(campaign=campaign)
    families = sorted(set(campaign.questions.values_list("family", flat=True)))
    for family in families:  # the fourth image is an example of every attribute (so never asked)
        example_add(campaign=campaign, family=family, image=images[3].pk, answer="Yes", caption="clearly so")
    return campaign


def assert_phone_image(b: Browser, name: str, *, min_width: float = 300, full_width: bool = True) -> dict[str, Any]:
    """On a phone: the image spans the column's width (at least `min_width` px, within 2 px of the
    column, or as wide as its aspect ratio allows in the height left), whether the instructions
    drawer is open or not; the drawer, when open, overlays the page instead of taking height."""
    b.wait(lambda d: d.execute_script("const i = document.getElementById('q-image');"
                                      "return i.complete && i.naturalWidth > 0"), message="image not loaded")
    box = b.js("""
        const r = e => { const x = e.getBoundingClientRect(); return [x.left, x.top, x.right, x.bottom]; };
        const img = document.getElementById('q-image');
        const body = document.querySelector('#instructions .instructions-body');
        const open = document.getElementById('instructions').open;
        return {vw: document.documentElement.clientWidth, vh: window.innerHeight, image: r(img),
                natural: [img.naturalWidth, img.naturalHeight], column: r(document.getElementById('stage-task')),
                drawer: open ? r(body) : null, drawer_position: open ? getComputedStyle(body).position : null};""")
    b.shot(name)
    left, top, right, bottom = box["image"]
    width = right - left
    nw, nh = box["natural"]
    assert width >= min_width, (name, "image narrower than", min_width, box)
    if full_width and nw >= nh:  # a square or wide image takes the column's whole width
        col = box["column"][2] - box["column"][0]
        assert width >= col - 2, (name, "image not full width", width, col)
    if box["drawer"] is not None:
        assert box["drawer_position"] == "fixed", (name, "instructions take height from the image", box)
    return box

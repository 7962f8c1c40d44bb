"""The task page fits the screen (issue 17): at 1366x768, 1280x720, a 390x844 phone and the MTurk
ExternalQuestion frame (tests/crowd/test_mturk_browser.py), the question, the whole image and every
answer button lie inside the viewport with nothing scrolled, with the instructions open (first HIT)
and closed (the I key). The image is scaled to the space left and keeps its aspect ratio.
Screenshots: test-artifacts/screenshots/fit-*.png."""
from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from PIL import Image as PILImage
from PIL import ImageDraw

from annotation.services.examples import example_add
from annotation.services.lifecycle import questions_open
from campaigns.models import Campaign
from generation.models import Image
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.builders.campaigns import make_annotator, make_campaign
from tests.builders.taskpage import assert_fits, login
from tests.conftest import make_researcher

pytestmark = [pytest.mark.django_db(transaction=True)]

SIZES = [(1366, 768, False), (1280, 720, False), (390, 844, True)]


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


def _position(b: Browser) -> tuple[int, int]:
    words = b.find("#progress").text.split()  # "Question 2 / 5"
    return int(words[1]), int(words[3])


def _choice_click(b: Browser, key: str) -> None:
    b.find(f"#choices .choice[data-key={key}]").click()


@pytest.mark.browser
def test_task_page_fits_each_screen(browser: Browser) -> None:
    b = browser
    campaign = fit_campaign()
    annotator, _ = make_annotator("fiona", campaign=campaign)
    login(b, annotator.user)
    for n, (width, height, mobile) in enumerate(SIZES):
        b.viewport(width, height, mobile=mobile)
        b.get(f"/work/{campaign.pk}/")
        b.visible("#stage-task")
        if n == 0:
            # The first HIT: instructions (the PST paper's text) open, and everything still fits.
            assert b.find("#instructions").get_attribute("open") is not None
            text = b.find("#instructions-text").text
            assert "gender fairness issues" in text and "UCLA" not in text  # lab-neutral
            family_text = b.find("#family-instructions").text
            assert "decide whether the two individuals" in family_text
            # The example of the HIT's paired questions, with its answer and caption.
            figures = b.find_all("#examples figure")
            assert len(figures) == 1 and figures[0].get_attribute("data-family") == "person:paired"
            assert "Cannot identify" in figures[0].text and "Both faces hidden" in figures[0].text
            b.wait(lambda d: d.execute_script("const i = document.querySelector('#examples img');"
                                              "return i.complete && i.naturalWidth > 0"), message="example not loaded")
        else:
            assert b.find("#instructions").get_attribute("open") is None  # collapsed after the first HIT
            b.keys("i")  # reachable with a key
            b.wait(lambda d: b.find("#instructions").get_attribute("open") is not None)
        assert_fits(b, f"fit-{width}x{height}-instructions-open")
        b.keys("i")
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
        while _position(b)[0] != 1:  # a reload resumes at the first unanswered question
            b.find("#back").click()
        # Every question of the HIT (paired left/right, the tall single image) fits as well.
        seen = []
        while True:
            at, total = _position(b)
            seen.append(at)
            assert_fits(b, f"fit-{width}x{height}-question-{at}")
            if at == total:
                break
            _choice_click(b, "C")
            b.wait(lambda d, at=at: _position(b)[0] == at + 1)
        assert seen == list(range(1, total + 1)) and total == 5  # 2 paired images (2 questions each) + 1 single
        b.keys("?")
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is not None)
        b.keys("\ue00c")  # Escape closes it
        b.wait(lambda d: b.find("#instructions").get_attribute("open") is None)
    assert b.inline_code() == [] and b.console_errors() == []

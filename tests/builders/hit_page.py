"""The annotator walk of the HIT page in a browser (a small PST campaign with real images, a
qualification test, keyboard answering), shared by tests/annotation/test_browser.py and the MTurk
walk (tests/crowd/test_mturk_browser.py)."""
from __future__ import annotations

import io
import re
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone
from PIL import Image as PILImage
from PIL import ImageDraw

from annotation.services.lifecycle import questions_open
from annotation.services.qualification import qualification_attempt, qualification_create
from campaigns.models import Campaign
from generation.models import Image
from tests.browser import Browser
from tests.builders.campaigns import make_annotator, make_campaign
from tests.conftest import make_researcher

PASSWORD = "walker-Secret-pass-9"
KEY = {"Feminine": "f", "Masculine": "m", "Cannot identify": "c"}


def _png(seed: int) -> bytes:
    """A small picture of two 'people' (a blue and a red figure) on a coloured background."""
    im = PILImage.new("RGB", (256, 256), (200, 170 + 17 * seed % 80, 150))
    draw = ImageDraw.Draw(im)
    draw.ellipse((30, 60, 110, 230), fill=(60, 70, 160))
    draw.ellipse((146, 60, 226, 230), fill=(160, 60, 60))
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()


def _image(campaign: Campaign, prompt: Any, n: int) -> Image:
    key = default_storage.save(f"browser-test/{campaign.pk}-{n}.png", ContentFile(_png(n)))
    return Image.objects.create(campaign=campaign, prompt=prompt, sample_index=0, seed=prompt.seeds[0],
                                status=Image.Status.DONE, file=key, web_file=key, width=256, height=256,
                                backend="placeholder", synthetic=True, finished_at=timezone.now())


def _open_campaign() -> tuple[Campaign, dict[str, Any]]:
    """A PST campaign with 3 paired images and 1 single image (7 questions, 1 annotator each, HITs of
    2 images), a qualification test (2 items, answer key 'Masculine', retake at once) and 2 example
    images, opened for annotation through the annotation services."""
    campaign = make_campaign(make_researcher("rhea"), kind="pst", annotation={"hit_size": 2, "redundancy": 1})
    paired = list(campaign.prompts.filter(setting="paired").order_by("position")[:5])
    single = list(campaign.prompts.filter(setting="single").order_by("position")[:1])
    work = [_image(campaign, p, i) for i, p in enumerate(paired[:3] + single)]
    examples = [_image(campaign, p, 10 + i) for i, p in enumerate(paired[3:5])]
    Image.objects.filter(pk__in=[e.pk for e in examples]).update(excluded=True)  # examples are not questions
    campaign.spec["annotation"]["example_images"] = [e.pk for e in examples]
    campaign.save(update_fields=["spec"])
    qual = qualification_create(
        campaign=campaign, name="Person presentation", family="person",
        items=[{"image": work[3].pk, "correct": "Masculine"}, {"image": examples[0].pk, "correct": "Masculine"}],
        instructions="Answer both items correctly.", retake_after_minutes=0, max_attempts=2)
    opened = questions_open(campaign=campaign)
    assert opened["questions"] == 7
    return campaign, {"qualification": qual, "images": work}


def _annotator(username: str, campaign: Campaign, *, consent: bool, qualification: Any = None) -> Any:
    annotator, _ = make_annotator(username, campaign=campaign if consent else None)
    if qualification is not None:
        qualification_attempt(qualification=qualification, annotator=annotator,
                                       answers=["Masculine"] * qualification.items.count())
    return annotator


def _progress(b: Browser) -> tuple[int, int]:
    m = re.search(r"(\d+) / (\d+)", b.find("#progress").text)
    assert m, b.find("#progress").text
    return int(m.group(1)), int(m.group(2))


def _wait_question(b: Browser, n: int) -> int:
    """Wait for question n of the HIT (its image loaded); return the HIT's size."""
    b.wait(lambda d: _progress(b)[0] == n, message=f"question {n} not shown")
    b.wait(lambda d: d.execute_script("const i = document.getElementById('q-image');"
                                      "return i.complete && i.naturalWidth > 0"), message="question image not loaded")
    return _progress(b)[1]


def _answer_hit_with_keyboard(b: Browser, choices: list[str], *, shots: str = "") -> list[str]:
    """Answer every question of the HIT on screen with the keys only; return the choices given."""
    total = _wait_question(b, 1)
    given = []
    for n in range(1, total + 1):
        _wait_question(b, n)
        text = b.find("#q-text").text
        side = b.find("#frame").get_attribute("data-side")
        # The side asked about is said in the question and shown on the image.
        if " on the left " in text:
            assert side == "left" and "left" in b.find(".side-label").text.lower()
        elif " on the right " in text:
            assert side == "right" and "right" in b.find(".side-label").text.lower()
        else:
            assert side == "none"
        if shots and n == 1:
            b.shot(f"{shots}-question-1")
        choice = choices[(n - 1) % len(choices)]
        b.keys(KEY[choice])
        given.append(choice)
    # All answered: the last question shows its choice and the Submit button takes Enter.
    b.wait(lambda d: b.find("#choices [aria-checked=true]").get_attribute("data-choice") == given[-1])
    b.text_in("#next .label", "Submit")
    return given

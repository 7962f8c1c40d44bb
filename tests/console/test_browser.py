"""The researcher's whole audit in headless Chromium against the live server: log in, design a small
PST campaign from the preset with the placeholder backend through the console's form (live preview
checked, a validator error shown by its dotted path), generate (Celery eager), exclude one image with
a reason in the review grid, open annotation, let three scripted annotators finish it through the
annotation API (token clients), watch the progress update without a reload, and read the report
with its SVG charts and the exclusion counted. Screenshots: test-artifacts/screenshots/console-*.png.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from annotation.models import Answer, ExampleImage
from campaigns.models import Campaign
from generation.models import Image
from tests.browser import Browser, browser  # noqa: F401  (fixture)
from tests.conftest import make_researcher

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PASSWORD = "xena-pass-123"


@pytest.fixture
def live_media(settings: Any, media: Path, eager: None) -> Path:
    settings.ROOT_URLCONF = "tests.console.urls"
    return media


def _annotate(campaign_id: int, name: str, dissent: bool) -> int:
    """Sign up, consent, take HITs until 204 and submit each: the annotation API with a token."""
    client = APIClient()
    r = client.post("/api/annotators/", {"username": name, "password": f"{name}-Secret-pass-9", "consent": True},
                    format="json")
    assert r.status_code == 201, r.content
    client.credentials(HTTP_AUTHORIZATION=f"Token {r.json()['token']}")
    assert client.post(f"/api/campaigns/{campaign_id}/consent/", {"consent": True}, format="json").status_code in (200, 201)
    answered = 0
    for _ in range(50):
        r = client.post(f"/api/campaigns/{campaign_id}/assignments/")
        if r.status_code == 204:
            return answered
        assert r.status_code in (200, 201), r.content
        hit = r.json()
        answers = []
        for i, q in enumerate(hit["questions"]):
            # The stereotyped answer ("carpenter"/"pilot" masculine), except one annotator now and then.
            masculine = any(w in q["text"] for w in ("carpenter", "pilot"))
            choice = "Masculine" if masculine else "Feminine"
            if dissent and i % 3 == 0:
                choice = "Cannot identify"
            answers.append({"question": q["id"], "choice": choice, "time_ms": 1200 + 100 * i})
        r = client.post(f"/api/assignments/{hit['id']}/submit/", {"answers": answers}, format="json")
        assert r.status_code == 200, r.content
        answered += len(answers)
    raise AssertionError("annotator never ran out of work")


def _check_page(b: Browser, *, expected: str = "") -> None:
    """No console errors (but the `expected` failed request), no inline code, labelled controls."""
    assert [e for e in b.console_errors() if not (expected and expected in e)] == []
    # Inline code blocked by a strict CSP; the charts' SVG (lower-case tag names) carries
    # matplotlib's presentation styles, which are not script.
    assert [x for x in b.inline_code() if not x.split(" ")[0].islower()] == []
    # Every form control has a label (explicit, wrapping, or aria-label).
    unlabelled = b.js("""
        return Array.from(document.querySelectorAll('input:not([type=hidden]), select, textarea'))
          .filter(el => !el.closest('[hidden]'))
          .filter(el => !(el.labels && el.labels.length) && !el.getAttribute('aria-label'))
          .map(el => el.id || el.name);""")
    assert unlabelled == []
    assert b.find_all("h1")


def test_researcher_designs_generates_reviews_opens_and_reports(browser: Browser, live_media: Path) -> None:  # noqa: F811
    b = browser
    user = make_researcher("xena")
    user.set_password(PASSWORD)
    user.save()

    # Anonymous -> login page -> back to the console.
    b.get("/console/")
    b.visible("#id_username")
    assert "/accounts/login/" in b.driver.current_url
    b.shot("console-01-login")
    b.find("#id_username").send_keys("xena")
    b.find("#id_password").send_keys(PASSWORD)
    b.find("button[type=submit]").click()
    b.text_in("h1", "Campaigns")
    b.shot("console-02-campaign-list-empty")

    # New campaign from the PST occupation preset, with our own 2 + 2 identities and small images.
    b.find("a.button.primary").click()
    b.wait(lambda d: b.find("#b-name").get_attribute("value") == "pst-occupation-audit", message="preset not loaded")
    b.text_in("#preview-state", "Valid spec")
    assert b.find("#pv-images").text == "920"  # the preset: 120 single + 800 paired
    b.find("#b-custom-groups").click()
    for n, ids in ((1, "carpenter\npilot"), (2, "nurse\neditor")):
        area = b.find(f"#b-g{n}-ids")
        area.clear()
        area.send_keys(ids)
    for setting in ("single", "paired"):
        box = b.find(f"#b-samples-{setting}")
        box.clear()
        box.send_keys("1")
    Select(b.find("#b-backend")).select_by_value("placeholder")
    params = b.find("#b-params")
    params.clear()
    params.send_keys('{"width": 96, "height": 96}')
    reward = b.find("#b-reward")
    reward.clear()
    reward.send_keys("0.05")
    Select(b.find("#b-reward-per")).select_by_value("question")
    # 4 single + 2 x 2 x 2 paired = 12 images; questions 4 + 16 = 20; answers x R=3 = 60; cost 60 x 0.05.
    b.text_in("#pv-images", "12")
    b.wait(lambda d: b.find("#pv-questions").text == "20", message="questions")
    assert b.find("#pv-prompts").text == "12"
    assert b.find("#pv-answers").text == "60"
    assert b.find("#pv-cost").text == "3.00 USD"
    assert len(b.find_all("#pv-examples li")) >= 4
    # A validator error is shown with its dotted path, next to the field.
    tmpl = b.find("#b-t-single")
    b.js("document.querySelector('#builder details').open = true")
    tmpl.clear()
    tmpl.send_keys("A picture of a person.")
    b.text_in("#preview-errors", "design.templates.single")
    b.visible("#b-t-single[aria-invalid=true]")
    assert "design.templates.single" in b.find(".field-error").text
    b.shot("console-03-new-campaign-error")
    # Creating it anyway: the server refuses it (400) and the form comes back with every value kept,
    # the errors next to the fields, and no false "you edited the spec" note.
    b.find("#create").click()
    b.visible("#server-errors")
    assert "design.templates.single" in b.find("#server-errors").text
    # (the preview's 400s and the refused create's 400 are the only failed requests so far)
    _check_page(b, expected="Failed to load resource: the server responded with a status of 400")
    assert b.find("#b-reward").get_attribute("value") == "0.05"
    assert Select(b.find("#b-reward-per")).first_selected_option.get_attribute("value") == "question"
    assert b.find("#b-g1-ids").get_attribute("value") == "carpenter\npilot"
    assert b.find("#b-samples-single").get_attribute("value") == "1"
    tmpl = b.find("#b-t-single")
    assert tmpl.get_attribute("value") == "A picture of a person."
    assert not b.find("#raw-note").is_displayed()
    b.text_in("#preview-errors", "design.templates.single")
    b.js("document.querySelector('#builder details').open = true")
    tmpl.clear()
    tmpl.send_keys("Generate a picture of one {id1}.")
    b.wait(lambda d: not b.find_all(".field-error"), message="error not cleared")
    name = b.find("#b-name")
    name.clear()
    name.send_keys("browser-pst")
    b.text_in("#preview-state", "Valid spec")
    _check_page(b, expected="/api/specs/preview/ - Failed to load resource: the server responded with a status of 400")
    b.shot("console-04-new-campaign")
    b.find("#create").click()

    # Campaign page: draft, next step generate, synthetic notice.
    b.text_in("h1", "browser-pst")
    campaign = Campaign.objects.get(name="browser-pst")
    assert campaign.owner.username == "xena" and campaign.images_planned == 12
    assert campaign.spec["backend"]["width"] == 96 and campaign.spec["annotation"]["reward_per"] == "question"
    b.visible(".synthetic")
    assert b.find("[aria-current=step]").text.endswith("Generate")
    b.shot("console-05-campaign-draft")
    b.find("button[data-action=generate]").click()
    b.text_in("#campaign-status", "Generated")  # eager Celery: done when the page comes back
    assert b.find("#gen-progress").get_attribute("value") == "12"
    assert b.find("[data-field=images_done]").text == "12"
    assert b.find("[aria-current=step]").text.endswith("Review images")
    _check_page(b)
    b.shot("console-06-campaign-generated")

    # Review grid: filter paired, open one, exclude it with a reason.
    b.find(".tabs a[href$='/images/']").click()
    b.visible("#image-grid")
    assert len(b.find_all("#image-grid .tile")) == 12
    b.wait(lambda d: d.execute_script(
        "return Array.from(document.querySelectorAll('#image-grid img')).every(i => i.complete && i.naturalWidth > 0)"),
        message="thumbnails did not load")
    assert len(b.find_all("#image-grid .synthetic-badge")) == 12
    Select(b.find("#f-setting")).select_by_value("paired")
    b.find(".filters button[type=submit]").click()
    b.wait(lambda d: len(b.find_all("#image-grid .tile")) == 8, message="filter")
    tile = b.find_all("#image-grid .tile")[0]
    image_id = int(tile.get_attribute("data-image"))
    tile.find_element(By.CSS_SELECTOR, "button.thumb").click()
    b.visible("#image-dialog[open]")
    assert "Seed" in b.find("#dlg-fields").text and "Prompt" in b.find("#dlg-fields").text
    b.visible("#dlg-synthetic")
    b.find("#exclude-btn").click()  # no reason: refused in the page
    b.visible("#dlg-error")
    b.find("#exclude-reason").send_keys("does not show two people")
    b.shot("console-07-image-dialog")
    b.find("#exclude-btn").click()
    b.visible("#include-btn")
    b.text_in("#dlg-excluded", "does not show two people")
    image = Image.objects.get(pk=image_id)
    assert image.excluded and image.exclusion_reason == "does not show two people"
    b.keys("\ue00c")  # Escape closes the dialog
    b.hidden("#image-dialog[open]")
    b.visible(f"#tile-{image_id} [data-excluded-badge]")
    _check_page(b)
    b.shot("console-08-image-grid")

    # Another image as an example of the instructions, with its answer; then removed again.
    tile = b.find_all("#image-grid .tile")[1]
    example_id = int(tile.get_attribute("data-image"))
    tile.find_element(By.CSS_SELECTOR, "button.thumb").click()
    b.visible("#example-form")
    assert Select(b.find("#example-family")).first_selected_option.get_attribute("value") == "person:paired"
    assert [o.text for o in Select(b.find("#example-answer")).options] == ["Feminine", "Masculine", "Cannot identify"]
    Select(b.find("#example-answer")).select_by_value("Masculine")
    b.find("#example-caption").send_keys("short hair, suit")
    b.find("#example-btn").click()
    b.text_in("#example-list", "Example of person:paired: Masculine (short hair, suit)")
    b.visible(f"#tile-{example_id} [data-example-badge]")
    example = ExampleImage.objects.get(image_id=example_id)
    assert (example.family, example.answer, example.caption) == ("person:paired", "Masculine", "short hair, suit")
    b.shot("console-08b-image-example")
    b.find("#example-list button[data-example]").click()
    b.wait(lambda d: not ExampleImage.objects.exists(), message="example not removed")
    b.keys("\ue00c")
    b.hidden("#image-dialog[open]")
    b.visible(f"#tile-{image_id} [data-excluded-badge]")
    assert not b.find(f"#tile-{example_id} [data-example-badge]").is_displayed()

    # Open for annotation; the annotators' link is shown.
    b.find(".tabs a[href$='/campaigns/%d/']" % campaign.pk).click()
    b.visible("button[data-action=open]").click()
    b.text_in("#campaign-status", "Open for annotation")
    assert b.find("#work-url").get_attribute("value").endswith(f"/work/{campaign.pk}/")
    b.text_in("[data-field=questions]", "18")  # 11 images: 4 single + 7 paired x 2
    b.shot("console-09-campaign-open")

    # Three annotators finish it through the API; the page updates without a reload.
    b.js("window.__noReload = true")
    for i, name in enumerate(("ann_a", "ann_b", "ann_c")):
        assert _annotate(campaign.pk, name, dissent=i == 2) == 18
    assert Answer.objects.filter(campaign=campaign).count() == 54
    b.text_in("[data-field=questions_complete]", "18")
    b.text_in("[data-field=answers]", "54")
    assert b.js("return window.__noReload") is True  # polled, not reloaded
    assert b.find("#ann-progress").get_attribute("value") == "18"
    _check_page(b)
    b.shot("console-10-campaign-annotated")

    # Annotator monitor.
    b.find(".tabs a[href$='/annotators/']").click()
    b.visible("#annotators")
    rows = b.find_all("#annotators tbody tr")
    assert len(rows) == 3
    # Time per answer by fair pay's one definition (annotation.pay): the same figure on both pages.
    from annotation.pay import campaign_pay
    pay_rows = campaign_pay(campaign=Campaign.objects.get(pk=campaign.pk))["annotators"]
    first = min(pay_rows, key=lambda r: r["id"])
    assert 1.2 <= first["median_seconds_per_answer"] <= 1.8  # answers timed 1200..1700 ms on the page
    assert "18" in rows[0].text and f"{first['median_seconds_per_answer']:.1f} s" in rows[0].text
    _check_page(b)
    b.shot("console-11-annotators")

    # Report: tables, SVG charts, the excluded image counted, every export linked.
    b.find(".tabs a[href$='/report/']").click()
    b.visible("#sts")
    assert b.find("#count-excluded").text == "1"
    charts = b.find_all("figure.chart svg")
    assert len(charts) >= 2
    hrefs = [a.get_attribute("href") for a in b.find_all(".exports a")]
    for part in ("format=json", "format=csv", "format=html", "payments.csv", "/spec/"):
        assert any(part in h for h in hrefs), part
    _check_page(b)
    b.shot("console-12-report")
    Select(b.find("#o-treatment")).select_by_value("excluded")
    b.find(".filters button[type=submit]").click()
    b.wait(lambda d: "treatment=excluded" in d.current_url)
    b.visible("#sts")
    assert "excluded" in b.find(".note").text or b.find_all("figure.chart svg")

    # Comparison view with this campaign.
    b.get(f"/console/compare/?campaigns={campaign.pk}")
    b.visible("#comparison")
    assert len(b.find_all("figure.chart svg")) == 3  # STS single, paired, gap
    b.shot("console-13-compare")

    # The list, and the pages at 768 px wide: nothing wider than the viewport.
    b.get("/console/")
    b.visible("#campaigns")
    assert "browser-pst" in b.find("#campaigns").text
    b.shot("console-14-campaign-list")
    b.viewport(768, 1000)
    for path, shot in ((f"/console/campaigns/{campaign.pk}/", "console-15-campaign-768"),
                       (f"/console/campaigns/{campaign.pk}/images/", "console-16-images-768"),
                       ("/console/new/", "console-17-new-768"),
                       (f"/console/campaigns/{campaign.pk}/report/", "console-18-report-768")):
        b.get(path)
        b.visible("h1")
        overflow = b.js("return document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, (path, overflow)
        b.shot(shot)

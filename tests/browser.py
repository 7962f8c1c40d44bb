"""Headless Chromium for browser tests: Debian's chromium + chromedriver driven by Selenium.

Use the `browser` fixture (import it into the test module). Every browser gets a fresh profile
directory and no network besides the test server. `Browser.shot(name)` saves a full-page PNG under
test-artifacts/screenshots/ (CI keeps that folder as an artifact).
"""
from __future__ import annotations

import base64
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import WebDriverWait

SCREENSHOTS = Path(settings.BASE_DIR) / "test-artifacts" / "screenshots"
CHROME_ARGS = (
    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
    "--disable-extensions", "--mute-audio", "--lang=en-US",
)


def _find(name: str, *candidates: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    return next((c for c in candidates if os.path.exists(c)), None)


class Browser:
    """A thin wrapper: explicit waits and screenshots, nothing clever."""

    def __init__(self, driver: webdriver.Chrome, base_url: str = "", timeout: float = 10):
        self.driver = driver
        self.base_url = base_url
        self.timeout = timeout

    def get(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    def wait(self, condition: Callable[[Any], Any], timeout: float | None = None, message: str = "") -> Any:
        def settled(driver: Any) -> Any:
            # A page that navigates or re-renders while we look can detach the element under test:
            # that means "not yet", not a failure (the wait still times out with `message`).
            try:
                return condition(driver)
            except StaleElementReferenceException:
                return False
            except WebDriverException as exc:
                if "does not belong to the document" in str(exc) or "No node with given id" in str(exc):
                    return False
                raise

        return WebDriverWait(self.driver, timeout or self.timeout, poll_frequency=0.05).until(settled, message)

    def visible(self, css: str, timeout: float | None = None) -> WebElement:
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), timeout, f"{css} not visible")

    def hidden(self, css: str) -> None:
        self.wait(EC.invisibility_of_element_located((By.CSS_SELECTOR, css)), message=f"{css} still visible")

    def text_in(self, css: str, text: str) -> None:
        self.wait(EC.text_to_be_present_in_element((By.CSS_SELECTOR, css), text), message=f"{text!r} not in {css}")

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def js(self, script: str, *args: Any) -> Any:
        return self.driver.execute_script(script, *args)

    def record_api_calls(self) -> None:
        """From now on, remember every fetch the page makes (see :meth:`api_calls`)."""
        self.js("window.__calls = []; const f = window.fetch; window.fetch = function (u, o) {"
                " window.__calls.push([String(u), String((o && o.body) || '')]); return f.apply(this, arguments); };")

    def api_calls(self) -> list[tuple[str, str]]:
        """The fetches since :meth:`record_api_calls`: (path after /api/, body)."""
        return [(url.rsplit("/api/", 1)[1], body) for url, body in self.js("return window.__calls")]

    def keys(self, *keys: str) -> None:
        """Type keys into whatever has the focus (as a keyboard-only user does)."""
        from selenium.webdriver.common.action_chains import ActionChains

        ActionChains(self.driver).send_keys(*keys).perform()

    def console_errors(self) -> list[str]:
        """Errors the page logged (JS exceptions, failed loads, CSP violations), the favicon aside."""
        return [e["message"] for e in self.driver.get_log("browser")
                if e["level"] == "SEVERE" and "favicon.ico" not in e["message"]]

    def inline_code(self) -> list[str]:
        """Elements that a strict Content-Security-Policy would block: inline scripts, inline event
        handler attributes (onclick=...) and style attributes."""
        return self.js("""
            const bad = [];
            for (const el of document.querySelectorAll('*')) {
              if (el.tagName === 'SCRIPT' && !el.src && el.type !== 'application/json') bad.push('inline script');
              for (const a of el.attributes) {
                if (a.name.startsWith('on') || a.name === 'style') bad.push(el.tagName + ' ' + a.name);
              }
              if (el.href && String(el.href).startsWith('javascript:')) bad.push(el.tagName + ' javascript: URL');
            }
            return bad;""")

    def viewport(self, width: int, height: int, *, mobile: bool = False) -> None:
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile,
        })
        if mobile:
            self.driver.execute_cdp_cmd("Emulation.setTouchEmulationEnabled", {"enabled": True, "maxTouchPoints": 1})

    def shot(self, name: str) -> Path:
        """Save a full-page screenshot as test-artifacts/screenshots/<name>.png."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        metrics = self.driver.execute_cdp_cmd("Page.getLayoutMetrics", {})
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        data = self.driver.execute_cdp_cmd("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1},
        })
        path = SCREENSHOTS / f"{name}.png"
        path.write_bytes(base64.b64decode(data["data"]))
        return path


def make_driver(profile_dir: Path, *, width: int = 1280, height: int = 900) -> webdriver.Chrome:
    chromium = _find("chromium", "/usr/bin/chromium", "/usr/bin/chromium-browser")
    chromedriver = _find("chromedriver", "/usr/bin/chromedriver")
    if not chromium or not chromedriver:
        # Not a skip: CI must install them (scripts/ensure-test-tools.sh does with apt).
        raise RuntimeError("Browser tests need Debian's chromium and chromium-driver "
                           "(apt-get install chromium chromium-driver).")
    options = Options()
    options.binary_location = chromium
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={profile_dir}")
    options.add_argument(f"--window-size={width},{height}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    driver.set_page_load_timeout(20)
    return driver


@pytest.fixture
def browser(live_server: Any, tmp_path: Path) -> Iterator[Browser]:
    driver = make_driver(tmp_path / "chrome-profile")
    try:
        yield Browser(driver, base_url=live_server.url)
    finally:
        driver.quit()

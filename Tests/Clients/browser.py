"""What the browser tests (web_device.py, console.py) share: headless Chromium through Selenium, a
step's JSON line, and reading and using the page as a person does.

    from browser import emit, Browser
    browser = Browser(window="1280,1000")
    text, visible, click = browser.text, browser.visible, browser.click

Needs Debian's chromium, chromium-driver and python3-selenium.
"""
import json
import sys
import traceback

from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as shown
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.support.ui import WebDriverWait


def emit(**fields):
    """One step's findings, as a JSON line on standard output (the Swift test reads them)."""
    print(json.dumps(fields), flush=True)


class Browser:
    """Headless Chromium of the given window size, and a 20-second wait for what the page shows."""

    def __init__(self, window, extra=()):
        options = Options()
        for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                         f"--window-size={window}", "--hide-scrollbars", *extra]:
            options.add_argument(argument)
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        # A live page redraws parts of itself as the device's events arrive: an element found a moment
        # ago may have been replaced by its new copy, so a wait looks again rather than failing.
        self.wait = WebDriverWait(self.driver, 20, ignored_exceptions=[StaleElementReferenceException])

    def text(self, selector):
        """The element's text as written (CSS may show it upper-cased), or None."""
        return self.driver.execute_script(
            "const e = document.querySelector(arguments[0]); return e ? e.textContent : null;", selector)

    def visible(self, selector):
        """Waits until the element is shown; returns it."""
        return self.wait.until(shown.visibility_of_element_located((By.CSS_SELECTOR, selector)))

    def click(self, selector):
        """Waits until the element can be clicked, and clicks it (its new copy, if the page redrew it
        between finding and clicking)."""
        def clicked(driver):
            element = shown.element_to_be_clickable((By.CSS_SELECTOR, selector))(driver)
            if not element:
                return False
            element.click()
            return True
        self.wait.until(clicked)

    def fail(self, script, step, error, screenshot, html=8000):
        """Says which step failed and how (the exception, its trace, the page's body), keeps a
        screenshot at `screenshot`, and exits 1."""
        print(f"{script}: {step} failed: {error!r}", file=sys.stderr)
        traceback.print_exc()
        try:
            self.driver.save_screenshot(screenshot)
            print(self.driver.find_element(By.TAG_NAME, "body").get_attribute("outerHTML")[:html], file=sys.stderr)
        except Exception:
            pass
        sys.exit(1)

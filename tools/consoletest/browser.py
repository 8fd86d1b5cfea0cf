"""Headless Chromium for tools/console-test, through Debian's chromium and chromium-driver and Selenium.

- Browser: one headless Chromium on a fixed window size with its network and console recorded (Chrome's
  performance and browser logs); show() opens a console page and waits until the page rendered it;
  figure()/figures() read what a person sees; requests() and bodies() give every request the page made
  and what it received (through the DevTools protocol)
"""

import json
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
# Nothing in Chromium may reach for the network on its own: the test counts every request.
FLAGS = ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-default-apps",
         "--disable-extensions", "--hide-scrollbars", "--force-device-scale-factor=1", "--lang=en-US")


class Browser:
    def __init__(self, base_url, width=1160, height=860, timeout=15.0):
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in FLAGS + (f"--window-size={width},{height}",):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"performance": "ALL", "browser": "ALL"})
        self.driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        self.base_url = base_url
        self.timeout = timeout
        self.events = []  # DevTools network events, in order, over the whole session
        self.console = []  # the page's console messages (errors included)

    def close(self):
        try:
            self.driver.quit()
        except WebDriverException:
            pass

    def load(self):
        """Opens /console itself (a full page load)."""
        self.driver.get(self.base_url + "/console")
        self.wait(lambda: self.driver.execute_script("return document.readyState") == "complete", "the page to load")

    def show(self, route, page):
        """Goes to `#/route` and waits until the console rendered `page` anew (or showed an error)."""
        self.driver.execute_script(
            "const p = document.getElementById('page'); p.replaceChildren(); delete p.dataset.page;"
            "location.hash = arguments[0];", "#/" + route)
        self.wait(lambda: self.driver.execute_script(
            "const p = document.getElementById('page');"
            "return p.dataset.page === arguments[0] || p.querySelector('[data-figure=error]') !== null", page),
            f"page {page} (#/{route})")
        error = self.driver.find_elements(By.CSS_SELECTOR, "[data-figure=error]")
        if error:
            raise AssertionError(f"#/{route} showed an error: {error[0].text}")

    def wait(self, condition, what):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}")

    # Read in one script each, so a page that re-renders meanwhile (the refresh) gives no stale element.
    def text(self, selector):
        """What a person reads in the first element `selector` finds (its rendered text)."""
        found = self.driver.execute_script("const e = document.querySelector(arguments[0]); return e && e.innerText", selector)
        if found is None:
            raise AssertionError(f"nothing on the page matches {selector}")
        return found

    def texts(self, selector):
        return self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]), e => e.innerText)", selector)

    def attributes(self, selector, name):
        return self.driver.execute_script(
            "return Array.from(document.querySelectorAll(arguments[0]), e => e.getAttribute(arguments[1]))", selector, name)

    def figure(self, name):
        """The number a [data-figure=NAME] element shows, as a person reads it ("1,234" is 1234)."""
        return int(self.text(f"[data-figure={name}]").replace(",", ""))

    def screenshot(self, path):
        self.driver.save_screenshot(path)

    def source(self):
        """The page as the browser holds it now (the DOM serialized), not as it was served."""
        return self.driver.execute_script("return document.documentElement.outerHTML")

    def collect(self):
        """Moves Chrome's new log entries into `events` and `console`."""
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message["method"].startswith("Network."):
                self.events.append(message)
        self.console += self.driver.get_log("browser")

    def requests(self):
        """Every request the page made so far: (request id, method, URL)."""
        self.collect()
        return [(e["params"]["requestId"], e["params"]["request"]["method"], e["params"]["request"]["url"])
                for e in self.events if e["method"] == "Network.requestWillBeSent"]

    def responses(self):
        """{request id: (URL, status, headers)} of every response received so far."""
        self.collect()
        return {e["params"]["requestId"]: (e["params"]["response"]["url"], e["params"]["response"]["status"],
                                           {k.lower(): v for k, v in e["params"]["response"]["headers"].items()})
                for e in self.events if e["method"] == "Network.responseReceived"}

    def body(self, request_id):
        """What the page received for a request (DevTools' copy; None once Chrome dropped it)."""
        try:
            return self.driver.execute_cdp_cmd("Network.getResponseBody", {"requestId": request_id})["body"]
        except WebDriverException:
            return None

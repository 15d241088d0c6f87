"""Headless Chromium (Debian's ``chromium``) for the report tests, driven by Playwright.

Chromium is started as its own process with its DevTools endpoint on a free
port of 127.0.0.1, waited for with a bounded timeout, and stopped by its own
process id when the tests end, pass or fail; Playwright connects to it over
the DevTools protocol and records what a page logs and requests.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from conftest import free_port

START_TIMEOUT_S = 30.0
VIEWPORT = {"width": 1280, "height": 900}


class HeadlessChromium:
    """One Chromium process with a DevTools endpoint on 127.0.0.1."""

    def __init__(self):
        executable = shutil.which("chromium")
        if executable is None:
            raise RuntimeError(
                "Debian's chromium is not installed; `make test` installs it "
                "(apt-get install chromium)."
            )
        self.port = free_port()
        self._profile = tempfile.TemporaryDirectory(prefix="report-chromium-")
        self.process = subprocess.Popen(
            [
                executable,
                "--headless",
                "--no-sandbox",  # tests run as root, which Chromium's sandbox refuses
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-address=127.0.0.1",
                f"--remote-debugging-port={self.port}",
                f"--user-data-dir={self._profile.name}",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # Its own process group: its helpers (crashpad, utility processes) outlive the
            # browser by moments and still write into the profile being removed.
            start_new_session=True,
        )
        self.endpoint = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and self.process.poll() is None:
            try:
                urllib.request.urlopen(f"{self.endpoint}/json/version", timeout=1).close()
                return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"Chromium's DevTools endpoint did not answer on {self.endpoint}.")

    def stop(self) -> None:
        """Stops Chromium and every helper process it started, then removes its profile."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass  # every helper had already exited
        self._profile.cleanup()


@dataclasses.dataclass
class LoadedReport:
    """A report as the browser showed it.

    Attributes:
      errors: console errors and uncaught page errors.
      requests: every URL the page requested, itself included.
      sections: the ids of the page's ``section`` elements, in order.
      counts: the ``data-count`` of each element that has one, by element id.
      reasons: the quarantine's count per reason, as shown.
      anomalous: the features marked as having anomalies.
      images: (natural width, natural height) of each thumbnail as decoded.
      screenshot: the full-page PNG written beside the report.
      overflow_px: how far the page is wider than its viewport (0: nothing is cut off).
      hidden_links: the navigation bar's links that end beyond the viewport's right edge.
    """

    errors: list[str]
    requests: list[str]
    sections: list[str]
    counts: dict[str, str]
    reasons: dict[str, int]
    anomalous: set[str]
    images: list[tuple[int, int]]
    screenshot: Path
    overflow_px: int = 0
    hidden_links: list[str] = dataclasses.field(default_factory=list)


def _shown(frame, errors: list[str], requests: list[str], screenshot: Path) -> LoadedReport:
    """What ``frame`` (a page or a frame of one) shows, read from its DOM."""
    return LoadedReport(
        errors=errors,
        requests=requests,
        sections=frame.eval_on_selector_all("section", "nodes => nodes.map(n => n.id)"),
        counts=dict(
            frame.eval_on_selector_all(
                "[data-count]", "nodes => nodes.map(n => [n.id, n.dataset.count])"
            )
        ),
        reasons={
            reason: int(text.replace(",", ""))
            for reason, text in frame.eval_on_selector_all(
                "[data-reason]", "nodes => nodes.map(n => [n.dataset.reason, n.textContent])"
            )
        },
        anomalous=set(
            frame.eval_on_selector_all(
                ".feature.anomalous", "nodes => nodes.map(n => n.dataset.feature)"
            )
        ),
        images=[
            tuple(size)
            for size in frame.eval_on_selector_all(
                "img", "nodes => nodes.map(n => [n.naturalWidth, n.naturalHeight])"
            )
        ],
        screenshot=screenshot,
        overflow_px=frame.evaluate(
            "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
        ),
        hidden_links=frame.eval_on_selector_all(
            "nav a",
            "nodes => nodes.filter(n => n.getBoundingClientRect().right >"
            " document.documentElement.clientWidth).map(n => n.textContent)",
        ),
    )


@contextlib.contextmanager
def _watched_page(endpoint: str):
    """A new page, with the errors it logs and the URLs it requests, frames included."""
    from playwright.sync_api import sync_playwright

    errors, requests = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.connect_over_cdp(endpoint)
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("request", lambda r: requests.append(r.url))
        try:
            yield page, errors, requests
        finally:
            context.close()


def load_report(endpoint: str, report: Path) -> LoadedReport:
    """Opens the report from disk (file://) as a user would, and reads what it shows."""
    with _watched_page(endpoint) as (page, errors, requests):
        page.goto(report.as_uri(), wait_until="load")
        loaded = _shown(page, errors, requests, report.with_suffix(".png"))
        page.screenshot(path=str(loaded.screenshot), full_page=True)
    return loaded


# The width of the frame KFP's UI gives a system.HTML artifact in a run's task panel (its
# width: 100% of the panel, about 550 px in Chromium at 1280 px: issue 91, finding 6).
KFP_PANEL_WIDTH_PX = 550


def load_as_kfp_ui_shows(endpoint: str, html: str, screenshot: Path) -> LoadedReport:
    """Shows ``html`` as KFP's UI shows a ``system.HTML`` artifact, and reads what it shows.

    The UI reads the artifact's file and sets its text as the ``srcdoc`` of an
    iframe sandboxed with ``allow-scripts`` alone (kubeflow/pipelines at 7b70c7b,
    frontend/src/components/viewers/HTMLViewer.tsx): an opaque origin, with the
    page's own Content-Security-Policy; 100% of the task panel wide, and at least 600
    px high.
    """
    with _watched_page(endpoint) as (page, errors, requests):
        page.set_content(
            '<iframe sandbox="allow-scripts" src="about:blank" '
            f'style="width: {KFP_PANEL_WIDTH_PX}px; height: 600px; border: 0"></iframe>'
        )
        with page.expect_event("framenavigated", predicate=lambda f: f.url == "about:srcdoc"):
            page.eval_on_selector("iframe", "(frame, html) => { frame.srcdoc = html; }", html)
        [frame] = [f for f in page.frames if f.url == "about:srcdoc"]
        frame.wait_for_load_state("load")
        loaded = _shown(frame, errors, requests, screenshot)
        page.screenshot(path=str(screenshot), full_page=True)
    return loaded

"""Open the report in a real headless Chromium: its text, its images' load state, a screenshot.

Speaks the DevTools protocol over ``--remote-debugging-pipe`` (JSON messages, NUL-terminated, on file
descriptors 3 and 4), so it needs nothing but the browser: no driver, no Python package. Used by the
report's browser test and to make the screenshot in docs/analytics.md::

    python -m staticconsumer.analytics.browser report/summary.html docs/analytics-report.png [HEIGHT]

With HEIGHT, the top HEIGHT pixels of the page (a 1280-wide window); without, the whole page.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from staticconsumer.errors import AnalyticsError

# --no-sandbox: CI runs as root. The background-networking flags keep Chromium from calling home on a
# machine whose network is closed (each refused connection is noise and a delay).
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)

IMAGES_JS = """[...document.images].map(i => ({
  alt: i.alt, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight,
  inline: i.src.startsWith('data:')
}))"""
LOADED_JS = """new Promise(resolve => {
  if (document.readyState === 'complete') resolve(true);
  else window.addEventListener('load', () => resolve(true));
})"""


def find_chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise AnalyticsError(
        "no Chromium on PATH: `./dev test` installs Debian's chromium package (apt-get install chromium)"
    )


@dataclass
class Page:
    text: str
    title: str
    images: list[dict[str, Any]]
    links: list[str]


class Chromium:
    """One headless browser process, driven over its DevTools pipe."""

    def __init__(self, binary: str | None = None, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="staticconsumer-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def child_fds() -> None:
            # Move both ends out of the way first: either may already sit on 3 or 4.
            high_read = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            high_write = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(high_read, 3)
            os.dup2(high_write, 4)

        self.process = subprocess.Popen(
            [binary or find_chromium(), *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=child_fds,  # the pipe must sit on fds 3 and 4 of the child
            pass_fds=(3, 4),
        )
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.session: str | None = None

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):  # it may be gone already
            self.call("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def call(
        self, method: str, params: dict[str, Any] | None = None, session: bool = False
    ) -> dict[str, Any]:
        """Send one command and wait for its answer (events in between are skipped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buffer:
                if time.monotonic() > deadline:
                    raise AnalyticsError(f"Chromium did not answer {method} within {self.timeout:.0f}s")
                chunk = os.read(self._from_browser, 1 << 16)
                if not chunk:
                    raise AnalyticsError(f"Chromium exited while answering {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise AnalyticsError(f"Chromium: {method}: {reply['error'].get('message')}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
            session=True,
        )
        if "exceptionDetails" in result:
            raise AnalyticsError(f"Chromium: {expression[:40]}...: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def open(self, path: Path, width: int = 1280, height: int = 900) -> Page:
        """Load a file, wait for its load event (every image decoded or failed), read what a person sees."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )
        self.call("Page.enable", session=True)
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        deadline = time.monotonic() + self.timeout
        while self.evaluate("document.location.href") == "about:blank":
            if time.monotonic() > deadline:
                raise AnalyticsError(f"Chromium did not open {path}")
            time.sleep(0.1)
        self.evaluate(LOADED_JS)
        return Page(
            text=str(self.evaluate("document.body.innerText")),
            title=str(self.evaluate("document.title")),
            images=list(self.evaluate(IMAGES_JS)),
            links=list(self.evaluate("[...document.links].map(a => a.href)")),
        )

    def screenshot(self, out: Path, full_page: bool = True) -> Path:
        """A PNG of the open page (the whole page, not only the viewport)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full_page}
        data = self.call("Page.captureScreenshot", params, session=True)["data"]
        out.write_bytes(base64.b64decode(data))
        return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3):
        print(
            "usage: python -m staticconsumer.analytics.browser REPORT.html OUT.png [HEIGHT]", file=sys.stderr
        )
        return 2
    height = int(args[2]) if len(args) == 3 else 900
    with Chromium() as browser:
        page = browser.open(Path(args[0]), height=height)
        broken = [image["alt"] for image in page.images if not image["width"]]
        browser.screenshot(Path(args[1]), full_page=len(args) == 2)
    print(f"{args[1]}: {page.title}, {len(page.images)} images ({len(broken)} broken)")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())

"""Open a page in real headless Chromium and see what it did: layout, console, network.

No playwright: Chromium's own switches do the work.
- Network: every request goes through `RecordingProxy` (`--proxy-server`, loopback included via
  `<-loopback>`), a local HTTP server that serves the page under test and records every request
  it sees, CONNECTs (HTTPS) included. Anything but the page itself and Chromium's own services
  (`BROWSER_HOSTS`) is a fetch the page made. The probe also lists the page's Resource Timing
  entries: every subresource the page loaded, from any origin.
- Layout: the proxy serves the page with a probe script appended; after layout it measures every
  chart's SVG (getBoundingClientRect) and writes JSON into `<pre id="etfarm-probe">`, which
  `--dump-dom` prints. The probe also logs `etfarm-probe: ok`, proving the console channel works.
- Console: `--enable-logging=stderr --v=0` prints every console message as `INFO:CONSOLE`
  (at one level, errors too); a page without scripts should print nothing but the probe's line.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from . import require_tool

PAGE = "/report.html"
# Chromium's own services, which it calls whatever the page says (component updates, sign-in, network
# time) even with the flags below; exact host names, so a page fetching from any other host is caught.
BROWSER_HOSTS = ("update.googleapis.com", "accounts.google.com", "clients2.google.com")
PROBE_MARK = "etfarm-probe"
PROBE = """<script>
(function () {
  var charts = Array.prototype.map.call(document.querySelectorAll("figure.chart"), function (fig) {
    var svg = fig.querySelector("svg"), box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return {chart: fig.getAttribute("data-chart"), width: box.width, height: box.height,
            marks: svg ? svg.querySelectorAll("path, rect, use, text").length : 0};
  });
  var out = document.createElement("pre");
  out.id = "etfarm-probe";
  var fetched = performance.getEntriesByType("resource").map(function (e) { return e.name; });
  // a table wider than its box (it scrolls sideways): its headers, how wide it wants to be and may be
  var wide = Array.prototype.filter.call(document.querySelectorAll("table"), function (t) {
    return t.scrollWidth > t.clientWidth + 1;
  }).map(function (t) {
    return {headers: Array.prototype.map.call(t.querySelectorAll("th"), function (h) { return h.textContent; }),
            width: t.scrollWidth, box: t.clientWidth};
  });
  var headings = Array.prototype.map.call(document.querySelectorAll("main h2"), function (h) { return h.textContent; });
  var answer = document.querySelector(".answer");
  out.textContent = JSON.stringify({charts: charts, tables: document.querySelectorAll("table").length, fetched: fetched,
                                    width: document.documentElement.scrollWidth, wide_tables: wide,
                                    headings: headings, answer: answer ? answer.textContent : null});
  document.body.appendChild(out);
  console.log("etfarm-probe: ok");
})();
</script>"""
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0", "--hide-scrollbars",
         # Chromium's own background chatter (time, updates, sign-in), so that any request left is the page's.
         ("--disable-features=NetworkTimeServiceQuerying,OptimizationHints,Translate,MediaRouter,"
          "AutofillServerCommunication,CertificateTransparencyComponentUpdater"),
         "--disable-client-side-phishing-detection", "--disable-default-apps", "--disable-extensions",
         "--disable-domain-reliability", "--no-pings", "--safebrowsing-disable-auto-update",
         "--no-default-browser-check", "--metrics-recording-only", "--disable-field-trial-config")
TIMEOUT_SEC = 120


@dataclass
class RecordingProxy:
    """HTTP server + forward proxy on 127.0.0.1 that serves one page and records every request."""

    page: bytes
    requests: list[str] = field(default_factory=list)
    server: ThreadingHTTPServer | None = None

    def __enter__(self) -> Self:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> str:
                target = re.sub(r"^https?://[^/]+", "", self.path) if self.command != "CONNECT" else self.path
                proxy.requests.append(f"{self.command} {self.path}")
                return target

            def do_GET(self) -> None:
                if self._record() == PAGE:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html; charset=utf-8")
                    self.send_header("Content-Length", str(len(proxy.page)))
                    self.end_headers()
                    self.wfile.write(proxy.page)
                else:
                    self.send_error(404)

            def do_CONNECT(self) -> None:
                self._record()
                self.send_error(403)

            do_POST = do_HEAD = do_GET

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.shutdown()
        self.server.server_close()

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.server_address[1]}{PAGE}"

    @property
    def proxy_flags(self) -> tuple[str, ...]:
        assert self.server is not None
        return (f"--proxy-server=http://127.0.0.1:{self.server.server_address[1]}", "--proxy-bypass-list=<-loopback>")


@dataclass(frozen=True)
class PageVisit:
    probe: dict[str, Any]  # what the probe measured
    console: list[str]  # console messages other than the probe's own
    requests: list[str]  # every request Chromium made (the page's own included), but those to BROWSER_HOSTS
    screenshot: Path
    probe_logged: bool


def visit(html_file: Path, work: Path, window: tuple[int, int] = (1280, 2400)) -> PageVisit:
    """Load the page twice (DOM dump with the probe; screenshot) through the recording proxy."""
    chromium = require_tool("chromium")
    page = html_file.read_text(encoding="utf-8")
    page = page.replace("</body>", PROBE + "</body>", 1) if "</body>" in page else page + PROBE
    screenshot = work / "report.png"
    with RecordingProxy(page.encode("utf-8")) as proxy:
        common = (*FLAGS, *proxy.proxy_flags, f"--window-size={window[0]},{window[1]}")
        dom = subprocess.run([chromium, *common, f"--user-data-dir={work / 'profile-dom'}", "--dump-dom", proxy.url],
                             capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False)
        shot = subprocess.run([chromium, *common, f"--user-data-dir={work / 'profile-shot'}",
                               f"--screenshot={screenshot}", proxy.url],
                              capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False)
        requests = [r for r in proxy.requests if not any(f" {h}:" in r or f"//{h}/" in r for h in BROWSER_HOSTS)]
    found = re.search(r'<pre id="etfarm-probe">(.*?)</pre>', dom.stdout, re.DOTALL)
    if found is None:
        raise AssertionError(f"the probe did not run: chromium exit {dom.returncode}\n{dom.stderr[-3000:]}")
    console = [line for out in (dom.stderr, shot.stderr) for line in out.splitlines() if ":CONSOLE" in line]
    logged = any(PROBE_MARK in line for line in console)
    probe = json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<")
                       .replace("&gt;", ">"))
    return PageVisit(probe=probe, console=[c for c in console if PROBE_MARK not in c], requests=requests,
                     screenshot=screenshot, probe_logged=logged)


@dataclass(frozen=True)
class FileVisit:
    dom: str  # the document after its scripts ran
    requests: list[str]  # every network request Chromium made (but those to BROWSER_HOSTS): none for an offline site
    screenshot: Path
    console: list[str]


def visit_file(html_file: Path, work: Path, window: tuple[int, int] = (1280, 2000), fragment: str = "") -> FileVisit:
    """Open a page of a static site from the file system, as a person opens it (`fragment`: after the `#`), with every
    network request sent to the recording proxy (which refuses them): its scripts and styles must come from beside it.
    The DOM is dumped once the scripts settled (virtual time), then a screenshot taken."""
    chromium = require_tool("chromium")
    screenshot = work / "page.png"
    url = html_file.as_uri() + (f"#{fragment}" if fragment else "")
    with RecordingProxy(b"") as proxy:
        common = (*FLAGS, *proxy.proxy_flags, f"--window-size={window[0]},{window[1]}", "--virtual-time-budget=10000",
                  "--allow-file-access-from-files")
        dom = subprocess.run([chromium, *common, f"--user-data-dir={work / 'profile-dom'}", "--dump-dom", url],
                             capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False)
        shot = subprocess.run([chromium, *common, f"--user-data-dir={work / 'profile-shot'}",
                               f"--screenshot={screenshot}", url],
                              capture_output=True, text=True, timeout=TIMEOUT_SEC, check=False)
        requests = [r for r in proxy.requests if not any(f" {h}:" in r or f"//{h}/" in r for h in BROWSER_HOSTS)]
    if dom.returncode != 0 or "<html" not in dom.stdout:
        raise AssertionError(f"chromium could not open {html_file}: exit {dom.returncode}\n{dom.stderr[-3000:]}")
    console = [line for out in (dom.stderr, shot.stderr) for line in out.splitlines() if ":CONSOLE" in line]
    return FileVisit(dom.stdout, requests, screenshot, console)

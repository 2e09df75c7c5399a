"""Headless Chromium for the tests that open a report's index.html (`.ci/run` installs Debian's chromium;
where it is absent those tests are skipped)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
needs_chromium = pytest.mark.skipif(not shutil.which(CHROMIUM),
                                    reason=f"{CHROMIUM} is not installed (apt-get install chromium)")

# Added by the tests to a copy of a page (the reports carry no test code): after load, the page's width
# against the window's, each box matching SELECTOR with its content width against its own width, and the text
# a reader sees, as JSON in <body data-probe>.
_PROBE = """<script>window.addEventListener('load',function(){var d=document.documentElement,boxes=[];
document.querySelectorAll(SELECTOR).forEach(function(e){
boxes.push([e.getAttribute('data-profile')||e.className,e.scrollWidth,e.clientWidth]);});
document.body.setAttribute('data-probe',JSON.stringify({page:d.scrollWidth,window:window.innerWidth,
boxes:boxes,text:document.body.innerText}));});</script>"""


def dump_dom(page: Path, width: int, profile_dir: Path) -> str:
    """The DOM of `page` after its load event, rendered in a window `width` px wide."""
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile_dir}", f"--window-size={width},1000", "--dump-dom", page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def body_tag(dom: str) -> str:
    body = re.search(r"<body[^>]*>", dom)
    assert body is not None, dom[:500]
    return body.group(0)


def probe(report: Path, width: int, selector: str, scratch: Path) -> tuple[str, dict[str, Any]]:
    """Render a copy of the report page `report` with the probe at `width` px: its <body> tag and the
    probe's findings (`page`, `window`, `boxes` as [name, scrollWidth, clientWidth], `text`)."""
    page = scratch / "probe.html"
    script = _PROBE.replace("SELECTOR", json.dumps(selector))
    page.write_text(report.read_text().replace("</body>", f"{script}</body>"))
    body = body_tag(dump_dom(page, width, scratch / "chromium"))
    found = re.search(r'data-probe="([^"]*)"', body)
    assert found is not None, body[:300]
    return body, json.loads(html.unescape(found.group(1)))

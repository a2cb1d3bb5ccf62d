"""The HTML report in a real headless Chromium: expected rows, working filters and sorting, no console errors."""

from __future__ import annotations

import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from shardscan.reporters import render
from tests.report_samples import FINDINGS, sample_report

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
)


def load(html: Path, tmp_path: Path, fragment: str = "") -> tuple[str, list[str]]:
    """Open ``html`` from a file:// URL, let its script run, and return the final DOM and console lines."""
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    proc = subprocess.run(
        [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
            f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--dump-dom",
            html.resolve().as_uri() + fragment,
        ],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # Chromium logs every console message (errors, CSP violations, uncaught exceptions) as INFO:CONSOLE.
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    return proc.stdout, console


class Dom(HTMLParser):
    """Element attributes of interest from the dumped DOM, in document order."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.rows: list[dict[str, str | None]] = []
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        a = dict(attrs)
        if tag == "tr" and "finding" in (a.get("class") or ""):
            self.rows.append(a)
        if a.get("id"):
            self.by_id[a["id"]] = a


@pytest.fixture
def sample_html(tmp_path: Path) -> Path:
    path = tmp_path / "audit.html"
    path.write_text(render(sample_report(), "html"), encoding="utf-8")
    return path


def test_html_opens_with_all_rows_and_no_console_errors(sample_html, tmp_path):
    dom_text, console = load(sample_html, tmp_path)
    assert console == []
    dom = Dom(dom_text)
    assert dom.by_id["js-state"]["data-ready"] == "1"  # the script ran to the end
    assert dom.by_id["js-errors"]["data-count"] == "0"
    assert dom.by_id["gate"]["data-exit-code"] == "3"
    assert [(r["data-shard"], int(r["data-row"]), r["data-column"], r["data-verdict"]) for r in dom.rows] == [
        (f.location.shard, f.location.row, f.location.column, str(f.verdict)) for f in FINDINGS
    ]
    assert all("hidden" not in r for r in dom.rows)
    assert all("hidden" in dom.by_id[f"detail-{i}"] for i in range(1, 8))  # details start collapsed
    assert dom.by_id["findings"]["data-shown"] == "7"
    # Both charts are inline SVG with one bar per verdict / per shard-verdict pair.
    assert "chart-verdicts" in dom.by_id and "chart-shards" in dom.by_id
    assert len(re.findall(r'<rect data-verdict="[a-z]+" data-count="1"', dom_text)) == 7
    assert len(re.findall(r'<rect data-shard="[^"]+" data-verdict=', dom_text)) == 7
    # The hostile column path is text in the DOM, never an element.
    assert "meta{&lt;script&gt;alert(1)&lt;/script&gt;" in dom_text


def test_html_filters_by_verdict_from_the_url(sample_html, tmp_path):
    dom_text, console = load(sample_html, tmp_path, "#verdict=expired")
    assert console == []
    dom = Dom(dom_text)
    visible = [r for r in dom.rows if "hidden" not in r]
    assert [(r["data-row"], r["data-status"]) for r in visible] == [("4", "allowlisted")]
    assert dom.by_id["findings"]["data-shown"] == "1"


def test_html_detail_rows_collapse_and_open_from_the_url(sample_html, tmp_path):
    dom_text, console = load(sample_html, tmp_path, "#open=2,4&sort=row&dir=desc")
    assert console == []
    dom = Dom(dom_text)
    assert [i for i in range(1, 8) if "hidden" not in dom.by_id[f"detail-{i}"]] == [2, 4]
    assert dom.by_id["findings"]["data-sort"] == "row:desc"
    rows = [int(r["data-row"]) for r in dom.rows]
    assert rows == sorted(rows, reverse=True) and rows != [f.location.row for f in FINDINGS]
    # Each detail row follows its finding after sorting, and shows the decode chain and allowlist reason.
    order = re.findall(r'<tr class="(?:finding[^"]*|detail-row)"[^>]*? data-index="(\d+)"|<tr class="detail-row" id="detail-(\d+)"',
                       dom_text)
    assert [a or b for a, b in order] == ["7", "7", "4", "4", "3", "3", "2", "2", "6", "6", "1", "1", "5", "5"]
    detail_2 = dom_text[dom_text.index('id="detail-2"'):]
    assert "base64 → json" in detail_2[:2000]
    detail_4 = dom_text[dom_text.index('id="detail-4"'):]
    assert "entry 1, reviewed by dana on 2026-11-30: expired demo session token" in detail_4[:2000]


def test_html_blocking_only_and_text_filter(sample_html, tmp_path):
    dom = Dom(load(sample_html, tmp_path, "#blocking=1")[0])
    assert [r["data-rule"] for r in dom.rows if "hidden" not in r] == ["github-pat", "jwt", "private-key"]
    dom = Dom(load(sample_html, tmp_path, "#q=openai")[0])
    assert [r["data-rule"] for r in dom.rows if "hidden" not in r] == ["openai-api-key"]


def test_html_of_a_clean_report_has_no_errors(tmp_path):
    from dataclasses import replace

    path = tmp_path / "clean.html"
    path.write_text(render(replace(sample_report(), findings=(), issues=(), allowlist=None), "html"), encoding="utf-8")
    dom_text, console = load(path, tmp_path)
    assert console == []
    dom = Dom(dom_text)
    assert dom.by_id["js-state"]["data-ready"] == "1"
    assert dom.by_id["gate"]["data-passed"] == "true"
    assert "no-findings" in dom.by_id and dom.rows == []


def test_html_error_marker_catches_script_errors(sample_html, tmp_path):
    """The no-console-errors checks above can fail: a broken script is seen by both detectors."""
    broken = tmp_path / "broken.html"
    broken.write_text(sample_html.read_text().replace("</main>", "</main><script>undefinedFunction();</script>"))
    dom_text, console = load(broken, tmp_path)
    assert any("undefinedFunction" in line for line in console)
    assert Dom(dom_text).by_id["js-errors"]["data-count"] == "1"

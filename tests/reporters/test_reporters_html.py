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
pytestmark = [
    pytest.mark.skipif(
        CHROMIUM is None, reason="chromium is not installed (Debian: apt-get install chromium; .ci/run installs it)"
    ),
    pytest.mark.slow,  # drives headless Chromium: out of the fast loop (-m "not slow", docs/testing.md)
]


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
    order = re.findall(r'<tr class="(?:finding[^"]*|detail-row)"[^>]*? data-index="(\d+)"|<tr class="detail-row" '
                       r'id="detail-(\d+)"',
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


# ---- how it looks: a screenshot in headless Chromium ------------------------------------------------


def screenshot(html: Path, tmp_path: Path, height: int = 900):
    """The first ``height`` pixels of the page at 1280 columns, as an RGB image."""
    from PIL import Image

    png = tmp_path / f"shot-{len(list(tmp_path.iterdir()))}.png"
    proc = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile-shot'}", f"--window-size=1280,{height}", f"--screenshot={png}",
         html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    return Image.open(png).convert("RGB")


def _rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


def _rows_with(image, color: str, tolerance: int = 4) -> list[int]:
    """The pixel rows holding at least 200 pixels of ``color``: where a banner or box of it is drawn."""
    want = _rgb(color)
    width, height = image.size
    pixels = image.load()
    rows = []
    for y in range(0, height, 2):
        hits = sum(1 for x in range(0, width, 4)
                   if all(abs(a - b) <= tolerance for a, b in zip(pixels[x, y], want, strict=False)))
        if hits * 4 >= 200:
            rows.append(y)
    return rows


def _report_html(tmp_path: Path, name: str, report) -> Path:
    path = tmp_path / name
    path.write_text(render(report, "html"), encoding="utf-8")
    return path


def test_screenshot_shows_the_gate_state_on_top_in_its_own_colour(tmp_path):
    """PASS, FAIL and INCOMPLETE banners each show in their colour at the top of the page, and an
    incomplete scan's problems are above the fold, before the findings."""
    from dataclasses import replace

    from shardscan.reporters.html import FAIL_COLOR, INCOMPLETE_COLOR, PASS_COLOR

    incomplete = sample_report()
    failed = replace(incomplete, issues=())
    passed = replace(incomplete, findings=tuple(f for f in incomplete.findings if not f.blocking), issues=())
    for name, report, color in (("pass", passed, PASS_COLOR), ("fail", failed, FAIL_COLOR),
                                ("incomplete", incomplete, INCOMPLETE_COLOR)):
        image = screenshot(_report_html(tmp_path, f"{name}.html", report), tmp_path)
        rows = _rows_with(image, color)
        assert rows and min(rows) < 150, name  # the banner opens the page
        others = {PASS_COLOR, FAIL_COLOR, INCOMPLETE_COLOR} - {color}
        assert all(not _rows_with(image.crop((0, 0, 1280, 300)), other) for other in others), name
    # The problems box (pale amber) sits under the banner, above the fold.
    shot = screenshot(_report_html(tmp_path, "problems.html", incomplete), tmp_path)
    assert any(150 < y < 600 for y in _rows_with(shot, "#fffbeb", tolerance=2))


def test_blocking_and_harmless_verdicts_differ_in_more_than_hue():
    """Blocking verdicts are solid pills and bars; the others are outlined and pale, and none of them
    uses the PASS banner's green (an expired token once looked like a pass)."""
    from shardscan.reporters.html import PASS_COLOR, VERDICT_COLOR

    text = render(sample_report(), "html")
    for verdict in ("valid", "unverified", "encrypted"):
        assert f'<span class="pill solid" style="background:{VERDICT_COLOR[verdict]}' in text
    for verdict in ("expired", "invalid", "example", "redacted"):
        assert f'<span class="pill outline" style="color:{VERDICT_COLOR[verdict]}' in text
        assert re.search(f'data-verdict="{verdict}" data-count="1" x="90" y="\\d+" width="\\d+" height="18" rx="3" '
                         f'fill="{VERDICT_COLOR[verdict]}" fill-opacity="0.22"', text), verdict
    pass_rgb = _rgb(PASS_COLOR)
    for verdict, color in VERDICT_COLOR.items():
        r, g, b = _rgb(color)
        assert not (g > r + 20 and g > b), f"{verdict} is green like the PASS banner"
        assert sum(abs(a - c) for a, c in zip((r, g, b), pass_rgb, strict=True)) > 100, verdict
    # Severity is a column of its own, sortable like the others.
    assert '<th data-key="severity">severity</th>' in text
    assert '<span class="sev sev-critical">critical</span>' in text

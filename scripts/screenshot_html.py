"""Developer step: render the HTML report and take a screenshot of it in headless Chromium.

    python scripts/screenshot_html.py                     # scan the demo dataset, render, screenshot
    python scripts/screenshot_html.py audit.html out.png  # screenshot an existing report
    python scripts/screenshot_html.py --fragment '#open=all&sort=row&dir=desc'   # a given table state

Look at the PNG after changing the HTML reporter: the tests check the DOM, not the looks.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def chromium() -> str:
    """The Chromium binary (Debian's ``chromium`` package, or a ``chromium-browser``/``google-chrome``)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    sys.exit("chromium not found: install it (Debian: apt-get install chromium)")


def demo_report(folder: Path) -> Path:
    """Scan the demo dataset (fixed clock) and write its HTML report into ``folder``."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from datetime import UTC, datetime

    from shardscan.api import scan
    from shardscan.demo import write_demo_dataset
    from shardscan.engine import ScanOptions
    from shardscan.reporters import render

    write_demo_dataset(folder / "data")
    report = scan([str(folder / "data")], options=ScanOptions(now=datetime(2026, 12, 2, tzinfo=UTC)))
    out = folder / "audit.html"
    out.write_text(render(report, "html"), encoding="utf-8")
    return out


def screenshot(html: Path, png: Path, width: int = 1400, height: int = 1800, fragment: str = "") -> None:
    """Load ``html`` (plus a ``#…`` table state) from a file:// URL in headless Chromium and save a PNG."""
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run(
            [
                chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
                f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--screenshot={png.resolve()}",
                html.resolve().as_uri() + fragment,
            ],
            check=True, capture_output=True, timeout=120,
        )


def main() -> None:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("html", nargs="?", type=Path, help="report to screenshot (default: render the demo)")
    parser.add_argument("png", nargs="?", type=Path, default=Path("audit.png"))
    parser.add_argument("--height", type=int, default=1800)
    parser.add_argument("--fragment", default="", help="URL fragment, e.g. '#verdict=valid&open=all'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = args.html or demo_report(Path(tmp))
        screenshot(html, args.png, height=args.height, fragment=args.fragment)
    print(f"wrote {args.png}")


if __name__ == "__main__":
    main()

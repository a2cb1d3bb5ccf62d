"""The wheel ships the built-in rules inside the package, and an unpacked wheel finds them."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

# Builds the wheel: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
RULE_FILES = sorted(p.name for p in (ROOT / "rules").glob("*.yaml"))


@pytest.mark.packaging
def test_wheel_ships_builtin_rules_and_finds_them(tmp_path):
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path / "dist"), str(ROOT)]
    if importlib.util.find_spec("hatchling"):
        command.insert(4, "--no-build-isolation")  # the test extra installs hatchling: no download needed
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    [wheel] = (tmp_path / "dist").glob("shardscan-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        shipped = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("shardscan/_builtin_rules/"))
        assert shipped == RULE_FILES
        assert any(n.endswith("entry_points.txt") and b"shardscan = shardscan.cli:main" in archive.read(n)
                   for n in names)
        archive.extractall(tmp_path / "site")
    # Run the unpacked wheel from elsewhere, so the checkout's rules/ cannot be what it finds.
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    probe = subprocess.run(
        [sys.executable, "-c", "import shardscan.ruleset as r; print(r.builtin_rules_dir())"],
        capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120,
    )
    assert probe.stdout.strip() == str(tmp_path / "site" / "shardscan" / "_builtin_rules"), probe.stderr
    checked = subprocess.run(
        [sys.executable, "-m", "shardscan.cli", "rules", "check"], capture_output=True, text=True, cwd=tmp_path,
        env=env, timeout=300,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.strip().endswith(", 0 failed")

"""Dependencies between the report, the reporters and the verifiers point one way.

The report (and its JSON document) sits below every reporter; the verifier context and protocol sit
below every check. Checked on the import statements themselves, wherever they are written (a
function-level import that dodges a cycle counts), and in a fresh interpreter.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "shardscan"


def imported_modules(path: Path) -> set[str]:
    """Every ``shardscan`` module ``path`` imports, at any depth of the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {name for name in found if name.startswith("shardscan")}


def test_the_report_imports_no_reporter():
    for name in ("report.py", "pretty_json.py", "policy.py", "model.py"):
        assert not [m for m in imported_modules(PACKAGE / name) if m.startswith("shardscan.reporters")], name


def test_verifier_base_imports_no_check():
    assert imported_modules(PACKAGE / "verifiers" / "base.py") <= {"shardscan.model", "shardscan.model.Candidate",
                                                                    "shardscan.model.Verification"}


def test_no_check_imports_the_verifier_registry():
    for path in (PACKAGE / "verifiers").glob("*.py"):
        if path.name != "__init__.py":
            assert "shardscan.verifiers.VERIFIERS" not in imported_modules(path), path.name


def test_importing_the_report_loads_no_reporter(tmp_path):
    code = "import json, sys, shardscan.report; print(json.dumps(sorted(m for m in sys.modules if 'reporters' in m)))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(PACKAGE.parent)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout) == []

"""Before and after: the same scans with two trees of shardscan taking turns, and whether they find the same.

``python -m benchmarks.compare --base REV PATH... [--rounds 5] [--jobs N]`` checks ``REV`` out into
a temporary git worktree, byte-compiles both trees, and times ``shardscan scan PATH --no-cache``
with each, the two taking turns round after round (the machine is shared; the order flips every
round): wall and CPU seconds of the whole process tree, best and median. The findings of the two
trees' first runs on each path are compared finding by finding.

Each run starts outside the project folder, with its tree on ``PYTHONPATH``, and fails (exit 97)
unless it imported that tree: a ``python -c`` child started in the project folder imports the
working tree's package whatever ``PYTHONPATH`` says, and both sides of a comparison were then the
same code.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from benchmarks.run import PY, ROOT, Run, findings_of, measure

# The child's entry point: the CLI, once it is sure which tree it imported.
_ENTRY = """\
import os, sys
import shardscan
tree = os.path.realpath(os.environ["SHARDSCAN_COMPARE_TREE"])
if not os.path.realpath(shardscan.__file__).startswith(tree + os.sep):
    print(f"imported {shardscan.__file__}, not the tree {tree}", file=sys.stderr)
    sys.exit(97)
from shardscan.cli import main
sys.argv[0] = "shardscan"
main()
"""
WRONG_TREE = 97


@contextlib.contextmanager
def worktree(rev: str, folder: Path) -> Iterator[Path]:
    """``rev`` checked out (detached) into ``folder``, removed again afterwards."""
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(folder), rev], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(folder)], check=False)


def scan_once(tree: Path, path: str, report: Path, cwd: Path, jobs: int | None = None) -> Run:
    """One ``shardscan scan`` of ``path`` with the package of ``tree``, started in ``cwd``."""
    cmd = [PY, "-c", _ENTRY, "scan", path, "--no-cache", "-q", "--no-allowlist", "--now", "2026-12-02",
           "--format", f"json:{report}", *(["--jobs", str(jobs)] if jobs else [])]
    return measure(cmd, {"PYTHONPATH": str(tree), "SHARDSCAN_COMPARE_TREE": str(tree)}, cwd)


def compare(trees: dict[str, Path], paths: list[str], rounds: int, jobs: int | None, work: Path) -> list[str]:
    """The runs of every tree on every path, taking turns; a Markdown table of the results."""
    runs: dict[tuple[str, str], list[Run]] = {}
    findings: dict[tuple[str, str], str] = {}
    names = list(trees)
    for round_ in range(rounds):
        for path in paths:
            for name in names if round_ % 2 == 0 else names[::-1]:
                report = work / f"{name}-{len(runs)}.json"
                run = scan_once(trees[name], path, report, work, jobs)
                if run.returncode == WRONG_TREE:
                    raise SystemExit(run.stderr.strip())
                runs.setdefault((name, path), []).append(run)
                if (name, path) not in findings and report.exists():
                    findings[(name, path)] = json.dumps(findings_of(report), sort_keys=True)
    before, after = names
    lines = [
        f"| path | wall {before} (best / median) | wall {after} | CPU {before} | CPU {after} | exit codes | findings |",
        "| --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for path in paths:
        cells = [path]
        for attribute in ("seconds", "cpu_seconds"):
            for name in names:
                values = [getattr(run, attribute) for run in runs[(name, path)]]
                cells.append(f"{min(values):.2f} / {statistics.median(values):.2f}")
        codes = [sorted({run.returncode for run in runs[(name, path)]}) for name in names]
        cells.append(" / ".join(",".join(map(str, c)) for c in codes))
        same = findings.get((before, path)) == findings.get((after, path)) is not None
        cells.append("identical" if same else "DIFFERENT")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="what to scan (files or folders)")
    parser.add_argument("--base", required=True, help="the revision to compare the working tree with")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=None, help="worker processes (default: all cores)")
    args = parser.parse_args()
    paths = [str(Path(p).resolve()) for p in args.paths]
    with tempfile.TemporaryDirectory(prefix="shardscan-compare-") as tmp:
        work = Path(tmp)
        with worktree(args.base, work / "base") as base:
            trees = {args.base: base, "working tree": ROOT}
            for tree in trees.values():
                compileall.compile_dir(tree / "shardscan", quiet=1)
            print("\n".join(compare(trees, paths, args.rounds, args.jobs, work)))


if __name__ == "__main__":
    sys.exit(main())

"""The few git questions shardscan asks: where the repository root is, and which files changed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from shardscan.errors import ConfigError


def _git(args: list[str], cwd: Path) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        raise ConfigError("git is not installed (needed for this option)") from None
    if proc.returncode != 0:
        first = (proc.stderr.strip().splitlines() or ["failed"])[0]
        raise ConfigError(f"git {args[0]}: {first}")
    return proc.stdout


def repo_root(cwd: Path | None = None) -> Path | None:
    """The top of the git work tree containing ``cwd``, or None outside a repository."""
    try:
        return Path(_git(["rev-parse", "--show-toplevel"], cwd or Path.cwd()).strip())
    except ConfigError:
        return None


def changed_since(rev: str, cwd: Path | None = None) -> set[str]:
    """Real paths of files that differ from ``rev`` in the work tree, plus untracked files.

    Committed, staged and unstaged changes all count (``git diff REV`` against the work tree);
    deleted files are left out (there is nothing to scan). Raises ConfigError outside a repository
    or for an unknown revision.
    """
    where = cwd or Path.cwd()
    root = repo_root(where)
    if root is None:
        raise ConfigError("--changed-since: not inside a git repository")
    try:
        _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], root)
    except ConfigError:
        raise ConfigError(f"--changed-since: unknown revision {rev!r}") from None
    diff = _git(["diff", "--name-only", "-z", "--no-renames", "--diff-filter=d", rev, "--"], root)
    untracked = _git(["ls-files", "-z", "--others", "--exclude-standard"], root)
    names = [n for n in (diff + untracked).split("\0") if n]
    return {os.path.realpath(root / name) for name in names}

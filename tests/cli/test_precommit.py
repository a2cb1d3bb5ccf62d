"""The pre-commit hook, run by pre-commit itself in a temporary git repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from shardscan.reader.sources import SHARD_SUFFIXES
from shardscan.redaction import fingerprint
from shardscan.synth import expand
from tests.conftest import trace_row, write_trace_shard

# Runs git and pre-commit in a repository: out of the fast loop (-m "not slow", docs/testing.md).
pytestmark = pytest.mark.slow

PROJECT = Path(__file__).resolve().parents[2]
MANIFEST = PROJECT / ".pre-commit-hooks.yaml"
LFS_POINTER = "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize 73400320\n".format("7e" * 32)


def _hook_definition() -> dict:
    [hook] = yaml.safe_load(MANIFEST.read_text())
    return hook


def test_manifest_is_valid_for_pre_commit():
    proc = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", str(MANIFEST)], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    hook = _hook_definition()
    assert (hook["id"], hook["entry"], hook["language"], hook["pass_filenames"]) == (
        "shardscan", "shardscan hook", "python", True,
    )


def test_manifest_matches_every_input_format_and_nothing_else():
    files = re.compile(_hook_definition()["files"])
    for suffix in SHARD_SUFFIXES:
        assert files.search(f"data/train-00000-of-00002{suffix}"), suffix
        assert files.search(f"data/TRAIN{suffix.upper()}"), suffix
    for other in ("README.md", "data/train.parquet.md5", "notes.txt", "parquet"):
        assert not files.search(other), other


class Repo:
    """A temporary git repository with shardscan installed as a pre-commit hook."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "SHARDSCAN_"))}
        env.update(
            PRE_COMMIT_HOME=str(home),
            PYTHONPATH=str(PROJECT),
            GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid",
            GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.invalid",
            GIT_CONFIG_NOSYSTEM="1", HOME=str(home),
        )
        self.env = env

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(list(args), cwd=self.root, env=self.env, capture_output=True, text=True)

    def git(self, *args: str) -> subprocess.CompletedProcess:
        return self.run("git", *args)

    def commit(self, *paths: str, message: str = "add shards") -> subprocess.CompletedProcess:
        assert self.git("add", *paths).returncode == 0
        return self.git("commit", "-m", message)


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """Our .pre-commit-hooks.yaml definition as a local hook run with this interpreter.

    Building the hook's own environment from PyPI (``repo: <this project>``) is what users get;
    it needs the network and about a minute, so that path is test_try_repo_builds_the_hook below.
    """
    root = tmp_path / "dataset"
    root.mkdir()
    r = Repo(root, tmp_path / "home")
    assert r.git("init", "-q", "-b", "main").returncode == 0
    hook = _hook_definition()
    hook.update(language="system", entry=f"{sys.executable} -m shardscan.cli hook")
    config = {"repos": [{"repo": "local", "hooks": [hook]}]}
    (root / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (root / "README.md").write_text("a dataset\n")
    installed = r.run(sys.executable, "-m", "pre_commit", "install")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    first = r.commit(".pre-commit-config.yaml", "README.md", message="set up")
    assert first.returncode == 0, first.stdout + first.stderr
    return r


def test_commit_is_refused_or_accepted_by_the_hook(repo: Repo):
    token = expand("{{github:ghp_}}", seed="precommit")
    write_trace_shard(repo.root / "data" / "clean.parquet", [trace_row([("user", "hello")])])
    accepted = repo.commit("data/clean.parquet")
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert re.search(r"shardscan \(credentials in dataset shards\)\.+Passed", accepted.stdout + accepted.stderr)

    write_trace_shard(
        repo.root / "data" / "leak.parquet",
        [trace_row([("user", "hi")]), trace_row([("user", "push it"), ("tool", f"export GITHUB_TOKEN={token}")])],
    )
    refused = repo.commit("data/leak.parquet")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert re.search(r"shardscan \(credentials in dataset shards\)\.+Failed", out)
    assert "- exit code: 1" in out
    assert "BLOCKING    data/leak.parquet:1 conversations[1].content (tool) github-pat" in out
    assert "gate: FAIL (exit 1): 1 blocking finding(s)" in out
    assert token not in out
    assert repo.git("log", "--format=%s").stdout.split("\n")[0] == "add shards"  # only the clean commit
    assert "data/leak.parquet" not in repo.git("ls-tree", "-r", "--name-only", "HEAD").stdout

    # the cache lives at the repository root and never shows up as something to commit
    assert (repo.root / ".shardscan-cache" / "v2").is_dir()
    assert ".shardscan-cache" not in repo.git("status", "--porcelain", "--untracked-files=all").stdout

    # a reviewed allowlist.yaml at the repository root accepts the finding: the commit goes through,
    # and the shard is not read again (the allowlist is applied after the cache)
    (repo.root / "allowlist.yaml").write_text(
        "version: 1\nentries:\n"
        f"  - fingerprint: {fingerprint(token, 'github')}\n"
        "    reason: test token of a deleted sandbox account\n"
        "    reviewer: release review\n"
        "    reviewed: 2026-11-30\n"
    )
    accepted = repo.commit("data/leak.parquet", "allowlist.yaml", message="reviewed leak")
    out = accepted.stdout + accepted.stderr
    assert accepted.returncode == 0, out
    verbose = repo.run(sys.executable, "-m", "pre_commit", "run", "shardscan", "--files", "data/leak.parquet",
                       "--verbose")
    assert verbose.returncode == 0
    assert "shardscan: 1 shard(s) (1 from cache), 2 rows" in verbose.stdout
    assert "  allowlisted data/leak.parquet:1 conversations[1].content (tool) github-pat" in verbose.stdout


def test_lfs_pointer_is_refused_with_an_explanation(repo: Repo):
    (repo.root / "data").mkdir()
    (repo.root / "data" / "train-00000-of-00001.parquet").write_text(LFS_POINTER)
    refused = repo.commit("data/train-00000-of-00001.parquet")
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0
    assert "- exit code: 3" in out
    assert "ERROR       data/train-00000-of-00001.parquet: [unreadable] this is a Git LFS pointer file" in out
    assert "git lfs pull" in out
    assert "Passed" not in out


def test_second_run_reads_nothing_and_prints_the_same_report(repo: Repo):
    token = expand("{{github:ghp_}}", seed="rerun")
    for i in range(3):
        rows = [trace_row([("user", f"row {i}")])]
        if i == 1:
            rows.append(trace_row([("tool", f"token: {token}")]))
        write_trace_shard(repo.root / f"train-{i}.parquet", rows)
    assert repo.git("add", ".").returncode == 0

    def run() -> list[str]:
        proc = repo.run(sys.executable, "-m", "pre_commit", "run", "shardscan", "--all-files", "--verbose")
        assert proc.returncode == 1, proc.stdout + proc.stderr
        return [line for line in proc.stdout.splitlines() if line.startswith(("shardscan:", "  ", "gate:"))]

    first, second = run(), run()
    assert first[0] == "shardscan: 3 shard(s), 4 rows, 56 string cells; findings: 1, blocking: 1, errors: 0"
    assert second[0] == ("shardscan: 3 shard(s) (3 from cache), 4 rows, 56 string cells; "
                         "findings: 1, blocking: 1, errors: 0")
    assert second[1:] == first[1:]
    assert any(line.startswith("  BLOCKING    train-1.parquet:1 conversations[0].content (tool)") for line in first)

    # one shard changes: exactly that one is read again
    write_trace_shard(repo.root / "train-2.parquet", [trace_row([("user", "edited")]), trace_row()])
    repo.git("add", ".")
    assert run()[0].startswith("shardscan: 3 shard(s) (2 from cache), 5 rows")


@pytest.mark.skipif(
    not os.environ.get("SHARDSCAN_NETWORK_TESTS"),
    reason="builds the hook environment from PyPI (network, about a minute); set SHARDSCAN_NETWORK_TESTS=1",
)
def test_try_repo_builds_the_hook_from_this_repository(tmp_path: Path):
    """What users get: pre-commit installs shardscan from this repository's .pre-commit-hooks.yaml."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "dataset"
    root.mkdir()
    r = Repo(root, tmp_path / "home")
    r.git("init", "-q")
    token = expand("{{github:ghp_}}", seed="try-repo")
    write_trace_shard(root / "clean.parquet", [trace_row([("user", "hello")])])
    write_trace_shard(root / "leak.parquet", [trace_row([("tool", f"GITHUB_TOKEN={token}")])])
    r.git("add", ".")
    clean = r.run(sys.executable, "-m", "pre_commit", "try-repo", str(PROJECT), "shardscan", "--files", "clean.parquet")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    leak = r.run(sys.executable, "-m", "pre_commit", "try-repo", str(PROJECT), "shardscan", "--files", "leak.parquet")
    assert leak.returncode == 1
    assert "BLOCKING    leak.parquet:0 conversations[0].content (tool) github-pat" in leak.stdout
    assert token not in leak.stdout + leak.stderr

"""The options commands share, declared once, and the one function that checks them and builds a scan's setup."""

# No ``from __future__ import annotations``: Typer evaluates these aliases on every run (see shardscan.cli).
import os
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Annotated

import typer

from shardscan.allowlist import DEFAULT_ALLOWLIST, Allowlist, load_allowlist
from shardscan.atomic import probe_folder
from shardscan.decoders import DecodeLimits

# ScanOptions and Scanner are imported here only: the rest of the CLI takes them from this module.
from shardscan.engine import (
    DEFAULT_MAX_FINDINGS_PER_CELL,
    DEFAULT_MAX_FINDINGS_PER_SHARD,
    DEFAULT_MEMORY_BUDGET,
    Scanner,
    ScanOptions,
)
from shardscan.errors import ConfigError, OutputError
from shardscan.gitutil import changed_since
from shardscan.known_secrets import load_known_secrets
from shardscan.local_state import default_cache_dir
from shardscan.policy import Policy
from shardscan.reader import ShardRef
from shardscan.reporters import FORMATS
from shardscan.ruleset import Ruleset, load_ruleset
from shardscan.sizes import format_size, parse_size

# ---- declarations ---------------------------------------------------------------------------------

RulesOpt = Annotated[list[Path], typer.Option("--rules", help="Extra rule file or folder (repeatable).")]
DisableOpt = Annotated[list[str], typer.Option("--disable", help="Disable a rule id or kind (repeatable).")]
FormatOpt = Annotated[
    list[str],
    typer.Option(
        "--format", "-f",
        help=f"Output format, optionally with a path: FORMAT[:PATH] (repeatable). Formats: {', '.join(FORMATS)}.",
    ),
]
OutputOpt = Annotated[
    Path | None, typer.Option("--output", "-o", help="Where to write a --format given without a path.")
]
MkdirOpt = Annotated[
    bool,
    typer.Option("--mkdir", help="Create missing folders of output paths (otherwise a missing folder is an error)."),
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Every finding blocks unless allowlisted.")]
NowOpt = Annotated[str | None, typer.Option("--now", help="Clock for expiry checks (ISO date or datetime, UTC).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Terminal output: only the gate decision line.")]
SkipOpt = Annotated[
    bool, typer.Option("--skip-unreadable", help="Unreadable shards are reported but do not make the exit code 3.")
]
TimeoutOpt = Annotated[float, typer.Option("--regex-timeout", help="Seconds a rule may spend on one cell.")]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs", "-j",
        help="Worker processes (one core each) over (shard, row group) work items (default: all cores). "
        "Output is identical for any value.",
    ),
]
StatsOpt = Annotated[
    bool,
    typer.Option(
        "--stats", help="Print where the time went (read, prefilter, gate, decode, match, verify) to standard error."
    ),
]
DepthOpt = Annotated[int, typer.Option("--max-decode-depth", help="Nested decoding depth (0 disables decoding).")]
DecodeBytesOpt = Annotated[
    int,
    typer.Option(
        "--max-decode-bytes", help="Characters of decoded text allowed per cell (beyond: a limit hit, exit 3)."
    ),
]
MemoryOpt = Annotated[
    str,
    typer.Option(
        "--memory-budget", metavar="SIZE",
        help="Memory for the scanned data, shared by all workers (e.g. 512MB, 2GB; units are powers of 1024). "
        "Row groups are read a slice of rows at a time to stay within it; a row group whose single rows "
        "cannot fit is not read and is reported as a limit hit (exit 3).",
    ),
]
DEFAULT_MEMORY = format_size(DEFAULT_MEMORY_BUDGET)
DEFAULT_DECODE = DecodeLimits()
CellFindingsOpt = Annotated[
    int,
    typer.Option("--max-findings-per-cell", help="Findings listed one by one per cell; beyond, findings of one rule "
                  "and verdict are aggregated into one with a count (exit 3 unless --allow-truncated-findings)."),
]
ShardFindingsOpt = Annotated[
    int,
    typer.Option("--max-findings-per-shard", help="Findings listed one by one per shard (also bounded by "
                  "--memory-budget); beyond, aggregated per rule, verdict and column (exit 3 unless "
                  "--allow-truncated-findings)."),
]
AllowTruncatedOpt = Annotated[
    bool,
    typer.Option("--allow-truncated-findings", help="Findings aggregated over a cap do not make the exit code 3 "
                 "(blocking ones still block)."),
]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Trust no local state: read every shard, compile the patterns in memory; "
        "neither use nor update the cache.",
    ),
]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", help="Result cache folder (default: $SHARDSCAN_CACHE_DIR or the user cache dir)."),
]
AllowlistOpt = Annotated[
    Path | None,
    typer.Option(
        "--allowlist", help="Reviewed allowlist file (default: allowlist.yaml in the current folder, if any)."
    ),
]
NoAllowlistOpt = Annotated[bool, typer.Option("--no-allowlist", help="Ignore any allowlist: every finding is new.")]
FailOnStaleOpt = Annotated[
    bool, typer.Option("--fail-on-stale", help="Stale or expired allowlist entries fail the gate (exit 1).")
]
KnownSecretsOpt = Annotated[
    list[Path],
    typer.Option(
        "--known-secrets", metavar="FILE",
        help="File of your own secrets to prove absent (repeatable): one entry a line, env:NAME, file:PATH or "
        "sha256:HEX. Every occurrence, in any encoding, blocks; reports state per entry the cells searched and "
        "the occurrences found (never the value).",
    ),
]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Where work items run: local (this process) or ray (Ray tasks; needs the shardscan[ray] extra).",
    ),
]
RayAddressOpt = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        help="Ray cluster to use with --engine ray (auto, ray://HOST:10001, HOST:6379); default: a local Ray.",
    ),
]
ExcludeOpt = Annotated[
    list[str],
    typer.Option("--exclude", metavar="GLOB", help="Leave out files matching GLOB (gitignore-style; repeatable). "
                 "Reported as excluded; .shardscanignore at a scanned folder's root adds globs too."),
]


# ---- the one builder ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScanFlags:
    """The scan flags of one command as given; a command that lacks a flag keeps scan's default for it."""

    now: str | None = None
    regex_timeout: float = 2.0
    max_decode_depth: int = DEFAULT_DECODE.max_depth
    max_decode_bytes: int = DEFAULT_DECODE.max_bytes
    memory_budget: str = DEFAULT_MEMORY
    max_findings_per_cell: int = DEFAULT_MAX_FINDINGS_PER_CELL
    max_findings_per_shard: int = DEFAULT_MAX_FINDINGS_PER_SHARD
    known_secrets: tuple[Path, ...] = ()
    show_secrets: bool = False
    jobs: int | None = None
    strict: bool = False
    skip_unreadable: bool = False
    fail_on_stale: bool = False
    allow_truncated_findings: bool = False


# The defaults the commands' signatures show (one source: a command's default is scan's).
DEFAULT_FLAGS = ScanFlags()


@dataclass(frozen=True, slots=True)
class ScanSetup:
    """What a command scans with, every flag checked: options, gate policy and worker processes
    (None: all cores)."""

    options: ScanOptions
    policy: Policy
    jobs: int | None


def scan_setup(flags: ScanFlags) -> ScanSetup:
    """Check ``flags`` (ConfigError naming the flag) and build the scan's options and policy.

    Every command that scans (scan, gate, hook, demo, redact) builds its setup here, so a flag is
    checked the same way wherever it appears.
    """
    if flags.max_decode_depth < 0:
        raise ConfigError(f"--max-decode-depth must be 0 (no decoding) or more, not {flags.max_decode_depth}")
    if flags.max_decode_bytes < 0:
        raise ConfigError(f"--max-decode-bytes must be 0 or more, not {flags.max_decode_bytes}")
    if flags.regex_timeout <= 0:
        raise ConfigError(f"--regex-timeout must be a number of seconds above 0, not {flags.regex_timeout:g}")
    if flags.jobs is not None and flags.jobs < 1:
        raise ConfigError("--jobs must be >= 1")
    now = parse_now(flags.now)
    budget = memory_budget(flags.memory_budget)
    if flags.max_findings_per_cell < 1 or flags.max_findings_per_shard < 1:
        raise ConfigError("--max-findings-per-cell and --max-findings-per-shard must be >= 1")
    options = ScanOptions(
        now=now,
        regex_timeout=flags.regex_timeout,
        decode=DecodeLimits(max_depth=flags.max_decode_depth, max_bytes=flags.max_decode_bytes),
        reveal_secrets=flags.show_secrets,
        memory_budget=budget,
        max_findings_per_cell=flags.max_findings_per_cell,
        max_findings_per_shard=flags.max_findings_per_shard,
        # A file or entry that cannot be read names the file, line and entry (never a value).
        known_secrets=load_known_secrets(flags.known_secrets),
    )
    policy = Policy(strict=flags.strict, skip_unreadable=flags.skip_unreadable, fail_on_stale=flags.fail_on_stale,
                    allow_truncated_findings=flags.allow_truncated_findings)
    return ScanSetup(options, policy, flags.jobs)


def parse_now(value: str | None) -> datetime:
    """``--now``: an ISO date or datetime (UTC unless it says otherwise); the current time when not given."""
    if not value:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(value), datetime.min.time())
        except ValueError:
            raise ConfigError(f"--now: not an ISO date or datetime: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def parse_date(value: str | None, option: str, not_before: date | None = None) -> date | None:
    """A YYYY-MM-DD ``option`` (None when not given), not before ``not_before`` when that is given."""
    if value is None:
        return None
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        raise ConfigError(f"{option}: not a date (YYYY-MM-DD): {value!r}") from None
    if not_before is not None and parsed < not_before:
        raise ConfigError(f"{option} {parsed} is before the review date {not_before}: the entry would never apply")
    return parsed


def memory_budget(value: str) -> int:
    """``--memory-budget`` in bytes, checked."""
    try:
        budget = parse_size(value)
    except ValueError as err:
        raise ConfigError(f"--memory-budget: {err}") from None
    if budget < 1024**2:
        raise ConfigError("--memory-budget must be at least 1MB")
    return budget


# ---- what the options name --------------------------------------------------------------------------


def load_rules(rules: list[Path], disable: list[str]) -> Ruleset:
    """The built-in rules plus ``--rules``, less ``--disable``."""
    return load_ruleset(rules, disable=disable)


def secret_check(ruleset: Ruleset) -> Callable[[str], bool]:
    """A check that a text holds something the active rules detect (keeps secrets out of allowlists)."""
    scanner = Scanner(ruleset, text_only=True)
    return lambda text: bool(scanner.scan_text(text)[0])


def load_allowlist_option(
    path: Path | None, no_allowlist: bool, ruleset: Ruleset, default: Path | None = None
) -> Allowlist | None:
    """The allowlist a scan reconciles against: ``--allowlist``, else ``default`` when it exists
    (allowlist.yaml here when not given), else none."""
    if no_allowlist:
        if path is not None:
            raise ConfigError("--allowlist and --no-allowlist exclude each other")
        return None
    if path is None:
        candidate = default if default is not None else Path(DEFAULT_ALLOWLIST)
        if not candidate.is_file():
            return None
        path = candidate
    return load_allowlist(path, secret_check=secret_check(ruleset))


def cache_location(no_cache: bool, cache_dir: Path | None, default: Path | None = None) -> Path | None:
    """Where the result cache lives: --cache-dir, else $SHARDSCAN_CACHE_DIR, else ``default``, else the
    user cache dir; None with --no-cache."""
    if no_cache:
        return None
    if cache_dir is not None:
        # A cache folder the user named must be usable: found out now, not as a silently slow run.
        # (The default location stays best effort: a cache that cannot be written costs time only.)
        where = f"--cache-dir {cache_dir}"
        if cache_dir.exists() and not cache_dir.is_dir():
            raise OutputError(where, "it is not a folder")
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(where, os.strerror(exc.errno) if exc.errno else type(exc).__name__) from None
        try:
            probe_folder(cache_dir)
        except OutputError as err:
            raise OutputError(f"--cache-dir {err.target}", err.reason) from None
        return cache_dir
    if default is not None and not os.environ.get("SHARDSCAN_CACHE_DIR"):
        return default
    return default_cache_dir()


def changed_filter(rev: str | None) -> Callable[[ShardRef], bool] | None:
    """A shard filter keeping files changed since ``rev`` (None: keep everything)."""
    if rev is None:
        return None
    changed = changed_since(rev)
    return lambda shard: os.path.realpath(shard.path) in changed

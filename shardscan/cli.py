"""Command line: parse options, call the library, render reports, map outcomes to exit codes."""

# No ``from __future__ import annotations`` here: Typer reads every command's parameter types on
# every run, and string annotations would make it compile and evaluate each of them (about 15 ms).
import gc
import os

# pyarrow allocates through mimalloc, which hands freed pages back to the OS after 10 ms; each row
# group then faults its buffers in again, which made reading a row group in a worker about 1.7x
# slower than reading it alone. A command ends when its scan ends and its memory is bounded by
# the slices it reads (``--memory-budget``), so it keeps freed pages for reuse instead. Set
# before pyarrow loads; a value the user exported wins. (The library leaves its host's
# allocator alone.)
os.environ.setdefault("MIMALLOC_PURGE_DELAY", "-1")

# The imports below create tens of thousands of objects that live as long as the process: the
# collector's passes over them while they load cost 20-25 ms of every run and free nothing.
_collecting = gc.isenabled()
gc.disable()
try:
    import logging
    import shutil
    import sys
    import tempfile
    import textwrap
    from collections import Counter
    from datetime import UTC, date, datetime
    from pathlib import Path
    from typing import Annotated

    import typer

    from shardscan import __version__
    from shardscan.atomic import MISSING_FOLDER, CheckedStream, write_stream
    from shardscan.cache import CACHE_DIR_NAME
    from shardscan.decoders import DecodeLimits
    from shardscan.engine import (
        DEFAULT_MAX_FINDINGS_PER_CELL,
        DEFAULT_MAX_FINDINGS_PER_SHARD,
        DEFAULT_MEMORY_BUDGET,
        ScanOptions,
    )
    from shardscan.errors import ConfigError, OutputError
    from shardscan.known_secrets import load_known_secrets
    from shardscan.policy import EXIT_USAGE, Policy
    from shardscan.report import Report
    from shardscan.reporters import EXTENSIONS, FORMATS, RenderOptions, render
    from shardscan.reporters import write as write_report
    from shardscan.reporters._common import decision_line
    from shardscan.ruleset import Ruleset, load_ruleset
    from shardscan.sizes import format_size, parse_size
finally:
    if _collecting:
        gc.freeze()
        gc.enable()

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Scan Parquet dataset shards for credentials before you publish them.",
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"shardscan {__version__}")
        raise typer.Exit(0)


@app.callback()
def _global_options(
    verbose: Annotated[
        int,
        typer.Option(
            "--verbose", "-v", count=True, show_default=False,
            help="Log progress to stderr: -v each shard, -vv each finding too (repeat the flag; it takes no value).",
        ),
    ] = 0,
    _version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the shardscan version and exit."),
    ] = False,
) -> None:
    """Scan Parquet dataset shards for credentials before you publish them."""
    import logging

    if not verbose:
        # Problems are in the report; without -v, Python's last-resort handler would print each
        # unreadable shard a second time on stderr.
        library = logging.getLogger("shardscan")
        if not any(isinstance(h, logging.NullHandler) for h in library.handlers):
            library.addHandler(logging.NullHandler())
    else:
        logging.basicConfig(
            level=logging.DEBUG if verbose > 1 else logging.INFO,
            format="shardscan: %(levelname)s: %(message)s",
            stream=sys.stderr,
        )


rules_app = typer.Typer(no_args_is_help=True, help="List and check detection rules.")
app.add_typer(rules_app, name="rules")
allowlist_app = typer.Typer(no_args_is_help=True, help="Add reviewed findings to the allowlist and check it.")
app.add_typer(allowlist_app, name="allowlist")


# ---- shared option types ----------------------------------------------------------------------

RulesOpt = Annotated[list[Path], typer.Option("--rules", help="Extra rule file or folder (repeatable).")]
DisableOpt = Annotated[list[str], typer.Option("--disable", help="Disable a rule id or kind (repeatable).")]
FormatOpt = Annotated[
    list[str],
    typer.Option("--format", "-f", help=f"Output format, optionally with a path: FORMAT[:PATH] (repeatable). Formats: {', '.join(FORMATS)}."),
]
OutputOpt = Annotated[Path | None, typer.Option("--output", "-o", help="Where to write a --format given without a path.")]
MkdirOpt = Annotated[bool, typer.Option("--mkdir", help="Create missing folders of output paths (otherwise a missing folder is an error).")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Every finding blocks unless allowlisted.")]
NowOpt = Annotated[str | None, typer.Option("--now", help="Clock for expiry checks (ISO date or datetime, UTC).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Terminal output: only the gate decision line.")]
SkipOpt = Annotated[bool, typer.Option("--skip-unreadable", help="Unreadable shards are reported but do not make the exit code 3.")]
TimeoutOpt = Annotated[float, typer.Option("--regex-timeout", help="Seconds a rule may spend on one cell.")]
JobsOpt = Annotated[
    int | None,
    typer.Option("--jobs", "-j", help="Worker processes (one core each) over (shard, row group) work items (default: all cores). Output is identical for any value."),
]
StatsOpt = Annotated[bool, typer.Option("--stats", help="Print where the time went (read, prefilter, gate, decode, match, verify) to standard error.")]
DepthOpt = Annotated[int, typer.Option("--max-decode-depth", help="Nested decoding depth (0 disables decoding).")]
DecodeBytesOpt = Annotated[
    int, typer.Option("--max-decode-bytes", help="Characters of decoded text allowed per cell (beyond: a limit hit, exit 3).")
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
CellFindingsOpt = Annotated[
    int,
    typer.Option("--max-findings-per-cell", help="Findings listed one by one per cell; beyond, findings of one rule "
                  "and verdict are aggregated into one with a count (exit 3 unless --allow-truncated-findings)."),
]
ShardFindingsOpt = Annotated[
    int,
    typer.Option("--max-findings-per-shard", help="Findings listed one by one per shard (also bounded by "
                  "--memory-budget); beyond, aggregated per rule, verdict and column (exit 3 unless --allow-truncated-findings)."),
]
AllowTruncatedOpt = Annotated[
    bool,
    typer.Option("--allow-truncated-findings", help="Findings aggregated over a cap do not make the exit code 3 "
                 "(blocking ones still block)."),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Trust no local state: read every shard, compile the patterns in memory; neither use nor update the cache.")]
CacheDirOpt = Annotated[
    Path | None,
    typer.Option("--cache-dir", help="Result cache folder (default: $SHARDSCAN_CACHE_DIR or the user cache dir)."),
]
AllowlistOpt = Annotated[
    Path | None,
    typer.Option("--allowlist", help="Reviewed allowlist file (default: allowlist.yaml in the current folder, if any)."),
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
EngineOpt = Annotated[str, typer.Option("--engine", help="Where work items run: local (this process) or ray (Ray tasks; needs the shardscan[ray] extra).")]
RayAddressOpt = Annotated[
    str | None,
    typer.Option("--ray-address", help="Ray cluster to use with --engine ray (auto, ray://HOST:10001, HOST:6379); default: a local Ray."),
]

ExcludeOpt = Annotated[
    list[str],
    typer.Option("--exclude", metavar="GLOB", help="Leave out files matching GLOB (gitignore-style; repeatable). "
                 "Reported as excluded; .shardscanignore at a scanned folder's root adds globs too."),
]


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"shardscan: error: {message}", err=True)
    return typer.Exit(code)


def _output_failure(err: OutputError) -> str:
    """The message for an output that could not be written, by a command that has ``--mkdir``."""
    return f"{err} (--mkdir creates it)" if err.reason == MISSING_FOLDER else str(err)


def _parse_now(value: str | None) -> datetime:
    if not value:
        return datetime.now(UTC)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(value), datetime.min.time())
        except ValueError:
            raise _fail(f"--now: not an ISO date or datetime: {value!r}") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _memory_budget(value: str) -> int:
    """--memory-budget in bytes, checked."""
    try:
        budget = parse_size(value)
    except ValueError as err:
        raise _fail(f"--memory-budget: {err}") from None
    if budget < 1024**2:
        raise _fail("--memory-budget must be at least 1MB")
    return budget


def _finding_caps(per_cell: int, per_shard: int) -> dict[str, int]:
    """--max-findings-per-cell and --max-findings-per-shard, checked, as ScanOptions fields."""
    if per_cell < 1 or per_shard < 1:
        raise _fail("--max-findings-per-cell and --max-findings-per-shard must be >= 1")
    return {"max_findings_per_cell": per_cell, "max_findings_per_shard": per_shard}


def _load_rules(rules: list[Path], disable: list[str]) -> Ruleset:
    try:
        return load_ruleset(rules, disable=disable)
    except ConfigError as err:
        raise _fail(str(err)) from None


def _secret_check(ruleset: Ruleset):
    """A check that a text holds something the active rules detect (used to keep secrets out of allowlists)."""
    from shardscan.engine import Scanner

    scanner = Scanner(ruleset, text_only=True)
    return lambda text: bool(scanner.scan_text(text)[0])


def _load_allowlist(path: Path | None, no_allowlist: bool, ruleset: Ruleset, default: Path | None = None):
    """The allowlist a scan reconciles against: ``--allowlist``, else ``default`` when it exists, else none."""
    from shardscan.allowlist import DEFAULT_ALLOWLIST, load_allowlist

    if no_allowlist:
        if path is not None:
            raise _fail("--allowlist and --no-allowlist exclude each other")
        return None
    if path is None:
        candidate = default if default is not None else Path(DEFAULT_ALLOWLIST)
        if not candidate.is_file():
            return None
        path = candidate
    try:
        return load_allowlist(path, secret_check=_secret_check(ruleset))
    except ConfigError as err:
        raise _fail(str(err)) from None


def _known_secrets(paths: list[Path]):
    """The entries of ``--known-secrets`` files; a file or entry that cannot be read is a usage error
    naming the file, line and entry (never a value)."""
    try:
        return load_known_secrets(paths)
    except ConfigError as err:
        raise _fail(str(err)) from None


def _outputs(formats: list[str], output: Path | None) -> list[tuple[str, Path | None]]:
    """Parse ``--format`` values into (format, path or None for stdout)."""
    parsed: list[tuple[str, Path | None]] = []
    for value in formats or ["terminal"]:
        name, _, path = value.partition(":")
        if name not in FORMATS:
            raise _fail(f"--format: unknown format {name!r} (known: {', '.join(FORMATS)})")
        parsed.append((name, Path(path) if path else None))
    without_path = [i for i, (_, p) in enumerate(parsed) if p is None]
    if output is not None:
        if len(without_path) != 1:
            raise _fail("--output needs exactly one --format without its own path")
        parsed[without_path[0]] = (parsed[without_path[0]][0], output)
    elif len(without_path) > 1:
        raise _fail("only one --format may go to standard output; give the others a path (FORMAT:PATH)")
    return parsed


def _use_color() -> bool:
    return sys.stdout.isatty() and "NO_COLOR" not in os.environ


def _output_width(to_terminal: bool) -> int:
    """Columns to lay the report out in: the terminal's; for files and pipes (CI logs) $COLUMNS when
    set, else 160 (wide lines rather than folded cells)."""
    if to_terminal:
        return shutil.get_terminal_size().columns
    try:
        return max(int(os.environ.get("COLUMNS", "")), 20)
    except ValueError:
        return 160


def _emit(report: Report, outputs: list[tuple[str, Path | None]], quiet: bool, mkdir: bool = False) -> None:
    """Write every output; one that cannot be written (a file or standard output) exits 2 naming it."""
    try:
        for fmt, path in outputs:
            to_terminal = path is None and sys.stdout.isatty()
            color = to_terminal and _use_color() and fmt == "terminal"
            options = RenderOptions(color=color, quiet=quiet, width=_output_width(to_terminal), wrap=to_terminal)
            if path is None:
                write_stream(sys.stdout, render(report, fmt, options))
            else:
                write_report(report, fmt, path, options, mkdir=mkdir)
        if all(path is not None for _, path in outputs):
            # Files were written; still tell a person (or CI log) what the gate decided (plain text:
            # the terminal reporter would import rich for one line).
            write_stream(sys.stdout, decision_line(report) + "\n")
    except OutputError as err:
        raise _fail(_output_failure(err)) from None
    allow = report.allowlist
    if allow and (allow.stale or allow.expired) and not report.policy.fail_on_stale:
        # A warning by default: say so where CI logs show it, whatever the formats were.
        entries = ", ".join(f"entry #{e.entry} ({e.state}, line {e.line})" for e in allow.stale + allow.expired)
        typer.echo(f"shardscan: warning: {allow.path}: allowlist entries that accepted nothing: {entries}; "
                   "--fail-on-stale makes them fail the gate", err=True)


def _cache_location(no_cache: bool, cache_dir: Path | None, default: Path | None = None) -> Path | None:
    """Where the result cache lives: --cache-dir, else $SHARDSCAN_CACHE_DIR, else ``default``, else the
    user cache dir; None with --no-cache."""
    if no_cache:
        return None
    if cache_dir is not None:
        # A cache folder the user named must be usable: found out now, not as a silently slow run.
        # (The default location stays best effort: a cache that cannot be written costs time only.)
        from shardscan.atomic import probe_folder

        try:
            if cache_dir.exists() and not cache_dir.is_dir():
                raise OutputError(str(cache_dir), "it is not a folder")
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(str(cache_dir), os.strerror(exc.errno) if exc.errno else type(exc).__name__) from None
            probe_folder(cache_dir)
        except OutputError as err:
            raise _fail(f"--cache-dir {err}") from None
        return cache_dir
    from shardscan.local_state import default_cache_dir

    if default is not None and not os.environ.get("SHARDSCAN_CACHE_DIR"):
        return default
    return default_cache_dir()


def _changed_filter(rev: str | None):
    """A shard filter keeping files changed since ``rev`` (None: keep everything)."""
    if rev is None:
        return None
    from shardscan.gitutil import changed_since

    try:
        changed = changed_since(rev)
    except ConfigError as err:
        raise _fail(str(err)) from None
    return lambda shard: os.path.realpath(shard.path) in changed


def _jobs(jobs: int | None) -> int:
    """--jobs, checked; all cores when not given."""
    from shardscan.executor import default_jobs

    if jobs is not None and jobs < 1:
        raise _fail("--jobs must be >= 1")
    return jobs or default_jobs()


def _run_scan(
    paths: list[str],
    ruleset: Ruleset,
    policy: Policy,
    options: ScanOptions,
    allowlist=None,
    cache: Path | None = None,
    only=None,
    jobs: int = 1,
    exclude: list[str] | None = None,
    **engine: str | None,
) -> Report:
    """Scan with a progress bar on stderr when it is a terminal; engine setup errors exit 2."""
    from contextlib import nullcontext

    from shardscan.api import scan as api_scan

    hooks: dict = {}
    progress = None
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        progress = Progress(
            TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=Console(file=sys.stderr), transient=True,
        )
        task = progress.add_task("scan", total=None)
        hooks = {"on_start": lambda n: progress.update(task, total=n), "on_shard": lambda _r: progress.advance(task)}
    try:
        with progress or nullcontext():
            return api_scan(paths, ruleset=ruleset, policy=policy, options=options, allowlist=allowlist,
                            cache=cache, only=only, jobs=jobs, exclude=exclude or (), **engine, **hooks)
    except ConfigError as err:  # e.g. --engine ray without Ray installed
        raise _fail(str(err)) from None


# ---- commands ---------------------------------------------------------------------------------


@app.command()
def scan(
    paths: Annotated[
        list[str],
        typer.Argument(help="Shard files, folders (recursive), globs or URLs (s3://, gs://, hf://, any fsspec protocol)."),
    ],
    fmt: FormatOpt = [],  # noqa: B006 (typer needs a literal default)
    output: OutputOpt = None,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    strict: StrictOpt = False,
    now: NowOpt = None,
    quiet: QuietOpt = False,
    skip_unreadable: SkipOpt = False,
    regex_timeout: TimeoutOpt = 2.0,
    max_decode_depth: DepthOpt = 3,
    max_decode_bytes: DecodeBytesOpt = DecodeLimits().max_bytes,
    memory_budget: MemoryOpt = DEFAULT_MEMORY,
    allowlist: AllowlistOpt = None,
    no_allowlist: NoAllowlistOpt = False,
    fail_on_stale: FailOnStaleOpt = False,
    changed_since: Annotated[
        str | None,
        typer.Option(
            "--changed-since", metavar="REV",
            help="In a git repository: only shards changed since REV (committed, staged, unstaged or untracked).",
        ),
    ] = None,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
    jobs: JobsOpt = None,
    stats: StatsOpt = False,
    show_secrets: Annotated[
        bool,
        typer.Option("--show-secrets", help="Print secrets in plain text for local manual review (refused when CI is set)."),
    ] = False,
    engine: EngineOpt = "local",
    ray_address: RayAddressOpt = None,
    mkdir: MkdirOpt = False,
    exclude: ExcludeOpt = [],  # noqa: B006
    max_findings_per_cell: CellFindingsOpt = DEFAULT_MAX_FINDINGS_PER_CELL,
    max_findings_per_shard: ShardFindingsOpt = DEFAULT_MAX_FINDINGS_PER_SHARD,
    allow_truncated_findings: AllowTruncatedOpt = False,
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Scan shards and exit 0 (clean), 1 (blocking findings), 2 (usage error) or 3 (incomplete scan).

    Reads Parquet, JSON Lines (.jsonl, .ndjson; .gz, .zst, .bz2), .json (JSON Lines or one
    document), Arrow IPC (.arrow, .feather), CSV/TSV, tar archives and any text file; other files
    are sniffed by content, and a binary file that is none of these is listed as not scanned.
    """
    outputs = _outputs(fmt, output)
    if show_secrets:
        if os.environ.get("CI"):
            raise _fail("--show-secrets refuses to run when CI is set: CI logs are kept and shared")
        typer.secho(
            "WARNING: --show-secrets prints full secrets to the terminal. Do not paste, log or share this output.",
            err=True, fg="red", bold=True,
        )
        no_cache = True  # the cache holds only what reports hold; revealed values never go there
    ruleset = _load_rules(rules, disable)
    if max_decode_depth < 0:
        raise _fail(f"--max-decode-depth must be 0 (no decoding) or more, not {max_decode_depth}")
    if max_decode_bytes < 0:
        raise _fail(f"--max-decode-bytes must be 0 or more, not {max_decode_bytes}")
    if regex_timeout <= 0:
        raise _fail(f"--regex-timeout must be a number of seconds above 0, not {regex_timeout:g}")
    jobs = _jobs(jobs)
    options = ScanOptions(
        now=_parse_now(now),
        regex_timeout=regex_timeout,
        decode=DecodeLimits(max_depth=max_decode_depth, max_bytes=max_decode_bytes),
        reveal_secrets=show_secrets,
        memory_budget=_memory_budget(memory_budget),
        **_finding_caps(max_findings_per_cell, max_findings_per_shard),
        known_secrets=_known_secrets(known_secrets),
    )
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset)
    policy = Policy(strict=strict, skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale,
                    allow_truncated_findings=allow_truncated_findings)
    only = _changed_filter(changed_since)
    if ray_address is not None and engine != "ray":
        raise _fail("--ray-address needs --engine ray")
    report = _run_scan(
        paths, ruleset, policy, options, accepted, _cache_location(no_cache, cache_dir), only, jobs, exclude,
        engine=engine, ray_address=ray_address,
    )
    _emit(report, outputs, quiet, mkdir)
    if stats:
        from shardscan.stats import format_stats

        typer.echo(format_stats(report, jobs), err=True, nl=False)
    raise typer.Exit(report.decision.exit_code)


@app.command()
def hook(
    files: Annotated[list[str], typer.Argument(help="Shard files to check (pre-commit passes the staged ones).")] = [],  # noqa: B006
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    strict: StrictOpt = False,
    now: NowOpt = None,
    allowlist: Annotated[
        Path | None,
        typer.Option("--allowlist", help="Reviewed allowlist file (default: allowlist.yaml at the repository root, if any)."),
    ] = None,
    no_allowlist: NoAllowlistOpt = False,
    no_cache: NoCacheOpt = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option("--cache-dir", help="Result cache folder (default: $SHARDSCAN_CACHE_DIR, else .shardscan-cache/ at the repository root)."),
    ] = None,
    memory_budget: MemoryOpt = DEFAULT_MEMORY,
    exclude: ExcludeOpt = [],  # noqa: B006
) -> None:
    """Pre-commit hook: scan the given files, print a compact report, fail on findings or unreadable files.

    The files are read from the working tree (pre-commit stashes unstaged changes first); a Git LFS
    pointer is unreadable (its content is not present), never clean. The allowlist, the globs of
    .shardscanignore and the result cache are the repository's (see --allowlist and --cache-dir).
    """
    from shardscan.allowlist import DEFAULT_ALLOWLIST
    from shardscan.api import scan as api_scan
    from shardscan.gitutil import repo_root
    from shardscan.reader.exclude import ignore_file_lines

    if not files:
        raise typer.Exit(0)
    root = repo_root() or Path.cwd()
    ruleset = _load_rules(rules, disable)
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset, default=root / DEFAULT_ALLOWLIST)
    options = ScanOptions(now=_parse_now(now), memory_budget=_memory_budget(memory_budget))
    cache = _cache_location(no_cache, cache_dir, root / CACHE_DIR_NAME)
    try:
        report = api_scan(
            files, ruleset=ruleset, policy=Policy(strict=strict), options=options, allowlist=accepted, cache=cache,
            exclude=exclude, ignore_patterns=ignore_file_lines(root),
        )
    except ConfigError as err:
        raise _fail(str(err)) from None
    _print(render(report, "compact"))
    raise typer.Exit(report.decision.exit_code)


def _print(text: str) -> None:
    """Write ``text`` to standard output and flush it; a failed write exits 2."""
    try:
        write_stream(sys.stdout, text)
    except OutputError as err:
        raise _fail(str(err)) from None


# What a publish pipeline keeps: the machine contract, code-scanning upload, and a page for people.
GATE_FORMATS: tuple[str, ...] = ("json", "sarif", "html")


@app.command()
def gate(
    paths: Annotated[list[str], typer.Argument(help="Shard files, folders (recursive) or globs to publish.")],
    report_dir: Annotated[
        Path, typer.Option("--report-dir", help="Folder for the JSON, SARIF and HTML reports.")
    ] = Path("shardscan-reports"),
    allowlist: AllowlistOpt = None,
    no_allowlist: NoAllowlistOpt = False,
    strict: StrictOpt = False,
    fail_on_stale: FailOnStaleOpt = False,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    now: NowOpt = None,
    skip_unreadable: SkipOpt = False,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
    jobs: JobsOpt = None,
    memory_budget: MemoryOpt = DEFAULT_MEMORY,
    exclude: ExcludeOpt = [],  # noqa: B006
    max_findings_per_cell: CellFindingsOpt = DEFAULT_MAX_FINDINGS_PER_CELL,
    max_findings_per_shard: ShardFindingsOpt = DEFAULT_MAX_FINDINGS_PER_SHARD,
    allow_truncated_findings: AllowTruncatedOpt = False,
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Publish gate: scan, write JSON, SARIF and HTML reports into --report-dir, exit with the gate's code."""
    jobs = _jobs(jobs)
    ruleset = _load_rules(rules, disable)
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset)
    options = ScanOptions(now=_parse_now(now), memory_budget=_memory_budget(memory_budget),
                          **_finding_caps(max_findings_per_cell, max_findings_per_shard),
                          known_secrets=_known_secrets(known_secrets))
    policy = Policy(strict=strict, skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale,
                    allow_truncated_findings=allow_truncated_findings)
    report = _run_scan(paths, ruleset, policy, options, accepted, _cache_location(no_cache, cache_dir), None, jobs,
                       exclude)
    written: list[Path] = []
    try:
        for fmt in GATE_FORMATS:
            # The report folder is created (with its parents): naming it is asking for it.
            written.append(write_report(report, fmt, report_dir / f"shardscan-report{EXTENSIONS[fmt]}", mkdir=True))
    except OutputError as err:
        raise _fail(f"--report-dir {report_dir}: {err}") from None
    _print(render(report, "compact"))
    typer.echo(f"reports: {', '.join(str(p) for p in written)}", err=True)
    raise typer.Exit(report.decision.exit_code)


@app.command()
def demo(
    path: Annotated[Path | None, typer.Argument(help="Folder to write the demo dataset into (default: a temporary folder).")] = None,
    fmt: FormatOpt = [],  # noqa: B006
    output: OutputOpt = None,
    strict: StrictOpt = False,
    now: NowOpt = None,
    quiet: QuietOpt = False,
    allowlist: AllowlistOpt = None,
    no_allowlist: NoAllowlistOpt = False,
    fail_on_stale: FailOnStaleOpt = False,
    mkdir: MkdirOpt = False,
) -> None:
    """Write a small agent-trace dataset with the documented secret-looking rows, then scan it.

    The scan is reconciled against the reviewed allowlist shipped with shardscan (the four
    documented rows), unless --allowlist or --no-allowlist says otherwise.
    """
    from shardscan.allowlist import shipped_allowlist
    from shardscan.demo import write_demo_dataset

    outputs = _outputs(fmt, output)
    ruleset = _load_rules([], [])
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset, default=shipped_allowlist())
    folder = path or Path(tempfile.mkdtemp(prefix="shardscan-demo-"))
    try:
        shards = write_demo_dataset(folder)
    except OSError as exc:
        raise _fail(f"{folder}: cannot write the demo dataset: {os.strerror(exc.errno) if exc.errno else type(exc).__name__}") from None
    typer.echo(f"demo dataset: {len(shards)} shards in {folder}", err=True)
    options = ScanOptions(now=_parse_now(now))
    policy = Policy(strict=strict, fail_on_stale=fail_on_stale)
    report = _run_scan([str(folder)], ruleset, policy, options, accepted)
    _emit(report, outputs, quiet, mkdir)
    if not quiet:
        typer.echo(_demo_next_steps(report, folder), err=True, nl=False)
    raise typer.Exit(report.decision.exit_code)


def _demo_next_steps(report: Report, folder: Path) -> str:
    """What a newcomer reads after the demo's report: what it showed and the commands to try next
    (on standard error, so that a report written to standard output stays clean)."""
    verdicts = Counter(str(f.verdict) for f in report.findings)
    accepted = sum(1 for f in report.findings if f.allowlist is not None)
    summary = (
        f"What the demo showed: {len(report.findings)} row(s) hold secret-looking values, each verified offline ("
        + ", ".join(f"{n} {v}" for v, n in sorted(verdicts.items()))
        + f"); {accepted} accepted by a reviewed allowlist entry that says why."
    )
    lines = [
        "",
        *textwrap.wrap(summary, 78),
        decision_line(report),
        "",
        "Try next:",
        "  # the same rows as a page to review and sign off",
        f"  shardscan scan {folder} -f html:report.html",
        "  # your own data (a folder, files, globs or s3:// and hf:// URLs)",
        "  shardscan scan path/to/your/shards/",
    ]
    return "\n".join(lines) + "\n"


@app.command()
def redact(
    paths: Annotated[list[str], typer.Argument(help="Shard files, folders or globs to redact.")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder for the redacted copies.")] = None,
    from_report: Annotated[Path | None, typer.Option("--from", help="Take findings from this JSON report instead of scanning.")] = None,
    verdicts: Annotated[str | None, typer.Option("--verdicts", help="Comma-separated verdicts to redact (default: blocking findings).")] = None,
    replacement: Annotated[str, typer.Option("--replacement", help="Placeholder; {kind}, {rule} and {fp} are filled in.")] = "[REDACTED:{kind}:{fp}]",
    only_changed: Annotated[bool, typer.Option("--only-changed", help="Do not copy shards that need no redaction.")] = False,
    in_place: Annotated[bool, typer.Option("--in-place", help="Replace the input shards atomically after checking the new file.")] = False,
    include_allowlisted: Annotated[bool, typer.Option("--include-allowlisted", help="Also redact allowlisted findings.")] = False,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    strict: StrictOpt = False,
    now: NowOpt = None,
    allowlist: AllowlistOpt = None,
    no_allowlist: NoAllowlistOpt = False,
    manifest: Annotated[
        Path | None,
        typer.Option("--manifest", help="Redaction manifest to append to (default: OUT.redactions.json beside --out; "
                     "redactions.json here with --in-place). Never inside --out or a folder holding the inputs."),
    ] = None,
    mkdir: Annotated[bool, typer.Option("--mkdir", help="Create missing parent folders of --out and --manifest.")] = False,
    exclude: ExcludeOpt = [],  # noqa: B006
) -> None:
    """Write copies of shards with secret spans replaced, verified by a re-scan; exit 1 if any shard failed.

    Exit codes: 0 every selected secret was replaced and the output re-scanned clean of them;
    1 some shard could not be redacted safely (its output is not written); 2 usage error, or an
    output (a copy, a replaced shard, the manifest) could not be written; 3 an input could not be
    read (nothing is written).
    """
    import json as _json

    from shardscan.api import scan as scan_paths
    from shardscan.engine import Scanner
    from shardscan.model import Verdict
    from shardscan.reader import discover_files
    from shardscan.remediate import append_manifest, redactions_from_report, select_findings
    from shardscan.remediate import redact as redact_shards

    if (out is None) == (not in_place):
        raise _fail("give exactly one of --out DIR or --in-place")
    manifest_path = _redaction_outputs(paths, out, manifest, mkdir)
    chosen_verdicts = None
    if verdicts:
        try:
            chosen_verdicts = {Verdict(v.strip()) for v in verdicts.split(",") if v.strip()}
        except ValueError:
            raise _fail(f"--verdicts: unknown verdict in {verdicts!r} (known: {', '.join(v.value for v in Verdict)})") from None
    ruleset = _load_rules(rules, disable)
    options = ScanOptions(now=_parse_now(now))
    try:
        found = discover_files(paths, exclude)
    except ConfigError as err:  # a URL whose filesystem package is not installed
        raise _fail(str(err)) from None
    # The same discovery the scan below runs, so each finding's shard name is one of these files.
    shards, missing = list(found.shards), found.unresolved
    if missing:
        raise _fail("; ".join(f"{m.path}: {m.reason}" for m in missing), code=3)
    if from_report is not None:
        try:
            data = _json.loads(from_report.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise _fail(f"--from {from_report}: cannot read report ({type(exc).__name__})") from None
        chosen = redactions_from_report(data, chosen_verdicts, include_allowlisted)
    else:
        accepted = _load_allowlist(allowlist, no_allowlist, ruleset)
        try:
            report = scan_paths(paths, ruleset=ruleset, policy=Policy(strict=strict), options=options,
                                allowlist=accepted, exclude=exclude)
        except ConfigError as err:
            raise _fail(str(err)) from None
        if report.unreadable:
            _emit(report, [("terminal", None)], quiet=False)
            raise _fail("some shards could not be read; nothing was redacted", code=3)
        chosen = select_findings(report.findings, chosen_verdicts, include_allowlisted)
    scanner = Scanner(ruleset, options)

    def rescan(ref) -> set[str]:
        result = scanner.scan_shard(ref)
        if result.issues:
            from shardscan.remediate import RedactionError

            raise RedactionError(f"{ref.display}: the redacted copy could not be fully re-scanned")
        return {f.fingerprint for f in result.findings}

    outcome = redact_shards(
        shards, chosen, out, rescan=rescan, template=replacement, only_changed=only_changed, in_place=in_place
    )
    # The manifest records what was done even when the run stopped: those shards are complete.
    run = {"at": options.now.isoformat(), "mode": "in-place" if in_place else "copy",
           "out": None if out is None else str(out)}
    try:
        append_manifest(manifest_path, list(outcome.entries), run)
    except (OutputError, ConfigError) as err:
        raise _fail(f"{err} (redacted {len(outcome.written)} shard(s) first)") from None
    _print(
        f"redacted {len(outcome.entries)} span(s) in {len(outcome.written)} shard(s); "
        f"copied {len(outcome.copied)} unchanged; manifest {manifest_path}\n"
    )
    for _shard, reason in outcome.failed:
        typer.echo(f"shardscan: error: {reason}", err=True)
    if outcome.stopped is not None:
        raise _fail(f"{outcome.stopped}; stopped there; the shards counted above are complete")
    raise typer.Exit(1 if outcome.failed else 0)


def _input_folders(paths: list[str]) -> list[Path]:
    """The local folders that hold the inputs: a folder itself, a file's folder, a glob's fixed part."""
    import glob

    folders = []
    for raw in paths:
        if "://" in raw:
            continue
        path = Path(raw)
        if path.is_dir():
            folders.append(path)
        elif path.exists():
            folders.append(path.parent)
        elif glob.has_magic(raw):
            fixed = list(path.parts)
            cut = next((i for i, part in enumerate(fixed) if glob.has_magic(part)), len(fixed))
            folders.append(Path(*fixed[:cut]) if cut else Path("."))
    return [folder.resolve() for folder in folders]


def _redaction_outputs(paths: list[str], out: Path | None, manifest: Path | None, mkdir: bool) -> Path:
    """Check redact's outputs before any work: --out can be written into, and the manifest lies
    outside --out and every folder holding the inputs (a later scan would read it as data) and,
    if it exists, is a manifest to append to. Returns the manifest path."""
    from shardscan.atomic import prepare_parent, probe_folder
    from shardscan.remediate import default_manifest, load_manifest

    try:
        if out is not None:
            if out.exists() and not out.is_dir():
                raise OutputError(str(out), "it is not a folder")
            if out.exists():
                probe_folder(out)
            else:
                # Created with the first copy (nothing is written if the inputs cannot be read).
                prepare_parent(out, mkdir)
                try:
                    probe_folder(out.parent)
                except OutputError as err:
                    raise OutputError(str(out), err.reason) from None
        path = manifest if manifest is not None else default_manifest(out)
        where = path.resolve()
        fences = [(folder, "the folder of the inputs") for folder in _input_folders(paths)]
        if out is not None:
            fences.insert(0, (out.resolve(), "--out"))
        for folder, what in fences:
            if where.is_relative_to(folder):
                hint = "" if manifest is not None else "; choose one with --manifest PATH"
                raise _fail(f"manifest {path}: inside {what} {folder} (a later scan would read it as data){hint}")
        prepare_parent(path, mkdir)
        load_manifest(path)
    except OutputError as err:
        raise _fail(_output_failure(err)) from None
    except ConfigError as err:
        raise _fail(str(err)) from None
    return path


@rules_app.command("list")
def rules_list(rules: RulesOpt = [], disable: DisableOpt = []) -> None:  # noqa: B006
    """List the active rules: id, kind, severity, keywords and verifiers."""
    ruleset = _load_rules(rules, disable)
    for rule in ruleset.rules:
        verify = ",".join(rule.verify) or "-"
        typer.echo(f"{rule.id:40} {rule.kind:12} {rule.severity:9} keywords={','.join(rule.keywords)} verify={verify}")
    typer.echo(f"{len(ruleset.rules)} rules, digest {ruleset.digest}")


@rules_app.command("check")
def rules_check(
    files: Annotated[list[Path], typer.Argument(help="Rule files to check (default: the built-in rules).")] = [],  # noqa: B006
) -> None:
    """Run every example and negative example through the full detector; exit 1 if any fails."""
    from shardscan.ruleset import load_rule_file
    from shardscan.ruleset.check import check_ruleset

    ruleset = _load_rules(files, [])
    only = None
    if files:
        try:
            only = {rule.id for f in files for rule in load_rule_file(f)}
        except ConfigError as err:
            raise _fail(str(err)) from None
    results = check_ruleset(ruleset, only)
    failures = [r for r in results if not r.ok]
    for failure in failures:
        typer.echo(f"FAIL {ruleset.get(failure.rule_id).source}: {failure.rule_id}: {failure.problem}")
    checked = len({r.rule_id for r in results})
    typer.echo(f"{checked} rules, {len(results)} examples checked, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


@allowlist_app.command("add")
def allowlist_add(
    report: Annotated[Path, typer.Option("--from", help="A JSON report (shardscan scan --format json).")],
    finding: Annotated[int | None, typer.Option("--finding", help="Which finding: its 1-based number in the report.")] = None,
    reason: Annotated[
        str | None, typer.Option("--reason", help="Why this finding is not a live credential (required with --finding).")
    ] = None,
    confirm_live: Annotated[
        bool,
        typer.Option("--confirm-live", help="Accept a finding verified as a working credential (needs a reason of six words or more)."),
    ] = False,
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Who reviewed it (default: git user.name).")] = None,
    expires: Annotated[str | None, typer.Option("--expires", help="Last day the entry applies (YYYY-MM-DD).")] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="Also require this rule id or kind.")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="Also require a shard matching this glob.")] = None,
    column: Annotated[str | None, typer.Option("--column", help="Also require a column matching this glob.")] = None,
    allowlist: Annotated[Path, typer.Option("--allowlist", help="The allowlist to append to (created if missing).")] = Path(
        "allowlist.yaml"
    ),
    now: NowOpt = None,
) -> None:
    """Append an entry accepting finding N of a JSON report, keeping the file's comments and order.

    Without --finding, lists the report's findings with their numbers.
    """
    from shardscan.review import (
        NewEntry,
        append_entry,
        covering_entry,
        existing_allowlist,
        git_user_name,
        load_report_findings,
    )

    try:
        findings = load_report_findings(report)
    except ConfigError as err:
        raise _fail(str(err)) from None
    if finding is None:
        # Listing is the first step of the documented workflow: it succeeds.
        for f in findings:
            typer.echo(f"{f.number:4}  {f.status:11} {f.kind:12} {f.preview:14} {f.verdict:10} {f.location}")
        typer.echo(f"add one with: shardscan allowlist add --from {report} --finding N --reason '...'"
                   if findings else f"{report}: the report has no findings")
        raise typer.Exit(0)
    if not 1 <= finding <= len(findings):
        raise _fail(f"--finding {finding}: the report has {len(findings)} finding(s), numbered from 1")
    if reason is None or not reason.strip():
        raise _fail("--finding needs --reason: say why the finding is not a live credential")
    who = reviewer or git_user_name()
    if not who or not who.strip():
        raise _fail("no reviewer: pass --reviewer NAME (git user.name is not set)")
    today = _parse_now(now).date()
    until = _parse_date(expires, "--expires", not_before=today)
    chosen = findings[finding - 1]
    ruleset = _load_rules([], [])
    check = _secret_check(ruleset)
    try:
        existing = existing_allowlist(allowlist, secret_check=check)
    except ConfigError as err:
        raise _fail(str(err)) from None
    cover = covering_entry(existing, chosen, today)
    if cover is not None and not (rule or shard or column):
        if not cover.is_expired(today):
            typer.echo(f"finding {finding} is already accepted by entry {cover.index} ({allowlist}:{cover.line})")
            raise typer.Exit(0)
        raise _fail(f"{allowlist}:{cover.line}: entry {cover.index} accepted finding {finding} until {cover.expires}; "
                    "edit its 'expires' to renew it")
    if chosen.verdict == "valid":
        from shardscan.review import LIVE_REASON_WORDS

        if not confirm_live:
            raise _fail(f"finding {finding} was verified offline as a working credential: revoke or rotate it; to "
                        "accept it anyway, add --confirm-live and a reason that says why publishing it is safe")
        if len(reason.split()) < LIVE_REASON_WORDS:
            raise _fail(f"--reason: a live credential needs a reason of at least {LIVE_REASON_WORDS} words")
    entry = NewEntry.for_finding(chosen, reason, who, today, until, rule, shard, column)
    try:
        written = append_entry(allowlist, entry, secret_check=check)
    except (ConfigError, OutputError) as err:
        raise _fail(str(err)) from None
    typer.echo(f"added entry {written.index} to {allowlist} (line {written.line}): {chosen.kind} {chosen.preview} "
               f"at {chosen.location}")


@allowlist_app.command("check")
def allowlist_check(
    path: Annotated[
        Path | None, typer.Argument(help="The allowlist file (the same as --allowlist; default: allowlist.yaml).")
    ] = None,
    allowlist: Annotated[Path | None, typer.Option("--allowlist", help="The allowlist file, as for the other commands.")] = None,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    now: NowOpt = None,
) -> None:
    """Validate an allowlist; exit 2 if invalid, 1 if entries can never match (expired, unknown rule, redundant)."""
    from shardscan.allowlist import never_matching

    if path is not None and allowlist is not None and path != allowlist:
        raise _fail("give the allowlist once: as PATH or as --allowlist")
    path = path or allowlist or Path("allowlist.yaml")

    ruleset = _load_rules(rules, disable)
    accepted = _load_allowlist(path, False, ruleset)
    assert accepted is not None
    problems = never_matching(accepted, [r.id for r in ruleset.rules] + list(ruleset.kinds), _parse_now(now).date())
    for problem in problems:
        typer.echo(problem)
    n = len(accepted.entries)
    typer.echo(f"{path}: {n} entr{'y' if n == 1 else 'ies'}, valid; {len(problems)} can never match")
    raise typer.Exit(1 if problems else 0)


@app.command()
def review(
    report: Annotated[Path, typer.Argument(help="A JSON report (shardscan scan --format json).")],
    allowlist: Annotated[Path, typer.Option("--allowlist", help="The allowlist to write (created if missing).")] = Path(
        "allowlist.yaml"
    ),
    reviewer: Annotated[str | None, typer.Option("--reviewer", help="Who is reviewing (default: git user.name).")] = None,
    expires: Annotated[str | None, typer.Option("--expires", help="Last day accepted entries apply (YYYY-MM-DD).")] = None,
    now: NowOpt = None,
) -> None:
    """Triage the report's new findings one at a time; accepted ones are appended to the allowlist.

    Answers are read line by line from standard input, so it works in a plain terminal and
    when fed by a script: a/accept (then a reason), s/skip, q/quit.
    """
    from shardscan.review import git_user_name, load_report_findings, run_review

    try:
        findings = load_report_findings(report)
    except ConfigError as err:
        raise _fail(str(err)) from None
    today = _parse_now(now).date()
    until = _parse_date(expires, "--expires", not_before=today)
    ruleset = _load_rules([], [])
    check = _secret_check(ruleset)
    who = reviewer or git_user_name()
    if not who:
        typer.echo("reviewer name: ", nl=False)
        who = sys.stdin.readline().strip()
        if not who:
            raise _fail("a reviewer name is required (--reviewer NAME)")
    try:
        outcome = run_review(
            findings, allowlist, reviewer=who, today=today, expires=until,
            stdin=sys.stdin, stdout=sys.stdout, secret_check=check,
        )
    except (ConfigError, OutputError) as err:  # an allowlist that cannot be written stops the review
        raise _fail(str(err)) from None
    typer.echo(f"review: {len(outcome.accepted)} accepted, {outcome.skipped} skipped, {outcome.already} already "
               f"accepted, {outcome.remaining} not reviewed")


def _parse_date(value: str | None, option: str, not_before: date | None = None) -> date | None:
    if value is None:
        return None
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        raise _fail(f"{option}: not a date (YYYY-MM-DD): {value!r}") from None
    if not_before is not None and parsed < not_before:
        raise _fail(f"{option} {parsed} is before the review date {not_before}: the entry would never apply")
    return parsed


@app.command()
def version() -> None:
    """Print the shardscan version."""
    typer.echo(f"shardscan {__version__}")


# Metavars by option name, so that every command's help reads the same (``--now DATE`` wherever it
# appears); an option not listed gets one from its type. Typer would print ``<str>`` and ``<path>``.
METAVARS: dict[str, str] = {
    "--format": "FORMAT[:PATH]", "--output": "PATH", "--rules": "PATH", "--disable": "RULE|KIND",
    "--now": "DATE", "--regex-timeout": "SECONDS", "--max-decode-depth": "N", "--max-decode-bytes": "N",
    "--allowlist": "PATH", "--cache-dir": "DIR", "--jobs": "N", "--engine": "local|ray", "--ray-address": "ADDRESS",
    "--report-dir": "DIR", "--out": "DIR", "--from": "REPORT", "--verdicts": "VERDICT[,VERDICT...]",
    "--replacement": "TEMPLATE", "--finding": "N", "--reason": "TEXT", "--reviewer": "NAME", "--expires": "DATE",
    "--rule": "RULE|KIND", "--shard": "GLOB", "--column": "GLOB", "--exclude": "GLOB",
}
_TYPE_METAVARS: dict[str, str] = {"integer": "N", "float": "NUMBER", "path": "PATH", "text": "TEXT"}


def command():
    """The click command behind ``app``, with one metavar style across commands (see METAVARS)."""
    root = typer.main.get_command(app)

    def fix(cmd) -> None:
        for param in cmd.params:
            # Duck-typed: typer vendors click in some versions, so the classes are not click's.
            if param.param_type_name == "argument":
                # ``PATHS...`` in the usage line and the help, as click writes it; typer would
                # print ``{paths}...`` and ``paths...``.
                metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
                metavar = metavar if param.required else f"[{metavar}]"
                param.make_metavar = lambda *_args, _metavar=metavar, **_kwargs: _metavar
            elif param.param_type_name == "option" and not param.is_flag and not param.count:
                long = next((o for o in param.opts if o.startswith("--")), "")
                if long in METAVARS:
                    param.metavar = METAVARS[long]
                elif not param.metavar or param.metavar.startswith("<"):
                    param.metavar = _TYPE_METAVARS.get(param.type.name, param.type.name.upper())
        for sub in getattr(cmd, "commands", {}).values():
            fix(sub)

    fix(root)
    return root


# click's exception classes, found through typer (which vendors click in some versions).
_USAGE_ERROR = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _run_command() -> int | str | None:
    """Run the command line; usage errors are shown as click shows them, with stricter suggestions."""
    import difflib

    root = command()
    try:
        outcome = root.main(prog_name="shardscan", standalone_mode=False)
    except _USAGE_ERROR as err:
        if type(err).__name__ == "NoSuchOption":
            # difflib's default cutoff suggests --jobs for --bogus; suggest only near-misses (typos).
            name = err.option_name  # type: ignore[attr-defined]
            err.possibilities = [p for p in err.possibilities or []  # type: ignore[attr-defined]
                                 if difflib.SequenceMatcher(None, name, p).ratio() >= 0.8] or None
        err.show()
        return err.exit_code
    except typer.Abort:
        typer.echo("Aborted!", err=True)
        return 1
    return outcome if isinstance(outcome, int) else 0


def main() -> None:
    """Console entry point.

    Once the command is done the process ends without tearing the interpreter down: reports are
    written and closed and worker pools joined by then, and unloading pyarrow and numpy costs
    about 0.15 s, a tenth of a hook-sized run. When Ray was used, its exit handlers shut it down,
    so the normal exit runs.
    """
    # Every write to standard output is checked: a full disk under ``> report.json`` or a closed
    # pipe is exit 2 with one line, never a truncated report with exit 0 (nor click's exit 1).
    sys.stdout = CheckedStream(sys.stdout)
    try:
        code = _run_command()
    except SystemExit as done:
        code = done.code
    except OutputError as err:
        code = _output_failed(err)
    if code in (0, 1, 3, None):
        try:
            sys.stdout.flush()
        except OutputError as err:
            code = _output_failed(err)
    if "ray" in sys.modules:
        raise SystemExit(code)
    _exit_now(code)


def _output_failed(err: OutputError) -> int:
    """Say on stderr that an output could not be written; the usage/config exit code."""
    try:
        sys.stderr.write(f"shardscan: error: {err}\n")
    except OSError:
        pass
    return EXIT_USAGE


def _exit_now(code: int | str | None) -> None:
    """Flush what is buffered and end the process with ``code`` (SystemExit's meaning of it)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, OutputError):  # a closed pipe or full disk (already reported), a closed stream
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()

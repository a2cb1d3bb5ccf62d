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
    from datetime import UTC, date, datetime
    from pathlib import Path
    from typing import Annotated

    import typer

    from shardscan import __version__
    from shardscan.cache import CACHE_DIR_NAME
    from shardscan.decoders import DecodeLimits
    from shardscan.engine import DEFAULT_MEMORY_BUDGET, ScanOptions
    from shardscan.errors import ConfigError
    from shardscan.known_secrets import load_known_secrets
    from shardscan.policy import EXIT_USAGE, Policy
    from shardscan.report import Report
    from shardscan.reporters import EXTENSIONS, FORMATS, RenderOptions, render
    from shardscan.reporters._common import decision_line
    from shardscan.reporters import write as write_report
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
)


@app.callback()
def _global_options(
    verbose: Annotated[
        int, typer.Option("--verbose", "-v", count=True, help="Log progress to stderr (-v per shard, -vv per finding).")
    ] = 0,
) -> None:
    """Scan Parquet dataset shards for credentials before you publish them."""
    import logging

    if verbose:
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
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Read every shard; neither use nor update the result cache.")]
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
EngineOpt = Annotated[str, typer.Option("--engine", help="Where work items run: local (this process) or ray (Ray tasks; needs the shardscan\\[ray] extra).")]
RayAddressOpt = Annotated[
    str | None,
    typer.Option("--ray-address", help="Ray cluster to use with --engine ray (auto, ray://HOST:10001, HOST:6379); default: a local Ray."),
]


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    typer.echo(f"shardscan: error: {message}", err=True)
    return typer.Exit(code)


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


def _load_rules(rules: list[Path], disable: list[str]) -> Ruleset:
    try:
        return load_ruleset(rules, disable=disable)
    except ConfigError as err:
        raise _fail(str(err)) from None


def _secret_check(ruleset: Ruleset):
    """A check that a text holds something the active rules detect (used to keep secrets out of allowlists)."""
    from shardscan.engine import Scanner

    scanner = Scanner(ruleset)
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


def _emit(report: Report, outputs: list[tuple[str, Path | None]], quiet: bool) -> None:
    for fmt, path in outputs:
        color = path is None and _use_color() and fmt == "terminal"
        # A terminal gets its own width; files and pipes (CI logs) get wide lines rather than folded cells.
        width = shutil.get_terminal_size().columns if path is None and sys.stdout.isatty() else 160
        options = RenderOptions(color=color, quiet=quiet, width=width)
        if path is None:
            sys.stdout.write(render(report, fmt, options))
        else:
            write_report(report, fmt, path, options)
    if all(path is not None for _, path in outputs):
        # Files were written; still tell a person (or CI log) what the gate decided (plain text:
        # the terminal reporter would import rich for one line).
        typer.echo(decision_line(report))
    allow = report.allowlist
    if allow and (allow.stale or allow.expired) and not report.policy.fail_on_stale:
        # A warning by default: say so where CI logs show it, whatever the formats were.
        entries = ", ".join(f"{e['entry']} ({e['state']}, line {e['line']})" for e in allow.stale + allow.expired)
        typer.echo(f"shardscan: warning: {allow.path}: allowlist entries that accepted nothing: {entries}; "
                   "--fail-on-stale makes them fail the gate", err=True)


def _cache_location(no_cache: bool, cache_dir: Path | None, default: Path | None = None) -> Path | None:
    """Where the result cache lives: --cache-dir, else $SHARDSCAN_CACHE_DIR, else ``default``, else the
    user cache dir; None with --no-cache."""
    if no_cache:
        return None
    if cache_dir is not None:
        return cache_dir
    from shardscan.cache import default_cache_dir

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
                            cache=cache, only=only, jobs=jobs, **engine, **hooks)
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
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Scan shards and exit 0 (clean), 1 (blocking findings), 2 (usage error) or 3 (incomplete scan).

    Reads Parquet, JSON Lines (.jsonl, .ndjson; .gz, .zst, .bz2), .json (JSON Lines or one
    document) and Arrow IPC (.arrow, .feather).
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
    if max_decode_depth < 0 or max_decode_bytes < 0 or regex_timeout <= 0:
        raise _fail("--max-decode-depth and --max-decode-bytes must be >= 0 and --regex-timeout > 0")
    jobs = _jobs(jobs)
    options = ScanOptions(
        now=_parse_now(now),
        regex_timeout=regex_timeout,
        decode=DecodeLimits(max_depth=max_decode_depth, max_bytes=max_decode_bytes),
        reveal_secrets=show_secrets,
        memory_budget=_memory_budget(memory_budget),
        known_secrets=_known_secrets(known_secrets),
    )
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset)
    policy = Policy(strict=strict, skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale)
    only = _changed_filter(changed_since)
    if ray_address is not None and engine != "ray":
        raise _fail("--ray-address needs --engine ray")
    report = _run_scan(
        paths, ruleset, policy, options, accepted, _cache_location(no_cache, cache_dir), only, jobs,
        engine=engine, ray_address=ray_address,
    )
    _emit(report, outputs, quiet)
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
    allowlist: AllowlistOpt = None,
    no_allowlist: NoAllowlistOpt = False,
    no_cache: NoCacheOpt = False,
    cache_dir: CacheDirOpt = None,
    memory_budget: MemoryOpt = DEFAULT_MEMORY,
) -> None:
    """Pre-commit hook: scan the given files, print a compact report, fail on findings or unreadable files.

    The files are read from the working tree (pre-commit stashes unstaged changes first); a Git LFS
    pointer is unreadable (its content is not present), never clean. ``allowlist.yaml`` at the
    repository root is honoured. The result cache lives in ``.shardscan-cache/`` at the repository
    root unless --cache-dir or $SHARDSCAN_CACHE_DIR says otherwise.
    """
    from shardscan.allowlist import DEFAULT_ALLOWLIST
    from shardscan.api import scan as api_scan
    from shardscan.gitutil import repo_root

    if not files:
        raise typer.Exit(0)
    root = repo_root() or Path.cwd()
    ruleset = _load_rules(rules, disable)
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset, default=root / DEFAULT_ALLOWLIST)
    options = ScanOptions(now=_parse_now(now), memory_budget=_memory_budget(memory_budget))
    cache = _cache_location(no_cache, cache_dir, root / CACHE_DIR_NAME)
    report = api_scan(
        files, ruleset=ruleset, policy=Policy(strict=strict), options=options, allowlist=accepted, cache=cache
    )
    sys.stdout.write(render(report, "compact"))
    raise typer.Exit(report.decision.exit_code)


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
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Publish gate: scan, write JSON, SARIF and HTML reports into --report-dir, exit with the gate's code."""
    jobs = _jobs(jobs)
    ruleset = _load_rules(rules, disable)
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset)
    options = ScanOptions(now=_parse_now(now), memory_budget=_memory_budget(memory_budget),
                          known_secrets=_known_secrets(known_secrets))
    policy = Policy(strict=strict, skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale)
    report = _run_scan(paths, ruleset, policy, options, accepted, _cache_location(no_cache, cache_dir), None, jobs)
    written: list[Path] = []
    try:
        for fmt in GATE_FORMATS:
            written.append(write_report(report, fmt, report_dir / f"shardscan-report{EXTENSIONS[fmt]}"))
    except OSError as err:
        raise _fail(f"--report-dir {report_dir}: cannot write reports ({err.strerror or err})") from None
    sys.stdout.write(render(report, "compact"))
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
) -> None:
    """Write a small agent-trace dataset with the documented secret-looking rows, then scan it.

    The scan is reconciled against the reviewed allowlist shipped with shardscan (the four
    documented rows), unless ``--allowlist`` or ``--no-allowlist`` says otherwise.
    """
    from shardscan.allowlist import shipped_allowlist
    from shardscan.demo import write_demo_dataset

    outputs = _outputs(fmt, output)
    ruleset = _load_rules([], [])
    accepted = _load_allowlist(allowlist, no_allowlist, ruleset, default=shipped_allowlist())
    folder = path or Path(tempfile.mkdtemp(prefix="shardscan-demo-"))
    shards = write_demo_dataset(folder)
    typer.echo(f"demo dataset: {len(shards)} shards in {folder}", err=True)
    options = ScanOptions(now=_parse_now(now))
    policy = Policy(strict=strict, fail_on_stale=fail_on_stale)
    report = _run_scan([str(folder)], ruleset, policy, options, accepted)
    _emit(report, outputs, quiet)
    raise typer.Exit(report.decision.exit_code)


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
) -> None:
    """Write copies of shards with secret spans replaced, verified by a re-scan; exit 1 if any shard failed.

    Exit codes: 0 every selected secret was replaced and the output re-scanned clean of them;
    1 some shard could not be redacted safely (its output is not written); 2 usage error;
    3 an input could not be read (nothing is written).
    """
    import json as _json

    from shardscan.api import scan as scan_paths
    from shardscan.engine import Scanner
    from shardscan.model import Verdict
    from shardscan.reader import discover
    from shardscan.remediate import redact as redact_shards
    from shardscan.remediate import redactions_from_report, select_findings, write_manifest

    if (out is None) == (not in_place):
        raise _fail("give exactly one of --out DIR or --in-place")
    chosen_verdicts = None
    if verdicts:
        try:
            chosen_verdicts = {Verdict(v.strip()) for v in verdicts.split(",") if v.strip()}
        except ValueError:
            raise _fail(f"--verdicts: unknown verdict in {verdicts!r} (known: {', '.join(v.value for v in Verdict)})") from None
    ruleset = _load_rules(rules, disable)
    options = ScanOptions(now=_parse_now(now))
    shards, missing = discover(paths)
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
        report = scan_paths(paths, ruleset=ruleset, policy=Policy(strict=strict), options=options, allowlist=accepted)
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
    manifest_dir = out if out is not None else Path(".")
    manifest_dir.mkdir(parents=True, exist_ok=True)
    write_manifest(manifest_dir / "redactions.json", list(outcome.entries))
    typer.echo(
        f"redacted {len(outcome.entries)} span(s) in {len(outcome.written)} shard(s); "
        f"copied {len(outcome.copied)} unchanged; manifest {manifest_dir / 'redactions.json'}"
    )
    for _shard, reason in outcome.failed:
        typer.echo(f"shardscan: error: {reason}", err=True)
    raise typer.Exit(1 if outcome.failed else 0)


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
    reason: Annotated[str, typer.Option("--reason", help="Why this finding is not a live credential (required).")],
    finding: Annotated[int | None, typer.Option("--finding", help="Which finding: its 1-based number in the report.")] = None,
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
        for f in findings:
            typer.echo(f"{f.number:4}  {f.status:11} {f.kind:12} {f.preview:14} {f.verdict:10} {f.location}")
        raise _fail(f"choose a finding with --finding N (1 to {len(findings)})" if findings else "the report has no findings")
    if not 1 <= finding <= len(findings):
        raise _fail(f"--finding {finding}: the report has {len(findings)} finding(s), numbered from 1")
    if not reason.strip():
        raise _fail("--reason must say why the finding is not a live credential")
    who = reviewer or git_user_name()
    if not who or not who.strip():
        raise _fail("no reviewer: pass --reviewer NAME (git user.name is not set)")
    today = _parse_now(now).date()
    until = _parse_date(expires, "--expires")
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
    entry = NewEntry.for_finding(chosen, reason, who, today, until, rule, shard, column)
    try:
        written = append_entry(allowlist, entry, secret_check=check)
    except ConfigError as err:
        raise _fail(str(err)) from None
    typer.echo(f"added entry {written.index} to {allowlist} (line {written.line}): {chosen.kind} {chosen.preview} "
               f"at {chosen.location}")


@allowlist_app.command("check")
def allowlist_check(
    path: Annotated[Path, typer.Argument(help="The allowlist file.")] = Path("allowlist.yaml"),
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    now: NowOpt = None,
) -> None:
    """Validate an allowlist; exit 2 if invalid, 1 if entries can never match (expired, unknown rule, redundant)."""
    from shardscan.allowlist import never_matching

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
    until = _parse_date(expires, "--expires")
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
            findings, allowlist, reviewer=who, today=_parse_now(now).date(), expires=until,
            stdin=sys.stdin, stdout=sys.stdout, secret_check=check,
        )
    except ConfigError as err:
        raise _fail(str(err)) from None
    typer.echo(f"review: {len(outcome.accepted)} accepted, {outcome.skipped} skipped, {outcome.already} already "
               f"accepted, {outcome.remaining} not reviewed")


def _parse_date(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise _fail(f"{option}: not a date (YYYY-MM-DD): {value!r}") from None


@app.command()
def version() -> None:
    """Print the shardscan version."""
    typer.echo(f"shardscan {__version__}")


def main() -> None:
    """Console entry point.

    Once the command is done the process ends without tearing the interpreter down: reports are
    written and closed and worker pools joined by then, and unloading pyarrow and numpy costs
    about 0.15 s, a tenth of a hook-sized run. When Ray was used, its exit handlers shut it down,
    so the normal exit runs.
    """
    try:
        app()  # typer ends with sys.exit(code)
    except SystemExit as done:
        code = done.code
    else:
        code = 0
    if "ray" in sys.modules:
        raise SystemExit(code)
    _exit_now(code)


def _exit_now(code: int | str | None) -> None:
    """Flush what is buffered and end the process with ``code`` (SystemExit's meaning of it)."""
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (| head) or stream: nothing more to deliver
            pass
    os._exit(code or 0)


if __name__ == "__main__":
    main()

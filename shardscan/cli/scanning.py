"""The commands that scan: scan, hook, gate and demo. They parse, call the library, print; errors are raised."""

# No ``from __future__ import annotations``: Typer evaluates the commands' annotations on every run.
import os
import sys
import tempfile
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from shardscan.allowlist import DEFAULT_ALLOWLIST, Allowlist, shipped_allowlist
from shardscan.cache import CACHE_DIR_NAME
from shardscan.cli.options import (
    DEFAULT_FLAGS,
    AllowlistOpt,
    AllowTruncatedOpt,
    CacheDirOpt,
    CellFindingsOpt,
    DecodeBytesOpt,
    DepthOpt,
    DisableOpt,
    EngineOpt,
    ExcludeOpt,
    FailOnStaleOpt,
    FormatOpt,
    JobsOpt,
    KnownSecretsOpt,
    MemoryOpt,
    MkdirOpt,
    NoAllowlistOpt,
    NoCacheOpt,
    NowOpt,
    OutputOpt,
    QuietOpt,
    RayAddressOpt,
    RulesOpt,
    ScanFlags,
    ScanSetup,
    ShardFindingsOpt,
    SkipOpt,
    StatsOpt,
    StrictOpt,
    TimeoutOpt,
    cache_location,
    changed_filter,
    load_allowlist_option,
    load_rules,
    scan_setup,
)
from shardscan.cli.output import emit, parse_outputs, print_text
from shardscan.errors import ConfigError, OutputError
from shardscan.gitutil import repo_root
from shardscan.reader import ShardRef
from shardscan.reader.exclude import ignore_file_lines
from shardscan.report import Report
from shardscan.reporters import EXTENSIONS, render
from shardscan.reporters import write as write_report
from shardscan.reporters._common import decision_line
from shardscan.ruleset import Ruleset
from shardscan.stats import format_stats


@dataclass(frozen=True, slots=True)
class ScanRun:
    """A finished scan and the worker processes it ran with."""

    report: Report
    jobs: int


@contextmanager
def _progress_bar() -> Iterator[dict[str, Any]]:
    """A progress bar on standard error when it is a terminal: the scan's on_start/on_shard hooks."""
    if not sys.stderr.isatty():
        yield {}
        return
    # Start-up: rich costs tens of milliseconds and is needed on a terminal only (see shardscan.cli).
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(
        TextColumn("scanning"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=Console(file=sys.stderr), transient=True,
    )
    task = progress.add_task("scan", total=None)
    with progress:
        yield {"on_start": lambda n: progress.update(task, total=n), "on_shard": lambda _r: progress.advance(task)}


def run_scan(
    paths: list[str],
    ruleset: Ruleset,
    setup: ScanSetup,
    allowlist: Allowlist | None = None,
    *,
    cache: Path | None = None,
    only: Callable[[ShardRef], bool] | None = None,
    exclude: list[str] | None = None,
    ignore_patterns: list[str] | None = None,
    engine: str = "local",
    ray_address: str | None = None,
    progress: bool = True,
) -> ScanRun:
    """Scan ``paths`` with ``setup`` (with a progress bar on a terminal unless ``progress`` is off)."""
    # Start-up: the scan machinery (api, executor) loads only when a command scans (see shardscan.cli).
    from shardscan.api import scan as api_scan
    from shardscan.executor import default_jobs

    jobs = setup.jobs or default_jobs()
    with _progress_bar() if progress else _no_progress() as hooks:
        report = api_scan(
            paths, ruleset=ruleset, policy=setup.policy, options=setup.options, allowlist=allowlist, cache=cache,
            only=only, jobs=jobs, exclude=exclude or (), ignore_patterns=ignore_patterns or (), engine=engine,
            ray_address=ray_address, **hooks,
        )
    return ScanRun(report, jobs)


@contextmanager
def _no_progress() -> Iterator[dict[str, Any]]:
    yield {}


def scan(
    paths: Annotated[
        list[str],
        typer.Argument(
            help="Shard files, folders (recursive), globs or URLs (s3://, gs://, hf://, any fsspec protocol)."
        ),
    ],
    fmt: FormatOpt = [],  # noqa: B006 (typer needs a literal default)
    output: OutputOpt = None,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    strict: StrictOpt = False,
    now: NowOpt = None,
    quiet: QuietOpt = False,
    skip_unreadable: SkipOpt = False,
    regex_timeout: TimeoutOpt = DEFAULT_FLAGS.regex_timeout,
    max_decode_depth: DepthOpt = DEFAULT_FLAGS.max_decode_depth,
    max_decode_bytes: DecodeBytesOpt = DEFAULT_FLAGS.max_decode_bytes,
    memory_budget: MemoryOpt = DEFAULT_FLAGS.memory_budget,
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
        typer.Option(
            "--show-secrets", help="Print secrets in plain text for local manual review (refused when CI is set)."
        ),
    ] = False,
    engine: EngineOpt = "local",
    ray_address: RayAddressOpt = None,
    mkdir: MkdirOpt = False,
    exclude: ExcludeOpt = [],  # noqa: B006
    max_findings_per_cell: CellFindingsOpt = DEFAULT_FLAGS.max_findings_per_cell,
    max_findings_per_shard: ShardFindingsOpt = DEFAULT_FLAGS.max_findings_per_shard,
    allow_truncated_findings: AllowTruncatedOpt = False,
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Scan shards and exit 0 (clean), 1 (blocking findings), 2 (usage error) or 3 (incomplete scan).

    Reads Parquet, JSON Lines (.jsonl, .ndjson; .gz, .zst, .bz2), .json (JSON Lines or one
    document), Arrow IPC (.arrow, .feather), CSV/TSV, tar archives and any text file; other files
    are sniffed by content, and a binary file that is none of these is listed as not scanned.
    """
    outputs = parse_outputs(fmt, output)
    if show_secrets:
        if os.environ.get("CI"):
            raise ConfigError("--show-secrets refuses to run when CI is set: CI logs are kept and shared")
        typer.secho(
            "WARNING: --show-secrets prints full secrets to the terminal. Do not paste, log or share this output.",
            err=True, fg="red", bold=True,
        )
        no_cache = True  # the cache holds only what reports hold; revealed values never go there
    ruleset = load_rules(rules, disable)
    setup = scan_setup(ScanFlags(
        now=now, regex_timeout=regex_timeout, max_decode_depth=max_decode_depth, max_decode_bytes=max_decode_bytes,
        memory_budget=memory_budget, max_findings_per_cell=max_findings_per_cell,
        max_findings_per_shard=max_findings_per_shard, known_secrets=tuple(known_secrets), show_secrets=show_secrets,
        jobs=jobs, strict=strict, skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale,
        allow_truncated_findings=allow_truncated_findings,
    ))
    accepted = load_allowlist_option(allowlist, no_allowlist, ruleset)
    only = changed_filter(changed_since)
    if ray_address is not None and engine != "ray":
        raise ConfigError("--ray-address needs --engine ray")
    run = run_scan(paths, ruleset, setup, accepted, cache=cache_location(no_cache, cache_dir), only=only,
                   exclude=exclude, engine=engine, ray_address=ray_address)
    emit(run.report, outputs, quiet, mkdir)
    if stats:
        typer.echo(format_stats(run.report, run.jobs), err=True, nl=False)
    raise typer.Exit(run.report.decision.exit_code)


def hook(
    files: Annotated[
        list[str], typer.Argument(help="Shard files to check (pre-commit passes the staged ones).")
    ] = [],  # noqa: B006
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    strict: StrictOpt = False,
    now: NowOpt = None,
    allowlist: Annotated[
        Path | None,
        typer.Option(
            "--allowlist",
            help="Reviewed allowlist file (default: allowlist.yaml at the repository root, if any).",
        ),
    ] = None,
    no_allowlist: NoAllowlistOpt = False,
    no_cache: NoCacheOpt = False,
    cache_dir: Annotated[
        Path | None,
        typer.Option(
            "--cache-dir",
            help="Result cache folder (default: $SHARDSCAN_CACHE_DIR, else .shardscan-cache/ at the repository root).",
        ),
    ] = None,
    memory_budget: MemoryOpt = DEFAULT_FLAGS.memory_budget,
    exclude: ExcludeOpt = [],  # noqa: B006
) -> None:
    """Pre-commit hook: scan the given files, print a compact report, fail on findings or unreadable files.

    The files are read from the working tree (pre-commit stashes unstaged changes first); a Git LFS
    pointer is unreadable (its content is not present), never clean. The allowlist, the globs of
    .shardscanignore and the result cache are the repository's (see --allowlist and --cache-dir).
    """
    # Checked before anything else, also when no file is staged: a bad flag in the hook's
    # configuration fails its first run, not the first commit of a shard.
    setup = scan_setup(ScanFlags(now=now, memory_budget=memory_budget, strict=strict, jobs=1))
    if not files:
        raise typer.Exit(0)
    root = repo_root() or Path.cwd()
    ruleset = load_rules(rules, disable)
    accepted = load_allowlist_option(allowlist, no_allowlist, ruleset, default=root / DEFAULT_ALLOWLIST)
    cache = cache_location(no_cache, cache_dir, root / CACHE_DIR_NAME)
    run = run_scan(files, ruleset, setup, accepted, cache=cache, exclude=exclude,
                   ignore_patterns=ignore_file_lines(root), progress=False)
    print_text(render(run.report, "compact"))
    raise typer.Exit(run.report.decision.exit_code)


# What a publish pipeline keeps: the machine contract, code-scanning upload, and a page for people.
GATE_FORMATS: tuple[str, ...] = ("json", "sarif", "html")


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
    memory_budget: MemoryOpt = DEFAULT_FLAGS.memory_budget,
    exclude: ExcludeOpt = [],  # noqa: B006
    max_findings_per_cell: CellFindingsOpt = DEFAULT_FLAGS.max_findings_per_cell,
    max_findings_per_shard: ShardFindingsOpt = DEFAULT_FLAGS.max_findings_per_shard,
    allow_truncated_findings: AllowTruncatedOpt = False,
    known_secrets: KnownSecretsOpt = [],  # noqa: B006
) -> None:
    """Publish gate: scan, write JSON, SARIF and HTML reports into --report-dir, exit with the gate's code."""
    ruleset = load_rules(rules, disable)
    setup = scan_setup(ScanFlags(
        now=now, memory_budget=memory_budget, max_findings_per_cell=max_findings_per_cell,
        max_findings_per_shard=max_findings_per_shard, known_secrets=tuple(known_secrets), jobs=jobs, strict=strict,
        skip_unreadable=skip_unreadable, fail_on_stale=fail_on_stale, allow_truncated_findings=allow_truncated_findings,
    ))
    accepted = load_allowlist_option(allowlist, no_allowlist, ruleset)
    run = run_scan(paths, ruleset, setup, accepted, cache=cache_location(no_cache, cache_dir), exclude=exclude)
    written: list[Path] = []
    try:
        for fmt in GATE_FORMATS:
            # The report folder is created (with its parents): naming it is asking for it.
            target = report_dir / f"shardscan-report{EXTENSIONS[fmt]}"
            written.append(write_report(run.report, fmt, target, mkdir=True))
    except OutputError as err:  # named after the option that chose the folder
        raise OutputError(f"--report-dir {report_dir}: {err.target}", err.reason) from None
    print_text(render(run.report, "compact"))
    typer.echo(f"reports: {', '.join(str(p) for p in written)}", err=True)
    raise typer.Exit(run.report.decision.exit_code)


def demo(
    path: Annotated[
        Path | None, typer.Argument(help="Folder to write the demo dataset into (default: a temporary folder).")
    ] = None,
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
    # Start-up: the demo's data generator loads only for this command (see shardscan.cli).
    from shardscan.demo import write_demo_dataset

    outputs = parse_outputs(fmt, output)
    ruleset = load_rules([], [])
    accepted = load_allowlist_option(allowlist, no_allowlist, ruleset, default=shipped_allowlist())
    setup = scan_setup(ScanFlags(now=now, strict=strict, fail_on_stale=fail_on_stale, jobs=1))
    folder = path or Path(tempfile.mkdtemp(prefix="shardscan-demo-"))
    try:
        shards = write_demo_dataset(folder)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else type(exc).__name__
        raise ConfigError(f"{folder}: cannot write the demo dataset: {reason}") from None
    typer.echo(f"demo dataset: {len(shards)} shards in {folder}", err=True)
    run = run_scan([str(folder)], ruleset, setup, accepted)
    emit(run.report, outputs, quiet, mkdir)
    if not quiet:
        typer.echo(_demo_next_steps(run.report, folder), err=True, nl=False)
    raise typer.Exit(run.report.decision.exit_code)


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

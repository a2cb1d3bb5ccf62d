"""The commands that act on findings and rules: redact, allowlist add/check, review, rules list/check.

They parse, call the library (shardscan.remediate, shardscan.review, shardscan.ruleset) and print;
errors are raised and mapped to exit codes in shardscan.cli.app.
"""

# No ``from __future__ import annotations``: Typer evaluates the commands' annotations on every run.
import sys
from pathlib import Path
from typing import Annotated

import typer

from shardscan.allowlist import never_matching
from shardscan.cli.options import (
    AllowlistOpt,
    DisableOpt,
    ExcludeOpt,
    NoAllowlistOpt,
    NowOpt,
    RulesOpt,
    ScanFlags,
    StrictOpt,
    load_allowlist_option,
    load_rules,
    parse_date,
    parse_now,
    scan_setup,
    secret_check,
)
from shardscan.cli.output import Output, emit, print_text
from shardscan.cli.scanning import run_scan
from shardscan.errors import ConfigError, IncompleteInputError, OutputError
from shardscan.ruleset import load_rule_file


def redact(
    paths: Annotated[list[str], typer.Argument(help="Shard files, folders or globs to redact.")],
    out: Annotated[Path | None, typer.Option("--out", help="Folder for the redacted copies.")] = None,
    from_report: Annotated[
        Path | None, typer.Option("--from", help="Take findings from this JSON report instead of scanning.")
    ] = None,
    verdicts: Annotated[
        str | None,
        typer.Option("--verdicts", help="Comma-separated verdicts to redact (default: blocking findings)."),
    ] = None,
    replacement: Annotated[
        str, typer.Option("--replacement", help="Placeholder; {kind}, {rule} and {fp} are filled in.")
    ] = "[REDACTED:{kind}:{fp}]",
    only_changed: Annotated[
        bool, typer.Option("--only-changed", help="Do not copy shards that need no redaction.")
    ] = False,
    in_place: Annotated[
        bool, typer.Option("--in-place", help="Replace the input shards atomically after checking the new file.")
    ] = False,
    include_allowlisted: Annotated[
        bool, typer.Option("--include-allowlisted", help="Also redact allowlisted findings.")
    ] = False,
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
    mkdir: Annotated[
        bool, typer.Option("--mkdir", help="Create missing parent folders of --out and --manifest.")
    ] = False,
    exclude: ExcludeOpt = [],  # noqa: B006
) -> None:
    """Write copies of shards with secret spans replaced, verified by a re-scan; exit 1 if any shard failed.

    Exit codes: 0 every selected secret was replaced and the output re-scanned clean of them;
    1 some shard could not be redacted safely (its output is not written); 2 usage error, or an
    output (a copy, a replaced shard, the manifest) could not be written; 3 an input could not be
    read (nothing is written).
    """
    # Start-up: redaction's writers load only for this command (see shardscan.cli).
    from shardscan import remediate

    manifest_path = remediate.check_outputs(paths, out, manifest, mkdir, in_place)
    chosen_verdicts = remediate.parse_verdicts(verdicts)
    ruleset = load_rules(rules, disable)
    setup = scan_setup(ScanFlags(now=now, strict=strict, jobs=1))
    shards = remediate.redaction_inputs(paths, exclude)
    if from_report is not None:
        chosen = remediate.redactions_from_report_file(from_report, chosen_verdicts, include_allowlisted)
    else:
        accepted = load_allowlist_option(allowlist, no_allowlist, ruleset)
        report = run_scan(paths, ruleset, setup, accepted, exclude=exclude, progress=False).report
        if remediate.incomplete_kinds(i.kind for i in report.issues):
            emit(report, [Output("terminal")], quiet=False)
            raise IncompleteInputError("some shards could not be read or fully scanned; nothing was redacted")
        chosen = remediate.select_findings(report.findings, chosen_verdicts, include_allowlisted)
    outcome = remediate.run_redaction(
        shards, chosen, out, manifest_path, ruleset=ruleset, options=setup.options, template=replacement,
        only_changed=only_changed, in_place=in_place,
    )
    print_text(
        f"redacted {len(outcome.entries)} span(s) in {len(outcome.written)} shard(s); "
        f"copied {len(outcome.copied)} unchanged; manifest {manifest_path}\n"
    )
    for failure in outcome.failed:
        typer.echo(f"shardscan: error: {failure.reason}", err=True)
    if outcome.stopped is not None:
        stopped = outcome.stopped
        raise OutputError(stopped.target, f"{stopped.reason}; stopped there; the shards counted above are complete")
    raise typer.Exit(1 if outcome.failed else 0)


def rules_list(rules: RulesOpt = [], disable: DisableOpt = []) -> None:  # noqa: B006
    """List the active rules: id, kind, severity, keywords and verifiers."""
    ruleset = load_rules(rules, disable)
    for rule in ruleset.rules:
        verify = ",".join(rule.verify) or "-"
        typer.echo(f"{rule.id:40} {rule.kind:12} {rule.severity:9} keywords={','.join(rule.keywords)} verify={verify}")
    typer.echo(f"{len(ruleset.rules)} rules, digest {ruleset.digest}")


def rules_check(
    files: Annotated[
        list[Path], typer.Argument(help="Rule files to check (default: the built-in rules).")
    ] = [],  # noqa: B006
) -> None:
    """Run every example and negative example through the full detector; exit 1 if any fails."""
    # Start-up: the checker loads only for this command (see shardscan.cli).
    from shardscan.ruleset.check import check_ruleset

    ruleset = load_rules(files, [])
    only = {rule.id for f in files for rule in load_rule_file(f)} if files else None
    results = check_ruleset(ruleset, only)
    failures = [r for r in results if not r.ok]
    for failure in failures:
        typer.echo(f"FAIL {ruleset.get(failure.rule_id).source}: {failure.rule_id}: {failure.problem}")
    checked = len({r.rule_id for r in results})
    typer.echo(f"{checked} rules, {len(results)} examples checked, {len(failures)} failed")
    raise typer.Exit(1 if failures else 0)


def allowlist_add(
    report: Annotated[Path, typer.Option("--from", help="A JSON report (shardscan scan --format json).")],
    finding: Annotated[
        int | None, typer.Option("--finding", help="Which finding: its 1-based number in the report.")
    ] = None,
    reason: Annotated[
        str | None,
        typer.Option("--reason", help="Why this finding is not a live credential (required with --finding)."),
    ] = None,
    confirm_live: Annotated[
        bool,
        typer.Option(
            "--confirm-live",
            help="Accept a finding verified as a working credential (needs a reason of six words or more).",
        ),
    ] = False,
    reviewer: Annotated[
        str | None, typer.Option("--reviewer", help="Who reviewed it (default: git user.name).")
    ] = None,
    expires: Annotated[str | None, typer.Option("--expires", help="Last day the entry applies (YYYY-MM-DD).")] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="Also require this rule id or kind.")] = None,
    shard: Annotated[str | None, typer.Option("--shard", help="Also require a shard matching this glob.")] = None,
    column: Annotated[str | None, typer.Option("--column", help="Also require a column matching this glob.")] = None,
    allowlist: Annotated[
        Path, typer.Option("--allowlist", help="The allowlist to append to (created if missing).")
    ] = Path("allowlist.yaml"),
    now: NowOpt = None,
) -> None:
    """Append an entry accepting finding N of a JSON report, keeping the file's comments and order.

    Without --finding, lists the report's findings with their numbers.
    """
    # Start-up: the allowlist editor loads only for the commands that write entries (see shardscan.cli).
    from shardscan import review as reviewing

    findings = reviewing.load_report_findings(report)
    if finding is None:
        # Listing is the first step of the documented workflow: it succeeds.
        for f in findings:
            typer.echo(f"{f.number:4}  {f.status:11} {f.kind:12} {f.preview:14} {f.verdict:10} {f.location}")
        typer.echo(f"add one with: shardscan allowlist add --from {report} --finding N --reason '...'"
                   if findings else f"{report}: the report has no findings")
        raise typer.Exit(0)
    chosen = reviewing.chosen_finding(findings, finding, reason)
    who = reviewing.reviewer_name(reviewer)
    today = parse_now(now).date()
    until = parse_date(expires, "--expires", not_before=today)
    entry = reviewing.NewEntry.for_finding(chosen, reason or "", who, today, until, rule, shard, column)
    added = reviewing.add_finding(allowlist, chosen, entry, today=today, confirm_live=confirm_live,
                                  secret_check=secret_check(load_rules([], [])))
    if not added.new:
        typer.echo(f"finding {finding} is already accepted by entry {added.entry.index} "
                   f"({allowlist}:{added.entry.line})")
        raise typer.Exit(0)
    typer.echo(f"added entry {added.entry.index} to {allowlist} (line {added.entry.line}): {chosen.kind} "
               f"{chosen.preview} at {chosen.location}")


def allowlist_check(
    path: Annotated[
        Path | None, typer.Argument(help="The allowlist file (the same as --allowlist; default: allowlist.yaml).")
    ] = None,
    allowlist: Annotated[
        Path | None, typer.Option("--allowlist", help="The allowlist file, as for the other commands.")
    ] = None,
    rules: RulesOpt = [],  # noqa: B006
    disable: DisableOpt = [],  # noqa: B006
    now: NowOpt = None,
) -> None:
    """Validate an allowlist; exit 2 if invalid, 1 if entries can never match (expired, unknown rule, redundant)."""
    if path is not None and allowlist is not None and path != allowlist:
        raise ConfigError("give the allowlist once: as PATH or as --allowlist")
    path = path or allowlist or Path("allowlist.yaml")
    ruleset = load_rules(rules, disable)
    accepted = load_allowlist_option(path, False, ruleset)
    if accepted is None:  # only when no path is given, and one always is here
        raise ConfigError(f"{path}: no such allowlist file")
    problems = never_matching(accepted, [r.id for r in ruleset.rules] + list(ruleset.kinds), parse_now(now).date())
    for problem in problems:
        typer.echo(problem)
    n = len(accepted.entries)
    typer.echo(f"{path}: {n} entr{'y' if n == 1 else 'ies'}, valid; {len(problems)} can never match")
    raise typer.Exit(1 if problems else 0)


def review(
    report: Annotated[Path, typer.Argument(help="A JSON report (shardscan scan --format json).")],
    allowlist: Annotated[
        Path, typer.Option("--allowlist", help="The allowlist to write (created if missing).")
    ] = Path("allowlist.yaml"),
    reviewer: Annotated[
        str | None, typer.Option("--reviewer", help="Who is reviewing (default: git user.name).")
    ] = None,
    expires: Annotated[
        str | None, typer.Option("--expires", help="Last day accepted entries apply (YYYY-MM-DD).")
    ] = None,
    now: NowOpt = None,
) -> None:
    """Triage the report's new findings one at a time; accepted ones are appended to the allowlist.

    Answers are read line by line from standard input, so it works in a plain terminal and
    when fed by a script: a/accept (then a reason), s/skip, q/quit.
    """
    # Start-up: the allowlist editor loads only for the commands that write entries (see shardscan.cli).
    from shardscan import review as reviewing

    findings = reviewing.load_report_findings(report)
    today = parse_now(now).date()
    until = parse_date(expires, "--expires", not_before=today)
    check = secret_check(load_rules([], []))
    who = reviewer or reviewing.git_user_name()
    if not who:
        typer.echo("reviewer name: ", nl=False)
        who = sys.stdin.readline().strip()
        if not who:
            raise ConfigError("a reviewer name is required (--reviewer NAME)")
    outcome = reviewing.run_review(
        findings, allowlist, reviewer=who, today=today, expires=until,
        stdin=sys.stdin, stdout=sys.stdout, secret_check=check,
    )
    typer.echo(f"review: {len(outcome.accepted)} accepted, {outcome.skipped} skipped, {outcome.already} already "
               f"accepted, {outcome.remaining} not reviewed")

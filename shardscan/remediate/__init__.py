"""Remediation: write copies of shards with secret spans replaced, keeping everything else intact.

The engine knows exactly which characters of which cell hold a secret (the encoded span, for a
secret found inside JSON escapes or base64). Redaction replaces those spans in the original cell
text and rewrites only the affected columns of the affected row groups; schema, row order, row
count, row-group layout and file metadata are kept. The output is re-read and re-scanned before
it is accepted, and a manifest records what changed without ever holding a secret.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa

from shardscan.atomic import atomic_path, is_output_failure, reason, remove_stale_temps, temp_path
from shardscan.engine import Scanner, ScanOptions
from shardscan.errors import ConfigError, IncompleteInputError, OutputError
from shardscan.model import Finding, IssueKind, Status, Verdict
from shardscan.reader import ShardRef, discover_files
from shardscan.remediate.manifest import (
    MANIFEST_NAME,
    MANIFEST_VERSION,
    append_manifest,
    check_outputs,
    default_manifest,
    load_manifest,
    write_manifest,
)
from shardscan.remediate.rewrite import (
    DEFAULT_REPLACEMENT,
    ManifestEntry,
    Redaction,
    RedactionError,
    apply_spans,
    parse_column_path,
    redact_jsonl_shard,
    redact_shard,
    replacement_text,
    stream_compression,
)
from shardscan.ruleset import Ruleset

# The writers (rewrite) and the manifest live in submodules; these names are the package's API.
__all__ = [
    "DEFAULT_REPLACEMENT", "MANIFEST_NAME", "MANIFEST_VERSION", "ManifestEntry", "RedactOutcome", "Redaction",
    "RedactionError", "ShardFailure", "append_manifest", "apply_spans", "check_outputs", "copy_shard",
    "default_manifest", "load_manifest", "output_path", "parse_column_path", "parse_verdicts", "readable_copy",
    "redact", "redact_jsonl_shard", "redact_shard", "redaction_inputs", "redactions_from_report",
    "redactions_from_report_file", "replace_atomically", "replacement_text", "rescanner", "run_redaction",
    "select_findings", "stream_compression", "write_manifest",
]


def select_findings(
    findings: Iterable[Finding],
    verdicts: set[Verdict] | None = None,
    include_allowlisted: bool = False,
) -> list[Redaction]:
    """The findings to redact: blocking ones by default, or those with the given verdicts.

    Allowlisted findings are reviewed and kept on purpose, so they are left alone unless asked.
    """
    chosen: list[Redaction] = []
    for f in findings:
        if f.status == Status.ALLOWLISTED and not include_allowlisted:
            continue
        wanted = f.verdict in verdicts if verdicts is not None else (f.blocking or f.status == Status.ALLOWLISTED)
        if wanted:
            loc = f.location
            chosen.append(Redaction(loc.shard, loc.row, loc.column, f.rule_id, f.kind, f.fingerprint, f.start, f.end))
    return chosen


def output_path(out_dir: Path, shard: ShardRef, inputs: frozenset[str] = frozenset()) -> Path:
    """Where a shard's copy goes under ``out_dir``: its display name as a path inside ``out_dir``.

    A shard given by an absolute path (or with ``..``) is displayed that way; joined as it is, it
    would name the source itself, which writing the copy would overwrite. Its root and ``..``
    parts are dropped instead. A target that is the source, or any other input (``inputs``: real
    paths; ``--out`` inside the scanned folder can name one), is refused: redaction never writes
    over, or removes, a file it was given.
    """
    parts = [part for part in PurePosixPath(shard.display.replace("\\", "/")).parts if part not in ("/", ".", "..")]
    target = out_dir.joinpath(*(part.replace(":", "_") for part in parts)) if parts else out_dir / "shard"
    if shard.filesystem is None and target.exists() and os.path.samefile(target, shard.path):
        raise RedactionError(f"{shard.display}: the output would overwrite the shard itself (use --in-place for that)")
    if os.path.realpath(target) in inputs:
        raise RedactionError(f"{shard.display}: the output would overwrite another input shard; choose an --out "
                             "folder outside the inputs")
    return target


def copy_shard(source: ShardRef, destination: Path) -> None:
    """Copy an unaffected shard byte for byte (through a temporary name, with the source's mode)."""
    with atomic_path(destination, mkdir=True, like=Path(source.path)) as temp:
        shutil.copyfile(source.path, temp)


def replace_atomically(source_path: Path, write: Callable[[Path], None], check: Callable[[Path], None]) -> None:
    """Write a new version of ``source_path`` to a temporary file beside it, check it, then rename.

    The temporary name ends in :data:`shardscan.atomic.TEMP_SUFFIX`, which discovery never reads
    as data, so a run killed before the rename leaves nothing a later scan or gate would count;
    the next run that writes the shard removes it. The new file gets the shard's mode, owner and
    group. If writing or checking fails, the original is intact and the temporary file is removed.
    A shard that is a symlink is replaced by the redacted file; the file it pointed to (which other
    links, such as a Hugging Face cache's snapshots, may share) is left as it was.
    """
    with atomic_path(source_path, like=source_path, owner=True, through_links=False) as temp:
        write(temp)
        check(temp)


@contextmanager
def readable_copy(written: Path, original_name: str) -> Iterator[Path]:
    """A path the reader reads ``written`` from as it would read a file named ``original_name``.

    The reader picks a JSON Lines shard's decompression from its name, and a temporary name ends
    in the reserved suffix: a compressed one is decompressed into a second temporary file (also
    with the reserved suffix) for the check, which also proves it decompresses completely.
    """
    compression = stream_compression(original_name)
    if compression is None:
        yield written
        return
    plain = temp_path(written.with_name(Path(original_name).name))
    try:
        with pa.input_stream(str(written), compression=compression) as source, open(plain, "wb") as sink:
            while chunk := source.read(1 << 20):
                sink.write(chunk)
        yield plain
    finally:
        plain.unlink(missing_ok=True)


# ---- orchestration ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ShardFailure:
    """A shard that could not be redacted safely (its output is not written), and why (never the data)."""

    shard: str
    reason: str


@dataclass(frozen=True, slots=True)
class RedactOutcome:
    """What ``redact`` did: manifest entries, shards written, copied and failed (with reasons).

    ``stopped`` is set when an output could not be written (a full disk, a read-only folder): the
    run stopped there, and what it lists before that is complete.
    """

    entries: tuple[ManifestEntry, ...]
    written: tuple[str, ...]
    copied: tuple[str, ...]
    failed: tuple[ShardFailure, ...]
    stopped: OutputError | None = None


Writer = Callable[[ShardRef, Path, list[Redaction], str], list[ManifestEntry]]
_WRITERS: dict[str, Writer] = {"parquet": redact_shard, "jsonl": redact_jsonl_shard}


def incomplete_kinds(kinds: Iterable[str]) -> list[str]:
    """The issue kinds that leave a scan unfit to redact from: data not read (``unreadable``), not
    fully scanned (``limit``) or findings aggregated beyond a cap (``truncated``: an aggregate
    names one occurrence of many). Files of formats shardscan does not read (``not-scanned``) are
    not rewritten by redaction either, so they do not stop it."""
    return sorted({k for k in kinds if k != IssueKind.NOT_SCANNED})


def redactions_from_report(
    data: dict[str, Any], verdicts: set[Verdict] | None, include_allowlisted: bool
) -> list[Redaction]:
    """Select redactions from a JSON report (``shardscan scan --format json``); IncompleteInputError
    when the report's scan was incomplete (see :func:`incomplete_kinds`)."""
    if kinds := incomplete_kinds(str(e["kind"]) for e in data.get("errors", [])):
        raise IncompleteInputError(f"the report lists {', '.join(kinds)} errors: its findings are not all the "
                                   "secrets of those shards; nothing was redacted (scan again and fix them first)")
    chosen = []
    names = {str(v) for v in verdicts} if verdicts is not None else set()
    for f in data.get("findings", []):
        allowlisted = f.get("status") == str(Status.ALLOWLISTED)
        if allowlisted and not include_allowlisted:
            continue
        wanted = f.get("verdict") in names if verdicts is not None else (f.get("blocking") or allowlisted)
        if wanted:
            chosen.append(
                Redaction(f["shard"], int(f["row"]), f["column"], f["rule_id"], f["kind"], f["fingerprint"],
                          int(f["start"]), int(f["end"]))
            )
    return chosen


def redactions_from_report_file(
    path: Path, verdicts: set[Verdict] | None, include_allowlisted: bool
) -> list[Redaction]:
    """Select redactions from the JSON report at ``path`` (``--from``); ConfigError naming it when
    it cannot be read or is not a shardscan JSON report."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--from {path}: cannot read report ({type(exc).__name__})") from None
    try:
        if not isinstance(data, dict):
            raise TypeError("not an object")
        return redactions_from_report(data, verdicts, include_allowlisted)
    except (AttributeError, KeyError, TypeError, ValueError):
        raise ConfigError(f"--from {path}: not a shardscan JSON report (write one with --format json)") from None


def parse_verdicts(text: str | None) -> set[Verdict] | None:
    """``--verdicts``: comma-separated verdict names; None (the blocking findings) when not given."""
    if not text:
        return None
    try:
        return {Verdict(v.strip()) for v in text.split(",") if v.strip()}
    except ValueError:
        known = ", ".join(v.value for v in Verdict)
        raise ConfigError(f"--verdicts: unknown verdict in {text!r} (known: {known})") from None


def redaction_inputs(paths: list[str], exclude: Iterable[str] = ()) -> list[ShardRef]:
    """The shards ``redact`` reads: the same discovery a scan of ``paths`` runs, so each finding's
    shard name is one of them. An input that names nothing is an IncompleteInputError (nothing is
    written)."""
    found = discover_files(paths, list(exclude))
    if found.unresolved:
        raise IncompleteInputError("; ".join(f"{m.path}: {m.reason}" for m in found.unresolved))
    return list(found.shards)


def rescanner(ruleset: Ruleset, options: ScanOptions) -> Callable[[ShardRef], set[str]]:
    """The check of a written shard: the fingerprints a full scan of it finds. A shard that cannot
    be fully re-scanned fails its redaction (it is not certified clean of them)."""
    scanner = Scanner(ruleset, options)

    def rescan(ref: ShardRef) -> set[str]:
        result = scanner.scan_shard(ref)
        if result.issues:
            raise RedactionError(f"{ref.display}: the redacted copy could not be fully re-scanned")
        return {f.fingerprint for f in result.findings}

    return rescan


def run_redaction(
    shards: list[ShardRef],
    redactions: list[Redaction],
    out_dir: Path | None,
    manifest: Path,
    *,
    ruleset: Ruleset,
    options: ScanOptions,
    template: str = DEFAULT_REPLACEMENT,
    only_changed: bool = False,
    in_place: bool = False,
) -> RedactOutcome:
    """Redact (see :func:`redact`), re-scanning each output with ``ruleset``, then append the run to
    the manifest, also when the run stopped: the shards it lists are complete.

    A manifest that cannot be written raises (OutputError or ConfigError) saying how many shards
    were redacted first.
    """
    outcome = redact(shards, redactions, out_dir, rescan=rescanner(ruleset, options), template=template,
                     only_changed=only_changed, in_place=in_place)
    run = {"at": options.now.isoformat(), "mode": "in-place" if in_place else "copy",
           "out": None if out_dir is None else str(out_dir)}
    done = f" (redacted {len(outcome.written)} shard(s) first)"
    try:
        append_manifest(manifest, list(outcome.entries), run)
    except OutputError as err:
        raise OutputError(err.target, err.reason + done) from None
    except ConfigError as err:
        raise ConfigError(f"{err}{done}") from None
    return outcome


def redact(
    shards: list[ShardRef],
    redactions: list[Redaction],
    out_dir: Path | None,
    *,
    rescan: Callable[[ShardRef], set[str]],
    template: str = DEFAULT_REPLACEMENT,
    only_changed: bool = False,
    in_place: bool = False,
) -> RedactOutcome:
    """Write redacted copies (or replace in place, atomically) and verify each by re-scanning.

    ``rescan`` returns the fingerprints found in a written shard; a shard whose output still holds
    a fingerprint that was to be redacted fails, and (in place) the original is left untouched.
    Every file is written under a temporary name (see :mod:`shardscan.atomic`) and renamed once
    complete and checked; temporary files that killed runs left beside the files written are
    removed first. An output that cannot be written stops the run (``stopped``).
    """
    if not in_place and out_dir is None:
        raise ConfigError("give exactly one of --out DIR or --in-place")
    by_shard: dict[str, list[Redaction]] = defaultdict(list)
    for r in redactions:
        by_shard[r.shard].append(r)
    inputs = frozenset(os.path.realpath(s.path) for s in shards if s.filesystem is None)
    entries: list[ManifestEntry] = []
    written: list[str] = []
    copied: list[str] = []
    failed: list[ShardFailure] = []

    def outcome(stopped: OutputError | None = None) -> RedactOutcome:
        return RedactOutcome(tuple(entries), tuple(written), tuple(copied), tuple(failed), stopped)

    if in_place:
        try:
            for shard in shards:
                if shard.filesystem is None:
                    remove_stale_temps(Path(shard.path))
        except OutputError as err:
            return outcome(err)
    for shard in shards:
        items = by_shard.get(shard.display, [])
        if not items:
            if not in_place and not only_changed and out_dir is not None:
                target = out_dir
                try:
                    target = output_path(out_dir, shard, inputs)
                    copy_shard(shard, target)
                except RedactionError as err:
                    failed.append(ShardFailure(shard.display, str(err)))
                    continue
                except OutputError as err:
                    return outcome(err)
                except OSError as exc:
                    if is_output_failure(exc):
                        return outcome(OutputError(str(target), reason(exc)))
                    failed.append(ShardFailure(shard.display, f"{shard.display}: copy failed ({type(exc).__name__})"))
                    continue
                copied.append(shard.display)
            continue
        wanted = {r.fingerprint for r in items}

        def check(path: Path, shard: ShardRef = shard, wanted: set[str] = wanted) -> None:
            with readable_copy(path, shard.path) as readable:
                left = rescan(ShardRef(display=shard.display, path=str(readable), format=shard.format)) & wanted
            if left:
                raise RedactionError(f"{shard.display}: {len(left)} secret(s) still present after redaction")

        if shard.filesystem is not None or shard.format not in _WRITERS:
            message = f"{shard.display}: redaction writes local Parquet and JSON Lines (.jsonl, .ndjson) shards only"
            failed.append(ShardFailure(shard.display, message))
            continue
        result: list[ManifestEntry] = []

        def write(
            path: Path, shard: ShardRef = shard, items: list[Redaction] = items,
            writer: Writer = _WRITERS[shard.format], result: list[ManifestEntry] = result,
        ) -> None:
            result.extend(writer(shard, path, items, template))

        target = Path(shard.path)
        try:
            if in_place or out_dir is None:  # (one of the two is given: checked above)
                replace_atomically(target, write, check)
            else:
                target = output_path(out_dir, shard, inputs)
                # Folders below --out mirror the inputs' layout: they are part of the asked-for output.
                with atomic_path(target, mkdir=True, like=Path(shard.path)) as temp:
                    write(temp)
                    check(temp)
        except RedactionError as err:
            failed.append(ShardFailure(shard.display, str(err)))
            continue
        except OutputError as err:
            return outcome(err)
        except Exception as exc:  # a pyarrow failure must not escape with data in its message
            if is_output_failure(exc):
                return outcome(OutputError(str(target), reason(exc)))
            failed.append(ShardFailure(shard.display, f"{shard.display}: redaction failed ({type(exc).__name__})"))
            continue
        entries += result
        written.append(shard.display)
    known = {s.display for s in shards}
    for name in sorted(set(by_shard) - known):
        failed.append(ShardFailure(name, f"{name}: shard named in the findings was not among the inputs"))
    return outcome()

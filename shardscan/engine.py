"""The scan engine: read → prefilter → decode → detect → verify, one row group at a time."""

from __future__ import annotations

import copy
import hashlib
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from shardscan import arrow_compute as compute
from shardscan import decoders, hit_windows, hyperscan_matcher
from shardscan.decoders import DecodeLimits
from shardscan.decoders.shell_prompt import NAME as SHELL_PROMPT
from shardscan.decoders.terminal_wrap import NAME as TERMINAL_WRAP
from shardscan.detect import RegexTimeout, detect
from shardscan.errors import ShardReadError, describe_exception
from shardscan.known_secrets import KIND as KNOWN_KIND
from shardscan.known_secrets import RULE_ID as KNOWN_RULE
from shardscan.known_secrets import KnownSecret, KnownSecretMatcher
from shardscan.model import (
    Candidate,
    CellLocation,
    Finding,
    IssueKind,
    ScanIssue,
    ScanStats,
    Severity,
    ShardResult,
    Verdict,
    Verification,
)
from shardscan.prefilter import Prefilter, RuleGate, value_offsets
from shardscan.reader import METADATA_ROW, RowGroupBatch, ShardRef, batch_from_table
from shardscan.reader.formats import open_shard
from shardscan.reader.parquet import (
    footer_integrity,
    iter_row_group_slices,
    metadata_leaves,
    row_group_offsets,
    schema_metadata_leaves,
    string_bytes,
)
from shardscan.redaction import context_snippet, fingerprint, preview, span_reach
from shardscan.relax import relax
from shardscan.ruleset import Rule, Ruleset
from shardscan.severity import derive_severity
from shardscan.sizes import format_size
from shardscan.verifiers import ALWAYS_FIRST, VERIFIERS, VerifyContext, verify_candidate

DEFAULT_MEMORY_BUDGET = 2 * 1024**3
# Peak memory of scanning a slice, per byte of its strings: the decompressed Parquet page, the
# Arrow array, the prefilter's copy, the cell as Python text and the rule gate's copy of it. A
# 200 MB cell measured about 4x above the interpreter's own memory; 6 leaves room for rows larger
# than the footer's average.
MEMORY_PER_STRING_BYTE = 6
# Slices larger than this buy no speed (per-slice costs are milliseconds) and only cost memory:
# with 16 MiB slices a worker scanning 100 MB row groups peaks at about 350 MiB.
MAX_SLICE_BYTES = 16 * 1024 * 1024
# Findings listed one by one per cell and per shard (``--max-findings-per-cell``/``-shard``).
# Beyond, findings of one shape are aggregated into one finding with a count and the scan reports
# a "truncated" issue. A real cell holds a handful of secrets and a real shard a few hundred
# findings; a flood of look-alikes (a hostile cell of a million ``ghp_…``) would otherwise cost a
# finding object, a context snippet and a report entry each (4.8 GB and 239 s for a million).
DEFAULT_MAX_FINDINGS_PER_CELL = 1000
DEFAULT_MAX_FINDINGS_PER_SHARD = 10000
# Memory a listed finding takes, with its share of the rendered reports (a JSON entry is about
# 800 bytes): findings may take at most 1/FINDINGS_BUDGET_SHARE of --memory-budget per shard,
# whatever --max-findings-per-shard says (see ``Scanner.shard_finding_cap``).
MEMORY_PER_FINDING = 4096
FINDINGS_BUDGET_SHARE = 8
# (A budget sized for a test's few rows still lists this many findings: about 4 MB.)
MIN_FINDINGS_BY_MEMORY = 1000
# In a cell over its cap, the candidates that pass their rule's own structural check (a checksum)
# are fully verified up to this many times the cap; the rest are reported as unverified (blocking).
VERIFY_FACTOR = 4
# Distinct values whose structural check is memoised per cell (see ``_Verifications``).
STRUCTURE_MEMO = 4096
# Messages of issues of kind "truncated" start so (``scan_text`` reports them with its limits).
TRUNCATED_PREFIX = "findings: "


@dataclass(frozen=True, slots=True)
class ScanOptions:
    """Every knob of a scan, passed explicitly (no global settings)."""

    now: datetime = field(default_factory=lambda: datetime.now(UTC))
    regex_timeout: float = 2.0
    decode: DecodeLimits = field(default_factory=DecodeLimits)
    # Cells longer than this are scanned in overlapping windows, so that no secret is lost at a
    # window boundary as long as it is shorter than the overlap.
    window_chars: int = 4 * 1024 * 1024
    window_overlap: int = 64 * 1024
    # A candidate cell longer than this is scanned in windows around the prefilter's hits
    # (``shardscan.hit_windows``) instead of whole; None: always whole (the same findings, slower).
    hit_windows_above: int | None = 4 * 1024
    # Attach plaintext to findings for local manual review (``--show-secrets``); never in CI.
    reveal_secrets: bool = False
    # Bytes the scan's data may take, shared by all worker processes: it sets how many rows of a
    # row group are read at once, and a row group whose single rows cannot fit is not read (a
    # limit hit). See ``Scanner.slice_bytes`` and ``Scanner.over_budget``.
    memory_budget: int = DEFAULT_MEMORY_BUDGET
    # Worker processes sharing ``memory_budget`` (set by the executor; does not change results).
    workers: int = 1
    # Whether pyarrow may decode a row group's columns on its own thread pool. The executor turns
    # it off when every requested core already runs a worker (``--jobs 1`` means one core), and
    # leaves it on when there are fewer work items than requested cores (does not change results).
    read_threads: bool = True
    # Folder of sealed compiled pattern databases (Hyperscan) to reuse, or None to compile them in
    # memory and read no file (the library default, and ``--no-cache``). Does not change results.
    pattern_cache: Path | None = None
    # Caps on findings listed one by one (see DEFAULT_MAX_FINDINGS_PER_CELL).
    max_findings_per_cell: int = DEFAULT_MAX_FINDINGS_PER_CELL
    max_findings_per_shard: int = DEFAULT_MAX_FINDINGS_PER_SHARD
    # Your own secrets (``--known-secrets``): every occurrence of each is a blocking finding. The
    # values are left out of repr, so the result cache is keyed on their fingerprints only.
    known_secrets: tuple[KnownSecret, ...] = ()

    def __post_init__(self) -> None:
        # A clock without a timezone is taken as UTC: expiry claims are UTC instants, and comparing
        # a naive clock with them would fail every time check.
        if self.now.tzinfo is None:
            object.__setattr__(self, "now", self.now.replace(tzinfo=UTC))


@dataclass(frozen=True, slots=True)
class CellFinding:
    """A finding of one cell text, before it is attached to the (possibly many) cells holding that text."""

    rule_id: str
    kind: str
    severity: Severity
    start: int
    end: int
    fingerprint: str
    preview: str
    verdict: object
    detail: str
    encoding: tuple[str, ...]
    context: str
    clock: bool = False  # the verdict was decided by reading the scan clock
    revealed: str | None = field(default=None, repr=False, compare=False)
    count: int = 1  # findings of one shape aggregated into this one (see ``Finding.count``)


class _WatchedContext(VerifyContext):
    """A VerifyContext that records whether a verifier read the clock.

    The cache needs to know which verdicts depend on the time of the scan (an expiry) without
    every verifier having to declare it. ``dataclasses.replace`` reads ``now`` from the original,
    so a verifier deriving a new context is counted too (conservatively).
    """

    __slots__ = ("_reads",)

    def __init__(self, now: datetime, kind: str, reads: list[bool] | None = None, text: str = "") -> None:
        VerifyContext.now.__set__(self, now)  # type: ignore[attr-defined]
        VerifyContext.kind.__set__(self, kind)  # type: ignore[attr-defined]
        VerifyContext.text.__set__(self, text)  # type: ignore[attr-defined]
        object.__setattr__(self, "_reads", reads if reads is not None else [])

    @property  # type: ignore[override]
    def now(self) -> datetime:
        self._reads.append(True)
        return VerifyContext.now.__get__(self)  # type: ignore[attr-defined]


@dataclass(slots=True)
class _Timer:
    totals: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.totals[stage] += now - since
        return now


class Scanner:
    """A rule set compiled for scanning; reusable across shards and safe to send to worker processes."""

    def __init__(self, ruleset: Ruleset, options: ScanOptions | None = None, *, text_only: bool = False) -> None:
        """``text_only``: a scanner for :meth:`scan_text` alone (a check of short texts such as an
        allowlist's reasons): the prefilter of whole columns, its nested keyword forms and the
        compiled databases are not built up front (they take seconds without a pattern cache)."""
        self.ruleset = ruleset
        self.options = options or ScanOptions()
        self.keywords = decoders.KeywordSet.build(ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords)
        self._known_keywords = frozenset(self.keywords.plain)  # what KeywordSet.present looks for
        # With decoding off, encoded keyword forms could not lead to a finding: keep them out of
        # the prefilter so that --max-decode-depth 0 is the plain, fastest scan.
        decoding = self.options.decode.max_depth > 0
        # Rules with ``prefilter`` patterns select cells by those instead of by their keywords.
        selecting = ruleset.prefilter_keywords
        encoded = self.keywords.encoded if selecting == ruleset.keywords else tuple(
            decoders.encoded_keyword_patterns(selecting, ruleset.token_keywords, ruleset.context_keywords)
        )
        self.prefilter = Prefilter.from_keywords(
            selecting, (encoded if decoding else ()) + ruleset.prefilter_patterns, ruleset.token_keywords,
            # The forms of keywords nested deeper than one encoding, up to one level beyond the
            # decoding depth: a keyword nested beyond it must select its cell, to be reported as a
            # limit hit instead of passing unseen.
            decoders.deep_keyword_patterns(
                selecting, ruleset.token_keywords, ruleset.context_keywords, self.options.decode.max_depth + 1,
                cache_dir=self.options.pattern_cache,
            ) if decoding and hyperscan_matcher.enabled() and not text_only else (),
            cache_dir=self.options.pattern_cache,
        )
        # Known secrets select their cells in RE2 only: a compiled Hyperscan database is cached on
        # disk, and one holding the values' literal forms would put them there.
        self.known = KnownSecretMatcher.build(self.options.known_secrets)
        self.known_prefilter = Prefilter("|".join(self.known.prefilter_patterns())) if self.known else None
        if not text_only:
            self.prefilter.warm()  # compiled (or loaded) once here, inherited by forked workers
        self.rules: tuple[Rule, ...] = ruleset.rules
        # Vectorised per-rule gates on a cell's raw text: rules whose relaxed pattern cannot match
        # are not run on it (exact: the relaxed pattern matches a superset of the rule's texts).
        self.gate = RuleGate.from_patterns(
            [relax(rule.pattern_source) for rule in self.rules],
            [relax(rule.pattern_source, open_ranges=True) for rule in self.rules],
            cache_dir=self.options.pattern_cache,
        )
        if not text_only:
            self.gate.warm()

    # ---- whole shards -------------------------------------------------------------------

    def scan_shard(self, shard: ShardRef) -> ShardResult:
        """Scan one shard of any input format (row groups and file metadata, or a whole stream), in this process.

        Never raises for bad data: unreadable parts become issues, and the findings of readable
        row groups are kept. (The same work items as a parallel scan; see ``shardscan.executor``.)
        """
        from shardscan.executor import scan_shards

        return scan_shards([shard], self, jobs=1)[0]

    def scan_footer(
        self, shard: str, parquet: pq.ParquetFile, timer: _Timer | None = None
    ) -> tuple[list[Finding], list[ScanIssue], ScanStats]:
        """Scan a shard's file-level key/value metadata and string statistics (reported at row -1),
        and check that its footer accounts for every byte of the file (problems are issues)."""
        checked = footer_integrity(shard, parquet)
        issues = list(checked.issues)
        statistics = checked.statistics
        findings: list[Finding] = []
        stats = ScanStats()
        meta = metadata_leaves(parquet)
        if meta:
            findings, more, stats = self.scan_batch(RowGroupBatch(-1, 0, 0, meta), shard, timer)
            issues += more
        if statistics:
            # Statistics repeat values of data cells: they are scanned, but not counted as cells.
            f, more, s = self.scan_batch(RowGroupBatch(-1, 0, 0, statistics), shard, timer)
            findings += f
            issues += more
            stats += ScanStats(clock_findings=s.clock_findings)
        return findings, issues, stats

    def for_workers(self, workers: int, *, read_threads: bool) -> Scanner:
        """This scanner for one of ``workers`` processes sharing the memory budget, reading with
        pyarrow's thread pool only if ``read_threads`` (same results)."""
        workers = max(1, workers)
        if (workers, read_threads) == (self.options.workers, self.options.read_threads):
            return self
        clone = copy.copy(self)
        clone.options = replace(self.options, workers=workers, read_threads=read_threads)
        return clone

    def shard_finding_cap(self) -> int:
        """Findings listed one by one per shard: ``max_findings_per_shard``, within the memory budget."""
        by_memory = max(MIN_FINDINGS_BY_MEMORY, self.options.memory_budget // (MEMORY_PER_FINDING * FINDINGS_BUDGET_SHARE))
        return max(1, min(self.options.max_findings_per_shard, by_memory))

    def cell_finding_cap(self) -> int:
        """Findings listed one by one per cell (never more than per shard)."""
        return max(1, min(self.options.max_findings_per_cell, self.shard_finding_cap()))

    def slice_bytes(self) -> int:
        """String bytes read at once from a row group: this worker's share of the budget, bounded."""
        share = self.options.memory_budget // max(1, self.options.workers)
        return max(1, min(MAX_SLICE_BYTES, share // MEMORY_PER_STRING_BYTE))

    def over_budget(self, shard: str, parquet: pq.ParquetFile, index: int) -> ScanIssue | None:
        """The limit issue of a row group whose rows, read one at a time, would not fit the budget.

        Judged from the footer against the whole budget (not a worker's share), so the outcome
        does not depend on the number of workers.
        """
        rows = parquet.metadata.row_group(index).num_rows
        per_row = string_bytes(parquet, index) / max(1, rows)
        if per_row * MEMORY_PER_STRING_BYTE <= self.options.memory_budget:
            return None
        message = (
            f"row group {index} not read: {rows} row{'s' if rows != 1 else ''} holding {format_size(per_row * rows)} "
            f"of strings ({format_size(per_row)} per row); scanning a row takes about {MEMORY_PER_STRING_BYTE}x "
            f"its size, more than the memory budget of {format_size(self.options.memory_budget)} (--memory-budget)"
        )
        return ScanIssue(shard, IssueKind.LIMIT, message, row_group=index)

    def scan_row_group(
        self, shard: ShardRef, parquet: pq.ParquetFile, index: int, timer: _Timer | None = None
    ) -> tuple[list[Finding], list[ScanIssue], ScanStats]:
        """Read and scan one row group, a slice of rows at a time (see ``slice_bytes``).

        A row group that cannot fit the memory budget is not read: it is a limit issue. Raises
        ShardReadError when the row group cannot be read at all; when a later slice fails, the
        findings of the slices before it are kept and the failure is an issue. Identical texts
        are scanned once per slice.
        """
        timer = timer or _Timer()
        if (issue := self.over_budget(shard.display, parquet, index)) is not None:
            return [], [issue], ScanStats()
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        stats = ScanStats()
        t = time.perf_counter()
        slices = iter_row_group_slices(shard, parquet, index, row_group_offsets(parquet)[index], self.slice_bytes(),
                                       threads=self.options.read_threads)
        read = 0
        try:
            while (batch := next(slices, None)) is not None:
                timer.add("read", t)
                f, i, s = self.scan_batch(batch, shard.display, timer)
                del batch  # free this slice before the next one is read
                findings += f
                issues += i
                stats += s
                read += 1
                t = time.perf_counter()
        except ShardReadError as err:
            if not read:
                raise
            issues.append(ScanIssue(shard.display, IssueKind.UNREADABLE, err.reason, row_group=index))
        finally:
            slices.close()
        timer.add("read", t)
        return findings, issues, replace(stats, row_groups=1)

    def scan_stream(self, shard: ShardRef, timer: _Timer | None = None) -> tuple[list[Finding], list[ScanIssue], ScanStats]:
        """Read and scan a shard that is one sequential stream (JSON Lines, Arrow IPC): metadata, then every batch.

        Raises ShardReadError when the shard cannot be opened; a batch or line that cannot be read
        is an issue, and the findings of everything read before it are kept.
        """
        timer = timer or _Timer()
        t = time.perf_counter()
        reader = open_shard(shard)
        timer.add("read", t)
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        stats = ScanStats()
        meta = reader.metadata_leaves()
        if meta:
            batch = RowGroupBatch(index=-1, row_offset=0, num_rows=0, leaves=meta)
            f, i, st = self.scan_batch(batch, shard.display, timer)
            findings += f
            issues += i
            stats += replace(st, row_groups=0)
        batches = iter(reader.batches())
        while True:
            t = time.perf_counter()
            item = next(batches, None)
            timer.add("read", t)
            if item is None:
                break
            if isinstance(item, ShardReadError):
                issues.append(ScanIssue(shard.display, IssueKind.UNREADABLE, item.reason, row_group=item.row_group, row=item.row))
                continue
            f, i, st = self.scan_batch(item, shard.display, timer)
            findings += f
            issues += i
            stats += st
        return findings, issues, stats

    def scan_table(self, table: pa.Table, shard: str = "<table>", rows_per_batch: int = 16384) -> ShardResult:
        """Scan an in-memory table as one shard: schema metadata, then slices of ``rows_per_batch`` rows.

        Slicing bounds the memory of flattening a large table; rows are numbered from the table's start.
        """
        started = time.perf_counter()
        timer = _Timer()
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        stats = ScanStats(shards=1)
        batches = []
        meta = schema_metadata_leaves(table.schema)
        if meta:
            batches.append(RowGroupBatch(index=-1, row_offset=0, num_rows=0, leaves=meta))
        for index, start in enumerate(range(0, table.num_rows, max(1, rows_per_batch))):
            batches.append(batch_from_table(table.slice(start, rows_per_batch), index, start))
        if not batches:
            batches.append(batch_from_table(table))
        for batch in batches:
            f, i, s = self.scan_batch(batch, shard, timer)
            findings += f
            issues += i
            stats += s
        stats = replace(stats, seconds=time.perf_counter() - started)
        findings, truncated = cap_shard_findings(findings, self.shard_finding_cap(), shard)
        issues += truncated
        return ShardResult(shard, stats, tuple(sorted(findings, key=Finding.sort_key)), tuple(issues))

    # ---- one row group ------------------------------------------------------------------

    def scan_batch(
        self, batch: RowGroupBatch, shard: str, timer: _Timer | None = None
    ) -> tuple[list[Finding], list[ScanIssue], ScanStats]:
        """Prefilter every leaf of a row group, then scan only the selected cells.

        Identical cell texts within the batch are scanned once; their findings are attributed to
        every cell that holds them.
        """
        timer = timer or _Timer()
        cells = nbytes = candidates = clocked = 0
        by_text: dict[str, list[CellLocation]] = defaultdict(list)
        t = time.perf_counter()
        masks = self.prefilter.masks([leaf.values for leaf in batch.leaves])
        if self.known_prefilter is not None:
            known = self.known_prefilter.masks([leaf.values for leaf in batch.leaves])
            masks = [mask | extra for mask, extra in zip(masks, known, strict=True)]
        timer.add("prefilter", t)
        for leaf, mask in zip(batch.leaves, masks, strict=True):
            t = time.perf_counter()
            values = leaf.values
            cells += len(values) - values.null_count
            nbytes += _byte_count(values)
            selected = np.flatnonzero(mask)
            t = timer.add("prefilter", t)
            if not len(selected):
                continue
            rows = leaf.rows[selected].tolist()
            paths, roles = leaf.locations(selected)
            for text, row, path, role in zip(_selected_texts(values, selected), rows, paths, roles, strict=True):
                row = row if row == METADATA_ROW else batch.row_offset + row
                by_text[text].append(CellLocation(shard, row, path, role))
            candidates += len(selected)
            timer.add("prefilter", t)
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        t = time.perf_counter()
        texts = list(by_text)
        raw_rules = self.gate.rules_for(texts)
        timer.add("gate", t)
        for text, rule_indexes in zip(texts, raw_rules):
            locations = by_text[text]
            try:
                cell_findings, limits = self.scan_text(text, timer, tuple(self.rules[i] for i in rule_indexes))
            except Exception as exc:  # fail closed: an engine bug is an incomplete scan, not a crash
                cell_findings, limits = [], [f"internal error while scanning ({describe_exception(exc)})"]
            for location in locations:
                for message in limits:
                    kind = IssueKind.TRUNCATED if message.startswith(TRUNCATED_PREFIX) else IssueKind.LIMIT
                    issues.append(
                        ScanIssue(location.shard, kind, message, batch.index if batch.index >= 0 else None,
                                  location.row, location.column)
                    )
                findings.extend(_attach(cf, location) for cf in cell_findings)
                clocked += sum(1 for cf in cell_findings if cf.clock)
        stats = ScanStats(
            row_groups=1 if batch.index >= 0 else 0,
            rows=batch.num_rows,
            cells=cells,
            bytes=nbytes,
            candidate_cells=candidates,
            clock_findings=clocked,
        )
        return findings, issues, stats

    # ---- one cell -----------------------------------------------------------------------

    def scan_text(
        self, text: str, timer: _Timer | None = None, raw_rules: tuple[Rule, ...] | None = None
    ) -> tuple[list[CellFinding], list[str]]:
        """Scan one cell's text: every window, every decoded view, every rule.

        ``raw_rules`` (default: all) are the rules run on the undecoded text, as selected by the
        rule gate; decoded views always get every rule. Returns the cell's findings and the limits
        it hit (each a message without cell content).
        """
        timer = timer or _Timer()
        raw_rules = self.rules if raw_rules is None else raw_rules
        limits: list[str] = []
        raw: list[tuple[Candidate, int, int]] = []
        known: dict[tuple[str, int, int], tuple[str, ...]] = {}  # (digest, start, end) -> decode chain
        t = time.perf_counter()
        decoding = 0.0  # time spent producing decoded views, reported as its own stage
        budget = decoders.DecodeBudget.of(self.options.decode)
        for offset, window, continued in self._windows_of(text):
            if self.known:
                for hit in self.known.in_raw(window):
                    known.setdefault((hit.entry.digest, offset + hit.start, offset + hit.end), hit.encoding)
            views = decoders.views(
                window, self.options.decode, limits.append, self.keywords, continued=continued, budget=budget
            )
            while True:
                since = time.perf_counter()
                view = next(views, None)
                decoding += time.perf_counter() - since
                if view is None:
                    break
                if self.known and view.encoding:
                    for entry, k_start, k_end in self.known.in_view(view.text):
                        k_start, k_end = view.original_span(k_start, k_end)
                        key = (entry.digest, offset + k_start, offset + k_end)
                        if len(known.get(key, view.encoding)) >= len(view.encoding):
                            known[key] = view.encoding
                rules = raw_rules if not view.encoding else self.rules
                if not rules:
                    continue
                try:
                    present = self.keywords.present(view.text)
                    for cand in detect(view, rules, self.options.regex_timeout, present, self._known_keywords):
                        start, end = view.original_span(cand.start, cand.end)
                        if offset and not view.encoding:
                            # A verifier reads the cell around a raw match: give it cell offsets.
                            cand = replace(cand, start=offset + cand.start, end=offset + cand.end)
                        raw.append((cand, offset + start, offset + end))
                except RegexTimeout as err:
                    limits.append(f"rule {err.rule_id}: pattern time limit ({self.options.regex_timeout:g}s) exceeded")
        timer.totals["decode"] += decoding
        t = timer.add("match", t + decoding)
        limits = list(dict.fromkeys(limits))  # one message per limit kind, however many windows hit it
        if not raw and not known:  # most candidate cells: a keyword, but no secret
            timer.add("verify", t)
            return [], limits
        kept = _deduplicate(raw, self.ruleset, text) if raw else []
        known = _one_per_occurrence(known)
        labels = {entry.digest: entry.label for entry in self.known.entries}
        spans = sorted([(s, e, preview(c.secret)) for c, s, e in kept]
                       + [(s, e, labels[digest]) for digest, s, e in known])
        reach = span_reach(spans)
        verifications = _Verifications(self.options.now, text)
        cap = self.cell_finding_cap()
        listed = kept if len(kept) <= cap else self._listed_over_cap(kept, cap, verifications)
        out = [self._cell_finding(item, verifications, text, spans, reach) for item in listed]
        out = _settle_wrap_readings(listed, out, text)
        if len(listed) < len(kept):
            aggregates = self._aggregates(kept, listed, verifications, text, spans, reach)
            out += aggregates
            limits.append(
                f"{TRUNCATED_PREFIX}{len(kept)} in this cell, more than the cap of {cap} per cell "
                f"(--max-findings-per-cell): {len(kept) - len(listed)} aggregated by rule and verdict into "
                f"{len(aggregates)} finding(s) with a count"
            )
        out += [
            CellFinding(
                rule_id=KNOWN_RULE,
                kind=KNOWN_KIND,
                severity=Severity.CRITICAL,
                start=start,
                end=end,
                fingerprint="sha256:" + digest,
                preview=labels[digest],
                verdict=Verdict.VALID,
                detail=f"{labels[digest]}: an occurrence of a secret you named (--known-secrets)",
                encoding=chain,
                context=context_snippet(text, start, end, spans, reach),
            )
            for (digest, start, end), chain in sorted(known.items(), key=lambda item: item[0][1:])
        ]
        timer.add("verify", t)
        return out, limits

    def _cell_finding(
        self, item: tuple[Candidate, int, int], verifications: _Verifications, text: str,
        spans: list[tuple[int, int, str]], reach: list[int],
    ) -> CellFinding:
        """One listed finding: its verification (memoised per cell), preview, fingerprint and context."""
        cand, start, end = item
        rule = self.ruleset.get(cand.rule_id)
        verification, clock = verifications.full(cand, rule)
        return CellFinding(
            rule_id=rule.id,
            kind=rule.kind,
            severity=derive_severity(verification.severity or rule.severity, verification.verdict),
            start=start,
            end=end,
            fingerprint=fingerprint(verification.canonical or cand.secret, rule.kind),
            preview=preview(cand.secret),
            verdict=verification.verdict,
            detail=verification.detail,
            encoding=cand.encoding,
            context=context_snippet(text, start, end, spans, reach),
            clock=clock,
            revealed=cand.secret if self.options.reveal_secrets else None,
        )

    def _listed_over_cap(
        self, kept: list[tuple[Candidate, int, int]], cap: int, verifications: _Verifications
    ) -> list[tuple[Candidate, int, int]]:
        """Which findings of a cell over its cap are listed one by one, the most telling first.

        Candidates that fail their rule's own structural check (a checksum: a look-alike) cannot
        block; the others are fully verified (up to ``VERIFY_FACTOR`` times the cap) and listed
        by verdict, valid first, so that no blocking finding hides in an aggregate while room is
        left. What room remains goes to the look-alikes, in cell order.
        """
        failing = [item for item in kept if verifications.fails_structure(item[0], self.ruleset.get(item[0].rule_id))]
        failed = {id(item) for item in failing}
        others = [item for item in kept if id(item) not in failed][: VERIFY_FACTOR * cap]
        ranked = sorted(
            others,
            key=lambda item: (_VERDICT_RANK.get(str(verifications.full(item[0], self.ruleset.get(item[0].rule_id))[0].verdict), 9),
                              item[1], item[2]),
        )
        listed = ranked[:cap]
        listed += failing[: cap - len(listed)]
        return sorted(listed, key=lambda item: (item[1], -(item[2] - item[1]), item[0].rule_id))

    def _aggregates(
        self, kept: list[tuple[Candidate, int, int]], listed: list[tuple[Candidate, int, int]],
        verifications: _Verifications, text: str, spans: list[tuple[int, int, str]], reach: list[int],
    ) -> list[CellFinding]:
        """The findings of a cell not listed, one per (rule, verdict), with a count.

        A candidate not fully verified is counted under the verdict of its rule's structural check
        (``invalid``) when it failed it, else as ``unverified`` (blocking): the verification
        limit never turns a possible secret into a pass.
        """
        chosen = {id(item) for item in listed}
        groups: dict[tuple[str, str], list[tuple[Candidate, int, int]]] = defaultdict(list)
        details: dict[tuple[str, str], str] = {}
        for item in kept:
            if id(item) in chosen:
                continue
            cand = item[0]
            rule = self.ruleset.get(cand.rule_id)
            known = verifications.known(cand, rule)
            if known is not None:
                verdict, detail = known.verdict, "verified one by one"
            elif verifications.fails_structure(cand, rule):
                verdict, detail = Verdict.INVALID, "fail the rule's own structural check (look-alikes)"
            else:
                verdict, detail = Verdict.UNVERIFIED, "not verified (verification limit per cell)"
            groups[(rule.id, str(verdict))].append(item)
            details.setdefault((rule.id, str(verdict)), detail)
        out: list[CellFinding] = []
        for (rule_id, verdict_name), items in groups.items():
            rule = self.ruleset.get(rule_id)
            verdict = Verdict(verdict_name)
            first = items[0]
            start, end = min(i[1] for i in items), max(i[2] for i in items)
            # Its own identity: an allowlist entry for one member does not accept the aggregate.
            digest = hashlib.sha256(f"aggregate:{rule_id}:{verdict_name}".encode())
            for cand, _, _ in items:
                digest.update(fingerprint(cand.secret, rule.kind).encode())
            out.append(
                CellFinding(
                    rule_id=rule.id,
                    kind=rule.kind,
                    severity=derive_severity(rule.severity, verdict),
                    start=start,
                    end=end,
                    fingerprint="sha256:" + digest.hexdigest(),
                    preview=preview(first[0].secret),
                    verdict=verdict,
                    detail=f"{len(items)} findings of this rule aggregated (over the cap per cell); they "
                    f"{details[(rule_id, verdict_name)]}; the span runs from the first to the last",
                    encoding=first[0].encoding,
                    context=context_snippet(text, first[1], first[2], spans, reach),
                    clock=verifications.clock,
                    count=len(items),
                )
            )
        return out

    def _windows_of(self, text: str) -> Iterator[tuple[int, str, bool]]:
        """The parts of a cell to decode and match: (offset in the cell, text, cut mid-run).

        A long cell is read only around the prefilter's hits (``shardscan.hit_windows``: merged
        windows of whole lines, widened over a token, a wrapped base64 block or a PEM body that
        runs past them); a hit window starts at a token boundary, so no encoded run is cut at its
        start. A short cell, or one whose hits cannot be located (no Hyperscan, a cell selected
        for another reason), is read whole, in overlapping windows when it is very long.
        """
        size, overlap = self.options.window_chars, self.options.window_overlap
        spans = None
        above = self.options.hit_windows_above
        # Known secrets select cells through their own RE2 prefilter, whose hits are not located:
        # with them the whole cell is read, so that an occurrence away from every keyword is seen.
        if above is not None and above < len(text) <= hit_windows.MAX_CELL and not self.known:
            compiled = hyperscan_matcher.database(self.prefilter.expressions, cache_dir=self.prefilter.cache_dir)
            ends = hit_windows.hit_ends(text, compiled, self.prefilter.start_keywords)
            spans = hit_windows.windows(text, ends) if ends is not None else None
        if spans is None:
            for offset, window in _windows(text, size, overlap):
                yield offset, window, offset > 0
            return
        for span in spans:
            for offset, window in _windows(text[span.start : span.end], size, overlap):
                yield span.start + offset, window, offset > 0


class _Verifications:
    """Verification of one cell's candidates, memoised per distinct value (in memory only).

    A flood of identical look-alikes is verified once; ``fails_structure`` runs only the rule's
    own verifiers (a checksum costs microseconds, the placeholder checks a millisecond).
    """

    def __init__(self, now: datetime, text: str) -> None:
        self.now = now
        self.text = text
        self.clock = False  # any verification read the clock
        self._full: dict[tuple[str, str, tuple[tuple[str, str], ...]], tuple[Verification, bool]] = {}
        self._structure: dict[tuple[str, str, tuple[tuple[str, str], ...]], bool] = {}

    def full(self, cand: Candidate, rule: Rule) -> tuple[Verification, bool]:
        """The candidate's verification and whether it read the clock."""
        key = (rule.id, cand.secret, cand.groups)
        if key not in self._full:
            reads: list[bool] = []
            verification = verify_candidate(cand, rule.verify, _WatchedContext(self.now, rule.kind, reads, self.text))
            self._full[key] = (verification, bool(reads))
            self.clock = self.clock or bool(reads)
        return self._full[key]

    def known(self, cand: Candidate, rule: Rule) -> Verification | None:
        """The full verification when it was already made, else None."""
        found = self._full.get((rule.id, cand.secret, cand.groups))
        return found[0] if found is not None else None

    def fails_structure(self, cand: Candidate, rule: Rule) -> bool:
        """Whether the rule's own first verifier with an opinion calls the candidate invalid."""
        key = (rule.id, cand.secret, cand.groups)
        known = self._structure.get(key)
        if known is None:
            known = self._check_structure(cand, rule)
            # A flood of distinct look-alikes would make the memo as big as the flood; a checksum
            # is cheaper to compute again than to keep.
            if len(self._structure) < STRUCTURE_MEMO:
                self._structure[key] = known
        return known

    def _check_structure(self, cand: Candidate, rule: Rule) -> bool:
        reads: list[bool] = []
        context = _WatchedContext(self.now, rule.kind, reads, self.text)
        for name in rule.verify:
            if name in ALWAYS_FIRST or name not in VERIFIERS:
                continue
            try:
                outcome = VERIFIERS[name](cand, context)
            except Exception:  # a verifier bug: let the full verification decide (unverified)
                return False
            if outcome is not None:
                self.clock = self.clock or bool(reads)
                return outcome.verdict == Verdict.INVALID
        return False


def cap_shard_findings(findings: list[Finding], cap: int, shard: str) -> tuple[list[Finding], list[ScanIssue]]:
    """A shard's findings within its cap: the most telling listed, the rest aggregated per (rule, verdict, column).

    Blocking verdicts are listed first; an aggregate keeps its members' verdict, so a blocking
    finding is never hidden, only counted. Returns the findings and the "truncated" issue (none
    when within the cap).
    """
    if len(findings) <= cap:
        return findings, []
    ranked = sorted(findings, key=lambda f: (_VERDICT_RANK.get(str(f.verdict), 9), f.sort_key()))
    listed, rest = ranked[:cap], sorted(ranked[cap:], key=Finding.sort_key)
    groups: dict[tuple[str, str, str, str], list[Finding]] = defaultdict(list)
    for f in rest:
        # A known secret's occurrences stay apart per entry, under its fingerprint: the report's
        # "N occurrences" per entry counts them through the aggregate.
        own = f.fingerprint if f.rule_id == KNOWN_RULE else ""
        groups[(f.rule_id, str(f.verdict), f.location.column, own)].append(f)
    aggregates: list[Finding] = []
    for (rule_id, verdict, column, own), members in groups.items():
        first = members[0]
        digest = hashlib.sha256(f"aggregate:{rule_id}:{verdict}:{column}".encode())
        for f in members:
            digest.update(f.fingerprint.encode())
        count = sum(f.count for f in members)
        rows = sorted({f.location.row for f in members})
        aggregates.append(
            replace(
                first,
                fingerprint=own or "sha256:" + digest.hexdigest(),
                detail=f"{count} findings of this rule in column {column} aggregated (over the cap per shard), "
                f"in {len(rows)} row(s) from {rows[0]} to {rows[-1]}; located at the first",
                count=count,
                revealed=None,
            )
        )
    total = sum(f.count for f in findings)
    issue = ScanIssue(
        shard, IssueKind.TRUNCATED,
        f"{TRUNCATED_PREFIX}{len(findings)} in this shard ({total} counted), more than the cap of {cap} per shard "
        f"(--max-findings-per-shard, and the memory budget): {len(rest)} aggregated by rule, verdict and column "
        f"into {len(aggregates)} finding(s) with a count",
    )
    return listed + aggregates, [issue]


def _one_per_occurrence(known: dict[tuple[str, int, int], tuple[str, ...]]) -> dict[tuple[str, int, int], tuple[str, ...]]:
    """One known-secret hit per occurrence: of overlapping hits of one entry (the base64 form found
    in the raw text, and the decoded run it lies in), the least-decoded, narrowest one."""
    kept: dict[tuple[str, int, int], tuple[str, ...]] = {}
    for key in sorted(known, key=lambda k: (len(known[k]), k[2] - k[1], k[1])):
        digest, start, end = key
        if not any(d == digest and s < end and start < e for d, s, e in kept):
            kept[key] = known[key]
    return kept


def _attach(cf: CellFinding, location: CellLocation) -> Finding:
    return Finding(
        rule_id=cf.rule_id,
        kind=cf.kind,
        severity=cf.severity,
        location=location,
        start=cf.start,
        end=cf.end,
        fingerprint=cf.fingerprint,
        preview=cf.preview,
        verdict=cf.verdict,  # type: ignore[arg-type]
        detail=cf.detail,
        encoding=cf.encoding,
        context=cf.context,
        revealed=cf.revealed,
        count=cf.count,
    )


def _deduplicate(
    raw: list[tuple[Candidate, int, int]], ruleset: Ruleset, text: str = ""
) -> list[tuple[Candidate, int, int]]:
    """One finding per secret in a cell, read through the fewest decodings that read it exactly.

    1. Per (rule, fingerprint), the most-decoded reading of the secret is its true text (a PEM
       block with real line breaks rather than ``\\n`` escapes); of the candidates that read
       exactly that text, the least-decoded, earliest one wins. So a token that JSON escaping left
       untouched is reported with no decode chain, and an escaped private key with ``json-string``.
    2. A candidate is dropped when a deeper decoding of the same text (its chain extends the
       candidate's chain) found the same rule over a span covering it: that decoding read
       further (the escaped line breaks of a doubly escaped key, a key cut at an escaped dash).
       Conversely, a candidate is dropped when the shell-prompt decoding of its text found the
       same rule starting where it starts and ending sooner: read as written, the token ran on
       into the user name of a prompt glued after it. A candidate ending at a line break that the
       terminal-wrap decoding joined is kept beside the longer reading: which of the two is the
       secret is settled after verification (see :func:`_settle_wrap_readings`).
    3. A match lying wholly inside a longer match of another rule (the JWT inside a
       ``ghs_<appid>_<JWT>`` token) is the same secret.
    4. A fallback rule yields to any specific rule whose match overlaps it (see
       :func:`_yield_to_specific_rules`).
    """
    if len(raw) == 1:
        return list(raw)  # (what the steps below leave of a single match)
    groups: dict[tuple[str, str], list[tuple[Candidate, int, int]]] = defaultdict(list)
    for item in raw:
        cand = item[0]
        groups[(cand.rule_id, fingerprint(cand.secret, ruleset.get(cand.rule_id).kind))].append(item)
    best: list[tuple[Candidate, int, int]] = []
    for items in groups.values():
        # (Joining wrapped lines is a reading, not a decoding: of equally decoded readings of one
        # secret, the one without it is the true text.)
        deepest = max(items, key=lambda item: (len(item[0].encoding) - (TERMINAL_WRAP in item[0].encoding),
                                               TERMINAL_WRAP not in item[0].encoding))[0].secret
        exact = [item for item in items if item[0].secret == deepest]
        best.append(min(exact, key=lambda item: (len(item[0].encoding), item[1], item[2])))
    # Only a reading of the same rule through more decodings can drop a candidate: indexed so, a
    # cell holding thousands of tokens costs linear time, not a comparison of every pair.
    decoded: dict[str, list[tuple[Candidate, int, int]]] = defaultdict(list)
    for o in best:
        if o[0].encoding:
            decoded[o[0].rule_id].append(o)
    readable = [
        item
        for item in best
        if not any(
            len(o[0].encoding) > len(item[0].encoding)
            and o[0].encoding[: len(item[0].encoding)] == item[0].encoding
            and o[1] <= item[1]
            and item[2] <= o[2]
            and not _wrap_alternative(item, o, text)
            for o in decoded[item[0].rule_id]
        )
        and not any(
            o[0].encoding[: len(item[0].encoding)] == item[0].encoding
            and SHELL_PROMPT in o[0].encoding[len(item[0].encoding) :]
            and o[1] == item[1]
            and o[2] < item[2]
            for o in decoded[item[0].rule_id]
        )
    ]
    kept = _drop_fallbacks(sorted(readable, key=lambda item: (item[1], -(item[2] - item[1]), item[0].rule_id)), ruleset)
    coverable = _coverable_by_another_rule(kept)
    kept = [
        item
        for item, maybe in zip(kept, coverable, strict=True)
        if not (maybe and any(o[0].rule_id != item[0].rule_id and _inside(item, o)
                              and not ruleset.get(o[0].rule_id).fallback for o in kept))
    ]
    return _yield_to_specific_rules(kept, ruleset)


def _yield_to_specific_rules(
    kept: list[tuple[Candidate, int, int]], ruleset: Ruleset
) -> list[tuple[Candidate, int, int]]:
    """4. A fallback rule's match that overlaps a specific rule's match is the same secret, read
    less well: the specific rule's finding (and its verdict, ``invalid`` included) is the only one.
    A specific rule's span may be shorter or longer than the fallback's, so overlap decides, not
    nesting."""
    fallback = [ruleset.get(item[0].rule_id).fallback for item in kept]
    if not any(fallback):
        return kept  # the common case: no fallback rule matched
    specific = [item for item, weak in zip(kept, fallback, strict=True) if not weak]
    return [
        item
        for item, weak in zip(kept, fallback, strict=True)
        if not (weak and any(_overlap(item, o) for o in specific))
    ]


def _overlap(item: tuple[Candidate, int, int], other: tuple[Candidate, int, int]) -> bool:
    """True when two matches share characters of the cell (of the decoded view, when both come
    from one decoded run, which maps to a single span of the cell)."""
    cand, start, end = item
    o_cand, o_start, o_end = other
    if (o_start, o_end) == (start, end) and o_cand.encoding == cand.encoding and cand.encoding:
        return o_cand.start < cand.end and cand.start < o_cand.end
    return o_start < end and start < o_end


# Kinds found by their position (a password name, a URL's userinfo) rather than their shape: when
# a rule of another kind reads the same value (a GitHub token in GITHUB_TOKEN=, in a clone URL),
# that rule's finding says more, and the value is reported once.
FALLBACK_KINDS = frozenset({"connection-string", "password", "generic-secret"})


def _drop_fallbacks(kept: list[tuple[Candidate, int, int]], ruleset: Ruleset) -> list[tuple[Candidate, int, int]]:
    """``kept`` without the fallback-kind matches that overlap a match of another kind (which covers
    it, or which it runs over: ``token=<ghp_…>&x=1`` read up to the ``&``); inside one decoded run,
    by their places in the decoded text, not the run's span in the cell."""
    kinds = [ruleset.get(item[0].rule_id).kind for item in kept]
    if not any(kind in FALLBACK_KINDS for kind in kinds):
        return kept
    specific = [item for item, kind in zip(kept, kinds, strict=True) if kind not in FALLBACK_KINDS]
    return [
        item for item, kind in zip(kept, kinds, strict=True)
        if kind not in FALLBACK_KINDS or not any(_overlap(item, o) for o in specific)
    ]


def _coverable_by_another_rule(kept: list[tuple[Candidate, int, int]]) -> list[bool]:
    """For each match (sorted by start), whether a match of another rule starts no later and ends
    no sooner: the only ones :func:`_inside` can put it in. One sweep, keeping the two furthest
    ends of distinct rules among the matches started so far."""
    out = [False] * len(kept)
    top: list[tuple[int, str]] = []  # (end, rule) of at most two distinct rules, furthest end first
    i = 0
    while i < len(kept):
        j = i
        while j < len(kept) and kept[j][1] == kept[i][1]:  # every match starting here counts too
            top = _furthest_two(top, kept[j][2], kept[j][0].rule_id)
            j += 1
        for k in range(i, j):
            end, rule = kept[k][2], kept[k][0].rule_id
            out[k] = any(o_end >= end for o_end, o_rule in top if o_rule != rule)
        i = j
    return out


def _furthest_two(top: list[tuple[int, str]], end: int, rule: str) -> list[tuple[int, str]]:
    merged = {r: e for e, r in top}
    merged[rule] = max(end, merged.get(rule, end))
    return sorted(((e, r) for r, e in merged.items()), reverse=True)[:2]


def _wrap_alternative(item: tuple[Candidate, int, int], other: tuple[Candidate, int, int], text: str) -> bool:
    """Whether ``other``, a terminal-wrap reading, runs on past a line break where ``item`` ends:
    either the token was wrapped there, or it ended at the pane's edge and the next line is other
    output. Only verification can tell."""
    cand, start, end = item
    reading, o_start, o_end = other
    return (
        TERMINAL_WRAP in reading.encoding[len(cand.encoding) :]
        and o_start == start
        and end < o_end
        and text[end : end + 1] in ("\n", "\r")
    )


# Verdicts from most to least telling that a reading is the secret.
_VERDICT_RANK = {
    "valid": 0, "unverified": 1, "encrypted": 2, "test-mode": 3, "local-only": 3, "expired": 4, "example": 5,
    "redacted": 6, "invalid": 7,
}


def _settle_wrap_readings(
    kept: list[tuple[Candidate, int, int]], out: list[CellFinding], text: str
) -> list[CellFinding]:
    """Of a token read as written and read across the line break after it (terminal-wrap), keep
    the reading whose verdict says more that it is the secret; the joined one when they tie."""
    joined = [j for j, item in enumerate(kept) if TERMINAL_WRAP in item[0].encoding]
    if not joined:
        return out  # the common case, in linear time whatever the number of findings
    dropped: set[int] = set()
    for i, item in enumerate(kept):
        for j in joined:
            other = kept[j]
            if i != j and item[0].rule_id == other[0].rule_id and _wrap_alternative(item, other, text):
                worse = i if _VERDICT_RANK.get(str(out[i].verdict), 9) >= _VERDICT_RANK.get(str(out[j].verdict), 9) else j
                dropped.add(worse)
    return [finding for k, finding in enumerate(out) if k not in dropped]


def _inside(item: tuple[Candidate, int, int], outer: tuple[Candidate, int, int]) -> bool:
    """True when ``item`` lies wholly inside the longer match ``outer``.

    Two matches in one decoded run map to the same span of the cell (the whole run), so there
    they are compared by their offsets in the decoded view instead.
    """
    cand, start, end = item
    other, o_start, o_end = outer
    if (o_start, o_end) == (start, end) and other.encoding == cand.encoding and cand.encoding:
        return other.start <= cand.start and cand.end <= other.end and (other.end - other.start) > (cand.end - cand.start)
    return o_start <= start and end <= o_end and (o_end - o_start) > (end - start) and len(other.secret) > len(cand.secret)


def _windows(text: str, size: int, overlap: int) -> Iterable[tuple[int, str]]:
    if len(text) <= size:
        yield 0, text
        return
    step = max(1, size - overlap)
    for offset in range(0, len(text), step):
        yield offset, text[offset : offset + size]
        if offset + size >= len(text):
            break


# Cells converted to Python strings per ``take`` (see :func:`_selected_texts`).
_TAKE_CELLS = 256


def _selected_texts(values: pa.Array, selected: np.ndarray) -> list[str]:
    """The texts of the cells at ``selected`` (positions in ``values``), one ``take`` per 256 cells.

    A dictionary array's texts come from its dictionary, each distinct value decoded once.
    """
    if pa.types.is_dictionary(values.type):
        keys = values.indices.to_numpy(zero_copy_only=False)[selected].astype(np.int64)
        distinct, position = np.unique(keys, return_inverse=True)
        texts = [_as_text(v) for v in compute.take(values.dictionary, pa.array(distinct)).to_pylist()]
        return [texts[i] for i in position.tolist()]
    # In slices, so that the copy ``take`` makes stays small beside the Python strings (a hostile
    # leaf can have every cell selected).
    return [_as_text(v) for at in range(0, len(selected), _TAKE_CELLS)
            for v in compute.take(values, pa.array(selected[at : at + _TAKE_CELLS])).to_pylist()]



def _as_text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else ""


def _byte_count(values: pa.Array) -> int:
    if pa.types.is_dictionary(values.type):
        lengths = compute.binary_length(values.dictionary).to_numpy(zero_copy_only=False)
        lengths = np.nan_to_num(lengths.astype(float))
        indices = values.indices.to_numpy(zero_copy_only=False)
        valid = compute.is_valid(values).to_numpy(zero_copy_only=False)
        return int(lengths[indices[valid].astype(np.int64)].sum())
    offsets = value_offsets(values)
    if offsets is not None and not values.null_count:
        return int(offsets[-1] - offsets[0])  # (a null's slot may span bytes: then count lengths)
    return int(compute.total(compute.binary_length(values)).as_py() or 0)


"""The scan engine: a rule set compiled into a :class:`Scanner`, whose methods are the entry points of its stages.

A shard is read in batches (``shardscan.scanning.read``: footer, row groups in slices within the
memory budget, streams, tables); each batch is prefiltered as whole Arrow arrays and its selected
cells go to the cell stage (``scanning.batch``); a cell's text is cut into windows, decoded, matched
(``scanning.cell``), its overlapping readings resolved (``scanning.resolve``), verified
(``scanning.verification``) and capped (``scanning.caps``). ``docs/architecture.md`` draws the stages.

The names callers import from here (``ScanOptions``, ``CellFinding``, the ``DEFAULT_*`` and budget
constants) live in the modules of their stage and are re-exported.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan import decoders, hyperscan_matcher
from shardscan.detect import compile_prefilters_ahead
from shardscan.known_secrets import KnownSecretMatcher
from shardscan.model import BatchResult, ShardResult
from shardscan.options import (
    DEFAULT_MAX_FINDINGS_PER_CELL,
    DEFAULT_MAX_FINDINGS_PER_SHARD,
    DEFAULT_MEMORY_BUDGET,
    ScanOptions,
)
from shardscan.prefilter import Prefilter, RuleGate
from shardscan.reader import RowGroupBatch, ShardRef
from shardscan.relax import anchor_length, literal_alternation, relax
from shardscan.ruleset import Rule, Ruleset
from shardscan.scanning import budget, read
from shardscan.scanning.batch import BatchScanner
from shardscan.scanning.budget import (
    FINDINGS_BUDGET_SHARE,
    MEMORY_PER_FINDING,
    MEMORY_PER_STRING_BYTE,
    MIN_FINDINGS_BY_MEMORY,
)
from shardscan.scanning.cell import CellScanner
from shardscan.scanning.items import scan_shard_in_process
from shardscan.scanning.values import TRUNCATED_PREFIX, CellFinding, CellScan, Timer

__all__ = [
    "DEFAULT_MAX_FINDINGS_PER_CELL", "DEFAULT_MAX_FINDINGS_PER_SHARD", "DEFAULT_MEMORY_BUDGET", "FINDINGS_BUDGET_SHARE",
    "MEMORY_PER_FINDING", "MEMORY_PER_STRING_BYTE", "MIN_FINDINGS_BY_MEMORY", "TRUNCATED_PREFIX",
    "CellFinding", "CellScan", "ScanOptions", "Scanner",
]


# A relaxed pattern whose longest run of literal characters is shorter than this is tried at nearly
# every position of a text (``host:port:db:user:password`` has only colons, a JSON object only a
# brace), and a rule whose keywords are at least KEYWORD_GATE_CHARS long is gated by those instead.
# Measured on the windows of the dense and seed profiles: the relaxed gates of pgpass-password and
# gcp-service-account were 80% of the gate's scan time; the gate scans them 4x faster without.
GATE_ANCHOR_CHARS = 2
KEYWORD_GATE_CHARS = 4


def rule_gate(rule: Rule) -> tuple[str | None, str | None]:
    """The gate of ``rule`` (a superset of the texts it can report in), and its wide form for
    Hyperscan (see :func:`shardscan.relax.relax`); (None, None): the rule always runs.

    The relaxed pattern, or, where that has next to no literal to anchor on and the rule's keywords
    are long, the keywords: the detector runs a rule only on a text holding one of its keywords.
    """
    if anchor_length(rule.pattern_source) < GATE_ANCHOR_CHARS and rule.keywords and all(
        len(keyword) >= KEYWORD_GATE_CHARS for keyword in rule.keywords
    ):
        keywords = literal_alternation(dict.fromkeys(rule.keywords))
        return keywords, keywords
    return relax(rule.pattern_source), relax(rule.pattern_source, open_ranges=True)


class Scanner:
    """A rule set compiled for scanning; reusable across shards and safe to send to worker processes."""

    def __init__(self, ruleset: Ruleset, options: ScanOptions | None = None, *, text_only: bool = False) -> None:
        """``text_only``: a scanner for :meth:`scan_text` alone (a check of short texts such as an
        allowlist's reasons): the prefilter of whole columns, its nested keyword forms and the
        compiled databases are not built up front (they take seconds without a pattern cache)."""
        self.ruleset = ruleset
        self.options = options or ScanOptions()
        # With decoding off, encoded keyword forms could not lead to a finding: keep them out of
        # the prefilter so that --max-decode-depth 0 is the plain, fastest scan.
        decoding = self.options.decode.max_depth > 0
        # Rules with ``prefilter`` patterns select cells by those instead of by their keywords.
        selecting = ruleset.prefilter_keywords
        # The prefilter first: without a pattern cache its database is the longest compilation of
        # a start, which begins once it is built (the keyword set is built while it compiles).
        encoded = tuple(decoders.encoded_keyword_patterns(selecting, ruleset.token_keywords, ruleset.context_keywords))
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
        if not text_only:
            self.prefilter.warm()  # compiled (or loaded) once here, inherited by forked workers
        self.keywords = decoders.KeywordSet.build(
            ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords,
            encoded=encoded if selecting == ruleset.keywords else None,
        )
        if not text_only and decoding and self.prefilter.expressions:
            # Without a pattern cache, compiling the databases is most of a run's start-up, and
            # most keyword forms are the prefilter's expressions too: they are searched in its
            # database, the others compiled beside it (in the background, as the rule gate's).
            self.keywords = self.keywords.sharing(self.prefilter.expressions, self.options.pattern_cache)
            self.keywords.compile_ahead()
        # Known secrets select their cells in RE2 only: a compiled Hyperscan database is cached on
        # disk, and one holding the values' literal forms would put them there.
        self.known = KnownSecretMatcher.build(self.options.known_secrets)
        self.known_prefilter = Prefilter("|".join(self.known.prefilter_patterns())) if self.known else None
        self.rules: tuple[Rule, ...] = ruleset.rules
        # Vectorised per-rule gates on a text: rules whose gate cannot match are not run on it
        # (exact: a gate matches a superset of the texts the rule reports in; see rule_gate).
        gates = [rule_gate(rule) for rule in self.rules]
        self.gate = RuleGate.from_patterns(
            [narrow for narrow, _ in gates], [wide for _, wide in gates], cache_dir=self.options.pattern_cache
        )
        if not text_only:
            self.gate.warm()
            compile_prefilters_ahead(self.rules)
        # (A scanner of short texts runs every rule on decoded views: gating them would compile the gate.)
        self.cells = CellScanner(
            ruleset, self.options, self.keywords, self.known, self.prefilter, None if text_only else self.gate
        )
        self.batches = BatchScanner(self.prefilter, self.known_prefilter, self.gate, self.cells)

    def for_workers(self, workers: int, *, read_threads: bool) -> Scanner:
        """This scanner for one of ``workers`` processes sharing the memory budget, reading with
        pyarrow's thread pool only if ``read_threads`` (same results)."""
        workers = max(1, workers)
        if (workers, read_threads) == (self.options.workers, self.options.read_threads):
            return self
        clone = copy.copy(self)
        clone.options = replace(self.options, workers=workers, read_threads=read_threads)
        # (The cell and batch stages read no option that differs between workers.)
        return clone

    # ---- the memory budget ----------------------------------------------------------------

    def shard_finding_cap(self) -> int:
        """Findings listed one by one per shard: ``max_findings_per_shard``, within the memory budget."""
        return budget.shard_finding_cap(self.options)

    def cell_finding_cap(self) -> int:
        """Findings listed one by one per cell (never more than per shard)."""
        return budget.cell_finding_cap(self.options)

    def slice_bytes(self) -> int:
        """String bytes read at once from a row group: this worker's share of the budget, bounded."""
        return budget.slice_bytes(self.options)

    # ---- the stages' entry points, from a whole shard down to one cell --------------------

    def scan_shard(self, shard: ShardRef) -> ShardResult:
        """Scan one shard of any input format (row groups and file metadata, or a whole stream), in this process.

        Never raises for bad data: unreadable parts become issues, and the findings of readable
        row groups are kept. (The same work items as a parallel scan; see ``shardscan.executor``.)
        """
        return scan_shard_in_process(self, shard)

    def scan_footer(self, shard: str, parquet: pq.ParquetFile, timer: Timer | None = None) -> BatchResult:
        """Scan a Parquet shard's file-level key/value metadata and string statistics (reported at row -1),
        and check that its footer accounts for every byte of the file (problems are issues)."""
        return read.read_footer(self.batches, shard, parquet, timer or Timer())

    def scan_row_group(
        self, shard: ShardRef, parquet: pq.ParquetFile, index: int, timer: Timer | None = None
    ) -> BatchResult:
        """Read and scan one row group, a slice of rows at a time (see :meth:`slice_bytes`); raises
        ShardReadError when it cannot be read at all."""
        return read.read_row_group(self.batches, self.options, shard, parquet, index, timer or Timer())

    def scan_stream(self, shard: ShardRef, timer: Timer | None = None) -> BatchResult:
        """Read and scan a shard that is one sequential stream (JSON Lines, Arrow IPC); raises
        ShardReadError when it cannot be opened."""
        return read.read_stream(self.batches, shard, timer or Timer())

    def scan_table(self, table: pa.Table, shard: str = "<table>", rows_per_batch: int = 16384) -> ShardResult:
        """Scan an in-memory table as one shard: schema metadata, then slices of ``rows_per_batch`` rows."""
        return read.read_table(self.batches, self.options, table, shard, rows_per_batch, Timer())

    def scan_batch(self, batch: RowGroupBatch, shard: str, timer: Timer | None = None) -> BatchResult:
        """Prefilter every leaf of a batch, then scan only the selected cells (each distinct text once)."""
        return self.batches.scan(batch, shard, timer)

    def scan_text(self, text: str, timer: Timer | None = None, raw_rules: tuple[Rule, ...] | None = None) -> CellScan:
        """Scan one cell's text: every window, every decoded view, every rule (``raw_rules``, default
        all, on the undecoded text). Returns the cell's findings and the limits it hit."""
        return self.cells.scan(text, timer, raw_rules)

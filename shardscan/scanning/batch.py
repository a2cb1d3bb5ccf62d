"""The batch stage: prefilter every leaf of a batch (whole Arrow arrays), then scan the selected cells."""

from __future__ import annotations

import time
from collections import defaultdict

import numpy as np
import pyarrow as pa

from shardscan import arrow_compute as compute
from shardscan import hit_windows, hyperscan_matcher
from shardscan.errors import describe_exception
from shardscan.model import BatchResult, CellLocation, Finding, IssueKind, ScanIssue, ScanStats
from shardscan.prefilter import Prefilter, RuleGate, value_offsets
from shardscan.reader import METADATA_ROW, RowGroupBatch
from shardscan.scanning.cell import CellScanner
from shardscan.scanning.values import TRUNCATED_PREFIX, CellScan, Timer


class BatchScanner:
    """The batch stage of a Scanner: the prefilters that select cells, the rule gate, and the cell stage."""

    def __init__(
        self, prefilter: Prefilter, known_prefilter: Prefilter | None, gate: RuleGate, cells: CellScanner
    ) -> None:
        self.prefilter = prefilter
        self.known_prefilter = known_prefilter
        self.gate = gate
        self.cells = cells

    def scan(self, batch: RowGroupBatch, shard: str, timer: Timer | None = None) -> BatchResult:
        """Prefilter every leaf of a batch, then scan only the selected cells.

        Identical cell texts within the batch are scanned once; their findings are attributed to
        every cell that holds them.
        """
        timer = timer or Timer()
        cells = nbytes = candidates = clocked = 0
        by_text: dict[str, list[CellLocation]] = defaultdict(list)
        # A long cell is read in windows around its hits: where the prefilter's scan of the
        # array reported all of them, they are kept (see hit_windows.buffer_hits) rather than
        # looked for again in the cell.
        # (Hits are located only with Hyperscan: without it every cell is read and gated whole,
        # the gate's RE2 patterns compiled once per batch rather than once per long cell.)
        above = self.cells.options.hit_windows_above if hyperscan_matcher.enabled() else None
        found_hits: dict[str, hit_windows.Hits] = {}
        t = time.perf_counter()
        masks, matches = self.prefilter.select([leaf.values for leaf in batch.leaves], record=above is not None)
        if self.known_prefilter is not None:
            known = self.known_prefilter.masks([leaf.values for leaf in batch.leaves])
            masks = [mask | extra for mask, extra in zip(masks, known, strict=True)]
        timer.add("prefilter", t)
        for leaf, mask, leaf_matches in zip(batch.leaves, masks, matches, strict=True):
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
            texts = _selected_texts(values, selected)
            for text, row, path, role in zip(texts, rows, paths, roles, strict=True):
                row = row if row == METADATA_ROW else batch.row_offset + row
                by_text[text].append(CellLocation(shard, row, path, role))
            if leaf_matches is not None and above is not None:
                for cell, text in zip(selected.tolist(), texts, strict=True):
                    if len(text) > above and text not in found_hits:
                        hits = hit_windows.buffer_hits(
                            leaf_matches, cell, text, self.prefilter.start_keywords, self.prefilter.token_ids
                        )
                        if hits is not None:
                            found_hits[text] = hits
            candidates += len(selected)
            timer.add("prefilter", t)
        findings: list[Finding] = []
        issues: list[ScanIssue] = []
        t = time.perf_counter()
        texts = list(by_text)
        # A long cell is read in windows around its hits: the gate runs on each window there (the
        # cell stage), not over the whole cell here.
        short = [text for text in texts if above is None or len(text) <= above]
        gated = iter(self.gate.rules_for(short))
        timer.add("gate", t)
        for text in texts:
            locations = by_text[text]
            try:
                if above is None or len(text) <= above:
                    cell_scan = self.cells.scan(text, timer, self.cells.rules_of(next(gated)))
                else:
                    cell_scan = self.cells.scan(text, timer, gate=self.gate, hits=found_hits.get(text))
                cell_findings, limits = cell_scan
            except Exception as exc:  # fail closed: an engine bug is an incomplete scan, not a crash
                cell_findings, limits = CellScan([], [f"internal error while scanning ({describe_exception(exc)})"])
            for location in locations:
                for message in limits:
                    kind = IssueKind.TRUNCATED if message.startswith(TRUNCATED_PREFIX) else IssueKind.LIMIT
                    issues.append(
                        ScanIssue(location.shard, kind, message, batch.index if batch.index >= 0 else None,
                                  location.row, location.column)
                    )
                findings.extend(cf.at(location) for cf in cell_findings)
                clocked += sum(1 for cf in cell_findings if cf.clock)
        stats = ScanStats(
            row_groups=1 if batch.index >= 0 else 0,
            rows=batch.num_rows,
            cells=cells,
            bytes=nbytes,
            candidate_cells=candidates,
            clock_findings=clocked,
        )
        return BatchResult(tuple(findings), tuple(issues), stats)


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


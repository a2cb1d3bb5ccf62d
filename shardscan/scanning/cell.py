"""The cell stage: one cell's text → windows → decoded views → rule matches → resolved, verified findings."""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace

from shardscan import decoders, hit_windows, hyperscan_matcher
from shardscan.detect import RegexTimeout, detect
from shardscan.known_secrets import KIND as KNOWN_KIND
from shardscan.known_secrets import RULE_ID as KNOWN_RULE
from shardscan.known_secrets import KnownSecretMatcher
from shardscan.model import Severity, Verdict
from shardscan.options import ScanOptions
from shardscan.prefilter import Prefilter, RuleGate
from shardscan.redaction import context_snippet, fingerprint, preview, span_reach
from shardscan.ruleset import Rule, Ruleset
from shardscan.scanning.budget import cell_finding_cap
from shardscan.scanning.caps import cell_aggregates, listed_over_cap
from shardscan.scanning.resolve import deduplicate, settle_wrap_readings
from shardscan.scanning.values import TRUNCATED_PREFIX, CellFinding, CellScan, Occurrence, Reading, Timer
from shardscan.scanning.verification import Verifications
from shardscan.severity import derive_severity

# Windows of a long cell gated per call, and their characters (bounds on the window texts held at
# once: a cell read whole comes in windows of megabytes).
GATED_AT_ONCE = 64
GATED_CHARS = 1 << 20


class CellScanner:
    """The cell stage of a Scanner: its rules, keyword forms, known secrets and the prefilter's expressions."""

    def __init__(
        self, ruleset: Ruleset, options: ScanOptions, keywords: decoders.KeywordSet, known: KnownSecretMatcher,
        prefilter: Prefilter, gate: RuleGate | None = None,
    ) -> None:
        """``gate`` (optional) selects the rules run on each decoded view (default: every rule)."""
        self.ruleset = ruleset
        self.options = options
        self.keywords = keywords
        self.known_keywords = frozenset(keywords.plain)  # what KeywordSet.present looks for
        self.known = known
        self.prefilter = prefilter  # its expressions locate a long cell's hits (see ``_windows_of``)
        self.rules: tuple[Rule, ...] = ruleset.rules
        self.gate = gate
        self._selections: dict[tuple[int, ...], tuple[Rule, ...]] = {}

    def rules_of(self, indexes: tuple[int, ...]) -> tuple[Rule, ...]:
        """The rules at ``indexes``, as one tuple per distinct selection (the detector indexes a
        rules tuple by its identity: a new tuple per cell or window would be indexed again)."""
        found = self._selections.get(indexes)
        if found is None:
            if len(self._selections) >= 1024:
                self._selections.clear()
            found = self._selections[indexes] = tuple(self.rules[i] for i in indexes)
        return found

    def scan(
        self, text: str, timer: Timer | None = None, raw_rules: tuple[Rule, ...] | None = None,
        gate: RuleGate | None = None, hits: hit_windows.Hits | None = None,
    ) -> CellScan:
        """Scan one cell's text: every window, every decoded view, every rule.

        ``raw_rules`` (default: all) are the rules run on the undecoded text, as selected by the
        rule gate; with ``gate``, they are selected by it per window instead (a long cell's
        windows are a fraction of it: gating the whole cell read it all once more); ``hits``, where
        the prefilter's hits in it are known already (default: looked for here). Decoded views get
        the rules the scanner's gate keeps for their text (every rule without one). Returns the
        cell's findings and the limits it hit (each a message without cell content).
        """
        timer = timer or Timer()
        raw_rules = self.rules if raw_rules is None else raw_rules
        limits: list[str] = []
        raw: list[Reading] = []
        known: dict[Occurrence, tuple[str, ...]] = {}  # -> its decode chain
        t = time.perf_counter()
        gate_before = timer.totals["gate"]  # (_gated_windows counts the gate's time as its own stage)
        decoding = 0.0  # time spent producing decoded views: a stage of its own (so is gating)
        budget = decoders.DecodeBudget.of(self.options.decode)
        for offset, window, continued, selected in self._gated_windows(text, hits, gate, timer):
            if selected is not None:
                raw_rules = self.rules_of(selected)
            if self.known:
                for hit in self.known.in_raw(window):
                    known.setdefault(Occurrence(hit.entry.digest, offset + hit.start, offset + hit.end), hit.encoding)
            since = time.perf_counter()
            views = list(decoders.views(
                window, self.options.decode, limits.append, self.keywords, continued=continued, budget=budget
            ))
            decoding += time.perf_counter() - since
            decoded_rules = self._decoded_rules(views, timer)
            for view in views:
                if self.known and view.encoding:
                    for entry, k_start, k_end in self.known.in_view(view.text):
                        k_start, k_end = view.original_span(k_start, k_end)
                        key = Occurrence(entry.digest, offset + k_start, offset + k_end)
                        if len(known.get(key, view.encoding)) >= len(view.encoding):
                            known[key] = view.encoding
                rules = raw_rules if not view.encoding else next(decoded_rules)
                if not rules:
                    continue
                try:
                    present = self.keywords.present(view.text)
                    for cand in detect(view, rules, self.options.regex_timeout, present, self.known_keywords):
                        start, end = view.original_span(cand.start, cand.end)
                        if offset and not view.encoding:
                            # A verifier reads the cell around a raw match: give it cell offsets.
                            cand = replace(cand, start=offset + cand.start, end=offset + cand.end)
                        raw.append(Reading(cand, offset + start, offset + end))
                except RegexTimeout as err:
                    limits.append(f"rule {err.rule_id}: pattern time limit ({self.options.regex_timeout:g}s) exceeded")
        timer.totals["decode"] += decoding
        t = timer.add("match", t + decoding + timer.totals["gate"] - gate_before)
        limits = list(dict.fromkeys(limits))  # one message per limit kind, however many windows hit it
        if not raw and not known:  # most candidate cells: a keyword, but no secret
            timer.add("verify", t)
            return CellScan([], limits)
        kept = deduplicate(raw, self.ruleset, text) if raw else []
        known = one_per_occurrence(known)
        labels = {entry.digest: entry.label for entry in self.known.entries}
        spans = sorted([(r.start, r.end, preview(r.candidate.secret)) for r in kept]
                       + [(o.start, o.end, labels[o.digest]) for o in known])
        reach = span_reach(spans)
        verifications = Verifications(self.options.now, text)
        cap = cell_finding_cap(self.options)
        listed = kept if len(kept) <= cap else listed_over_cap(kept, cap, verifications, self.ruleset)
        out = [self._cell_finding(item, verifications, text, spans, reach) for item in listed]
        out = settle_wrap_readings(listed, out, text)
        if len(listed) < len(kept):
            aggregates = cell_aggregates(kept, listed, verifications, self.ruleset, text, spans, reach)
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
                start=found.start,
                end=found.end,
                fingerprint="sha256:" + found.digest,
                preview=labels[found.digest],
                verdict=Verdict.VALID,
                detail=f"{labels[found.digest]}: an occurrence of a secret you named (--known-secrets)",
                encoding=chain,
                context=context_snippet(text, found.start, found.end, spans, reach),
            )
            for found, chain in sorted(known.items(), key=lambda item: (item[0].start, item[0].end))
        ]
        timer.add("verify", t)
        return CellScan(out, limits)

    def _cell_finding(
        self, item: Reading, verifications: Verifications, text: str,
        spans: list[tuple[int, int, str]], reach: list[int],
    ) -> CellFinding:
        """One listed finding: its verification (memoised per cell), preview, fingerprint and context."""
        cand, start, end = item.candidate, item.start, item.end
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

    def _decoded_rules(self, views: list[decoders.View], timer: Timer) -> Iterator[tuple[Rule, ...]]:
        """The rules to run on each decoded view of ``views`` (in order): those the rule gate keeps
        for its text, all the views of a window gated in one call (every rule without a gate).

        The gate is a superset test of a text, raw or decoded: a decoded view of code or of a
        joined listing names the keywords of many rules and matches the gates of few."""
        texts = [view.text for view in views if view.encoding]
        if self.gate is None or not texts:
            return itertools.repeat(self.rules)
        since = time.perf_counter()
        try:
            selections = self.gate.rules_for(texts)
        except UnicodeEncodeError:
            # A lone surrogate (a text handed to scan_text, not read from a shard) is not UTF-8
            # and cannot be gated: every rule runs, as on any text the gate cannot read.
            return itertools.repeat(self.rules)
        finally:
            timer.totals["gate"] += time.perf_counter() - since
        return map(self.rules_of, selections)

    def _gated_windows(
        self, text: str, hits: hit_windows.Hits | None, gate: RuleGate | None, timer: Timer
    ) -> Iterator[tuple[int, str, bool, tuple[int, ...] | None]]:
        """:meth:`_windows_of`, each with the indexes of the rules ``gate`` keeps for its raw text
        (None without a gate), gated a batch of windows per call (:func:`_gathered`): the gate's
        fixed cost per call (an Arrow array, a Hyperscan pass set up) is most of its cost on a window of a few KB."""
        windows = self._windows_of(text, hits)
        if gate is None:
            for offset, window, continued in windows:
                yield offset, window, continued, None
            return
        while batch := _gathered(windows):
            since = time.perf_counter()
            selections = gate.rules_for([window for _, window, _ in batch])
            timer.totals["gate"] += time.perf_counter() - since
            for (offset, window, continued), selected in zip(batch, selections, strict=True):
                yield offset, window, continued, selected

    def _windows_of(self, text: str, known: hit_windows.Hits | None = None) -> Iterator[tuple[int, str, bool]]:
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
            hits = known if known is not None else hit_windows.hits(
                text,
                hyperscan_matcher.database(self.prefilter.expressions, cache_dir=self.prefilter.cache_dir),
                self.prefilter.start_keywords, self.prefilter.token_ids,
            )
            spans = hit_windows.windows(text, hits.ends, hits.token_ends) if hits is not None else None
        if spans is None:
            for offset, window in _windows(text, size, overlap):
                yield offset, window, offset > 0
            return
        for span in spans:
            for offset, window in _windows(text[span.start : span.end], size, overlap):
                yield span.start + offset, window, offset > 0


def _gathered(windows: Iterator[tuple[int, str, bool]]) -> list[tuple[int, str, bool]]:
    """The next windows to gate in one call: up to :data:`GATED_AT_ONCE` of them, and no more once
    they hold :data:`GATED_CHARS` characters (always at least one; none when ``windows`` is done)."""
    out: list[tuple[int, str, bool]] = []
    chars = 0
    for window in windows:
        out.append(window)
        chars += len(window[1])
        if len(out) >= GATED_AT_ONCE or chars >= GATED_CHARS:
            break
    return out


def one_per_occurrence(known: dict[Occurrence, tuple[str, ...]]) -> dict[Occurrence, tuple[str, ...]]:
    """One known-secret hit per occurrence: of overlapping hits of one entry (the base64 form found
    in the raw text, and the decoded run it lies in), the least-decoded, narrowest one."""
    kept: dict[Occurrence, tuple[str, ...]] = {}
    # The kept hits of one entry are disjoint: kept in start order, only the two neighbours of a
    # new hit can overlap it (a cell repeating a token 100,000 times is not a quadratic loop).
    spans: dict[str, tuple[list[int], list[int]]] = {}
    for key in sorted(known, key=lambda k: (len(known[k]), k.end - k.start, k.start)):
        starts, ends = spans.setdefault(key.digest, ([], []))
        at = bisect.bisect_left(starts, key.start)
        if (at > 0 and ends[at - 1] > key.start) or (at < len(starts) and starts[at] < key.end):
            continue
        starts.insert(at, key.start)
        ends.insert(at, key.end)
        kept[key] = known[key]
    return kept


def _windows(text: str, size: int, overlap: int) -> Iterable[tuple[int, str]]:
    if len(text) <= size:
        yield 0, text
        return
    step = max(1, size - overlap)
    for offset in range(0, len(text), step):
        yield offset, text[offset : offset + size]
        if offset + size >= len(text):
            break


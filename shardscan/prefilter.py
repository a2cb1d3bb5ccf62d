"""Vectorised prefilter: one pass over whole Arrow arrays (Hyperscan, else RE2) selects the few candidate cells."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import numpy as np
import pyarrow as pa

from shardscan import arrow_compute as compute
from shardscan import hyperscan_matcher


def _re2_literal(keyword: str) -> str:
    # RE2 accepts a backslash before any punctuation, so escaping every non-word char is safe.
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in keyword)


# Where a token keyword counts (see ``Ruleset.token_keywords``): at the start of the
# text, after a character that is not an ASCII letter or digit, after an escape that ends in
# one (``%3D``, twice-encoded ``%253D``, ``\\u003d``, ``\\x3d``, ``\\n``), or after a terminal
# control sequence, which ends in a letter: a colour (``ESC[32m``, ``\\033[1;33m``, grep's
# ``ESC[K``), a cursor move (``ESC[1G``), hiding the cursor (``ESC[?25l``) or bracketed paste
# (``ESC[?2004l``), which terminal captures print right before command output. Every built-in
# rule that declares such keywords has a lookbehind inside this set. (The sequence's parameters
# are matched unbounded: Hyperscan 0.9 misses matches of a bounded ``[0-9;]{0,16}`` in this
# alternation, and a superset is harmless.)
TOKEN_BOUNDARY = (
    r"[^A-Za-z0-9]|%[0-9A-Fa-f]{2}|%25[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\[nrt]|\[[0-9;?]*[A-Za-z@]"
)
TOKEN_START = r"(?:^|" + TOKEN_BOUNDARY + ")"
# Hyperscan gets the token boundary in three expressions (the same union of matches): a character
# that is not a letter or digit, the escapes, and the terminal sequence. In one alternation, the
# class of any non-alphanumeric byte made the keywords' expression six times slower to scan (26 ms
# against 4 ms per 10 MB of agent traces), the largest single cost of the prefilter; the escapes
# each on their own took four times longer to compile (``%[0-9A-Fa-f]{2}`` alone: 90 ms); and
# the terminal sequence's unbounded parameters made the cost grow with every token keyword.
_CSI_BOUNDARY = r"\[[0-9;?]*[A-Za-z@]"
_NOT_ALNUM, *_ESCAPES = TOKEN_BOUNDARY.removesuffix("|" + _CSI_BOUNDARY).split("|")
_HYPERSCAN_BOUNDARIES = (_NOT_ALNUM, "|".join(_ESCAPES), _CSI_BOUNDARY)


def _hyperscan_exact(pattern: str) -> bool:
    """Whether Hyperscan, scanning a whole data buffer bytewise, matches what RE2 matches cell by cell.

    Hyperscan runs without UTF-8 mode (binary columns and damaged text are not valid UTF-8), so an
    extra pattern qualifies only if every atom means the same on bytes: literal characters
    (non-ASCII ones are their UTF-8 bytes in both), escaped punctuation, ``\\d``/``\\s``/``\\w``,
    ``\\n``-style escapes, ``\\xNN`` below 0x80, and classes of ASCII characters that are not
    negated (a negated class matches a whole code point in RE2 but one byte here). Anything else
    (``.``, ``\\p``, ``\\x{...}``, inline flags such as case folding) and syntax whose meaning
    depends on where a cell starts or ends (anchors, word boundaries, lookbehinds: in the buffer,
    a cell's neighbours are its context) sends the prefilter to RE2. (The keyword literals and
    the token-start expression are built here and hold by construction.)
    """
    escaped = in_class = False
    for i, char in enumerate(pattern):
        if not char.isascii() and in_class:
            return False
        if escaped:
            escaped = False
            if char.isalnum() and char not in "dswnrtfv" and (
                char != "x" or not re.fullmatch(r"[0-7][0-9A-Fa-f]", pattern[i + 1 : i + 3])
            ):
                return False
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]" or pattern[i - 1] == "["
        elif char == "[":
            if pattern.startswith("[^", i):
                return False
            in_class = True
        elif char in "^$." or (pattern.startswith("(?", i) and not pattern.startswith("(?:", i)):
            return False
    return True


@dataclass(frozen=True, slots=True)
class Prefilter:
    """The keyword patterns, run over whole Arrow arrays in C++ (no Python per cell).

    ``pattern`` is their RE2 alternation (``pyarrow.compute``). Where Hyperscan is installed,
    ``expressions`` run as one multi-pattern database over each array's data buffer instead
    (:mod:`shardscan.hyperscan_matcher`), and the cells that begin with one of ``start_keywords``
    (the token keywords, as UTF-8) are added: a cell's start is the one place where its context
    is not in the buffer (the bytes before it belong to the cell before). Both paths
    select the same cells, except that Hyperscan may add a cell whose match began in the bytes of
    the cell before it (a superset: every selected cell is then scanned exactly).
    """

    pattern: str
    expressions: tuple[str, ...] = ()
    start_keywords: tuple[bytes, ...] = ()
    # Where sealed compiled databases may be reused from (None: compiled in memory, no file read).
    cache_dir: Path | None = None
    # The deep keyword forms (in ``expressions`` too): what ``pattern`` lacks, so the part of an
    # array that RE2 finishes (dense matches) is also searched for them.
    deep: tuple[str, ...] = ()
    # The ids (indexes in ``expressions``) of the expressions that match a token keyword where it
    # begins a token: a hit of theirs gets a token keyword's narrower window (``hit_windows``).
    token_ids: frozenset[int] = frozenset()

    @classmethod
    def from_keywords(
        cls, keywords: Iterable[str], extra_patterns: Iterable[str] = (), token_keywords: Iterable[str] = (),
        hyperscan_patterns: Iterable[str] = (),
        *, cache_dir: Path | None = None,
    ) -> Prefilter:
        """Build the prefilter from plain keywords and extra RE2 patterns (e.g. encoded keyword forms).

        Keywords in ``token_keywords`` only count where they start a token (:data:`TOKEN_START`).
        ``hyperscan_patterns`` (the deep keyword forms) join the Hyperscan database only: as one
        RE2 alternation, RE2's automaton outgrows its memory and the prefilter became 100 times
        slower, so the RE2 fallback leaves them out (a documented gap of platforms without Hyperscan).
        """
        anchored = {k for k in token_keywords if k}
        plain = sorted({_re2_literal(k) for k in keywords if k and k not in anchored})
        tokens = "(?:" + "|".join(sorted(_re2_literal(k) for k in anchored)) + ")" if anchored else ""
        extras = sorted(set(extra_patterns))
        parts = plain + ([TOKEN_START + tokens] if tokens else []) + extras
        if not parts:
            return cls(pattern="", cache_dir=cache_dir)
        deep = sorted(set(hyperscan_patterns) - set(extras))
        bounded = [f"(?:{b}){tokens}" for b in _HYPERSCAN_BOUNDARIES] if tokens else []
        expressions = tuple(plain + bounded + extras + deep)
        if not all(_hyperscan_exact(e) for e in extras + deep):
            expressions = ()
        # Token keywords at a token start, and the deep forms (base64 runs, every one of them): what
        # they report lies in the token the hit is in.
        token_ids = frozenset(
            [*range(len(plain), len(plain) + len(bounded)), *range(len(expressions) - len(deep), len(expressions))]
        ) if expressions else frozenset()
        return cls("|".join(parts), expressions, tuple(sorted(k.encode("utf-8") for k in anchored)), cache_dir,
                   tuple(deep) if expressions else (), token_ids)

    def warm(self) -> None:
        """Compile (or load) the Hyperscan database now, e.g. before worker processes fork.

        Without a cache folder the compilation runs in the background, alongside the caller's
        next steps (the rule gate, the keyword searches); the first scan and every fork wait for it.
        """
        if self.cache_dir is None:
            hyperscan_matcher.compile_ahead(self.expressions)
        else:
            hyperscan_matcher.database(self.expressions, cache_dir=self.cache_dir)

    def mask(self, values: pa.Array) -> np.ndarray:
        """Boolean mask of the cells of ``values`` that may hold a secret (nulls are False)."""
        return self.masks([values])[0]

    def masks(self, arrays: list[pa.Array]) -> list[np.ndarray]:
        """:meth:`mask` of several arrays (the leaves of a row group)."""
        return self.select(arrays)[0]

    def select(
        self, arrays: list[pa.Array], *, record: bool = False
    ) -> tuple[list[np.ndarray], list[hyperscan_matcher.CellMatches | None]]:
        """:meth:`mask` of several arrays (the leaves of a row group), and with ``record`` where each
        match ended in each string array that Hyperscan scanned in place (None for the others:
        dictionaries, binaries, other types, RE2).

        Hyperscan scans each array's data buffer where it lies. RE2 gets the arrays of a type
        family concatenated instead: Arrow compiles an RE2 pattern on every call (about a
        millisecond for the full pattern with encoded keyword forms), which costs more than the copy.
        """
        matches: list[hyperscan_matcher.CellMatches | None] = [None] * len(arrays)
        if not self.pattern:
            return [np.zeros(len(a), dtype=bool) for a in arrays], matches
        targets = [values.dictionary if pa.types.is_dictionary(values.type) else values for values in arrays]
        compiled = hyperscan_matcher.database(self.expressions, cache_dir=self.cache_dir)
        if compiled is not None:
            # Strings and binaries of either offset width are scanned as they are; other types
            # (string views) as large strings, a copy.
            targets = [t if value_offsets(t) is not None else _widen(t) for t in targets]
            # (Only text arrays scanned where they lie: a binary cell's text is decoded with
            # replacements, and a dictionary's or a copy's offsets are not the cells'.)
            recorded = [record and t is a and (pa.types.is_string(a.type) or pa.types.is_large_string(a.type))
                        for t, a in zip(targets, arrays, strict=True)]
            found = [self._match(t, compiled, record=r) for t, r in zip(targets, recorded, strict=True)]
            flat = [f.mask for f in found]
            matches = [f if r else None for f, r in zip(found, recorded, strict=True)]
            for hits, starts in zip(flat, self._token_starts(targets), strict=True):
                hits |= starts
        else:
            flat = self._masks_re2([_widen(t) for t in targets])
        out: list[np.ndarray] = []
        for values, hits in zip(arrays, flat, strict=True):
            if pa.types.is_dictionary(values.type):
                # Each distinct value was matched once; spread the answer through the indices.
                indices = values.indices.to_numpy(zero_copy_only=False)
                valid = compute.is_valid(values).to_numpy(zero_copy_only=False)
                spread = np.zeros(len(values), dtype=bool)
                spread[valid] = hits[indices[valid].astype(np.int64)]
                hits = spread
            out.append(hits)
        return out, matches

    def _masks_re2(self, targets: list[pa.Array]) -> list[np.ndarray]:
        """RE2 masks of widened arrays, one pass per type family."""
        flat: list[np.ndarray | None] = [None] * len(targets)
        for family in (pa.large_string(), pa.large_binary()):
            members = [i for i, t in enumerate(targets) if t.type == family and len(t)]
            if not members:
                continue
            # (One member needs no concatenation, which would copy all of its text.)
            joined = targets[members[0]] if len(members) == 1 else pa.concat_arrays([targets[i] for i in members])
            hits = _re2(joined, self.pattern)
            at = 0
            for i in members:
                flat[i] = hits[at : at + len(targets[i])]
                at += len(targets[i])
        # Empty arrays, and types that did not widen, are matched on their own.
        return [h if h is not None else _re2(t, self.pattern) if len(t) else np.zeros(0, dtype=bool)
                for t, h in zip(targets, flat, strict=True)]

    def _match(
        self, values: pa.Array, compiled: hyperscan_matcher.Compiled, *, record: bool = False
    ) -> hyperscan_matcher.CellMatches:
        """Hyperscan's matches in a string or binary array (RE2's mask for an array of another type)."""
        offsets = value_offsets(values)
        if offsets is None:
            mask = _re2(values, self.pattern) if len(values) else np.zeros(0, dtype=bool)
            return hyperscan_matcher.CellMatches(mask, len(values), np.zeros(0, dtype=np.int64))
        data = values.buffers()[2]
        found = hyperscan_matcher.match_cells(
            compiled.db, offsets, memoryview(data if data is not None else b""), record=record,
            aliases=compiled.aliases,
        )
        mask, scanned = found.mask, found.scanned
        if scanned < len(values):  # dense matches: RE2 finishes the array
            rest = values.slice(scanned)
            mask[scanned:] = _re2(rest, self.pattern) | self._deep_mask(rest)
        if values.null_count:
            mask &= compute.is_valid(values).to_numpy(zero_copy_only=False)
        return found

    def _deep_mask(self, values: pa.Array) -> np.ndarray:
        """The cells of a string or binary array holding a deep keyword form (which ``pattern``
        leaves out); where even these are dense, every cell left is selected (a superset)."""
        mask = np.zeros(len(values), dtype=bool)
        offsets = value_offsets(values)
        compiled = hyperscan_matcher.database(self.deep, cache_dir=self.cache_dir) if self.deep else None
        if compiled is None or offsets is None:
            return mask
        data = values.buffers()[2]
        mask, scanned = hyperscan_matcher.first_match_cells(
            compiled.db, offsets, memoryview(data if data is not None else b"")
        )
        mask[scanned:] = True
        return mask

    def _token_starts(self, targets: list[pa.Array]) -> list[np.ndarray]:
        """Masks of the cells of string or binary arrays that begin with a token keyword (``start_keywords``).

        Vectorised: the cells' first two bytes are looked up in a table, then the cells that pass
        are compared with each keyword byte by byte, all in numpy (a column of ``git …`` commands
        passes the table by the thousand). An array of another type was matched by RE2 whole,
        anchors included: it needs no separate pass.
        """
        out = [np.zeros(len(t), dtype=bool) for t in targets]
        if not self.start_keywords:
            return out
        shortest = min(len(k) for k in self.start_keywords)
        width, heads = _keyword_heads(self.start_keywords)
        for values, mask in zip(targets, out, strict=True):
            offsets = value_offsets(values)
            data = values.buffers()[2] if offsets is not None and len(values) else None
            if offsets is None or data is None:
                continue
            raw = np.frombuffer(data, dtype=np.uint8)
            starts = offsets[:-1].astype(np.int64)
            lengths = (offsets[1:] - offsets[:-1]).astype(np.int64)
            cells = np.flatnonzero(lengths >= shortest)
            lead = raw[starts[cells]].astype(np.int64)
            if width == 2:
                lead = lead << 8 | raw[starts[cells] + 1]
            cells = cells[heads[lead]]
            if not len(cells):
                continue
            begins, room = starts[cells], lengths[cells]
            hit = np.zeros(len(cells), dtype=bool)
            for keyword in self.start_keywords:
                fits = np.flatnonzero(room >= len(keyword))
                same = np.ones(len(fits), dtype=bool)
                for offset, byte in enumerate(keyword):
                    same &= raw[begins[fits] + offset] == byte
                hit[fits[same]] = True
            if values.null_count:  # a null slot's bytes are not a cell's text
                hit &= compute.is_valid(values).to_numpy(zero_copy_only=False)[cells]
            mask[cells[hit]] = True
        return out


@lru_cache(maxsize=4)
def _keyword_heads(keywords: tuple[bytes, ...]) -> tuple[int, np.ndarray]:
    """How many leading bytes of a cell to look up (two, or one if a keyword is that short), and
    the table of the values of those bytes that begin a keyword."""
    width = min(2, min(len(k) for k in keywords))
    table = np.zeros(1 << (8 * width), dtype=bool)
    table[[int.from_bytes(k[:width], "big") for k in keywords]] = True
    return width, table


def _re2(values: pa.Array, pattern: str) -> np.ndarray:
    """RE2's mask of the cells of ``values`` holding a match of ``pattern`` (nulls are False)."""
    matched = compute.match_substring_regex(values, pattern)
    return cast(np.ndarray, compute.fill_null(matched, False).to_numpy(zero_copy_only=False))


def value_offsets(values: pa.Array) -> np.ndarray | None:
    """The ``len + 1`` value offsets of a string or binary array (either width), else ``None``."""
    kind = values.type
    width: type[np.signedinteger[Any]]
    if pa.types.is_string(kind) or pa.types.is_binary(kind):
        width = np.int32
    elif pa.types.is_large_string(kind) or pa.types.is_large_binary(kind):
        width = np.int64
    else:
        return None
    if len(values) == 0:
        return np.zeros(1, dtype=width)
    return np.frombuffer(values.buffers()[1], dtype=width)[values.offset : values.offset + len(values) + 1]


def _widen(values: pa.Array) -> pa.Array:
    """The array as large_string or large_binary, so arrays of one family concatenate; else as is."""
    kind = values.type
    try:
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or str(kind) == "string_view":
            return compute.cast(values, pa.large_string())
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or str(kind) == "binary_view":
            return compute.cast(values, pa.large_binary())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    return values


@dataclass(frozen=True, slots=True)
class RuleGate:
    """Per-rule gates (relaxed rule patterns) deciding which rules can match a cell's raw text.

    ``gates[i]`` is rule i's relaxed pattern (valid RE2), or ``None`` for a rule that must always
    run; ``union`` matches any text some gated rule may match. Where Hyperscan is installed, it
    runs all gates in one pass per text, each as its ``wide`` form (a superset that Hyperscan
    accepts, see ``relax(open_ranges=True)``; default: the gate itself), and RE2 runs the gates
    Hyperscan refuses; otherwise RE2 runs the union, then each gate on the texts the union matched.
    """

    union: str
    gates: tuple[str | None, ...]
    wide: tuple[str | None, ...] = ()
    # Where sealed compiled databases may be reused from (None: compiled in memory, no file read).
    cache_dir: Path | None = None
    # Derived once (see __post_init__): rules_for runs once per window of a long cell, and
    # deriving these from ``gates`` took most of its time on a short window.
    _gated: dict[int, str] = field(init=False, repr=False, compare=False)
    _always: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _caseless: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _expressions: tuple[list[str], list[int]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        gated = {i: g for i, g in enumerate(self.gates) if g is not None}
        wide = self.wide or self.gates
        eligible = {i: wide[i] or gate for i, gate in gated.items()}
        object.__setattr__(self, "_gated", gated)
        object.__setattr__(self, "_always", tuple(i for i, g in enumerate(self.gates) if g is None))
        object.__setattr__(self, "_caseless", tuple(i for i, g in gated.items() if "(?i" in g))
        object.__setattr__(self, "_expressions", (list(eligible.values()), list(eligible)))

    @classmethod
    def from_patterns(
        cls, relaxed: Iterable[str | None], wide: Iterable[str | None] | None = None, *, cache_dir: Path | None = None
    ) -> RuleGate:
        """Build the gate from each rule's relaxed pattern (``None``: no gate), keeping only valid RE2.

        ``wide`` optionally gives, per rule, a looser superset of its relaxed pattern for Hyperscan.
        """
        gates = tuple(p if p is not None and _re2_compiles(p) else None for p in relaxed)
        wide_forms = tuple(wide) if wide is not None else gates
        if len(wide_forms) != len(gates):
            raise ValueError("one wide gate per rule")
        wide_forms = tuple(w if g is not None and w is not None else g for g, w in zip(gates, wide_forms, strict=True))
        union = "|".join(f"(?:{p})" for p in gates if p is not None)
        if union and not _re2_compiles(union):
            return cls("", tuple(None for _ in gates), cache_dir=cache_dir)
        return cls(union, gates, wide_forms, cache_dir)

    def warm(self) -> None:
        """Compile (or load) the Hyperscan database now, e.g. before worker processes fork (in the
        background without a cache folder, as :meth:`Prefilter.warm`)."""
        if self.cache_dir is None and self.union:
            expressions, ids = self._expressions
            hyperscan_matcher.compile_ahead(expressions, hyperscan_matcher.UNICODE_SINGLE_MATCH, partial=True, ids=ids)
        else:
            self._compiled()

    def rules_for(self, texts: list[str]) -> list[tuple[int, ...]]:
        """For each text, the indexes of the rules that may match its raw form (in rule order)."""
        if not texts:
            return []
        if not self.union:
            return [tuple(range(len(self.gates)))] * len(texts)
        array = pa.array(texts, type=pa.large_string())
        compiled = self._compiled()
        if compiled is None:
            return self._rules_for_re2(array)
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[: len(array) + 1].tolist()
        data = array.buffers()[2]
        found = hyperscan_matcher.ids_per_cell(compiled, offsets, memoryview(data if data is not None else b""))
        # Hyperscan ids are rule indexes; the gates it refused run in RE2.
        for rule in sorted(set(self._gated) - set(compiled.ids)):
            for hit in np.flatnonzero(_re2(array, self._gated[rule])):
                found[int(hit)].add(rule)
        # RE2 folds case by Unicode's rules, where two non-ASCII letters fold to ASCII ones
        # (``ſ`` to s, the Kelvin sign to k). Hyperscan's folding is its own: a text holding either
        # keeps every rule whose gate folds case, so that no gate drops a rule RE2 would keep.
        caseless = self._caseless
        if caseless:
            # (Instant for most texts: Python answers "no" at once for a text without a character above U+00FF.)
            for text_index, text in enumerate(texts):
                if any(c in text for c in _FOLDS_TO_ASCII):
                    found[text_index].update(caseless)
        always = self._always
        return [tuple(sorted(always + tuple(ids))) for ids in found]

    def _compiled(self) -> hyperscan_matcher.Compiled | None:
        """The Hyperscan database of the wide gates, its ids the rule indexes (None: RE2 runs them all)."""
        if not self.union:
            return None
        expressions, ids = self._expressions
        return hyperscan_matcher.database(
            expressions, hyperscan_matcher.UNICODE_SINGLE_MATCH, partial=True, ids=ids, cache_dir=self.cache_dir
        )

    def _rules_for_re2(self, array: pa.Array) -> list[tuple[int, ...]]:
        always = self._always
        hit = np.flatnonzero(_re2(array, self.union))
        out: list[tuple[int, ...]] = [always] * len(array)
        if len(hit) == 0:
            return out
        sub = compute.take(array, hit)
        per_rule = {i: _re2(sub, g) for i, g in enumerate(self.gates) if g is not None}
        for row, text_index in enumerate(hit):
            out[int(text_index)] = tuple(i for i, g in enumerate(self.gates) if g is None or per_rule[i][row])
        return out


# The only characters outside ASCII that RE2's case folding maps onto ASCII letters (a test
# checks every code point): LATIN SMALL LETTER LONG S and KELVIN SIGN.
_FOLDS_TO_ASCII = ("\u017f", "\u212a")


def _re2_compiles(pattern: str) -> bool:
    try:
        compute.match_substring_regex(pa.array([""], type=pa.large_string()), pattern)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False

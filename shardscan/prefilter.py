"""Vectorised prefilter: one pass over whole Arrow arrays (Hyperscan, else RE2) selects the few candidate cells."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from shardscan import hyperscan_matcher


def _re2_literal(keyword: str) -> str:
    # RE2 accepts a backslash before any punctuation, so escaping every non-word char is safe.
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in keyword)


# Where a token keyword counts (see ``Ruleset.token_keywords``): at the start of the
# text, after a character that is not an ASCII letter or digit, or after an escape that ends in
# one (``%3D``, ``\\u003d``, ``\\x3d``, ``\\n``). Every built-in rule that declares such keywords
# has a lookbehind inside this set.
TOKEN_BOUNDARY = r"[^A-Za-z0-9]|%[0-9A-Fa-f]{2}|\\u[0-9A-Fa-f]{4}|\\x[0-9A-Fa-f]{2}|\\[nrt]"
TOKEN_START = r"(?:^|" + TOKEN_BOUNDARY + ")"



def _uses_cell_context(pattern: str) -> bool:
    """Whether ``pattern`` has syntax whose meaning depends on where a cell starts or ends.

    Hyperscan scans a whole array's data buffer, where a cell's neighbours are its context, so
    such a pattern runs in RE2 (anchors, word boundaries and lookbehinds outside a class).
    """
    escaped = in_class = False
    for i, char in enumerate(pattern):
        if escaped:
            escaped = False
            if not in_class and char in "bBAzZ":
                return True
        elif char == "\\":
            escaped = True
        elif in_class:
            in_class = char != "]" or pattern[i - 1] == "["
        elif char == "[":
            in_class = True
        elif char in "^$" or pattern.startswith("(?<", i):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Prefilter:
    """The keyword patterns, run over whole Arrow arrays in C++ (no Python per cell).

    ``pattern`` is their RE2 alternation (``pyarrow.compute``). Where Hyperscan is installed,
    ``expressions`` run as one multi-pattern database over each array's data buffer instead
    (:mod:`shardscan.hyperscan_matcher`), and ``start_pattern`` (RE2, anchored) adds the cells that
    begin with a token keyword, the one place where a cell's start is its context. Both paths
    select the same cells, except that Hyperscan may add a cell whose match began in the bytes of
    the cell before it (a superset: every selected cell is then scanned exactly).
    """

    pattern: str
    expressions: tuple[str, ...] = ()
    start_pattern: str = ""

    @classmethod
    def from_keywords(
        cls, keywords: Iterable[str], extra_patterns: Iterable[str] = (), token_keywords: Iterable[str] = ()
    ) -> Prefilter:
        """Build the prefilter from plain keywords and extra RE2 patterns (e.g. encoded keyword forms).

        Keywords in ``token_keywords`` only count where they start a token (:data:`TOKEN_START`).
        """
        anchored = {k for k in token_keywords if k}
        plain = sorted({_re2_literal(k) for k in keywords if k and k not in anchored})
        tokens = "(?:" + "|".join(sorted(_re2_literal(k) for k in anchored)) + ")" if anchored else ""
        extras = sorted(set(extra_patterns))
        parts = plain + ([TOKEN_START + tokens] if tokens else []) + extras
        if not parts:
            return cls(pattern="")
        expressions = tuple(plain + ([f"(?:{TOKEN_BOUNDARY}){tokens}"] if tokens else []) + extras)
        if any(_uses_cell_context(e) for e in extras):
            expressions = ()
        return cls("|".join(parts), expressions, "^" + tokens if tokens else "")

    def warm(self) -> None:
        """Compile (or load) the Hyperscan database now, e.g. before worker processes fork."""
        hyperscan_matcher.database(self.expressions)

    def mask(self, values: pa.Array) -> np.ndarray:
        """Boolean mask of the cells of ``values`` that may hold a secret (nulls are False)."""
        return self.masks([values])[0]

    def masks(self, arrays: list[pa.Array]) -> list[np.ndarray]:
        """:meth:`mask` of several arrays with one pass per type family.

        The leaves of a row group are matched together rather than one by one: Arrow compiles an
        RE2 pattern on every call (about a millisecond for the full pattern with encoded keyword
        forms), and a Hyperscan call has a fixed cost too.
        """
        if not self.pattern:
            return [np.zeros(len(a), dtype=bool) for a in arrays]
        targets: list[pa.Array] = []
        for values in arrays:
            target = values.dictionary if pa.types.is_dictionary(values.type) else values
            targets.append(_widen(target))
        flat: list[np.ndarray | None] = [None] * len(arrays)
        for family in (pa.large_string(), pa.large_binary()):
            members = [i for i, t in enumerate(targets) if t.type == family and len(t)]
            if not members:
                continue
            # (One member needs no concatenation, which would copy all of its text.)
            joined = targets[members[0]] if len(members) == 1 else pa.concat_arrays([targets[i] for i in members])
            hits = self._match(joined)
            at = 0
            for i in members:
                flat[i] = hits[at : at + len(targets[i])]
                at += len(targets[i])
        out: list[np.ndarray] = []
        for values, target, hits in zip(arrays, targets, flat, strict=True):
            if hits is None:  # empty, or a type that did not widen: matched on its own
                hits = self._re2(target, self.pattern) if len(target) else np.zeros(0, dtype=bool)
            if pa.types.is_dictionary(values.type):
                # Each distinct value was matched once; spread the answer through the indices.
                indices = values.indices.to_numpy(zero_copy_only=False)
                valid = values.is_valid().to_numpy(zero_copy_only=False)
                spread = np.zeros(len(values), dtype=bool)
                spread[valid] = hits[indices[valid].astype(np.int64)]
                hits = spread
            out.append(hits)
        return out

    def _match(self, values: pa.Array) -> np.ndarray:
        """Mask of a large_string or large_binary array, with Hyperscan where it is available."""
        compiled = hyperscan_matcher.database(self.expressions)
        if compiled is None:
            return self._re2(values, self.pattern)
        offsets = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
        data = values.buffers()[2]
        mask, scanned = hyperscan_matcher.first_match_cells(compiled.db, offsets, memoryview(data if data is not None else b""))
        if scanned < len(values):  # dense matches: RE2 finishes the array
            mask[scanned:] = self._re2(values.slice(scanned), self.pattern)
        if self.start_pattern:
            mask |= self._re2(values, self.start_pattern)
        if values.null_count:
            mask &= values.is_valid().to_numpy(zero_copy_only=False)
        return mask

    @staticmethod
    def _re2(values: pa.Array, pattern: str) -> np.ndarray:
        matched = pc.match_substring_regex(values, pattern)
        return pc.fill_null(matched, False).to_numpy(zero_copy_only=False)


def _widen(values: pa.Array) -> pa.Array:
    """The array as large_string or large_binary, so arrays of one family concatenate; else as is."""
    kind = values.type
    try:
        if pa.types.is_string(kind) or pa.types.is_large_string(kind) or str(kind) == "string_view":
            return values.cast(pa.large_string())
        if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or str(kind) == "binary_view":
            return values.cast(pa.large_binary())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    return values


@dataclass(frozen=True, slots=True)
class RuleGate:
    """Per-rule gates (relaxed rule patterns) deciding which rules can match a cell's raw text.

    ``gates[i]`` is rule i's relaxed pattern (valid RE2), or ``None`` for a rule that must always
    run; ``union`` matches any text some gated rule may match. See :mod:`shardscan.relax`.
    Hyperscan runs all gates in one pass per text where it is installed (RE2 runs the patterns it
    refuses); otherwise RE2 runs the union, then each gate on the texts the union matched.
    """

    union: str
    gates: tuple[str | None, ...]

    @classmethod
    def from_patterns(cls, relaxed: Iterable[str | None]) -> RuleGate:
        """Build the gate from each rule's relaxed pattern (``None``: no gate), keeping only valid RE2."""
        gates = tuple(p if p is not None and _re2_compiles(p) else None for p in relaxed)
        union = "|".join(f"(?:{p})" for p in gates if p is not None)
        if union and not _re2_compiles(union):
            return cls("", tuple(None for _ in gates))
        return cls(union, gates)

    def warm(self) -> None:
        """Compile (or load) the Hyperscan database now, e.g. before worker processes fork."""
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
        # Hyperscan ids are positions among the gated rules; the patterns it refused run in RE2.
        gated = [i for i, g in enumerate(self.gates) if g is not None]
        for position in sorted(set(range(len(gated))) - set(compiled.ids)):
            for text_index in np.flatnonzero(Prefilter._re2(array, self.gates[gated[position]])):
                found[int(text_index)].add(position)
        always = tuple(i for i, g in enumerate(self.gates) if g is None)
        return [tuple(sorted(always + tuple(gated[p] for p in ids))) for ids in found]

    def _compiled(self) -> hyperscan_matcher.Compiled | None:
        if not self.union:
            return None
        patterns = [g for g in self.gates if g is not None]
        return hyperscan_matcher.database(patterns, hyperscan_matcher.UNICODE_SINGLE_MATCH, partial=True)

    def _rules_for_re2(self, array: pa.Array) -> list[tuple[int, ...]]:
        always = tuple(i for i, g in enumerate(self.gates) if g is None)
        hit = np.flatnonzero(Prefilter._re2(array, self.union))
        out: list[tuple[int, ...]] = [always] * len(array)
        if len(hit) == 0:
            return out
        sub = array.take(pa.array(hit))
        per_rule = {i: Prefilter._re2(sub, g) for i, g in enumerate(self.gates) if g is not None}
        for row, text_index in enumerate(hit):
            out[int(text_index)] = tuple(i for i, g in enumerate(self.gates) if g is None or per_rule[i][row])
        return out


def _re2_compiles(pattern: str) -> bool:
    try:
        pc.match_substring_regex(pa.array([""], type=pa.large_string()), pattern)
        return True
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False

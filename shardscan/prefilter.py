"""Vectorised prefilter: one RE2 pass over whole Arrow arrays selects the few candidate cells."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _re2_literal(keyword: str) -> str:
    # RE2 accepts a backslash before any punctuation, so escaping every non-word char is safe.
    return "".join(c if c.isalnum() or c == "_" else "\\" + c for c in keyword)


@dataclass(frozen=True, slots=True)
class Prefilter:
    """A compiled keyword alternation run by pyarrow.compute (RE2, in C++, no Python per cell)."""

    pattern: str

    @classmethod
    def from_keywords(cls, keywords: Iterable[str], extra_patterns: Iterable[str] = ()) -> Prefilter:
        """Build the prefilter from plain keywords and extra RE2 patterns (e.g. encoded keyword forms)."""
        parts = sorted({_re2_literal(k) for k in keywords if k}) + sorted(set(extra_patterns))
        if not parts:
            return cls(pattern="")
        return cls(pattern="|".join(parts))

    def mask(self, values: pa.Array) -> np.ndarray:
        """Boolean mask of the cells of ``values`` that may hold a secret (nulls are False)."""
        if not self.pattern or len(values) == 0:
            return np.zeros(len(values), dtype=bool)
        if pa.types.is_dictionary(values.type):
            # Match each distinct value once, then spread the answer through the indices.
            dictionary_mask = self.mask(values.dictionary)
            indices = values.indices.to_numpy(zero_copy_only=False)
            valid = values.is_valid().to_numpy(zero_copy_only=False)
            out = np.zeros(len(values), dtype=bool)
            out[valid] = dictionary_mask[indices[valid].astype(np.int64)]
            return out
        matched = pc.match_substring_regex(values, self.pattern)
        return pc.fill_null(matched, False).to_numpy(zero_copy_only=False)


def python_pattern(prefilter: Prefilter) -> re.Pattern[str] | None:
    """The same alternation for Python's ``re`` (used on small in-Python texts such as windows)."""
    return re.compile(prefilter.pattern) if prefilter.pattern else None

"""Decoding stage: views of a cell's text (raw first, then decoded ones) with offset maps back."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class View:
    """One reading of a cell: the raw text, or text decoded from (part of) a parent view.

    ``encoding`` is the decode chain from the raw cell, outermost first. ``span_in_parent`` is the
    span of the parent's text this view was decoded from; a match anywhere in a decoded view maps
    back to that whole encoded span (the honest location of what a person would have to remove).
    """

    text: str
    encoding: tuple[str, ...] = ()
    parent: View | None = field(default=None, repr=False)
    span_in_parent: tuple[int, int] | None = None

    def original_span(self, start: int, end: int) -> tuple[int, int]:
        """Map a span of this view's text to a span of the raw cell text."""
        view: View = self
        while view.parent is not None and view.span_in_parent is not None:
            start, end = view.span_in_parent
            view = view.parent
        return start, end


@dataclass(frozen=True, slots=True)
class DecodeLimits:
    """Bounds on decoding work per cell."""

    max_depth: int = 3
    max_bytes: int = 4 * 1024 * 1024


def views(text: str, limits: DecodeLimits, on_limit: Callable[[str], None]) -> Iterator[View]:
    """Yield the raw view of ``text``, then its decoded views within ``limits``.

    Every limit hit is reported through ``on_limit`` with a message that holds no cell content.
    """
    yield View(text)


def encoded_keyword_patterns(keywords: Iterable[str]) -> list[str]:
    """RE2 patterns matching the encoded forms of ``keywords`` (for the prefilter)."""
    return []

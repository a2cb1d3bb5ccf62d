"""Detection stage: run rule patterns over a view's text, then entropy and stopword filters."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from shardscan import hyperscan_matcher
from shardscan.decoders import View
from shardscan.model import Candidate
from shardscan.ruleset import Rule


class RegexTimeout(Exception):
    """A rule's pattern exceeded its time budget on one cell (the cell is reported as a limit hit)."""

    def __init__(self, rule_id: str) -> None:
        self.rule_id = rule_id
        super().__init__(f"rule {rule_id}: pattern time limit exceeded")


@lru_cache(maxsize=4096)
def shannon_entropy(text: str) -> float:
    """Bits per character of ``text``.

    Cached: traces repeat the same look-alikes (``ghp_xxxx…`` placeholders, documented example
    keys) in cell after cell, and each would otherwise be counted again.
    """
    if not text:
        return 0.0
    counts = Counter(text)
    total = len(text)
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def passes_filters(rule: Rule, secret: str) -> bool:
    """Entropy and stopword filters: the part of a rule that drops look-alikes its regex matched."""
    if rule.min_entropy is not None and shannon_entropy(secret) < rule.min_entropy:
        return False
    lowered = secret.lower()
    return not any(word in lowered for word in rule.stopwords)


@dataclass(frozen=True, slots=True)
class _KeywordIndex:
    """Which rules of a tuple name each keyword: the rules a view's keywords select, without a test per rule."""

    rules: tuple[Rule, ...]
    known: frozenset[str]
    # Per keyword of ``known``, the positions of the rules that list it.
    by_keyword: dict[str, tuple[int, ...]]
    # The rules with keywords outside ``known`` (searched in the text): position and those keywords.
    searched: tuple[tuple[int, tuple[str, ...]], ...]


# By the identity of the rules tuple and of the known keywords: a cell's decoded views all get the
# rule set's own tuple, and its raw windows one tuple chosen by the rule gate.
_INDEXES: dict[tuple[int, int], _KeywordIndex] = {}
_INDEXES_MAX = 64


def _with_keywords(
    rules: tuple[Rule, ...], present: frozenset[str], known: frozenset[str], text: str
) -> list[Rule]:
    """The rules (in their order) with a keyword in ``present`` (of ``known``) or, outside ``known``, in ``text``."""
    index = _INDEXES.get((id(rules), id(known)))
    if index is None or index.rules is not rules or index.known is not known:
        index = _index(rules, known)
        if len(_INDEXES) >= _INDEXES_MAX:
            _INDEXES.clear()
        _INDEXES[(id(rules), id(known))] = index
    hits: set[int] = set()
    by_keyword = index.by_keyword
    for keyword in present:
        hits.update(by_keyword.get(keyword, ()))
    for position, keywords in index.searched:
        if position not in hits and any(k in text for k in keywords):
            hits.add(position)
    return [rules[position] for position in sorted(hits)]


def _index(rules: tuple[Rule, ...], known: frozenset[str]) -> _KeywordIndex:
    by_keyword: dict[str, list[int]] = {}
    searched: list[tuple[int, tuple[str, ...]]] = []
    for position, rule in enumerate(rules):
        for keyword in dict.fromkeys(k for k in rule.keywords if k in known):
            by_keyword.setdefault(keyword, []).append(position)
        outside = tuple(k for k in rule.keywords if k not in known)
        if outside:
            searched.append((position, outside))
    return _KeywordIndex(rules, known, {k: tuple(v) for k, v in by_keyword.items()}, tuple(searched))


def prefilter_matches(rule: Rule, text: str) -> bool:
    """:meth:`Rule.prefilter_in` (one of the rule's ``prefilter`` patterns matches in ``text``), as
    one Hyperscan pass where Hyperscan gives the same answer.

    Python's ``re`` tries a pattern that begins with a class (``[Ss][Ee][Cc]…``) at every position,
    0.2 ms per 3 KB window, and it runs on every view of every window naming a ``token``; the
    automaton does not. Python's ``re`` answers where Hyperscan is off or refuses a pattern, where
    a pattern holds an atom the two engines read differently (:func:`_same_in_hyperscan`), for
    text that is not UTF-8 (a lone surrogate), and for non-ASCII text when a pattern folds case
    (the two engines fold some non-ASCII letters differently).
    """
    same, folds = _engines_agree(rule.prefilter)
    compiled = hyperscan_matcher.database(rule.prefilter, hyperscan_matcher.UNICODE_SINGLE_MATCH) if same else None
    if compiled is not None and (text.isascii() or not folds):
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            data = None
        if data is not None:
            return hyperscan_matcher.any_match(compiled, data)
    return rule.prefilter_in(text)


def compile_prefilters_ahead(rules: tuple[Rule, ...]) -> None:
    """Start compiling the Hyperscan databases :func:`prefilter_matches` uses, in the background
    (before worker processes fork: compiled once rather than in every worker)."""
    for rule in rules:
        if rule.prefilter:
            hyperscan_matcher.compile_ahead(rule.prefilter, hyperscan_matcher.UNICODE_SINGLE_MATCH)


@lru_cache(maxsize=64)
def _engines_agree(patterns: tuple[str, ...]) -> tuple[bool, bool]:
    """Whether Hyperscan reads every one of ``patterns`` as Python's ``re`` does, and whether one folds case."""
    return all(_same_in_hyperscan(p) for p in patterns), any("(?i" in p for p in patterns)


_POSIX_CLASS = re.compile(r"\[:[A-Za-z]+:\]")


def _same_in_hyperscan(pattern: str) -> bool:
    r"""Whether ``pattern`` holds only atoms that Hyperscan (UTF-8, Unicode properties) and Python's
    ``re`` read alike: literals, escaped punctuation, ``\n``-style escapes, ``\xNN`` below 0x80,
    classes, groups, repeats, ``.`` and case folding (compared per text by the caller).

    Not: the class shorthands (Python's ``\s`` takes ``\x1c``-``\x1f`` for spaces, Hyperscan's
    does not), ``\b``, ``\A``, ``\Z`` and the other letter escapes, POSIX classes
    (``[[:space:]]`` is a set of characters to Python), a repeat with no lower bound (``{,5}`` is
    a repeat to Python 3.11, literal text to Hyperscan), and any ``(?`` group but ``(?:``,
    ``(?i:`` and ``(?i)``.
    """
    if _POSIX_CLASS.search(pattern) or "{," in pattern:
        return False
    at = 0
    while at < len(pattern):
        if pattern[at] == "\\":
            following = pattern[at + 1 : at + 2]
            if following.isalnum() and following not in "nrtfv" and not (
                following == "x" and re.fullmatch(r"[0-7][0-9A-Fa-f]", pattern[at + 2 : at + 4])
            ):
                return False
            at += 2
            continue
        if pattern.startswith("(?", at) and not pattern.startswith(("(?:", "(?i:", "(?i)"), at):
            return False
        at += 1
    return True


def detect(
    view: View,
    rules: tuple[Rule, ...],
    timeout: float,
    present: frozenset[str] | None = None,
    known: frozenset[str] = frozenset(),
) -> Iterator[Candidate]:
    """Yield candidates for every rule whose keywords appear in the view.

    ``present`` (optional) is the set of keywords found in the view by one pass over it, out of
    ``known`` (the keywords that pass looked for); a rule's keyword outside ``known`` is searched
    in the text as usual. Offsets are those of the view's text; raises RegexTimeout when a
    pattern runs past ``timeout`` seconds on this view.
    """
    text = view.text
    selected = rules if present is None else _with_keywords(rules, present, known, text)
    for rule in selected:
        if present is None and not any(keyword in text for keyword in rule.keywords):
            continue
        if rule.prefilter and not prefilter_matches(rule, text):
            continue  # (a rule with prefilter patterns also needs one of them: Rule.keyword_in)
        try:
            for match in rule.pattern.finditer(text, timeout=timeout):
                secret = match.group("secret")
                if not secret or not passes_filters(rule, secret):
                    continue
                groups = tuple((k, v) for k, v in match.groupdict().items() if v is not None and k != "secret")
                yield Candidate(
                    rule_id=rule.id,
                    secret=secret,
                    start=match.start("secret"),
                    end=match.end("secret"),
                    encoding=view.encoding,
                    groups=groups,
                )
        except TimeoutError:
            raise RegexTimeout(rule.id) from None

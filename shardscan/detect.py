"""Detection stage: run rule patterns over a view's text, then entropy and stopword filters."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache

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
    for rule in rules:
        if present is None:
            if not rule.keyword_in(text):
                continue
        elif not any(k in present if k in known else k in text for k in rule.keywords) or (
            rule.prefilter and not rule.keyword_in(text)
        ):
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

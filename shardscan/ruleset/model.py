"""Compiled rules and rule sets, as the detector uses them."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from shardscan.model import Severity, Verdict

SEVERITIES: tuple[str, ...] = tuple(str(s) for s in Severity)


@dataclass(frozen=True, slots=True)
class Example:
    """A rule example: text (possibly a ``{{generator}}`` template) and, optionally, its expected verdict."""

    text: str
    verdict: Verdict | None = None


@dataclass(frozen=True, slots=True)
class Rule:
    """One detection rule, validated and compiled."""

    id: str
    kind: str
    name: str
    description: str
    severity: Severity
    keywords: tuple[str, ...]
    pattern: regex.Pattern[str] = field(repr=False, compare=False)
    pattern_source: str
    source: str
    min_entropy: float | None = None
    stopwords: tuple[str, ...] = ()
    verify: tuple[str, ...] = ()
    examples: tuple[Example, ...] = ()
    negative_examples: tuple[Example, ...] = ()
    # Keywords this rule only matches at the start of a token, followed by token characters
    # (see ``Ruleset.token_keywords``).
    token_keywords: tuple[str, ...] = ()
    # Keywords that name the secret rather than begin it (see ``Ruleset.context_keywords``).
    context_keywords: tuple[str, ...] = ()
    # A fallback rule catches a family's shapes no specific rule knows (any ``sk-`` key): where a
    # finding of a specific rule overlaps one of it, the specific rule's finding is the secret's
    # only finding.
    fallback: bool = False
    # RE2 patterns that select this rule's cells in the prefilter instead of its keywords: for
    # keywords too common to select on alone (``://`` in every URL, ``password`` in prose), a
    # pattern of the credential's shape around them (``://user:pass@``, ``password=``). The
    # keywords still decide which views the rule runs on.
    prefilter: tuple[str, ...] = ()

    def keyword_in(self, text: str) -> bool:
        """True when any of the rule's keywords occurs in ``text`` (the per-rule prefilter).

        For a rule with ``prefilter`` patterns, also one of them must match: its keywords alone
        (``token``, ``://``) are in most decoded views, and the patterns are a superset of what
        the rule matches in plain text.
        """
        return any(keyword in text for keyword in self.keywords) and self.prefilter_in(text)

    def prefilter_in(self, text: str) -> bool:
        """True when the rule has no ``prefilter`` patterns or one of them matches in ``text``
        (Python's ``re``: the reference; the detector runs them in Hyperscan where it can)."""
        return not self.prefilter or _alternation(self.prefilter).search(text) is not None


@lru_cache(maxsize=64)
def _alternation(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled Python search for any of a rule's ``prefilter`` patterns (RE2 syntax that
    Python's ``re`` reads the same: literals, classes, bounded repeats, groups)."""
    return re.compile("|".join(f"(?:{p})" for p in patterns))


@dataclass(frozen=True, slots=True)
class Ruleset:
    """An ordered, id-unique collection of rules."""

    rules: tuple[Rule, ...]
    _by_id: dict[str, Rule] = field(init=False, repr=False, compare=False)
    # Derived once: a scanner asks for them a dozen times while it builds its prefilter.
    _token_keywords: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _context_keywords: tuple[str, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_id", {rule.id: rule for rule in self.rules})
        object.__setattr__(self, "_token_keywords", self._declared_by_every_rule("token_keywords"))
        object.__setattr__(self, "_context_keywords", self._declared_by_every_rule("context_keywords"))

    def get(self, rule_id: str) -> Rule:
        """The rule with this id (KeyError if absent)."""
        return self._by_id[rule_id]

    def __contains__(self, rule_id: object) -> bool:
        return rule_id in self._by_id

    @property
    def keywords(self) -> tuple[str, ...]:
        """Every keyword of every rule, deduplicated, in a stable order."""
        seen: dict[str, None] = {}
        for rule in self.rules:
            for keyword in rule.keywords:
                seen.setdefault(keyword, None)
        return tuple(seen)

    @property
    def prefilter_keywords(self) -> tuple[str, ...]:
        """The keywords the prefilter selects cells by: those of every rule without ``prefilter`` patterns."""
        seen: dict[str, None] = {}
        for rule in self.rules:
            if not rule.prefilter:
                for keyword in rule.keywords:
                    seen.setdefault(keyword, None)
        return tuple(seen)

    @property
    def prefilter_patterns(self) -> tuple[str, ...]:
        """Every rule's ``prefilter`` patterns, deduplicated, in a stable order."""
        return tuple(dict.fromkeys(p for rule in self.rules for p in rule.prefilter))

    @property
    def token_keywords(self) -> tuple[str, ...]:
        """Keywords that begin a token in every rule that lists them (a rule's ``token_keywords``).

        A rule declares a keyword a *token keyword* when it only matches it at the start of a
        token (the start of a text, after a character that is not an ASCII letter or digit, or
        right after an escape such as ``%3D``, ``\\u003d``, ``\\x3d``, ``\\n``) and followed by
        at least three more token characters (ASCII letters, digits, ``_``, ``-``). The prefilter
        uses both facts: other occurrences of the keyword do not select a cell, and its base64
        forms include the token characters that follow it. Short keywords such as ``eyJ`` and
        ``A3T`` otherwise occur by chance every few hundred kilobytes of base64 (screenshots), and
        each such cell would be read into Python, gated and decoded for nothing. A keyword counts
        as a token keyword only when *every* rule that lists it declares it so.
        """
        return self._token_keywords

    @property
    def context_keywords(self) -> tuple[str, ...]:
        """Keywords that are context in every rule that lists them (a rule's ``context_keywords``).

        A context keyword names the secret (``AWS_SECRET_KEY=``) instead of being part of it, so
        a secret encoded without its name (base64 of the value alone) cannot hold it: the
        prefilter looks for it plain and escaped, but not in base64, where it would only select
        encoded source code and configuration that happen to mention it.
        """
        return self._context_keywords

    def _declared_by_every_rule(self, field_name: str) -> tuple[str, ...]:
        """Keywords that every rule listing them also lists in its ``field_name`` (in keyword order)."""
        undeclared: set[str] = set()
        for rule in self.rules:
            undeclared.update(k for k in rule.keywords if k not in getattr(rule, field_name))
        return tuple(k for k in self.keywords if k not in undeclared)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The credential families covered, sorted."""
        return tuple(sorted({rule.kind for rule in self.rules}))

    @property
    def digest(self) -> str:
        """A short hash identifying the exact rule definitions (for reports and caches)."""
        h = hashlib.sha256()
        for rule in self.rules:
            h.update(
                repr(
                    # The severity as its text: the digest predates the enum and names reports and caches.
                    (rule.id, rule.kind, str(rule.severity), rule.keywords, rule.pattern_source, rule.min_entropy,
                     rule.stopwords, rule.verify, rule.token_keywords, rule.context_keywords, rule.fallback)
                    + ((rule.prefilter,) if rule.prefilter else ())
                ).encode()
            )
        return h.hexdigest()[:12]

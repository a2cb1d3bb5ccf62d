"""Recognise placeholder, elided and word-like secret bodies (``xxxx``, ``...``, ``your-key-here``).

The checks are built so that a random secret essentially never trips them: markers that cannot
occur in the alphabets of real tokens (``...``, ``<…>``), long runs of one character, low
entropy, and bodies mostly made of dictionary words. Short placeholder words (``your``, ``fake``)
count only inside a word-like body, since four given letters do turn up in long random strings.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

_ELISION = re.compile(
    r"\.\.\.|…|<[^<>]{0,60}>|\[[^\[\]]{0,60}(?:omitted|redacted|removed|snip|hidden)[^\[\]]{0,60}\]|\*{4,}|#{6,}",
    re.I,
)
# Token prefixes stripped before the body is judged (the prefix is not part of the random body).
_PREFIX = re.compile(
    r"^(?:github_pat_|gh[pousr]_|sk-ant-[a-z]+[0-9]{2}-|sk-(?:proj|svcacct|admin|None)-|sk-|hf_|api_org_"
    r"|A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)"
)
# Placeholder words long enough never to occur by chance in a random body of a few hundred characters.
_LONG_PLACEHOLDERS = re.compile(
    r"changeme|change_me|placeholder|redacted|replace_?me|replace_?with|insert_?your|your_?api|your_?key|"
    r"your_?token|your_?secret|yourtoken|yourkey|yoursecret|secret_?here|token_?here|key_?here|goes_?here|"
    r"put_?your|paste_?your|dummy_|_dummy|notreal|not_?a_?real",
    re.I,
)
_EXAMPLE_WORDS = re.compile(r"example|sample", re.I)
_SHORT_PLACEHOLDERS = (
    "your", "fake", "test", "here", "insert", "replace", "mock", "todo", "temp", "dummy", "paste", "put",
)
# Counting and keyboard runs a person types; six letters of a keyboard row occur in a random body
# of 40 characters about once in a hundred million.
_SEQUENCES = ("0123456789", "1234567890", "abcdefghij", "9876543210", "qwerty", "asdfgh", "zxcvbn", "poiuyt",
              "lkjhgf", "mnbvcx")
# Digits read as letters (l33t): a body that turns into words this way was typed, not generated.
_LEET = str.maketrans("4310575", "aeiosts")

WORD_COVERAGE = 0.6
MIN_BODY = 8


@lru_cache(maxsize=1)
def dictionary() -> frozenset[str]:
    """The word list shipped with the package (``words.txt``)."""
    text = Path(__file__).with_name("words.txt").read_text(encoding="utf-8")
    words = (w for line in text.splitlines() if not line.startswith("#") for w in line.split())
    return frozenset(w.lower() for w in words)


def body_of(secret: str) -> str:
    """The secret without its well-known token prefix."""
    return _PREFIX.sub("", secret, count=1)


def _segments(body: str) -> list[str]:
    """Letter runs, split at camel-case boundaries (``HuggingFace`` → ``Hugging``, ``Face``)."""
    return [s.lower() for s in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", body)]


def covered_by_words(segment: str, words: frozenset[str]) -> tuple[int, list[str]]:
    """Most characters of ``segment`` covered by ``words``, and those words (word-break dynamic programme)."""
    n = len(segment)
    best: list[tuple[int, list[str]]] = [(0, [])] * (n + 1)
    for i in range(1, n + 1):
        best[i] = best[i - 1]
        for j in range(max(0, i - 14), i):
            piece = segment[j:i]
            if (len(piece) >= 3 or piece in words) and piece in words:
                score = best[j][0] + len(piece)
                if score > best[i][0]:
                    best[i] = (score, best[j][1] + [piece])
    return best[n]


def word_coverage(body: str) -> tuple[float, list[str]]:
    """Fraction of ``body`` covered by dictionary words, and those words in order."""
    if not body:
        return 0.0, []
    words = dictionary()
    total, found = 0, []
    for segment in _segments(body[:400]):
        score, pieces = covered_by_words(segment, words)
        total += score
        found += pieces
    return total / min(len(body), 400), found


def is_word_like(body: str) -> bool:
    """True when at least ``WORD_COVERAGE`` of the body is dictionary words (two or more of them)."""
    coverage, found = word_coverage(body)
    return coverage >= WORD_COVERAGE and len(found) >= 2


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def placeholder_reason(secret: str) -> Verification | None:
    """Judge one token-like secret; None when it looks like a random body."""
    marker = _ELISION.search(secret)
    if marker:
        shown = marker.group(0) if len(marker.group(0)) <= 4 else marker.group(0)[0] + "…" + marker.group(0)[-1]
        return Verification(Verdict.REDACTED, f"body is elided (omission marker {shown!r}), not a usable secret")
    body = body_of(secret)
    if len(body) < MIN_BODY:
        return None
    long_word = _LONG_PLACEHOLDERS.search(body)
    if long_word:
        return Verification(Verdict.REDACTED, f"placeholder text ({long_word.group(0).lower()!r}) instead of a secret "
                                              "body")
    if re.search(r"x{6,}|X{6,}|(.)\1{7,}", body) or body.lower().count("x") > len(body) // 3:
        return Verification(Verdict.REDACTED, "body is a run of repeated characters, not a secret")
    repeated = _longest_repeat(body)
    if repeated is not None:
        unit, times = repeated
        return Verification(
            Verdict.REDACTED, f"body repeats a {len(unit)}-character pattern {times} times, a placeholder"
        )
    lowered = body.lower()
    if any(seq in lowered for seq in _SEQUENCES) or _walks_the_alphabet(lowered):
        return Verification(Verdict.REDACTED, "body contains a keyboard or counting sequence, a placeholder")
    if len(body) >= 16 and _entropy(body) < 2.5:
        return Verification(Verdict.REDACTED, f"low-entropy body ({_entropy(body):.1f} bits/char), a placeholder")
    if _periodic_classes(body):
        return Verification(Verdict.REDACTED, "letters and digits alternate in a fixed pattern, typed rather than "
                                              "random")
    coverage, words = word_coverage(body)
    if (coverage < WORD_COVERAGE or len(words) < 2) and re.search(r"[a-zA-Z][0-9][a-zA-Z]", body):
        coverage, words = word_coverage(body.translate(_LEET))
    if coverage >= WORD_COVERAGE and len(words) >= 2:
        if _EXAMPLE_WORDS.search(body):
            return Verification(Verdict.EXAMPLE, "made of words including 'example'/'sample': a documentation value")
        shorts = sorted({w for w in words if w in _SHORT_PLACEHOLDERS})
        what = f"placeholder words ({', '.join(shorts)})" if shorts else f"{len(words)} dictionary words"
        return Verification(
            Verdict.REDACTED, f"body is {round(coverage * 100)}% {what}: an identifier or placeholder, not a random "
                              "secret"
        )
    if _EXAMPLE_WORDS.search(body):
        return Verification(Verdict.EXAMPLE, "body contains 'example'/'sample': a documentation-style value")
    return None


def _walks_the_alphabet(lowered: str) -> bool:
    """True when the body's letters step through the alphabet, up or down, one or two letters at
    a time (``Aa1Bb2Cc3…``, ``abc-def-ghi…``, ``zYxWvU…``, ``kLmNpQrS…``, wrapping from z to a).

    In a random body a letter steps that way from its predecessor about one time in five; in a
    typed pattern nearly always.
    """
    letters = [ord(c) - 97 for c in lowered if "a" <= c <= "z"]
    if len(letters) < 12:
        return False
    steps = [(b - a) % 26 for a, b in zip(letters, letters[1:], strict=False)]
    up = sum(1 for step in steps if step in (0, 1, 2))
    down = sum(1 for step in steps if step in (0, 25, 24))
    return max(up, down) >= 0.8 * len(steps)


def _periodic_classes(body: str) -> bool:
    """True when letters and digits follow a short repeating pattern over the whole body
    (``Xk9mP2vL8nQ4…``: two letters and a digit, again and again), as invented keys are written.

    A random alphanumeric body keeps such a pattern over 24 characters about once in ten million.
    """
    body = body.replace("-", "").replace("_", "")
    if len(body) < 24 or not body.isalnum() or not body.isascii():
        return False
    shape = "".join("9" if c.isdigit() else "a" for c in body)
    if "9" not in shape or "a" not in shape:
        return False
    return any(shape == (shape[:period] * (len(shape) // period + 1))[: len(shape)] for period in (2, 3, 4))


# A unit of 2-12 characters written three or more times in a row ("a1B2c3D4e5a1B2c3D4e5...").
_REPEAT = re.compile(r"(.{2,12}?)\1{2,}", re.S)


def _longest_repeat(body: str) -> tuple[str, int] | None:
    """The repeated unit and its count when repeats of one unit make up half the body or more.

    A random body repeats no unit three times in a row over more than a few characters; a typed
    placeholder does, over most of its length.
    """
    best: re.Match[str] | None = None
    for match in _REPEAT.finditer(body[:400]):
        if best is None or len(match.group(0)) > len(best.group(0)):
            best = match
    if best is None or len(best.group(0)) < max(12, len(body) // 2):
        return None
    return best.group(1), len(best.group(0)) // len(best.group(1))


_LEADING_WORD = re.compile(r"(your|fake|test|dummy|sample|insert|replace|paste|placeholder)", re.I)


def leading_placeholder(secret: str) -> Verification | None:
    """``redacted`` when the body starts with a placeholder word (``ghp_your…``, ``hf_fake…``).

    Four given letters open a random body about once in a million, so this weaker signal is only
    used when the kind's own check did not prove the secret well-formed (see ``verify_candidate``).
    """
    if secret.startswith(("-----BEGIN", "eyJ")):
        return None
    match = _LEADING_WORD.match(body_of(secret))
    if match is None:
        return None
    return Verification(Verdict.REDACTED, f"body starts with the placeholder word {match.group(0).lower()!r}, not a "
                                          "secret")


def check_placeholder(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``redacted`` (or ``example``) when the secret's body is elided, a placeholder or word-like.

    PEM blocks are left to the private-key verifier, which judges their body line by line, and
    JSON key files to theirs.
    """
    secret = candidate.secret
    if secret.startswith(("-----BEGIN", "{")):
        # A key file (GCP service-account JSON) is judged by the key it holds, not by its field names.
        return None
    if secret.startswith("eyJ") or re.match(r"ghs_[0-9]{1,12}_eyJ", secret):
        # A JWT's parts are base64url JSON: its own verifier judges them structurally, and only an
        # explicit omission marker is decided here.
        marker = _ELISION.search(secret)
        return placeholder_reason(secret) if marker else None
    return placeholder_reason(secret)

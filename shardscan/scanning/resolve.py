"""Resolution of a cell's overlapping readings: one finding per secret, read through the fewest decodings."""

from __future__ import annotations

from collections import defaultdict

from shardscan.decoders.shell_prompt import NAME as SHELL_PROMPT
from shardscan.decoders.terminal_wrap import NAME as TERMINAL_WRAP
from shardscan.redaction import fingerprint
from shardscan.ruleset import Ruleset
from shardscan.scanning.values import CellFinding, Reading

# Verdicts from most to least telling that a reading is the secret (also the order in which
# findings over a cap are listed).
VERDICT_RANK = {
    "valid": 0, "unverified": 1, "encrypted": 2, "test-mode": 3, "local-only": 3, "expired": 4, "example": 5,
    "redacted": 6, "invalid": 7,
}

# Kinds found by their position (a password name, a URL's userinfo) rather than their shape: when
# a rule of another kind reads the same value (a GitHub token in GITHUB_TOKEN=, in a clone URL),
# that rule's finding says more, and the value is reported once.
#
# Not the same as the rules' ``fallback`` field (see :func:`_yield_to_specific_rules`), and kept
# beside it: a match of these kinds yields to a match of any other kind, a ``fallback`` rule's
# included (a password assignment whose value is an ``sk-…`` key yields to the ``sk-api-key``
# fallback rule), and before the nesting step 3; a ``fallback`` rule yields only to rules that are
# not fallbacks, after it. Marking these kinds' rules ``fallback`` instead would report such a
# password and key twice (neither would yield to the other).
FALLBACK_KINDS = frozenset({"connection-string", "password", "generic-secret"})


def deduplicate(raw: list[Reading], ruleset: Ruleset, text: str = "") -> list[Reading]:
    """One finding per secret in a cell, read through the fewest decodings that read it exactly.

    1. Per (rule, fingerprint), the most-decoded reading of the secret is its true text (a PEM
       block with real line breaks rather than ``\\n`` escapes); of the candidates that read
       exactly that text, the least-decoded, earliest one wins. So a token that JSON escaping left
       untouched is reported with no decode chain, and an escaped private key with ``json-string``.
    2. A candidate is dropped when a deeper decoding of the same text (its chain extends the
       candidate's chain) found the same rule over a span covering it: that decoding read
       further (the escaped line breaks of a doubly escaped key, a key cut at an escaped dash).
       Conversely, a candidate is dropped when the shell-prompt decoding of its text found the
       same rule starting where it starts and ending sooner: read as written, the token ran on
       into the user name of a prompt glued after it. A candidate ending at a line break that the
       terminal-wrap decoding joined is kept beside the longer reading: which of the two is the
       secret is settled after verification (see :func:`settle_wrap_readings`).
       2b. A match of a kind in FALLBACK_KINDS overlapping a match of another kind is dropped.
    3. A match lying wholly inside a longer match of another rule (the JWT inside a
       ``ghs_<appid>_<JWT>`` token) is the same secret.
    4. A fallback rule yields to any specific rule whose match overlaps it (see
       :func:`_yield_to_specific_rules`).
    """
    if len(raw) == 1:
        return list(raw)  # (what the steps below leave of a single match)
    groups: dict[tuple[str, str], list[Reading]] = defaultdict(list)
    for item in raw:
        cand = item.candidate
        groups[(cand.rule_id, fingerprint(cand.secret, ruleset.get(cand.rule_id).kind))].append(item)
    best: list[Reading] = []
    for items in groups.values():
        # (Joining wrapped lines is a reading, not a decoding: of equally decoded readings of one
        # secret, the one without it is the true text.)
        deepest = max(items, key=_decodings).candidate.secret
        exact = [item for item in items if item.candidate.secret == deepest]
        best.append(min(exact, key=lambda item: (len(item.candidate.encoding), item.start, item.end)))
    # Only a reading of the same rule through more decodings can drop a candidate: indexed so, a
    # cell holding thousands of tokens costs linear time, not a comparison of every pair.
    decoded: dict[str, list[Reading]] = defaultdict(list)
    for o in best:
        if o.candidate.encoding:
            decoded[o.candidate.rule_id].append(o)
    readable = [item for item in best if not _read_further(item, decoded[item.candidate.rule_id], text)]
    kept = _drop_fallbacks(sorted(readable, key=position_order), ruleset)
    coverable = _coverable_by_another_rule(kept)
    kept = [
        item
        for item, maybe in zip(kept, coverable, strict=True)
        if not (maybe and any(o.candidate.rule_id != item.candidate.rule_id and _inside(item, o)
                              and not ruleset.get(o.candidate.rule_id).fallback for o in kept))
    ]
    return _yield_to_specific_rules(kept, ruleset)


def _decodings(item: Reading) -> tuple[int, bool]:
    chain = item.candidate.encoding
    return (len(chain) - (TERMINAL_WRAP in chain), TERMINAL_WRAP not in chain)


def position_order(item: Reading) -> tuple[int, int, str]:
    """Cell order: by start, the longer first, then by rule."""
    return (item.start, -(item.end - item.start), item.candidate.rule_id)


def _read_further(item: Reading, decoded: list[Reading], text: str) -> bool:
    """Step 2: whether a reading of the same rule through more decodings replaces ``item``."""
    chain = item.candidate.encoding
    return any(
        len(o.candidate.encoding) > len(chain)
        and o.candidate.encoding[: len(chain)] == chain
        and o.start <= item.start
        and item.end <= o.end
        and not _wrap_alternative(item, o, text)
        for o in decoded
    ) or any(
        o.candidate.encoding[: len(chain)] == chain
        and SHELL_PROMPT in o.candidate.encoding[len(chain) :]
        and o.start == item.start
        and o.end < item.end
        for o in decoded
    )


def _yield_to_specific_rules(kept: list[Reading], ruleset: Ruleset) -> list[Reading]:
    """4. A fallback rule's match that overlaps a specific rule's match is the same secret, read
    less well: the specific rule's finding (and its verdict, ``invalid`` included) is the only one.
    A specific rule's span may be shorter or longer than the fallback's, so overlap decides, not
    nesting."""
    fallback = [ruleset.get(item.candidate.rule_id).fallback for item in kept]
    if not any(fallback):
        return kept  # the common case: no fallback rule matched
    specific = [item for item, weak in zip(kept, fallback, strict=True) if not weak]
    return [
        item
        for item, weak in zip(kept, fallback, strict=True)
        if not (weak and any(_overlap(item, o) for o in specific))
    ]


def _overlap(item: Reading, other: Reading) -> bool:
    """True when two matches share characters of the cell (of the decoded view, when both come
    from one decoded run, which maps to a single span of the cell)."""
    cand, o_cand = item.candidate, other.candidate
    if (other.start, other.end) == (item.start, item.end) and o_cand.encoding == cand.encoding and cand.encoding:
        return o_cand.start < cand.end and cand.start < o_cand.end
    return other.start < item.end and item.start < other.end


def _drop_fallbacks(kept: list[Reading], ruleset: Ruleset) -> list[Reading]:
    """``kept`` without the fallback-kind matches that overlap a match of another kind (which covers
    it, or which it runs over: ``token=<ghp_…>&x=1`` read up to the ``&``); inside one decoded run,
    by their places in the decoded text, not the run's span in the cell. Nor those whose value is
    another kind's secret: the same token printed twice (``X-Figma-Token: figd_…`` and then in an
    Authorization header), of which step 1 kept the first place only."""
    kinds = [ruleset.get(item.candidate.rule_id).kind for item in kept]
    if not any(kind in FALLBACK_KINDS for kind in kinds):
        return kept
    specific = [item for item, kind in zip(kept, kinds, strict=True) if kind not in FALLBACK_KINDS]
    values = {o.candidate.secret for o in specific}
    return [
        item for item, kind in zip(kept, kinds, strict=True)
        if kind not in FALLBACK_KINDS
        or not (item.candidate.secret in values or any(_overlap(item, o) for o in specific))
    ]


def _coverable_by_another_rule(kept: list[Reading]) -> list[bool]:
    """For each match (sorted by start), whether a match of another rule starts no later and ends
    no sooner: the only ones :func:`_inside` can put it in. One sweep, keeping the two furthest
    ends of distinct rules among the matches started so far."""
    out = [False] * len(kept)
    top: list[tuple[int, str]] = []  # (end, rule) of at most two distinct rules, furthest end first
    i = 0
    while i < len(kept):
        j = i
        while j < len(kept) and kept[j].start == kept[i].start:  # every match starting here counts too
            top = _furthest_two(top, kept[j].end, kept[j].candidate.rule_id)
            j += 1
        for k in range(i, j):
            end, rule = kept[k].end, kept[k].candidate.rule_id
            out[k] = any(o_end >= end for o_end, o_rule in top if o_rule != rule)
        i = j
    return out


def _furthest_two(top: list[tuple[int, str]], end: int, rule: str) -> list[tuple[int, str]]:
    merged = {r: e for e, r in top}
    merged[rule] = max(end, merged.get(rule, end))
    return sorted(((e, r) for r, e in merged.items()), reverse=True)[:2]


def _wrap_alternative(item: Reading, other: Reading, text: str) -> bool:
    """Whether ``other``, a terminal-wrap reading, runs on past a line break where ``item`` ends:
    either the token was wrapped there, or it ended at the pane's edge and the next line is other
    output. Only verification can tell."""
    return (
        TERMINAL_WRAP in other.candidate.encoding[len(item.candidate.encoding) :]
        and other.start == item.start
        and item.end < other.end
        and text[item.end : item.end + 1] in ("\n", "\r")
    )


def settle_wrap_readings(kept: list[Reading], out: list[CellFinding], text: str) -> list[CellFinding]:
    """Of a token read as written and read across the line break after it (terminal-wrap), keep
    the reading whose verdict says more that it is the secret; the joined one when they tie.

    ``out[k]`` is the finding of ``kept[k]``."""
    joined = [j for j, item in enumerate(kept) if TERMINAL_WRAP in item.candidate.encoding]
    if not joined:
        return out  # the common case, in linear time whatever the number of findings
    dropped: set[int] = set()
    for i, item in enumerate(kept):
        for j in joined:
            other = kept[j]
            if i != j and item.candidate.rule_id == other.candidate.rule_id and _wrap_alternative(item, other, text):
                worse = i if VERDICT_RANK.get(str(out[i].verdict), 9) >= VERDICT_RANK.get(str(out[j].verdict), 9) else j
                dropped.add(worse)
    return [finding for k, finding in enumerate(out) if k not in dropped]


def _inside(item: Reading, outer: Reading) -> bool:
    """True when ``item`` lies wholly inside the longer match ``outer``.

    Two matches in one decoded run map to the same span of the cell (the whole run), so there
    they are compared by their offsets in the decoded view instead.
    """
    cand, other = item.candidate, outer.candidate
    start, end, o_start, o_end = item.start, item.end, outer.start, outer.end
    if (o_start, o_end) == (start, end) and other.encoding == cand.encoding and cand.encoding:
        longer = (other.end - other.start) > (cand.end - cand.start)
        return other.start <= cand.start and cand.end <= other.end and longer
    longer = (o_end - o_start) > (end - start) and len(other.secret) > len(cand.secret)
    return o_start <= start and end <= o_end and longer

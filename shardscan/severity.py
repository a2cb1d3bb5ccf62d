"""Reported severity: the rule's severity, adjusted by what verification learnt.

| verdict      | reported severity                                   | why |
|--------------|-----------------------------------------------------|-----|
| `valid`      | the rule's severity                                 | structurally a real credential |
| `unverified` | the rule's severity                                 | no offline proof either way: assume the worst |
| `encrypted` | one step below the rule's (critical → high) | usable only with the passphrase (maybe weak or nearby) |
| `expired` | `low` | no longer accepted, but it reveals an issuer, audience and account |
| `invalid`    | `low`                                               | fails a hard check: invented or mangled |
| `example`    | `info`                                              | a published documentation value |
| `redacted`   | `info`                                              | the body is elided or a placeholder |
| `test-mode` | `low` | a real test-mode or publishable key: no live data or money |
| `local-only` | `low` | a real credential for a service reachable only inside the sandbox |

Kind enters through the rule's severity (``rules/*.yaml``), which is set per credential type: a
GitHub App installation token is `high` because it lives an hour, a classic PAT `critical`, an
AWS key ID alone `high` and its secret key `critical`.
"""

from __future__ import annotations

from shardscan.model import Verdict

_ORDER = ("critical", "high", "medium", "low", "info")
_FIXED = {
    Verdict.EXPIRED: "low",
    Verdict.INVALID: "low",
    Verdict.EXAMPLE: "info",
    Verdict.REDACTED: "info",
    Verdict.TEST_MODE: "low",
    Verdict.LOCAL_ONLY: "low",
}


def derive_severity(rule_severity: str, verdict: Verdict) -> str:
    """The severity to report for a finding of a rule of ``rule_severity`` whose verification gave ``verdict``."""
    if verdict in _FIXED:
        return _FIXED[verdict]
    if verdict == Verdict.ENCRYPTED and rule_severity in _ORDER:
        return _ORDER[min(_ORDER.index(rule_severity) + 1, len(_ORDER) - 1)]
    return rule_severity

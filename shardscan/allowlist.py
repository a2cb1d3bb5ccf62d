"""The reviewed allowlist: parse ``allowlist.yaml`` keeping line numbers, validate it, match findings.

Two phases, like rule files: PyYAML composes the file into nodes (safe, no object construction,
every node knows its line), then each entry is validated field by field. Every problem is
collected and reported as ``file:line: entry N: what``; no message ever quotes a value, because
a value that is wrong is exactly where a pasted secret would be.

An entry accepts a finding by its fingerprint (the hash of the secret, so it follows the secret
when rows move between shards or the dataset is re-sharded), optionally narrowed by rule id or
kind, a shard glob and a column glob.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import yaml

from shardscan.errors import ConfigError
from shardscan.model import Finding, Verdict
from shardscan.redaction import mask_tokens

ALLOWLIST_VERSION = 1
DEFAULT_ALLOWLIST = "allowlist.yaml"

FINGERPRINT_RE = re.compile(r"sha256:[0-9a-f]{64}")
_FINGERPRINT_ANY_CASE = re.compile(r"sha256:[0-9a-fA-F]{64}")
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_RULE_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")

_TOP_KEYS = ("version", "entries")
_REQUIRED = ("fingerprint", "reason", "reviewer", "reviewed")
_VERDICTS = tuple(str(v) for v in Verdict)
# ``verdict`` records what verification said when the entry was reviewed (``review`` and
# ``allowlist add`` write it): a reader of the file sees that a ``valid`` credential was accepted.
_OPTIONAL = ("rule", "shard", "column", "expires", "verdict", "row")
# Order in which ``allowlist add`` writes an entry's keys (and documentation lists them).
KEY_ORDER = ("fingerprint", "rule", "shard", "column", "reason", "reviewer", "reviewed", "expires", "verdict", "row")
_MAX_FILE_BYTES = 16 * 1024 * 1024
_MAX_TEXT = 2000

# Shapes of credentials someone might paste instead of a fingerprint. Deliberately broad: a false
# alarm here costs a reworded reason, a miss costs a secret committed next to the dataset.
_CREDENTIAL_SHAPES = re.compile(
    r"""-----BEGIN[ A-Z0-9]*PRIVATE\ KEY
      | \beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}
      | \b(?:gh[pousr]_|github_pat_|hf_|api_org_|sk-|xox[abposr]-|glpat-)[A-Za-z0-9_\-]{16,}
      | \b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b
    """,
    re.VERBOSE,
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-.~]{24,}")

SecretCheck = Callable[[str], bool]


class AllowlistError(ConfigError):
    """An allowlist file is invalid. ``problems`` are ``file:line: entry N: what`` strings."""

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class AllowlistEntry:
    """One reviewed acceptance. ``index`` is 1-based in file order; ``line`` is where it starts."""

    index: int
    line: int
    fingerprint: str
    reason: str
    reviewer: str
    reviewed: date
    rule: str | None = None
    shard: str | None = None
    column: str | None = None
    expires: date | None = None
    row: int | str | None = None
    verdict: Verdict | None = None
    _shard_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)
    _column_re: re.Pattern[str] | None = field(default=None, repr=False, compare=False)

    @property
    def narrowing(self) -> tuple[str | None, str | None, str | None]:
        """The (rule, shard, column) narrowing; two entries with equal fingerprint and narrowing are duplicates."""
        return (self.rule, self.shard, self.column)

    def is_expired(self, today: date) -> bool:
        """An entry is valid through its ``expires`` date and expired the day after."""
        return self.expires is not None and today > self.expires

    def matches(self, finding: Finding) -> bool:
        """Whether this entry describes ``finding`` (ignoring expiry)."""
        loc = finding.location
        return self.matches_fields(finding.fingerprint, finding.rule_id, finding.kind, loc.shard, loc.column)

    def matches_fields(self, fingerprint: str, rule_id: str, kind: str, shard: str, column: str) -> bool:
        """``matches`` for a finding given as its fields (e.g. read back from a JSON report)."""
        if fingerprint != self.fingerprint:
            return False
        if self.rule is not None and self.rule not in (rule_id, kind):
            return False
        if self._shard_re is not None and not _shard_matches(self._shard_re, self.shard or "", shard):
            return False
        return self._column_re is None or self._column_re.fullmatch(column) is not None

    def to_dict(self) -> dict[str, Any]:
        """The entry as reports list it (metadata only: the file never holds a secret)."""
        return {
            "entry": self.index,
            "line": self.line,
            "fingerprint": self.fingerprint,
            "rule": self.rule,
            "shard": self.shard,
            "column": self.column,
            "reason": self.reason,
            "reviewer": self.reviewer,
            "reviewed": self.reviewed.isoformat(),
            "expires": self.expires.isoformat() if self.expires else None,
            "row": self.row,
        }


@dataclass(frozen=True, slots=True)
class Allowlist:
    """A validated allowlist file."""

    path: str
    entries: tuple[AllowlistEntry, ...] = ()

    def by_fingerprint(self) -> dict[str, list[AllowlistEntry]]:
        """Entries grouped by fingerprint, in file order (matching is a dictionary lookup)."""
        index: dict[str, list[AllowlistEntry]] = {}
        for entry in self.entries:
            index.setdefault(entry.fingerprint, []).append(entry)
        return index


# ---- globs ------------------------------------------------------------------------------------


def compile_glob(pattern: str) -> re.Pattern[str]:
    """``*`` matches any run of characters (including ``/``, ``.`` and brackets), ``?`` one character.

    Everything else is literal, so column paths like ``conversations[12].content`` can be written
    as they appear in reports (fnmatch would read ``[12]`` as a character class).
    """
    parts = []
    for char in pattern:
        parts.append(".*" if char == "*" else "." if char == "?" else re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def _shard_matches(compiled: re.Pattern[str], pattern: str, shard: str) -> bool:
    """A shard glob without ``/`` also matches the shard's file name, wherever the shard sits."""
    if compiled.fullmatch(shard):
        return True
    return "/" not in pattern and compiled.fullmatch(shard.rsplit("/", 1)[-1]) is not None


# ---- credential check -------------------------------------------------------------------------


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def looks_like_credential(text: str, *, strict: bool = False) -> bool:
    """Whether ``text`` looks like it holds a raw credential.

    The default check knows common credential shapes. ``strict`` (used for the fingerprint
    field, which must hold a hash anyway) also flags any long, high-entropy token.
    """
    if _CREDENTIAL_SHAPES.search(text):
        return True
    if strict:
        for token in _TOKEN.findall(text):
            if not re.fullmatch(r"(?:sha256:)?[0-9a-fA-F]+", token) and _entropy(token) >= 3.5:
                return True
    return False


# ---- parsing ----------------------------------------------------------------------------------


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_NULL = "tag:yaml.org,2002:null"


def _safe_name(text: object) -> str:
    """A key name fit for an error message: short, and with long tokens masked."""
    text = mask_tokens(str(text).replace("\n", " "))
    return text if len(text) <= 40 else text[:40] + "…"


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def compose(text: str, label: str) -> yaml.Node | None:
    """Compose YAML into nodes with the safe loader, turning syntax errors into ``file:line`` errors."""
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = _safe_name(getattr(exc, "problem", None) or "syntax error")
        raise AllowlistError([f"{label}{where}: not valid YAML ({problem})"]) from None


def read_text(path: str | Path) -> str:
    """Read an allowlist file as UTF-8 with a size bound; errors name the file."""
    path = Path(path)
    try:
        if path.stat().st_size > _MAX_FILE_BYTES:
            raise AllowlistError([f"{path}: larger than {_MAX_FILE_BYTES // (1024 * 1024)} MiB; not an allowlist"])
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AllowlistError([f"{path}: no such allowlist file"]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise AllowlistError([f"{path}: cannot read allowlist ({type(exc).__name__})"]) from None


def load_allowlist(path: str | Path, *, secret_check: SecretCheck | None = None) -> Allowlist:
    """Read, parse and validate an allowlist file. Raises AllowlistError listing every problem.

    ``secret_check`` is an extra detector (for example the scan's own rules) run on every text
    value; values that look like credentials are refused either way.
    """
    return parse_allowlist(read_text(path), str(path), secret_check=secret_check)


def parse_allowlist(text: str, label: str = DEFAULT_ALLOWLIST, *, secret_check: SecretCheck | None = None) -> Allowlist:
    """Parse and validate allowlist text; ``label`` names the file in errors."""
    root = compose(text, label)
    problems: list[str] = []
    if root is None:
        raise AllowlistError([f"{label}: empty allowlist: expected 'version: {ALLOWLIST_VERSION}' and 'entries:'"])
    if not isinstance(root, yaml.MappingNode):
        raise AllowlistError([f"{label}:{_line(root)}: expected a mapping with 'version' and 'entries'"])
    top: dict[str, yaml.Node] = {}
    for key_node, value_node in root.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if key in top:
            problems.append(f"{label}:{_line(key_node)}: '{key}' given twice")
        elif key not in _TOP_KEYS:
            problems.append(f"{label}:{_line(key_node)}: unknown key '{_safe_name(key)}' (known: version, entries)")
        else:
            top[key] = value_node
    version = top.get("version")
    if version is None:
        problems.append(f"{label}:{_line(root)}: missing 'version: {ALLOWLIST_VERSION}'")
    elif not (isinstance(version, yaml.ScalarNode) and version.tag == _INT and version.value.strip() == "1"):
        problems.append(f"{label}:{_line(version)}: unsupported version (this shardscan reads version "
                        f"{ALLOWLIST_VERSION})")
    entries_node = top.get("entries")
    entries: list[AllowlistEntry] = []
    if entries_node is None:
        problems.append(f"{label}:{_line(root)}: missing 'entries' (a list; may be empty: 'entries: []')")
    elif isinstance(entries_node, yaml.ScalarNode) and entries_node.tag == _NULL:
        pass
    elif not isinstance(entries_node, yaml.SequenceNode):
        problems.append(f"{label}:{_line(entries_node)}: 'entries' must be a list of entries")
    else:
        for index, node in enumerate(entries_node.value, start=1):
            entry = _entry(node, index, label, problems, secret_check)
            if entry is not None:
                entries.append(entry)
    seen: dict[tuple[str, str | None, str | None, str | None], AllowlistEntry] = {}
    for entry in entries:
        key = (entry.fingerprint, *entry.narrowing)
        if key in seen:
            first = seen[key]
            problems.append(
                f"{label}:{entry.line}: entry {entry.index}: duplicate of entry {first.index} (line {first.line}): "
                "same fingerprint, rule, shard and column"
            )
        else:
            seen[key] = entry
    if problems:
        raise AllowlistError(problems)
    return Allowlist(label, tuple(entries))


def _entry(
    node: yaml.Node, index: int, label: str, problems: list[str], secret_check: SecretCheck | None
) -> AllowlistEntry | None:
    """Validate one entry node; append problems and return None when it is invalid."""
    before = len(problems)

    def problem(at: yaml.Node, message: str) -> None:
        problems.append(f"{label}:{_line(at)}: entry {index}: {message}")

    if not isinstance(node, yaml.MappingNode):
        problem(node, "expected a mapping (fingerprint, reason, reviewer, reviewed, ...)")
        return None
    fields: dict[str, yaml.Node] = {}
    for key_node, value_node in node.value:
        key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
        if not isinstance(key, str) or key not in _REQUIRED + _OPTIONAL:
            problem(key_node, f"unknown key '{_safe_name(key)}' (known: {', '.join(KEY_ORDER)})")
        elif key in fields:
            problem(key_node, f"'{key}' given twice")
        else:
            fields[key] = value_node
    for key in _REQUIRED:
        if key not in fields:
            problem(node, f"missing '{key}'")

    def text(key: str) -> str | None:
        value = fields.get(key)
        if value is None:
            return None
        if not isinstance(value, yaml.ScalarNode) or value.tag == _NULL:
            problem(value, f"'{key}' must be a string")
            return None
        # A scalar node's value is its text (typed Any by the stubs).
        raw: str = value.value
        if key == "fingerprint":
            return raw
        if not raw.strip():
            problem(value, f"'{key}' must not be empty")
            return None
        if len(raw) > _MAX_TEXT:
            problem(value, f"'{key}' is longer than {_MAX_TEXT} characters")
            return None
        if looks_like_credential(raw) or (secret_check is not None and secret_check(raw)):
            problem(value, f"'{key}' looks like it contains a raw credential; the allowlist must never hold a "
                           "secret (remove it, and from version control history too)")
            return None
        return raw

    def day(key: str) -> date | None:
        value = fields.get(key)
        if value is None:
            return None
        raw = value.value if isinstance(value, yaml.ScalarNode) else ""
        if _DATE_RE.fullmatch(raw.strip()):
            try:
                return date.fromisoformat(raw.strip())
            except ValueError:
                pass
        problem(value, f"'{key}' must be a date written YYYY-MM-DD")
        return None

    fingerprint = text("fingerprint")
    if fingerprint is not None:
        fp_node = fields["fingerprint"]
        candidate = fingerprint.strip()
        if _FINGERPRINT_ANY_CASE.fullmatch(candidate):
            fingerprint = candidate.lower()
        else:
            if looks_like_credential(candidate, strict=True) or (secret_check is not None and secret_check(candidate)):
                problem(fp_node, "'fingerprint' holds what looks like a raw credential, not a fingerprint. Never "
                                 "put a secret in the allowlist: use the finding's 'fingerprint' from the report "
                                 "(sha256:<64 hex digits>), and remove the secret from this file and its history")
            elif re.fullmatch(r"[0-9a-fA-F]{64}", candidate):
                problem(fp_node, "'fingerprint' needs the 'sha256:' prefix, as in the report")
            else:
                problem(fp_node, "'fingerprint' must be 'sha256:' and 64 hex digits, copied from the report")
            fingerprint = None
    reason, reviewer = text("reason"), text("reviewer")
    reviewed, expires = day("reviewed"), day("expires")
    if reviewed is not None and expires is not None and expires < reviewed:
        problem(fields["expires"], "'expires' is before 'reviewed'")
    rule = text("rule")
    if rule is not None and not _RULE_RE.fullmatch(rule):
        problem(fields["rule"], "'rule' must be a rule id or kind (kebab-case)")
    shard, column = text("shard"), text("column")
    verdict = text("verdict")
    if verdict is not None and verdict not in _VERDICTS:
        problem(fields["verdict"], f"'verdict' must be one of {', '.join(_VERDICTS)}")
    row: int | str | None = None
    if "row" in fields:
        row_node = fields["row"]
        if isinstance(row_node, yaml.ScalarNode) and row_node.tag == _INT:
            try:
                row = int(row_node.value.replace("_", ""), 0)
            except ValueError:
                row = None
            if row is None or row < -1:
                problem(row_node, "'row' must be a row index (>= 0, -1 for file metadata) or a location string")
                row = None
        else:
            row = text("row")
            if isinstance(row, str) and "\n" in row:
                problem(row_node, "'row' must be a single line")
    if len(problems) > before:
        return None
    assert fingerprint and reason and reviewer and reviewed  # guaranteed by the checks above
    return AllowlistEntry(
        index=index,
        line=_line(node),
        fingerprint=fingerprint,
        reason=reason,
        reviewer=reviewer,
        reviewed=reviewed,
        rule=rule,
        shard=shard,
        column=column,
        expires=expires,
        row=row,
        verdict=Verdict(verdict) if verdict is not None else None,
        _shard_re=compile_glob(shard) if shard else None,
        _column_re=compile_glob(column) if column else None,
    )


# ---- static checks ----------------------------------------------------------------------------


def never_matching(allowlist: Allowlist, rule_names: Iterable[str], today: date) -> list[str]:
    """Problems of a valid allowlist that mean an entry can never accept anything.

    ``rule_names`` are the active rule ids and kinds. Reports expired entries, entries narrowed
    to a rule that does not exist, and entries made redundant by an earlier, broader one.
    """
    names = set(rule_names)
    out: list[str] = []
    for entry in allowlist.entries:
        where = f"{allowlist.path}:{entry.line}: entry {entry.index}"
        if entry.expires is not None and entry.is_expired(today):
            out.append(f"{where}: expired on {entry.expires.isoformat()}; it no longer accepts anything")
        if entry.rule is not None and entry.rule not in names:
            out.append(f"{where}: 'rule' {entry.rule} is neither a rule id nor a kind of the active rules")
        for earlier in allowlist.entries[: entry.index - 1]:
            if earlier.fingerprint == entry.fingerprint and _covers(earlier, entry) and not earlier.is_expired(today):
                out.append(f"{where}: redundant: entry {earlier.index} (line {earlier.line}) already accepts "
                           "everything it does")
                break
    return out


def _covers(broad: AllowlistEntry, narrow: AllowlistEntry) -> bool:
    """True when ``broad`` accepts every finding ``narrow`` does (conservatively: equal or absent narrowing)."""
    return all(b is None or b == n for b, n in zip(broad.narrowing, narrow.narrowing, strict=True))


def shipped_allowlist() -> Path:
    """The reviewed allowlist of the demo dataset: inside the installed wheel, or at the top of a checkout."""
    packaged = Path(__file__).resolve().parent / "_demo_allowlist.yaml"
    if packaged.is_file():
        return packaged
    return Path(__file__).resolve().parent.parent / DEFAULT_ALLOWLIST

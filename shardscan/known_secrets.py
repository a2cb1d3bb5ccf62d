"""Your own secrets (``--known-secrets``): find every occurrence of named values, in any encoding.

A known-secrets file lists one entry per line (blank lines and ``#`` comments are skipped):

* ``env:NAME``: the value of the environment variable ``NAME`` at scan time;
* ``file:PATH``: the content of the file at ``PATH`` (a relative path is read from the known-secrets
  file's folder), without its final line break;
* ``sha256:HEX``: the SHA-256 of the value, for a value that must not be on the scanning machine.

A value entry is searched for as written, JSON-escaped, percent-encoded and base64-encoded (at each
of the three byte alignments, standard and URL alphabets), in the cell and in every decoded view
of it; the prefilter selects exactly the cells holding one of those forms. A fingerprint entry
cannot be searched for: every token-shaped run of 16 or more characters (letters, digits and
``_-.~+/``) of every cell, and of every base64 run decoded, is hashed and compared, which makes
every cell with such a run a candidate (a scan with a ``sha256:`` entry reads far more cells into
Python; see docs/unprefixed.md for the measured cost).

Values never leave this module and the engine: entries are named by their label
(``env:IRIS_PROXY_TOKEN``), findings carry the value's fingerprint, and ``repr`` leaves values out.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from urllib.parse import quote, quote_plus

from shardscan.allowlist import looks_like_credential
from shardscan.decoders import base64_
from shardscan.errors import ConfigError

RULE_ID = "known-secret"
KIND = "known-secret"
# Values shorter than this would match by chance in ordinary text: refused at load.
MIN_VALUE_CHARS = 8
# A token-shaped run, as fingerprint entries are compared against.
TOKEN_RUN = re.compile(r"[A-Za-z0-9_.~+/\-]{16,}")
MAX_FILE_BYTES = 64 * 1024


class EntryKind(StrEnum):
    """How a known-secrets entry gives its secret."""

    ENV = "env"
    FILE = "file"
    SHA256 = "sha256"


@dataclass(frozen=True, slots=True)
class KnownSecret:
    """One entry: its label (how reports name it), the value's SHA-256, and the value when known.

    ``value`` is plaintext: ``repr`` and comparisons leave it out, so the cache key (which reprs
    the scan options) covers the fingerprint and never the value.
    """

    label: str
    kind: EntryKind
    digest: str
    value: str | None = field(default=None, repr=False, compare=False)

    @property
    def fingerprint(self) -> str:
        """The fingerprint findings of this entry carry (``sha256:`` and the hex digest)."""
        return "sha256:" + self.digest


@dataclass(frozen=True, slots=True)
class Occurrence:
    """Where an entry's value occurs in a text, and through which encoding."""

    entry: KnownSecret
    start: int
    end: int
    encoding: tuple[str, ...]


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def load_known_secrets(
    paths: Iterable[str | Path], environ: Mapping[str, str] | None = None
) -> tuple[KnownSecret, ...]:
    """Read known-secrets files into entries (deduplicated by fingerprint, in file order).

    Raises ConfigError naming the file, line and entry (never a value) for an unreadable file, an
    unknown entry form, a missing environment variable or file, or a value too short to search for.
    """
    environ = os.environ if environ is None else environ
    entries: dict[str, KnownSecret] = {}
    for raw in paths:
        path = Path(raw)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path}: cannot read known-secrets file ({type(exc).__name__})") from None
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            entry = _entry(line, path, number, environ)
            entries.setdefault(entry.digest, entry)
    return tuple(entries.values())


def _entry(line: str, path: Path, number: int, environ: Mapping[str, str]) -> KnownSecret:
    where = f"{path}:{number}"
    form, sep, rest = line.partition(":")
    rest = rest.strip()
    if not sep or form not in set(EntryKind) or not rest:
        # The line is not echoed: it may be a value pasted by mistake.
        raise ConfigError(f"{where}: entry must be env:NAME, file:PATH or sha256:HEX (the line is not shown: it may "
                          "be a secret)")
    kind = EntryKind(form)
    if kind == EntryKind.SHA256:
        if not re.fullmatch(r"[0-9a-fA-F]{64}", rest):
            raise ConfigError(f"{where}: sha256: needs the 64 hex digits of the value's SHA-256")
        digest = rest.lower()
        return KnownSecret(f"sha256:{digest[:12]}", kind, digest)
    label = f"{form}:{rest}"
    # Errors name the entry only when it cannot be a value pasted by mistake (``env:TOKEN=…``, a
    # token after ``env:``): the line number says which entry it is.
    shown = f"{form}:(not shown: it may be a secret)" if looks_like_credential(rest) else label
    if kind == EntryKind.ENV:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", rest):
            raise ConfigError(f"{where}: {form}: not an environment variable name (not shown: it may be a secret)")
        value = environ.get(rest)
        if value is None:
            raise ConfigError(f"{where}: {shown}: environment variable is not set")
    else:
        target = Path(rest).expanduser()
        if not target.is_absolute():
            target = path.parent / target
        try:
            data = target.read_bytes()[: MAX_FILE_BYTES + 1]
            value = data.decode("utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{where}: {shown}: cannot read the file ({type(exc).__name__})") from None
        if len(data) > MAX_FILE_BYTES:
            raise ConfigError(f"{where}: {shown}: file larger than {MAX_FILE_BYTES} bytes, not a secret")
        value = value[:-2] if value.endswith("\r\n") else value[:-1] if value.endswith("\n") else value
    if len(value) < MIN_VALUE_CHARS:
        raise ConfigError(f"{where}: {shown}: value shorter than {MIN_VALUE_CHARS} characters (it would match "
                          "ordinary text)")
    return KnownSecret(label, kind, _sha256(value), value)


def encoded_forms(value: str) -> list[tuple[str, tuple[str, ...]]]:
    """The forms of ``value`` searched in a raw cell, each with its decode chain.

    Base64 forms are the characters that encode the value alone at each of the three byte
    alignments (the characters that mix in neighbouring bytes are left out), in both alphabets.
    """
    forms: dict[str, tuple[str, ...]] = {value: ()}
    escaped = json.dumps(value, ensure_ascii=False)[1:-1]
    forms.setdefault(escaped, ("json-string",))
    forms.setdefault(json.dumps(value)[1:-1], ("json-string",))
    forms.setdefault(escaped.replace("/", "\\/"), ("json-string",))
    # JSON inside a JSON string (a tool call's arguments), as serialisers write it.
    forms.setdefault(json.dumps(escaped, ensure_ascii=False)[1:-1], ("json-string", "json-string"))
    forms.setdefault(quote(value, safe=""), ("percent",))
    forms.setdefault(quote_plus(value, safe=""), ("percent",))
    data = value.encode("utf-8", "surrogatepass")
    for shift in range(3):
        encoded = base64.b64encode(b"\0" * shift + data).decode("ascii").rstrip("=")
        # The first ceil(shift*4/3) characters hold the padding bytes; the last may mix in the next byte.
        head = -(-shift * 4 // 3)
        tail = (len(data) + shift) * 4 // 3
        core = encoded[head:tail]
        if len(core) >= MIN_VALUE_CHARS:
            forms.setdefault(core, (base64_.NAME,))
            forms.setdefault(core.replace("+", "-").replace("/", "_"), (base64_.URL_NAME,))
    return [(form, chain) for form, chain in forms.items() if form]


@dataclass(frozen=True, slots=True)
class KnownSecretMatcher:
    """The compiled search for a scan's known secrets."""

    entries: tuple[KnownSecret, ...]
    # (form, chain, entry) of every value entry.
    forms: tuple[tuple[str, tuple[str, ...], KnownSecret], ...] = field(default=(), repr=False)
    by_digest: Mapping[str, KnownSecret] = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, entries: Iterable[KnownSecret]) -> KnownSecretMatcher:
        """Compile the searches for ``entries``."""
        entries = tuple(entries)
        forms = tuple(
            (form, chain, entry) for entry in entries if entry.value is not None
            for form, chain in encoded_forms(entry.value)
        )
        by_digest = {e.digest: e for e in entries if e.value is None}
        return cls(entries, forms, by_digest)

    def __bool__(self) -> bool:
        return bool(self.entries)

    def prefilter_patterns(self) -> tuple[str, ...]:
        """RE2 patterns selecting the cells that may hold an entry: each value form literally, and
        any token-shaped run when there is a fingerprint entry."""
        patterns = [_re2_literal(form) for form, _, _ in self.forms]
        if self.by_digest:
            patterns.append("[A-Za-z0-9_.~+/\\-]{16}")
        return tuple(dict.fromkeys(patterns))

    def in_raw(self, text: str) -> Iterator[Occurrence]:
        """Occurrences in a raw cell text: value forms, and fingerprints of token runs (also inside
        base64 runs decoded here, which the decoding stage keeps only next to a rule keyword)."""
        for form, chain, entry in self.forms:
            at = text.find(form)
            while at >= 0:
                yield Occurrence(entry, at, at + len(form), chain)
                at = text.find(form, at + 1)
        if self.by_digest:
            yield from self._fingerprinted(text, 0, None, ())
            for start, end, body in base64_.runs(text):
                decoded = base64_.decode_run(body)
                if decoded is None:
                    continue
                name, data = decoded
                plain = data.decode("utf-8", "replace")
                yield from self._fingerprinted(plain, start, end, (name,))

    def in_view(self, text: str) -> Iterator[tuple[KnownSecret, int, int]]:
        """Plain occurrences (value or fingerprinted token run) in a decoded view's text."""
        for form, chain, entry in self.forms:
            if chain:
                continue
            at = text.find(form)
            while at >= 0:
                yield entry, at, at + len(form)
                at = text.find(form, at + 1)
        for occurrence in self._fingerprinted(text, 0, None, ()):
            yield occurrence.entry, occurrence.start, occurrence.end

    def _fingerprinted(self, text: str, base: int, end: int | None, chain: tuple[str, ...]) -> Iterator[Occurrence]:
        if not self.by_digest:
            return
        for match in TOKEN_RUN.finditer(text):
            entry = self.by_digest.get(_sha256(match.group(0)))
            if entry is not None:
                # Inside decoded base64, the honest span is the whole encoded run.
                span = (base, end) if end is not None else (match.start(), match.end())
                yield Occurrence(entry, span[0], span[1], chain)


def _re2_literal(text: str) -> str:
    # RE2 accepts a backslash before any ASCII punctuation; spaces and control characters are
    # written as \xNN (which Hyperscan reads the same), other characters stand for themselves.
    return "".join(
        c if c.isalnum() or c == "_" or not c.isascii() else "\\" + c if c.isprintable() and c != " "
        else f"\\x{ord(c):02x}"
        for c in text
    )

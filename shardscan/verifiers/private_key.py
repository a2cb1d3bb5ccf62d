"""Verify PEM private keys offline: extract the body in any form, decode it, and load it with ``cryptography``.

The body may come with real newlines, literal ``\\n`` escapes (JSON, logs), indentation, or all on
one line; a body that is not a key as written is read again the ways tools print files
(:data:`READINGS`: line numbers, a diff's ``+``/``-``, a quote's ``>``, grep's file names, log
prefixes, ``<br>`` breaks, colour codes). The verdicts:

* ``valid``: the key material parses (type and size in the detail);
* ``encrypted``: encrypted PKCS#8, legacy ``Proc-Type: 4,ENCRYPTED`` PEM, an OpenSSH key with a
  cipher, or a PGP key protected by S2K;
* ``redacted``: the body is omitted or a placeholder (``MIIE...``, ``<key body omitted>``);
* ``invalid``: not base64 (the line is named), truncated, base64 that is not a key, or a PGP
  armor checksum mismatch.

Line numbers in details count the BEGIN line as line 1.

Loading the decoded key material (DER, OpenSSH) is :mod:`shardscan.verifiers.key_material`'s job,
and judging what a truncated key still exposes :mod:`shardscan.verifiers.key_truncated`'s; this
module finds, reads and decodes the armoured block, and checks PGP blocks itself.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import struct
from dataclasses import dataclass

from shardscan.line_prefix import DIFF_OR_QUOTE, PATTERNS, LinePrefix
from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.example import known_examples
from shardscan.verifiers.key_material import check_der, check_openssh, der_declared_length, label_name, safe_label
from shardscan.verifiers.placeholder import is_word_like

_BEGIN = re.compile(r"-----BEGIN ((?:[A-Z0-9]{2,10} ){0,2})PRIVATE KEY( BLOCK)?-----")
_END = re.compile(r"-----END ((?:[A-Z0-9]{2,10} ){0,2})PRIVATE KEY( BLOCK)?-----")
_ESCAPE = re.compile(r"\\+[rnt]")
_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9-]{1,30}):[ \t]*(.*)")
_B64_LINE = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_NOT_B64 = re.compile(r"[^A-Za-z0-9+/=]")
_ELIDED = re.compile(
    r"\.\.\.|…|<[^<>]{0,80}>|\[[^\[\]]{0,80}\]|\*{3,}|omitted|redacted|elided|truncated|removed|"
    r"(?<![A-Za-z0-9])snip(?![A-Za-z0-9])|your[ _-]|placeholder|x{6,}|X{6,}",
    re.I,
)
# Quote and comment characters that may prefix every line of a key pasted into code or a message.
_DECORATION = re.compile(r"^(?:[#>|;*\"',]+|//+)$")
_CRC24_INIT = 0xB704CE
_CRC24_POLY = 0x1864CFB
MAX_BODY_CHARS = 64 * 1024


@dataclass(frozen=True, slots=True)
class _Line:
    number: int  # 1-based line of the PEM block, BEGIN line = 1
    text: str  # the line without whitespace and quote decoration
    raw: str = ""  # the line as written (for omission notes like "<key body omitted>")


@dataclass(frozen=True, slots=True)
class _Block:
    label: str  # "RSA", "EC", "OPENSSH", "ENCRYPTED", "PGP", "" for PKCS#8
    headers: dict[str, str]
    lines: tuple[_Line, ...]  # body lines (headers and decoration removed), in order
    one_line: bool
    unterminated: bool = False  # no END line: the text stops inside the key (output cut)


def check_private_key(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """Decodes the PEM body however it is printed and loads the key (PKCS#1/#8, SEC1, DSA, OpenSSH,
    PGP); encrypted and truncated keys judged apart (see the module docstring)."""
    block = _parse_block(candidate.secret)
    if block is None:
        return Verification(Verdict.INVALID, "no complete BEGIN/END PRIVATE KEY block")
    outcome = _check_block(block)
    if outcome.verdict in (Verdict.INVALID, Verdict.REDACTED):
        # Read as written, the body is not a key; read as a tool printed it, it may be one. When
        # no reading makes it a key, the first that applies (its decoration is on every line)
        # still says best why it is not one.
        first: tuple[_Block, Verification] | None = None
        for reading in READINGS:
            other = _parse_block(candidate.secret, reading)
            if other is None:
                continue
            second = _check_block(other)
            if second.verdict not in (Verdict.INVALID, Verdict.REDACTED):
                first = (other, Verification(second.verdict, f"{second.detail} ({reading.note})",
                                             canonical=_read_as(candidate.secret, reading)))
                break
            if reading.explains:
                first = first or (other, Verification(second.verdict, f"{second.detail} ({reading.note})"))
        if first is not None:
            block, outcome = first
    elif outcome.canonical is None and (undecorated := _undecorated(candidate.secret)) is not None:
        # Read as written, quote or comment marks were ignored: the fingerprint is taken without
        # them too, so a key quoted in a Markdown export has the fingerprint of the key itself.
        outcome = Verification(outcome.verdict, outcome.detail, canonical=undecorated)
    if block.unterminated:
        return Verification(outcome.verdict, f"no END line, the text stops inside the key: {outcome.detail}",
                            canonical=outcome.canonical)
    return outcome


@dataclass(frozen=True, slots=True)
class Reading:
    """A way a tool prints a file that puts something other than the key on its lines.

    ``prefix`` is removed from the start of every line and must be there on every line that
    holds anything; markup and colour codes (``<br>`` line breaks, ANSI escapes) are taken out
    first in every reading. A reading changes the verdict only when the body then loads as key
    material, so trying one on text that is not a key can never make a blocking finding of it;
    otherwise it only words the reason why the body is not a key.
    """

    note: str  # how the detail says the key was read
    prefix: re.Pattern[str] | None = None
    suffix: re.Pattern[str] | None = None  # removed from the end of every line that holds anything
    # Whether the reading, when it applies but yields no key either, words why the body is not one.
    # A reading that applies to almost any text only counts when the key then loads.
    explains: bool = True

    def apply(self, inner: str) -> str | None:
        """The text between the markers as this reading sees it, or None when it does not apply."""
        text = _MARKUP.sub(lambda m: "\n" if m.group(0)[:1] == "<" else "", inner)
        text = _ESCAPE.sub(lambda m: "\n" if m.group(0)[-1] == "n" else "\t", text).replace("\r", "")
        if self.suffix is not None:
            text = "\n".join(self.suffix.sub("", line) for line in text.split("\n"))
        if self.prefix is None:
            return text if text != inner else None
        lines = text.split("\n")
        # The first piece is the rest of the BEGIN line (usually empty): no tool prefix there.
        if not any(line.strip() for line in lines[1:]):
            return None
        out = [lines[0]]
        for number, line in enumerate(lines[1:], start=1):
            if not line.strip():
                out.append("")
                continue
            match = self.prefix.match(line)
            # The decoration must be in front of something, except on the END line (the last
            # piece), whose own text is not part of the body: what is left of it counts only when
            # it is base64 (a body glued to the END marker); the rest of a prefix is dropped.
            last = number == len(lines) - 1
            rest = line[match.end() :] if match is not None else line
            if not last and (match is None or not rest.strip()):
                return None
            out.append("" if last and not _BASE64_CHUNK.fullmatch(rest.strip()) else rest)
        return "\n".join(out)


_BASE64_CHUNK = re.compile(r"[A-Za-z0-9+/=]+")

# Markup and colour codes that a terminal or a web page renders, and the ^M that cat -v shows for
# a carriage return: a key never holds them.
_MARKUP = re.compile(r"<br\s*/?>|(?:\x1b|\\u001[bB]|\\x1[bB]|\\033|\\e)\[[0-9;?]*[A-Za-z]|\^M(?=\\n|\n|$)", re.I)

READINGS: tuple[Reading, ...] = (
    Reading("read without markup or colour codes"),
    # The prefixes are those every line-printing tool is known by (shardscan.line_prefix), shared
    # with the reading of tokens wrapped across prefixed lines.
    Reading("read without the line numbers in front of each line", PATTERNS[LinePrefix.LINE_NUMBER]),
    # A diff's added or removed lines, or a quoted reply (nested quotes too).
    Reading("read without the diff or quote mark in front of each line", DIFF_OR_QUOTE),
    Reading("read without the file name in front of each line", PATTERNS[LinePrefix.FILE_NAME]),
    Reading("read without the log prefix in front of each line", PATTERNS[LinePrefix.LOG]),
    # cat -A and cat -e: a $ at the end of every line.
    Reading("read without the $ that cat -A puts at the end of each line", suffix=re.compile(r"(?:\^M)?\$\s*$")),
    # docker compose logs ("app-1  | "), with -t a timestamp after the bar.
    Reading("read without the service name in front of each line", PATTERNS[LinePrefix.SERVICE]),
    # pytest's failure lines ("E       ").
    Reading("read without pytest's E in front of each line", PATTERNS[LinePrefix.PYTEST]),
    # Any other log format (journalctl, heroku, pm2, loguru, Go's log, Ray's worker prefix, BuildKit,
    # gh run view, CloudWatch): a key line is one word, so everything up to the last blank before
    # it is the prefix. Safe however loose: a reading counts only when the body then loads as a key.
    Reading("read without the text in front of each line", PATTERNS[LinePrefix.ANY_TEXT], explains=False),
)


def _check_block(block: _Block) -> Verification:
    what = label_name(block.label)
    elided = _elided(block)
    if elided:
        return elided
    if block.label == "PGP":
        return _check_pgp(block)
    decoded = _decode(block)
    data = decoded.data
    if data is None:
        return Verification(Verdict.INVALID, f"{what}: {decoded.problem}, not a key")
    if published := known_examples().key_digests.get(hashlib.sha256(data).hexdigest()):
        return Verification(Verdict.EXAMPLE, f"{what}: {published}, a published test key, not a secret")
    if _legacy_encrypted(block):
        cipher = block.headers.get("DEK-Info", "").split(",")[0].strip() or "unknown cipher"
        if mismatch := _cipher_mismatch(block, len(data)):
            detail = f"{what} (legacy PEM encryption, {safe_label(cipher)}): {mismatch}, not a key"
            return Verification(Verdict.INVALID, detail)
        return Verification(
            Verdict.ENCRYPTED,
            f"encrypted {what} (legacy PEM encryption, {safe_label(cipher)}), {len(data)} bytes; passphrase unknown",
        )
    if block.label == "OPENSSH":
        return check_openssh(data)
    return check_der(data, block.label)


# Block size in bytes of the CBC ciphers legacy PEM encryption uses (the IV is one block).
_PEM_CIPHER_BLOCK = {"AES-128-CBC": 16, "AES-192-CBC": 16, "AES-256-CBC": 16, "DES-EDE3-CBC": 8, "DES-CBC": 8}


def _cipher_mismatch(block: _Block, size: int) -> str | None:
    """Why a legacy-encrypted body cannot be what DEK-Info says (None when it can, or the cipher is
    not one we know): CBC ciphertext is whole blocks and the IV one block. Invented keys in
    tutorials and model answers carry the headers over random base64 of any length."""
    cipher, _, iv = block.headers.get("DEK-Info", "").partition(",")
    width = _PEM_CIPHER_BLOCK.get(cipher.strip().upper())
    if width is None:
        return None
    iv = iv.strip()
    if len(iv) != 2 * width or re.fullmatch(r"[0-9A-Fa-f]+", iv) is None:
        return f"the IV is not {width} bytes of hex"
    if not block.unterminated and size % width:
        return f"{size} bytes of ciphertext is not a whole number of {width}-byte blocks"
    return None


# ---- extraction ---------------------------------------------------------------------------------


def _markers(secret: str) -> tuple[re.Match[str], int, bool] | None:
    """The BEGIN line, where the body stops and whether an END line stops it (None without BEGIN).

    Without an END line (output cut by ``head`` or a truncating tool), the body runs to the end
    of the match; what it holds is judged like any truncated key.
    """
    begin = _BEGIN.search(secret)
    if begin is None:
        return None
    end = _END.search(secret, begin.end())
    return begin, (end.start() if end is not None else len(secret)), end is not None


def _undecorated(secret: str) -> str | None:
    """``secret`` without the quote and comment marks (:data:`_DECORATION`) between its markers (None: it has none)."""
    if (marked := _markers(secret)) is None:
        return None
    begin, stop, _ = marked
    inner = secret[begin.end() : stop][:MAX_BODY_CHARS]
    plain = _WORD.sub(lambda m: "" if _DECORATION.fullmatch(m.group(0)) else m.group(0), inner)
    return None if plain == inner else secret[: begin.end()] + plain + secret[begin.end() + len(inner) :]


_WORD = re.compile(r"\S+")


def _read_as(secret: str, reading: Reading) -> str | None:
    """``secret`` with the text between its markers as ``reading`` sees it (None if it does not apply)."""
    if (marked := _markers(secret)) is None:
        return None
    begin, stop, _ = marked
    inner = reading.apply(secret[begin.end() : stop][:MAX_BODY_CHARS])
    return None if inner is None else secret[: begin.end()] + inner + secret[stop:]


def _parse_block(secret: str, reading: Reading | None = None) -> _Block | None:
    """The block's label, headers and body lines, read as written or with ``reading`` (None when
    there is no BEGIN line, or the reading does not apply)."""
    if (marked := _markers(secret)) is None:
        return None
    begin, stop, terminated = marked
    label = (begin.group(1) or "").strip()
    if begin.group(2):
        label = label or "PGP"
    inner = secret[begin.end() : stop][:MAX_BODY_CHARS]
    if reading is not None:
        read = reading.apply(inner)
        if read is None:
            return None
        inner = read
    # Line breaks in any form: escaped once or several times (JSON in JSON), CRLF, real ones.
    one_line = "\n" not in inner and not _ESCAPE.search(inner)
    headers: dict[str, str] = {}
    if one_line:
        # Legacy encryption headers written on the same line as the body.
        for match in re.finditer(r"(Proc-Type|DEK-Info):\s*(\S+)", inner):
            headers.setdefault(match.group(1), match.group(2))
        inner = re.sub(r"(?:Proc-Type|DEK-Info):\s*\S+", " ", inner)
    text = _ESCAPE.sub(lambda m: "\n" if m.group(0)[-1] == "n" else " ", inner).replace("\r", "")
    lines: list[_Line] = []
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.strip()
        if not raw:
            continue
        header = None if one_line else _HEADER.fullmatch(raw)
        if header and not lines:
            headers[header.group(1)] = header.group(2)
            continue
        tokens = [t for t in raw.split() if not _DECORATION.fullmatch(t)]
        if one_line:
            # Everything on one line: whitespace separates the chunks of the body; name them by position.
            lines.extend(_Line(i, t) for i, t in enumerate(tokens, start=len(lines) + 1))
        elif tokens:
            lines.append(_Line(number, "".join(tokens), raw))
    return _Block(label, headers, tuple(lines), one_line, unterminated=not terminated)


def _where(block: _Block, line: _Line) -> str:
    return f"chunk {line.number}" if block.one_line else f"line {line.number}"


def _elided(block: _Block) -> Verification | None:
    """``redacted`` when the body is missing, elided or a placeholder."""
    if not block.lines:
        return Verification(Verdict.REDACTED, "PEM block with an empty body (key omitted), not a key")
    for line in block.lines:
        marker = _ELIDED.search(line.raw or line.text)
        if marker:
            token = marker.group(0)
            what = "placeholder text" if token[:1].isalpha() and token[:1] not in "xX" else "body omitted"
            return Verification(
                Verdict.REDACTED, f"{what} ({_marker_name(token)} on {_where(block, line)}), not a key"
            )
    joined = "".join(line.text for line in block.lines)
    if len(joined) >= 8 and (re.fullmatch(r"(.)\1+", joined.rstrip("=")) or len(set(joined)) <= 3):
        return Verification(Verdict.REDACTED, "body is one repeated character, a placeholder, not a key")
    for line in block.lines:
        if _NOT_B64.search(line.text) and is_word_like(line.text):
            return Verification(Verdict.REDACTED, f"placeholder words instead of a body ({_where(block, line)}), not a "
                                                  "key")
    if len(joined) < 200 and is_word_like(joined):
        return Verification(Verdict.REDACTED, "body is made of words (a placeholder), not a key")
    return None


def _marker_name(token: str) -> str:
    """How a detail names an omission marker: quoted when it is punctuation or a short note in words."""
    if re.fullmatch(r"[<\[][A-Za-z ]{1,40}[>\]]|\.\.\.|…|\*+", token):
        return repr(token)
    if token[:1] in "<[":
        return "a bracketed note"
    if token[:1] in "xX":
        return "'xxxx'"
    return repr(token.lower().strip(" _-")[:12])


def _legacy_encrypted(block: _Block) -> bool:
    return "ENCRYPTED" in block.headers.get("Proc-Type", "").upper()


@dataclass(frozen=True, slots=True)
class _Decoded:
    """A block's body as bytes, or (``data`` None) precisely why it is not base64."""

    data: bytes | None
    problem: str | None = None


def _decode(block: _Block) -> _Decoded:
    """Base64-decode the body, or say precisely why it is not base64 (naming the line)."""
    lines = block.lines
    for i, line in enumerate(lines):
        bad = _NOT_B64.search(line.text)
        if bad:
            char = bad.group(0)
            shown = repr(char) if not char.isalnum() and char.isprintable() else "a non-base64 character"
            return _Decoded(None, f"body is not valid base64 ({_where(block, line)}: {shown})")
        if "=" in line.text.rstrip("=") or ("=" in line.text and i != len(lines) - 1):
            return _Decoded(None, f"body is not valid base64 ({_where(block, line)}: '=' padding inside the data)")
        if not _B64_LINE.fullmatch(line.text):
            return _Decoded(None, f"body is not valid base64 ({_where(block, line)}: too much padding)")
    joined = "".join(line.text for line in lines)
    usable = len(joined.rstrip("=")) // 4 * 4
    if len(joined) % 4:
        prefix = base64.b64decode(joined.rstrip("=")[:usable]) if usable else b""
        declared = der_declared_length(prefix)
        if block.unterminated or (declared and declared > len(prefix)):
            # Cut output (no END line) or truncated DER: the key checks judge what is present.
            return _Decoded(prefix)
        return _Decoded(None, f"body is not valid base64 (length {len(joined)} is not a multiple of 4: characters "
                              "missing)")
    try:
        return _Decoded(base64.b64decode(joined, validate=True))
    except (binascii.Error, ValueError):
        return _Decoded(None, "body is not valid base64")


# ---- PGP ----------------------------------------------------------------------------------------


def crc24(data: bytes) -> int:
    """The OpenPGP armor checksum (RFC 4880 section 6.1)."""
    crc = _CRC24_INIT
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= _CRC24_POLY
    return crc & 0xFFFFFF


def _check_pgp(block: _Block) -> Verification:
    lines = list(block.lines)
    checksum: str | None = None
    if lines and re.fullmatch(r"=[A-Za-z0-9+/]{4}", lines[-1].text):
        checksum = lines.pop().text[1:]
    elif lines and re.search(r"=[A-Za-z0-9+/]{4}$", lines[-1].text) and not lines[-1].text.endswith("=="):
        # The checksum glued to the last line (a one-line paste).
        last = lines[-1]
        checksum = last.text[-4:]
        lines[-1] = _Line(last.number, last.text[:-5])
    body = _Block(block.label, block.headers, tuple(lines), block.one_line)
    decoded = _decode(body)
    data = decoded.data
    if data is None:
        return Verification(Verdict.INVALID, f"PGP private key block: {decoded.problem}, not a key")
    if checksum is not None:
        expected = base64.b64encode(crc24(data).to_bytes(3, "big")).decode()
        if expected != checksum:
            return Verification(Verdict.INVALID, "PGP private key block: armor checksum (CRC24) mismatch, corrupted or "
                                                 "invented")
    packet = _pgp_secret_key(data)
    if packet is None:
        return Verification(Verdict.INVALID, "PGP private key block: checksum aside, the first packet is not a secret "
                                             "key")
    algorithm, protected = packet.algorithm, packet.protected
    sum_note = "armor checksum matches" if checksum is not None else "no armor checksum"
    if protected:
        return Verification(Verdict.ENCRYPTED, f"PGP {algorithm} secret key, passphrase-protected ({sum_note}); "
                                               "passphrase unknown")
    return Verification(Verdict.VALID, f"PGP {algorithm} secret key, unprotected ({sum_note}), parses")


_PGP_ALGORITHMS = {1: "RSA", 2: "RSA", 3: "RSA", 16: "ElGamal", 17: "DSA", 18: "ECDH", 19: "ECDSA", 22: "EdDSA",
                   25: "X25519", 26: "X448", 27: "Ed25519", 28: "Ed448"}
_PGP_MPIS = {1: 2, 2: 2, 3: 2, 16: 3, 17: 4}
_PGP_FIXED = {25: 32, 26: 56, 27: 32, 28: 57}


@dataclass(frozen=True, slots=True)
class _PgpSecretKey:
    """What the first packet of a PGP block says: the key's algorithm, and whether a passphrase protects it."""

    algorithm: str
    protected: bool


def _pgp_secret_key(data: bytes) -> _PgpSecretKey | None:
    """The first packet's algorithm and protection, when it is a secret (sub)key packet."""
    try:
        tag_byte = data[0]
        if not tag_byte & 0x80:
            return None
        if tag_byte & 0x40:  # new format
            tag = tag_byte & 0x3F
            first = data[1]
            if first < 192:
                offset = 2
            elif first < 224:
                offset = 3
            elif first == 255:
                offset = 6
            else:
                return None
        else:
            tag = (tag_byte >> 2) & 0x0F
            offset = 1 + {0: 1, 1: 2, 2: 4, 3: 0}[tag_byte & 0x03]
        if tag not in (5, 7):
            return None
        version = data[offset]
        algorithm = data[offset + 5]
        offset += 6
        if version in (5, 6):
            (length,) = struct.unpack(">I", data[offset : offset + 4])
            offset += 4 + length
        elif version == 4:
            offset = _skip_public_material(data, offset, algorithm)
        else:
            return None
        usage = data[offset]
    except (IndexError, KeyError, struct.error):
        return None
    return _PgpSecretKey(_PGP_ALGORITHMS.get(algorithm, f"algorithm {algorithm}"), usage != 0)


def _skip_public_material(data: bytes, offset: int, algorithm: int) -> int:
    def mpi(at: int) -> int:
        bits = int.from_bytes(data[at : at + 2], "big")
        return at + 2 + (bits + 7) // 8

    if algorithm in _PGP_MPIS:
        for _ in range(_PGP_MPIS[algorithm]):
            offset = mpi(offset)
        return offset
    if algorithm in (18, 19, 22):
        offset += 1 + data[offset]  # curve OID
        offset = mpi(offset)
        if algorithm == 18:
            offset += 1 + data[offset]  # KDF parameters
        return offset
    if algorithm in _PGP_FIXED:
        return offset + _PGP_FIXED[algorithm]
    raise KeyError(algorithm)

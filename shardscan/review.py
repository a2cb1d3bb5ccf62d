"""The review workflow: turn findings of a JSON report into allowlist entries, by hand or interactively.

Appending edits the file as text, so every comment, blank line and entry the reviewers wrote
stays exactly where it was: the new entry goes right after the last entry's content, indented
like the first one. The result is parsed and compared with the original before it replaces the
file (atomically), so an append can never corrupt an allowlist.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TextIO

import yaml

from shardscan.allowlist import (
    ALLOWLIST_VERSION,
    FINGERPRINT_RE,
    KEY_ORDER,
    Allowlist,
    AllowlistEntry,
    SecretCheck,
    compose,
    looks_like_credential,
    parse_allowlist,
)
from shardscan.atomic import write_file
from shardscan.errors import ConfigError

NEW_FILE_HEADER = (
    "# Reviewed allowlist for shardscan: findings judged not to be live credentials.\n"
    "# Entries hold only fingerprints and review metadata, never a secret.\n"
    "# Add entries with `shardscan allowlist add` or `shardscan review`.\n"
)


# ---- reports ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReportFinding:
    """A finding as read back from a JSON report (no plaintext: the report never held any)."""

    number: int  # 1-based position in the report's findings
    rule_id: str
    kind: str
    shard: str
    row: int
    column: str
    role: str | None
    fingerprint: str
    preview: str
    verdict: str
    detail: str
    context: str
    status: str
    blocking: bool

    @property
    def location(self) -> str:
        """Where the finding was seen, as the ``row`` field of an entry records it."""
        return f"{self.shard} row {self.row}, {self.column}"


def load_report_findings(path: str | Path) -> list[ReportFinding]:
    """Read the findings of a shardscan JSON report (``--format json``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such report") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not a readable JSON report ({type(exc).__name__})") from None
    if not isinstance(data, dict) or data.get("version") != 1 or not isinstance(data.get("findings"), list):
        raise ConfigError(f"{path}: not a shardscan JSON report (write one with --format json)")
    out = []
    for number, raw in enumerate(data["findings"], start=1):
        try:
            finding = ReportFinding(
                number=number,
                rule_id=str(raw["rule_id"]),
                kind=str(raw["kind"]),
                shard=str(raw["shard"]),
                row=int(raw["row"]),
                column=str(raw["column"]),
                role=raw.get("role"),
                fingerprint=str(raw["fingerprint"]),
                preview=str(raw.get("preview", "")),
                verdict=str(raw.get("verdict", "")),
                detail=str(raw.get("detail", "")),
                context=str(raw.get("context", "")),
                status=str(raw.get("status", "new")),
                blocking=bool(raw.get("blocking", False)),
            )
        except (KeyError, TypeError, ValueError):
            raise ConfigError(
                f"{path}: finding {number}: malformed (missing rule_id, location or fingerprint)"
            ) from None
        if not FINGERPRINT_RE.fullmatch(finding.fingerprint):
            raise ConfigError(f"{path}: finding {number}: fingerprint is not sha256:<64 hex digits>")
        out.append(finding)
    return out


# ---- entries ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NewEntry:
    """The fields of an entry about to be appended."""

    fingerprint: str
    reason: str
    reviewer: str
    reviewed: date
    rule: str | None = None
    shard: str | None = None
    column: str | None = None
    expires: date | None = None
    row: int | str | None = None
    verdict: str | None = None

    @classmethod
    def for_finding(
        cls, finding: ReportFinding, reason: str, reviewer: str, reviewed: date, expires: date | None = None,
        rule: str | None = None, shard: str | None = None, column: str | None = None,
    ) -> NewEntry:
        """An entry accepting ``finding`` by fingerprint; where it was seen is recorded in ``row`` and
        what verification said then in ``verdict``."""
        return cls(finding.fingerprint, reason.strip(), reviewer.strip(), reviewed, rule, shard, column, expires,
                   finding.location, finding.verdict or None)

    def fields(self) -> dict[str, Any]:
        """The non-empty fields in the order entries are written."""
        values = {
            "fingerprint": self.fingerprint, "rule": self.rule, "shard": self.shard, "column": self.column,
            "reason": self.reason, "reviewer": self.reviewer, "reviewed": self.reviewed, "expires": self.expires,
            "verdict": self.verdict, "row": self.row,
        }
        return {k: values[k] for k in KEY_ORDER if values[k] is not None}


def _scalar(value: Any) -> str:
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and FINGERPRINT_RE.fullmatch(value):
        return value
    dumped = yaml.safe_dump(str(value), default_style='"', allow_unicode=True, width=10**9).strip()
    return dumped.removesuffix("\n...").strip()


def render_entry(entry: NewEntry, dash_indent: str = "  ", key_indent: str | None = None, newline: str = "\n") -> str:
    """The YAML text of one list item, one ``key: value`` per line."""
    key_indent = key_indent if key_indent is not None else dash_indent + "  "
    # The first key sits on the dash's line, at the column of the others (``-   key`` is valid YAML too).
    first = dash_indent + "-" + " " * max(1, len(key_indent) - len(dash_indent) - 1)
    lines = []
    for i, (key, value) in enumerate(entry.fields().items()):
        lines.append(f"{first if i == 0 else key_indent}{key}: {_scalar(value)}")
    return newline.join(lines) + newline


def _read_raw(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return handle.read()
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read allowlist ({type(exc).__name__})") from None


def _line_start(text: str, index: int) -> int:
    return text.rfind("\n", 0, index) + 1


def _after_line(text: str, index: int) -> int:
    """The index just past the line break that ends the line containing ``index``."""
    if index > 0 and text[index - 1] == "\n":
        return index
    end = text.find("\n", index)
    return len(text) if end < 0 else end + 1


def appended_text(text: str, entry: NewEntry, label: str) -> str:
    """``text`` with ``entry`` appended to its ``entries`` list; everything else is kept byte for byte."""
    newline = "\r\n" if "\r\n" in text else "\n"
    root = compose(text, label)
    if root is None:
        # No YAML content yet (a missing file, or only comments): start the document.
        prefix = text if not text or text.endswith("\n") else text + newline
        header = NEW_FILE_HEADER.replace("\n", newline) if not text.strip() else ""
        return prefix + header + f"version: {ALLOWLIST_VERSION}{newline}entries:{newline}" + render_entry(
            entry, "  ", None, newline
        )
    key_node, node = next((k, v) for k, v in root.value if isinstance(k, yaml.ScalarNode) and k.value == "entries")
    if isinstance(node, yaml.SequenceNode) and node.value and not node.flow_style:
        first, last = node.value[0], node.value[-1]
        prefix = text[_line_start(text, first.start_mark.index): first.start_mark.index]
        shape = re.fullmatch(r"( *)-( +)", prefix)
        if shape:
            dash, keys = shape.group(1), shape.group(1) + " " + shape.group(2)
        else:
            dash = " " * (key_node.start_mark.column + 2)
            keys = dash + "  "
        end = max(n.end_mark.index for pair in last.value for n in pair)
        at = _after_line(text, end)
        before = text[:at] if text[:at].endswith("\n") or not text[:at] else text[:at] + newline
        return before + render_entry(entry, dash, keys, newline) + text[at:]
    if isinstance(node, yaml.SequenceNode) and node.value:
        raise ConfigError(f"{label}:{node.start_mark.line + 1}: 'entries' is written in flow style ([...]); "
                          "rewrite it as a block list to append entries")
    # Empty: `entries:`, `entries: null`, `entries: []`. Drop the empty value, add the list below the key.
    text = text[: node.start_mark.index] + text[node.end_mark.index:]
    at = _after_line(text, key_node.end_mark.index)
    before = text[:at] if text[:at].endswith("\n") else text[:at] + newline
    indent = " " * (key_node.start_mark.column + 2)
    return before + render_entry(entry, indent, None, newline) + text[at:]


def append_entry(path: str | Path, entry: NewEntry, *, secret_check: SecretCheck | None = None) -> AllowlistEntry:
    """Append ``entry`` to the allowlist at ``path`` (created if missing) and return it as written.

    The file must be valid before, and is checked after: every old entry must read back
    unchanged and the new one must be the last. Anything else leaves the file untouched.
    """
    path = Path(path)
    label = str(path)
    for key, value in entry.fields().items():
        if isinstance(value, str) and key != "fingerprint" and (
            looks_like_credential(value) or (secret_check is not None and secret_check(value))
        ):
            raise ConfigError(f"{label}: '{key}' looks like it contains a raw credential; refusing to write it")
    if not FINGERPRINT_RE.fullmatch(entry.fingerprint):
        raise ConfigError(f"{label}: the fingerprint is not sha256:<64 hex digits>")
    text = _read_raw(path)
    old = parse_allowlist(text, label, secret_check=secret_check) if compose(text, label) is not None else None
    new_text = appended_text(text, entry, label)
    new = parse_allowlist(new_text, label, secret_check=secret_check)
    old_entries = old.entries if old else ()
    written = new.entries[-1] if new.entries else None
    if (
        len(new.entries) != len(old_entries) + 1
        or [_comparable(e) for e in new.entries[:-1]] != [_comparable(e) for e in old_entries]
        or written is None
        or (written.fingerprint, *written.narrowing) != (entry.fingerprint, entry.rule, entry.shard, entry.column)
    ):
        raise ConfigError(f"{label}: could not append the entry without changing existing ones; file left unchanged")
    _write_atomically(path, new_text)
    return written


def _comparable(entry: AllowlistEntry) -> dict[str, Any]:
    data = entry.to_dict()
    data.pop("line")
    return data


def _write_atomically(path: Path, text: str) -> None:
    # Through a symlink, the file it points to is replaced, not the link (the allowlist may live
    # in a shared repo), with its mode kept; its folder must exist (OutputError naming it if not).
    write_file(path, text.encode("utf-8"))


def existing_allowlist(path: str | Path, *, secret_check: SecretCheck | None = None) -> Allowlist | None:
    """The allowlist at ``path``; None when the file is missing or holds no YAML yet (only comments)."""
    text = _read_raw(Path(path))
    if compose(text, str(path)) is None:
        return None
    return parse_allowlist(text, str(path), secret_check=secret_check)


def covering_entry(allowlist: Allowlist | None, finding: ReportFinding, today: date) -> AllowlistEntry | None:
    """The first entry (expired or not) that matches ``finding``; None when there is none."""
    if allowlist is None:
        return None
    matching = [
        entry for entry in allowlist.entries
        if entry.matches_fields(finding.fingerprint, finding.rule_id, finding.kind, finding.shard, finding.column)
    ]
    return next((entry for entry in matching if not entry.is_expired(today)), matching[0] if matching else None)


def git_user_name() -> str | None:
    """``git config user.name``, or None when git or the setting is unavailable."""
    try:
        proc = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    name = proc.stdout.strip()
    return name if proc.returncode == 0 and name else None


# ---- allowlist add ----------------------------------------------------------------------------


def chosen_finding(findings: list[ReportFinding], number: int, reason: str | None) -> ReportFinding:
    """Finding ``number`` (1-based) of a report, to accept with ``reason``; ConfigError when there is
    no such finding or no reason."""
    if not 1 <= number <= len(findings):
        raise ConfigError(f"--finding {number}: the report has {len(findings)} finding(s), numbered from 1")
    if reason is None or not reason.strip():
        raise ConfigError("--finding needs --reason: say why the finding is not a live credential")
    return findings[number - 1]


def reviewer_name(given: str | None) -> str:
    """The reviewer an entry names: ``given``, else git's user.name; ConfigError when neither is set."""
    who = given or git_user_name()
    if not who or not who.strip():
        raise ConfigError("no reviewer: pass --reviewer NAME (git user.name is not set)")
    return who


@dataclass(frozen=True, slots=True)
class Added:
    """What accepting a finding did: the entry appended (``new``), or the entry already accepting it."""

    entry: AllowlistEntry
    new: bool


def add_finding(
    path: Path,
    finding: ReportFinding,
    new_entry: NewEntry,
    *,
    today: date,
    confirm_live: bool,
    secret_check: SecretCheck | None = None,
) -> Added:
    """Append ``new_entry`` accepting ``finding`` to the allowlist at ``path`` (created if missing).

    A finding an unexpired entry already accepts is not added twice (unless the new entry narrows
    it to a rule, shard or column); an expired one must be renewed by editing it. A
    finding verified as a working credential needs ``confirm_live`` and a reason of
    :data:`LIVE_REASON_WORDS` words. Refusals are ConfigErrors naming the file and line.
    """
    cover = covering_entry(existing_allowlist(path, secret_check=secret_check), finding, today)
    narrowed = bool(new_entry.rule or new_entry.shard or new_entry.column)
    if cover is not None and not narrowed:
        if not cover.is_expired(today):
            return Added(cover, new=False)
        raise ConfigError(f"{path}:{cover.line}: entry {cover.index} accepted finding {finding.number} until "
                          f"{cover.expires}; edit its 'expires' to renew it")
    if finding.verdict == "valid":
        if not confirm_live:
            raise ConfigError(f"finding {finding.number} was verified offline as a working credential: revoke or "
                              "rotate it; to accept it anyway, add --confirm-live and a reason that says why "
                              "publishing it is safe")
        if len(new_entry.reason.split()) < LIVE_REASON_WORDS:
            raise ConfigError(f"--reason: a live credential needs a reason of at least {LIVE_REASON_WORDS} words")
    return Added(append_entry(path, new_entry, secret_check=secret_check), new=True)


# ---- interactive review -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """What a review session did."""

    accepted: tuple[AllowlistEntry, ...]
    skipped: int
    already: int
    remaining: int
    quit: bool


# Asks a question; the answer, or None at the end of input.
Ask = Callable[[str], str | None]

_HELP = "a = accept (asks for a reason), s = skip, q = quit (accepted entries are already saved)"


def describe(finding: ReportFinding, position: str) -> str:
    """The redacted review card of one finding: preview, verdict and detail, location, context."""
    role = f" (role {finding.role})" if finding.role else ""
    blocking = "blocks the gate" if finding.blocking else "does not block under the default policy"
    return "\n".join([
        f"[{position}] {finding.kind} ({finding.rule_id}): {finding.preview}  {finding.fingerprint}",
        f"  verdict: {finding.verdict}: {finding.detail}  ({blocking})",
        f"  at:      {finding.shard} row {finding.row}, {finding.column}{role}",
        f"  context: {finding.context}",
    ])


def run_review(
    findings: Iterable[ReportFinding],
    allowlist_path: str | Path,
    *,
    reviewer: str,
    today: date,
    expires: date | None,
    stdin: TextIO,
    stdout: TextIO,
    secret_check: SecretCheck | None = None,
) -> ReviewOutcome:
    """Walk the ``new`` findings one at a time, asking accept / skip / quit; write each accepted one.

    Reads answers line by line from ``stdin`` (a terminal or a pipe); end of input means quit.
    A finding whose fingerprint an entry already accepts (from the file or earlier in this
    session) is not asked about again.
    """
    path = Path(allowlist_path)
    pending = [f for f in findings if f.status != "allowlisted"]
    accepted: list[AllowlistEntry] = []
    skipped = already = 0

    def ask(prompt: str) -> str | None:
        stdout.write(prompt)
        stdout.flush()
        line = stdin.readline()
        if not line or not _is_tty(stdin):
            # A terminal echoes the answer and its newline; a pipe does not, so end the prompt line.
            stdout.write("\n")
        return line.strip() if line else None

    def current() -> Allowlist | None:
        return existing_allowlist(path, secret_check=secret_check)

    allowlist = current()
    stdout.write(f"{len(pending)} finding(s) to review; accepted ones are written to {path}\n{_HELP}\n")
    for position, finding in enumerate(pending, start=1):
        cover = covering_entry(allowlist, finding, today)
        if cover is not None and not cover.is_expired(today):
            already += 1
            stdout.write(f"[{position}/{len(pending)}] {finding.preview} at {finding.location}: already accepted "
                         f"by entry {cover.index} (line {cover.line})\n")
            continue
        stdout.write("\n" + describe(finding, f"{position}/{len(pending)}") + "\n")
        if cover is not None:
            stdout.write(f"  note: entry {cover.index} (line {cover.line}) accepted it until {cover.expires}; "
                         "edit its 'expires' to renew it\n")
        while True:
            answer = ask("accept, skip or quit? [a/s/q] ")
            if answer is None or answer.lower() in ("q", "quit"):
                return ReviewOutcome(tuple(accepted), skipped, already, len(pending) - position + 1, True)
            if answer.lower() in ("s", "skip"):
                skipped += 1
                break
            if answer.lower() in ("a", "accept"):
                if cover is not None:
                    stdout.write("  cannot accept: an expired entry already names this finding; renew it instead\n")
                    skipped += 1
                    break
                if finding.verdict == "valid":
                    confirmed = _confirm_live(ask, stdout)
                    if confirmed is None:  # end of input: quit, as everywhere else
                        return ReviewOutcome(tuple(accepted), skipped, already, len(pending) - position + 1, True)
                    if not confirmed:
                        skipped += 1
                        break
                reason = _ask_reason(ask, stdout, LIVE_REASON_WORDS if finding.verdict == "valid" else 1)
                if reason is None:
                    return ReviewOutcome(tuple(accepted), skipped, already, len(pending) - position + 1, True)
                entry = NewEntry.for_finding(finding, reason, reviewer, today, expires)
                try:
                    written = append_entry(path, entry, secret_check=secret_check)
                except ConfigError as err:
                    stdout.write(f"  not written: {err}\n")
                    continue
                accepted.append(written)
                allowlist = current()
                stdout.write(f"  accepted: entry {written.index} written to {path} (line {written.line})\n")
                break
            stdout.write(f"  {_HELP}\n")
    return ReviewOutcome(tuple(accepted), skipped, already, 0, False)


def _is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


# A verified-live credential is accepted only with a reason a later reader can check: a word or
# two ("fine", "test key") does not say why publishing a working secret is acceptable.
LIVE_REASON_WORDS = 6
LIVE_CONFIRMATION = "publish live"


def _confirm_live(ask: Ask, stdout: TextIO) -> bool | None:
    """Whether the reviewer, warned, confirms accepting a credential verified offline as working
    (None at the end of input)."""
    stdout.write(
        "  WARNING: this credential was verified offline as working (its checksum, structure or key\n"
        "  material is valid). Accepting it publishes a live secret: revoke or rotate it first.\n"
    )
    answer = ask(f"  type '{LIVE_CONFIRMATION}' to accept it anyway (anything else skips it): ")
    if answer is None:
        return None
    if answer.strip().lower() == LIVE_CONFIRMATION:
        return True
    stdout.write("  not accepted\n")
    return False


def _ask_reason(ask: Ask, stdout: TextIO, min_words: int = 1) -> str | None:
    while True:
        reason = ask("reason (required): ")
        if reason is None:
            return None
        if not reason:
            stdout.write("  a reason is required: say why this is not a live credential\n")
            continue
        if len(reason.split()) < min_words:
            stdout.write(f"  a live credential needs a reason of at least {min_words} words: say why publishing "
                         "it is safe (revoked when, scoped to what)\n")
            continue
        if looks_like_credential(reason):
            stdout.write("  that reason looks like it contains a credential; describe it without the secret\n")
            continue
        return reason

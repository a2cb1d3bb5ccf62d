"""PuTTY key files (.ppk): found in a Parquet shard at their exact span, as written, with CRLF line
ends, JSON-escaped and cut short by head; the private half checked against the public half with
``cryptography``; encrypted, invented and hostile files judged without a crash or a leak."""

from __future__ import annotations

import json
import random

import pytest

from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.model import Verdict
from shardscan.synth import ppk_lines, putty_private_key, ssh_mpint, ssh_string
from shardscan.verifiers.putty import parse_ppk
from tests.conftest import trace_row, write_trace_shard
from tests.verifier_helpers import findings, only, verify


@pytest.mark.parametrize(("kind", "verdict"), [
    ("ed25519", Verdict.VALID), ("rsa", Verdict.VALID), ("ec", Verdict.VALID),
    ("encrypted", Verdict.ENCRYPTED), ("invented", Verdict.INVALID),
])
def test_each_kind_of_file_gets_its_verdict(kind, verdict):
    key = putty_private_key(kind)
    finding = only(f"$ cat ~/.ssh/deploy.ppk\n{key}\n$ ", "putty-private-key")
    assert finding.verdict == verdict, finding.detail
    # The span runs from the header to the last private line (the MAC after it is no secret).
    assert (finding.kind, finding.start, finding.end) == ("private-key", 24, 24 + key.index("\nPrivate-MAC"))


def test_a_private_half_of_another_key_is_invalid():
    ed, other = putty_private_key("ed25519"), putty_private_key("ed25519", seed=1)
    private = other[other.index("Private-Lines"):]
    forged = ed[: ed.index("Private-Lines")] + private
    assert verify(forged, "putty-private-key").verdict == Verdict.INVALID


def test_a_file_cut_inside_its_private_lines_still_blocks():
    lines = putty_private_key("rsa").splitlines()
    private_at = next(i for i, line in enumerate(lines) if line.startswith("Private-Lines"))
    cut = "\n".join(lines[: private_at + 3])
    finding = only(f"$ head -15 key.ppk\n{cut}", "putty-private-key")
    assert finding.verdict == Verdict.UNVERIFIED
    assert "cut after 2 of" in finding.detail


def test_crlf_and_json_escaped_files_are_read_the_same():
    key = putty_private_key("ec")
    crlf = key.replace("\n", "\r\n")
    assert only(crlf, "putty-private-key").verdict == Verdict.VALID
    escaped = json.dumps({"type": "tool_result", "content": key})
    assert only(escaped, "putty-private-key").verdict == Verdict.VALID


def test_a_header_without_private_lines_is_not_reported():
    public_only = putty_private_key("ed25519").split("\nPrivate-Lines")[0]
    assert [f.rule_id for f in findings(public_only)] == []


def test_in_a_parquet_shard_at_its_row_and_column(tmp_path):
    key = putty_private_key("ed25519")
    rows = [trace_row([("user", "show me the key"), ("tool", "nothing here")]),
            trace_row([("user", "show me the key"), ("tool", f"Here it is:\n{key}\n")])]
    report = scan([str(write_trace_shard(tmp_path / "train-00000-of-00001.parquet", rows))],
                  options=ScanOptions(), cache=None)
    assert report.exit_code == 1
    assert [(f.rule_id, f.location.row, f.location.column, f.start, f.verdict, f.blocking)
            for f in report.findings] == [("putty-private-key", 1, "conversations[1].content", 12, Verdict.VALID, True)]
    body = key.split("Private-Lines: 1\n")[1].split("\n")[0]
    for finding in report.findings:
        assert body not in finding.preview + finding.detail + finding.context


def test_hostile_bodies_never_crash_and_never_echo_the_body():
    rng = random.Random(7)
    key = putty_private_key("rsa")
    for _ in range(300):
        chars = list(key)
        for _ in range(rng.randint(1, 12)):
            chars[rng.randrange(len(chars))] = rng.choice("A/+=\n:0 x-")
        text = "".join(chars)
        for finding in findings(text):
            assert finding.verdict in set(Verdict)
    assert parse_ppk(key).private_lines_declared == parse_ppk(key).private_lines_read
    with pytest.raises(ValueError):
        parse_ppk("PuTTY-User-Key-File-3: ssh-rsa\nPublic-Lines: 99999\n")


def test_integers_larger_than_any_key_are_refused_before_arithmetic():
    rng = random.Random(3)
    public = ssh_string(b"ssh-dss") + b"".join(ssh_mpint(rng.getrandbits(20_000) | 1) for _ in range(4))
    private = ssh_mpint(rng.getrandbits(20_000))
    text = "\n".join(["PuTTY-User-Key-File-2: ssh-dss", "Encryption: none", "Comment: x",
                      f"Public-Lines: {len(ppk_lines(public))}", *ppk_lines(public),
                      f"Private-Lines: {len(ppk_lines(private))}", *ppk_lines(private)])
    result = verify(text, "putty-private-key")
    assert result.verdict == Verdict.INVALID
    assert "not the private half" in result.detail


def test_an_ed25519_seed_that_ends_in_a_zero_byte_is_written_shorter_and_still_valid():
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    seed = bytes(range(1, 32)) + b"\0"
    public_key = ed25519.Ed25519PrivateKey.from_private_bytes(seed).public_key()
    public = ssh_string(b"ssh-ed25519") + ssh_string(public_key.public_bytes(Encoding.Raw, PublicFormat.Raw))
    private = ssh_string(seed[:31])  # as PuTTY writes a little-endian integer: no trailing zero byte
    text = "\n".join(["PuTTY-User-Key-File-3: ssh-ed25519", "Encryption: none", "Comment: k",
                      f"Public-Lines: {len(ppk_lines(public))}", *ppk_lines(public),
                      f"Private-Lines: {len(ppk_lines(private))}", *ppk_lines(private)])
    assert verify(text, "putty-private-key").verdict == Verdict.VALID

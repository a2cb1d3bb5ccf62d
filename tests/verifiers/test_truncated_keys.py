"""Private keys whose output was cut before the END line (``head``, truncating tools): found and judged by what is
present."""

from __future__ import annotations

import base64
import textwrap

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, rsa

from shardscan.engine import Scanner, ScanOptions
from shardscan.synth import private_key_pem
from tests.conftest import FIXED_NOW


@pytest.fixture(scope="module")
def scanner(ruleset) -> Scanner:
    return Scanner(ruleset, ScanOptions(now=FIXED_NOW))


def _scan(scanner: Scanner, text: str) -> list[tuple[str, str, str]]:
    findings, limits = scanner.scan_text(text)
    assert limits == []
    return [(f.rule_id, str(f.verdict), f.detail) for f in findings]


@pytest.mark.parametrize(
    ("lines", "verdict", "says"),
    [
        (20, "valid", "modulus and private exponent are complete and match: the key is exposed"),
        (12, "unverified", "the private part is cut, partial exposure"),
        (5, "invalid", "no usable key material left"),
    ],
)
def test_head_of_an_rsa_key_is_found_and_judged_by_what_it_exposes(scanner, lines, verdict, says):
    head = "\n".join(private_key_pem("rsa").strip().splitlines()[:lines])
    found = _scan(scanner, f"$ head -{lines} ~/.ssh/id_rsa\n{head}\n$ ls\n")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", verdict)]
    detail = found[0][2]
    assert detail.startswith("no END line, the text stops inside the key: RSA private key: truncated")
    assert detail.endswith(says)


def test_head_of_an_escaped_key_in_tool_output_is_found(scanner):
    head = "\\n".join(private_key_pem("rsa").strip().splitlines()[:20])
    found = _scan(scanner, '{"stdout": "' + head + '\\n... [output truncated]"}')
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "valid")]


def test_three_body_lines_without_end_are_reported_but_not_key_material(scanner):
    head = "\n".join(private_key_pem("rsa").strip().splitlines()[:4])
    found = _scan(scanner, head + "\n-- cut --")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "invalid")]


def _openssh_ed25519() -> tuple[bytes, bytes]:
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption())
    body = "".join(pem.decode().strip().splitlines()[1:-1])
    public = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return base64.b64decode(body), public


def _seed_offset(blob: bytes, public: bytes) -> int:
    """Where the seed starts: after the private section's public key and the length of seed||public."""
    second = blob.find(public, blob.find(public) + 1)
    return second + 32 + 4


def _unterminated(blob: bytes) -> str:
    body = base64.b64encode(blob).decode()
    return "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(textwrap.wrap(body, 70))


@pytest.mark.slow
def test_truncated_openssh_ed25519_key_with_its_seed_is_exposed(scanner):
    blob, public = _openssh_ed25519()
    seed_at = _seed_offset(blob, public)
    assert 0 < seed_at < len(blob) - 32
    cut = blob[: seed_at + 32 + 6]  # the seed and a few bytes of the public half, then nothing
    found = _scan(scanner, "$ head -5 id_ed25519\n" + _unterminated(cut) + "\n$ ")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "valid")]
    assert found[0][2].endswith("yet its Ed25519 seed is complete and matches its public key: the key is exposed")


def test_truncated_openssh_ed25519_key_whose_seed_does_not_match_is_invalid(scanner):
    blob, public = _openssh_ed25519()
    seed_at = _seed_offset(blob, public)
    assert 0 < seed_at < len(blob) - 32
    tampered = bytearray(blob[: seed_at + 32 + 6])
    tampered[seed_at + 5] ^= 0x01
    found = _scan(scanner, _unterminated(bytes(tampered)) + "\n$ ")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "invalid")]
    assert "truncated" in found[0][2]


def test_truncated_openssh_ed25519_key_cut_inside_its_seed_is_a_partial_exposure(scanner):
    """Equal check words and the header's public key repeated: a real key, cut; it blocks as unverified."""
    blob, public = _openssh_ed25519()
    seed_at = _seed_offset(blob, public)
    found = _scan(scanner, _unterminated(blob[: seed_at + 20]) + "\n$ ")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "unverified")]
    assert found[0][2].endswith(
        "its Ed25519 public key matches the header and 20 of 32 seed bytes are visible; the private part is cut, "
        "partial exposure"
    )


def test_truncated_openssh_ed25519_key_whose_public_keys_differ_is_invalid(scanner):
    blob, public = _openssh_ed25519()
    seed_at = _seed_offset(blob, public)
    tampered = bytearray(blob[: seed_at + 20])
    tampered[seed_at - 36 + 4] ^= 0x01  # the private section's copy of the public key
    found = _scan(scanner, _unterminated(bytes(tampered)) + "\n$ ")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "invalid")]


def test_truncated_openssh_rsa_key_cut_after_its_modulus_is_a_partial_exposure(scanner):
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                            serialization.NoEncryption())
    blob = base64.b64decode("".join(pem.decode().strip().splitlines()[1:-1]))
    modulus = key.public_key().public_numbers().n.to_bytes(257, "big")  # an mpint: a leading zero byte
    cut = blob.rfind(modulus) + len(modulus) + 2  # the private section's modulus, then part of e's length
    found = _scan(scanner, _unterminated(blob[:cut]) + "\n$ ")
    assert [(rule, v) for rule, v, _ in found] == [("private-key-truncated", "unverified")]
    assert found[0][2].endswith(
        "its RSA 2048-bit modulus is complete and has no small factors (looks genuine); the private part is cut, "
        "partial exposure"
    )

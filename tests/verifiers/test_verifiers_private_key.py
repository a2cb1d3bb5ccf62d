"""Private-key verifier: keys generated with cryptography, then wrapped and corrupted in every way."""

from __future__ import annotations

import base64
import random
import re
import struct

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from shardscan.model import Verdict
from shardscan.synth import private_key_pem, ssh_string
from shardscan.verifiers.private_key import crc24
from tests.verifier_helpers import only, verify

VALID = {
    "rsa": "RSA 2048-bit private key (PKCS#1), parses",
    "rsa-pkcs8": "RSA 2048-bit private key (PKCS#8), parses",
    "ec": "EC secp256r1 (256-bit) private key (SEC1), parses",
    "ed25519": "Ed25519 private key (OpenSSH), parses",
}


def _lines(kind: str) -> list[str]:
    return private_key_pem(kind).strip().splitlines()


def _forms(pem: str) -> dict[str, str]:
    lines = pem.strip().splitlines()
    return {
        "newlines": pem,
        "escaped": pem.strip().replace("\n", "\\n"),
        "double-escaped": pem.strip().replace("\n", "\\\\n"),
        "crlf-escaped": pem.strip().replace("\n", "\\r\\n"),
        "indented": "\n".join("        " + line for line in lines),
        "one-line": lines[0] + "".join(lines[1:-1]) + lines[-1],
        "spaces": " ".join(lines),
        "quoted": "\n".join("> " + line for line in lines),
    }


# How tools print a file: something in front of (or around) every line that is not the key.
# The key is read without it, and the detail says how it was read.
def _printed(pem: str) -> dict[str, tuple[str, str | None]]:
    lines = pem.strip().splitlines()
    numbers = "read without the line numbers in front of each line"
    return {
        "added in a diff": ("\n".join("+" + line for line in lines), "read without the diff or quote mark in front of "
                                                                     "each line"),
        "removed in a diff": ("\n".join("-" + line for line in lines), "read without the diff or quote mark in front "
                                                                       "of each line"),
        "cat -n": ("\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, 1)), numbers),
        "agent file view, escaped": ("\\n".join(f"{i:6}→{line}" for i, line in enumerate(lines, 1)), numbers),
        "grep -n": ("\n".join(f"{i}:{line}" for i, line in enumerate(lines, 1)), numbers),
        "grep -r": ("\n".join(f"deploy/key.pem:{line}" for line in lines), "read without the file name in front of "
                                                                           "each line"),
        "grep -rn": ("\n".join(f"deploy/key.pem:{i}:{line}" for i, line in enumerate(lines, 1)),
                     "read without the file name in front of each line"),
        "log lines": ("\n".join(f"[2024-05-01 10:00:{i:02}] {line}" for i, line in enumerate(lines, 1)),
                      "read without the log prefix in front of each line"),
        "kubectl logs --timestamps": ("\n".join(f"2024-05-01T10:00:{i:02}.123456789Z {line}" for i,
                                                line in enumerate(lines, 1)),
                                      "read without the log prefix in front of each line"),
        "python logging": ("\n".join(f"INFO:root:{line}" for line in lines), "read without the log prefix in front of "
                                                                             "each line"),
        "docker compose logs -t": ("\n".join(f"app-1  | 2024-05-01T10:00:{i:02}.5Z {line}" for i,
                                             line in enumerate(lines, 1)),
                                   "read without the service name in front of each line"),
        "journalctl -o short-iso": ("\n".join(f"2024-05-01T10:00:{i:02}+0000 web-1 app[4242]: {line}"
                                            for i, line in enumerate(lines, 1)), "read without the text in front of "
                                                                                 "each line"),
        "go log": ("\n".join(f"2024/05/01 10:00:{i:02} {line}" for i, line in enumerate(lines, 1)),
                   "read without the text in front of each line"),
        "ray worker": ("\n".join(f"(TrainWorker pid=1234, ip=10.0.0.{i}) {line}" for i, line in enumerate(lines, 1)),
                       "read without the text in front of each line"),
        "cat -e": ("\n".join(f"{line}$" for line in lines), "read without the $ that cat -A puts at the end of each "
                                                            "line"),
        "cat -A, CRLF": ("\n".join(f"{line}^M$" for line in lines),
                         "read without the $ that cat -A puts at the end of each line"),
        "grep -n -A": ("\n".join(f"deploy/key.pem{':' if i == 1 else '-'}{i}{':' if i == 1 else '-'}{line}"
                                  for i, line in enumerate(lines, 1)), "read without the file name in front of each "
                                                                       "line"),
        "html line breaks": ("<br>".join(lines), "read without markup or colour codes"),
        # Taken out by the ansi decoder before the verifier sees the key (no reading needed).
        "ansi colours": ("\n".join(f"\x1b[32m{line}\x1b[0m" for line in lines), None),
    }


@pytest.mark.parametrize("kind", sorted(VALID))
@pytest.mark.parametrize("form", sorted(_forms("-----BEGIN X-----\nA\n-----END X-----")))
def test_generated_keys_parse_in_every_form(kind, form):
    text = _forms(private_key_pem(kind))[form]
    outcome = verify(text[text.index("-----BEGIN"):], "private-key")
    assert (outcome.verdict, outcome.detail) == (Verdict.VALID, VALID[kind])


@pytest.mark.parametrize("kind", sorted(VALID))
@pytest.mark.parametrize("form", sorted(_printed("-----BEGIN X-----\nA\n-----END X-----")))
def test_keys_as_tools_print_them_are_read_without_the_decoration(kind, form):
    text, note = _printed(private_key_pem(kind))[form]
    finding = only(f"$ show key\n{text}\n$ ", "private-key")
    assert (finding.verdict, finding.detail) == (Verdict.VALID, f"{VALID[kind]} ({note})" if note else VALID[kind])
    assert ("ansi" in finding.encoding) == (note is None)
    # One key, one fingerprint, however a tool printed it (an allowlist entry covers every form).
    assert finding.fingerprint == only(f"$ cat key\n{private_key_pem(kind)}\n$ ", "private-key").fingerprint


def test_a_reading_never_turns_random_base64_into_a_key():
    line = f"MIIEvQIBADANBgkqhkiG9w0BAQEFAASC{'QWxhZGRpbjpvcGVuIHNlc2FtZQ' * 2}"
    body = "\n".join(f"{i:6}\t{line}"[:70] for i in range(2, 12))
    text = f"     1\t-----BEGIN PRIVATE KEY-----\n{body}\n    12\t-----END PRIVATE KEY-----"
    finding = only(text, "private-key")
    assert finding.verdict == Verdict.INVALID


@pytest.mark.parametrize("kind", sorted(VALID))
def test_key_in_a_json_string_is_found_and_valid(kind):
    import json

    cell = json.dumps({"path": "/root/.ssh/id", "content": private_key_pem(kind)})
    finding = only(cell, "private-key")
    assert (finding.verdict, finding.detail, finding.severity) == (Verdict.VALID, VALID[kind], "critical")


def test_encrypted_pkcs8_is_encrypted():
    outcome = verify(private_key_pem("encrypted"), "private-key")
    assert outcome.verdict == Verdict.ENCRYPTED
    assert outcome.detail.startswith("encrypted PKCS#8 private key (PBES2), ")
    assert outcome.detail.endswith("passphrase unknown")


def test_legacy_proc_type_encrypted_is_encrypted():
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.BestAvailableEncryption(b"hunter2"),
    ).decode()
    assert "Proc-Type: 4,ENCRYPTED" in pem
    for text in (pem, pem.strip().replace("\n", "\\n")):
        outcome = verify(text, "private-key")
        assert outcome.verdict == Verdict.ENCRYPTED
        assert "legacy PEM encryption, AES-256-CBC" in outcome.detail


@pytest.mark.parametrize(
    ("cipher", "iv_hex", "body_bytes", "detail"),
    [
        ("AES-256-CBC", 32, 1215, "1215 bytes of ciphertext is not a whole number of 16-byte blocks"),
        ("DES-EDE3-CBC", 16, 1213, "1213 bytes of ciphertext is not a whole number of 8-byte blocks"),
        ("AES-128-CBC", 12, 1216, "the IV is not 16 bytes of hex"),
    ],
)
def test_invented_legacy_encrypted_body_is_invalid(cipher, iv_hex, body_bytes, detail):
    """Tutorials and model answers put the encryption headers over random base64 of any length."""
    rng = random.Random(f"{cipher}{body_bytes}")
    body = base64.encodebytes(rng.randbytes(body_bytes)).decode()
    iv = "".join(rng.choice("0123456789ABCDEF") for _ in range(iv_hex))
    pem = (f"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: {cipher},{iv}\n\n"
           f"{body}-----END RSA PRIVATE KEY-----")
    outcome = verify(pem, "private-key")
    assert outcome.verdict == Verdict.INVALID
    assert detail in outcome.detail
    # Whole blocks under a proper IV: a key encrypted with an unknown passphrase, as far as we can tell.
    whole = base64.encodebytes(rng.randbytes(1216)).decode()
    good_iv = "".join(rng.choice("0123456789ABCDEF") for _ in range(32 if cipher.startswith("AES") else 16))
    pem = (f"-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: {cipher},{good_iv}\n\n"
           f"{whole}-----END RSA PRIVATE KEY-----")
    assert verify(pem, "private-key").verdict == Verdict.ENCRYPTED


def test_openssh_key_with_a_cipher_is_encrypted():
    blob = (
        b"openssh-key-v1\x00" + ssh_string(b"aes256-ctr") + ssh_string(b"bcrypt")
        + ssh_string(ssh_string(bytes(16)) + struct.pack(">I", 16)) + struct.pack(">I", 1)
        + ssh_string(ssh_string(b"ssh-ed25519") + ssh_string(bytes(32))) + ssh_string(bytes(range(144)))
    )
    body = base64.b64encode(blob).decode()
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(body[i : i + 70] for i in range(0, len(body), 70))
    pem += "\n-----END OPENSSH PRIVATE KEY-----"
    outcome = verify(pem, "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.ENCRYPTED, "encrypted OpenSSH private key (aes256-ctr, bcrypt KDF); passphrase unknown"
    )


@pytest.mark.parametrize("kind", ["rsa", "rsa-pkcs8", "encrypted"])
def test_keys_cut_early_are_invalid_and_say_truncated(kind):
    lines = _lines(kind)
    outcome = verify("\n".join(lines[:4] + [lines[-1]]), "private-key")
    assert outcome.verdict == Verdict.INVALID
    assert "truncated (the DER structure declares" in outcome.detail
    assert outcome.detail.endswith("no usable key material left")


@pytest.mark.parametrize("kind", ["rsa", "rsa-pkcs8"])
def test_truncated_rsa_key_with_modulus_and_private_exponent_is_still_exposed(kind):
    lines = _lines(kind)
    # 64-character lines hold 48 bytes: 14 lines cover version, n, e and d of a 2048-bit key.
    outcome = verify("\n".join(lines[:15] + [lines[-1]]), "private-key")
    assert outcome.verdict == Verdict.VALID
    assert outcome.detail.endswith(
        "yet its RSA 2048-bit modulus and private exponent are complete and match: the key is exposed"
    )


def test_truncated_rsa_key_with_genuine_modulus_only_is_partial_exposure():
    lines = _lines("rsa")
    outcome = verify("\n".join(lines[:8] + [lines[-1]]), "private-key")
    assert outcome.verdict == Verdict.UNVERIFIED
    assert "modulus is complete and has no small factors (looks genuine)" in outcome.detail


def test_invented_rsa_body_after_a_memorised_header_is_invalid():
    import random

    rng = random.Random(1)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    for _ in range(50):
        body = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"]
        body += ["".join(rng.choice(alphabet) for _ in range(64)) for _ in range(10)]
        outcome = verify("-----BEGIN PRIVATE KEY-----\n" + "\n".join(body) + "\n-----END PRIVATE KEY-----",
                         "private-key")
        assert outcome.verdict == Verdict.INVALID, outcome.detail


def test_truncated_ec_key_with_complete_scalar_is_exposed():
    lines = _lines("ec")
    outcome = verify("\n".join(lines[:2] + [lines[-1]]), "private-key")
    assert outcome.verdict == Verdict.UNVERIFIED
    assert outcome.detail.endswith("yet its EC secp256r1 private scalar is complete: the key is exposed if genuine")


def test_truncated_openssh_key_is_invalid():
    lines = _lines("ed25519")
    outcome = verify("\n".join(lines[:3] + [lines[-1]]), "private-key")
    assert outcome.verdict == Verdict.INVALID
    assert "OpenSSH private key: truncated" in outcome.detail


def test_bad_base64_names_the_line():
    lines = _lines("rsa")
    lines[4] = lines[4][:30] + "#" + lines[4][31:]
    outcome = verify("\n".join(lines), "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "RSA private key: body is not valid base64 (line 5: '#'), not a key"
    )


def test_padding_inside_the_body_names_the_line():
    lines = _lines("rsa-pkcs8")
    lines[3] = lines[3][:20] + "=" + lines[3][21:]
    outcome = verify("\n".join(lines), "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "PKCS#8 private key: body is not valid base64 (line 4: '=' padding inside the data), not a key"
    )


def test_a_character_missing_is_reported():
    lines = _lines("ec")
    lines[2] = lines[2][:-1]
    outcome = verify("\n".join(lines), "private-key")
    # The scalar comes first and survives the missing character.
    assert outcome.verdict == Verdict.UNVERIFIED
    assert outcome.detail.startswith("EC private key: truncated (the DER structure declares 121 bytes, the body holds "
                                     "120)")
    lines = _lines("ed25519")
    lines[2] = lines[2][:-1]
    outcome = verify("\n".join(lines), "private-key")
    assert outcome.verdict == Verdict.INVALID
    assert "is not a multiple of 4: characters missing" in outcome.detail


@pytest.mark.parametrize(
    "body, detail",
    [
        ("MIIEowIBAAKCAQEA...\n<key body omitted>", "body omitted ('...' on line 2), not a key"),
        ("<key body omitted>", "body omitted ('<key body omitted>' on line 2), not a key"),
        ("[REDACTED]", "body omitted ('[REDACTED]' on line 2), not a key"),
        ("MIIE…", "body omitted ('…' on line 2), not a key"),
        ("YOUR_PRIVATE_KEY_HERE", "placeholder text ('your' on line 2), not a key"),
        ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "body omitted ('xxxx' on line 2), not a key"),
        ("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "body is one repeated character, a placeholder, not a key"),
        ("PasteTheKeyContentHere", "body is made of words (a placeholder), not a key"),
    ],
)
def test_redacted_bodies(body, detail):
    outcome = verify(f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", "private-key")
    assert (outcome.verdict, outcome.detail) == (Verdict.REDACTED, detail)


def test_valid_base64_that_is_not_a_key():
    body = base64.b64encode(b"this is a perfectly fine sentence, base64 encoded, not DER").decode()
    outcome = verify(f"-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----", "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "PKCS#8 private key: valid base64 but not DER (58 bytes), not a key"
    )


def test_der_that_is_not_a_key():
    der = bytes([0x30, 0x0A, 0x02, 0x01, 0x00]) + bytes([0x04, 0x05]) + b"hello"
    body = base64.b64encode(der).decode()
    outcome = verify(f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----", "private-key")
    assert outcome.verdict == Verdict.INVALID
    assert "does not parse as a key" in outcome.detail


def test_pkcs8_body_under_an_rsa_label_is_named():
    lines = _lines("rsa-pkcs8")
    text = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines[1:-1]) + "\n-----END RSA PRIVATE KEY-----"
    outcome = verify(text, "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.VALID, "RSA 2048-bit private key (PKCS#8 under a RSA label), parses"
    )


# ---- PGP armor -----------------------------------------------------------------------------------


def _pgp_secret_key_packet(protected: bool) -> bytes:
    """A v4 RSA secret-key packet (tag 5) around a key generated now."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    numbers = key.private_numbers()

    def mpi(value: int) -> bytes:
        return struct.pack(">H", value.bit_length()) + value.to_bytes((value.bit_length() + 7) // 8, "big")

    public = b"\x04" + struct.pack(">I",
        1_700_000_000) + b"\x01" + mpi(numbers.public_numbers.n) + mpi(numbers.public_numbers.e)
    if protected:
        secret = b"\xfe\x07\x03\x02" + bytes(8) + b"\x60" + bytes(16) + bytes(64)
    else:
        material = mpi(numbers.d) + mpi(numbers.p) + mpi(numbers.q) + mpi(numbers.iqmp)
        secret = b"\x00" + material + struct.pack(">H", sum(material) & 0xFFFF)
    body = public + secret
    return bytes([0xC5, 0xFF]) + struct.pack(">I", len(body)) + body


def _armor(data: bytes, checksum: bytes | None = None) -> str:
    body = base64.b64encode(data).decode()
    crc = base64.b64encode(checksum or crc24(data).to_bytes(3, "big")).decode()
    lines = ["-----BEGIN PGP PRIVATE KEY BLOCK-----", "Version: test", ""]
    lines += [body[i : i + 64] for i in range(0, len(body), 64)]
    lines += ["=" + crc, "-----END PGP PRIVATE KEY BLOCK-----"]
    return "\n".join(lines)


def test_pgp_key_with_matching_checksum_is_valid():
    outcome = verify(_armor(_pgp_secret_key_packet(protected=False)), "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.VALID, "PGP RSA secret key, unprotected (armor checksum matches), parses"
    )


def test_pgp_key_protected_by_s2k_is_encrypted():
    outcome = verify(_armor(_pgp_secret_key_packet(protected=True)), "private-key")
    assert outcome.verdict == Verdict.ENCRYPTED


def test_pgp_checksum_mismatch_is_invalid():
    outcome = verify(_armor(_pgp_secret_key_packet(protected=False), checksum=b"\x00\x00\x01"), "private-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "PGP private key block: armor checksum (CRC24) mismatch, corrupted or invented"
    )


def test_crc24_matches_the_rfc_test_vector():
    # The CRC-24 of "123456789" with the OpenPGP parameters (RFC 4880 6.1) is 0x21CF02.
    assert crc24(b"123456789") == 0x21CF02


def test_detail_never_contains_the_key_body():
    for kind in ("rsa", "ec", "ed25519", "encrypted"):
        lines = _lines(kind)
        for text in ("\n".join(lines), "\n".join(lines[:4] + [lines[-1]])):
            detail = verify(text, "private-key").detail
            assert not any(len(line) > 8 and line in detail for line in lines[1:-1])


def test_a_reading_that_applies_explains_a_body_that_is_still_not_a_key():
    """Cut before its private section, a numbered OpenSSH key is judged on its body, not on the numbers."""
    lines = private_key_pem("ed25519").strip().splitlines()[:3]
    numbered = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(lines, 1))
    finding = only(f"$ cat -n id_ed25519 | head -3\n{numbered}", "private-key-truncated")
    # (The byte count depends on the generated key: its third line ends mid-field.)
    assert finding.verdict == Verdict.INVALID
    assert re.fullmatch(
        r"no END line, the text stops inside the key: OpenSSH private key: truncated \(\d+ bytes, a field runs past "
        r"the end\), not a key \(read without the line numbers in front of each line\)",
        finding.detail,
    ), finding.detail
    # A bracketed note on its own line is the body, not a log prefix.
    assert verify("-----BEGIN PRIVATE KEY-----\n[REDACTED]\n-----END PRIVATE KEY-----", "private-key").detail == (
        "body omitted ('[REDACTED]' on line 2), not a key"
    )


def test_a_published_test_key_is_an_example_however_it_is_printed(monkeypatch):
    """Keys published as test material (Vagrant's insecure key, RFC 8410's example) are listed by the
    digest of their key material, so a printed copy with line numbers is recognised too."""
    import dataclasses
    import hashlib

    from shardscan.verifiers import example, private_key

    pem = private_key_pem("rsa", seed=7)
    der = base64.b64decode("".join(pem.strip().splitlines()[1:-1]))
    listed = dataclasses.replace(example.known_examples(), key_digests={hashlib.sha256(der).hexdigest(): "a test key"})
    monkeypatch.setattr(private_key, "known_examples", lambda: listed)
    numbered = "\n".join(f"{i:6}\t{line}" for i, line in enumerate(pem.strip().splitlines(), 1))
    detail = "RSA private key: a test key, a published test key, not a secret"
    assert (only(f"$ cat key\n{pem}", "private-key").detail, only(f"$ cat -n key\n{numbered}",
                                                                  "private-key").detail) == (
        detail, f"{detail} (read without the line numbers in front of each line)"
    )
    assert only(f"$ cat key\n{pem}", "private-key").verdict == Verdict.EXAMPLE
    assert only(f"$ cat key\n{private_key_pem('rsa', seed=8)}", "private-key").verdict == Verdict.VALID


def test_the_listed_published_keys_are_well_formed_entries():
    from shardscan.verifiers.example import known_examples

    digests = known_examples().key_digests
    listed = {"Vagrant's insecure SSH key", "RFC 8410 example Ed25519 key", "RFC 9500 testRSA2048 key",
              "RFC 9500 testECCP256 key", "RFC 9500 testECCP384 key"}
    assert listed <= set(digests.values())
    assert all(re.fullmatch(r"[0-9a-f]{64}", digest) for digest in digests)

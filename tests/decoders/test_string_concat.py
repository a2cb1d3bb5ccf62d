"""Keys written as adjacent string literals in code (Python, JavaScript, PHP, line continuations) are found at
their span."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from shardscan.api import scan_table
from shardscan.decoders import DECODERS
from shardscan.decoders.base import DecodeRequest
from shardscan.engine import ScanOptions


@pytest.fixture(scope="module")
def pem_lines() -> list[str]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                            serialization.NoEncryption()).decode()
    return pem.strip().split("\n")


def _python(lines: list[str]) -> str:
    return "KEY = (\n" + "".join(f'    "{line}\\n"\n' for line in lines) + ")\n"


def _javascript(lines: list[str]) -> str:
    return "const key =\n  " + " +\n  ".join(f"'{line}\\n'" for line in lines) + ";\n"


def _php(lines: list[str]) -> str:
    return "$key = " + "\n    . ".join(f'"{line}\\n"' for line in lines) + ";\n"


def _continuation(lines: list[str]) -> str:
    return "KEY = " + " \\\n      ".join(f'"{line}\\n"' for line in lines) + "\n"


def test_concatenated_keys_are_found_at_their_span_with_one_fingerprint(pem_lines):
    plain = "\n".join(pem_lines) + "\n"
    arguments = json.dumps({"path": "k.py", "content": _python(pem_lines)})
    tool_call = json.dumps({"name": "write_file", "arguments": arguments})
    cells = [plain, _python(pem_lines), _javascript(pem_lines), _php(pem_lines), _continuation(pem_lines), tool_call]
    report = scan_table(pa.table({"content": cells}), "code.parquet", options=ScanOptions())
    found = sorted((f.location.row, f.rule_id, str(f.verdict), f.encoding, f.start, f.end) for f in report.findings)
    marker_end = "PRIVATE KEY-----"

    def span(cell: str) -> tuple[int, int]:
        return cell.index("-----BEGIN"), cell.rindex(marker_end) + len(marker_end)

    assert found == [
        (0, "private-key", "valid", (), *span(cells[0])),
        (1, "private-key", "valid", ("string-concat",), *span(cells[1])),
        (2, "private-key", "valid", ("string-concat",), *span(cells[2])),
        (3, "private-key", "valid", ("string-concat",), *span(cells[3])),
        (4, "private-key", "valid", ("string-concat",), *span(cells[4])),
        (5, "private-key", "valid", ("json-string", "json-string", "string-concat"), *span(cells[5])),
    ]
    assert len({f.fingerprint for f in report.findings}) == 1
    assert report.issues == ()


MARKER = "# -----BEGIN PRIVATE KEY-----\n"  # the decoder only joins texts that hold a key marker


@pytest.mark.parametrize(
    "text",
    [
        '{"role": "user", "content": "hello", "tags": ["a", "b"]}',
        'print("a", "b")\nx = {"k": "v"}',
        "it's a 'quoted' word and a \"quote\"",
        'x = ""\ny = ""',
    ],
)
def test_lists_arguments_and_mappings_are_not_joined(text):
    assert list(DECODERS["string-concat"].decode(DecodeRequest(MARKER + text))) == []


def test_joins_remove_only_the_separators():
    text = 'a = "ab"\n    "cd" + \'ef\' +\n  \'gh\''
    [decoded] = DECODERS["string-concat"].decode(DecodeRequest(MARKER + text))
    assert decoded.text == MARKER + "a = \"abcd\" + 'efgh'"
    # Without a private key marker nothing is joined (tokens fit in one literal).
    assert list(DECODERS["string-concat"].decode(DecodeRequest(text))) == []


def test_keys_kept_as_lists_of_lines_are_found(pem_lines):
    """A notebook cell's source, readlines() and splitlines() keep a key as a list of its lines."""
    notebook = json.dumps({"cells": [{"cell_type": "code", "source": [line + "\n" for line in pem_lines]}]}, indent=1)
    cells = [notebook, json.dumps(pem_lines), repr(pem_lines), repr([line + "\n" for line in pem_lines])]
    report = scan_table(pa.table({"content": cells}), "lists.parquet", options=ScanOptions())
    found = sorted((f.location.row, f.rule_id, str(f.verdict), f.encoding) for f in report.findings)
    assert found == [
        (0, "private-key", "valid", ("string-concat",)),
        (1, "private-key", "valid", ("string-concat",)),
        (2, "private-key", "valid", ("string-concat",)),
        (3, "private-key", "valid", ("string-concat",)),
    ]
    assert report.issues == ()


@pytest.mark.parametrize(
    "text",
    [
        '["-----BEGIN PRIVATE KEY-----", "is the marker"]',
        '{"tags": ["aGVsbG8gd29ybGQgaGVsbG8", "b c"], "x": ["c\\n", ": d"], "y": ["a", "b"]}',
    ],
)
def test_other_lists_are_not_joined(text):
    assert list(DECODERS["string-concat"].decode(DecodeRequest(MARKER + text))) == []

"""Each credential kind, hidden the seven ways agent traces hide it, is found once, at its encoded span.

One shard holds a row per (kind, encoding); each case checks the finding of its row: rule, exact
start/end of the encoded form in the raw cell, decode chain, and a fingerprint equal to that of
the plain secret.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.redaction import fingerprint
from shardscan.synth import expand
from tests.conftest import FIXED_NOW, trace_row, write_trace_shard

KINDS = {
    # kind: (rule id, template, fingerprint kind)
    "jwt": ("jwt", "{{jwt}}", "jwt"),
    "aws": ("aws-access-key-id", "{{aws_id:AKIA}}", "aws"),
    "openai": ("openai-api-key", "{{openai:sk-proj-}}", "openai"),
    "anthropic": ("anthropic-api-key", "{{anthropic:api03}}", "anthropic"),
    "huggingface": ("huggingface-token", "{{hf}}", "huggingface"),
    "github": ("github-pat", "{{github:ghp_}}", "github"),
    "private-key": ("private-key", "{{pem:rsa}}", "private-key"),
}


def strict_percent(text: str) -> str:
    """Percent-encode every character that is not an ASCII letter or digit (``-`` as ``%2D``, ...)."""
    return "".join(c if c.isascii() and c.isalnum() else "".join(f"%{b:02X}" for b in c.encode()) for c in text)


def full_percent(text: str) -> str:
    """Percent-encode every character."""
    return "".join(f"%{b:02X}" for b in text.encode())


def u_escape(text: str, everything: bool = False) -> str:
    """JSON ``\\uXXXX`` escapes for every non-alphanumeric character (or for every character)."""
    return "".join(c if c.isascii() and c.isalnum() and not everything else f"\\u{ord(c):04x}" for c in text)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class Form:
    """How a secret is embedded in a cell: the cell, the encoded span, the expected chain."""

    cell: str
    encoded: str  # the substring of the cell a remediation would replace (occurs exactly once)
    chain: tuple[str, ...]


def plain(secret: str, kind: str) -> Form:
    if kind == "private-key":
        return Form(f"$ cat deploy/key.pem\n{secret}\n$ ", secret, ())
    return Form(f"export SECRET_VALUE={secret}\n", secret, ())


def json_tool_call(secret: str, kind: str) -> Form:
    content = secret + "\n" if kind == "private-key" else f"API_TOKEN={secret}\n"
    cell = json.dumps({"tool": "write_file", "arguments": {"path": "/app/.env", "content": content}})
    encoded = json.dumps(secret)[1:-1]
    # JSON escaping leaves a token's characters alone: then no decoding is needed to read it.
    return Form(cell, encoded, ("json-string",) if encoded != secret else ())


def double_json(secret: str, kind: str) -> Form:
    content = secret + "\n" if kind == "private-key" else f"API_TOKEN={secret}\n"
    arguments = json.dumps({"path": "/app/.env", "content": content})
    call = {"function": {"name": "write_file", "arguments": arguments}}
    cell = json.dumps({"role": "assistant", "tool_calls": [call]})
    encoded = json.dumps(json.dumps(secret)[1:-1])[1:-1]
    return Form(cell, encoded, ("json-string", "json-string") if encoded != secret else ())


def echo_base64(secret: str, kind: str) -> Form:
    payload = b64(secret + "\n" if kind == "private-key" else f"export API_TOKEN={secret}\n")
    cell = json.dumps({"tool": "bash", "arguments": {"command": f"echo {payload} | base64 -d >> ~/.profile"}})
    return Form(cell, payload, ("base64",))


def k8s_secret(secret: str, kind: str) -> Form:
    key = "tls.key" if kind == "private-key" else "token"
    payload = b64(secret)
    cell = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: app-credentials\n  namespace: prod\ntype: Opaque\n"
        f"data:\n  username: {b64('svc-deploy')}\n  {key}: {payload}\n"
    )
    return Form(cell, payload, ("base64",))


def percent_url(secret: str, kind: str) -> Form:
    # An AWS key ID has no character a URL encoder touches; the test uses the full encoding.
    encoded = full_percent(secret) if kind == "aws" else strict_percent(secret)
    cell = f"GET https://api.example.com/v1/callback?state=af0ifjsldkj&credential={encoded}&next=%2Fhome HTTP/1.1"
    return Form(cell, encoded, ("percent",))


def unicode_escaped(secret: str, kind: str) -> Form:
    encoded = u_escape(secret, everything=(kind == "aws"))
    cell = '{"type": "tool_result", "content": "' + f"credential loaded: {encoded}" + '"}'
    return Form(cell, encoded, ("json-string",))


FORMS: dict[str, Callable[[str, str], Form]] = {
    "plain": plain,
    "json-tool-call": json_tool_call,
    "double-json": double_json,
    "echo-base64": echo_base64,
    "k8s-secret": k8s_secret,
    "percent-url": percent_url,
    "unicode-escaped": unicode_escaped,
}

CASES = [(kind, form) for kind in KINDS for form in FORMS]


def secret_of(kind: str) -> str:
    return expand(KINDS[kind][1], seed=f"decode-{kind}")


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    """Scan one shard holding every case (row i = CASES[i]); findings by row."""
    rows = []
    forms = []
    for kind, form_name in CASES:
        form = FORMS[form_name](secret_of(kind), kind)
        assert form.cell.count(form.encoded) == 1
        forms.append(form)
        rows.append(trace_row([("user", "set up the service"), ("assistant", form.cell)]))
    folder = tmp_path_factory.mktemp("decode-kinds")
    write_trace_shard(folder / "train-00000-of-00001.parquet", rows, row_group_size=16)
    report = scan([str(folder)], options=ScanOptions(now=FIXED_NOW, regex_timeout=60))
    by_row: dict[int, list] = {}
    for finding in report.findings:
        by_row.setdefault(finding.location.row, []).append(finding)
    return report, by_row, forms


@pytest.mark.parametrize(("kind", "form_name"), CASES, ids=[f"{k}-{f}" for k, f in CASES])
def test_found_once_at_encoded_span_with_chain_and_plain_fingerprint(scanned, kind, form_name):
    report, by_row, forms = scanned
    row = CASES.index((kind, form_name))
    form = forms[row]
    rule_id, _, fp_kind = KINDS[kind]
    findings = by_row.get(row, [])
    assert [(f.rule_id, f.location.column) for f in findings] == [(rule_id, "conversations[1].content")]
    [finding] = findings
    start = form.cell.index(form.encoded)
    assert (finding.start, finding.end) == (start, start + len(form.encoded))
    assert finding.encoding == form.chain
    assert finding.fingerprint == fingerprint(secret_of(kind), fp_kind)


def test_no_limit_hits_and_no_other_findings(scanned):
    report, by_row, _forms = scanned
    assert report.issues == ()
    assert sorted(by_row) == list(range(len(CASES)))


@pytest.mark.slow
def test_encoded_only_cells_reach_python_through_the_prefilter(scanned):
    """Cells whose keyword is only encoded (base64, fully escaped) are still candidates."""
    import pyarrow as pa

    from shardscan.decoders import DecodeLimits
    from shardscan.engine import Scanner
    from shardscan.ruleset import load_ruleset

    scanner = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW, regex_timeout=60))
    # (The Kubernetes Secret's "token: <base64>" is an assignment the generic-secret rule selects
    # as written: left out here, where only the keywords' encoded forms are under test.)
    off = Scanner(load_ruleset(disable=["generic-secret"]),
                  ScanOptions(now=FIXED_NOW, regex_timeout=60, decode=DecodeLimits(max_depth=0)))
    _report, _by_row, forms = scanned
    cells = pa.array([f.cell for f in forms])
    assert scanner.prefilter.mask(cells).all()
    hidden = [i for i, (kind, form) in enumerate(CASES) if form in ("echo-base64", "k8s-secret")]
    hidden_mask = off.prefilter.mask(cells)
    # Without decoding, the base64 forms are not selected (their keywords are only encoded).
    assert not hidden_mask[hidden].any()

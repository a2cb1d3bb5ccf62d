"""Each decoder on its own: exact decoded text, exact offset maps, registry and keyword forms."""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from shardscan import decoders
from shardscan.decoders import (
    DECODERS,
    DecodeLimits,
    KeywordSearch,
    KeywordSet,
    View,
    encoded_keyword_patterns,
    views,
)
from shardscan.decoders.base import DecodeRequest, OffsetMap
from shardscan.decoders.base64_ import CONTEXT_KEYWORD_CHARS
from shardscan.engine import Scanner, ScanOptions
from shardscan.redaction import fingerprint
from shardscan.ruleset import load_ruleset
from shardscan.synth import expand
from tests.conftest import FIXED_NOW


def decode_one(name: str, text: str) -> list:
    return list(DECODERS[name].decode(DecodeRequest(text)))


def test_registry_names_match_decoder_records():
    assert list(DECODERS) == [
        "json-string", "percent", "base64", "html-entity", "hex-escape", "string-concat", "shell-prompt",
        "terminal-wrap", "ansi", "hexdump",
    ]
    for name, decoder in DECODERS.items():
        assert decoder.name == name


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("json-string", r"a\nb\"c\\d\/e\tf", 'a\nb"c\\d/e\tf'),
        ("json-string", r"\u002d\u002DBEGIN", "--BEGIN"),
        ("json-string", r"smile \ud83d\ude00!", "smile \U0001f600!"),
        ("json-string", r"lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("json-string", r"\\n stays an escape one level down", "\\n stays an escape one level down"),
        ("percent", "a%2Db%2db%E2%80%93c+d", "a-b-b\u2013c+d"),
        ("percent", "bad %FF byte", "bad \ufffd byte"),
        ("html-entity", "&lt;a&gt; &amp;&#45;&#x2D;&hyphen; &bogus;", "<a> &--\u2010 &bogus;"),
        ("html-entity", "&#0; &#xD800; &#1114112;", "\ufffd \ufffd \ufffd"),
        ("hex-escape", r"\x67\x68p\x5f and \xe2\x80\x93", "ghp_ and \u2013"),
        ("shell-prompt", "hf_abc123root@4f2a:/app# ls", "hf_abc123\nroot@4f2a:/app# ls"),
        ("shell-prompt", "tokenubuntu@ip-10-0-0-1:~$ x=1", "token\nubuntu@ip-10-0-0-1:~$ x=1"),
        ("shell-prompt", "tokenopenhands@runtime-1f2e:/workspace$ ls", "token\nopenhands@runtime-1f2e:/workspace$ ls"),
        ("ansi", "a\x1b[01;31m\x1b[Kb\x1b[m\x1b[Kc\x1b]0;root@4f2a: /app\x07d\x1b8e\x1b[38:2::255:0:0mf", "abcdef"),
        ("shell-prompt", "tokenbash-5.2# ls", "token\nbash-5.2# ls"),
        ("shell-prompt", "tokenbash-$ ls", "token\nbash-$ ls"),
        ("shell-prompt", "tokensh-5.1$ ls", "token\nsh-5.1$ ls"),
        ("shell-prompt", "tokenI have no name!@0c1d:/app$ ls", "token\nI have no name!@0c1d:/app$ ls"),
        ("shell-prompt", "tokensagemaker-user@default:~$ ls", "token\nsagemaker-user@default:~$ ls"),
        ("shell-prompt", "tokenvscode ➜ /workspaces/app (main) $ ls", "token\nvscode ➜ /workspaces/app (main) $ ls"),
    ],
)
def test_escape_decoders_decode_in_place(name, text, expected):
    [decoded] = decode_one(name, text)
    assert decoded.text == expected
    assert (decoded.start, decoded.end) == (0, len(text))


@pytest.mark.parametrize("name", ["json-string", "percent", "html-entity", "hex-escape"])
def test_escape_decoders_yield_nothing_without_escapes(name):
    assert decode_one(name, "plain text, 100% normal & fine \\q") == []


@pytest.mark.parametrize(
    "text",
    [
        "mail root@example.com:/x# ok",  # a user name after a space: nothing is glued
        "hf_abc123rootless@host:/app# ",  # not a known user name
        "ssh git@github.com:org/repo.git",
        "hf_abc123root@host is not a prompt",
        "x\nbash-5.2# ls",  # a prompt on its own line: nothing to split
        "see bash-completion docs",
        "git push-$ x",  # "sh-" inside a word, not a prompt's version
    ],
)
def test_shell_prompt_splits_only_glued_prompts(text):
    assert decode_one("shell-prompt", text) == []


@pytest.mark.slow
def test_token_glued_to_the_next_prompt_is_found_whole():
    """A token file printed without its final newline, as a terminal capture shows it."""
    ruleset = load_ruleset()
    token = expand("{{hf}}", seed="prompt-1")
    jwt = expand("{{jwt}}", seed="prompt-2")
    scanner = Scanner(ruleset, ScanOptions(now=FIXED_NOW))
    for value, rule in ((token, "huggingface-token"), (jwt, "jwt")):
        text = f"root@4f2a:/app# cat ~/.cache/token\n{value}root@4f2a:/app# exit"
        findings, _ = scanner.scan_text(text)
        # Once: the reading that ran on into the prompt's user name is not reported beside it.
        assert [(f.rule_id, str(f.verdict), f.encoding, text[f.start : f.end]) for f in findings] == [
            (rule, "unverified" if rule == "huggingface-token" else "valid", ("shell-prompt",), value)
        ]


def test_terminal_wrap_joins_lines_cut_at_a_common_pane_width():
    head = "$ export KEY=" + "k" * 67  # 80 columns, ending in a token
    [decoded] = decode_one("terminal-wrap", f"{head}\r\nrest-of-key\n$ ")
    assert decoded.text == f"{head}rest-of-key\n$ "
    # The join maps back over the removed line break.
    at = len(head)
    assert (decoded.offsets.start_in_parent(at), decoded.offsets.end_in_parent(at + 4)) == (at + 2, at + 6)


@pytest.mark.parametrize(
    "text",
    [
        "\n".join(["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7" + "a" * 12] * 3),  # PEM's 64 columns
        "x" * 79 + " \nnext line",  # the full line ends in a space: no token was cut
        "y" * 80 + "\n" + "z" * 81 + "\nlonger than the pane",  # no pane is 80 wide here
        "short\nlines",
    ],
)
def test_terminal_wrap_leaves_texts_without_a_cut_token(text):
    assert decode_one("terminal-wrap", text) == []


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("template, rule", [("{{openai:sk-proj-}}", "openai-api-key"), ("{{jwt}}", "jwt"),
                                            ("{{anthropic:api03}}", "anthropic-api-key"),
                                            ("{{github_pat}}", "github-fine-grained-pat")])
def test_tokens_wrapped_by_a_terminal_pane_are_found_whole(template, rule, width):
    """A pane capture (tmux capture-pane without -J) cuts a long export line at the pane's width."""
    token = expand(template, seed=f"wrap-{width}")
    line = f"root@4f2a:/app# export API_KEY={token}"
    capture = "\n".join(line[i : i + width] for i in range(0, len(line), width))
    text = f"root@4f2a:/app# ls\nmain.py\n{capture}\nroot@4f2a:/app# "
    assert len(line) > width
    findings, _ = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_text(text)
    assert [(f.rule_id, str(f.verdict), f.encoding) for f in findings] == [(rule, "valid", ("terminal-wrap",))]
    [found] = findings
    assert text[found.start : found.end].replace("\n", "") == token


def test_a_token_cut_right_after_its_prefix_is_joined():
    token = expand("{{hf}}", seed="cut-early")
    head = "(venv) user@gpu-box-01:~/projects/finetune$ huggingface-cli login --token "
    line = head.ljust(78, " ") + token
    text = line[:80] + "\n" + line[80:] + "\n$ "
    findings, _ = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_text(text)
    assert [(f.rule_id, f.encoding, text[f.start : f.end]) for f in findings] == [
        ("huggingface-token", ("terminal-wrap",), token[:2] + "\n" + token[2:])
    ]


def test_a_token_ending_at_the_pane_edge_keeps_its_own_reading():
    """Read across the break, a JWT that filled its line would gain the next line's word; verification
    tells the two readings apart, and the one written on one line is kept."""
    token = expand("{{jwt}}", seed="edge")
    line = "token: " + token
    line = "a" * (200 - len(line) - 1) + " " + line
    text = f"$ show\n{line}\nDone\n"
    findings, _ = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_text(text)
    assert [(f.rule_id, str(f.verdict), f.encoding, text[f.start : f.end]) for f in findings] == [
        ("jwt", "valid", (), token)
    ]


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(
    "shape, rule",
    [
        ("data:\n  ANTHROPIC_API_KEY: {b64}\n  OPENAI_API_KEY: c2stcHJvai14\n", "anthropic-api-key"),
        ("data:\n  GITHUB_TOKEN: {b64}\n  MODEL_NAME: Z3B0LTRv\n", "github-fine-grained-pat"),
        ("_auth={b64}\nalways-auth=true\n", "github-pat"),
        ("GET / HTTP/1.1\r\nAuthorization: Basic {b64}\r\nUser-Agent: curl/8.0\r\n", "github-pat"),
    ],
)
def test_a_base64_value_is_not_read_into_the_next_line(shape, rule, seed):
    """An unpadded value followed by the next YAML key, header or setting: the next line is not
    the wrapped tail of the value (its first line is no wrap width, and ':' or text follows)."""
    template = {"anthropic-api-key": "{{anthropic:api03}}", "github-fine-grained-pat": "{{github_pat}}",
                "github-pat": "octocat:{{github:ghp_}}"}[rule]
    value = expand(template, seed=f"{rule}-{seed}")
    findings, _ = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_text(shape.format(b64=_b64(value)))
    assert [(f.rule_id, str(f.verdict), f.encoding) for f in findings] == [(rule, "valid", ("base64",))]


def test_supabase_auth_cookie_is_read_after_its_base64_label():
    """@supabase/ssr stores the session as "base64-" and base64url of its JSON; the label's characters
    are base64's and would shift every quantum."""
    token = expand("{{jwt}}", seed="supabase")
    session = json.dumps({"access_token": token, "token_type": "bearer", "refresh_token": "v1.abc"})
    cookie = "base64-" + base64.urlsafe_b64encode(session.encode()).decode().rstrip("=")
    cell = f"Cookie: sb-abcdefghijklmnop-auth-token={cookie}; Path=/; SameSite=Lax"
    result = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_table(pa.table({"headers": [cell]}))
    assert [(f.rule_id, str(f.verdict), f.start, f.end) for f in result.findings] == [
        ("jwt", "valid", cell.index("base64-") + 7, cell.index(";", cell.index("base64-")))
    ]


@pytest.mark.parametrize("escaped", [False, True])
def test_a_token_split_by_match_colouring_is_found_whole(escaped):
    """grep --color=always colours the part of a token that matched the pattern, which splits it."""
    token = expand("{{github:ghp_}}", seed="grep-colour")
    line = f"src/.env:3:GITHUB_TOKEN=\x1b[01;31m\x1b[Kghp_\x1b[m\x1b[K{token[4:]}"
    cell = json.dumps({"stdout": line}) if escaped else line
    result = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_table(pa.table({"output": [cell]}))
    chain = ("json-string", "ansi") if escaped else ("ansi",)
    assert [(f.rule_id, str(f.verdict), f.encoding) for f in result.findings] == [("github-pat", "valid", chain)]
    [finding] = result.findings
    written = "ghp_\x1b[m\x1b[K" + token[4:]
    assert cell[finding.start : finding.end] == (json.dumps(written)[1:-1] if escaped else written)
    assert finding.fingerprint == fingerprint(token, "github")


def _hexdump_c(data: bytes) -> str:
    """``hexdump -C`` of ``data``, as the tool prints it."""
    lines = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        hexes = " ".join(f"{b:02x}" for b in chunk[:8]) + "  " + " ".join(f"{b:02x}" for b in chunk[8:])
        shown = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{offset:08x}  {hexes:<48}  |{shown}|")
    return "\n".join(lines + [f"{len(data):08x}"])


@pytest.mark.parametrize("tool", ["xxd", "hexdump -C"])
def test_a_token_in_a_hex_dump_is_read_from_the_hex(tool):
    """xxd .env shows the file 16 bytes a line: the token is in pieces beside the hex."""
    token = expand("{{github:ghp_}}", seed=f"dump-{tool}")
    content = f"GITHUB_TOKEN={token}\r\nDEBUG=1\r\n"
    dump = DECODERS["hexdump"].encode(content) if tool == "xxd" else _hexdump_c(content.encode())
    cell = f"$ {tool} .env\n{dump}\n$ "
    result = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW)).scan_table(pa.table({"output": [cell]}))
    assert [(f.rule_id, str(f.verdict), f.encoding) for f in result.findings] == [("github-pat", "valid", ("hexdump",))]
    [finding] = result.findings
    command = len(f"$ {tool} .env\n")
    assert (finding.start, finding.end) == (command, command + len(dump.rsplit("\n", 1)[0])
                                            if tool == "hexdump -C" else command + len(dump))


@pytest.mark.parametrize("text", ["00000000: 4846 5f54  HF_T", "sha 00000000deadbeef and 0000000: not a dump\nx"])
def test_hexdump_needs_consecutive_dump_lines(text):
    assert decode_one("hexdump", text) == []


def test_offset_map_maps_spans_to_the_whole_escapes():
    text = r"key=ghp\u005fabc\u002d!"
    [decoded] = decode_one("json-string", text)
    assert decoded.text == "key=ghp_abc-!"
    offsets = decoded.offsets
    # "ghp_abc" in the decoded text covers "ghp\u005fabc" in the original.
    start = decoded.text.index("ghp_")
    assert (offsets.start_in_parent(start), offsets.end_in_parent(start + 7)) == (4, 4 + len(r"ghp\u005fabc"))
    # A span starting inside an escape starts at the escape; one ending inside it ends after it.
    assert offsets.start_in_parent(7) == text.index("\\u005f")
    assert offsets.end_in_parent(8) == text.index("abc")
    # After the last escape offsets shift by what the escapes saved.
    assert offsets.start_in_parent(len(decoded.text) - 1) == len(text) - 1


def test_percent_runs_keep_per_character_offsets():
    text = "t=%67%68%70%5Fx"
    [decoded] = decode_one("percent", text)
    assert decoded.text == "t=ghp_x"
    offsets = decoded.offsets
    assert (offsets.start_in_parent(3), offsets.end_in_parent(5)) == (5, 11)  # "hp" is "%68%70"


def test_view_original_span_walks_the_chain():
    raw = "x " + base64.b64encode(json.dumps({"k": "a\nghp_token"}).encode()).decode() + " y"
    [b64] = [v for v in views(raw, DecodeLimits(), lambda m: None) if v.encoding == ("base64",)]
    # A base64 view maps any span to the whole run.
    assert b64.original_span(3, 5) == (2, len(raw) - 2)
    root = View("ab\\ncd")
    [child] = [v for v in views(root.text, DecodeLimits(), lambda m: None) if v.encoding]
    assert child.text == "ab\ncd"
    assert child.original_span(3, 5) == (4, 6)


@pytest.mark.parametrize(
    ("body", "name"),
    [
        (base64.b64encode(b"export TOKEN=hello-world-value\n").decode(), "base64"),
        (base64.b64encode(b"export TOKEN=hello-world-value\n").decode().rstrip("="), "base64"),
        (base64.urlsafe_b64encode(b"\xfb\xff export TOKEN=hello-world-value~~").decode().rstrip("="), "base64url"),
    ],
)
def test_base64_runs_padded_unpadded_and_url(body, name):
    text = f"echo {body} | base64 -d"
    decoded = decode_one("base64", text)
    [segment] = [d for d in decoded if (d.start, d.end) == (5, 5 + len(body))]
    assert segment.name == name
    value = segment.text or segment.data.decode("utf-8", "replace")
    assert "export TOKEN=hello-world-value" in value


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\\n"])
def test_base64_line_wrapped_runs_are_joined(newline):
    payload = ("line of text that makes a long file %d\n" * 12 % tuple(range(12))).encode()
    encoded = base64.encodebytes(payload).decode().rstrip("\n")  # 76-column lines
    assert "\n" in encoded
    wrapped = encoded.replace("\n", newline)
    text = f"$ base64 notes.txt\n{wrapped}\n$ "
    [segment] = decode_one("base64", text)
    assert segment.text == payload.decode()
    assert (segment.start, segment.end) == (text.index(wrapped), text.index(wrapped) + len(wrapped))


def test_base64_skips_short_runs_hashes_and_images():
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()
    text = f"sha256:{'ab12' * 16} commit {'0123456789ABCDEF' * 3} short dGVzdA== data:image/png;base64,{png}"
    assert decode_one("base64", text) == []


@pytest.mark.parametrize("case", [str.lower, str.upper])
def test_base64_skips_uuids_and_dashed_hashes(case):
    """A UUID or a dashed hash is made of base64url characters, and decodes (to bytes nobody wrote)."""
    ids = [str(uuid.UUID(int=random.Random(seed).getrandbits(128))) for seed in range(3)]
    text = case(f'{{"id": "{ids[0]}", "trace": "{ids[1]}-{ids[2]}"}} {"-" * 40} sum: {"ab12-" * 8}ab12')
    assert decode_one("base64", text) == []
    # One character outside hex digits and dashes: a base64url run again, decoded.
    [segment] = decode_one("base64", text.replace(case(ids[1][:2]), "_Q", 1))
    assert segment.data is not None


_BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _may_decode_to(keyword: bytes, alphabet: str) -> bool:
    """Whether base64url made only of ``alphabet``'s characters can decode to bytes holding ``keyword``.

    Each bit of the keyword falls in one base64 character; at some start in a quantum, every
    character it spans must have a value in the alphabet that agrees with the keyword's bits there.
    """
    values = [_BASE64URL.index(c) for c in alphabet]
    for shift in range(3):  # the keyword's first byte within a 3-byte quantum
        bits = {8 * (shift + i) + k: (byte >> (7 - k)) & 1 for i, byte in enumerate(keyword) for k in range(8)}
        sextets = range(min(bits) // 6, max(bits) // 6 + 1)
        if all(any(all((v >> (5 - (b - 6 * j))) & 1 == bit for b, bit in bits.items() if b // 6 == j) for v in values)
               for j in sextets):
            return True
    return False


def test_no_builtin_keyword_can_hide_in_a_run_of_hex_digits_and_dashes():
    """Why the base64 decoder passes over such runs: no built-in keyword is in any of their decodings."""
    assert _may_decode_to(b"ghp_", _BASE64URL)  # (the check itself: any keyword fits the whole alphabet)
    assert _may_decode_to(b"ghp_", "Z2hwXw")  # base64 of "ghp_"
    keywords = sorted(set(load_ruleset().keywords))
    assert len(keywords) > 100
    for alphabet in ("0123456789abcdef-", "0123456789ABCDEF-"):
        assert [k for k in keywords if _may_decode_to(k.encode("utf-8"), alphabet)] == []


def test_base64_binary_blobs_are_yielded_only_when_the_caller_wants_them():
    """``binary_wanted`` drops binary blobs the caller would discard; text segments are unaffected."""
    blob = base64.b64encode(b"\xff\xfe\x00 nothing to see \xff" * 3).decode()
    run = base64.b64encode(b"export TOKEN=hello-world-value\n").decode()
    cell = f"a {blob} b {run} c"
    every = decode_one("base64", cell)
    assert [(d.start, d.text == "", d.data is None) for d in every] == [
        (2, True, False), (cell.index(run), False, True),
    ]
    picky = list(DECODERS["base64"].decode(DecodeRequest(cell, binary_wanted=lambda data: b"ghp_" in data)))
    assert [(d.start, d.end, d.text) for d in picky] == [
        (cell.index(run), cell.index(run) + len(run), "export TOKEN=hello-world-value\n")
    ]


def test_keyword_inside_a_binary_base64_blob_is_found():
    """A blob that is not UTF-8 is read as text around its plain keywords only, and the token is found there."""
    token = expand("{{github:ghp_}}", seed="binary-blob")
    binary = b"\x1f\x8b\x08\x00\xff" * 40 + f" GITHUB_TOKEN={token} ".encode() + b"\xfe\xff" * 40
    blob = base64.b64encode(binary).decode()
    cell = f"echo {blob} | base64 -d > creds.bin"
    findings, limits = Scanner(load_ruleset(), ScanOptions(now=FIXED_NOW, regex_timeout=60)).scan_text(cell)
    assert [(f.rule_id, f.encoding, f.start, f.end) for f in findings] == [
        ("github-pat", ("base64",), 5, 5 + len(blob))
    ]
    assert limits == []


def test_base64_mixed_alphabets_are_not_base64():
    assert decode_one("base64", "path /usr/lib/python3_11/site-packages/some_module/x") == []


@pytest.mark.parametrize(
    "keyword",
    sorted(k for k in load_ruleset().keywords
           if len(k) <= CONTEXT_KEYWORD_CHARS and k not in load_ruleset().context_keywords),
)
@pytest.mark.parametrize("align", [0, 1, 2])
@pytest.mark.parametrize("url", [False, True])
def test_base64_keyword_forms_match_every_alignment(keyword, align, url):
    """The prefilter pattern matches base64 of the keyword at each byte offset, in both alphabets."""
    data = b"\xfb\xef\xbe"[:align] + keyword.encode() + b"\xff\xfe\xfd0123456789"
    encoded = (base64.urlsafe_b64encode if url else base64.b64encode)(data).decode()
    pattern = "|".join(encoded_keyword_patterns([keyword]))
    assert pc.match_substring_regex(pa.array([encoded]), pattern)[0].as_py()


@pytest.mark.parametrize("name", [b"aws_secret_access_key", b"AWS_SECRET_KEY", b"aws_secret"])
def test_context_keywords_get_no_base64_forms(name):
    """A variable name is context, not a secret's start: base64 of it alone selects nothing."""
    ruleset = load_ruleset()
    assert {"aws_secret", "AWS_SECRET", "secret_access_key"} <= set(ruleset.context_keywords)
    for align in range(3):
        encoded = base64.b64encode(b"#" * align + name + b" = nothing-here").decode()
        pattern = "|".join(encoded_keyword_patterns(ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords))
        assert not pc.match_substring_regex(pa.array([encoded]), pattern)[0].as_py()
    # Escaped, the name is still found (the secret's line was JSON-escaped or URL-encoded with it).
    escaped = name.decode().replace("_", "%5F")
    if escaped != name.decode():
        assert pc.match_substring_regex(pa.array([escaped]), pattern)[0].as_py()


@pytest.mark.slow
@pytest.mark.parametrize(
    "text",
    [
        r"ghp\u005f0123", "ghp%5F0123", "ghp&#95;0123", r"ghp\x5f0123", r"\u002d\u002d\u002d\u002d\u002dBEGIN",
        "%2D%2D%2D%2D%2DBEGIN", r"\u0041\u004b\u0049\u0041", "%41%4B%49%41", r"sk\u002dant\u002dapi03",
    ],
)
def test_escaped_keyword_forms_reach_the_prefilter(text):
    keywords = load_ruleset().keywords
    pattern = "|".join(encoded_keyword_patterns(keywords))
    assert pc.match_substring_regex(pa.array([text]), pattern)[0].as_py()
    assert KeywordSet.build(keywords).matches(text)


def test_escaped_forms_do_not_match_ordinary_text():
    keywords = load_ruleset().keywords
    pattern = "|".join(encoded_keyword_patterns(keywords))
    ordinary = [r'{"path": "C:\\Users\\dev", "q": "a%20b&amp;c"}', "pip install -r requirements.txt", "x" * 1000]
    assert not any(pc.match_substring_regex(pa.array(ordinary), pattern).to_pylist())


def test_views_disabled_at_depth_zero():
    text = base64.b64encode(b"ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx").decode()
    assert [v.encoding for v in views(text, DecodeLimits(max_depth=0), lambda m: None)] == [()]


class _Verdict:
    """A keyword search that answers the same for every text: the walk learns nothing else."""

    def __init__(self, holds: bool) -> None:
        self.holds = holds

    def occurrences(self, text: str) -> Iterator[tuple[int, int]]:
        return iter(())

    def matches(self, value: str | bytes) -> bool:
        return self.holds

    def label_before(self, text: str, start: int) -> str:
        return ""

    def in_binary(self, data: bytes) -> bool:
        return self.holds

    def token_in_binary(self, data: bytes) -> bool:
        return self.holds

    def binary_excerpts(self, data: bytes) -> str | None:
        return None


def test_the_walk_keeps_a_decoding_only_on_the_keyword_searchs_word():
    """views() asks the keywords only what KeywordSearch names: any implementation decides."""
    text = "echo " + base64.b64encode(b"just some harmless text here").decode() + " | base64 -d"
    search: KeywordSearch = _Verdict(True)
    assert [v.encoding for v in views(text, DecodeLimits(), lambda m: None, search)] == [(), ("base64",)]
    search = _Verdict(False)
    assert [v.encoding for v in views(text, DecodeLimits(), lambda m: None, search)] == [()]


def test_keyword_gate_drops_decodings_that_cannot_pay_off():
    keywords = KeywordSet.build(load_ruleset().keywords)
    # Escapes far from any keyword, and base64 of text without one: no decoded view.
    harmless = base64.b64encode(b"just some harmless text here").decode()
    text = "hf_hub_download " + "x" * 3000 + r" \n\t\"quoted\" " + harmless
    assert [v.encoding for v in views(text, DecodeLimits(), lambda m: None, keywords)] == [()]
    # The same escapes next to a keyword: a json-string view.
    text = r'{"key": "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----"}'
    assert [v.encoding for v in views(text, DecodeLimits(), lambda m: None, keywords)] == [(), ("json-string",)]


@pytest.mark.parametrize(
    "line, label",
    [
        ("  aws_secret_access_key: ", "aws_secret_access_key: "),
        ('{"data": {"AWS_SECRET_ACCESS_KEY": "', 'AWS_SECRET_ACCESS_KEY": "'),
        (r'{\"secretAccessKey\": \"', r'secretAccessKey\": \"'),
        ("export AWS_SECRET_KEY=", "AWS_SECRET_KEY="),
        ("x\n  Secret access key = '", "Secret access key = '"),
        # A framework's secret and a token are credential names too (generic-secret).
        ("  SECRET_KEY: ", "SECRET_KEY: "),
        # The label starts at the name, not at the keyword inside it (_PASS in DB_PASSWORD).
        ("  DB_PASSWORD: ", "DB_PASSWORD: "),
        ('{"data": {"fs.s3a.secret.key": "', 'fs.s3a.secret.key": "'),
        ("aws_secret_access_key: x\n  token: ", "token: "),
        # Not an assignment to a context keyword: no label.
        ("aws_secret_access_key is stored as ", ""),
        ("aws_secret_access_key: see docs; data: ", ""),
        ("  kind: ", ""),
    ],
)
def test_label_before_names_the_context_keyword_a_value_is_assigned_to(line, label):
    ruleset = load_ruleset()
    keywords = KeywordSet.build(ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords)
    text = line + "QUJD" * 14
    assert keywords.label_before(text, len(line)) == label


@pytest.mark.slow
def test_base64_value_of_a_named_secret_is_read_under_its_name():
    """A Kubernetes Secret holds the base64 of the bare value: decoded, it keeps its name."""
    secret = expand("{{aws_secret}}", seed="label-1")
    encoded = base64.b64encode(secret.encode()).decode()
    text = f"kind: Secret\ndata:\n  AWS_SECRET_ACCESS_KEY: {encoded}\n"
    ruleset = load_ruleset()
    keywords = KeywordSet.build(ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords)
    decoded = [v for v in views(text, DecodeLimits(), lambda m: None, keywords) if v.encoding]
    assert [(v.encoding, v.text) for v in decoded] == [(("base64",), f"AWS_SECRET_ACCESS_KEY: {secret}")]
    assert decoded[0].original_span(30, 40) == (text.index(encoded), text.index(encoded) + len(encoded))
    findings, _ = Scanner(ruleset, ScanOptions(now=FIXED_NOW)).scan_text(text)
    assert [(f.rule_id, f.encoding, text[f.start : f.end]) for f in findings] == [
        ("aws-secret-access-key", ("base64",), encoded)
    ]
    # The same value under a framework's secret name is not an AWS secret: a generic one.
    renamed = text.replace("AWS_SECRET_ACCESS_KEY", "SECRET_KEY")
    other = Scanner(ruleset, ScanOptions(now=FIXED_NOW)).scan_text(renamed)[0]
    assert [(f.rule_id, f.encoding) for f in other] == [("generic-secret-assignment", ("base64",))]


def test_decoders_module_exports():
    assert decoders.DecodeLimits().max_depth == 3
    assert isinstance(OffsetMap((0,), (1,), (0,), (6,)).start_in_parent(0), int)

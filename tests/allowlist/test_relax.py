"""The relaxed RE2 rule gate: a superset of every rule's matches, or no gate at all."""

from __future__ import annotations

import base64
import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from shardscan.engine import Scanner, rule_gate
from shardscan.prefilter import RuleGate
from shardscan.relax import anchor_length, relax
from shardscan.scanning import cell as cell_module
from shardscan.synth import expand
from tests.conftest import near_misses


def _re2(texts: list[str], pattern: str) -> list[bool]:
    return pc.match_substring_regex(pa.array(texts, type=pa.large_string()), pattern).to_pylist()


def test_every_builtin_rule_is_gated_and_its_examples_pass_the_gate(ruleset):
    for rule in ruleset.rules:
        relaxed = relax(rule.pattern_source)
        assert relaxed is not None, rule.id
        examples = [expand(e.text, seed=f"gate-{rule.id}") for e in rule.examples]
        assert all(_re2(examples, relaxed)), rule.id
        # The scanner's gate (the relaxed pattern, or the keywords) keeps every example the
        # detector would run the rule on: one that holds a keyword.
        gate, _wide = rule_gate(rule)
        assert gate is not None, rule.id
        with_keyword = [e for e in examples if any(k in e for k in rule.keywords)]
        assert with_keyword and all(_re2(with_keyword, gate)), rule.id


@pytest.mark.slow
def test_gate_is_a_superset_of_rule_matches_on_near_misses(ruleset):
    """Whenever the real pattern matches a text, the relaxed one must too (assertions dropped, case
    kept); and the scanner's gate wherever the detector would run the rule (a keyword is there)."""
    texts = near_misses(ruleset.rules, seed=7)
    for rule in ruleset.rules:
        relaxed = relax(rule.pattern_source)
        gate = _re2(texts, relaxed)
        scanners = _re2(texts, rule_gate(rule)[0])
        matched = 0
        for text, allowed, kept in zip(texts, gate, scanners, strict=True):
            if rule.pattern.search(text):
                matched += 1
                assert allowed, (rule.id, len(text))
                assert kept or not any(k in text for k in rule.keywords), (rule.id, len(text))
        assert matched >= len(rule.examples), rule.id  # the check above really ran


def test_a_rule_with_nothing_to_anchor_on_is_gated_by_its_keywords(ruleset, options):
    """A relaxed pattern of colons or braces is tried at every position (a ``host:port:db:user:pw``
    line, a JSON object): such a rule is gated by its keywords, which the detector needs anyway."""
    scanner = Scanner(ruleset, options)
    position = {rule.id: i for i, rule in enumerate(scanner.rules)}
    texts = ['{"type": "user", "private_key": "none"}', "db.example.com:5432:app:admin:hunter22",
             "in ~/.pgpass: db.example.com:5432:app:admin:hunter22", '{"type": "service_account"}']
    selected = scanner.gate.rules_for(texts)
    assert [position["gcp-service-account"] in rules for rules in selected] == [False, False, False, True]
    assert [position["pgpass-password"] in rules for rules in selected] == [False, False, True, False]
    assert anchor_length(r"(?x) (?P<h> [a-z.]{1,9} ) : [0-9]{1,5} : (?P<s> \S+ )") == 1
    assert anchor_length(r"(?x) (?<![A-Za-z]) (?P<secret> ghp_ [A-Za-z0-9]{36} )") == 4
    assert anchor_length(r"(?:key-|token_)[0-9a-f]{8}") == 4


@pytest.mark.slow
def test_gate_drops_base64_blobs_that_share_a_keyword(ruleset):
    blob = base64.b64encode(random.Random(3).randbytes(30_000)).decode()
    blob = blob[:1000] + "eyJ" + blob[1000:2000] + "A3T" + blob[2000:]
    gate = RuleGate.from_patterns(relax(r.pattern_source) for r in ruleset.rules)
    [selected] = gate.rules_for([blob])
    assert selected == ()


@pytest.mark.parametrize(
    "source",
    [
        r"(?P<secret>a)\1",  # back-reference
        r"(a)?(?(1)b|c)",  # conditional
        r"[[:alpha:]]{10}",  # POSIX class (the regex module reads it differently from re)
        r"(?:tok){e<=1}",  # fuzzy matching
        r"\p{Lu}{4}",  # regex-module property class
    ],
)
def test_unrelaxable_patterns_get_no_gate(source):
    assert relax(source) is None


def test_alternatives_that_reuse_a_group_name_are_relaxed():
    """The regex module lets each alternative capture its own ``secret``; ``re``'s parser does not,
    so the gate reads named groups as plain ones (a back-reference to a name stays unrelaxable)."""
    relaxed = relax(r"(?x) (?: <pw> (?P<secret> [a-z]{4} ) </pw> | pw= (?P<secret> [0-9]{4} ) )")
    assert relaxed is not None
    assert _re2(["<pw>abcd</pw>", "pw=1234", "pw=abcd", "<pw>1234</pw>"], relaxed) == [True, True, False, False]
    assert relax(r"(?P<q>[\"'])x(?P=q)") is None
    assert relax(r"\(?P<x>y") is not None  # an escaped parenthesis opens no group


def test_case_insensitive_scopes_are_kept():
    relaxed = relax(r"(?x) (?i: secret_?key ) \s* = \s* (?P<secret> [A-Z]{4} )")
    assert _re2(["SECRET_KEY = ABCD", "Secret_Key=ABCD", "secret_key = abcd", "secretkey=AB"], relaxed) == [
        True, True, False, False,
    ]


@pytest.mark.slow
def test_scanner_with_gate_finds_the_same_as_without(ruleset, options):
    token = expand("{{github:ghp_}}", seed="gate-same")
    jwt = expand("{{jwt}}", seed="gate-same")
    texts = [f"GITHUB_TOKEN={token}", f"Bearer {jwt}", "ghp_" + "x" * 36, "hf_hub_download(repo)", "plain"]
    gated = Scanner(ruleset, options)
    found_gated = [gated.scan_text(t, None, tuple(gated.rules[i] for i in sel))[0]
                   for t, sel in zip(texts, gated.gate.rules_for(texts), strict=True)]
    found_all = [gated.scan_text(t)[0] for t in texts]
    assert found_gated == found_all
    assert [len(f) for f in found_all] == [1, 1, 0, 0, 0]


def test_decoded_views_run_only_the_rules_their_gate_keeps(ruleset, options, monkeypatch):
    """A decoded view is gated as a raw text is: code that names credentials runs no rule's regex,
    and what the gate keeps finds the same as every rule."""
    token = expand("{{github:ghp_}}", seed="decoded-gate")
    config = base64.b64encode(f"GITHUB_TOKEN={token}\n".encode()).decode()
    code = base64.b64encode(b"token = os.environ['GITHUB_TOKEN']  # a ghp_ token, or OPENAI_API_KEY / hf_\n").decode()
    text = f"config: {config}\nnotes: {code}\n"
    ran: list[tuple[str, int]] = []
    detect = cell_module.detect

    def recording(view, rules, *args, **kwargs):
        if view.encoding:
            ran.append((view.text.split(" ")[0], len(rules)))
        return detect(view, rules, *args, **kwargs)

    monkeypatch.setattr(cell_module, "detect", recording)
    gated = Scanner(ruleset, options)
    findings, limits = gated.scan_text(text)
    assert [(f.rule_id, f.encoding) for f in findings] == [("github-pat", ("base64",))] and limits == []
    [(view, count)] = ran  # (the code's view: its gate keeps no rule, so no regex runs on it)
    assert view.startswith("GITHUB_TOKEN=ghp_") and 0 < count < len(ruleset.rules)
    ungated = Scanner(ruleset, options)
    ungated.cells.gate = None
    assert ungated.scan_text(text) == (findings, limits)
    every = len(ruleset.rules)
    assert [(name[:13], count) for name, count in ran[1:]] == [("GITHUB_TOKEN=", every), ("token", every)]


def test_a_decoded_view_the_gate_cannot_read_runs_every_rule(ruleset, options):
    """A text given to scan_text may hold a lone surrogate, which is not UTF-8: its decoded views
    are not gated (every rule runs on them) rather than failing the scan."""
    token = expand("{{github:ghp_}}", seed="lone-surrogate")
    text = '{"note": "\ud800 ' + "\\u0067" + token[1:] + '"}'
    findings, limits = Scanner(ruleset, options).scan_text(text)
    assert [(f.rule_id, f.encoding) for f in findings] == [("github-pat", ("json-string",))] and limits == []


def test_open_ranges_widens_bounded_ranges_only():
    """The wide form (for Hyperscan) opens ``{m,n}`` ranges and keeps exact counts and optionals."""
    source = r"(?x) AKIA [A-Z2-7]{16} [^\n]{0,60} (?:-)? (?P<secret> [A-Za-z0-9/+]{40} )"
    narrow, wide = relax(source), relax(source, open_ranges=True)
    assert "{0,60}" in narrow and "{0,60}" not in wide and "{0,}" in wide
    assert wide.count("{16,16}") == 1 and wide.count("{0,1}") == 1
    texts = ["AKIA" + "B" * 16 + " " * 90 + "a" * 40, "AKIA" + "B" * 16 + " = " + "a" * 40, "AKIA" + "B" * 15]
    assert _re2(texts, narrow) == [False, True, False]
    assert _re2(texts, wide) == [True, True, False]

"""The generated rules reference: docs/rules.md (its table of kinds included) is current, and the
generator picks up new rules and verifiers from data and docstrings alone."""

from __future__ import annotations

import textwrap

from shardscan.model import Verdict, Verification
from shardscan.ruleset import load_ruleset, reference
from shardscan.verifiers import VERIFIERS


def test_docs_rules_md_is_current():
    behind = reference.stale(reference.generate())
    assert behind == [], f"out of date: {behind}; run {reference.COMMAND}"


def test_kinds_table_lists_every_kind_with_its_offline_check():
    ruleset = load_ruleset()
    doc = reference.DOC.read_text(encoding="utf-8")
    table = doc[doc.index("## Kinds\n") : doc.index("\n## rules/")]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(ruleset.kinds)
    assert "| `npm` | npm access token; npm registry credential in an .npmrc | `npm-checksum`, `npmrc` |" in rows
    assert "| `pypi` | PyPI API token | `pypi-macaroon` |" in rows
    assert "| `groq` | Groq API key | format only |" in rows


def test_doc_describes_each_rule_and_each_verifier_from_its_docstring():
    doc = reference.render_doc(load_ruleset())
    npm = "| `npm-access-token` | `npm` | npm access token | critical | `npm_` | `npm-checksum`: Recomputes the CRC32"
    assert npm in doc
    assert "| `sk-api-key` | `openai-compatible` | sk- API key (provider not recognised) (*fallback*) | high |" in doc
    assert "| `pypi-macaroon` | Decodes the macaroon" in doc


def _acme_verifier(candidate, context):
    """Checks the acme checksum digit."""
    return Verification(Verdict.UNVERIFIED, "acme")


def test_a_new_rule_file_and_verifier_need_no_change_to_the_generator(tmp_path, monkeypatch):
    monkeypatch.setitem(VERIFIERS, "acme-digit", _acme_verifier)
    rule_file = tmp_path / "acme.yaml"
    rule_file.write_text(textwrap.dedent("""\
        - id: acme-token
          kind: acme
          name: Acme | token
          description: An Acme token.
          severity: medium
          keywords: [acme_]
          pattern: '(?P<secret>acme_[a-z0-9]{20})'
          verify: [acme-digit]
          examples: ['acme_{{hex:20}}']
        """))
    ruleset = load_ruleset([rule_file])
    doc = reference.render_doc(ruleset)
    assert f"## {rule_file}" in doc
    acme = "| `acme-token` | `acme` | Acme \\| token | medium | `acme_` | `acme-digit`: Checks the acme checksum digit"
    assert acme in doc
    assert "| `acme-digit` | Checks the acme checksum digit |" in doc
    assert "| `acme` | Acme \\| token | `acme-digit` |" in reference.render_kinds(ruleset)
    assert "| `acme` | Acme \\| token | `acme-digit` |" in doc


def test_check_mode_names_the_stale_file_and_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(reference, "DOC", tmp_path / "rules.md")
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    lines: list[str] = []
    assert reference.main(["--check"], out=lines.append) == 1
    assert lines == [f"rules.md is out of date: run {reference.COMMAND}"]
    assert reference.main([], out=lines.append) == 0
    assert reference.main(["--check"], out=lines.append) == 0

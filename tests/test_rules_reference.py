"""The generated rules reference: docs/rules.md and the README's rule table are current, and the
generator picks up new rules and verifiers from data and docstrings alone."""

from __future__ import annotations

import textwrap

import pytest

from shardscan.model import Verdict, Verification
from shardscan.ruleset import load_ruleset, reference
from shardscan.verifiers import VERIFIERS


def test_docs_rules_md_and_readme_table_are_current():
    behind = reference.stale(reference.generate())
    assert behind == [], f"out of date: {behind}; run {reference.COMMAND}"


def test_readme_table_lists_every_kind_with_its_offline_check():
    ruleset = load_ruleset()
    readme = reference.README.read_text(encoding="utf-8")
    table = readme[readme.index(reference.TABLE_START) : readme.index(reference.TABLE_END)]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert [row.split("`")[1] for row in rows] == list(ruleset.kinds)
    assert "| `npm` | npm access token | `npm-checksum` |" in rows
    assert "| `pypi` | PyPI API token | `pypi-macaroon` |" in rows
    assert "| `groq` | Groq API key | format only |" in rows


def test_doc_describes_each_rule_and_each_verifier_from_its_docstring():
    doc = reference.render_doc(load_ruleset())
    assert ("| `npm-access-token` | `npm` | npm access token | critical | `npm_` | "
            "`npm-checksum`: Recomputes the CRC32") in doc
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
    assert ("| `acme-token` | `acme` | Acme \\| token | medium | `acme_` | `acme-digit`: Checks the acme checksum "
            "digit |") in doc
    assert "| `acme-digit` | Checks the acme checksum digit |" in doc
    table = reference.render_table(ruleset)
    assert "| `acme` | Acme \\| token | `acme-digit` |" in table


def test_splicing_replaces_only_the_text_between_the_markers():
    ruleset = load_ruleset()
    readme = f"intro\n{reference.TABLE_START}\nstale table\n{reference.TABLE_END}\nrest\n"
    spliced = reference.splice_table(readme, reference.render_table(ruleset))
    assert spliced.startswith("intro\n" + reference.TABLE_START) and spliced.endswith(reference.TABLE_END + "\nrest\n")
    assert "stale table" not in spliced
    with pytest.raises(ValueError, match="no rule table markers"):
        reference.splice_table("no markers here", reference.render_table(ruleset))


def test_check_mode_names_the_stale_file_and_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(reference, "DOC", tmp_path / "rules.md")
    monkeypatch.setattr(reference, "ROOT", tmp_path)
    readme = tmp_path / "README.md"
    readme.write_text(f"{reference.TABLE_START}\n{reference.TABLE_END}\n", encoding="utf-8")
    monkeypatch.setattr(reference, "README", readme)
    lines: list[str] = []
    assert reference.main(["--check"], out=lines.append) == 1
    assert lines == [f"rules.md is out of date: run {reference.COMMAND}", "README.md is out of date: run "
                                                                          f"{reference.COMMAND}"]
    assert reference.main([], out=lines.append) == 0
    assert reference.main(["--check"], out=lines.append) == 0

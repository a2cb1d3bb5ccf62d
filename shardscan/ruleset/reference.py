"""Generate the rules reference (``docs/rules.md``: a table of kinds, then every rule) from ``rules/``.

``python -m shardscan.ruleset.reference`` rewrites it; ``--check`` exits 1 when it is out of date
(a test runs it). The README carries no generated rule table: it links this page, so a rule change
never touches the README. Verifier descriptions are the first line of each verifier function's
docstring, so a new rule file or verifier needs no edit here.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from shardscan.ruleset.load import load_ruleset
from shardscan.ruleset.model import Rule, Ruleset
from shardscan.verifiers import ALWAYS_FIRST, VERIFIERS

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = ROOT / "docs" / "rules.md"
COMMAND = "python -m shardscan.ruleset.reference"
NO_VERIFIER = "format only: placeholder, example and masking checks"


def describe_verifier(name: str) -> str:
    """The first paragraph of the docstring of the verifier registered as ``name`` (on one line)."""
    doc = (inspect.getdoc(VERIFIERS[name]) or "").strip()
    first = " ".join(doc.split("\n\n")[0].split()) if doc else "(no description)"
    return first.rstrip(".").replace("``", "`")


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(items: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{_cell(item)}`" for item in items)


def offline_check(rule: Rule) -> str:
    """The rule's offline check in words: its verifiers' descriptions, or that it has none."""
    if not rule.verify:
        return NO_VERIFIER
    return "; ".join(f"`{name}`: {_cell(describe_verifier(name))}" for name in rule.verify)


def render_doc(ruleset: Ruleset) -> str:
    """The whole ``docs/rules.md``: one section per rule file, one entry per rule, then the verifiers."""
    lines = [
        "# Rules reference",
        "",
        f"Generated from `rules/*.yaml` by `{COMMAND}`; do not edit by hand (a test fails when it is",
        "out of date). `shardscan rules list` shows the same rules from the installed package.",
        "",
        f"{len(ruleset.rules)} rules, {len(ruleset.kinds)} kinds. Every candidate is first compared with the",
        "documented examples and checked for placeholders (verifiers "
        + ", ".join(f"`{n}`" for n in ALWAYS_FIRST) + ", below), then by its rule's own verifiers.",
        "A rule marked *fallback* reports shapes no specific rule knows and yields to any specific",
        "rule whose match overlaps its own.",
        "",
        *render_kinds(ruleset),
        "",
    ]
    by_file: dict[str, list[Rule]] = {}
    for rule in ruleset.rules:
        by_file.setdefault(rule.source, []).append(rule)
    for source, rules in by_file.items():
        lines += [f"## {source}", "", "| id | kind | name | severity | keywords | offline check |"]
        lines.append("|---|---|---|---|---|---|")
        for rule in rules:
            name = _cell(rule.name) + (" (*fallback*)" if rule.fallback else "")
            keywords, check = _code(rule.keywords), offline_check(rule)
            lines.append(f"| `{rule.id}` | `{rule.kind}` | {name} | {rule.severity} | {keywords} | {check} |")
        lines.append("")
    used = list(ALWAYS_FIRST) + sorted({n for r in ruleset.rules for n in r.verify} - set(ALWAYS_FIRST))
    lines += ["## Verifiers", "", "| verifier | checks |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(describe_verifier(name))} |" for name in used]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True, slots=True)
class KindRow:
    """One line of the table of kinds: a kind, what its rules cover and their offline checks."""

    kind: str
    covers: str
    check: str


def kind_rows(ruleset: Ruleset) -> list[KindRow]:
    """One row per kind, in kind order."""
    rows = []
    for kind in ruleset.kinds:
        rules = [r for r in ruleset.rules if r.kind == kind]
        verifiers = list(dict.fromkeys(n for r in rules for n in r.verify))
        check = ", ".join(f"`{n}`" for n in verifiers) if verifiers else "format only"
        if verifiers and any(not r.verify for r in rules):
            check += " (some rules: format only)"
        rows.append(KindRow(kind, "; ".join(_cell(r.name) for r in rules), check))
    return rows


def render_kinds(ruleset: Ruleset) -> list[str]:
    """The ``## Kinds`` section of ``docs/rules.md``: one line per kind, what it covers, its offline check."""
    lines = ["## Kinds", "", "| kind | covers | offline check |", "|---|---|---|"]
    return lines + [f"| `{row.kind}` | {row.covers} | {row.check} |" for row in kind_rows(ruleset)]


@dataclass(frozen=True, slots=True)
class Outputs:
    """The generated text and where it goes."""

    doc: str


def generate(ruleset: Ruleset | None = None) -> Outputs:
    """The up-to-date ``docs/rules.md`` text for the built-in rules."""
    return Outputs(render_doc(ruleset or load_ruleset()))


def stale(outputs: Outputs) -> list[str]:
    """The files whose content differs from ``outputs`` (paths relative to the checkout)."""
    current = {DOC: outputs.doc}
    return [
        str(p.relative_to(ROOT)) for p, text in current.items()
        if not p.is_file() or p.read_text(encoding="utf-8") != text
    ]


def main(argv: list[str] | None = None, out: Callable[[str], None] = print) -> int:
    """Write the reference, or with ``--check`` report whether it is current."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/rules.md is out of date")
    args = parser.parse_args(argv)
    outputs = generate()
    if args.check:
        behind = stale(outputs)
        for path in behind:
            out(f"{path} is out of date: run {COMMAND}")
        return 1 if behind else 0
    DOC.write_text(outputs.doc, encoding="utf-8")
    out(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

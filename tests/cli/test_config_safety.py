"""Rule files are data: no code execution, no catastrophic patterns; contexts never carry secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from shardscan.engine import Scanner
from shardscan.errors import ConfigError
from shardscan.ruleset import load_rule_file, load_ruleset
from shardscan.ruleset.safety import backtracking_risk
from shardscan.synth import expand

RULE = """
- id: my-token
  kind: custom
  name: My token
  description: A token of ours.
  severity: high
  keywords: [myt_]
  pattern: '{pattern}'
  examples: ['myt_abcdefghijklmnop']
"""


def test_yaml_tags_cannot_execute_code(tmp_path: Path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.yaml"
    path.write_text(f'- !!python/object/apply:os.system ["touch {marker}"]\n')
    with pytest.raises(ConfigError, match="evil.yaml: not valid YAML"):
        load_rule_file(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "pattern",
    [r"(?P<secret>myt_(a+)+)", r"(?P<secret>myt_(?:\w*x)*)", r"(?P<secret>myt_(?:[a-z]+\d?){2,})"],
)
def test_catastrophic_backtracking_shapes_are_refused_at_load(tmp_path: Path, pattern: str):
    path = tmp_path / "mine.yaml"
    path.write_text(RULE.format(pattern=pattern))
    with pytest.raises(ConfigError, match=r"mine.yaml: my-token: pattern risks catastrophic backtracking"):
        load_rule_file(path)


@pytest.mark.parametrize("pattern", [r"(?P<secret>myt_[a-z]{16})", r"(?P<secret>myt_(?:ab|cd){8})"])
def test_ordinary_patterns_pass_the_backtracking_check(pattern: str):
    assert backtracking_risk(pattern) is None


def test_every_builtin_pattern_passes_the_backtracking_check():
    for rule in load_ruleset().rules:
        assert backtracking_risk(rule.pattern_source) is None, rule.id


@pytest.mark.slow
def test_context_masks_a_neighbouring_secret_that_no_active_rule_reports():
    gh = expand("{{github:ghp_}}", seed="ctx-gh")
    hf = expand("{{hf}}", seed="ctx-hf")
    ruleset = load_ruleset(disable=["huggingface"])
    findings, _ = Scanner(ruleset).scan_text(f"GH={gh} HF={hf} done")
    [finding] = findings
    assert finding.rule_id == "github-pat"
    leaked = gh in finding.context or hf in finding.context or hf[4:] in finding.context
    assert not leaked
    assert finding.context.startswith("GH=[ghp_")

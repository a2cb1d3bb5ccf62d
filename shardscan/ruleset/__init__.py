"""Rules as data: load, validate, compile and check rule files."""

from shardscan.ruleset.load import builtin_rule_files, builtin_rules_dir, load_rule_file, load_ruleset
from shardscan.ruleset.model import Example, Rule, Ruleset

__all__ = [
    "Example",
    "Rule",
    "Ruleset",
    "builtin_rule_files",
    "builtin_rules_dir",
    "load_rule_file",
    "load_ruleset",
]

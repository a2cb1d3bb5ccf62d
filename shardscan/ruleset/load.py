"""Load rule files: parse YAML safely, then validate and compile, failing with ``file: rule-id: what``."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa
import regex
import yaml

from shardscan import arrow_compute
from shardscan.errors import ConfigError
from shardscan.model import Severity, Verdict
from shardscan.ruleset.model import SEVERITIES, Example, Rule, Ruleset
from shardscan.ruleset.safety import backtracking_risk
from shardscan.safe_yaml import SAFE_LOADER
from shardscan.synth import has_template
from shardscan.verifiers import VERIFIERS

# Builds the error for one rule (``file: rule-id: what is wrong``) for the caller to raise.
Fail = Callable[[str], ConfigError]

_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_VERDICTS: tuple[str, ...] = tuple(str(v) for v in Verdict)
MIN_KEYWORD = 3
_REQUIRED = ("id", "kind", "name", "description", "severity", "keywords", "pattern")
_OPTIONAL = (
    "min_entropy", "stopwords", "verify", "examples", "negative_examples", "references", "token_keywords",
    "context_keywords", "fallback", "prefilter"
)
_MAX_PATTERN_CHARS = 4000


def builtin_rules_dir() -> Path:
    """Where the built-in rules are: inside the installed wheel, or ``rules/`` of a source checkout."""
    packaged = Path(__file__).resolve().parent.parent / "_builtin_rules"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "rules"


def builtin_rule_files() -> list[Path]:
    """The built-in rule files, sorted by name."""
    directory = builtin_rules_dir()
    if not directory.is_dir():
        raise ConfigError(f"{directory}: built-in rules not found (broken installation)")
    return sorted(directory.glob("*.yaml"))


def load_ruleset(
    extra_files: Iterable[str | Path] = (),
    *,
    builtin: bool = True,
    disable: Iterable[str] = (),
) -> Ruleset:
    """Load the built-in rules (unless ``builtin`` is false) plus ``extra_files``, minus ``disable``.

    Raises ConfigError naming the file and rule for anything invalid, including an id defined
    twice or a disabled id that does not exist.
    """
    files = (builtin_rule_files() if builtin else []) + [Path(p) for p in _expand(extra_files)]
    rules: list[Rule] = []
    seen: dict[str, str] = {}
    builtin_dir = builtin_rules_dir().resolve()
    for path in files:
        label = _label(path, builtin_dir)
        for rule in load_rule_file(path, label):
            if rule.id in seen:
                raise ConfigError(f"{label}: {rule.id}: rule id already defined in {seen[rule.id]}")
            seen[rule.id] = label
            rules.append(rule)
    disabled = set(disable)
    unknown = disabled - set(seen) - {r.kind for r in rules}
    if unknown:
        raise ConfigError(f"--disable: no rule or kind named {', '.join(sorted(unknown))}")
    return Ruleset(tuple(r for r in rules if r.id not in disabled and r.kind not in disabled))


def _expand(paths: Iterable[str | Path]) -> list[Path]:
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out.extend(sorted(path.glob("*.yaml")) + sorted(path.glob("*.yml")))
        else:
            out.append(path)
    return out


def _label(path: Path, builtin_dir: Path | None = None) -> str:
    """How errors name a rule file: ``rules/github.yaml`` for built-ins, the given path otherwise."""
    try:
        if path.resolve().parent == (builtin_dir or builtin_rules_dir().resolve()):
            return f"rules/{path.name}"
    except OSError:
        pass
    return str(path)


def load_rule_file(path: str | Path, label: str | None = None) -> list[Rule]:
    """Parse and compile one rule file (a YAML list of rules, or a mapping with a ``rules`` list).

    ``label`` is how errors name the file (default: ``rules/NAME.yaml`` for a built-in, else the path).
    """
    path = Path(path)
    label = label or _label(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{label}: cannot read rule file ({type(exc).__name__})") from None
    try:
        data = yaml.load(text, Loader=SAFE_LOADER)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark else ""
        raise ConfigError(f"{label}: not valid YAML{where}") from None
    if isinstance(data, dict) and "rules" in data:
        data = data["rules"]
    if not isinstance(data, list):
        raise ConfigError(f"{label}: expected a list of rules")
    return [compile_rule(raw, label, i) for i, raw in enumerate(data)]


def compile_rule(raw: Any, label: str, index: int = 0) -> Rule:
    """Validate one raw rule mapping and compile it into a Rule."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{label}: rule #{index + 1}: expected a mapping")
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not rule_id.strip():
        raise ConfigError(f"{label}: rule #{index + 1}: missing required field 'id' (a kebab-case string)")
    if not _ID.fullmatch(rule_id):
        # Name the offending id (shortened: it is user text) so the author can find the rule.
        raise ConfigError(
            f"{label}: {rule_id[:60]}: 'id' must be kebab-case (lowercase letters, digits, single dashes)"
        )

    def fail(message: str) -> ConfigError:
        return ConfigError(f"{label}: {rule_id}: {message}")

    for key in _REQUIRED:
        if key not in raw:
            raise fail(f"missing required field '{key}'")
    unknown = set(raw) - set(_REQUIRED) - set(_OPTIONAL)
    if unknown:
        raise fail(f"unknown field(s) {', '.join(sorted(unknown))}")
    for key in ("kind", "name", "description", "pattern"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise fail(f"'{key}' must be a non-empty string")
    if not _ID.fullmatch(raw["kind"]):
        raise fail("'kind' must be kebab-case")
    if raw["severity"] not in SEVERITIES:
        raise fail(f"'severity' must be one of {', '.join(SEVERITIES)}")
    keywords = _string_list(raw, "keywords", fail, required=True)
    # A keyword is also what decides whether decoded bytes are searched and a rule runs on a text:
    # two characters occur by chance in any few kilobytes of binary data or prose.
    if short := [k for k in keywords if len(k) < MIN_KEYWORD]:
        raise fail(f"keywords must be at least {MIN_KEYWORD} characters long (not: {', '.join(map(repr, short))})")
    stopwords = _string_list(raw, "stopwords", fail)
    token_start = _string_list(raw, "token_keywords", fail)
    if stray := [k for k in token_start if k not in keywords]:
        raise fail(f"'token_keywords' must be among the rule's keywords (not: {', '.join(stray)})")
    context = _string_list(raw, "context_keywords", fail)
    if stray := [k for k in context if k not in keywords]:
        raise fail(f"'context_keywords' must be among the rule's keywords (not: {', '.join(stray)})")
    if both := [k for k in context if k in token_start]:
        raise fail(f"a keyword cannot both begin a token and name it (in 'token_keywords' and 'context_keywords': "
                   f"{', '.join(both)})")
    prefilter = _string_list(raw, "prefilter", fail)
    if bad := [p for p in prefilter if not _re2_ok(p) or not _python_ok(p)]:
        raise fail(f"'prefilter' pattern is not valid in both RE2 and Python's re: {bad[0][:60]!r}")
    verify = _string_list(raw, "verify", fail)
    fallback = raw.get("fallback", False)
    if not isinstance(fallback, bool):
        raise fail("'fallback' must be true or false")
    _check_verifiers(verify, fail)
    min_entropy = raw.get("min_entropy")
    if min_entropy is not None and (not isinstance(min_entropy, (int, float)) or not 0 <= min_entropy <= 8):
        raise fail("'min_entropy' must be a number between 0 and 8")
    pattern = _compile_pattern(raw["pattern"], fail)
    examples = _examples(raw, "examples", fail)
    negatives = _examples(raw, "negative_examples", fail)
    for example in examples:
        # Templated examples are checked after expansion, by ``rules check``.
        if not has_template(example.text) and not any(k in example.text for k in keywords):
            raise fail(f"example {example.text[:40]!r} contains none of the rule's keywords (the prefilter would skip "
                       "it)")
    return Rule(
        id=rule_id,
        kind=raw["kind"],
        name=raw["name"].strip(),
        description=" ".join(raw["description"].split()),
        severity=Severity(raw["severity"]),
        keywords=tuple(keywords),
        pattern=pattern,
        pattern_source=raw["pattern"],
        source=label,
        min_entropy=float(min_entropy) if min_entropy is not None else None,
        stopwords=tuple(s.lower() for s in stopwords),
        verify=tuple(verify),
        examples=examples,
        negative_examples=negatives,
        token_keywords=tuple(token_start),
        context_keywords=tuple(context),
        fallback=fallback,
        prefilter=tuple(prefilter),
    )


def _re2_ok(pattern: str) -> bool:
    """Whether ``pattern`` compiles in RE2 (the prefilter's engine)."""
    try:
        arrow_compute.match_substring_regex(pa.array([""], type=pa.large_string()), pattern)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _python_ok(pattern: str) -> bool:
    """Whether ``pattern`` compiles in Python's ``re`` (the detector's per-view check)."""
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True


def _string_list(raw: dict[str, Any], key: str, fail: Fail, required: bool = False) -> list[str]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise fail(f"'{key}' must be a list of non-empty strings")
    if required and not value:
        raise fail(f"'{key}' must not be empty")
    return value


def _check_verifiers(names: list[str], fail: Fail) -> None:
    for name in names:
        if name not in VERIFIERS:
            raise fail(f"unknown verifier '{name}' (known: {', '.join(sorted(VERIFIERS))})")


def _compile_pattern(source: str, fail: Fail) -> regex.Pattern[str]:
    if len(source) > _MAX_PATTERN_CHARS:
        raise fail(f"pattern longer than {_MAX_PATTERN_CHARS} characters")
    try:
        pattern = regex.compile(source)
    except regex.error as exc:
        raise fail(f"pattern does not compile: {exc}") from None
    if "secret" not in pattern.groupindex:
        raise fail("pattern has no named group 'secret'")
    risk = backtracking_risk(source)
    if risk:
        raise fail(f"pattern risks catastrophic backtracking: {risk}")
    return pattern


def _examples(raw: dict[str, Any], key: str, fail: Fail) -> tuple[Example, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise fail(f"'{key}' must be a list")
    out: list[Example] = []
    for item in value:
        if isinstance(item, str):
            out.append(Example(item))
        elif isinstance(item, dict) and isinstance(item.get("text"), str) and set(item) <= {"text", "verdict"}:
            verdict = item.get("verdict")
            if verdict is not None and verdict not in _VERDICTS:
                raise fail(f"an example's 'verdict' must be one of {', '.join(_VERDICTS)}")
            out.append(Example(item["text"], None if verdict is None else Verdict(verdict)))
        else:
            raise fail(f"each of '{key}' must be a string or a mapping with 'text' (and optional 'verdict')")
    return tuple(out)

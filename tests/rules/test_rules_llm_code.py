"""sk- keys, LLM and ML platforms, code hosting, registries and secret managers: one cell per
family with a live-shaped value and one per harmless twin, in a Parquet shard scanned as written,
JSON-escaped and base64-encoded; the offline checks (npm checksum, PyPI macaroon, 1Password record,
OpenAI service-account names, sk- provider shapes); one finding per sk- key however many rules match."""

from __future__ import annotations

import base64
import json
import random
import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.model import Verdict
from shardscan.reporters import FORMATS, render
from shardscan.reporters._common import KIND_NAMES
from shardscan.synth import expand, npm_token, pypi_token
from tests.verifier_helpers import findings, only, verify

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Cell:
    """A cell template: ``{{…}}`` marks generated values; ``secret`` is the template of the value itself."""

    name: str
    before: str
    secret: str
    after: str
    rule: str | None  # None: not reported at all
    verdict: str = "unverified"
    # Keys without a prefix are found next to their name, which base64 of a whole text hides (the
    # prefilter does not look for names in base64): their base64 form is the value alone under
    # its name, as in a Kubernetes Secret.
    var: str = ""


# One live-shaped value per family (blocking).
LIVE = [
    Cell("openai-service-account-name", "OPENAI_API_KEY=", "{{openai:sk-eval-harness-}}", "\n",
         "openai-api-key", "valid"),
    Cell("openai-svcacct", "OPENAI_API_KEY=", "{{openai:sk-svcacct-}}", "", "openai-api-key", "valid"),
    Cell("openrouter", 'export OPENROUTER_API_KEY="', "sk-or-v1-{{hex:64}}", '"', "openrouter-api-key"),
    Cell("dashscope", "DASHSCOPE_API_KEY=", "sk-{{hex:32}}", "", "sk-hex-api-key"),
    Cell("deepseek", 'OpenAI(api_key="', "sk-{{hex:32}}", '", base_url="https://api.deepseek.com")', "sk-hex-api-key"),
    Cell("moonshot", "MOONSHOT_API_KEY=", "sk-{{alnum:48}}", "", "moonshot-api-key"),
    Cell("unknown-sk-provider", "LLM_KEY=", "sk-{{b64url:40}}", " # new provider", "sk-api-key"),
    Cell("groq", "GROQ_API_KEY=", "gsk_{{alnum:52}}", "", "groq-api-key"),
    Cell("xai", "XAI_API_KEY=", "xai-{{alnum:80}}", "", "xai-api-key"),
    Cell("gemini", "GEMINI_API_KEY=", "AIzaSy{{b64url:33}}", "", "google-api-key"),
    Cell("perplexity", "PPLX_API_KEY=", "pplx-{{alnum:48}}", "", "perplexity-api-key"),
    Cell("replicate", "REPLICATE_API_TOKEN=", "r8_{{alnum:37}}", "", "replicate-api-token"),
    Cell("fireworks", "FIREWORKS_API_KEY=", "fw_{{alnum:24}}", "", "fireworks-api-key"),
    Cell("tavily", "TAVILY_API_KEY=", "tvly-dev-{{alnum:32}}", "", "tavily-api-key"),
    Cell("langsmith", "LANGSMITH_API_KEY=", "lsv2_pt_{{hex:32}}_{{hex:10}}", "", "langsmith-api-key"),
    Cell("pinecone", "PINECONE_API_KEY=", "pcsk_{{alnum:5}}_{{alnum:64}}", "", "pinecone-api-key"),
    Cell("cerebras", "CEREBRAS_API_KEY=", "csk-{{lower_alnum:48}}", "", "cerebras-api-key"),
    Cell("wandb", "$ wandb login ", "{{hex:40}}", "\nwandb: Appending key", "wandb-api-key", var="WANDB_API_KEY"),
    Cell("cohere", "COHERE_API_KEY=", "{{alnum:40}}", "", "cohere-api-key", var="COHERE_API_KEY"),
    Cell("mistral", "MISTRAL_API_KEY=", "{{alnum:32}}", "", "mistral-api-key", var="MISTRAL_API_KEY"),
    Cell("elevenlabs", "ELEVENLABS_API_KEY=", "sk_{{hex:48}}", "", "elevenlabs-api-key"),
    Cell("elevenlabs-header", "-H 'xi-api-key: ", "{{hex:32}}", "'", "elevenlabs-api-key-legacy",
         var="ELEVENLABS_API_KEY"),
    Cell("databricks", "DATABRICKS_TOKEN=", "dapi{{hex:32}}", "", "databricks-token"),
    Cell("kaggle-token", "export KAGGLE_API_TOKEN=", "KGAT_{{hex:32}}", "", "kaggle-api-token"),
    Cell("kaggle-json", '$ cat ~/.kaggle/kaggle.json\n{"username":"dsmith","key":"', "{{hex:32}}", '"}',
         "kaggle-api-key", var="KAGGLE_KEY"),
    Cell("kaggle-json-key-first", "{'key': '", "{{hex:32}}", "', 'username': 'dsmith'}", "kaggle-api-key",
         var="KAGGLE_KEY"),
    Cell("gitlab-pat", "git remote add origin https://oauth2:", "glpat-{{b64url:20}}", "@gitlab.com/g/p.git",
         "gitlab-token"),
    Cell("gitlab-routable", "GITLAB_TOKEN=", "glpat-{{b64url:27}}.01.{{lower_alnum:9}}", "", "gitlab-token"),
    Cell("gitlab-deploy", "token: ", "gldt-{{b64url:20}}", "", "gitlab-token"),
    Cell("gitlab-runner", "--registration-token ", "GR1348941{{alnum:20}}", "", "gitlab-runner-registration-token"),
    Cell("npm", "//registry.npmjs.org/:_authToken=", "{{npm}}", "\n", "npm-access-token", "valid"),
    Cell("pypi", "password = ", "{{pypi:project}}", "\n", "pypi-api-token", "valid"),
    Cell("docker-hub", "echo ", "dckr_pat_{{b64url:27}}", " | docker login -u me --password-stdin", "docker-hub-token"),
    Cell("atlassian", "JIRA_API_TOKEN=", "ATATT3xFfGF0{{b64url:170}}={{hexu:8}}", "", "atlassian-api-token"),
    Cell("bitbucket", "https://me:", "ATBB{{alnum:28}}{{hexu:8}}", "@bitbucket.org/t/r.git", "bitbucket-app-password"),
    Cell("terraform", '"token": "', "{{alnum:14}}.atlasv1.{{b64url:67}}", '"', "terraform-cloud-token"),
    Cell("vault", "VAULT_TOKEN=", "hvs.CAESI{{b64url:90}}", "", "vault-token"),
    Cell("onepassword", "OP_SERVICE_ACCOUNT_TOKEN=", "{{onepassword}}", "",
         "onepassword-service-account-token", "valid"),
    Cell("doppler", "DOPPLER_TOKEN=", "dp.st.prd.{{alnum:43}}", "", "doppler-token"),
    Cell("pulumi", "PULUMI_ACCESS_TOKEN=", "pul-{{hex:40}}", "", "pulumi-access-token"),
]

# Harmless twins: reported with a non-blocking verdict, or not reported at all.
TWINS = [
    Cell("openai-off-centre", "OPENAI_API_KEY=", "sk-{{alnum:12}}T3BlbkFJ{{alnum:28}}", "",
         "openai-api-key", "invalid"),
    Cell("openrouter-cut", "OPENROUTER_API_KEY=", "sk-or-v1-{{hex:40}}", "", "openrouter-api-key", "invalid"),
    Cell("sk-placeholder-words", "LLM_API_KEY=", "sk-YourApiKeyGoesHereReplaceMe123", "", "sk-api-key", "redacted"),
    # A placeholder under a key name: the generic rule reports it as a placeholder, never blocking.
    Cell("sk-dashed-words", "LLM_API_KEY=", "sk-your-own-api-key-goes-here-1", "",
         "generic-secret-assignment", "redacted"),
    Cell("sk-css-classes", '<div class="', "sk-button-primary-2xl-rounded-corners", '">', None),
    Cell("sklearn", "pip install scikit-learn # ", "sk-learn", "", None),
    Cell("css-flag", "--", "sk-primary-color-2", ": #fff", None),
    Cell("task-ids", "", "task-{{hex:32}} disk-{{hex:32}} ask-{{alnum:32}}", "", None),
    Cell("sk-masked", "key: ", "sk-proj-{{alnum:24}}", "****{{alnum:4}}", None),
    Cell("sk-ellipsis", "OPENAI_API_KEY=", "sk-...", "", None),
    Cell("groq-placeholder", "GROQ_API_KEY=", "gsk_YourGroqApiKeyGoesHereReplaceMeWithTheRealOne1234567", "",
         "groq-api-key", "redacted"),
    Cell("aiza-prose", "Google API keys start with ", "AIza", " and are 39 characters long.", None),
    Cell("npm-config", "echo $", "npm_config_registry", " $npm_package_version", None),
    Cell("npm-bad-checksum", "NPM_TOKEN=", "npm_{{alnum:36}}", "", "npm-access-token", "invalid"),
    Cell("pypi-expired", "TWINE_PASSWORD=", "{{pypi:expired}}", "", "pypi-api-token", "expired"),
    Cell("pypi-cut", "TWINE_PASSWORD=", "{{pypi:broken}}", "", "pypi-api-token", "invalid"),
    Cell("onepassword-random", "OP_SERVICE_ACCOUNT_TOKEN=", "{{onepassword:broken}}", "",
         "onepassword-service-account-token", "invalid"),
    Cell("gitlab-placeholder", "GITLAB_TOKEN=", "glpat-YourGitLabTokenGoesHere", "", "gitlab-token", "redacted"),
    Cell("wandb-git-sha", "git checkout ", "{{hex:40}}", "  # after wandb login", None),
    Cell("mistral-env-read", 'Mistral(api_key=os.environ["', "MISTRAL_API_KEY", '"])', None),
    Cell("fw-identifiers", "", "fw_version", " = read(); fw_update_required()", None),
    Cell("vault-placeholder", "VAULT_TOKEN=", "hvs.xxxxxxxxxxxxxxxxxxxxxxxx", "", None),
    Cell("dashscope-zeros", "DASHSCOPE_API_KEY=", "sk-00000000000000000000000000000000", "", None),
    Cell("moonshot-placeholder", "MOONSHOT_API_KEY=", "sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "", None),
    Cell("xai-sdk", "pip install ", "xai-sdk", " xai-grok-client", None),
    Cell("perplexity-elided", "PERPLEXITY_API_KEY=", "pplx-...", "", None),
    Cell("replicate-register", "", "r8_register", " = 0x1f", None),
    Cell("tavily-placeholder", "TAVILY_API_KEY=", "tvly-YOUR_API_KEY", "", None),
    Cell("langsmith-zeros", "LANGSMITH_API_KEY=", "lsv2_pt_00000000000000000000000000000000_0000000000", "", None),
    Cell("pinecone-placeholder", "PINECONE_API_KEY=", "pcsk_xxxxx_" + "x" * 60, "", None),
    Cell("cerebras-css", ".btn { ", "--csk-accent", ": #fff }", None),
    Cell("cohere-placeholder", "COHERE_API_KEY=", "YourCohereApiKeyGoesHereReplaceThisValue1", "",
         "generic-secret-assignment", "redacted"),  # a placeholder under a key name: reported as one
    Cell("elevenlabs-env-read", 'headers = {"xi-api-key": ', "api_key", "}", None),
    Cell("databricks-zeros", "DATABRICKS_TOKEN=", "dapi00000000000000000000000000000000", "", None),
    Cell("kaggle-model-folder", "cd recommendation/", "KGAT_for_ACL", " && ls", None),
    Cell("kaggle-variable-name", "WHITELIST = {'", "KGAT_TOKEN", "', 'KAGGLE_JSON'}", None),
    Cell("kaggle-json-other-field", '{"username": "dsmith", "id": "', "{{hex:32}}", '"}', None),
    Cell("kaggle-key-from-secrets", 'os.environ["KAGGLE_KEY"] = ', 'userdata.get("KAGGLE_KEY")', "", None),
    Cell("gitlab-prose", "tokens start with ", "glpat-", " (personal) or gldt- (deploy)", None),
    Cell("docker-placeholder", "DOCKERHUB_TOKEN=", "dckr_pat_xxxxxxxxxxxxxxxxxxxxxxxxxxx", "", None),
    Cell("atlassian-elided", "JIRA_API_TOKEN=", "ATATT3xFfGF0...", "", None),
    Cell("bitbucket-word", "", "ATBBREVIATION", "", None),
    Cell("terraform-prose", "the token has the form ", "<id>.atlasv1.<secret>", "", None),
    Cell("doppler-prose", "tokens look like ", "dp.st.<config>.<secret>", "", None),
    Cell("pulumi-short", "git log ", "pul-{{hex:12}}", "", None),
    Cell("pypi-elided", "TWINE_PASSWORD=", "pypi-AgEIcHlwaS5vcmc...", "", "password-assignment", "redacted"),
    Cell("onepassword-elided", "OP_SERVICE_ACCOUNT_TOKEN=", "ops_eyJ...", "", None),
    Cell("openai-placeholder", "OPENAI_API_KEY=", "sk-proj-your-openai-key-T3BlbkFJ-goes-here-please", "",
         "openai-api-key", "redacted"),
]

BLOCKING = {"valid", "unverified"}


def _materialise(cells: list[Cell]) -> list[tuple[Cell, str, str]]:
    """(cell, text, secret) with the templates expanded, one seed per cell."""
    out = []
    for cell in cells:
        secret = expand(cell.secret, seed=cell.name)
        after = expand(cell.after, seed=cell.name + ":after")
        out.append((cell, cell.before + secret + after, secret))
    return out


def _b64_form(cell: Cell, text: str, secret: str) -> str:
    if cell.var:
        return f"data:\n  {cell.var}: " + base64.b64encode(secret.encode()).decode()
    return "data: " + base64.b64encode(text.encode()).decode()


@pytest.fixture(scope="module")
def shard_report(tmp_path_factory):
    cells = _materialise(LIVE + TWINS)
    table = pa.table({
        "text": [text for _, text, _ in cells],
        "json": [json.dumps({"role": "tool", "content": text}) for _, text, _ in cells],
        "b64": [_b64_form(cell, text, secret) for cell, text, secret in cells],
    })
    path = tmp_path_factory.mktemp("llm-code") / "shard.parquet"
    pq.write_table(table, path)
    report = scan([str(path)], options=ScanOptions(now=NOW))
    return Scanned(cells, report, path)


@dataclass(frozen=True)
class Scanned:
    """The shard of every cell, where it was written, and its report."""

    cells: list
    report: object
    path: Path


def _at(report, row: int, column: str) -> list:
    return [f for f in report.findings if f.location.row == row and f.location.column == column]


@pytest.mark.parametrize("index", range(len(LIVE) + len(TWINS)), ids=[c.name for c in LIVE + TWINS])
def test_each_family_in_a_parquet_shard_as_written_json_escaped_and_base64(shard_report, index):
    cells, report = shard_report.cells, shard_report.report
    cell, text, secret = cells[index]
    for column in ("text", "json", "b64"):
        found = _at(report, index, column)
        if cell.rule is None:
            assert found == [], (column, [(f.rule_id, f.verdict) for f in found])
            continue
        assert [(f.rule_id, str(f.verdict)) for f in found] == [(cell.rule, cell.verdict)], column
        finding = found[0]
        assert finding.blocking == (cell.verdict in BLOCKING), column
        if column == "text":
            assert (finding.start, finding.end) == (text.index(secret), text.index(secret) + len(secret))
            assert finding.encoding == ()
        elif column == "json":
            escaped = json.dumps({"role": "tool", "content": text})
            start = escaped.index(json.dumps(secret)[1:-1])
            assert (finding.start, finding.end) == (start, start + len(json.dumps(secret)) - 2)
        else:
            assert "base64" in finding.encoding
            form = _b64_form(cell, text, secret)
            run = base64.b64encode((secret if cell.var else text).encode()).decode()
            assert (finding.start, finding.end) == (form.index(run), form.index(run) + len(run))
        assert secret not in finding.preview and secret not in finding.detail and secret not in finding.context


def test_the_shard_blocks_on_exactly_the_live_cells(shard_report):
    report = shard_report.report
    blocking_rows = sorted({f.location.row for f in report.findings if f.blocking})
    assert blocking_rows == list(range(len(LIVE)))
    assert {f.location.column for f in report.findings if f.blocking} == {"text", "json", "b64"}


# ---- one finding per sk- key: the fallback rule yields --------------------------------------------


@pytest.mark.parametrize("template, rule", [
    ("K={{anthropic:api03}}", "anthropic-api-key"),
    ("K={{anthropic:oat01}}", "anthropic-oauth-token"),
    ("K={{openai:sk-proj-}}", "openai-api-key"),
    ("K={{openai:sk-}}", "openai-api-key"),
    ("K=sk-{{alnum:12}}T3BlbkFJ{{alnum:28}}", "openai-api-key"),
    ("K=sk-or-v1-{{hex:64}}", "openrouter-api-key"),
    ("K=sk-{{hex:32}}", "sk-hex-api-key"),
    ("K=sk-{{alnum:48}}", "moonshot-api-key"),
    ("K=sk-{{alnum:50}}", "sk-api-key"),
])
def test_one_sk_key_gives_one_finding_of_the_most_specific_rule(template, rule):
    text = expand(template, seed=7)
    assert [f.rule_id for f in findings(text)] == [rule]


def test_the_fallback_still_reports_an_sk_key_a_specific_rule_misses():
    # An Anthropic session key: no sk-ant- rule knows sid01, so the fallback reports it.
    text = expand("cookie: sessionKey=sk-ant-sid01-{{b64url:86}}AA", seed=1)
    finding = only(text)
    assert (finding.rule_id, finding.verdict) == ("sk-api-key", Verdict.UNVERIFIED)
    assert "shape no specific rule knows" in finding.detail


def test_sk_key_detail_names_the_provider_the_text_names():
    text = expand("DASHSCOPE_API_KEY=sk-{{hex:32}}", seed=2)
    assert "the text names DashScope (Qwen)" in only(text).detail
    text = expand("key=sk-{{hex:32}}", seed=2)
    assert "the text names" not in only(text).detail


# ---- offline checks --------------------------------------------------------------------------------


def test_npm_checksum_is_githubs_scheme():
    token = npm_token(random.Random(3))
    assert verify(token, "npm-access-token").verdict == Verdict.VALID
    flipped = token[:-1] + ("A" if token[-1] != "A" else "B")
    bad = verify(flipped, "npm-access-token")
    assert (bad.verdict, bad.detail) == (
        Verdict.INVALID, "npm access token whose CRC32 checksum does not match: invented or mangled")


@pytest.mark.parametrize("arg, verdict, detail", [
    ("user", Verdict.VALID, "PyPI API token for the whole account (all projects): a well-formed macaroon"),
    ("legacy", Verdict.VALID, "PyPI API token for the whole account (all projects): a well-formed macaroon"),
    ("project", Verdict.VALID, "PyPI API token for upload to project(s) example-project: a well-formed macaroon"),
    ("test", Verdict.VALID, "TestPyPI API token for the whole account (all projects): a well-formed macaroon"),
    ("expired", Verdict.EXPIRED, "PyPI API token for the whole account (all projects), expired 2019-06-05"),
    ("broken", Verdict.INVALID, "PyPI token whose body is not a macaroon: invented or cut"),
])
def test_pypi_macaroon_is_decoded_offline(arg, verdict, detail):
    token = pypi_token(random.Random(arg), arg)
    outcome = verify(token, "pypi-api-token", now=NOW)
    assert (outcome.verdict, outcome.detail) == (verdict, detail)


def test_pypi_macaroon_parser_survives_hostile_bodies():
    rng = random.Random(5)
    for n in range(300):
        body = base64.urlsafe_b64encode(b"\x02" + rng.randbytes(n)).rstrip(b"=").decode()
        assert verify("pypi-AgE" + body, "pypi-api-token").verdict in (Verdict.INVALID, Verdict.VALID, Verdict.EXPIRED)


def test_onepassword_record_is_decoded_and_its_secret_fields_required():
    good = verify(expand("{{onepassword}}", seed=1), "onepassword-service-account-token")
    assert (good.verdict, good.detail) == (
        Verdict.VALID, "1Password service-account token for my.1password.com: decodes to a complete sign-in record")
    record = base64.urlsafe_b64encode(json.dumps({"signInAddress": "my.1password.com", "email": "a@b.c"}).encode())
    bad = verify("ops_" + record.decode().rstrip("="), "onepassword-service-account-token")
    assert (bad.verdict, bad.detail) == (
        Verdict.INVALID, "1Password service-account token without srpX, muk, secretKey: not a sign-in record")


def test_openai_name_part_is_not_a_broken_half():
    named = verify(expand("{{openai:sk-build-bot-}}", seed=3), "openai-api-key")
    assert named.verdict == Verdict.VALID
    assert "build-bot" not in named.detail
    # A longer left half without a name (no dash before the halves) is still invented.
    assert (verify(expand("sk-proj-{{alnum:80}}T3BlbkFJ{{alnum:74}}", seed=3), "openai-api-key").verdict
            == Verdict.INVALID)


# ---- every new kind through the reports, the allowlist and redact, with data only ---------------


def _cli(*args: str, cwd=None):
    return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
                          cwd=cwd or Path(__file__).resolve().parents[2])


def test_every_report_format_shows_the_new_kinds_and_never_a_secret(shard_report):
    cells, report = shard_report.cells, shard_report.report
    secrets = [secret for _, _, secret in cells if len(secret) >= 20]
    kinds = {f.kind for f in report.findings}
    for fmt in FORMATS:
        text = render(report, fmt)
        assert not any(secret in text for secret in secrets), fmt
        if fmt == "card":
            assert all(KIND_NAMES[kind] in text for kind in kinds)
        elif fmt in ("json", "jsonl", "sarif", "html"):
            assert all(cell.rule in text for cell in LIVE), fmt
    sarif = json.loads(render(report, "sarif"))
    sarif_rules = {rule["id"] for rule in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert {cell.rule for cell in LIVE} <= sarif_rules


@pytest.mark.slow
def test_allowlist_by_kind_and_redact_cover_the_new_kinds(shard_report, tmp_path):
    cells, report = shard_report.cells, shard_report.report
    data = tmp_path / "data"
    data.mkdir()
    (data / "shard.parquet").write_bytes(shard_report.path.read_bytes())
    blocking = [f for f in report.findings if f.blocking]
    entries = "\n".join(
        f"  - fingerprint: {fp}\n    rule: {kind}\n    reason: reviewed test fixture\n"
        "    reviewer: Test\n    reviewed: 2026-12-01"
        for fp, kind in sorted({(f.fingerprint, f.kind) for f in blocking})
    )
    allowlist = tmp_path / "allowlist.yaml"
    allowlist.write_text(f"version: 1\nentries:\n{entries}\n")
    proc = _cli("scan", str(data), "--allowlist", str(allowlist), "--now", "2026-12-02", "--format", "json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["summary"]["blocking"] == 0

    out = tmp_path / "clean"
    proc = _cli("redact", str(data), "--out", str(out), "--no-allowlist", "--now", "2026-12-02")
    assert proc.returncode == 0, proc.stderr[-2000:]
    redacted = pq.read_table(out / "shard.parquet").column("text").to_pylist()
    for index, (cell, _, secret) in enumerate(cells[: len(LIVE)]):
        assert secret not in redacted[index], cell.name
        assert f"[REDACTED:{_kind_at(report, index)}:" in redacted[index], cell.name
    proc = _cli("scan", str(out), "--no-allowlist", "--now", "2026-12-02", "--format", "json")
    assert proc.returncode == 0, proc.stdout[-2000:]


def _kind_at(report, row: int) -> str:
    return next(f.kind for f in report.findings if f.location.row == row and f.location.column == "text")


# ---- the keyword search in decoded binaries does not slow down with the keyword count -------------


@pytest.mark.parametrize("matcher", ["", "re2"])
def test_keyword_search_in_decoded_binaries_is_the_same_with_and_without_hyperscan(monkeypatch, matcher):
    from shardscan.decoders import KeywordSet
    from shardscan.ruleset import load_ruleset

    monkeypatch.setenv("SHARDSCAN_MATCHER", matcher)
    ruleset = load_ruleset()
    keywords = KeywordSet.build(ruleset.keywords, ruleset.token_keywords, ruleset.context_keywords)
    noise = random.Random(9).randbytes(30_000).replace(b"_", b"\x00").replace(b"-", b"\x00").replace(b".", b"\x00")
    assert keywords.in_binary(noise) is False
    assert keywords.in_binary(b"") is False
    for keyword in ("pypi-AgE", "glpat-", "dp.st.", ".atlasv1.", "WANDB_API_KEY"):
        assert keywords.in_binary(noise[:20_000] + keyword.encode() + noise[20_000:]) is True, keyword
        assert keywords.in_binary(noise + keyword.encode()) is True, keyword


# ---- fallback rules, as data --------------------------------------------------------------------


_ACME = """\
- id: acme-any
  kind: acme
  name: Acme token, any shape
  description: Any acme_ token.
  severity: high
  fallback: {fallback}
  keywords: [acme_]
  pattern: '(?P<secret>acme_[a-z0-9]{{16,40}})'
  examples: ['acme_{{{{hex:20}}}}']
- id: acme-live
  kind: acme
  name: Acme live token
  description: A live acme_ token.
  severity: critical
  keywords: [acme_live]
  pattern: '(?P<secret>acme_live[a-z0-9]{{20}})'
  examples: ['acme_live{{{{hex:20}}}}']
"""


def test_a_fallback_rule_yields_to_an_overlapping_specific_rule_of_any_length(tmp_path):
    from shardscan.engine import Scanner
    from shardscan.ruleset import load_ruleset

    path = tmp_path / "acme.yaml"
    path.write_text(_ACME.format(fallback="true"))
    scanner = Scanner(load_ruleset([path], builtin=False))
    live = "acme_live" + "0123456789abcdef9876"
    # The fallback's match runs on past the specific one: still one finding, the specific rule's.
    findings, _ = scanner.scan_text(f"t={live}ffff and acme_{'5a' * 10}")
    assert [(f.rule_id, f.start) for f in findings] == [("acme-live", 2), ("acme-any", 40)]
    # Without the flag, the longer match of the general rule swallows the specific one.
    path.write_text(_ACME.format(fallback="false"))
    findings, _ = Scanner(load_ruleset([path], builtin=False)).scan_text(f"t={live}ffff")
    assert [f.rule_id for f in findings] == ["acme-any"]


def test_fallback_must_be_a_boolean(tmp_path):
    from shardscan.errors import ConfigError
    from shardscan.ruleset import load_rule_file

    path = tmp_path / "acme.yaml"
    path.write_text(_ACME.format(fallback="'yes'"))
    with pytest.raises(ConfigError, match="acme.yaml: acme-any: 'fallback' must be true or false"):
        load_rule_file(path)


def test_short_urlsafe_sk_keys_are_reported_whatever_their_dashes_and_underscores():
    # A proxy's virtual key (LiteLLM's is sk- and secrets.token_urlsafe(16)): 22 characters of
    # base64url, so a dash or an underscore often breaks every 16-character alphanumeric run, and
    # some have no digit. Each of 200 seeded keys is one finding of the fallback rule.
    rng = random.Random(25)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    missed = []
    for _ in range(200):
        key = "sk-" + "".join(rng.choice(alphabet) for _ in range(22))
        found = [(f.rule_id, f.preview) for f in findings(f"LITELLM_MASTER_KEY={key}\n")]
        if [rule for rule, _ in found] != ["sk-api-key"]:
            missed.append(found)
    assert len(missed) <= 2, missed


def _letters(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") for _ in range(n))


@pytest.mark.parametrize("body", [
    "{{alnum:6}}-7{{alnum:6}}_{{alnum:5}}",            # separators every few characters, a digit
    f"{_letters(3, 13)}-{_letters(4, 10)}",            # no digit at all, mixed case throughout
])
def test_sk_keys_without_a_long_alphanumeric_run_are_reported(body):
    text = expand(f"api_key = 'sk-{body}'", seed=3)
    assert [f.rule_id for f in findings(text)] == ["sk-api-key"]


@pytest.mark.parametrize("text", [
    "see sk-learn-compat-layer-v2-2024 in the docs",
    "--sk-primary-color-Dark-Mode: #222",
    "<div class='sk-ButtonPrimary-LargeRounded'>",
])
def test_kebab_and_camel_case_names_after_sk_are_not_keys(text):
    assert findings(text) == []


def test_a_vault_token_without_a_digit_is_reported_and_an_identifier_is_not():
    token = f"hvs.{_letters(5, 12)}{_letters(6, 12)}"
    assert [f.rule_id for f in findings(f"export VAULT_TOKEN={token}\n")] == ["vault-token"]
    assert findings("see hvs.some_configured_token_name_for_tests\n") == []

"""Cloud, messaging, payments and SaaS credentials: one cell per family with a live-shaped value
(blocking, at its exact span) and one per harmless twin (reported non-blocking, or not reported),
scanned in a Parquet shard, JSON-escaped and base64-encoded; and each offline check on its own."""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.model import Finding, Verdict
from shardscan.synth import (
    age_secret_key,
    discord_bot_token,
    expand,
    gcp_service_account,
    grafana_cloud_token,
    jwt,
    sentry_org_token,
)
from shardscan.verifiers.age import bech32_valid
from tests.conftest import FIXED_NOW
from tests.verifier_helpers import findings, only, verify


@dataclass(frozen=True)
class Live:
    """A live-shaped credential: the cell is ``before + secret + after`` and the finding spans ``secret``."""

    rule: str
    before: str
    secret: str  # a template
    after: str = ""
    verdict: Verdict = Verdict.UNVERIFIED
    # For a credential recognised by the name it is assigned to: the name a base64-encoded value
    # stands under (a Kubernetes Secret's data), since the encoded value alone does not name it.
    label: str = ""

    def cell(self, seed: int) -> tuple[str, str]:
        """The cell text and the secret in it."""
        before, secret, after = (expand(part, seed=f"{self.rule}:{seed}:{n}")
                                 for n, part in enumerate((self.before, self.secret, self.after)))
        return before + secret + after, secret


LIVE = [
    Live("gcp-service-account", "$ cat key.json\n", "{{gcp_sa}}", "\n$ ", Verdict.VALID),
    Live("azure-storage-account-key", "DefaultEndpointsProtocol=https;AccountName=logs;AccountKey=",
         "{{azure_storage}}", ";EndpointSuffix=core.windows.net"),
    Live("azure-shared-access-key", "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=send;"
         "SharedAccessKey=", "{{b64:43}}=", ";EntityPath=events"),
    Live("azure-ad-client-secret", "AZURE_CLIENT_SECRET=", "{{alnum:3}}8Q~{{alnum:34}}", label="AZURE_CLIENT_SECRET"),
    Live("azure-sas-token", "https://acmedata.blob.core.windows.net/exports/train.parquet?sp=rw&se=2099-12-01T17:00:00Z"
         "&spr=https&sv=2022-11-02&sr=b&sig=", "{{b64:43}}%3D"),
    Live("digitalocean-token", "export DIGITALOCEAN_TOKEN=", "dop_v1_{{hex:64}}"),
    Live("alibaba-access-key-id", "ALIBABA_CLOUD_ACCESS_KEY_ID=", "LTAI{{alnum:20}}"),
    Live("alibaba-access-key-secret", "accessKeySecret: ", "{{alnum:30}}", label="accessKeySecret"),
    Live("heroku-api-key", "HEROKU_API_KEY=", "HRKU-AA{{alnum:58}}"),
    Live("heroku-api-key-uuid", "$ heroku auth:token\n", "{{hex:8}}-{{hex:4}}-4{{hex:3}}-a{{hex:3}}-{{hex:12}}", "\n",
         label="HEROKU_API_KEY"),
    Live("supabase-token", "SUPABASE_ACCESS_TOKEN=", "sbp_{{hex:40}}"),
    Live("jwt", "SUPABASE_SERVICE_ROLE_KEY=", "{{jwt_role}}", "", Verdict.VALID),
    Live("vercel-token", "npx vercel deploy --prod --token ", "{{alnum:24}}", label="VERCEL_TOKEN"),
    Live("netlify-token", "NETLIFY_AUTH_TOKEN=", "nfp_{{alnum:36}}"),
    Live("netlify-auth-token", "NETLIFY_AUTH_TOKEN=", "{{alnum:43}}", label="NETLIFY_AUTH_TOKEN"),
    Live("vercel-prefixed-token", "VERCEL_TOKEN=", "vcp_{{alnum:56}}"),
    Live("flyio-token", 'FLY_API_TOKEN="FlyV1 ', "fm2_{{b64:120}},fm2_{{b64:80}}", '"'),
    Live("cloudflare-api-token", "CLOUDFLARE_API_TOKEN=", "{{alnum:40}}", label="CLOUDFLARE_API_TOKEN"),
    Live("cloudflare-origin-ca-key", "CF_ORIGIN_CA_KEY=", "v1.0-{{hex:24}}-{{hex:146}}"),
    Live("slack-token", "SLACK_BOT_TOKEN=", "{{slack:bot}}"),
    Live("slack-token", "SLACK_APP_TOKEN=", "{{slack:app}}"),
    Live("slack-webhook", "curl -d @msg.json https://hooks.slack.com/services/", "{{slack:webhook}}"),
    Live("discord-bot-token", "DISCORD_TOKEN=", "{{discord_bot}}", label="DISCORD_TOKEN"),
    Live("discord-webhook", "https://discord.com/api/webhooks/", "{{discord_id}}/{{alnum:68}}"),
    Live("telegram-bot-token", "curl https://api.telegram.org/bot", "{{digits:10}}:AA{{alnum:33}}", "/getMe"),
    Live("stripe-secret-key", "STRIPE_SECRET_KEY=", "sk_live_51{{alnum:97}}"),
    Live("stripe-secret-key", "STRIPE_RESTRICTED_KEY=", "rk_live_51{{alnum:97}}"),
    Live("sendgrid-api-key", "SENDGRID_API_KEY=", "SG.{{alnum:22}}.{{alnum:43}}"),
    Live("twilio-api-key", "TWILIO_API_KEY=", "SK{{hex:32}}", label="TWILIO_API_KEY"),
    Live("twilio-auth-token", "curl https://api.twilio.com/2010-04-01/Accounts.json -u AC{{hex:32}}:", "{{hex:32}}",
         label="TWILIO_AUTH_TOKEN"),
    Live("mailgun-api-key", "MAILGUN_API_KEY=", "key-{{hex:32}}", label="MAILGUN_API_KEY"),
    Live("mailchimp-api-key", "MAILCHIMP_API_KEY=", "{{hex:32}}-us21"),
    Live("shopify-token", "SHOPIFY_ACCESS_TOKEN=", "shpat_{{hex:32}}"),
    Live("notion-token", "NOTION_TOKEN=", "ntn_{{digits:11}}{{alnum:35}}"),
    Live("notion-token", 'notion = Client(auth="', "secret_{{alnum:43}}", '")', label="NOTION_TOKEN"),
    Live("linear-api-key", "LINEAR_API_KEY=", "lin_api_{{alnum:40}}"),
    Live("postman-api-key", "POSTMAN_API_KEY=", "PMAK-{{hex:24}}-{{hex:34}}"),
    Live("sentry-token", "SENTRY_AUTH_TOKEN=", "{{sentry:acme}}"),
    Live("sentry-dsn", "SENTRY_DSN=https://", "{{hex:32}}:{{hex:32}}", "@sentry.acme-corp.dev/12",
         label="SENTRY_DSN"),
    Live("newrelic-key", "NEW_RELIC_API_KEY=", "NRAK-{{upper_alnum:27}}"),
    Live("datadog-api-key", "DD_API_KEY=", "{{hex:32}}", label="DD_API_KEY"),
    Live("grafana-token", "GRAFANA_CLOUD_TOKEN=", "{{grafana_cloud}}"),
    Live("age-secret-key", "# public key: age1{{alnum:58}}\n", "{{age}}", "\n", Verdict.VALID),
]

# Harmless twins: (template, rule, verdict) with verdict None when nothing may be reported.
TWINS = [
    ('{"type": "service_account", "project_id": "p", "client_email": "sa@p.iam.gserviceaccount.com"}', None, None),
    ('AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==',
     "azure-storage-account-key", Verdict.EXAMPLE),
    ("AZURE_CLIENT_SECRET=abc8Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", None, None),
    ("Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;"
     "SharedAccessKey=<key>", None, None),
    ("https://acmedata.blob.core.windows.net/c/f?sp=r&se=2024-01-31&sv=2022-11-02&sr=b&sig={{b64:43}}%3D",
     "azure-sas-token", Verdict.EXPIRED),
    ("https://acmedata.blob.core.windows.net/c/f?sp=r&se=2099-01-31&sv=2022-11-02&sr=b&sig={{b64:40}}",
     "azure-sas-token", Verdict.INVALID),
    ("DIGITALOCEAN_TOKEN=dop_v1_" + "0" * 64, None, None),
    ("the LTAIL quarterly report", None, None),
    ("HEROKU_API_KEY=HRKU-" + "x" * 60, None, None),
    ("request_id={{hex:8}}-{{hex:4}}-4{{hex:3}}-a{{hex:3}}-{{hex:12}}", None, None),
    ("SUPABASE_ANON_KEY={{jwt_role:anon}}", "jwt", Verdict.VALID),  # high, not critical: checked below
    ("vercel deploy --token $VERCEL_TOKEN", None, None),
    ("NETLIFY_AUTH_TOKEN=${{ secrets.NETLIFY_AUTH_TOKEN }}", None, None),
    ("fm2_config_loader = load()", None, None),
    ("CLOUDFLARE_API_TOKEN=your-cloudflare-api-token-goes-here-1234", "cloudflare-api-token", Verdict.REDACTED),
    ("release v1.0-beta of the tool", None, None),
    ("xoxo, see you tomorrow! xoxb-your-bot-token", None, None),
    ("https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", None, None),
    ("DISCORD_BOT_TOKEN=NT{{alnum:22}}.{{alnum:6}}.{{alnum:38}}", "discord-bot-token", Verdict.INVALID),
    ("https://discord.com/api/webhooks/{webhook.id}/{webhook.token}", None, None),
    ("TELEGRAM_BOT_TOKEN=123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", None, None),
    ("STRIPE_SECRET_KEY=sk_test_51{{alnum:97}}", "stripe-secret-key", Verdict.TEST_MODE),
    ("STRIPE_RESTRICTED_KEY=rk_test_51{{alnum:97}}", "stripe-secret-key", Verdict.TEST_MODE),
    ('Stripe("pk_live_51{{alnum:97}}")', "stripe-publishable-key", Verdict.TEST_MODE),
    ("STRIPE_PUBLISHABLE_KEY=pk_test_51{{alnum:97}}", "stripe-publishable-key", Verdict.TEST_MODE),
    ("Visit SG.Singapore for details. SG.MAIN_MODULE loaded.", None, None),
    ("SKU SK{{hex:32}} in stock", None, None),
    ("TWILIO_ACCOUNT_SID=AC{{hex:32}}", None, None),
    # (A 32-hex value under a credential name such as auth_token is a generic secret: see test_unprefixed.)
    ("trace_id = {{hex:32}}", None, None),
    ("cache key-{{hex:32}} evicted", None, None),
    ("region en-us1 selected", None, None),
    ("shpat_token_refresh()", None, None),
    ("secret_key_base = Rails.application.credentials.secret_key_base", None, None),
    ("secret_{{alnum:43}}", None, None),
    ("lin_api_client = LinearClient()", None, None),
    ("SENTRY_AUTH_TOKEN=sntrys_{{alnum:120}}_{{alnum:43}}", "sentry-token", Verdict.INVALID),
    ('sentry_sdk.init(dsn="https://{{hex:32}}@o{{digits:6}}.ingest.us.sentry.io/{{digits:7}}")', "sentry-dsn",
     Verdict.TEST_MODE),
    ("NEW_RELIC_API_KEY=NRAK-XXXXXXXXXXXXXXXXXXXXXXXXXXX", None, None),
    ("DD_API_KEY=${DD_API_KEY}", None, None),
    ("glc_config = load_config()", None, None),
    ("GRAFANA_CLOUD_TOKEN=glc_{{alnum:60}}", "grafana-token", Verdict.INVALID),
    ("SOPS_AGE_KEY=AGE-SECRET-KEY-1{{upper_alnum:58}}", "age-secret-key", Verdict.INVALID),
]


def _shard(tmp_path, name: str, cells: list[str]) -> str:
    folder = tmp_path / name
    folder.mkdir()
    pq.write_table(pa.table({"text": pa.array(cells, pa.string())}), folder / "train-00000.parquet")
    return str(folder)


def _by_row(found: list[Finding]) -> dict[int, list[Finding]]:
    rows: dict[int, list[Finding]] = {}
    for finding in found:
        rows.setdefault(finding.location.row, []).append(finding)
    return rows


@pytest.fixture(scope="module")
def live_cells() -> list[tuple[str, str]]:
    return [case.cell(i) for i, case in enumerate(LIVE)]


def test_every_family_has_a_live_cell_and_a_twin():
    rules = {case.rule for case in LIVE}
    assert len(rules) == 40  # every new rule but the publishable key (a twin by nature), plus jwt's service role
    assert {rule for _, rule, _ in TWINS if rule} <= rules | {"stripe-publishable-key"}


@pytest.mark.slow
def test_live_cells_in_a_parquet_shard_block_at_their_exact_span(tmp_path, live_cells):
    report = scan([_shard(tmp_path, "live", [cell for cell, _ in live_cells])], options=ScanOptions(now=FIXED_NOW))
    assert report.exit_code == 1
    rows = _by_row(report.findings)
    for row, (case, (cell, secret)) in enumerate(zip(LIVE, live_cells, strict=True)):
        got = [(f.rule_id, f.location.column, f.start, f.end, f.verdict, f.blocking) for f in rows.get(row, [])]
        start = cell.index(secret)
        assert got == [(case.rule, "text", start, start + len(secret), case.verdict, True)], (case.rule, got)
        assert cell[start : start + len(secret)] == secret
        # Reports carry a preview, never the secret.
        assert secret not in rows[row][0].preview


def test_harmless_twins_never_block(tmp_path):
    cells = [expand(template, seed=i) for i, (template, _, _) in enumerate(TWINS)]
    report = scan([_shard(tmp_path, "twins", cells)], options=ScanOptions(now=FIXED_NOW))
    rows = _by_row(report.findings)
    for row, (template, rule, verdict) in enumerate(TWINS):
        got = [(f.rule_id, f.verdict, f.blocking) for f in rows.get(row, [])]
        expected = [] if rule is None else [(rule, verdict, rule == "jwt")]
        assert got == expected, (template, got)
    # The anon key of a Supabase project is a JWT like the service-role key, but not critical.
    anon = rows[TWINS.index(next(t for t in TWINS if "jwt_role:anon" in t[0]))][0]
    assert anon.severity == "high"
    assert report.exit_code == 1  # only that anon JWT (a bearer token) blocks


def test_harmless_twins_never_block_json_escaped_or_base64(tmp_path):
    cells = [expand(template, seed=i) for i, (template, _, _) in enumerate(TWINS)]
    encoded = [json.dumps({"type": "tool_result", "content": f"$ cat .env\n{cell}\n"}) for cell in cells]
    encoded += ["payload: " + base64.b64encode(cell.encode()).decode() for cell in cells]
    report = scan([_shard(tmp_path, "twins-encoded", encoded)], options=ScanOptions(now=FIXED_NOW))
    anon = [i for i, t in enumerate(TWINS) if "jwt_role:anon" in t[0]][0]
    assert sorted({f.location.row for f in report.blocking}) == [anon, len(TWINS) + anon]
    assert {f.rule_id for f in report.blocking} == {"jwt"}
    # The test-mode twins are still reported, with their verdict, through both decodings (a Sentry
    # DSN in base64 too: its URL with a key in the userinfo selects the cell, as connection strings do).
    test_mode = {(f.location.row, f.rule_id) for f in report.findings if f.verdict == Verdict.TEST_MODE}
    expected = {(i, rule) for i, (_, rule, verdict) in enumerate(TWINS) if verdict == Verdict.TEST_MODE}
    assert test_mode == expected | {(i + len(TWINS), rule) for i, rule in expected}


def test_live_cells_json_escaped_inside_a_tool_output(tmp_path, live_cells):
    cells = [json.dumps({"type": "tool_result", "content": f"$ env\n{cell}\n"}) for cell, _ in live_cells]
    report = scan([_shard(tmp_path, "escaped", cells)], options=ScanOptions(now=FIXED_NOW))
    rows = _by_row(report.findings)
    for row, case in enumerate(LIVE):
        got = [(f.rule_id, f.verdict, f.blocking) for f in rows.get(row, [])]
        assert got == [(case.rule, case.verdict, True)], (case.rule, got)


def test_live_cells_base64_encoded(tmp_path, live_cells):
    cells = [
        f"data:\n  {case.label}: "
        + base64.b64encode((secret if case.label != "SENTRY_DSN" else cell[11:]).encode()).decode()
        if case.label else "payload: " + base64.b64encode(cell.encode()).decode()
        for case, (cell, secret) in zip(LIVE, live_cells, strict=True)
    ]
    report = scan([_shard(tmp_path, "base64", cells)], options=ScanOptions(now=FIXED_NOW))
    rows = _by_row(report.findings)
    for row, case in enumerate(LIVE):
        got = [(f.rule_id, f.verdict, f.blocking, "base64" in f.encoding) for f in rows.get(row, [])]
        assert got == [(case.rule, case.verdict, True, True)], (case.rule, got)


# ---- the offline checks, one by one ---------------------------------------------------------------


def test_gcp_key_file_is_one_finding_with_the_private_keys_fingerprint():
    rng = random.Random(7)
    styles = {style: gcp_service_account(rng, style) for style in ("", "compact", "sorted")}
    found = {style: only(f"$ cat key.json\n{text}\n") for style, text in styles.items()}
    # One unit: the PEM inside is not reported again as a private-key finding.
    assert {f.rule_id for f in found.values()} == {"gcp-service-account"}
    assert all(f.verdict == Verdict.VALID and f.severity == "critical" for f in found.values())
    # The same key printed three ways is one secret (the fingerprint is the private key's).
    assert len({f.fingerprint for f in found.values()}) == 1
    detail = found[""].detail
    assert detail.startswith("GCP service-account key file (project proj-") and "RSA 2048-bit private key" in detail
    assert "deployer@" not in detail  # the account's name stays out; its domain names the project


def test_gcp_key_file_with_a_broken_or_elided_key():
    text = gcp_service_account(random.Random(8), "compact")
    body_start = text.index("-----BEGIN PRIVATE KEY-----\\n") + len("-----BEGIN PRIVATE KEY-----\\n")
    mangled = text[: body_start + 40] + "AAAA" + text[body_start + 44 :]
    assert only(mangled).verdict == Verdict.INVALID
    elided = ('{"type": "service_account", "project_id": "demo", '
              '"private_key": "-----BEGIN PRIVATE KEY-----\\n...\\n-----END PRIVATE KEY-----\\n"}')
    assert only(elided, "gcp-service-account").verdict == Verdict.REDACTED


def test_service_role_jwt_is_critical_anon_is_not():
    rng = random.Random(3)
    service = only("SUPABASE_SERVICE_ROLE_KEY=" + jwt(rng, exp=4_102_444_800, iss="supabase", role="service_role"))
    assert (service.rule_id, service.verdict, service.severity) == ("jwt", Verdict.VALID, "critical")
    assert service.detail.endswith("role service_role: a Supabase service key, bypasses row-level security")
    anon = only("SUPABASE_ANON_KEY=" + jwt(rng, exp=4_102_444_800, iss="supabase", role="anon"))
    assert (anon.verdict, anon.severity) == (Verdict.VALID, "high")
    expired = only("KEY=" + jwt(rng, exp=1_600_000_000, iss="supabase", role="service_role"))
    assert (expired.verdict, expired.severity) == (Verdict.EXPIRED, "low")


def test_azure_storage_key_must_be_64_random_bytes():
    key = base64.b64encode(random.Random(1).randbytes(64)).decode()
    assert verify(key, "azure-storage-account-key").verdict == Verdict.UNVERIFIED
    text = base64.b64encode(b"an account key is sixty-four random bytes: this text is not a key"[:64]).decode()
    assert len(text) == 88
    outcome = verify(text, "azure-storage-account-key")
    assert (outcome.verdict, outcome.detail) == (
        Verdict.INVALID, "decodes to readable text, not 64 random bytes: not an account key")
    assert verify(key[:-4] + "A===", "azure-storage-account-key").verdict == Verdict.INVALID


def test_azure_shared_access_key_is_32_random_bytes_and_names_its_namespace():
    key = base64.b64encode(random.Random(2).randbytes(32)).decode()
    text = f"Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={key}"
    finding = only(text, "azure-shared-access-key")
    assert (finding.verdict, finding.start) == (Verdict.UNVERIFIED, text.index(key))
    assert "for acme-bus.servicebus.windows.net" in finding.detail and key not in finding.detail
    readable = base64.b64encode(b"thirty-two bytes of plain text!!").decode()
    assert verify(readable, "azure-shared-access-key").verdict == Verdict.INVALID
    assert verify(base64.b64encode(random.Random(3).randbytes(31)).decode() + "=", "azure-shared-access-key").verdict \
        == Verdict.INVALID


def test_azure_sas_signature_is_an_hmac_and_its_url_states_the_expiry():
    signature = base64.b64encode(random.Random(5).randbytes(32)).decode()
    encoded = signature.replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    query = "?sv=2022-11-02&ss=b&srt=co&sp=rl&se=2027-03-01T00%3A00%3A00Z&"
    live = verify(encoded, "azure-sas-token", query=query)
    assert (live.verdict, live.detail) == (Verdict.UNVERIFIED, "Azure shared access signature, permissions sp=rl, "
                                           "valid until 2027-03-01; grants what it signs until then or until its key "
                                           "is rotated")
    expired = verify(signature, "azure-sas-token", query=query.replace("2027", "2025"))
    assert (expired.verdict, expired.detail) == (Verdict.EXPIRED, "Azure shared access signature, permissions sp=rl, "
                                                 "expired 2025-03-01 (1 year ago)")
    assert verify(signature, "azure-sas-token", query="?sv=2022-11-02&").verdict == Verdict.UNVERIFIED
    short = base64.b64encode(random.Random(6).randbytes(20)).decode()
    assert verify(short, "azure-sas-token", query=query).verdict == Verdict.INVALID
    assert verify(expand("{{alnum:20}}-{{alnum:21}}"), "azure-sas-token", query=query).verdict == Verdict.INVALID


def test_discord_bot_token_first_segment_must_be_a_snowflake():
    token = discord_bot_token(random.Random(2))
    good = only(f"DISCORD_TOKEN={token}")
    assert good.verdict == Verdict.UNVERIFIED and good.detail.startswith("Discord bot token of user id ")
    head, rest = token.split(".", 1)
    words = "NT" + base64.urlsafe_b64encode(b"notanumericidatall").decode().rstrip("=")[2:]
    assert verify(f"{words}.{rest}", "discord-bot-token").verdict == Verdict.INVALID
    # A numeric id dated in the future is not a minted id either.
    future = base64.urlsafe_b64encode(str(5_000_000_000_000 << 22).encode()).decode().rstrip("=")
    assert "outside Discord's lifetime" in verify(f"{future}.{rest}", "discord-bot-token").detail


def test_slack_token_structure():
    assert verify(expand("{{slack:user}}"), "slack-token").verdict == Verdict.UNVERIFIED
    bad = verify(expand("xoxp-{{digits:12}}-{{digits:12}}-{{alnum:10}}"), "slack-token")
    assert (bad.verdict, bad.detail) == (
        Verdict.INVALID, "Slack token (xoxp-) whose parts do not have the documented lengths: invented or cut")


def test_stripe_reasons():
    live = expand("sk_live_51{{alnum:97}}")
    assert verify(live, "stripe-secret-key").detail.startswith("Stripe live secret key")
    test = verify(expand("sk_test_51{{alnum:97}}"), "stripe-secret-key")
    assert (test.verdict, test.detail) == (Verdict.TEST_MODE, "Stripe test-mode secret key: no live data or money")
    publishable = verify(expand("pk_live_51{{alnum:97}}"), "stripe-publishable-key")
    assert (publishable.verdict == Verdict.TEST_MODE
            and "publishable key (live mode): meant for browsers" in publishable.detail)
    assert only("STRIPE_SECRET_KEY=" + expand("sk_test_51{{alnum:97}}")).severity == "low"


def test_sentry_token_payload_decoded_offline():
    token = sentry_org_token(random.Random(4), "initech")
    found = only(f"SENTRY_AUTH_TOKEN={token}")
    assert found.verdict == Verdict.UNVERIFIED
    assert found.detail.startswith("Sentry organisation token of org initech (https://us.sentry.io)")
    assert token.rsplit("_", 1)[1][:8] not in found.detail
    prefix, payload, secret = token.split("_")
    broken = f"{prefix}_{payload[:-7]}_{secret}"  # the payload cut: no longer base64
    assert verify(f"{prefix}_{'QUJD' * 10}_{secret}", "sentry-token").verdict == Verdict.INVALID
    assert verify(broken, "sentry-token").verdict == Verdict.INVALID


def test_grafana_cloud_token_payload_decoded_offline():
    token = grafana_cloud_token(random.Random(5))
    outcome = verify(token, "grafana-token")
    assert outcome.verdict == Verdict.UNVERIFIED and "region prod-us-east-0" in outcome.detail
    payload = json.loads(base64.b64decode(token[4:]))
    assert payload["k"] not in outcome.detail
    assert verify("glc_" + base64.b64encode(b'{"o": "1"}').decode(), "grafana-token").verdict == Verdict.INVALID


def test_age_key_bech32_checksum():
    key = age_secret_key(random.Random(6))
    assert bech32_valid(key)
    assert only(f"SOPS_AGE_KEY={key}").verdict == Verdict.VALID
    alphabet = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
    changed = key[:30] + alphabet[(alphabet.index(key[30]) + 1) % 32] + key[31:]
    outcome = verify(changed, "age-secret-key")
    assert outcome.verdict == Verdict.INVALID and "bech32 checksum does not match" in outcome.detail


def test_context_anchored_families_need_their_name():
    # The same values, first bare (32 hex, SK+32 hex, key-+32 hex, secret_+43, a Discord-shaped
    # token, 40 characters), then under the names that identify them.
    values = [expand(t, seed=i) for i, t in enumerate(
        ["{{hex:32}}", "SK{{hex:32}}", "key-{{hex:32}}", "secret_{{alnum:43}}", "{{discord_bot}}", "{{alnum:40}}"])]
    assert findings("build " + " ".join(values)) == []
    named = (f"DD_API_KEY={values[0]}\nTWILIO_API_KEY={values[1]}\nMAILGUN_API_KEY={values[2]}\n"
             f"NOTION_TOKEN={values[3]}\nDISCORD_TOKEN={values[4]}\nCLOUDFLARE_API_TOKEN={values[5]}\n")
    assert [f.rule_id for f in findings(named)] == [
        "datadog-api-key", "twilio-api-key", "mailgun-api-key", "notion-token", "discord-bot-token",
        "cloudflare-api-token"]


def test_no_full_secret_in_any_detail():
    for i, case in enumerate(LIVE):
        cell, secret = case.cell(i)
        for found in findings(cell, now=datetime(2026, 12, 2, tzinfo=UTC)):
            assert secret not in found.detail and secret not in found.preview, case.rule


# ---- every new kind through every output, the allowlist and redact (data only) --------------------


@pytest.mark.slow
def test_every_new_kind_in_every_format_the_allowlist_and_redact(tmp_path, live_cells):
    import subprocess
    import sys
    from pathlib import Path

    from shardscan.allowlist import parse_allowlist
    from shardscan.reporters import FORMATS, render
    from shardscan.reporters._common import KIND_NAMES

    folder = _shard(tmp_path, "kinds", [cell for cell, _ in live_cells])
    secrets = [secret for _, secret in live_cells]
    report = scan([folder], options=ScanOptions(now=FIXED_NOW))
    kinds = {f.kind for f in report.findings} - {"jwt"}
    assert len(kinds) == 27 and kinds <= set(KIND_NAMES)
    for fmt in FORMATS:
        text = render(report, fmt)
        assert not any(secret in text for secret in secrets), fmt
        if fmt == "sarif":
            rules = {r["id"] for r in json.loads(text)["runs"][0]["tool"]["driver"]["rules"]}
            assert {case.rule for case in LIVE} <= rules
        if fmt == "card":
            assert all(KIND_NAMES[kind] in text for kind in kinds)
    # The allowlist narrows by kind: every finding accepted under its own kind, none under another.
    entries = "".join(
        f"  - fingerprint: {f.fingerprint}\n    rule: {f.kind}\n    reason: reviewed test value\n"
        f"    reviewer: alice\n    reviewed: 2026-11-01\n" for f in report.findings
    )
    allowed = scan([folder], options=ScanOptions(now=FIXED_NOW),
                   allowlist=parse_allowlist(f"version: 1\nentries:\n{entries}"))
    assert allowed.exit_code == 0 and not allowed.blocking
    wrong = entries.replace("rule: slack\n", "rule: discord\n")
    partly = scan([folder], options=ScanOptions(now=FIXED_NOW),
                  allowlist=parse_allowlist(f"version: 1\nentries:\n{wrong}"))
    assert sorted(f.rule_id for f in partly.blocking) == ["slack-token", "slack-token", "slack-webhook"]
    # redact writes a copy holding none of the secrets.
    out = tmp_path / "clean"
    proc = subprocess.run([sys.executable, "-m", "shardscan.cli", "redact", folder, "--out", str(out),
                           "--now", "2026-12-02"],
                          capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2])
    assert proc.returncode == 0, proc.stderr[-500:]
    cleaned = pq.read_table(out / "train-00000.parquet").column("text").to_pylist()
    assert len(cleaned) == len(LIVE)
    assert not any(secret in cell for secret in secrets for cell in cleaned)

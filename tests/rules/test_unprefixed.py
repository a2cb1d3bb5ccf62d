"""Credentials without a vendor prefix, through a Parquet shard: each live-shaped case found at its
exact (row, column, span) with the right rule, kind, verdict and blocking state; each harmless twin
reported non-blocking or not at all; the same through JSON escapes, percent-encoding and base64
(Kubernetes Secret ``data:``); a docker-compose file whose passwords are local-only."""

from __future__ import annotations

import base64
import json
import random
from dataclasses import dataclass
from urllib.parse import quote

import pytest

from shardscan.api import scan
from shardscan.engine import ScanOptions
from shardscan.synth import password
from tests.conftest import trace_row, write_trace_shard

COLUMN = "conversations[1].content"


def pw(seed: str, n: int = 20) -> str:
    return password(random.Random(f"unprefixed:{seed}"), n)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@dataclass(frozen=True)
class Case:
    name: str
    text: str
    rule: str | None = None  # None: nothing may be reported
    secret: str | None = None  # the exact text of the span (default: located by ``span``)
    verdict: str = "unverified"
    span: tuple[int, int] | None = None
    encoding: tuple[str, ...] = ()

    @property
    def where(self) -> tuple[int, int]:
        if self.span is not None:
            return self.span
        start = self.text.index(self.secret)
        return start, start + len(self.secret)


def _cases() -> list[Case]:
    out: list[Case] = []
    add = out.append
    # --- connection strings and URLs with userinfo
    for scheme in ("postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp",
                   "amqps", "mssql", "sqlserver", "clickhouse", "snowflake", "ftp", "sftp", "smtp", "http", "https",
                   "ldap"):
        p = pw(scheme)
        add(Case(f"url-{scheme}", f"URL={scheme}://svc:{p}@db1.acme-corp.net:1234/x", "connection-string-password", p))
    p = pw("url-local")
    add(Case("url-localhost", f"postgres://app:{p}@localhost:5432/app", "connection-string-password", p, "local-only"))
    p = pw("url-ipv6")
    add(Case("url-ipv6-loopback", f"redis://:{p}@[::1]:6379", "connection-string-password", p, "local-only"))
    p = pw("url-dotlocal")
    add(Case("url-dot-local", f"amqp://w:{p}@rabbit.local/", "connection-string-password", p, "local-only"))
    add(Case("url-default", "amqp://guest:guest@mq.acme-corp.net/", "connection-string-password", "guest", "example",
             span=(13, 18)))
    add(Case("url-same-as-user", "postgres://deploy:deploy@db.acme-corp.net/x", "connection-string-password", "deploy",
             "example", span=(18, 24)))
    add(Case("url-variable", "postgres://app:${DB_PASSWORD}@db.acme-corp.net/x", "connection-string-password",
             "${DB_PASSWORD}", "redacted"))
    add(Case("url-docs-host", f"postgres://app:{pw('doc')}@db.example.com/x", "connection-string-password", pw("doc"),
             "example"))
    add(Case("url-no-password", "see https://git.acme-corp.net/org/repo and git@github.com:org/repo.git"))
    # --- Authorization: Basic (decoded), curl -u, mysql -p, sshpass -p, PGPASSWORD, docker login -p
    token = b64(f"reports:{pw('basic')}")
    add(Case("basic-header", f"-H 'Authorization: Basic {token}' https://api.acme-corp.net", "basic-auth-header",
             token))
    add(Case("basic-header-default", "Authorization: Basic " + b64("admin:admin"), "basic-auth-header",
             b64("admin:admin"), "example"))
    add(Case("basic-header-built-in-code", "headers['Authorization'] = 'Basic ' + base64(user + ':' + pw)"))
    p = pw("curl")
    add(Case("curl-u", f"curl -u ops:{p} https://grafana.acme-corp.net/api/health", "password-command-line", p))
    add(Case("curl-u-variables", 'curl -u "$USER:$PASS" https://grafana.acme-corp.net', "password-command-line",
             "$PASS", "redacted"))
    p = pw("mysql")
    add(Case("mysql-p-remote", f"mysql -h sql.acme-corp.net -uroot -p{p} shop", "password-command-line", p))
    p = pw("mysql-local")
    add(Case("mysql-p-socket", f"mysql -uroot -p'{p}' -e 'select 1'", "password-command-line", p, "local-only"))
    add(Case("mysql-p-prompt", "mysql -u root -p shop"))
    p = pw("mysql-password")
    add(Case("mysql-password-eq", f"mysql --host=sql.acme-corp.net --password={p} shop", "password-assignment", p))
    p = pw("sshpass")
    add(Case("sshpass", f"sshpass -p {p} scp build.tar deploy@203.0.114.20:/srv", "password-command-line", p))
    p = pw("pgpassword")
    add(Case("pgpassword-remote", f"PGPASSWORD={p} psql -h pg.acme-corp.net -U app", "password-assignment", p))
    p = pw("pgpassword-local")
    add(Case("pgpassword-local", f"PGPASSWORD='{p}' psql -h 127.0.0.1 -U postgres", "password-assignment", p,
             "local-only"))
    p = pw("docker-login")
    add(Case("docker-login", f"docker login --username ci --password {p} registry.acme-corp.net",
             "password-command-line", p))
    add(Case("docker-login-stdin", "echo $TOKEN | docker login -u ci --password-stdin ghcr.io"))
    p = pw("az-login")
    add(Case("az-login-service-principal", "az login --service-principal -u 7f3e2a10-4b5c-4d6e-8f90-a1b2c3d4e5f6 "
             f"-p {p} --tenant acme.onmicrosoft.com", "password-command-line", p))
    p = pw("twine")
    add(Case("twine-upload-p", f"twine upload -u deploy -p {p} --repository-url https://pypi.acme-corp.net/ dist/*",
             "password-command-line", p))
    p = pw("smbclient")
    add(Case("smbclient-user-percent", f"smbclient //fs.acme-corp.net/share -U svc%{p} -c ls", "password-command-line",
             p))
    p = pw("stdin-pipe")
    add(Case("docker-login-stdin-literal", f'echo "{p}" | docker login -u ci --password-stdin registry.acme-corp.net',
             "password-stdin-pipe", p))
    p = pw("helm-stdin")
    add(Case("helm-registry-login-stdin", f"echo -n '{p}' | helm registry login ghcr.io -u bot --password-stdin",
             "password-stdin-pipe", p))
    # --- HTTP basic auth in code
    p = pw("requests-auth")
    add(Case("requests-auth-tuple", f'requests.get("https://jenkins.acme-corp.net/api/json", auth=("ops", "{p}"))',
             "password-auth-tuple", p))
    p = pw("es-basic-auth")
    add(Case("elasticsearch-basic-auth",
             f'Elasticsearch("https://es.acme-corp.net:9200", basic_auth=("elastic", "{p}"))',
             "password-auth-tuple", p))
    p = pw("basic-auth-class")
    add(Case("http-basic-auth-class", f'session.auth = HTTPBasicAuth("svc-reports", "{p}")', "password-auth-tuple", p))
    add(Case("auth-tuple-variables", "requests.get(url, auth=(user, password))"))
    # --- htpasswd (hashes are not reported), .netrc, .pgpass, Docker config.json auth
    add(Case("htpasswd-bcrypt", "admin:$2y$05$" + "Qm9vdHN0cmFwQ29uZmlnVGhhdElzTm90QVNlY3JldA12345678.abc"))
    p = pw("netrc")
    add(Case("netrc", f"machine pypi.acme-corp.net\nlogin __token__\npassword {p}\n", "netrc-password", p))
    p = pw("pgpass")
    add(Case("pgpass", f"cat >> ~/.pgpass <<EOF\npg.acme-corp.net:5432:app:etl:{p}\nEOF", "pgpass-password", p))
    add(Case("netrc-placeholder", "machine api.acme-corp.net login USER password <your-token>\n", "netrc-password",
             "<your-token>", "redacted"))
    add(Case("netrc-prose", "The machine login prompt asks for your password."))
    add(Case("pgpass-localhost", f"# ~/.pgpass\nlocalhost:5432:*:postgres:{pw('pgpass-local')}\n", "pgpass-password",
             pw("pgpass-local"), "local-only"))
    add(Case("pgpass-mentioned", "chmod 0600 ~/.pgpass  # libpq ignores it otherwise"))
    token = b64("admin:admin")
    add(Case("docker-config-default", json.dumps({"auths": {"registry.acme-corp.net": {"auth": token}}}),
             "docker-config-auth", token, "example"))
    add(Case("docker-config-creds-store", json.dumps({"auths": {"ghcr.io": {}}, "credsStore": "osxkeychain"})))
    token = b64(f"robot:{pw('docker-config')}")
    add(Case("docker-config", json.dumps({"auths": {"quay.io": {"auth": token}}}), "docker-config-auth", token))
    # --- assignments in env files, shell, YAML, JSON, TOML, INI, Python, JS, Go, Java
    for name, template in (
        ("env", "DB_PASSWORD={p}"),
        ("shell", "export REDIS_PASSWORD='{p}'"),
        ("yaml", "db:\n  password: {p}\n"),
        ("json", '{{"Password": "{p}"}}'),
        ("toml", '[db]\npasswd = "{p}"\n'),
        ("ini", "[client]\npassword = {p}\n"),
        ("python", 'connect(user="etl", password="{p}")'),
        ("js", "const dbPassword = '{p}';"),
        ("go", 'cfg.Passwd := "{p}"'),
        ("java", 'private static final String DB_PASSWORD = "{p}";'),
    ):
        p = pw(f"assign-{name}")
        add(Case(f"assign-{name}", template.format(p=p), "password-assignment", p))
    # --- the same names as markup and name/value pairs (settings.xml, appSettings, k8s env, JSON lists)
    for name, template in (
        ("maven-settings", "<server>\n  <id>releases</id>\n  <username>deploy</username>\n"
                           "  <password>{p}</password>\n</server>"),
        ("dotnet-app-settings", '<add key="SmtpPassword" value="{p}" />'),
        ("spring-property", '<property name="password" value="{p}"/>'),
        ("properties-entry", '<entry key="db.password">{p}</entry>'),
        ("k8s-env", "env:\n  - name: DB_HOST\n    value: pg.acme-corp.net\n  - name: DB_PASSWORD\n"
                    "    value: \"{p}\"\n"),
        ("ecs-environment", '"environment": [{{"name": "DB_PASSWORD", "value": "{p}"}}]'),
        ("postman-environment", '{{"key": "admin_password", "value": "{p}", "enabled": true}}'),
        ("setter-call", 'spark.conf.set("spark.datasource.password", "{p}")'),
    ):
        p = pw(f"pair-{name}")
        add(Case(f"pair-{name}", template.format(p=p), "password-name-value", p))
    p = pw("terraform-variable")
    add(Case("terraform-variable-default", f'variable "db_password" {{\n  type      = string\n  sensitive = true\n'
             f'  default   = "{p}"\n}}', "password-name-value", p))
    add(Case("pair-k8s-secret-ref", "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n"
                                    "      key: password\n"))
    add(Case("pair-html-input", '<input type="password" name="password" value="">'))
    add(Case("pair-json-schema", '{"name": "password", "type": "string", "required": true}'))
    add(Case("pair-maven-variable", "<password>${env.NEXUS_PASSWORD}</password>", "password-name-value",
             "${env.NEXUS_PASSWORD}", "redacted"))
    assignments = (
        ("jwt-secret", "JWT_SECRET={s}"),
        ("django", "SECRET_KEY = '{s}'"),
        ("client-secret", '{{"client_secret": "{s}"}}'),
        ("api-key-camel", 'apiKey: "{s}"'),
        ("auth-token", "AUTH_TOKEN={s}"),
        ("flask-config-subscript", "app.config['SECRET_KEY'] = '{s}'"),
        ("environ-subscript", 'os.environ["TOGETHER_API_KEY"] = "{s}"'),
        ("nextauth", "NEXTAUTH_SECRET={s}"),
        ("pagerduty", "PAGERDUTY_API_KEY={s}"),
        ("x-api-key-header", "requests.get(url, headers={{'X-API-Key': '{s}'}})"),
        ("cli-flag", "python deploy.py --api-key {s} --region eu-west-1"),
        ("cli-flag-quoted", 'modal deploy --client-secret "{s}"'),
        ("go-short-declaration", 'api_key := "{s}"'),
        ("subscription-key-header", 'curl -H "Ocp-Apim-Subscription-Key: {s}" https://api.acme-corp.net/translate'),
        ("auth-key-header", 'curl -H "X-Auth-Key: {s}" https://api.cloudflare.com/client/v4/zones'),
        ("master-key", "MEILI_MASTER_KEY={s}"),
        ("upper-key-name", "AZURE_OPENAI_KEY={s}"),
    )
    # The same names as markup and name/value pairs.
    pairs = (
        ("xml-element", "<apiKey>{s}</apiKey>"),
        ("dotnet-app-settings", '<appSettings>\n  <add key="StripeApiKey" value="{s}" />\n</appSettings>'),
        ("k8s-env", "env:\n- name: API_TOKEN\n  value: {s}\n"),
        ("postman-environment", '{{"key": "api_key", "value": "{s}", "type": "secret", "enabled": true}}'),
        ("environ-setdefault", 'os.environ.setdefault("SECRET_TOKEN", "{s}")'),
        ("wordpress-define", "define('AUTH_KEY', '{s}');"),
    )
    for prefix, rule, table in (("generic", "generic-secret-assignment", assignments),
                                ("secret-pair", "secret-name-value", pairs)):
        for name, template in table:
            s = pw(f"{prefix}-{name}", 40)
            add(Case(f"{prefix}-{name}", template.format(s=s), rule, s))
    # A URL's query parameter is judged for the URL's host: a notebook server's own token is local-only.
    token = random.Random("unprefixed:jupyter").randbytes(24).hex()
    add(Case("jupyter-server-token", "[I ServerApp] Jupyter Server is running at:\n[I ServerApp] "
             f"http://f3a9c2e1b7d4:8888/lab?token={token}\n[I ServerApp]     http://127.0.0.1:8888/lab?token={token}",
             "generic-secret-assignment", token, "local-only"))
    s = pw("query-token", 40)
    add(Case("remote-query-token", f'curl "https://api.acme-corp.net/v1/export?format=csv&token={s}"',
             "generic-secret-assignment", s))
    # API keys in a URL's query under names that outside a URL are anyone's (key=, appid=, access_key=).
    for name, template in (
        ("openweathermap", 'curl "https://api.openweathermap.org/data/2.5/weather?q=Paris&units=metric&appid={s}"'),
        ("marketstack", 'requests.get("http://api.marketstack.com/v1/eod?access_key={s}&symbols=AAPL")'),
        ("trello", "GET https://api.trello.com/1/members/me/boards?key={s}&fields=name"),
    ):
        s = random.Random(f"unprefixed:query-{name}").randbytes(16).hex()
        add(Case(f"url-query-{name}", template.format(s=s), "url-query-key", s))
    add(Case("url-query-object-key", "https://bucket.s3.amazonaws.com/upload?key=uploads/2024/05/photo-0001.png"))
    add(Case("url-query-numeric-appid", "https://store.steampowered.com/api/appdetails?appids=570&appid=570"))
    key = "0x" + random.Random("unprefixed:wallet").randbytes(32).hex()
    add(Case("generic-upper-private-key", f"PRIVATE_KEY={key}", "generic-secret-assignment", key))
    # --- values handed to a command that stores secrets: a secret whatever its name
    for name, template in (
        ("gh-secret-set", 'gh secret set DEPLOY_HOOK --repo acme/shop --body "{s}"'),
        ("fly-secrets-set", "fly secrets set LOG_LEVEL=info SESSION_SALT={s} -a shop-api"),
        ("kubectl-from-literal", "kubectl create secret generic upstream --from-literal=CLIENT_ID=shop "
                                 "--from-literal=CLIENT_CRED={s}"),
    ):
        s = pw(f"secret-set-{name}", 40)
        add(Case(f"secret-set-{name}", template.format(s=s), "secret-set-command", s))
    add(Case("secret-set-variable", 'gh secret set API_TOKEN --body "$API_TOKEN"'))
    add(Case("secret-set-plain-settings", "fly secrets set LOG_LEVEL=info FEATURE_FLAGS=search,checkout"))
    add(Case("pair-request-token-uuid", '<add key="RequestToken" value="6f1c2b7e-2d4a-4c7e-9b1a-0c2d3e4f5a6b" />'))
    add(Case("pair-pagination", f'{{"name": "nextPageToken", "value": "{b64(pw("pair-page", 30))}"}}'))
    add(Case("pair-openapi-scheme", '{"name": "api_key", "in": "header", "type": "apiKey"}'))
    for name, text in (
        ("cache-key", "CACHE_KEY=user:12345678:profile:v2"),
        ("object-key", "S3_KEY=datasets/train/shard-00001-of-00100.parquet"),
        ("site-key", "RECAPTCHA_SITE_KEY=6LcAbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
        ("key-path", "SSH_KEY=/home/dev/.ssh/id_ed25519_deploy_2024"),
        ("go-getenv", 'api_key := os.Getenv("API_KEY")'),
    ):
        add(Case(f"upper-key-{name}", text))
    # --- placeholders, templates and code: reported non-blocking, or not at all
    add(Case("placeholder-changeme", 'DB_PASSWORD="changeme"', "password-assignment", "changeme", "example"))
    add(Case("placeholder-angle", "password: <password>", "password-assignment", "<password>", "redacted"))
    add(Case("placeholder-dollar", "password=$DB_PASSWORD", "password-assignment", "$DB_PASSWORD", "redacted"))
    add(Case("placeholder-format", 'password = "%(pw)s"', "password-assignment", "%(pw)s", "redacted"))
    add(Case("placeholder-stars", "password: '********'", "password-assignment", "********", "redacted"))
    add(Case("placeholder-your-here", "PASSWORD=your-db-password-here", "password-assignment",
             "your-db-password-here", "redacted"))
    add(Case("placeholder-minio", 'MINIO_ROOT_PASSWORD="minioadmin"', "password-assignment", "minioadmin", "example"))
    add(Case("placeholder-too-short", 'password="s3cr3tz"', "password-assignment", "s3cr3tz", "example"))
    add(Case("code-request-form", "password = request.form['password']"))
    add(Case("code-comparison", "if password == confirm:"))
    add(Case("code-call", "token = get_token()"))
    add(Case("code-type-hint", "api_key: str"))
    add(Case("code-settings", "secret_key=settings.SECRET_KEY"))
    add(Case("code-fixture", 'password="test"'))
    add(Case("code-getenv", 'password = os.getenv("DB_PASSWORD")'))
    add(Case("code-getpass", "password = getpass.getpass()"))
    add(Case("helm-template", 'password: "{{ .Values.db.password }}"'))
    add(Case("uuid-request-id", '{"request_id": "6f1c2b7e-2d4a-4c7e-9b1a-0c2d3e4f5a6b"}'))
    add(Case("token-counts", '{"max_tokens": 4096, "total_tokens": 123456789012345678}'))
    add(Case("pagination-token", f'{{"nextPageToken": "{b64(pw("next-page", 30))}", "items": []}}'))
    add(Case("page-token-param", f'params = {{"page_token": "{pw("page-token", 40)}"}}'))
    add(Case("cli-flag-file-and-variable", "python train.py --token-file /run/secrets/hf --api-key $API_KEY"))
    add(Case("cli-flag-not-a-credential", "vllm serve model --max-tokens 4096 --tokenizer Qwen2TokenizerFast"))
    # --- through the decoders
    p = pw("json-escaped")
    cell = json.dumps({"name": "write", "arguments": json.dumps({"content": f"DB_PASSWORD=\"{p}\"\n"})})
    add(Case("json-escaped-twice", cell, "password-assignment", p))
    p = pw("percent")
    url = quote(f"postgres://app:{p}@pg.acme-corp.net/app", safe="")
    cell = f"GET /connect?dsn={url} HTTP/1.1"
    add(Case("percent-encoded-dsn", cell, "connection-string-password", quote(p, safe=""),
             encoding=("percent",)))
    return out


def _k8s_secret() -> tuple[str, str, str]:
    user, secret = "app", pw("k8s", 24)
    text = ("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-credentials\ntype: Opaque\ndata:\n"
            f"  username: {b64(user)}\n  password: {b64(secret)}\n"
            f"stringData:\n  REDIS_PASSWORD: \"{pw('k8s-string')}\"\n")
    return text, b64(secret), pw("k8s-string")


def _compose() -> tuple[str, str]:
    secret = pw("compose")
    text = ("services:\n  db:\n    image: postgres:16\n    environment:\n"
            f"      POSTGRES_PASSWORD: {secret}\n  web:\n    build: .\n    environment:\n"
            f"      DATABASE_URL: postgresql://postgres:{secret}@db:5432/postgres\n")
    return text, secret


CASES = _cases()
K8S, K8S_DATA, K8S_STRING = _k8s_secret()
COMPOSE, COMPOSE_SECRET = _compose()
EXTRA = [K8S, COMPOSE]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    rows = [trace_row([("user", "run it"), ("tool", case.text)]) for case in CASES]
    rows += [trace_row([("user", "run it"), ("tool", text)]) for text in EXTRA]
    shard = write_trace_shard(tmp_path_factory.mktemp("unprefixed") / "train-00000-of-00001.parquet", rows)
    return scan([str(shard)], options=ScanOptions(), cache=None)


def _at(report, row: int) -> list:
    return [f for f in report.findings if f.location.row == row]


@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_case(report, index):
    case = CASES[index]
    got = _at(report, index)
    if case.rule is None:
        assert [(f.rule_id, str(f.verdict)) for f in got] == []
        return
    assert [(f.rule_id, f.location.column) for f in got] == [(case.rule, COLUMN)]
    [finding] = got
    kind = {"connection-string-password": "connection-string", "basic-auth-header": "connection-string",
            "docker-config-auth": "connection-string", "generic-secret-assignment": "generic-secret",
            "secret-name-value": "generic-secret", "secret-set-command": "generic-secret",
            "url-query-key": "generic-secret"}.get(
        case.rule, "password")
    assert (finding.kind, str(finding.verdict)) == (kind, case.verdict), finding.detail
    assert finding.blocking == (case.verdict == "unverified")
    assert (finding.start, finding.end) == case.where
    if case.encoding:
        assert finding.encoding == case.encoding


def test_details_say_why_without_the_secret(report):
    index = next(i for i, c in enumerate(CASES) if c.name == "url-postgres")
    [finding] = _at(report, index)
    assert finding.detail == "password for postgres (user svc) on db1.acme-corp.net (remote host)"
    for f in report.findings:
        for case in CASES:
            if case.secret and len(case.secret) >= 8 and case.verdict == "unverified":  # (a placeholder is markup)
                assert case.secret not in f.detail + f.preview + f.context


def test_kubernetes_secret_data_is_decoded_and_string_data_read_as_is(report):
    row = len(CASES)
    got = sorted(((f.rule_id, f.start, f.end, f.encoding, str(f.verdict)) for f in _at(report, row)),
                 key=lambda x: x[1])
    start = K8S.index(K8S_DATA)
    plain = K8S.index(K8S_STRING)
    assert got == [
        ("password-assignment", start, start + len(K8S_DATA), ("base64",), "unverified"),
        ("password-assignment", plain, plain + len(K8S_STRING), (), "unverified"),
    ]


def test_docker_compose_passwords_are_local_only_and_block_only_under_strict(report):
    row = len(CASES) + 1
    got = sorted((f.rule_id, f.start, str(f.verdict), f.blocking) for f in _at(report, row))
    first = COMPOSE.index(COMPOSE_SECRET)
    second = COMPOSE.index(COMPOSE_SECRET, first + 1)
    assert got == [
        ("connection-string-password", second, "local-only", False),
        ("password-assignment", first, "local-only", False),
    ]
    details = {f.rule_id: f.detail for f in _at(report, row)}
    assert details["connection-string-password"].endswith("on db (local-only: reachable inside the sandbox only)")


@pytest.mark.slow
def test_strict_makes_local_only_blocking(tmp_path):
    from shardscan.policy import Policy

    shard = write_trace_shard(tmp_path / "compose.parquet", [trace_row([("tool", COMPOSE)])])
    strict = scan([str(shard)], policy=Policy(strict=True), cache=None)
    assert {(str(f.verdict), f.blocking) for f in strict.findings} == {("local-only", True)}
    assert strict.exit_code == 1
    assert scan([str(shard)], cache=None).exit_code == 0


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["yaml", "json"])
def test_short_kubernetes_secret_values_are_decoded_too(layout):
    from shardscan.engine import Scanner
    from shardscan.ruleset import load_ruleset

    secret = pw("k8s-short", 10)  # 16 base64 characters: shorter than any token the decoder looks for
    value = b64(secret)
    if layout == "yaml":
        text = f"apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  user: {b64('app')}\n  password: {value}\n"
    else:
        text = json.dumps({"apiVersion": "v1", "kind": "Secret", "data": {"user": b64("app"), "password": value}})
    findings, limits = Scanner(load_ruleset()).scan_text(text)
    start = text.index(value)
    assert limits == []
    assert [(f.rule_id, f.start, f.end, f.encoding, str(f.verdict)) for f in findings] == [
        ("password-assignment", start, start + len(value), ("base64",), "unverified")
    ]
    # Outside a Secret manifest, short values are not decoded: the value as written is the password.
    other = text.replace("Secret", "ConfigMap")
    assert [f.encoding for f in Scanner(load_ruleset()).scan_text(other)[0]] == [()]


def test_previews_of_short_values_show_one_character_per_eight(report):
    by_name = {c.name: i for i, c in enumerate(CASES)}
    [short] = _at(report, by_name["placeholder-too-short"])
    assert short.preview == "…(7)"
    [twenty] = _at(report, by_name["url-postgres"])
    assert twenty.preview == CASES[by_name["url-postgres"]].secret[:4] + "…(20)"
    from shardscan.redaction import preview

    assert preview("Ab3dEf7hIj") == "A…(10)"
    assert preview("Ab3dEf7hIj1lMn5pQr") == "Ab…(18)"


@pytest.mark.parametrize("scheme", ["postgresql", "mongodb+srv", "mysql", "redis", "amqp"])
def test_connection_string_base64_encoded_whole_in_a_secret(tmp_path, scheme):
    """A Secret's DATABASE_URL holds the whole URL in base64: selected by its scheme's base64 forms."""
    secret = pw(f"b64-url-{scheme}")
    encoded = b64(f"{scheme}://app:{secret}@db.acme-corp.net:5432/app")
    shard = write_trace_shard(tmp_path / "secret.parquet",
                              [trace_row([("tool", f"kind: Secret\ndata:\n  DATABASE_URL: {encoded}\n")])])
    report = scan([str(shard)], cache=None)
    text = f"kind: Secret\ndata:\n  DATABASE_URL: {encoded}\n"
    start = text.index(encoded)
    assert [(f.rule_id, f.start, f.end, f.encoding, str(f.verdict)) for f in report.findings] == [
        ("connection-string-password", start, start + len(encoded), ("base64",), "unverified")
    ]


def test_a_password_beside_a_token_in_one_base64_blob_is_still_reported():
    """Both come from one decoded run, which maps to one span of the cell: a password yields to a
    token only where they overlap in the decoded text, not merely in the same blob."""
    from shardscan.engine import Scanner, ScanOptions
    from shardscan.ruleset import load_ruleset
    from shardscan.synth import expand

    token, password = expand("{{github:ghp_}}", seed="blob-token"), expand("{{password}}", seed="blob-pw")
    blob = base64.b64encode(f"DB_PASSWORD={password}\nGITHUB_TOKEN={token}\n".encode()).decode()
    findings, limits = Scanner(load_ruleset(), ScanOptions()).scan_text(f"env: {blob}")
    assert sorted((f.rule_id, str(f.verdict), f.encoding) for f in findings) == [
        ("github-pat", "valid", ("base64",)), ("password-assignment", "unverified", ("base64",)),
    ]
    assert limits == []

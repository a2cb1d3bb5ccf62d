"""Judge credentials without a vendor prefix: passwords in URLs, headers, commands and assignments.

No structure proves such a value real, so the verdict comes from what surrounds it: a template
or variable reference is ``redacted``, a documented default or placeholder is ``example``, a
password for a service only the sandbox can reach is ``local-only``, and the rest is
``unverified`` (blocking). Details name the user, service and host, never the value.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import safe_text
from shardscan.verifiers.placeholder import (
    _ELISION,
    _LONG_PLACEHOLDERS,
    _SEQUENCES,
    _entropy,
    is_word_like,
    placeholder_reason,
)

# Values shorter than this are not worth a reviewer's time: typed test values ("test", "1234").
MIN_PASSWORD = 8
# Assignments to secret/token/API-key names: generated values are longer than passwords.
MIN_GENERIC = 16
MIN_GENERIC_ENTROPY = 3.0

# The documented defaults of well-known images and tools, and the placeholders people type.
DEFAULT_PASSWORDS = frozenset(
    [
        "password", "passwd", "pass", "pwd", "secret", "changeme", "change_me", "changeit", "admin", "administrator",
        "root", "toor", "guest", "postgres", "mysql", "mariadb", "mongo", "mongodb", "redis", "foobared", "rabbitmq",
        "minioadmin",
        "minio", "elastic", "kibana", "neo4j", "oracle", "sa", "test", "testing", "tester", "example", "sample",
        "default", "demo", "dummy", "fake", "foo", "bar", "foobar", "baz", "letmein", "qwerty", "user", "username",
        "login", "none", "null", "nil", "empty", "undefined", "true", "false", "secret123", "password1", "password123",
        "pass123", "admin123", "root123", "test123", "testpass", "testpassword", "mypassword", "mypass", "mysecret",
        "yourpassword", "your_password", "your-password", "supersecret", "s3cr3t", "p@ssw0rd", "p@ssword", "passw0rd",
        "hunter2", "abc123", "abcd1234", "12345678", "123456789", "1234567890", "87654321", "11111111", "00000000",
        "iloveyou", "welcome", "welcome1", "trustno1", "dbpassword", "db_password", "dbpass", "db_pass", "apipassword",
        "userpassword", "user_password", "adminpassword", "admin_password", "rootpassword", "root_password",
        "secretpassword", "secret_password", "development", "dev", "local", "localdev", "devpassword", "dev_password",
        "testsecret", "test_secret", "mysecretpassword", "yoursecret", "changemenow"
    ]
)
# A value written as a reference to another value: shell and compose variables, templates of
# Helm/Jinja/Go/Mustache, printf and Python formats, code that reads the environment or a prompt.
_TEMPLATE = re.compile(
    r"\$\{[^}]*\}?|\$\(|^\$[A-Za-z_][A-Za-z0-9_]*$|\{\{|\{%|%\([A-Za-z_]+\)[sdr]|^%[sd]$|^\{[^{}]*\}$"
    r"|^<[^>]*>?$|^\[[^\]]*\]?$|os\.environ|os\.getenv|getenv\(|process\.env|getpass|ENV\[|System\.getenv"
    r"|^\$\d$|^@[A-Za-z_]|^%[A-Za-z_]+%$|^:[a-z_]+$",
)
_MASK = re.compile(r"^(?:\*+|x+|X+|•+|\.+|#+|-+|_+|\?+)$|\*{3,}|•{3,}|x{4,}|X{4,}|redacted|hidden|masked|omitted", re.I)
# "your-db-password-here", "your_api_key", "<…>" forms and friends.
_YOUR = re.compile(r"^(?:your|my|enter|insert|put|add|some|the)[-_ ]?[a-z]|[-_ ]here$|^replace|^todo|^fixme|^tbd$",
                   re.I)
_CODE_REF = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:(?:\.|->|::)[A-Za-z_][A-Za-z0-9_]*)+$|^[A-Za-z_][A-Za-z0-9_.]*[(\[]")


_NAMES_ITSELF = re.compile(r"pass(?:word|wd)|secret", re.I)


def _squash(text: str) -> str:
    """``text`` lower-cased without separators and quotes (``FORCE_CHANGE_PASSWORD`` ~ ``forceChangePassword``)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def placeholder_value(value: str, user: str | None = None, name: str | None = None) -> Verification | None:
    """Verdict for a value that is not a usable credential (template, mask, default, too weak); else None."""
    if not value:
        return Verification(Verdict.REDACTED, "empty value")
    if _TEMPLATE.search(value):
        return Verification(Verdict.REDACTED, "a template or variable reference, not a value")
    if _MASK.search(value) or _ELISION.search(value):
        return Verification(Verdict.REDACTED, "masked or elided value, not a usable secret")
    if _CODE_REF.search(value):
        return Verification(Verdict.REDACTED, "a reference to another value in code (attribute or call), not a literal")
    lowered = value.lower()
    if user and lowered == user.lower():
        return Verification(Verdict.EXAMPLE, "the same as the user name: a default, not a secret")
    if lowered in DEFAULT_PASSWORDS or lowered.strip("!.1") in DEFAULT_PASSWORDS:
        return Verification(Verdict.EXAMPLE, "a well-known default or placeholder value")
    if name and _squash(value) == _squash(name):
        return Verification(Verdict.REDACTED, "repeats the name it is assigned to: a label or enum value, not a secret")
    if not re.search(r"[0-9]", value) and is_word_like(value):
        return Verification(Verdict.REDACTED, "made of words without a digit: a label or placeholder, not a secret")
    if _NAMES_ITSELF.search(value) and is_word_like(re.sub(r"[^A-Za-z]", "", value)):
        return Verification(Verdict.REDACTED, "words naming a password or secret: a placeholder, not a secret")
    if _YOUR.search(value) or _LONG_PLACEHOLDERS.search(value):
        return Verification(Verdict.REDACTED, "placeholder text instead of a value")
    if re.search(r"example|sample", value, re.I):
        return Verification(Verdict.EXAMPLE, "a documentation value ('example'/'sample')")
    if len(value) < MIN_PASSWORD:
        return Verification(Verdict.EXAMPLE, f"too short ({len(value)} characters) to be a generated secret")
    if len(set(value)) <= 2 or re.search(r"(.)\1{5,}", value) or any(s in lowered for s in _SEQUENCES):
        return Verification(Verdict.REDACTED, "repeated or sequential characters, a placeholder")
    if (bits := _entropy(value)) < 2.3:
        return Verification(Verdict.REDACTED, f"too low in entropy ({bits:.1f} bits/char) to be a secret")
    return None


# Hosts of documentation (RFC 2606/6761) and the hosts only the sandbox reaches.
_EXAMPLE_HOST = re.compile(r"(?:^|\.)(?:example\.(?:com|org|net)|example|test|invalid)$", re.I)
_HOST_OF_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://(?:[^@/]*@)?")
_LOCAL_NAMES = frozenset({"localhost", "host.docker.internal", "gateway.docker.internal", "0.0.0.0", "ip6-localhost"})


def host_scope(host: str | None) -> tuple[str, str]:
    """(``local``/``example``/``remote``/``unknown``, how to name it) for a connection's host."""
    if not host:
        return "unknown", "no host named"
    host = _HOST_OF_URL.sub("", host.strip()).split("/", 1)[0]
    if not host.startswith("[") and host.count(":") == 1:
        host = host.split(":", 1)[0]  # a port
    host = host.strip("[]").rstrip(".").lower()
    name = host.split("%", 1)[0]
    shown = safe_text(host, 60)
    if name in _LOCAL_NAMES or name.endswith((".local", ".localhost", ".internal")):
        return "local", shown
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        address = None
    if address is not None:
        if address.is_loopback or address.is_unspecified or address.is_link_local:
            return "local", shown
        if address in ipaddress.ip_network("192.0.2.0/24") or address in ipaddress.ip_network("198.51.100.0/24") \
                or address in ipaddress.ip_network("203.0.113.0/24"):
            return "example", shown
        return "remote", shown
    if _EXAMPLE_HOST.search(name):
        return "example", shown
    if "." not in name and re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,62}", name):
        # A name without a dot resolves only on the local network: a docker-compose service
        # (``db``, ``postgres``, ``redis``), a Kubernetes service in the same namespace.
        return "local", shown
    return "remote", shown


def _judged(value: str, what: str, user: str | None, host: str | None, name: str | None = None) -> Verification:
    """The verdict of a password ``value`` for ``what`` (a service) at ``host``, assigned to ``name``."""
    if (reason := placeholder_value(value, user, name)) is not None:
        return Verification(reason.verdict, f"{what}: {reason.detail}")
    who = f" (user {safe_text(user, 40)})" if user else ""
    scope, shown = host_scope(host)
    if scope == "local":
        return Verification(Verdict.LOCAL_ONLY, f"{what}{who} on {shown} (local-only: reachable inside the sandbox "
                                                "only)")
    if scope == "example":
        return Verification(Verdict.EXAMPLE, f"{what}{who} on {shown} (a documentation host)")
    if scope == "remote":
        return Verification(Verdict.UNVERIFIED, f"{what}{who} on {shown} (remote host)")
    return Verification(Verdict.UNVERIFIED, f"{what}{who}, host not named; no offline check")


_SCHEME_NAMES = {"postgres": "postgres", "postgresql": "postgres", "mongodb+srv": "mongodb", "rediss": "redis",
                 "amqps": "amqp", "sqlserver": "mssql", "https": "http", "sftp": "ftp", "smtps": "smtp",
                 "ldaps": "ldap"}


# Schemes whose "host" is an account name on the provider's API, not a host on a network.
_ACCOUNT_SCHEMES = {"cloudinary": "api.cloudinary.com"}


def check_connection_string(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """A password in the userinfo of a URL (``scheme://user:password@host``); for a scheme whose
    host part names an account (``cloudinary://key:secret@cloud``), the provider's API host."""
    scheme = (candidate.group("scheme") or "").lower()
    service = _SCHEME_NAMES.get(scheme, scheme) or "a service"
    host = _ACCOUNT_SCHEMES.get(scheme, candidate.group("host"))
    return _judged(candidate.secret, f"password for {service}", candidate.group("user"), host)


def check_basic_auth(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """``Authorization: Basic`` or a Docker ``auth`` field: base64 of ``user:password``, decoded."""
    try:
        raw = base64.b64decode(candidate.secret + "=" * (-len(candidate.secret) % 4), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return Verification(Verdict.INVALID, "not base64 of text: not a user:password pair")
    user, sep, password = decoded.partition(":")
    if not sep:
        return Verification(Verdict.INVALID, "decodes to text without ':', not a user:password pair")
    host = candidate.group("host") or _host_on_command_line(candidate.group("rest"))
    return _judged(password, "Basic credentials (base64 user:password)", user, host)


# Environment variables of images that set the password of the container they start: in a
# docker-compose file or a ``docker run -e``, the password grants access to that container only.
_IMAGE_INIT = re.compile(
    r"^(?:POSTGRES_PASSWORD|MYSQL_ROOT_PASSWORD|MYSQL_PASSWORD|MARIADB_ROOT_PASSWORD|MARIADB_PASSWORD"
    r"|MONGO_INITDB_ROOT_PASSWORD|RABBITMQ_DEFAULT_PASS|MINIO_ROOT_PASSWORD"
    r"|KEYCLOAK_ADMIN_PASSWORD|PGADMIN_DEFAULT_PASSWORD|GF_SECURITY_ADMIN_PASSWORD)$",
)
# Where such a variable configures a container: a compose file's service, a docker run command.
_CONTAINER_CONTEXT = re.compile(r"(?m)^[ \t]*(?:image|services):|docker(?:-compose|[ \t]+compose)?[ \t]+run\b")


# Where a command line names the host it connects to: -h/--host, a URL, user@host (ssh, scp).
_HOST_ARG = re.compile(
    r"(?:^|[\s,{(])(?:-h[ \t]?|--host[= ]|['\"]?host(?:name)?['\"]?[ \t]{0,3}[:=][ "
    r"\t]{0,3})['\"]?(?P<a>[A-Za-z0-9_.\-]+|\[[0-9A-Fa-f:.]+\])"
    r"|://(?:[^/@\s'\"]*@)?(?P<b>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.\-]+)"
    r"|(?:^|\s)[A-Za-z0-9_.\-]{1,64}@(?P<c>[A-Za-z0-9_.\-]+)"
)


def _host_on_command_line(*parts: str | None) -> str | None:
    """The first host a command line's arguments name, if any."""
    for part in parts:
        if part and (match := _HOST_ARG.search(part)):
            return match.group("a") or match.group("b") or match.group("c")
    return None


# Clients that connect to the local server when no host is given (its socket, localhost).
_LOCAL_BY_DEFAULT = frozenset({"mysql", "mysqldump", "mysqladmin", "mariadb", "psql", "redis-cli", "mongo", "mongosh"})
# Server settings that set a password (redis.conf, redis-server's options) rather than send one.
_SERVER_SETTINGS = frozenset({"requirepass", "masterauth"})


def check_password(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """A password assigned to a credential name, given on a command line, or set for a server."""
    name = candidate.group("name")
    tool = candidate.group("tool")
    what = (f"password assigned to {safe_text(name, 40)}" if name else f"password set by {tool}"
            if tool in _SERVER_SETTINGS else f"password on a {tool} command line" if tool else "password")
    host = candidate.group("host") or _host_on_command_line(candidate.group("args"), candidate.group("rest"))
    verdict = _judged(candidate.secret, what, candidate.group("user"), host, name)
    text = context.text
    if verdict.verdict == Verdict.UNVERIFIED and (
        name and _IMAGE_INIT.match(name.strip("\"'").upper()) or tool in _SERVER_SETTINGS
    ) and _CONTAINER_CONTEXT.search(text):
        return Verification(Verdict.LOCAL_ONLY, f"{what}: sets the password of a container an image starts "
                                                "(docker-compose, docker run): local-only")
    if verdict.verdict == Verdict.UNVERIFIED and tool in _LOCAL_BY_DEFAULT and not host:
        return Verification(Verdict.LOCAL_ONLY, f"{what}, no host given (the local server's socket): local-only")
    return verdict


def _not_generated(value: str, label: str, name: str | None = None) -> Verification | None:
    """The verdict for a value that is a placeholder, or too short or regular to be generated
    (``label`` names it in the detail); None when it looks generated."""
    if (reason := placeholder_value(value, None, name)) is not None:
        return Verification(reason.verdict, f"{label}: {reason.detail}")
    if (generic := placeholder_reason(value)) is not None:
        return Verification(generic.verdict, f"{label}: {generic.detail}")
    if len(value) < MIN_GENERIC or _entropy(value) < MIN_GENERIC_ENTROPY:
        return Verification(Verdict.EXAMPLE, f"{label}: too short or too regular to be a generated secret")
    return None


def check_generic_secret(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """A value assigned to a secret, token or API-key name: reported when it looks generated; a
    URL's query parameter (``?token=…``) is judged for the URL's host, so a notebook server's
    token on ``127.0.0.1`` is ``local-only``."""
    name = safe_text(candidate.group("name") or "a secret name", 40)
    if candidate.group("host"):
        return _token_for_host(candidate.secret, f"value of {name}", candidate.group("host"), candidate.group("name"))
    return _not_generated(candidate.secret, f"value of {name}", candidate.group("name")) or Verification(
        Verdict.UNVERIFIED, f"high-entropy value assigned to {name}; no offline check"
    )


def check_bearer_token(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """An opaque token in an ``Authorization`` header: reported when it looks generated, like a
    generic secret; ``local-only`` when the request names a host only the sandbox reaches (an agent
    calling the API it runs on ``localhost``), ``example`` for a documentation host."""
    host = _host_on_command_line(candidate.group("before"), candidate.group("rest"))
    return _token_for_host(candidate.secret, "bearer token", host)


def check_npmrc(candidate: Candidate, _context: VerifyContext) -> Verification | None:
    """The credential of an ``.npmrc`` registry line: reported when it looks generated, for the
    registry it names (``local-only`` for a registry only the sandbox reaches)."""
    return _token_for_host(candidate.secret, "npm registry credential", candidate.group("host"))


def _token_for_host(value: str, what: str, host: str | None, name: str | None = None) -> Verification:
    """A generated-looking token sent to ``host``: placeholders and regular values first (see
    :func:`_not_generated`; ``name`` is the name it is assigned to, if any), then where it goes."""
    if (judged := _not_generated(value, what, name)) is not None:
        return judged
    scope, shown = host_scope(host)
    if scope == "local":
        return Verification(Verdict.LOCAL_ONLY, f"{what} sent to {shown} (local-only: reachable inside the sandbox "
                                                "only)")
    if scope == "example":
        return Verification(Verdict.EXAMPLE, f"{what} sent to {shown} (a documentation host)")
    where = f" sent to {shown}" if scope == "remote" else ""
    return Verification(Verdict.UNVERIFIED, f"high-entropy {what}{where}; no offline check")

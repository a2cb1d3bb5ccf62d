"""Verify a GCP service-account key file offline: its ``private_key`` must load as a private key.

The key file is one credential: the finding spans the JSON object and its verdict is the
private key's. Its fingerprint is taken over the private key as the private-key verifier reads
it, so the same key file printed compact, indented or with sorted keys is one secret.
"""

from __future__ import annotations

import json
import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import safe_text
from shardscan.verifiers.private_key import check_private_key

# The value of a JSON member, as written at any escaping depth (\" or \\\" before the value).
_MEMBER = r'\\{{0,7}}"{name}\\{{0,7}}"\s*:\s*\\{{0,7}}"((?:[^"\\]|\\.){{0,20000}}?)\\{{0,7}}"'
# A Python dict printed with repr() (single quotes) holds the same members.
_MEMBER_REPR = r"'{name}'\s*:\s*'((?:[^'\\]|\\.){{0,20000}})'"
_PRIVATE_KEY = re.compile(_MEMBER.format(name="private_key") + "|" + _MEMBER_REPR.format(name="private_key"))
_PROJECT = re.compile(_MEMBER.format(name="project_id") + "|" + _MEMBER_REPR.format(name="project_id"))
_EMAIL = re.compile(_MEMBER.format(name="client_email") + "|" + _MEMBER_REPR.format(name="client_email"))
MAX_UNESCAPES = 4


def unescape(value: str) -> str:
    """A JSON string body with its escapes undone, as many times as it was escaped (at most a few)."""
    for _ in range(MAX_UNESCAPES):
        if "\\" not in value:
            break
        try:
            decoded = json.loads(f'"{value}"')
        except ValueError:
            break
        if decoded == value:
            break
        value = decoded
    return value


def check_gcp_service_account(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """The private key's verdict, with the project and the account's domain in the detail."""
    found = _PRIVATE_KEY.search(candidate.secret)
    if found is None:
        return Verification(Verdict.INVALID, "service-account JSON without a readable private_key member")
    pem = unescape(found.group(1) or found.group(2))
    key = check_private_key(Candidate(candidate.rule_id, pem, 0, len(pem), candidate.encoding), context)
    if key is None:
        return None
    project = _PROJECT.search(candidate.secret)
    email = _EMAIL.search(candidate.secret)
    if project:
        where = f"project {safe_text(unescape(project.group(1) or project.group(2)), 40)}"
    else:
        where = "project not named"
    if email:
        # The account's domain tells which project it belongs to; its name is left out.
        where += f", account @{safe_text(unescape(email.group(1) or email.group(2)).rpartition('@')[2], 48)}"
    return Verification(key.verdict, f"GCP service-account key file ({where}); private key: {key.detail}",
                        canonical=key.canonical or pem.strip())

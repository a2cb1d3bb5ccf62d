"""Verify GitHub tokens offline through the checksums GitHub builds into them.

* Classic tokens (``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_``): the last six characters are
  the CRC32 of the random part (prefix excluded), in base62 ``0-9A-Za-z``, zero-padded.
* Fine-grained tokens (``github_pat_``): characters ``[-16:-8]`` are the first eight characters of
  base32(SHA-256(token without its last 16 characters, prefix included)).
* App installation tokens in the ``ghs_<app id>_<JWT>`` format: the embedded JWT's ``exp``.

A checksum mismatch is ``invalid``: the string was invented by a model or mangled in transit.
"""

from __future__ import annotations

import base64
import hashlib
import re
import zlib

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.jwt import verify_jwt

BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_CLASSIC = re.compile(r"(gh[pousr])_([A-Za-z0-9]+)")
_FINE_GRAINED = re.compile(r"github_pat_[A-Za-z0-9_]{60,}")
_APP_JWT = re.compile(r"ghs_([0-9]{1,12})_(eyJ[A-Za-z0-9_.-]+)")
_KINDS = {
    "ghp": "personal access token (classic)",
    "gho": "OAuth access token",
    "ghu": "GitHub App user-to-server token",
    "ghs": "GitHub App installation token",
    "ghr": "GitHub App refresh token",
}


def base62_crc32(text: str) -> str:
    """CRC32 of ``text`` in base62, zero-padded to six characters."""
    value = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    digits = ""
    while value:
        value, rem = divmod(value, 62)
        digits = BASE62[rem] + digits
    return digits.rjust(6, "0")


def fine_grained_checksum(head: str) -> str:
    """The eight checksum characters of a ``github_pat_`` token whose first part is ``head``."""
    return base64.b32encode(hashlib.sha256(head.encode("utf-8", "surrogatepass")).digest()).decode()[:8]


def check_github(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Recomputes the checksum of any GitHub token format (CRC32 of classic tokens, SHA-256 of
    github_pat_, the JWT inside app installation tokens); None for other strings."""
    token = candidate.secret
    app = _APP_JWT.fullmatch(token)
    if app:
        outcome = verify_jwt(app.group(2), context.now, what="JWT")
        return Verification(outcome.verdict, f"GitHub App installation token (app {app.group(1)}); embedded "
                                             f"{outcome.detail}")
    if _FINE_GRAINED.fullmatch(token):
        if fine_grained_checksum(token[:-16]) == token[-16:-8]:
            return Verification(Verdict.VALID, "GitHub fine-grained personal access token, SHA-256 checksum matches")
        return Verification(
            Verdict.INVALID, "GitHub fine-grained token whose SHA-256 checksum does not match: invented or mangled"
        )
    classic = _CLASSIC.fullmatch(token)
    if classic:
        prefix, body = classic.groups()
        name = _KINDS[prefix]
        if len(body) < 7:
            return Verification(Verdict.INVALID, f"GitHub {name} too short to carry a checksum")
        if base62_crc32(body[:-6]) == body[-6:]:
            return Verification(Verdict.VALID, f"GitHub {name} ({prefix}_), CRC32 checksum matches")
        if prefix == "ghr" and len(body) != 36:
            # Long refresh tokens have no documented checksum layout: stay on the safe side.
            return Verification(Verdict.UNVERIFIED, f"GitHub {name} ({prefix}_, {len(body)} characters); no documented "
                                                    "checksum for this length")
        return Verification(
            Verdict.INVALID, f"GitHub {name} ({prefix}_) whose CRC32 checksum does not match: invented or mangled"
        )
    return None

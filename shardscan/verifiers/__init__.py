"""Offline verifiers: named checks that rules reference with ``verify:``; no network, ever.

Every candidate first goes through ``example`` (documented values, kept as data in
``known_examples.yaml``) and then ``placeholder`` (elided, placeholder and word-like bodies);
then the rule's own verifiers run in order, and the first with an opinion decides. The order
matters: ``AKIAIOSFODNN7EXAMPLE`` contains "EXAMPLE" and must come out ``example``, not ``redacted``.
"""

from __future__ import annotations

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.age import check_age
from shardscan.verifiers.anthropic import check_anthropic
from shardscan.verifiers.aws import check_aws_key_id, check_aws_secret
from shardscan.verifiers.azure import check_azure_sas, check_azure_shared_access_key, check_azure_storage_key
from shardscan.verifiers.base import Verifier, VerifyContext
from shardscan.verifiers.credential import (
    check_basic_auth,
    check_bearer_token,
    check_connection_string,
    check_generic_secret,
    check_npmrc,
    check_password,
)
from shardscan.verifiers.discord import check_discord
from shardscan.verifiers.example import check_example, known_examples
from shardscan.verifiers.gcp import check_gcp_service_account
from shardscan.verifiers.github import check_github
from shardscan.verifiers.grafana import check_grafana
from shardscan.verifiers.jwt import check_jwt
from shardscan.verifiers.npm import check_npm
from shardscan.verifiers.onepassword import check_onepassword
from shardscan.verifiers.openai import check_openai
from shardscan.verifiers.placeholder import check_placeholder, dictionary, leading_placeholder
from shardscan.verifiers.private_key import check_private_key
from shardscan.verifiers.putty import check_putty_key
from shardscan.verifiers.pypi import check_pypi
from shardscan.verifiers.sentry import check_sentry
from shardscan.verifiers.sk_key import check_sk_key
from shardscan.verifiers.slack import check_slack
from shardscan.verifiers.stripe import check_stripe
from shardscan.verifiers.wireguard import check_wireguard

__all__ = [
    "ALWAYS_FIRST", "NO_CHECK", "VERIFIERS", "Verifier", "VerifyContext", "prepare_verifiers", "verify_candidate",
]

# The registry: the names rules use in ``verify:``, each to its check.
VERIFIERS: dict[str, Verifier] = {
    "example": check_example,
    "placeholder": check_placeholder,
    "private-key": check_private_key,
    "jwt": check_jwt,
    "github-checksum": check_github,
    "aws-key-id": check_aws_key_id,
    "aws-secret": check_aws_secret,
    "openai-key": check_openai,
    "anthropic-key": check_anthropic,
    "sk-key": check_sk_key,
    "npm-checksum": check_npm,
    "pypi-macaroon": check_pypi,
    "onepassword-service-account": check_onepassword,


    "gcp-service-account": check_gcp_service_account,
    "azure-storage-key": check_azure_storage_key,
    "azure-sas": check_azure_sas,
    "azure-shared-access-key": check_azure_shared_access_key,
    "discord": check_discord,
    "stripe": check_stripe,
    "sentry": check_sentry,
    "grafana": check_grafana,
    "age-checksum": check_age,
    "slack": check_slack,
    "connection-string": check_connection_string,
    "basic-auth": check_basic_auth,
    "password": check_password,
    "generic-secret": check_generic_secret,
    "bearer-token": check_bearer_token,
    "npmrc": check_npmrc,
    "wireguard": check_wireguard,
    "putty-key": check_putty_key,
}

ALWAYS_FIRST: tuple[str, ...] = ("example", "placeholder")

# Verifiers that judge placeholders themselves: a password is often made of words
# ("Winter2024!") and still a password, so the token-body placeholder check must not decide it.
OWN_PLACEHOLDER_CHECK: frozenset[str] = frozenset(
    {"connection-string", "basic-auth", "password", "generic-secret", "bearer-token", "npmrc"}
)

NO_CHECK = Verification(Verdict.UNVERIFIED, "no offline check for this kind")


def prepare_verifiers() -> None:
    """Load the data every candidate's verification reads (documented examples, the word list) now.

    They are otherwise loaded on first use, once per process: a scan with worker processes calls
    this before forking them so that the workers share one copy instead of each parsing its own.
    """
    known_examples()
    dictionary()


def verify_candidate(candidate: Candidate, verifier_names: tuple[str, ...], context: VerifyContext) -> Verification:
    """Run ``example``, ``placeholder`` and then the named verifiers in order; the first with an opinion decides.

    Never raises: a verifier that fails is reported as ``unverified`` (blocking by default), naming the
    verifier and the exception type but never the secret.
    """
    own = bool(verifier_names) and verifier_names[0] in OWN_PLACEHOLDER_CHECK
    first = ("example",) if own else ALWAYS_FIRST
    names = first + tuple(n for n in verifier_names if n not in ALWAYS_FIRST)
    outcome: Verification | None = None
    for index, name in enumerate(names):
        try:
            outcome = VERIFIERS[name](candidate, context)
        except Exception as exc:  # a verifier bug must not crash the scan or echo the secret
            return Verification(Verdict.UNVERIFIED, f"verifier {name} failed ({type(exc).__name__})")
        if outcome is not None:
            if index < len(first):
                return outcome
            break
    outcome = outcome or NO_CHECK
    if own:
        return outcome
    if outcome.verdict != Verdict.VALID:
        # A weak placeholder signal (a body opening with "your") yields to a passed structural check only.
        return leading_placeholder(candidate.secret) or outcome
    return outcome

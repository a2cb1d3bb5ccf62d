"""Verify Discord bot tokens and webhook URLs offline through the ids they carry.

A bot token's first segment is the base64 of the bot's user id; a webhook URL carries the
webhook's id. Both ids are snowflakes: their high bits are milliseconds since 2015-01-01, so a
real one decodes to a moment between Discord's launch and now.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext
from shardscan.verifiers.common import b64url_decode

DISCORD_EPOCH_MS = 1_420_070_400_000
_LAUNCH = datetime(2015, 1, 1, tzinfo=UTC)
# A webhook as the rule reports it: "<id>/<token>" after discord.com/api/webhooks/.
_WEBHOOK = re.compile(r"([0-9]+)/([A-Za-z0-9_-]+)")


def snowflake_time(value: str) -> datetime | None:
    """When the snowflake ``value`` was minted; None when it is not a number of a snowflake's size."""
    if not value.isascii() or not value.isdigit() or not 15 <= len(value) <= 20 or value.startswith("0"):
        return None
    millis = (int(value) >> 22) + DISCORD_EPOCH_MS
    try:
        return datetime.fromtimestamp(millis / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None


def _judge_id(value: str, what: str, now: datetime) -> str | None:
    """None when ``value`` is a plausible snowflake, else why it is not."""
    moment = snowflake_time(value)
    if moment is None:
        return f"{what} is not a snowflake id"
    if moment < _LAUNCH or moment > now:
        return f"{what} is dated {moment.date().isoformat()}, outside Discord's lifetime"
    return None


def _minted_on(value: str) -> str:
    """The day a snowflake (already judged plausible) was minted."""
    moment = snowflake_time(value)
    return moment.date().isoformat() if moment is not None else "an unknown day"


def check_discord(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """``unverified`` for a token or webhook whose id is a plausible snowflake; ``invalid`` otherwise."""
    now = context.now if context.now.tzinfo else context.now.replace(tzinfo=UTC)
    webhook = _WEBHOOK.fullmatch(candidate.secret)
    if webhook:
        problem = _judge_id(webhook.group(1), "the webhook id", now)
        if problem:
            return Verification(Verdict.INVALID, f"Discord webhook URL whose {problem[4:]}: invented")
        return Verification(Verdict.UNVERIFIED, f"Discord webhook (id {webhook.group(1)}, created "
                                                f"{_minted_on(webhook.group(1))}): anyone can post "
                                                "to the channel with it")
    head = candidate.secret.split(".")[0]
    decoded = b64url_decode(head)
    user = decoded.decode("ascii", "replace") if decoded is not None else ""
    problem = _judge_id(user, "the first segment", now) if decoded is not None else "the first segment is not base64"
    if problem:
        return Verification(Verdict.INVALID, f"Discord bot token shape, but {problem} (real tokens encode the bot's "
                                             "user id): invented or mangled")
    return Verification(Verdict.UNVERIFIED, f"Discord bot token of user id {user} (account created "
                                            f"{_minted_on(user)}): controls the bot")

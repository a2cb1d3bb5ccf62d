"""Name the provider of an OpenAI-compatible ``sk-`` key from its shape and the words around it.

DeepSeek and Alibaba DashScope (Qwen) both issue ``sk-`` + 32 lowercase hex, Moonshot (Kimi)
``sk-`` + 48 alphanumerics, OpenRouter ``sk-or-v1-`` + 64 hex; none carries a checksum, so the
verdict stays ``unverified`` (blocking) and the detail only says which providers the shape and the
cell's text point to. A body that breaks its shape's alphabet or length is ``invalid``.
"""

from __future__ import annotations

import re

from shardscan.model import Candidate, Verdict, Verification
from shardscan.verifiers.base import VerifyContext

_OPENROUTER = re.compile(r"sk-or-v1-[0-9a-f]{64}")
_HEX32 = re.compile(r"sk-[0-9a-f]{32}")
_ALNUM48 = re.compile(r"sk-[A-Za-z0-9]{48}")
# Words that name a provider near its key, as environment variables, SDKs and base URLs write them.
_PROVIDERS = (
    ("DeepSeek", re.compile(r"deepseek", re.I)),
    ("DashScope (Qwen)", re.compile(r"dashscope|qwen|aliyuncs|bailian", re.I)),
    ("Moonshot (Kimi)", re.compile(r"moonshot|kimi", re.I)),
    ("OpenRouter", re.compile(r"openrouter", re.I)),
    ("SiliconFlow", re.compile(r"siliconflow", re.I)),
    ("Zhipu", re.compile(r"zhipu|bigmodel", re.I)),
)
_AROUND = 400  # characters of the cell on each side in which a provider name counts


def _named(candidate: Candidate, text: str) -> list[str]:
    # The offsets of an encoded candidate are those of a decoded view: look at the cell's start instead.
    around = text[:4096] if candidate.encoding else text[max(0, candidate.start - _AROUND) : candidate.end + _AROUND]
    return [name for name, words in _PROVIDERS if words.search(around)]


def _mention(names: list[str]) -> str:
    return f"; the text names {', '.join(names)}" if names else ""


def check_sk_key(candidate: Candidate, context: VerifyContext) -> Verification | None:
    """Checks the shape (sk-or-v1- + 64 hex, sk- + 32 hex, sk- + 48 alphanumerics) and names the
    provider from the text around it."""
    key = candidate.secret
    names = _named(candidate, context.text)
    if key.startswith("sk-or-"):
        if _OPENROUTER.fullmatch(key):
            return Verification(Verdict.UNVERIFIED, "OpenRouter API key (sk-or-v1- and 64 hex), no checksum to check "
                                                    "offline")
        return Verification(Verdict.INVALID, f"OpenRouter-prefixed key of {len(key)} characters that is not sk-or-v1- "
                                             "and 64 hex: invented or cut")
    if _HEX32.fullmatch(key):
        return Verification(
            Verdict.UNVERIFIED,
            f"sk- and 32 hex: the shape of DeepSeek and DashScope (Qwen) keys{_mention(names)}; no checksum to check "
            "offline",
        )
    if _ALNUM48.fullmatch(key) and "T3BlbkFJ" not in key:
        return Verification(
            Verdict.UNVERIFIED,
            f"sk- and 48 alphanumerics: the shape of Moonshot (Kimi) keys{_mention(names)}; no checksum to check "
            "offline",
        )
    return Verification(
        Verdict.UNVERIFIED,
        f"sk- key of {len(key)} characters in a shape no specific rule knows{_mention(names)}; reported so a new "
        "provider's key does not pass",
    )

"""A shell prompt glued to the output before it (a file printed without its final newline), split off.

Terminal captures of agent sessions (tmux panes, pty logs) show ``cat ~/.cache/huggingface/token``
as the token immediately followed by the next prompt, ``hf_…root@4f2a:/app#``: the token file has
no trailing newline. Read as written, the prompt's user name extends the token (a fixed-length
token no longer ends where it must, a JWT's signature gains four letters). This decoder puts a
line break before such a prompt. Only the user names that containers and CI machines use are
recognised, so the split is exact: a token never holds ``@``, and the prompt starts at its user.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, decode_in_place

NAME = "shell-prompt"

_USERS = (
    "root|ubuntu|user|runner|vscode|jovyan|node|app|admin|ec2-user|codespace|coder|dev|developer|agent|sandbox|"
    "ray|docker|debian|pi|azureuser|builder|worker|ci|gitpod|runner-admin"
)
# The rest of a prompt after its user: @host:path, then # or $ (bash's and zsh's defaults).
_PROMPT_REST = r"@[A-Za-z0-9][A-Za-z0-9.-]{0,62}:[^\s@]{0,200}?[#$]"
_GLUED = re.compile(r"(?<=[A-Za-z0-9_=+/-])(?:%s)(?=%s)" % (_USERS, _PROMPT_REST))
_SPLIT = re.compile(r"\n((?:%s)%s)" % (_USERS, _PROMPT_REST))


def _replace(match: re.Match[str]) -> str:
    return "\n" + match.group(0)


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with a line break before every glued prompt (nothing when there is none)."""
    yield from decode_in_place(request, "@", _GLUED, _replace)


def encode(text: str) -> str:
    """The inverse: every prompt that starts a line glued to the line before it."""
    return _SPLIT.sub(r"\1", text)


DECODER = Decoder(name=NAME, decode=decode, encode=encode, text_transform=True, trigger="@")

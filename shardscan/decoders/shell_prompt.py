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

from shardscan.decoders.base import Decoded, Decoder, DecodeRequest, OffsetMap

NAME = "shell-prompt"

_USERS = (
    "root|ubuntu|user|runner|vscode|jovyan|node|app|admin|ec2-user|codespace|coder|dev|developer|agent|sandbox|"
    "ray|docker|debian|pi|azureuser|builder|worker|ci|gitpod|runner-admin|openhands|appuser|nonroot|jenkins|"
    "circleci|vagrant|centos|fedora|alpine|devuser|sagemaker-user|I have no name!"
)
# What follows a user at the start of a prompt: @host:path and # or $ (bash's and zsh's defaults),
# or a dev container's arrow ("vscode ➜ /workspaces/app $"). bash's own prompt needs no user
# ("bash-5.2# ", SWE-agent's "bash-$ "), nor sh's ("sh-5.1$ "). A container run with a user ID
# that /etc/passwd lacks shows "I have no name!@host:/app$ ".
_AT_REST = re.compile(r"@[A-Za-z0-9][A-Za-z0-9.-]{0,62}:[^\s@]{0,200}?[#$]")
_ARROW = " ➜ "
_SH = "sh-"  # the end of "bash-" too
# The "not after ba" test follows the literal "sh-" it guards: a lookbehind leading a branch would be
# tried at every position of the text.
_SH_PROMPT = re.compile(r"bash-(?:[0-9][0-9.]{0,8})?[#$] |sh-(?<!bash-)[0-9][0-9.]{0,8}[#$] ")
_USER_BEFORE = re.compile(rf"(?:{_USERS})\Z")
_SPLIT = re.compile(
    r"\n(?=(?:" + _USERS + r")(?:@[A-Za-z0-9][A-Za-z0-9.-]{0,62}:[^\s@]{0,200}?[#$]| ➜ )"
    r"|bash-(?:[0-9][0-9.]{0,8})?[#$] |sh-[0-9][0-9.]{0,8}[#$] )"
)
# What a glued prompt follows: the last character of a token (or of other output).
_GLUE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_=+/-")
_LONGEST_USER = max(len(u) for u in _USERS.split("|"))


def _prompt_starts(text: str) -> list[int]:
    """Where glued prompts start, found from their marks (``@``, `` ➜ ``, ``sh-``) with C-speed
    searches, so that a long text without prompts costs a few scans, not a regex at every position."""
    starts: set[int] = set()
    for mark, rest in (("@", _AT_REST), (_ARROW, None)):
        at = text.find(mark)
        while at >= 0:
            if rest is None or rest.match(text, at):
                user = _USER_BEFORE.search(text, max(0, at - _LONGEST_USER), at)
                if user is not None:
                    starts.add(user.start())
            at = text.find(mark, at + 1)
    # sh's prompt always shows its version ("sh-5.1$ "); SWE-agent's bash prompt may not. (One
    # regex pass: "sh-" alone is common in prose and paths.)
    if _SH in text:
        starts.update(match.start() for match in _SH_PROMPT.finditer(text))
    return sorted(p for p in starts if p > 0 and text[p - 1] in _GLUE)


def decode(request: DecodeRequest) -> Iterator[Decoded]:
    """Yield the view with a line break before every glued prompt (nothing when there is none)."""
    text, within = request.text, request.within
    starts = [p for p in _prompt_starts(text) if within is None or within.touches(p, p + 1)]
    if not starts:
        return
    pieces: list[str] = []
    cursor = 0
    for at in starts:
        pieces += [text[cursor:at], "\n"]
        cursor = at
    pieces.append(text[cursor:])
    # Each inserted break maps to the empty span before the prompt it splits off.
    dec = tuple(at + shift for shift, at in enumerate(starts))
    offsets = OffsetMap(dec, tuple(d + 1 for d in dec), tuple(starts), tuple(starts))
    yield Decoded(0, len(text), "".join(pieces), offsets)


def encode(text: str) -> str:
    """The inverse: every prompt that starts a line glued to the line before it."""
    return _SPLIT.sub("", text)


# The arrow alone as a trigger: absent from ASCII text, it is rejected without a scan.
DECODER = Decoder(name=NAME, decode=decode, encode=encode, text_transform=True, trigger=("@", _SH, "➜"))

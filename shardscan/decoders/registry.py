"""The registry of decoders: every decoder by the name that appears in a finding's decode chain."""

from __future__ import annotations

# Imported by full name, not through this package: the package re-exports the registry.
import shardscan.decoders.ansi as ansi
import shardscan.decoders.base64_ as base64_
import shardscan.decoders.hex_escape as hex_escape
import shardscan.decoders.hexdump as hexdump
import shardscan.decoders.html_entities as html_entities
import shardscan.decoders.json_string as json_string
import shardscan.decoders.percent as percent
import shardscan.decoders.shell_prompt as shell_prompt
import shardscan.decoders.string_concat as string_concat
import shardscan.decoders.terminal_wrap as terminal_wrap
from shardscan.decoders.base import Decoder

DECODERS: dict[str, Decoder] = {
    json_string.NAME: json_string.DECODER,
    percent.NAME: percent.DECODER,
    base64_.NAME: base64_.DECODER,
    html_entities.NAME: html_entities.DECODER,
    hex_escape.NAME: hex_escape.DECODER,
    string_concat.NAME: string_concat.DECODER,
    shell_prompt.NAME: shell_prompt.DECODER,
    terminal_wrap.NAME: terminal_wrap.DECODER,
    ansi.NAME: ansi.DECODER,
    hexdump.NAME: hexdump.DECODER,
}
"""Every decoder, by the name that appears in a finding's decode chain."""


def triggers_of(decoder: Decoder) -> tuple[str, ...]:
    """A decoder's triggers as a tuple (its ``trigger`` may be one string)."""
    return (decoder.trigger,) if isinstance(decoder.trigger, str) else decoder.trigger

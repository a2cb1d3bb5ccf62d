"""Property tests: decoders never raise on arbitrary input, round-trip their encoders, map offsets back."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shardscan.decoders import DECODERS, DecodeLimits, KeywordSet, base64_, views
from shardscan.decoders.base import DecodeRequest
from shardscan.ruleset import load_ruleset

KEYWORDS = KeywordSet.build(load_ruleset().keywords)
# Decoders that turn escapes into characters in place (string-concat removes separators instead; its
# round trip is below).
# Decoders that turn each escape into what it stands for; string-concat joins literals and
# shell-prompt inserts line breaks, so a character of theirs need not come from one of the input.
ESCAPE_DECODERS = [name for name, d in DECODERS.items()
                   if d.text_transform and name not in ("string-concat", "shell-prompt", "terminal-wrap", "ansi")]

# Text of any kind, rich in the characters decoders react to.
hostile = st.text(
    alphabet=st.one_of(
        st.characters(),
        st.sampled_from(list("\\u%&#x;=+/-_nrt\"0123456789abcdefABCDEF\n ")),
    ),
    max_size=400,
)
# Text that encoders can represent exactly: no lone surrogates, no NUL (HTML maps &#0; to U+FFFD).
representable = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=200)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(text=hostile, name=st.sampled_from(list(DECODERS)), continued=st.booleans())
def test_decoders_never_raise(text, name, continued):
    for decoded in DECODERS[name].decode(DecodeRequest(text, continued=continued)):
        assert 0 <= decoded.start <= decoded.end <= len(text)


@SETTINGS
@given(text=hostile, depth=st.integers(0, 4))
def test_views_never_raise_and_spans_stay_in_the_cell(text, depth):
    limits = DecodeLimits(max_depth=depth, max_bytes=5000, max_views=20)
    for keywords in (None, KEYWORDS):
        for view in views(text, limits, lambda message: None, keywords):
            assert len(view.encoding) <= depth
            start, end = view.original_span(0, len(view.text))
            assert 0 <= start <= end <= len(text)


@SETTINGS
@given(text=representable, name=st.sampled_from(ESCAPE_DECODERS))
def test_escape_decoders_round_trip_with_exact_offsets(text, name):
    decoder = DECODERS[name]
    encoded = decoder.encode(text)
    decoded = list(decoder.decode(DecodeRequest(encoded)))
    if encoded == text:
        assert decoded == []
        return
    [segment] = decoded
    assert segment.text == text
    offsets = segment.offsets
    # Every character maps back to exactly its own encoded form.
    cursor = 0
    for i, char in enumerate(text):
        start, end = offsets.start_in_parent(i), offsets.end_in_parent(i + 1)
        assert start == cursor
        piece = encoded[start:end]
        [back] = list(decoder.decode(DecodeRequest(piece))) or [None]
        assert (back.text if back else piece) == char
        cursor = end
    assert cursor == len(encoded)


@SETTINGS
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=20, max_size=300))
def test_base64_round_trips(text):
    decoder = DECODERS["base64"]
    encoded = decoder.encode(text)
    cell = f"value: {encoded} end"
    segments = [d for d in decoder.decode(DecodeRequest(cell)) if (d.start, d.end) == (7, 7 + len(encoded))]
    if encoded.startswith(("iVBORw0KGgo", "/9j/", "R0lGODdh", "R0lGODlh", "UklGR")):
        return  # image magic: skipped by design
    [segment] = segments
    assert segment.text == text


@SETTINGS
@given(text=st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\"'"), max_size=400))
def test_string_concat_round_trip_maps_the_joined_text_back_to_every_literal(text):
    """Text without quotes, split into joined literals, reads back exactly; its span covers every literal."""
    decoder = DECODERS["string-concat"]
    text = "-----BEGIN PRIVATE KEY-----" + text  # the decoder only joins texts holding a key marker
    encoded = decoder.encode(text)
    decoded = list(decoder.decode(DecodeRequest(encoded)))
    if len(text) <= 64:
        assert decoded == []  # one literal: nothing to join
        return
    [segment] = decoded
    assert segment.text == '"' + text + '"'
    start, end = segment.offsets.start_in_parent(1), segment.offsets.end_in_parent(len(text) + 1)
    assert (start, end) == (1, len(encoded) - 1)


def _runs_read_line_by_line(text: str) -> list[tuple[int, int, str]]:
    """Every base64 run of ``text`` read with the run patterns, line by line (no first-line shortcut)."""
    mapped = text.encode("ascii", "replace").translate(base64_._RUN_MAP)
    padded = " " + text
    out: list[tuple[int, int, str]] = []
    pos = 0
    while (start := mapped.find(base64_._RUN_NEEDLE, pos)) >= 0:
        line_end = mapped.find(b" ", start)
        line_end = len(mapped) if line_end < 0 else line_end
        image = text.startswith(base64_.IMAGE_MAGIC, start)
        run = None if image else next(base64_._runs_in(padded, start, len(padded)), None)
        if run is None:
            pos = line_end
        else:
            out.append(run)
            pos = run[1]
    return out


# Base64 lines of the lengths wrapping produces (and near them), the breaks between them, padding,
# image magic and words: the material that decides where a run ends.
run_material = st.lists(
    st.one_of(
        st.integers(1, 80).map(lambda n: ("QUJD" * 20)[:n]),
        st.integers(20, 80).map(lambda n: ("ghp_x0f9" * 10)[:n]),
        st.sampled_from(["\n", "\r\n", "\\n", "\\r\\n", "\n  ", "\t", " ", "=", "==", ".", '"', "é", "\\",
                         "iVBORw0KGgo", "/9j/", "ab"]),
    ),
    max_size=30,
).map("".join)


@SETTINGS
@given(text=run_material)
def test_base64_runs_shortcut_reads_runs_as_the_run_patterns_do(text):
    """Most runs are taken as their first line without the run patterns; the runs found are the same."""
    assert list(base64_.runs(text)) == _runs_read_line_by_line(text)

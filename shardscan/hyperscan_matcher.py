"""Hyperscan over whole Arrow string arrays: which cells hold a match of any prefilter pattern.

RE2 (``pyarrow.compute.match_substring_regex``) runs a keyword alternation at a few hundred MB/s
and recompiles it for every call; Hyperscan runs the same patterns as one multi-pattern automaton
over the array's contiguous data buffer at several times that speed, without copying it. This
module is the optional fast path of :mod:`shardscan.prefilter`: where the ``hyperscan`` wheel is
not installed (it ships for x86-64 and Apple silicon), or ``SHARDSCAN_MATCHER=re2`` asks for it,
:func:`database` returns ``None`` and the prefilter uses RE2.

Compiling the keyword patterns takes Hyperscan a few tenths of a second, more than a small scan,
so a compiled database is kept in memory for the process (forked workers inherit it) and, when
the caller names a ``cache_dir`` (a scan with a result cache: ``<cache>/hyperscan``), serialised
there, keyed by the patterns, the flags, the bindings' version and the machine. A cache file holds
no scanned data, only the compiled keyword patterns. A database that matches nothing would make
every scan pass, so a file is loaded only if its HMAC verifies under the cache key kept outside
the cache folder (:mod:`shardscan.local_state`); any other file is compiled again. Without a
``cache_dir`` (``--no-cache``) no file is read or written, and a database loaded from a file
earlier in the process is not reused either.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import platform
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from shardscan.local_state import atomic_write, cache_key, seal, unseal

try:
    import hyperscan
except ImportError:  # no wheel for this platform: the prefilter uses RE2
    hyperscan = None  # type: ignore[assignment]  # the module or None: every use checks enabled() first

__all__ = [
    "BATCH_MATCHES", "Compiled", "DENSE_AFTER_HITS", "DENSE_SHARE", "MATCHER_ENV", "PATTERN_CACHE_DIR",
    "UNICODE_SINGLE_MATCH", "CellMatches", "any_match", "compile_ahead", "database", "enabled", "first_match_cells",
    "hyperscan", "ids_per_cell", "match_cells", "spelled_out",
]

log = logging.getLogger(__name__)

MATCHER_ENV = "SHARDSCAN_MATCHER"
PATTERN_CACHE_DIR = "hyperscan"  # the folder of compiled databases inside a cache folder
_CACHE_FORMAT = b"shardscan-hyperscan-5\n"
# Per process, by (expressions, flags, partial, ids, cache_dir); ``None`` records a pattern set
# Hyperscan refused. The folder is part of the key, so a database read from a file is never
# handed to a caller that asked for no local state (``cache_dir=None``).
_DATABASES: dict[tuple[tuple[str, ...], int, bool, tuple[int, ...], Path | None], Compiled | None] = {}

# Flags for patterns over text (rule gates): Unicode classes, each pattern reported once per scan.
UNICODE_SINGLE_MATCH = (
    hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP | hyperscan.HS_FLAG_SINGLEMATCH if hyperscan is not None else 0
)

# When most cells match, finishing the array with RE2 is cheaper than a callback per match; and
# a scan call stops after this many matches, resuming after the cell of the last one; see
# :func:`first_match_cells`.
DENSE_AFTER_HITS = 1024
DENSE_SHARE = 8
BATCH_MATCHES = 512


def enabled() -> bool:
    """Whether Hyperscan is installed and not switched off with ``SHARDSCAN_MATCHER=re2``."""
    return hyperscan is not None and os.environ.get(MATCHER_ENV, "").lower() != "re2"


@dataclass(frozen=True, slots=True)
class Compiled:
    """A compiled database and the ids of the expressions it holds (Hyperscan refuses some).

    A match reports its expression's id, except where the database compiled an expression as its
    literals, each under an id of its own (see :func:`_build`): ``aliases[reported]`` is then the
    expression's id (:meth:`expression_id`; :func:`match_cells` takes the aliases), and
    :meth:`reported_ids` gives the ids to look for among the reported ones.
    """

    db: Any
    ids: tuple[int, ...]
    aliases: np.ndarray | None = field(default=None, compare=False)  # reported id -> expression id (None: the same)
    _reported: dict[frozenset[int], frozenset[int]] = field(default_factory=dict, compare=False, repr=False)

    def expression_id(self, reported: int) -> int:
        """The expression id of one reported id."""
        return reported if self.aliases is None else int(self.aliases[reported])

    def reported_ids(self, ids: frozenset[int]) -> frozenset[int]:
        """The ids this database reports for the expressions with ``ids`` (kept per set of ids)."""
        if self.aliases is None:
            return ids
        found = self._reported.get(ids)
        if found is None:
            wanted = np.fromiter(ids, dtype=np.int64, count=len(ids))
            found = self._reported[ids] = frozenset(np.flatnonzero(np.isin(self.aliases, wanted)).tolist())
        return found


def database(
    expressions: Sequence[str],
    flags: int = 0,
    *,
    partial: bool = False,
    ids: Sequence[int] | None = None,
    cache_dir: Path | None = None,
) -> Compiled | None:
    """The compiled block-mode database of ``expressions`` (each with ``flags``), or ``None``.

    A match reports its expression's id: ``ids[i]`` for ``expressions[i]`` (default: ``i``), read
    through :meth:`Compiled.expression_id` (a trie of literals reports ids of its own).
    ``None`` when Hyperscan is not enabled, or when it refuses a pattern and ``partial`` is false;
    the caller then uses RE2. With ``partial``, refused patterns are left out (see
    :attr:`Compiled.ids`) and the caller runs them in RE2. ``cache_dir`` is the folder of sealed
    compiled databases to reuse and fill; ``None`` compiles in memory and touches no file.
    """
    if not enabled() or not expressions:
        return None
    # Asked again with the very same objects (a scanner's expressions, per window of a long cell):
    # answered without hashing every expression again. Valid while the memo below is the same one.
    quick = (id(expressions), flags, partial, id(ids), cache_dir)
    held = _BY_IDENTITY.get(quick)
    if held is not None and held[0] is expressions and held[1] is ids and held[2] is _DATABASES:
        return held[3]
    found = _database(expressions, flags, partial, ids, cache_dir)
    if len(_BY_IDENTITY) >= 64:
        _BY_IDENTITY.clear()
    _BY_IDENTITY[quick] = (expressions, ids, _DATABASES, found)
    return found


# database()'s answers by the identity of its arguments (kept alive here, so the ids stay theirs).
_BY_IDENTITY: dict[tuple[int, int, bool, int, Path | None], tuple[Any, Any, Any, Compiled | None]] = {}


def _database(
    expressions: Sequence[str], flags: int, partial: bool, ids: Sequence[int] | None, cache_dir: Path | None
) -> Compiled | None:
    """:func:`database`, looked up by the expressions' values."""
    ids = tuple(ids) if ids is not None else tuple(range(len(expressions)))
    # A database compiled in this process serves every later request for the same patterns, with
    # a cache folder or without (it was never read from disk); one loaded from a cache folder
    # serves requests naming that folder only, so that --no-cache never runs a loaded database.
    compiled_here = (tuple(expressions), flags, partial, ids, None)
    memo = compiled_here[:-1] + (cache_dir,)
    pending = _PENDING.pop(compiled_here, None)
    if pending is not None:  # being compiled in the background (compile_ahead): wait for it
        _DATABASES[compiled_here] = pending.result()
    if compiled_here in _DATABASES:
        compiled = _DATABASES[compiled_here]
        if cache_dir is not None and memo not in _DATABASES:
            # Compiled earlier in this process without a cache folder: keep it there for later runs.
            _DATABASES[memo] = compiled
            if compiled is not None:
                key = _key(expressions, flags, partial, ids)
                _store(cache_dir / f"{key}.db", key, _payload(compiled))
        return compiled
    if memo not in _DATABASES:
        key = _key(expressions, flags, partial, ids)
        path = cache_dir / f"{key}.db" if cache_dir is not None else None
        loaded = _load(path, key) if path is not None else None
        if loaded is not None:
            _DATABASES[memo] = loaded
        else:
            _DATABASES[compiled_here] = _compile(path, key, expressions, ids, flags, partial)
            return _DATABASES[compiled_here]
    return _DATABASES[memo]


def _usable_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


# Background compilations run at most one per usable core, in the order they were started: more
# at once only slow each other down, the prefilter's (started first, the longest, the one the
# first scan waits for) among them. (Every compilation has ended before a fork: see _finish_pending.)
_COMPILE_SLOTS = threading.BoundedSemaphore(max(1, _usable_cores()))


class _Background:
    """One compilation running in a thread of its own (Hyperscan releases the GIL while it compiles)."""

    def __init__(self, job: Callable[[], Compiled | None]) -> None:
        self._job = job
        self._value: Compiled | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="hyperscan-compile", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            with _COMPILE_SLOTS:
                self._value = self._job()
        except BaseException as error:  # handed to the thread that asks for the database
            self._error = error

    def result(self) -> Compiled | None:
        """The compiled database, once the compilation has finished (its error, if it failed)."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value


# Compilations started by compile_ahead and not yet asked for, by the key of compiled_here.
_PENDING: dict[tuple[tuple[str, ...], int, bool, tuple[int, ...], Path | None], _Background] = {}


def compile_ahead(
    expressions: Sequence[str], flags: int = 0, *, partial: bool = False, ids: Sequence[int] | None = None,
) -> None:
    """Start compiling the database :func:`database` will return for these arguments (without a cache
    folder) in a background thread, and return at once.

    Without a pattern cache a scan compiles three databases before reading a byte, each a few
    tenths of a second on one core: started ahead, the prefilter's compiles while the caller goes
    on to the next one. :func:`database` waits for it; so does every ``os.fork`` (worker processes
    inherit the finished database, never a compilation cut in half).
    """
    if not enabled() or not expressions:
        return
    ids = tuple(ids) if ids is not None else tuple(range(len(expressions)))
    here = (tuple(expressions), flags, partial, ids, None)
    if here in _DATABASES or here in _PENDING:
        return
    key = _key(expressions, flags, partial, ids)
    _PENDING[here] = _Background(lambda: _compile(None, key, here[0], here[3], flags, partial))


def _finish_pending() -> None:
    """Wait for every background compilation (before a fork: a child gets no thread of its parent)."""
    while _PENDING:
        here, pending = _PENDING.popitem()
        # A failure is raised again where the database is asked for, compiled there in the open.
        with contextlib.suppress(Exception):
            _DATABASES[here] = pending.result()


os.register_at_fork(before=_finish_pending)


@dataclass(frozen=True, slots=True)
class CellMatches:
    """What one scan of a string array's data buffer learnt (see :func:`match_cells`).

    ``mask``: the cells holding a match; ``scanned``: the first cell left unscanned (the rest is
    for RE2: dense matches); ``offsets``: the array's value offsets. When recorded, ``ends`` are
    every match's end (an offset into the buffer, past its last byte) with the expression ``ids``
    in the same order, and ``cut`` the cells whose scan stopped inside them (their later matches
    were not reported).
    """

    mask: np.ndarray
    scanned: int
    offsets: np.ndarray
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    cut: frozenset[int] = frozenset()


def _stop(*_match: object) -> bool:
    return True  # the first match answers the question: stop the scan


def any_match(compiled: Compiled, data: bytes, ids: frozenset[int] | None = None) -> bool:
    """Whether any expression of ``compiled`` (of those with ``ids``, default: all) matches in
    ``data`` (one scan, stopped at the first such match)."""
    stop = _stop if ids is None else partial(_stop_at, compiled.reported_ids(ids))
    try:
        compiled.db.scan(data, match_event_handler=stop)
    except hyperscan.ScanTerminated:
        return True
    return False


def _stop_at(ids: frozenset[int], expression_id: int, *_match: object) -> bool:
    return expression_id in ids


def first_match_cells(db: Any, offsets: np.ndarray, data: memoryview) -> tuple[np.ndarray, int]:
    """The mask of cells holding a match and the first cell left unscanned (see :func:`match_cells`)."""
    found = match_cells(db, offsets, data)
    return found.mask, found.scanned


def match_cells(
    db: Any, offsets: np.ndarray, data: memoryview, *, record: bool = False, aliases: np.ndarray | None = None
) -> CellMatches:
    """Cells of a string array that hold a match, scanning its data buffer in as few calls as possible.

    ``offsets`` are the array's ``len + 1`` value offsets into ``data``. One call scans the whole
    buffer; each match selects the cell its last byte lies in. A match only notes where it ended
    (a Python callback each, so it must be cheap); the cells are found for all of them at once
    with numpy. After :data:`BATCH_MATCHES` matches the call stops, and the scan resumes after
    the cell of the last one: a cell holding a keyword a million times costs one batch, not a
    million callbacks. A match that starts in the previous cell's bytes selects the later cell
    too: the prefilter is a superset filter, and such a cell is then scanned exactly. Patterns
    must not rely on ``^``: a cell is not the start of a scan.

    The scan gives up early when matches are dense (most cells selected), where one RE2 pass over
    the rest costs less than a callback per match. With ``record``, every match's end and
    expression id is kept too (the cell stage's hit windows need them, and would otherwise scan
    each long candidate cell again): the id reported, or ``aliases[id]`` (see :class:`Compiled`).
    """
    cells = len(offsets) - 1
    mask = np.zeros(cells, dtype=bool)
    if cells == 0:
        return CellMatches(mask, 0, offsets)
    end = int(offsets[-1])
    position = int(offsets[0])
    ends: list[int] = []  # each match's end, relative to ``position``
    ids: list[int] = []
    kept_ends: list[np.ndarray] = []
    kept_ids: list[np.ndarray] = []
    cut: list[int] = []
    note = ends.append

    note_id = ids.append

    def on_match_recorded(expression_id: int, _start: int, to: int, _flags: int, _context: object) -> bool:
        note(to)
        note_id(expression_id)
        return len(ends) >= BATCH_MATCHES

    def on_match_end(_id: int, _start: int, to: int, _flags: int, _context: object) -> bool:
        note(to)
        return len(ends) >= BATCH_MATCHES

    on_match = on_match_recorded if record else on_match_end

    scanned = cells
    while position < end:
        ends.clear()
        ids.clear()
        with contextlib.suppress(hyperscan.ScanTerminated):
            db.scan(data[position:end], match_event_handler=on_match)
        if not ends:
            break
        last_bytes = np.array(ends, dtype=np.int64) + (position - 1)
        touched = np.searchsorted(offsets, last_bytes, side="right") - 1
        mask[touched] = True
        if record:
            kept_ends.append(last_bytes + 1)
            kept_ids.append(np.array(ids, dtype=np.int64))
        if len(ends) < BATCH_MATCHES:
            break  # the call reached the end of the buffer
        last = int(touched[-1])
        cut.append(last)
        selected = int(np.count_nonzero(mask[: last + 1]))
        if selected >= DENSE_AFTER_HITS and selected * DENSE_SHARE > last + 1:
            scanned = last + 1
            break
        position = int(offsets[last + 1])  # the rest of that cell cannot change its selection
    if not record:
        return CellMatches(mask, scanned, offsets)
    all_ends = np.concatenate(kept_ends) if kept_ends else np.zeros(0, dtype=np.int64)
    all_ids = np.concatenate(kept_ids) if kept_ids else np.zeros(0, dtype=np.int64)
    if aliases is not None:
        all_ids = aliases[all_ids]
    if all_ends.size and np.any(all_ends[1:] < all_ends[:-1]):  # (in end order, for a search per cell)
        order = np.argsort(all_ends, kind="stable")
        all_ends, all_ids = all_ends[order], all_ids[order]
    return CellMatches(mask, scanned, offsets, all_ends, all_ids, frozenset(cut))


def ids_per_cell(compiled: Compiled, offsets: Sequence[int], data: memoryview) -> list[set[int]]:
    """For each cell, the ids of the expressions that match inside it (one call per cell).

    For a handful of cells, such as the prefilter's candidates; compile with
    ``HS_FLAG_SINGLEMATCH`` so that a pattern reports once per cell.
    """
    def note(expression_id: int, _start: int, _to: int, _flags: int, found: set[int]) -> None:
        found.add(expression_id)

    out: list[set[int]] = []
    for cell in range(len(offsets) - 1):
        out.append(set())
        compiled.db.scan(data[offsets[cell] : offsets[cell + 1]], match_event_handler=note, context=out[-1])
    if compiled.aliases is not None:
        out = [{compiled.expression_id(i) for i in found} for found in out]
    return out


# ---- compiling and caching --------------------------------------------------------------


def _key(expressions: Sequence[str], flags: int, partial: bool, ids: Sequence[int]) -> str:
    digest = hashlib.sha256(_CACHE_FORMAT)
    settings = (getattr(hyperscan, "__version__", "?"), platform.machine(), platform.system(), str(flags), str(partial),
                ",".join(map(str, ids)))
    for part in settings:
        digest.update(part.encode() + b"\0")
    for expression in expressions:
        digest.update(expression.encode("utf-8") + b"\0")
    return digest.hexdigest()


def _build(expressions: Sequence[str], ids: Sequence[int], flags: int) -> tuple[Any, np.ndarray | None]:
    """The compiled database of ``expressions`` under ``ids``, and its aliases (see :class:`Compiled`)."""
    aliases = None
    if flags == 0:
        # A trie of literals (the terminal-wrap decoder's cut keywords) compiles several times
        # faster as its literals, and those again several times faster (0.23 s -> 0.03 s for the
        # 2,700 of the built-in rules' tries) each under an id of its own rather than all under the
        # trie's: a match reports the literal's id, which ``aliases`` maps back to the trie's.
        # Hyperscan reports a match by the end offset and the id alone, so the callers see the
        # same matches (a literal that ends another one reports that end twice, which they
        # tolerate: they collect ends).
        spelled: list[str] = []
        reported: list[int] = []
        owners: list[int] = []  # the expression id of each literal given an id of its own
        first = max(ids, default=-1) + 1
        for expression, expression_id in zip(expressions, ids, strict=True):
            literals = spelled_out(expression)
            if literals is None or len(literals) == 1:
                spelled.append(literals[0] if literals is not None else expression)
                reported.append(expression_id)
                continue
            spelled += literals
            reported += range(first + len(owners), first + len(owners) + len(literals))
            owners += [expression_id] * len(literals)
        if owners:
            aliases = np.full(first + len(owners), -1, dtype=np.int64)  # (-1: an id no match reports)
            kept = np.array([i for i in reported if i < first], dtype=np.int64)
            aliases[kept] = kept
            aliases[first:] = owners
        expressions, ids = spelled, reported
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[e.encode("utf-8") for e in expressions], ids=list(ids), elements=len(ids), flags=flags)
    return db, aliases


# At most this many literals replace one expression (a trie of a hundred keywords' cuts: ~600).
MAX_SPELLINGS = 1024
_ESCAPES = {"n": "\\n", "r": "\\r", "t": "\\t"}
_META = frozenset(".^$*+?{}[]()|\\")


def spelled_out(expression: str) -> list[str] | None:
    """The literals (as expressions) ``expression`` matches when it is only ASCII literals, escapes,
    ``(?:…|…)`` groups and ``?`` (a trie), and they number at most :data:`MAX_SPELLINGS`; else None.

    Literals are kept escaped (``\\-``, ``\\n``); anything else (a class, a repeat, an anchor) gives None.
    """
    if "[" in expression or "{" in expression or "*" in expression or "+" in expression:
        return None  # (the common case, decided without parsing)
    try:
        spellings, end = _alternation(expression, 0)
    except ValueError:
        return None
    if end != len(expression) or "" in spellings:
        return None
    return list(dict.fromkeys(spellings))


def _alternation(expression: str, at: int) -> tuple[list[str], int]:
    out, at = _sequence(expression, at)
    while at < len(expression) and expression[at] == "|":
        more, at = _sequence(expression, at + 1)
        out += more
        if len(out) > MAX_SPELLINGS:
            raise ValueError("too many spellings")
    return out, at


def _sequence(expression: str, at: int) -> tuple[list[str], int]:
    out = [""]
    while at < len(expression) and expression[at] not in "|)":
        char = expression[at]
        if expression.startswith("(?:", at):
            atom, at = _alternation(expression, at + 3)
            if at >= len(expression) or expression[at] != ")":
                raise ValueError("unclosed group")
            at += 1
        elif char == "\\" and at + 1 < len(expression):
            following = expression[at + 1]
            if following in _ESCAPES:
                atom = [_ESCAPES[following]]
            elif following.isascii() and not following.isalnum() and following.isprintable():
                atom = ["\\" + following]
            else:
                raise ValueError("an escape that is not a literal")
            at += 2
        elif char in _META or not char.isascii() or not char.isprintable():
            raise ValueError("not a literal")
        else:
            atom = [char]
            at += 1
        if at < len(expression) and expression[at] == "?":
            atom = [*atom, ""]
            at += 1
        out = [head + tail for head in out for tail in atom]
        if len(out) > MAX_SPELLINGS:
            raise ValueError("too many spellings")
    return out, at


def _compile(
    path: Path | None, key: str, expressions: Sequence[str], ids: Sequence[int], flags: int, partial: bool
) -> Compiled | None:
    kept = list(range(len(expressions)))
    try:
        # All at once first: with --no-cache this runs on every start, and probing each pattern
        # on its own doubles the time when (as for the built-in rules) Hyperscan takes them all.
        db, aliases = _build(expressions, ids, flags)
    except hyperscan.error:
        if not partial:
            return None  # a pattern Hyperscan cannot compile: RE2 runs them all
        # Hyperscan does not say which pattern it refused: probe each on its own (once per
        # process, and once per cache folder when there is one).
        kept = [i for i in kept if _compiles(expressions[i], flags)]
        if not kept:
            return None
        try:
            db, aliases = _build([expressions[i] for i in kept], [ids[i] for i in kept], flags)
        except hyperscan.error:
            return None
    compiled = Compiled(db, tuple(ids[i] for i in kept), aliases)
    if path is not None:
        _store(path, key, _payload(compiled))
    return compiled


def _compiles(expression: str, flags: int) -> bool:
    try:
        _build([expression], [0], flags)
        return True
    except hyperscan.error:
        return False


def _payload(compiled: Compiled) -> bytes:
    """What a cache file holds: the expression ids, the aliases (empty: none), the serialised database."""
    aliases = compiled.aliases.tolist() if compiled.aliases is not None else []
    return b"\n".join((",".join(map(str, compiled.ids)).encode(), ",".join(map(str, aliases)).encode(),
                       hyperscan.dumpb(compiled.db)))


def _store(path: Path, key: str, payload: bytes) -> None:
    """Write the sealed compiled database atomically; a cache that cannot be written (or no key) only costs time."""
    secret = cache_key()
    if secret is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, seal(secret, _label(key), payload))
    except OSError:
        pass


def _label(key: str) -> str:
    # The seal names the pattern set: a genuine database of other patterns, copied under this
    # set's name, does not verify.
    return f"hyperscan\0{_CACHE_FORMAT.decode()}\0{key}"


def _load(path: Path, key: str) -> Compiled | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    payload = unseal(cache_key(), _label(key), raw)
    if payload is None:
        log.warning("%s: compiled pattern database not sealed with this cache key: compiled again", path)
        return None
    id_line, _, rest = payload.partition(b"\n")
    alias_line, _, blob = rest.partition(b"\n")
    try:
        ids = tuple(int(i) for i in id_line.split(b","))
        aliases = np.array([int(i) for i in alias_line.split(b",")], dtype=np.int64) if alias_line else None
        db = hyperscan.loadb(blob, hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)
    except (hyperscan.error, TypeError, ValueError):
        return None  # another Hyperscan build or platform: compile again
    return Compiled(db, ids, aliases)

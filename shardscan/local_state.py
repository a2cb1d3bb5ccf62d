"""Local state shardscan keeps between runs (the cache folder) and the keyed digests that prove shardscan wrote it.

Threat model, written down: whoever can write the cache folder (a CI cache restored from another
job, a shared home, a planted file) must not be able to make a scan replay "clean" or load a
pattern database that matches nothing. Every file shardscan reads back from the cache is sealed
with an HMAC-SHA256 under a key kept *outside* the cache folder: ``$SHARDSCAN_CACHE_KEY`` (a
secret, e.g. a CI secret, for caches shared between machines) or else a random key in a file of
the user's state directory (``$SHARDSCAN_CACHE_KEY_FILE``, default
``~/.local/state/shardscan/cache-key``, created on first use, mode 0600). A file whose seal does
not verify (corrupted, written under another key, or moved to another entry's name) is a miss.
Whoever can read the key or write as the user can forge entries; that is the user's own trust
boundary, as for any file in their home.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import sys
import tempfile
from pathlib import Path

from shardscan.atomic import TEMP_SUFFIX

KEY_ENV = "SHARDSCAN_CACHE_KEY"
KEY_FILE_ENV = "SHARDSCAN_CACHE_KEY_FILE"
_SEAL_MAGIC = b"shardscan-sealed-1\n"
_MAC_BYTES = 32
_KEY_BYTES = 32


def default_cache_dir() -> Path:
    """``$SHARDSCAN_CACHE_DIR``, else the user cache directory of the platform."""
    if env := os.environ.get("SHARDSCAN_CACHE_DIR"):
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "shardscan"


def default_key_file() -> Path:
    """``$SHARDSCAN_CACHE_KEY_FILE``, else ``cache-key`` in the user state directory (never the cache folder)."""
    if env := os.environ.get(KEY_FILE_ENV):
        return Path(env)
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "shardscan" / "state"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support" / "shardscan"
    else:
        base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "shardscan"
    return base / "cache-key"


def cache_key() -> bytes | None:
    """The key that seals cache files, or None when there is none to be had (then nothing is cached).

    ``$SHARDSCAN_CACHE_KEY`` wins; otherwise the key file is read, or created with a fresh random
    key (exclusively, so two concurrent first runs agree on one key).
    """
    if env := os.environ.get(KEY_ENV):
        return hashlib.sha256(b"shardscan-cache-key\0" + env.encode("utf-8")).digest()
    path = default_key_file()
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(secrets.token_hex(_KEY_BYTES) + "\n")
    except FileExistsError:
        pass  # another run created it first: use theirs
    except OSError:
        return None
    try:
        return _read_key(path)
    except (OSError, ValueError):
        return None


def _read_key(path: Path) -> bytes:
    text = path.read_text(encoding="ascii").strip()
    key = bytes.fromhex(text)
    if len(key) < 16:
        raise ValueError("key too short")
    return key


def seal(key: bytes, label: str, payload: bytes) -> bytes:
    """``payload`` with an HMAC over ``label`` (which entry this is) and the payload."""
    return _SEAL_MAGIC + _mac(key, label, payload) + payload


def unseal(key: bytes | None, label: str, blob: bytes) -> bytes | None:
    """The payload of a sealed ``blob`` if its HMAC verifies for ``label`` under ``key``, else None."""
    if key is None or not blob.startswith(_SEAL_MAGIC) or len(blob) < len(_SEAL_MAGIC) + _MAC_BYTES:
        return None
    start = len(_SEAL_MAGIC)
    mac, payload = blob[start : start + _MAC_BYTES], blob[start + _MAC_BYTES :]
    return payload if hmac.compare_digest(mac, _mac(key, label, payload)) else None


def _mac(key: bytes, label: str, payload: bytes) -> bytes:
    h = hmac.new(key, digestmod=hashlib.sha256)
    encoded = label.encode("utf-8")
    h.update(len(encoded).to_bytes(8, "big") + encoded)
    h.update(payload)
    return h.digest()


def atomic_write(path: Path, data: str | bytes) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file, so readers never see half of it."""
    # The reserved suffix: a cache folder inside a scanned one never yields a half-written entry as data.
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix + TEMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

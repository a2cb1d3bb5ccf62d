"""The redaction manifest: what each ``redact`` run replaced where (lengths and fingerprints, never content)."""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

from shardscan.atomic import prepare_parent, probe_folder, write_file
from shardscan.errors import ConfigError, OutputError
from shardscan.remediate.rewrite import ManifestEntry

MANIFEST_VERSION = 1
MANIFEST_NAME = "redactions.json"


def default_manifest(out_dir: Path | None) -> Path:
    """Where the manifest goes unless ``--manifest`` says: beside ``--out`` (``clean`` ->
    ``clean.redactions.json``), never inside it; ``redactions.json`` here for ``--in-place``."""
    if out_dir is None:
        return Path(MANIFEST_NAME)
    resolved = out_dir.resolve()
    return resolved.with_name(f"{resolved.name}.{MANIFEST_NAME}")


def load_manifest(path: Path) -> dict[str, Any]:
    """The manifest at ``path`` (an empty one when missing); ConfigError naming it when it is not one.

    Redaction appends to an existing manifest, so a file that is not a shardscan manifest is
    refused rather than replaced.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {"version": MANIFEST_VERSION, "runs": [], "redactions": []}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the existing redaction manifest ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if (
        not isinstance(data, dict)
        or data.get("version") != MANIFEST_VERSION
        or not isinstance(data.get("redactions"), list)
        or not isinstance(data.get("runs", []), list)
    ):
        raise ConfigError(f"{path}: exists and is not a shardscan redaction manifest; choose another --manifest")
    data.setdefault("runs", [])
    return data


def append_manifest(path: Path, entries: list[ManifestEntry], run: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add this run's ``entries`` to the manifest at ``path`` (created if missing); return what was written.

    Earlier runs' entries are kept: a second ``redact`` of the same data adds to the record (each
    entry names its run), it never replaces it. Written through a temporary file and a rename.
    """
    data = load_manifest(path)
    number = len(data["runs"]) + 1
    data["runs"].append({"run": number, **(run or {}), "redactions": len(entries)})
    data["redactions"].extend(
        {
            "run": number,
            "shard": e.shard,
            "row": e.row,
            "column": e.column,
            "rule_id": e.rule_id,
            "fingerprint": e.fingerprint,
            "start": e.start,
            "old_length": e.old_length,
            "new_length": e.new_length,
        }
        for e in entries
    )
    write_file(path, json.dumps(data, indent=2) + "\n")
    return data


def write_manifest(path: Path, entries: list[ManifestEntry]) -> None:
    """``redactions.json``: shard, row, column, rule, fingerprint, old and new lengths (appended to
    an existing manifest, see :func:`append_manifest`)."""
    append_manifest(path, entries)



def _input_folders(paths: list[str]) -> list[Path]:
    """The local folders that hold the inputs: a folder itself, a file's folder, a glob's fixed part."""
    folders = []
    for raw in paths:
        if "://" in raw:
            continue
        path = Path(raw)
        if path.is_dir():
            folders.append(path)
        elif path.exists():
            folders.append(path.parent)
        elif glob.has_magic(raw):
            fixed = list(path.parts)
            cut = next((i for i, part in enumerate(fixed) if glob.has_magic(part)), len(fixed))
            folders.append(Path(*fixed[:cut]) if cut else Path("."))
    return [folder.resolve() for folder in folders]


def check_outputs(paths: list[str], out: Path | None, manifest: Path | None, mkdir: bool, in_place: bool) -> Path:
    """Check redact's outputs before any work: exactly one of ``out`` and ``in_place``, ``out`` can be
    written into, and the manifest lies outside ``out`` and every folder holding the inputs (a later
    scan would read it as data) and, if it exists, is a manifest to append to. Returns the manifest
    path. Raises ConfigError, or OutputError naming the output that cannot be written."""
    if (out is None) == (not in_place):
        raise ConfigError("give exactly one of --out DIR or --in-place")
    if out is not None:
        if out.exists() and not out.is_dir():
            raise OutputError(str(out), "it is not a folder")
        if out.exists():
            probe_folder(out)
        else:
            # Created with the first copy (nothing is written if the inputs cannot be read).
            prepare_parent(out, mkdir)
            try:
                probe_folder(out.parent)
            except OutputError as err:
                raise OutputError(str(out), err.reason) from None
    path = manifest if manifest is not None else default_manifest(out)
    where = path.resolve()
    fences = [(folder, "the folder of the inputs") for folder in _input_folders(paths)]
    if out is not None:
        fences.insert(0, (out.resolve(), "--out"))
    for folder, what in fences:
        if where.is_relative_to(folder):
            hint = "" if manifest is not None else "; choose one with --manifest PATH"
            raise ConfigError(f"manifest {path}: inside {what} {folder} (a later scan would read it as data){hint}")
    prepare_parent(path, mkdir)
    load_manifest(path)
    return path

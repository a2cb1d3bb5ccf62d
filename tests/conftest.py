"""Shared fixtures: rule sets, a fixed clock, and helpers that build shards in code."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from shardscan.engine import ScanOptions
from shardscan.ruleset import Ruleset, load_ruleset

FIXED_NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)

CONVERSATIONS = pa.list_(pa.struct([pa.field("content", pa.string()), pa.field("role", pa.string())]))
TRACE_COLUMNS = (
    "agent", "model", "model_provider", "date", "task", "episode", "run_id", "trial_name", "result",
    "instruction", "verifier_output", "trace_source",
)
TRACE_SCHEMA = pa.schema([pa.field("conversations", CONVERSATIONS), *(pa.field(c, pa.string()) for c in TRACE_COLUMNS)])


@pytest.fixture(scope="session")
def ruleset() -> Ruleset:
    return load_ruleset()


@pytest.fixture
def options() -> ScanOptions:
    return ScanOptions(now=FIXED_NOW)


def trace_row(messages: Sequence[tuple[str, str]] = (), **columns: str) -> dict:
    """One row of the agent-trace schema; unspecified string columns get harmless values."""
    row = {c: f"{c}-value" for c in TRACE_COLUMNS}
    row.update(columns)
    row["conversations"] = [{"role": role, "content": content} for role, content in messages]
    return row


def write_trace_shard(path: Path, rows: Sequence[dict], row_group_size: int | None = None) -> Path:
    """Write rows of the agent-trace schema to a Parquet shard."""
    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(list(rows), schema=TRACE_SCHEMA)
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture(autouse=True)
def _private_result_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own result cache folder: never the user's, never another test's.

    Compiled Hyperscan databases (keyword patterns only) are shared by the session, so that the
    command-line tests do not each compile them again.
    """
    folder = tmp_path_factory.mktemp("shardscan-cache")
    (folder / "hyperscan").symlink_to(_session_matcher_cache(tmp_path_factory), target_is_directory=True)
    monkeypatch.setenv("SHARDSCAN_CACHE_DIR", str(folder))
    # The key that seals cache files lives outside every cache folder, shared by the session.
    monkeypatch.setenv("SHARDSCAN_CACHE_KEY_FILE", str(tmp_path_factory.getbasetemp() / "cache-key"))


def _session_matcher_cache(tmp_path_factory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "hyperscan-databases"
    folder.mkdir(exist_ok=True)
    return folder


def near_misses(rules: Sequence, seed: int, per_example: int = 6) -> list[str]:
    """Every rule example (positive and negative) with one character inserted, recased, cut or wrapped."""
    from shardscan.synth import expand

    rng = random.Random(seed)
    texts: list[str] = []
    for rule in rules:
        for example in rule.examples + rule.negative_examples:
            text = expand(example.text, seed=f"nm-{rule.id}")
            for _ in range(per_example):
                cut = rng.randrange(len(text) + 1)
                inserted = rng.choice(["", "x", "_", " ", "é", "\n", "=", ".", "\u00a0", "日本"])
                texts.append(text[:cut] + inserted + text[cut:])
            texts += [text, "é" + text + "é", text.upper(), text.lower(), f"({text})", f"{text}\u2028",
                      text[: len(text) // 2]]
    return texts


"""A small agent-trace dataset with generated secrets at known cells, and ways to compare scans of it."""

from __future__ import annotations

import pyarrow as pa

from shardscan.report import Report
from shardscan.synth import expand
from tests.conftest import TRACE_SCHEMA, trace_row


def planted_rows(seed: str = "inputs") -> list[dict]:
    """Twelve rows; secrets in nested message contents and in plain string columns."""

    def gen(template: str) -> str:
        return expand(template, seed=seed)

    return [
        trace_row([("user", "hello"), ("assistant", "hi there")]),
        trace_row([("user", "deploy it"), ("tool", f"export GITHUB_TOKEN={gen('{{github:ghp_}}')}")]),
        trace_row([("user", "clé privée — ünïcode ✓")], instruction=f"use key {gen('{{openai}}')} for the run"),
        trace_row([]),
        trace_row([("system", "be brief"), ("user", "ok"), ("tool", gen("aws_access_key_id = {{aws_id:AKIA}}"))]),
        trace_row([("user", "nothing here")], verifier_output=gen("HF_TOKEN={{hf}}")),
        trace_row([("assistant", gen("Authorization: Bearer {{jwt}}"))]),
        trace_row([("user", "x"), ("tool", "x"), ("tool", gen('{"key": "{{pem_escaped}}"}'))]),
        trace_row([("user", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx placeholder only")]),
        trace_row([("user", gen("ANTHROPIC_API_KEY={{anthropic:api03}}"))], task="task-9"),
        trace_row([("user", "two in one"), ("tool", gen("a={{github:gho_}} b={{hf}}"))]),
        trace_row([("assistant", "done")], result=gen("token {{github:ghs_}}")),
    ]


def planted_table(seed: str = "inputs") -> pa.Table:
    """The planted rows as a Table of the agent-trace schema."""
    return pa.Table.from_pylist(planted_rows(seed), schema=TRACE_SCHEMA)


def finding_keys(report: Report) -> list[tuple]:
    """What must be identical whatever the input format or engine: rule, cell, span, fingerprint."""
    return sorted(
        (f.rule_id, f.location.row, f.location.column, f.location.role, f.start, f.end, f.fingerprint)
        for f in report.findings
    )


def located_keys(report: Report) -> list[tuple]:
    """``finding_keys`` with the shard name first."""
    return sorted(
        (f.location.shard, f.rule_id, f.location.row, f.location.column, f.start, f.end, f.fingerprint)
        for f in report.findings
    )

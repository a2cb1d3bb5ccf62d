"""A small, deterministic agent-trace dataset shaped like a real release, with its reviewed rows.

It holds the four rows the last release documented as secret-looking but deliberately kept:

* train-00068: an expired HS256 JWT (exp 2019-06-05) inside scraped web-page content;
* train-00089: a raw.githubusercontent.com presigned-resource JWT (exp 2026-07-27) in a fetched URL;
* train-00012: a task prompt showing a private key's structure with the body omitted;
* train-00100: a model-invented private-key body in an edit of ssl-cert-snakeoil.key.

Everything else is ordinary trace content, including the look-alikes that trip other scanners
(``hf_hub_download``, ``gh_pages``, scikit-learn, code testing for a PEM marker, hashes, UUIDs).
"""

from __future__ import annotations

import base64
import json
import random
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from shardscan.synth import B64, b64url

NUM_SHARDS = 104
ROWS_PER_SHARD = 6
SEED = 20260727

SCHEMA = pa.schema(
    [
        pa.field(
            "conversations", pa.list_(pa.struct([pa.field("content", pa.string()), pa.field("role", pa.string())]))
        ),
        *(
            pa.field(name, pa.string())
            for name in (
                "agent", "model", "model_provider", "date", "task", "episode", "run_id", "trial_name", "result",
                "instruction", "verifier_output", "trace_source",
            )
        ),
    ]
)

# (shard, row) of the four documented rows.
EXPIRED_JWT_ROW = (68, 3)
GITHUB_RAW_JWT_ROW = (89, 1)
OMITTED_KEY_ROW = (12, 4)
SNAKEOIL_ROW = (100, 2)


def shard_name(index: int) -> str:
    """``train-00068-of-00104.parquet`` style names."""
    return f"train-{index:05d}-of-{NUM_SHARDS:05d}.parquet"


def _jwt(rng: random.Random, payload: dict[str, Any]) -> str:
    header = b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    return f"{header}.{body}.{b64url(rng.randbytes(32))}"


def _expired_session_jwt(rng: random.Random) -> str:
    return _jwt(rng, {"sub": "guest-7731", "iss": "auth.shop.example", "iat": 1559606400, "exp": 1559692800})


def _github_raw_jwt(rng: random.Random) -> str:
    return _jwt(
        rng,
        {
            "iss": "github.com",
            "aud": "raw.githubusercontent.com",
            "key": "key5",
            "nbf": 1785106500,
            "exp": 1785110400,
            "path": "/acme-labs/bench-tasks/main/tasks/setup.sh",
        },
    )


def _hallucinated_key_body(rng: random.Random) -> str:
    """Base64-looking lines of irregular length with a stray '=' inside: not decodable, not a key."""
    lines = ["MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7"]
    for length in (64, 61, 64, 57, 64, 63, 64, 48, 64, 59, 64, 37):
        line = "".join(rng.choice(B64) for _ in range(length))
        lines.append(line)
    lines[5] = lines[5][:20] + "=" + lines[5][21:]
    lines.append("kVx3QnZ0==")
    return "\n".join(lines)


def _row(rng: random.Random, shard: int, row: int) -> dict[str, Any]:
    task = rng.choice(_TASKS)
    run_id = str(uuid.UUID(int=rng.getrandbits(128)))
    commit = f"{rng.getrandbits(160):040x}"
    instruction = task["instruction"]
    conversations = [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": instruction},
        {
            "role": "assistant",
            "content": json.dumps({"tool": "bash", "arguments": {"command": task["command"]}}),
        },
        {"role": "tool", "content": task["output"].format(commit=commit, run_id=run_id)},
        {"role": "assistant", "content": task["answer"]},
    ]
    if rng.random() < 0.3:
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(600)).decode()
        conversations.insert(4, {"role": "tool", "content": f"screenshot saved: data:image/png;base64,{png}"})

    if (shard, row) == EXPIRED_JWT_ROW:
        page = (
            "<html><head><title>Order status</title><script>window.__SESSION__ = {\"token\": \""
            + _expired_session_jwt(rng)
            + "\", \"cart\": []};</script></head><body><h1>Your order</h1><p>Shipped.</p></body></html>"
        )
        conversations[2]["content"] = json.dumps({"tool": "fetch", "arguments": {"url": "https://shop.example/orders/1182"}})
        conversations[3]["content"] = page
    if (shard, row) == GITHUB_RAW_JWT_ROW:
        script = "https://raw.githubusercontent.com/acme-labs/bench-tasks/main/tasks/setup.sh"
        url = script + "?token=" + _github_raw_jwt(rng)
        conversations[2]["content"] = json.dumps({"tool": "fetch", "arguments": {"url": url}})
        conversations[3]["content"] = "#!/bin/sh\nset -e\napt-get install -y jq\n"
    if (shard, row) == OMITTED_KEY_ROW:
        instruction = (
            "You are given the text of a PEM file. Write a function is_private_key(text) that returns True when the "
            "text is a PEM private key. A private key file looks like this:\n\n"
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA...\n<key body omitted>\n"
            "-----END RSA PRIVATE KEY-----\n\n"
            "Input: a string. Output: True or False."
        )
        conversations[1]["content"] = "Solve the following problem.\n" + instruction.split("\n\n", 1)[0]
    if (shard, row) == SNAKEOIL_ROW:
        key = "-----BEGIN PRIVATE KEY-----\n" + _hallucinated_key_body(rng) + "\n-----END PRIVATE KEY-----\n"
        conversations[2]["content"] = json.dumps(
            {"tool": "write_file", "arguments": {"path": "/etc/ssl/private/ssl-cert-snakeoil.key", "content": key}}
        )
        conversations[3]["content"] = "wrote 1704 bytes to /etc/ssl/private/ssl-cert-snakeoil.key"

    return {
        "conversations": conversations,
        "agent": "terminus-2",
        "model": rng.choice(["gpt-5-mini", "claude-sonnet-4-5", "qwen3-coder-30b"]),
        "model_provider": rng.choice(["openai", "anthropic", "together"]),
        "date": f"2026-0{rng.randint(1, 9)}-{rng.randint(10, 28)}",
        "task": task["name"],
        "episode": f"episode-{rng.randint(0, 9)}",
        "run_id": run_id,
        "trial_name": f"{task['name']}__{rng.getrandbits(32):08x}",
        "result": rng.choice(["pass", "fail"]),
        "instruction": instruction,
        "verifier_output": task["verifier"].format(commit=commit),
        "trace_source": "bench-traces-v3",
    }


def write_demo_dataset(folder: str | Path) -> list[Path]:
    """Write the demo shards into ``folder`` (created if needed) and return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(SEED)
    paths = []
    for shard in range(NUM_SHARDS):
        rows = [_row(rng, shard, row) for row in range(ROWS_PER_SHARD)]
        table = pa.Table.from_pylist(rows, schema=SCHEMA)
        path = folder / shard_name(shard)
        pq.write_table(table, path, row_group_size=ROWS_PER_SHARD // 2)
        paths.append(path)
    return paths


_SYSTEM_PROMPT = (
    "You are an autonomous agent working in a Linux container. Use the bash tool to run commands. "
    "Never print credentials; secrets are provided through environment variables such as HF_TOKEN."
)

_TASKS = [
    {
        "name": "download-model-card",
        "instruction": "Download the README of the model gpt2 with huggingface_hub and count its lines.",
        "command": "python -c \"from huggingface_hub import hf_hub_download; "
                   "print(hf_hub_download('gpt2', 'README.md'))\"",
        "output": "/root/.cache/huggingface/hub/models--gpt2/snapshots/{commit}/README.md",
        "answer": "The README was downloaded with hf_hub_download; it has 212 lines.",
        "verifier": "PASS test_readme_lines (commit {commit})",
    },
    {
        "name": "publish-docs",
        "instruction": "Build the docs and publish them to the gh_pages branch with ghp-import.",
        "command": "make html && ghp-import -n -p -f _build/html  # pushes to gh_pages",
        "output": "[gh-pages {commit}] Update docs\n 41 files changed, 1208 insertions(+)",
        "answer": "Docs were published to gh_pages.",
        "verifier": "PASS test_pages_branch_exists",
    },
    {
        "name": "train-classifier",
        "instruction": "Train a logistic regression on iris.csv with scikit-learn (sk-learn) and report accuracy.",
        "command": "pip install scikit-learn && python train.py",
        "output": "Successfully installed scikit-learn-1.6.1\naccuracy=0.9667 run={run_id}",
        "answer": "Accuracy is 0.967.",
        "verifier": "PASS test_accuracy_above_0_9",
    },
    {
        "name": "pem-detector",
        "instruction": "Fix is_pem() in utils.py so it recognises private keys.",
        "command": "sed -n '1,20p' utils.py",
        "output": "def is_pem(s):\n    if s.startswith(\"-----BEGIN PRIVATE KEY-----\"):\n        return True\n"
        "    return s.startswith(\"-----BEGIN RSA PRIVATE KEY-----\")\n",
        "answer": "is_pem now also accepts '-----BEGIN EC PRIVATE KEY-----' headers.",
        "verifier": "PASS test_is_pem\nPASS test_is_not_pem",
    },
    {
        "name": "git-bisect",
        "instruction": "Find the commit that broke test_parse with git bisect.",
        "command": "git bisect run pytest -q tests/test_parse.py",
        "output": "{commit} is the first bad commit\ncommit {commit}\nAuthor: dev <dev@example.org>",
        "answer": "The regression came from {commit}."[:40],
        "verifier": "PASS test_found_commit ({commit})",
    },
    {
        "name": "aws-config",
        "instruction": "Write ~/.aws/config for region eu-west-1 using the credentials from the environment.",
        "command": "aws configure set region eu-west-1 && cat ~/.aws/config",
        "output": "[default]\nregion = eu-west-1\n# keys come from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY",
        "answer": "Configured; credentials are read from the environment.",
        "verifier": "PASS test_region",
    },
]

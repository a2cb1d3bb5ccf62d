"""Generate realistic agent-trace shards of a chosen size for benchmarks (never committed: benchmarks/data/).

The rows follow the agent-trace schema of ``tests/conftest.py``: a ``conversations`` list of
``{content, role}`` messages plus string columns. Message bodies imitate what real traces hold:
repeated system prompts, JSON tool calls, terminal output, source code, pip and git logs full of
hashes, npm/docker digests, UUIDs, base64 screenshots, and code that merely *mentions* credential
markers (``hf_hub_download``, ``os.environ["GITHUB_TOKEN"]``, placeholders). A few credentials
generated at run time by :mod:`shardscan.synth` are planted; their locations (never their values)
are written to ``<folder>.manifest.json`` so the benchmark can check recall.

Three profiles (``--profile``), which the benchmark runs side by side:

- ``sparse``: the rows above (cells of ~1.5 KB on average, few candidates);
- ``dense``: keyword-dense coding-agent traces: tool outputs of 20-50 KB made of pieces, about one
  in nine of them code naming credential variables and key markers, one in nine a base64 image,
  plus JSON pagination cursors starting ``eyJ``, ``ls -l`` listings, pip lines with sha256, git
  logs, JSON with UUIDs and tracebacks; no credential is planted;
- ``seed``: the shape of the seed datasets: rows of ~100 KB whose per-turn content sizes follow a
  heavy-tailed (Pareto) distribution capped at 1 MB, mixing both kinds of pieces, with a few
  credentials planted at run time anywhere inside their (often long) cell.

Usage: ``python -m benchmarks.generate OUT_DIR --mb 160 --shards 6 --row-groups 4 [--seed 1] [--profile sparse]``
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import random
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from shardscan import synth  # noqa: E402

CONVERSATIONS = pa.list_(pa.struct([pa.field("content", pa.string()), pa.field("role", pa.string())]))
TRACE_COLUMNS = (
    "agent", "model", "model_provider", "date", "task", "episode", "run_id", "trial_name", "result",
    "instruction", "verifier_output", "trace_source",
)
TRACE_SCHEMA = pa.schema([pa.field("conversations", CONVERSATIONS), *(pa.field(c, pa.string()) for c in TRACE_COLUMNS)])

# Credentials planted in the corpus: (template, rule id expected to report it).
PLANTS: tuple[tuple[str, str], ...] = (
    ("export GITHUB_TOKEN={{github:ghp_}}\n", "github-pat"),
    ("aws_access_key_id = {{aws_id:AKIA}}\naws_secret_access_key = {{aws_secret}}\n", "aws-access-key-id"),
    ("curl -H 'Authorization: Bearer {{jwt}}' https://api.internal.example/v1/me\n", "jwt"),
    ('client = OpenAI(api_key="{{openai:sk-proj-}}")\n', "openai-api-key"),
    ("ANTHROPIC_API_KEY={{anthropic:api03}}\n", "anthropic-api-key"),
    ("huggingface-cli login --token {{hf}}\n", "huggingface-token"),
    ("{{pem:ec}}\n", "private-key"),
)

WORDS = [
    "the", "test", "fails", "because", "the", "function", "returns", "None", "when", "the", "input", "list", "is",
    "empty", "so", "we", "need", "to", "handle", "that", "case", "first", "then", "rerun", "the", "suite", "and",
    "check", "the", "coverage", "report", "before", "committing", "the", "change", "to", "the", "repository",
    "also", "update", "the", "documentation", "and", "the", "changelog", "make", "sure", "the", "linter", "passes",
    "and", "the", "type", "checker", "is", "happy", "with", "the", "new", "signature", "of", "the", "parser",
    "module", "which", "now", "accepts", "a", "path", "or", "a", "stream", "and", "raises", "a", "clear", "error",
    "message", "naming", "the", "file", "when", "the", "header", "is", "missing", "or", "malformed",
]

SYSTEM_PROMPTS = [
    (
        f"You are an autonomous software engineering agent (variant {i}). You operate in a Linux sandbox "
        "with a bash tool, a file editor and a python interpreter. Think step by step. "
        "When you call a tool, answer with a JSON object {\"name\": ..., \"arguments\": {...}}. "
        "Never print secrets such as API keys, tokens or passwords; if you find one, redact it. "
        "Available tools:\n"
        + json.dumps(
            [
                {"name": "bash", "description": "Run a shell command",
                 "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}},
                {"name": "str_replace_editor", "description": "View and edit files",
                 "parameters": {"type": "object", "properties": {
                     "path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"}}}},
                {"name": "python", "description": "Run python code",
                 "parameters": {"type": "object", "properties": {"code": {"type": "string"}}}},
            ],
            indent=2,
        )
        + "\n" + " ".join(WORDS) * (8 + 4 * i)
    )
    for i in range(6)
]

PACKAGES = ("numpy", "pandas", "requests", "urllib3", "pyarrow", "torch", "transformers", "datasets",
            "huggingface-hub", "tokenizers", "safetensors", "fsspec", "aiohttp", "pydantic", "rich", "typer")

CODE_SNIPPETS = (
    '''import os
from huggingface_hub import hf_hub_download, snapshot_download

def load_model(repo_id: str, revision: str = "main"):
    token = os.environ.get("HF_TOKEN")  # never hard-code hf_ tokens
    path = hf_hub_download(repo_id=repo_id, filename="config.json", revision=revision, token=token)
    with open(path) as fh:
        return json.load(fh)
''',
    '''class GitHubClient:
    """Thin wrapper; reads GITHUB_TOKEN from the environment."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token or os.environ["GITHUB_TOKEN"]
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"token {self.token}"

    def repos(self, org: str) -> list[dict]:
        return self.session.get(f"https://api.github.com/orgs/{org}/repos").json()

# example: GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx
''',
    '''def parse_jwt(token: str) -> dict:
    # a JWT header always starts with eyJ (base64 of '{"')
    header, payload, signature = token.split(".")
    return json.loads(base64.urlsafe_b64decode(payload + "=="))
''',
    '''AWS_REGION = "us-east-1"
# aws_access_key_id = AKIAIOSFODNN7EXAMPLE (the documented example key)
s3 = boto3.client("s3", region_name=AWS_REGION)
for obj in s3.list_objects_v2(Bucket="my-bucket")["Contents"]:
    print(obj["Key"], obj["Size"])
''',
    '''def fib(n: int) -> int:
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def test_fib():
    assert [fib(i) for i in range(8)] == [0, 1, 1, 2, 3, 5, 8, 13]
''',
)


# The dense profile's code pieces: each names a credential or a key marker, none holds one.
DENSE_NAMES = ("HF_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "aws_access_key_id",
               "aws_secret_access_key", "SLACK_BOT_TOKEN", "STRIPE_SECRET_KEY", "DATABASE_PASSWORD")
DENSE_CODE = (
    "import os\ntoken = os.environ['{name}']  # set by the CI runner\n"
    "if not token:\n    raise SystemExit('{name} is not set')\n",
    "api_key = os.getenv(\"{name}\")\nclient = Client(api_key=api_key, timeout={n})\n",
    "def is_key_file(path):\n    with open(path) as fh:\n        for line in fh:\n"
    "            if line.startswith('-----BEGIN PRIVATE KEY-----'):\n"
    "                return True\n            if line.startswith('-----BEGIN RSA PRIVATE KEY-----'):\n"
    "                return True\n    return False\n",
    "    assert '-----BEGIN OPENSSH PRIVATE KEY-----' not in body, 'refusing to log a key'  # rev {rev}\n",
    "[default]\n{name} = ${{{name}}}\nregion = us-east-1\n",
    "$ echo ${name} | wc -c\n{n}\n$ env | grep -c {name}\n1\n",
    "hf_hub_download(repo_id='org/model-{n}', filename='config.json', token=os.environ.get('{name}'))\n",
    "for key in ('{name}', 'aws_access_key_id', 'OPENAI_API_KEY'):\n    print(key, key in os.environ)\n",
)
# The seed profile's sizes: rows of about SEED_ROW characters; a turn's content is SEED_MIN_TURN
# times a Pareto draw (shape SEED_ALPHA: a heavy tail), cut at SEED_MAX_TURN.
SEED_ROW = 100_000
SEED_MIN_TURN = 3_000
SEED_ALPHA = 1.1
SEED_MAX_TURN = 1_000_000
PROFILES = ("sparse", "dense", "seed")


class Faker:
    """Fast pseudo-random content: slices of big pre-generated pools instead of per-char choices."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        raw = self.rng.randbytes(8 * 1024 * 1024)
        self.b64 = base64.b64encode(raw).decode()
        self.hex = raw.hex()

    def hexs(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.hex) - n)
        return self.hex[start : start + n]

    def b64s(self, n: int) -> str:
        start = self.rng.randrange(0, len(self.b64) - n)
        return self.b64[start : start + n]

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def words(self, n: int) -> str:
        return " ".join(self.rng.choices(WORDS, k=n))

    # ---- message bodies ---------------------------------------------------------------------

    def tool_call(self) -> str:
        command = self.rng.choice(
            ["pip install -r requirements.txt", "git log -n 20", "python -m pytest -q", "ls -la", "cat src/app.py",
             "npm ci", "docker build -t app .", "git diff HEAD~1"]
        )
        return json.dumps({"id": f"call_{self.hexs(24)}", "type": "function",
                           "function": {"name": "bash", "arguments": json.dumps({"command": command})}})

    def pip_log(self) -> str:
        lines = []
        for _ in range(self.rng.randint(8, 40)):
            pkg = self.rng.choice(PACKAGES)
            ver = f"{self.rng.randint(0, 3)}.{self.rng.randint(0, 30)}.{self.rng.randint(0, 9)}"
            lines.append(f"Collecting {pkg}=={ver}")
            lines.append(f"  Downloading {pkg.replace('-', '_')}-{ver}-py3-none-any.whl "
                         f"({self.rng.randint(10, 9000)} kB)")
            lines.append(f"     ---------------------------------------- "
                         f"{self.rng.randint(1, 90)}.{self.rng.randint(0, 9)}/"
                         f"{self.rng.randint(1, 90)}.0 MB {self.rng.randint(1, 60)}.0 MB/s eta 0:00:00")
            lines.append(f"    --hash=sha256:{self.hexs(64)}")
        lines.append("Successfully installed " + " ".join(f"{p}-1.{i}" for i, p in enumerate(PACKAGES[:8])))
        return "\n".join(lines)

    def git_log(self) -> str:
        out = []
        for _ in range(self.rng.randint(5, 25)):
            out.append(f"commit {self.hexs(40)}\nAuthor: Dev {self.rng.randint(1, 99)} <dev@example.com>\n"
                       f"Date:   Mon Nov {self.rng.randint(1, 28)} 10:{self.rng.randint(10, 59)}:00 2025 +0000\n\n"
                       f"    {self.words(self.rng.randint(4, 12))}\n")
        out.append(f"diff --git a/src/app.py b/src/app.py\nindex {self.hexs(7)}..{self.hexs(7)} 100644")
        return "\n".join(out)

    def terminal(self) -> str:
        rows = [f"total {self.rng.randint(10, 900)}"]
        for _ in range(self.rng.randint(5, 40)):
            rows.append(f"-rw-r--r-- 1 root root {self.rng.randint(10, 99999):>6} "
                        f"Nov {self.rng.randint(1, 28):>2} 12:00 "
                        f"{self.words(1)}_{self.hexs(6)}.py")
        rows.append(f"============ {self.rng.randint(1, 400)} passed, {self.rng.randint(0, 5)} failed in "
                    f"{self.rng.random() * 20:.2f}s ============")
        rows.append('Traceback (most recent call last):\n  File "/app/src/parser.py", line 42, in parse\n'
                    "    raise ValueError(f'bad header in {path}')\nValueError: bad header in data/input.csv")
        return "\n".join(rows)

    def docker_log(self) -> str:
        lines = []
        for i in range(self.rng.randint(5, 20)):
            lines.append(f"#{i} [{i}/20] RUN pip install --no-cache-dir -r requirements.txt")
            lines.append(f"#{i} sha256:{self.hexs(64)} {self.rng.randint(1, 900)}MB / {self.rng.randint(900, 999)}MB")
        lines.append(f"npm WARN deprecated request@2.88.2\nadded {self.rng.randint(100, 900)} packages, "
                     f"integrity sha512-{self.b64s(86)}==")
        return "\n".join(lines)

    def json_response(self) -> str:
        items = [{"id": self.uuid(), "name": self.words(2), "created_at": "2025-11-02T10:00:00Z",
                  "etag": self.hexs(32), "size": self.rng.randint(1, 10**6)} for _ in range(self.rng.randint(3, 30))]
        return json.dumps({"request_id": self.uuid(), "items": items}, indent=1)

    def image(self) -> str:
        # A screenshot the agent took: tens to hundreds of kB of base64 after a real PNG header.
        return "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + self.b64s(self.rng.randint(20_000, 200_000))

    def code(self) -> str:
        return self.rng.choice(CODE_SNIPPETS) * self.rng.randint(1, 4) + f"\n# rev {self.hexs(40)}\n"

    def tool_output(self) -> str:
        kind = self.rng.random()
        if kind < 0.04:
            return self.image()
        makers = (self.pip_log, self.git_log, self.terminal, self.docker_log, self.json_response, self.code)
        return self.rng.choice(makers)()

    def assistant(self) -> str:
        return f"{self.words(self.rng.randint(10, 80))}\n{self.tool_call()}"

    # ---- the dense profile: keyword-dense tool outputs --------------------------------------

    def credential_code(self) -> str:
        """Code that names credentials without holding one: environment variables, key markers."""
        name = self.rng.choice(DENSE_NAMES)
        return self.rng.choice(DENSE_CODE).format(name=name, n=self.rng.randint(1, 999), rev=self.hexs(12))

    def small_image(self) -> str:
        return "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA" + self.b64s(self.rng.randint(1_000, 6_000))

    def cursor(self) -> str:
        """A JSON page with a pagination cursor: base64 of a small JSON object, so it starts ``eyJ``."""
        page = json.dumps({"page": self.rng.randint(1, 500), "after": self.uuid(), "sort": "created_at"})
        token = base64.urlsafe_b64encode(page.encode()).decode().rstrip("=")
        return json.dumps({"data": [{"id": self.uuid(), "name": self.words(2)} for _ in range(self.rng.randint(2, 6))],
                           "next": f"https://api.example.com/v2/items?cursor={token}", "cursor": token})

    def traceback(self) -> str:
        frames = "".join(f'  File "/usr/lib/python3.11/site-packages/{self.words(1)}/{self.words(1)}.py", line '
                         f"{self.rng.randint(1, 900)}, in {self.words(1)}\n    {self.words(4)}\n"
                         for _ in range(self.rng.randint(2, 8)))
        return f"Traceback (most recent call last):\n{frames}KeyError: '{self.words(1)}'"

    def dense_piece(self) -> str:
        makers = (self.credential_code, self.small_image, self.cursor, self.terminal, self.pip_log, self.git_log,
                  self.json_response, self.traceback, self.docker_log)
        return self.rng.choice(makers)()

    def dense_output(self, low: int = 20_000, high: int = 50_000) -> str:
        """One tool output of ``low``-``high`` characters made of dense pieces."""
        target = self.rng.randint(low, high)
        pieces: list[str] = []
        size = 0
        while size < target:
            piece = self.dense_piece()
            pieces.append(piece)
            size += len(piece) + 1
        return "\n".join(pieces)

    def dense_row(self, index: int) -> dict:
        row = self.row(index)
        messages = row["conversations"][:2]
        for _ in range(self.rng.randint(1, 3)):
            messages.append({"role": "assistant", "content": self.assistant()})
            messages.append({"role": "tool", "content": self.dense_output()})
        row["conversations"] = messages
        return row

    # ---- the seed profile: ~100 KB rows, heavy-tailed turn sizes -----------------------------

    def seed_content(self) -> str:
        """A turn of a heavy-tailed size: most a few KB, some hundreds of KB, at most 1 MB."""
        target = min(SEED_MAX_TURN, int(SEED_MIN_TURN * self.rng.paretovariate(SEED_ALPHA)))
        pieces: list[str] = []
        size = 0
        while size < target:
            piece = self.dense_piece() if self.rng.random() < 0.5 else self.tool_output()
            pieces.append(piece)
            size += len(piece) + 1
        return "\n".join(pieces)[:target]

    def seed_row(self, index: int) -> dict:
        row = self.row(index)
        messages = row["conversations"][:2]
        size = 0
        while size < SEED_ROW:
            messages.append({"role": "assistant", "content": self.assistant()})
            content = self.seed_content()
            messages.append({"role": "tool", "content": content})
            size += len(content) + len(messages[-2]["content"])
        row["conversations"] = messages
        return row

    def row(self, index: int) -> dict:
        messages = [{"role": "system", "content": self.rng.choice(SYSTEM_PROMPTS)},
                    {"role": "user", "content": f"Task {index}: {self.words(self.rng.randint(20, 120))}"}]
        for _ in range(self.rng.randint(3, 14)):
            messages.append({"role": "assistant", "content": self.assistant()})
            messages.append({"role": "tool", "content": self.tool_output()})
        return {
            "conversations": messages,
            "agent": self.rng.choice(["terminus", "openhands", "swe-agent"]),
            "model": self.rng.choice(["model-a-large", "model-b-small"]),
            "model_provider": "example",
            "date": f"2025-11-{self.rng.randint(1, 28):02d}",
            "task": f"task-{self.rng.randint(1, 500)}",
            "episode": f"episode-{self.rng.randint(0, 9)}",
            "run_id": self.uuid(),
            "trial_name": f"trial-{self.hexs(8)}",
            "result": self.rng.choice(["pass", "fail", "timeout"]),
            "instruction": self.words(self.rng.randint(30, 200)),
            "verifier_output": self.terminal(),
            "trace_source": self.rng.choice(["harness-v1", "harness-v2"]),
        }


def row_bytes(row: dict) -> int:
    """String bytes of one row (UTF-8), as Arrow stores them."""
    total = sum(len(m["content"].encode()) + len(m["role"]) for m in row["conversations"])
    return total + sum(len(row[c].encode()) for c in TRACE_COLUMNS)


def manifest_path(out: Path) -> Path:
    """Where the manifest of the corpus in ``out`` is written: beside the folder, not in it, so that
    a scan of the folder reads the shards and nothing else (``.json`` files are shards too)."""
    return out.with_name(out.name + ".manifest.json")


def generator_digest() -> str:
    """A digest of the code that decides a corpus's bytes (this module and the credential
    generator): a corpus written by other code is generated again."""
    digest = hashlib.sha256()
    for source in (Path(__file__), Path(synth.__file__)):
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def generate(out: Path, mb: float, shards: int, row_groups: int, seed: int = 1, plants_per_shard: int = 3,
             profile: str = "sparse") -> dict:
    """Write ``shards`` shards holding about ``mb`` MB of strings in total; return the manifest.

    ``profile`` is one of :data:`PROFILES` (see the module docstring); ``dense`` plants nothing.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown profile {profile!r} (one of {', '.join(PROFILES)})")
    out.mkdir(parents=True, exist_ok=True)
    faker = Faker(seed)
    make_row = {"sparse": faker.row, "dense": faker.dense_row, "seed": faker.seed_row}[profile]
    if profile == "dense":
        plants_per_shard = 0
    per_shard = mb * 1e6 / shards
    per_group = per_shard / row_groups
    planted: list[dict] = []
    total_bytes = 0
    total_rows = 0
    for s in range(shards):
        name = f"train-{s:05d}-of-{shards:05d}.parquet"
        shard_rows = 0
        with pq.ParquetWriter(out / name, TRACE_SCHEMA) as writer:
            for g in range(row_groups):
                rows, size = [], 0
                while size < per_group:
                    row = make_row(total_rows + shard_rows + len(rows))
                    rows.append(row)
                    size += row_bytes(row)
                for k in range(plants_per_shard if g == row_groups // 2 else 0):
                    template, rule_id = PLANTS[(s * plants_per_shard + k) % len(PLANTS)]
                    r = faker.rng.randrange(len(rows))
                    m = faker.rng.randrange(2, len(rows[r]["conversations"]))
                    message = rows[r]["conversations"][m]
                    secret_text = synth.expand(template, seed=f"bench-{seed}-{s}-{k}")
                    size += len(secret_text)
                    content = message["content"]
                    if profile == "sparse":
                        message["content"] = content[:200] + "\n" + secret_text + content[200:400]
                    else:  # anywhere in the whole (often long) turn, at a line start
                        at = content.rfind("\n", 0, faker.rng.randrange(len(content) + 1)) + 1
                        message["content"] = content[:at] + secret_text + content[at:]
                    planted.append({"shard": name, "row": shard_rows + r, "column": f"conversations[{m}].content",
                                    "rule_id": rule_id})
                writer.write_table(pa.Table.from_pylist(rows, schema=TRACE_SCHEMA), row_group_size=len(rows))
                shard_rows += len(rows)
                total_bytes += sum(row_bytes(r) for r in rows)
        total_rows += shard_rows
    manifest = {"seed": seed, "mb": mb, "shards": shards, "row_groups": row_groups, "generator": generator_digest(),
                "profile": profile,
                "rows": total_rows,
                "string_bytes": total_bytes, "planted": planted}
    manifest_path(out).write_text(json.dumps(manifest, indent=1))
    return manifest


def main() -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=160.0, help="MB of strings in total")
    parser.add_argument("--shards", type=int, default=6)
    parser.add_argument("--row-groups", type=int, default=4, help="row groups per shard")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", choices=PROFILES, default="sparse")
    args = parser.parse_args()
    manifest = generate(args.out, args.mb, args.shards, args.row_groups, args.seed, profile=args.profile)
    print(f"{manifest['shards']} shards, {manifest['rows']} rows, {manifest['string_bytes'] / 1e6:.1f} MB of strings, "
          f"{len(manifest['planted'])} planted credentials -> {args.out}")


if __name__ == "__main__":
    main()

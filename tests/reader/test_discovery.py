"""Every file under a scanned path is accounted for: scanned (shard, text, CSV, tar member), excluded, or not scanned.

Real files built in the test; the CLI runs in a subprocess for exit codes and report contents.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import shardscan
from shardscan.atomic import TEMP_SUFFIX
from shardscan.cache import CACHE_DIR_NAME
from shardscan.reader import discover_files
from shardscan.reader import exclude as exclude_module
from shardscan.reader.sniff import sniff
from shardscan.reporters import FORMATS
from shardscan.synth import expand, private_key_pem

TOKEN = expand("{{github:ghp_}}", seed="discovery")
REPO = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


def run(*args: str, cwd: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    # From an empty folder: the repository's own allowlist.yaml must not take part.
    with tempfile.TemporaryDirectory() as empty:
        environment = dict(os.environ if env is None else env)
        environment["PYTHONPATH"] = str(REPO) + (os.pathsep + environment["PYTHONPATH"]
                                                 if environment.get("PYTHONPATH") else "")
        return subprocess.run([sys.executable, "-m", "shardscan.cli", *args], capture_output=True, text=True,
                              timeout=300, cwd=cwd or empty, env=environment)


def parquet(path: Path, texts: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": texts}), path)
    return path


def locations(report) -> set[tuple[str, int, str]]:
    return {(f.location.shard, f.location.row, f.location.column) for f in report.findings}


def json_report(args: list[str], tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "report.json"
    proc = run("scan", *args, "--no-cache", "-j", "1", "--format", f"json:{out}")
    return proc, json.loads(out.read_text()) if out.exists() else {}


# ---- nothing to scan ------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("command", ["scan", "gate"])
def test_an_empty_folder_is_an_incomplete_scan_naming_it(tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    extra = ["--report-dir", str(tmp_path / "reports")] if command == "gate" else []
    proc = run(command, str(empty), "--no-cache", *extra)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no file to scan: empty folder" in proc.stdout and str(empty) in proc.stdout


@pytest.mark.slow
def test_a_folder_whose_files_are_all_excluded_scans_nothing(tmp_path):
    parquet(tmp_path / "data" / "a.parquet", ["clean"])
    proc = run("scan", str(tmp_path / "data"), "--no-cache", "--exclude", "*.parquet", "-f", "compact")
    assert proc.returncode == 3
    assert "no file to scan: all 1 file(s) are excluded" in proc.stdout
    # --skip-unreadable lets a path that yielded nothing pass, but a run that read nothing never does.
    proc = run("scan", str(tmp_path / "data"), "--no-cache", "--exclude", "*.parquet", "-f", "compact",
               "--skip-unreadable")
    assert proc.returncode == 3
    assert "[nothing-scanned]" in proc.stdout


# ---- content, not suffix ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("name", ["part-0.pq", "data.bin", "shard"])
def test_a_parquet_file_with_an_unknown_suffix_is_sniffed_and_scanned(tmp_path, name):
    parquet(tmp_path / "data" / name, ["hello", f"GITHUB_TOKEN={TOKEN}"])
    proc, report = json_report([str(tmp_path / "data")], tmp_path)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert [(f["shard"], f["row"], f["column"], f["rule_id"]) for f in report["findings"]] == [
        (name, 1, "text", "github-pat")
    ]
    assert report["files"]["scanned"] == 1 and report["files"]["not_scanned"] == []


@pytest.mark.slow
def test_gzip_compressed_json_lines_without_a_suffix_is_sniffed(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "export.bin").write_bytes(gzip.compress(b'{"a": "x"}\n' + json.dumps({"a": f"k {TOKEN}"}).encode() + b"\n"))
    report = shardscan.scan(str(data))
    assert locations(report) == {("export.bin", 1, "a")}
    assert report.exit_code == 1


def test_sniffing_tells_shards_archives_text_and_binary_apart():
    assert sniff(b"PAR1....", "x").format == "parquet"
    assert sniff(b"ARROW1\x00\x00", "x").format == "arrow"
    assert sniff(b"\xff\xff\xff\xff\x10\x00\x00\x00", "x").format == "arrow"
    header = b"member.json".ljust(257, b"\x00") + b"ustar\x0000"
    assert sniff(header, "x").format == "tar"
    assert sniff(b'{"text": "hi"}\n{"text": "x"}\n', "x").format == "jsonl"
    assert sniff(b"# Dataset card\n\nhello", "README.md", whole=True).format == "text"
    assert sniff(b"a,b\n1,2\n", "train.CSV", whole=True).format == "csv"
    assert sniff("naïve text, cut mid-char: é".encode()[:-1], "x").format == "text"
    png = sniff(PNG, "x.png")
    assert png.format is None and "PNG image" in png.reason
    assert sniff(bytes(range(256)), "weights.bin").format is None


# ---- text files -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_dataset_card_with_a_token_is_found_at_its_line(tmp_path):
    data = tmp_path / "data"
    parquet(data / "train.parquet", ["clean"])
    (data / "README.md").write_text(
        f"---\nlicense: mit\n---\n# Card\n\nUse it like this:\n    export GITHUB_TOKEN={TOKEN}\n")
    proc, report = json_report([str(data)], tmp_path)
    assert proc.returncode == 1
    [finding] = report["findings"]
    assert (finding["shard"], finding["row"], finding["column"], finding["start"], finding["end"]) == (
        "README.md", 6, "__text__", 24, 24 + len(TOKEN))
    assert report["files"]["scanned"] == 2


def test_text_files_of_every_kind_are_scanned(tmp_path):
    data = tmp_path / "data"
    names = ["load.py", "config.yaml", "setup.toml", "tox.ini", ".env", "notes.txt", "run.log", ".gitattributes",
             "Makefile"]
    for i, name in enumerate(names):
        (data / name).parent.mkdir(parents=True, exist_ok=True)
        (data / name).write_text("first line\n" * i + f"key = '{TOKEN}'\n")
    report = shardscan.scan(data)
    assert locations(report) == {(name, i, "__text__") for i, name in enumerate(names)}


def test_a_pem_key_across_lines_is_one_finding_at_its_first_line_even_across_chunks(tmp_path):
    key = private_key_pem()
    # The key starts at line 60: with cells of 64 lines it would straddle a boundary if cut.
    lines = [f"log line {i}\n" for i in range(60)] + [key] + ["done\n"]
    (tmp_path / "agent.log").write_text("".join(lines))
    report = shardscan.scan([str(tmp_path / "agent.log")])
    [finding] = report.findings
    assert (finding.rule_id, finding.location.row, finding.location.column, finding.start) == (
        "private-key", 60, "__text__", 0)


def test_a_token_on_the_lines_two_cells_share_is_reported_once(tmp_path):
    # Lines 62 and 63 are in the first cell (lines 0-63) and in the overlap of the second (62-...).
    lines = [f"line {i}\n" for i in range(200)]
    lines[63] = f"token {TOKEN}\n"
    (tmp_path / "big.txt").write_text("".join(lines))
    report = shardscan.scan([str(tmp_path / "big.txt")])
    assert [(f.location.row, f.start) for f in report.findings] == [(63, 6)]
    assert report.stats.rows == 200


def test_a_huge_single_line_is_scanned_in_pieces_with_the_right_offset(tmp_path):
    from shardscan.filescan import MAX_PIECE_CHARS

    filler = "x " * (MAX_PIECE_CHARS // 2 + 1000)
    (tmp_path / "min.js").write_text(filler + f"var t='{TOKEN}';\n")
    report = shardscan.scan([str(tmp_path / "min.js")])
    [finding] = report.findings
    assert (finding.location.row, finding.start) == (0, len(filler) + 7)


# ---- CSV / TSV ------------------------------------------------------------------------------------


def test_csv_and_tsv_cells_are_named_by_the_header(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.csv").write_text(
        f'id,prompt,answer\n1,hello,world\n2,"multi\nline {TOKEN}",x\n3,a,b\n4,zz,{TOKEN}\n')
    (data / "test.tsv").write_text(f"id\tprompt\n1\t{TOKEN}\n")
    report = shardscan.scan(data)
    assert locations(report) == {("train.csv", 1, "prompt"), ("train.csv", 3, "answer"), ("test.tsv", 0, "prompt")}


def test_a_ragged_csv_is_scanned_as_text(tmp_path):
    (tmp_path / "bad.csv").write_text(f"a,b\n1,2\n3,4,5\n6,{TOKEN}\n")
    report = shardscan.scan([str(tmp_path / "bad.csv")])
    assert locations(report) == {(str(tmp_path / "bad.csv"), 3, "__text__")}
    assert report.exit_code == 1


# ---- tar archives ---------------------------------------------------------------------------------


def write_tar(path: Path, members: dict[str, bytes], mode: str = "w") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, mode) as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


def webdataset_members() -> dict[str, bytes]:
    return {
        "000.json": json.dumps({"text": "hello"}).encode(),
        "001.json": json.dumps({"conversations": [{"role": "tool", "content": f"GITHUB_TOKEN={TOKEN}"}]}).encode(),
        "001.txt": f"caption\nwith {TOKEN}\n".encode(),
    }


@pytest.mark.parametrize(("name", "mode"), [("shard-000.tar", "w"), ("shard-000.tar.gz", "w:gz"),
                                             ("shard-000.tgz", "w:gz"), ("shard-000.wds", "w")])
def test_tar_members_are_scanned_by_the_same_rules(tmp_path, name, mode):
    write_tar(tmp_path / "data" / name, webdataset_members(), mode)
    report = shardscan.scan([str(tmp_path / "data")])
    assert locations(report) == {
        (f"{name}!/001.json", 0, "conversations[0].content"),
        (f"{name}!/001.txt", 1, "__text__"),
    }
    assert report.exit_code == 1


@pytest.mark.slow
def test_an_image_member_is_not_scanned_unless_excluded(tmp_path):
    members = {**webdataset_members(), "001.jpg": b"\xff\xd8\xff\xe0" + bytes(500)}
    write_tar(tmp_path / "data" / "shard.tar", members)
    report = shardscan.scan([str(tmp_path / "data")])
    assert [(i.shard, i.kind) for i in report.issues] == [("shard.tar!/001.jpg", "not-scanned")]
    assert report.exit_code == 3
    report = shardscan.scan([str(tmp_path / "data")], exclude=["*.jpg"])
    assert report.issues == () and report.exit_code == 1
    assert report.files is not None and report.files.excluded_members == 1
    assert "1 archive member excluded" in report.files.summary()


def test_a_tar_over_the_member_limit_is_a_limit_hit(tmp_path, monkeypatch):
    from shardscan import filescan

    monkeypatch.setattr(filescan, "MAX_MEMBERS", 2)
    write_tar(tmp_path / "data" / "shard.tar", webdataset_members())
    report = shardscan.scan([str(tmp_path / "data")])
    assert [(i.shard, i.kind) for i in report.issues] == [("shard.tar", "limit")]
    assert report.exit_code == 3


def test_a_truncated_tar_is_unreadable(tmp_path):
    path = write_tar(tmp_path / "data" / "shard.tar", webdataset_members())
    path.write_bytes(path.read_bytes()[:700])
    report = shardscan.scan([str(tmp_path / "data")])
    assert any(i.shard == "shard.tar" and i.kind == "unreadable" for i in report.issues)
    assert report.exit_code == 3


# ---- binary files and exclusions ------------------------------------------------------------------


@pytest.mark.slow
def test_a_binary_image_is_listed_not_scanned_and_excluding_it_passes(tmp_path):
    data = tmp_path / "data"
    parquet(data / "train.parquet", ["clean"])
    (data / "images").mkdir()
    (data / "images" / "cat.png").write_bytes(PNG)
    proc, report = json_report([str(data)], tmp_path)
    assert proc.returncode == 3
    assert report["files"]["not_scanned"] == [
        {"path": "images/cat.png", "reason": "binary file (PNG image), not a format shardscan reads", "size": len(PNG)}
    ]
    assert [(e["shard"], e["kind"]) for e in report["errors"]] == [("images/cat.png", "not-scanned")]
    proc, report = json_report([str(data), "--exclude", "*.png"], tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["files"] == {"scanned": 1, "excluded": 1, "excluded_by": {"--exclude": 1}, "not_scanned": [],
                               "excluded_archive_members": 0}


@pytest.mark.slow
def test_shardscanignore_excludes_and_says_so(tmp_path):
    data = tmp_path / "data"
    parquet(data / "train.parquet", ["clean"])
    (data / "images").mkdir()
    (data / "images" / "a.png").write_bytes(PNG)
    (data / "images" / "b.png").write_bytes(PNG)
    (data / "weights.bin").write_bytes(bytes(range(256)) * 4)
    (data / "keep.bin").write_bytes(bytes(range(256)) * 4)
    (data / ".shardscanignore").write_text("# published unread, reviewed\nimages/\n*.bin\n!keep.bin\n")
    proc = run("scan", str(data), "--no-cache", "-f", "compact")
    assert proc.returncode == 3  # keep.bin is re-included, and it is binary
    assert "files: 2 files scanned, 3 files excluded by .shardscanignore, 1 not scanned" in proc.stdout
    (data / ".shardscanignore").write_text("images/\n*.bin\n")
    proc = run("scan", str(data), "--no-cache", "-f", "compact")
    assert proc.returncode == 0, proc.stdout
    assert "files: 2 files scanned, 4 files excluded by .shardscanignore, 0 not scanned" in proc.stdout


def test_git_cache_and_temporary_files_are_excluded_by_default(tmp_path):
    data = tmp_path / "data"
    parquet(data / "train.parquet", ["clean"])
    parquet(data / ".git" / "objects" / "x.parquet", [f"t {TOKEN}"])
    (data / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    parquet(data / CACHE_DIR_NAME / "index.parquet", [f"t {TOKEN}"])
    parquet(data / f"out.parquet{TEMP_SUFFIX}", [f"t {TOKEN}"])
    found = discover_files(str(data))
    assert [s.display for s in found.shards] == ["train.parquet"]
    assert {str(k): v for k, v in found.excluded_by().items()} == {
        "default (.git/ folders)": 2, "default (shardscan's cache folder)": 1,
        "default (shardscan's temporary files)": 1,
    }
    report = shardscan.scan(data)
    assert report.exit_code == 0
    assert report.files is not None and report.files.excluded_total == 4
    assert exclude_module.CACHE_DIR_NAME == CACHE_DIR_NAME


@pytest.mark.parametrize(("glob", "path", "excluded"), [
    ("*.png", "a/b/c.png", True),
    ("images/", "images/x.json", True),
    ("images/", "images", False),  # a folder glob never matches a file of that name
    ("/top.txt", "top.txt", True),
    ("/top.txt", "sub/top.txt", False),
    ("sub/*.txt", "sub/a.txt", True),
    ("sub/*.txt", "sub/deeper/a.txt", False),
    ("**/raw/**", "x/raw/y/z.bin", True),
    ("data", "data/a.parquet", True),
    ("\\#notes", "#notes", True),
])
def test_exclusion_globs_follow_gitignore(glob, path, excluded):
    patterns = exclude_module.compile_patterns([glob])
    assert exclude_module.matches(patterns, path) is excluded


@pytest.mark.slow
def test_every_report_format_shows_the_file_counts(tmp_path):
    data = tmp_path / "data"
    parquet(data / "train.parquet", ["clean"])
    (data / "cat.png").write_bytes(PNG)
    (data / "skip.png").write_bytes(PNG)
    (data / "notes.md").write_text("nothing\n")
    outputs = {fmt: tmp_path / f"out-{fmt}" for fmt in FORMATS}
    args = [a for fmt, path in outputs.items() for a in ("--format", f"{fmt}:{path}")]
    proc = run("scan", str(data), "--no-cache", "--exclude", "skip.png", *args)
    assert proc.returncode == 3
    summary = "2 files scanned, 1 file excluded by --exclude, 1 not scanned"
    for fmt, path in outputs.items():
        text = path.read_text()
        if fmt in ("json", "sarif"):
            doc = json.loads(text)
            files = doc["files"] if fmt == "json" else doc["runs"][0]["properties"]["files"]
            assert (files["scanned"], files["excluded"], len(files["not_scanned"])) == (2, 1, 1), fmt
            assert files["not_scanned"][0]["path"] == "cat.png"
        elif fmt == "jsonl":
            summary_line = json.loads(text.splitlines()[-1])
            assert summary_line["type"] == "summary" and summary_line["files"]["scanned"] == 2, fmt
        else:
            assert summary in text, fmt
            assert "cat.png" in text, fmt
        if fmt == "html":
            for label, value in (("files scanned", 2), ("files excluded", 1), ("files not scanned", 1)):
                assert f'data-metric="{label}"><b>{value}</b>' in text


# ---- same names under several roots ---------------------------------------------------------------


@pytest.mark.slow
def test_same_named_shards_under_two_roots_keep_their_own_findings(tmp_path):
    parquet(tmp_path / "dupA" / "x.parquet", ["clean", "clean"])
    parquet(tmp_path / "dupB" / "x.parquet", ["clean", f"GITHUB_TOKEN={TOKEN}"])
    parquet(tmp_path / "dupB" / "only-b.parquet", ["clean"])
    a, b = str(tmp_path / "dupA"), str(tmp_path / "dupB")
    report = shardscan.scan([a, b])
    assert locations(report) == {(f"{b}/x.parquet", 1, "text")}
    assert sorted(s.shard for s in report.shards) == sorted([f"{a}/x.parquet", f"{b}/x.parquet", "only-b.parquet"])
    # One root: names stay relative, so existing allowlists keep matching.
    assert locations(shardscan.scan(b)) == {("x.parquet", 1, "text")}


@pytest.mark.slow
def test_redact_applies_each_finding_to_its_own_file_under_two_roots(tmp_path):
    parquet(tmp_path / "dupA" / "x.parquet", ["clean", "clean"])
    parquet(tmp_path / "dupB" / "x.parquet", ["clean", f"GITHUB_TOKEN={TOKEN}"])
    out = tmp_path / "out"
    proc = run("redact", "dupA", "dupB", "--out", str(out), "--no-allowlist", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "redacted 1 span(s) in 1 shard(s)" in proc.stdout
    assert pq.read_table(out / "dupA" / "x.parquet").column("text").to_pylist() == ["clean", "clean"]
    redacted = pq.read_table(out / "dupB" / "x.parquet").column("text").to_pylist()
    assert redacted[0] == "clean" and TOKEN not in redacted[1] and "[REDACTED:github:" in redacted[1]


# ---- API and optional dependencies ----------------------------------------------------------------


@pytest.mark.slow
def test_scan_takes_one_path_as_a_str_or_a_path(tmp_path):
    parquet(tmp_path / "demo" / "a.parquet", [f"t {TOKEN}"])
    for given in (str(tmp_path / "demo"), tmp_path / "demo"):
        assert locations(shardscan.scan(given)) == {("a.parquet", 0, "text")}


def test_scan_table_of_an_unsupported_type_names_the_supported_ones():
    with pytest.raises(TypeError) as err:
        shardscan.scan_table("data/train.parquet")
    message = str(err.value)
    assert "pyarrow.Table" in message and "datasets.Dataset" in message and "to_arrow()" in message
    assert "shardscan.scan()" in message


@pytest.mark.slow
def test_a_url_without_its_filesystem_package_is_a_usage_error(tmp_path):
    # A stand-in fsspec that cannot be imported, first on the path: as if it were not installed.
    fake = tmp_path / "site"
    (fake / "fsspec").mkdir(parents=True)
    (fake / "fsspec" / "__init__.py").write_text("raise ImportError('No module named fsspec')\n")
    env = dict(os.environ, PYTHONPATH=str(fake))
    for args in (["scan", "hf://datasets/org/traces"], ["gate", "hf://datasets/org/traces"],
                 ["hook", "hf://datasets/org/traces/data/train.parquet"],
                 ["redact", "hf://datasets/org/traces", "--out", str(tmp_path / "o")]):
        proc = run(*args, "--no-cache" if args[0] != "redact" else "--no-allowlist", env=env)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        assert "pip install fsspec" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_hook_reads_csv_and_tar_files_and_honours_the_repository_shardscanignore(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "split.csv").write_text(f"id,text\n1,{TOKEN}\n")
    write_tar(tmp_path / "shard.tar", webdataset_members())
    (tmp_path / "cover.png").write_bytes(PNG)
    proc = run("hook", "split.csv", "shard.tar", "cover.png", "--no-cache", "--no-allowlist", cwd=str(tmp_path))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "cover.png: [not-scanned]" in proc.stdout
    (tmp_path / ".shardscanignore").write_text("*.png\n")
    proc = run("hook", "split.csv", "shard.tar", "cover.png", "--no-cache", "--no-allowlist", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "split.csv:0 text github-pat" in proc.stdout and "shard.tar!/001.json:0" in proc.stdout
    assert "files: 2 files scanned, 1 file excluded by .shardscanignore, 0 not scanned" in proc.stdout


@pytest.mark.slow
def test_a_hook_run_whose_only_file_is_excluded_passes(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    parquet(tmp_path / "raw" / "dump.parquet", [f"t {TOKEN}"])
    proc = run("hook", "raw/dump.parquet", "--exclude", "raw/", "--no-cache", "--no-allowlist", cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "files: 0 files scanned, 1 file excluded by --exclude, 0 not scanned" in proc.stdout


@pytest.mark.slow
def test_tar_results_are_never_replayed_from_the_cache(tmp_path):
    write_tar(tmp_path / "data" / "shard.tar", webdataset_members())
    cache = tmp_path / "cache"
    first = shardscan.scan(tmp_path / "data", cache=cache)
    again = shardscan.scan(tmp_path / "data", cache=cache, exclude=["*.txt"])
    assert locations(first) == {
        ("shard.tar!/001.json", 0, "conversations[0].content"), ("shard.tar!/001.txt", 1, "__text__"),
    }
    assert locations(again) == {("shard.tar!/001.json", 0, "conversations[0].content")}
    assert again.stats.cached_shards == 0


def test_an_hf_url_without_huggingface_hub_names_the_package(tmp_path):
    pytest.importorskip("fsspec")
    fake = tmp_path / "site"
    (fake / "huggingface_hub").mkdir(parents=True)
    (fake / "huggingface_hub" / "__init__.py").write_text("raise ImportError('No module named huggingface_hub')\n")
    proc = run("scan", "hf://datasets/org/traces", "--no-cache", env=dict(os.environ, PYTHONPATH=str(fake)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "pip install huggingface_hub" in proc.stderr and "Traceback" not in proc.stderr


def test_a_newline_free_stream_is_read_in_bounded_segments_at_true_offsets(tmp_path, monkeypatch):
    from shardscan import filescan

    # Small pieces, so the bounded path runs on a small file: 40 KiB without a newline.
    monkeypatch.setattr(filescan, "MAX_PIECE_CHARS", 4096)
    monkeypatch.setattr(filescan, "PIECE_OVERLAP_CHARS", 512)
    monkeypatch.setattr(filescan, "READ_BYTES", 1000)
    filler = "ab " * 4000
    text = filler + f"x={TOKEN} " + filler + f"y={TOKEN}" + "é" * 3000
    data = text.encode()
    cells = [c for c in filescan.text_cells(iter([data[i:i + 1000] for i in range(0, len(data), 1000)]))
             if not isinstance(c, int)]
    assert max(len(c.text) for c in cells) <= 4096 and {c.line for c in cells} == {0}
    report = shardscan.scan([str(tmp_path / "x.txt")]) if (tmp_path / "x.txt").write_text(text) else None
    assert [(f.location.row, f.start) for f in report.findings] == [
        (0, len(filler) + 2), (0, 2 * len(filler) + len(TOKEN) + 5)]


def test_the_end_of_a_segmented_line_keeps_its_offset_and_the_next_line_its_number(tmp_path, monkeypatch):
    from shardscan import filescan

    monkeypatch.setattr(filescan, "MAX_PIECE_CHARS", 4096)
    monkeypatch.setattr(filescan, "PIECE_OVERLAP_CHARS", 512)
    monkeypatch.setattr(filescan, "READ_BYTES", 1000)
    filler = "ab " * 8000
    (tmp_path / "x.txt").write_text(filler + f"x={TOKEN}\nnext {TOKEN}\n")
    report = shardscan.scan([str(tmp_path / "x.txt")])
    assert [(f.location.row, f.start) for f in report.findings] == [(0, len(filler) + 2), (1, 5)]
    assert report.stats.rows == 2


def test_a_truncated_parquet_file_with_an_unknown_suffix_is_unreadable_not_binary(tmp_path):
    path = parquet(tmp_path / "data" / "part-0.pq", [f"t {TOKEN}"] * 50)
    path.write_bytes(path.read_bytes()[:-20])
    report = shardscan.scan(tmp_path / "data")
    assert [(i.shard, i.kind) for i in report.issues] == [("part-0.pq", "unreadable")]
    assert report.exit_code == 3


def test_legacy_encoded_text_and_indented_pem_blocks_are_scanned(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "notes").write_bytes("Caf\u00e9 cr\u00e8me, r\u00e9sum\u00e9\n".encode("latin-1") * 3
                                 + f"token={TOKEN}\n".encode())
    key = "".join(f"    {line}\n" for line in private_key_pem("ec").splitlines())
    (data / "deploy.yaml").write_text(f"service:\n  name: api\n  tls_key: |\n{key}  port: 443\n")
    report = shardscan.scan(data)
    assert {(f.location.shard, f.location.row, f.rule_id) for f in report.findings} == {
        ("notes", 3, "github-pat"), ("deploy.yaml", 3, "private-key")}
    assert report.exit_code == 1 and report.issues == ()


def test_sarif_places_a_text_finding_at_its_line_and_character(tmp_path):
    from shardscan.reporters import render

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "README.md").write_text(f"# Card\n\n    export GITHUB_TOKEN={TOKEN}\n")
    sarif = json.loads(render(shardscan.scan(tmp_path / "data"), "sarif"))
    [result] = sarif["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 3, "startColumn": 25}
    from shardscan import filescan
    from shardscan.reporters import sarif as sarif_module

    assert sarif_module.TEXT_COLUMN == filescan.TEXT_COLUMN


def test_a_plain_text_file_named_like_a_compressed_one_is_read_plain(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.gz").write_text(f"not compressed at all: {TOKEN}\n")
    report = shardscan.scan(tmp_path / "data")
    assert locations(report) == {("notes.gz", 0, "__text__")} and report.issues == ()


def test_utf16_text_with_a_byte_order_mark_is_scanned(tmp_path):
    (tmp_path / "data").mkdir()
    text = "PS C:\\> Get-Content .env\r\nHELLO=1\r\n" + f"GITHUB_TOKEN={TOKEN}\r\n"
    (tmp_path / "data" / "session.log").write_bytes(text.encode("utf-16"))  # BOM + UTF-16LE
    (tmp_path / "data" / "be.txt").write_bytes(b"\xfe\xff" + f"key {TOKEN}\n".encode("utf-16-be"))
    report = shardscan.scan(tmp_path / "data")
    assert {(f.location.shard, f.location.row, f.start) for f in report.findings} == {
        ("session.log", 2, 13), ("be.txt", 0, 4)}
    assert report.issues == ()


def test_the_folders_shardscanignore_also_excludes_tar_members(tmp_path):
    members = {**webdataset_members(), "001.jpg": b"\xff\xd8\xff\xe0" + bytes(500)}
    write_tar(tmp_path / "data" / "shard.tar", members)
    (tmp_path / "data" / ".shardscanignore").write_text("*.jpg\n")
    report = shardscan.scan(tmp_path / "data")
    assert report.issues == () and report.exit_code == 1
    assert report.files is not None and report.files.excluded_members == 1


def test_linked_folders_are_walked_and_entries_without_a_file_are_not_scanned(tmp_path: Path):
    """A linked-in folder is read (once, whatever loops link back); a broken link or a FIFO cannot be
    read as data: listed as not scanned, and the scan is incomplete instead of passing."""
    root, other = tmp_path / "root", tmp_path / "other"
    (root / "sub").mkdir(parents=True)
    other.mkdir()
    (root / "b.txt").write_text("hello\n")
    (other / "a.txt").write_text("world\n")
    (root / "linked").symlink_to(other, target_is_directory=True)
    (root / "sub" / "loop").symlink_to(root, target_is_directory=True)
    (root / "broken").symlink_to(tmp_path / "nowhere")
    os.mkfifo(root / "pipe")
    found = discover_files([str(root)])
    assert [s.display for s in found.shards] == ["b.txt", "linked/a.txt"]
    assert [(n.path, n.reason) for n in found.not_scanned] == [
        ("broken", "a link to nothing"), ("pipe", "not a regular file (a FIFO, socket or device)"),
    ]
    excluded = discover_files([str(root)], exclude=["broken", "pipe"])
    assert excluded.not_scanned == () and len(excluded.excluded) == 2

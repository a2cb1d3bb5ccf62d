"""The CLI's shared options and its one error-to-exit-code mapping: a flag is checked the same way by
every command that has it, and every command maps the library's errors to the same exit codes."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from shardscan.cli import app
from shardscan.cli.app import EXIT_CODES, exits
from shardscan.errors import ConfigError, IncompleteInputError, MissingDependencyError, OutputError, ShardReadError
from tests.conftest import trace_row, write_trace_shard

CLI_PACKAGE = Path(__file__).resolve().parents[2] / "shardscan" / "cli"


def invoke(*args: str, cwd: Path) -> tuple[int, str]:
    """Run the command line in-process from ``cwd``; the exit code and standard error."""
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args))
    finally:
        os.chdir(previous)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stderr


@pytest.fixture
def data(tmp_path: Path) -> Path:
    write_trace_shard(tmp_path / "data" / "train-00000-of-00001.parquet", [trace_row([("user", "hello")])])
    (tmp_path / "a-file").write_text("not a folder\n")
    return tmp_path


# A command line per command that scans ``data``; the flag under test is appended.
COMMANDS = {
    "scan": ["scan", "data", "--no-cache"],
    "gate": ["gate", "data", "--no-cache", "--report-dir", "reports"],
    "hook": ["hook", "data/train-00000-of-00001.parquet", "--no-cache"],
    "demo": ["demo", "demo-data"],
    "redact": ["redact", "data", "--out", "clean"],
}

# (flag and value, the message scan gives, the commands having the flag)
FLAGS = [
    (["--memory-budget", "1KB"], "--memory-budget must be at least 1MB", ["scan", "gate", "hook"]),
    (["--memory-budget", "lots"], "--memory-budget: not a size: 'lots' (expected e.g. 512MB, 2GB, 1.5GiB)",
     ["scan", "gate", "hook"]),
    (["--now", "yesterday"], "--now: not an ISO date or datetime: 'yesterday'",
     ["scan", "gate", "hook", "demo", "redact"]),
    (["--max-findings-per-cell", "0"], "--max-findings-per-cell and --max-findings-per-shard must be >= 1",
     ["scan", "gate"]),
    (["--max-findings-per-shard", "0"], "--max-findings-per-cell and --max-findings-per-shard must be >= 1",
     ["scan", "gate"]),
    (["--jobs", "0"], "--jobs must be >= 1", ["scan", "gate"]),
    (["--known-secrets", "missing.txt"], "missing.txt: cannot read known-secrets file (FileNotFoundError)",
     ["scan", "gate"]),
    (["--allowlist", "allow.yaml", "--no-allowlist"], "--allowlist and --no-allowlist exclude each other",
     ["scan", "gate", "hook", "demo", "redact"]),
    (["--cache-dir", "a-file"], "--cache-dir a-file: cannot write: it is not a folder", ["scan", "gate", "hook"]),
    (["--rules", "missing.yaml"], "missing.yaml: cannot read rule file (FileNotFoundError)",
     ["scan", "gate", "hook", "redact"]),
]


@pytest.mark.parametrize(("flag", "message", "commands"), FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_a_flag_is_checked_the_same_way_by_every_command_that_has_it(data: Path, flag, message, commands):
    for command in commands:
        args = [*COMMANDS[command], *flag]
        if "--cache-dir" in flag:
            args.remove("--no-cache")
        code, stderr = invoke(*args, cwd=data)
        assert (command, code, stderr) == (command, 2, f"shardscan: error: {message}\n")
    # Nothing was scanned, written or created on the way to the error.
    assert sorted(p.name for p in data.iterdir()) == ["a-file", "data"]


@pytest.mark.parametrize("flag", [["--memory-budget", "1KB"], ["--now", "yesterday"]])
def test_the_hook_checks_its_flags_when_no_file_is_staged(tmp_path: Path, flag):
    # A bad flag in the hook's configuration fails its first run, not the first commit of a shard.
    code, stderr = invoke("hook", *flag, cwd=tmp_path)
    assert code == 2
    assert stderr.startswith(f"shardscan: error: {flag[0]}")
    assert invoke("hook", cwd=tmp_path) == (0, "")


def test_the_demo_checks_its_flags_before_writing_its_dataset(tmp_path: Path):
    code, stderr = invoke("demo", "demo-data", "--now", "yesterday", cwd=tmp_path)
    assert (code, stderr) == (2, "shardscan: error: --now: not an ISO date or datetime: 'yesterday'\n")
    assert not (tmp_path / "demo-data").exists()


@pytest.mark.parametrize("content", ["[1, 2]", '{"findings": [{"shard": "x", "blocking": true}]}', '{"findings": 3}'])
def test_redact_from_a_json_file_that_is_not_a_report_is_a_usage_error(data: Path, content: str):
    (data / "report.json").write_text(content)
    code, stderr = invoke("redact", "data", "--out", "clean", "--from", "report.json", cwd=data)
    assert (code, stderr) == (2, "shardscan: error: --from report.json: not a shardscan JSON report "
                                 "(write one with --format json)\n")
    assert not (data / "clean").exists() and not (data / "clean.redactions.json").exists()


def test_redact_of_a_missing_input_is_incomplete(data: Path):
    code, stderr = invoke("redact", "data/nope.parquet", "--out", "clean", cwd=data)
    assert (code, stderr) == (3, "shardscan: error: data/nope.parquet: no such file, folder or glob match\n")


# ---- the one mapping ------------------------------------------------------------------------------


def _raising(err: Exception):
    def command(mkdir: bool = False) -> None:
        raise err

    def command_without_mkdir() -> None:
        raise err

    return command, command_without_mkdir


@pytest.mark.parametrize(
    ("err", "code", "line"),
    [
        (ConfigError("rules/x.yaml: some-rule: bad pattern"), 2, "rules/x.yaml: some-rule: bad pattern"),
        (MissingDependencyError("s3://b/x: needs s3fs: pip install 'shardscan[s3]'"), 2,
         "s3://b/x: needs s3fs: pip install 'shardscan[s3]'"),
        (OutputError("out/r.json", "No space left on device"), 2, "out/r.json: cannot write: No space left on device"),
        (IncompleteInputError("data/x: no such file, folder or glob match"), 3,
         "data/x: no such file, folder or glob match"),
    ],
)
def test_every_error_maps_to_its_exit_code_with_one_line(capsys, err, code, line):
    for command in _raising(err):
        with pytest.raises(typer.Exit) as exited:
            exits(command)()
        assert exited.value.exit_code == code
        assert capsys.readouterr().err == f"shardscan: error: {line}\n"


def test_a_missing_output_folder_names_mkdir_only_where_the_command_has_it(capsys):
    with_mkdir, without = _raising(OutputError("out/r.json", "its folder does not exist"))
    with pytest.raises(typer.Exit):
        exits(with_mkdir)()
    assert capsys.readouterr().err.endswith("its folder does not exist (--mkdir creates it)\n")
    with pytest.raises(typer.Exit):
        exits(without)()
    assert capsys.readouterr().err.endswith("its folder does not exist\n")


def test_an_unmapped_error_is_not_turned_into_an_exit_code():
    unmapped = ShardReadError("x.parquet", "bad page")
    assert not any(isinstance(unmapped, kind) for kind in EXIT_CODES)
    with pytest.raises(ShardReadError):
        exits(_raising(unmapped)[0])()


# ---- how the CLI is written -----------------------------------------------------------------------


def _function_level_imports(path: Path) -> list[tuple[int, bool]]:
    """(line, marked) of every import inside a function of ``path``; marked: a ``# Start-up:`` comment
    is on one of the lines just above it."""
    lines = path.read_text().splitlines()
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for inner in ast.walk(node):
                if isinstance(inner, ast.Import | ast.ImportFrom):
                    above = lines[max(0, inner.lineno - 4):inner.lineno - 1]
                    found.append((inner.lineno, any("# Start-up:" in line for line in above)))
    return found


def test_the_cli_imports_inside_functions_only_to_start_fast():
    modules = sorted(CLI_PACKAGE.glob("*.py"))
    assert len(modules) >= 5
    for module in modules:
        unmarked = [line for line, marked in _function_level_imports(module) if not marked]
        assert unmarked == [], f"{module.name}: imports inside functions not marked '# Start-up:' at lines {unmarked}"
        assert len(module.read_text().splitlines()) < 600, module.name


def test_commands_raise_rather_than_catch_errors_to_print_them():
    # app.exits prints errors and picks exit codes; a command doing either itself would bypass it.
    for module in sorted(CLI_PACKAGE.glob("*.py")):
        if module.name == "app.py":
            continue
        text = module.read_text()
        for bypass in ("except ConfigError", "except ShardscanError", "EXIT_USAGE", "typer.Exit(2", "typer.Exit(3"):
            assert bypass not in text, (module.name, bypass)
        assert "\nassert " not in text and "    assert " not in text, module.name

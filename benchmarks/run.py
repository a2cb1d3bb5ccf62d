"""Benchmark shardscan against the pyarrow decode baseline (and gitleaks, when installed); write RESULTS.md.

One run, on the same generated shards, measures in separate processes (wall time and peak RSS
of the whole process tree, sampled from /proc):

- the baseline (``benchmarks.baseline``: read every row group, touch every string cell);
- ``shardscan scan`` with 1 worker and with all cores (findings must be identical);
- optionally ``--max-decode-depth 0`` (decoding off) next to the default;
- half the corpus vs the whole corpus (cost must be linear);
- optionally gitleaks on a JSONL export of the same rows;
- optionally (``--big``) peak RSS on one shard holding ~1 GB of strings in 10 row groups;
- the same scans on a small corpus (160 MB, 6 shards) and on a one-row shard, where the fixed
  cost of a run (interpreter, imports, rules) weighs most.

The main corpus mirrors the dataset this tool is built for (~2.15 GB of strings in ~100 shards):
the targets are about throughput on such a dataset. A run also pays a fixed ~0.3 s that no
number of workers shortens; the small-corpus and one-row rows show it instead of hiding it.

Before timing, the package is byte-compiled into ``__pycache__`` (as ``pip install`` does), so that
the timings are those of an installed shardscan: a source tree run with PYTHONDONTWRITEBYTECODE
set would otherwise recompile every module on every run (about 0.15 s).

The timed commands on the corpus take turns for ``--repeat`` rounds, and the fastest run of each
is kept (the machine is shared; see :func:`best_of`).
Corpus profiles (``--profiles sparse,dense,seed``, see ``benchmarks.generate``) are timed side by
side: each profile's baseline, all-cores scan, scan with decoding off (and one worker on ``seed``)
take turns in the same rounds. ``--profiles-only`` (or ``--quick``: 40 MB per profile, 2 rounds)
runs only them and writes RESULTS.md from them, which fits in a few minutes on a small shared machine.

Usage: ``python -m benchmarks.run [--mb 2150] [--shards 100] [--repeat 5] [--big] [--no-gitleaks]
[--profiles-only | --quick] [--profile-mb 160] [--profile-shards 8]``
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / "data"
PY = sys.executable


@dataclass
class Run:
    """One measured process: wall seconds, peak RSS of its process tree, exit code, output, and the
    CPU seconds (user + system) of the process and every worker it waited for."""

    seconds: float
    peak_rss: int
    returncode: int
    stdout: str
    stderr: str
    cpu_seconds: float = 0.0


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and all its descendants, from /proc.

    Follows each process's ``children`` lists instead of reading every process on the machine:
    the sampler runs beside the measured command every 20 ms, and a walk of all of /proc took
    about 2 ms of CPU, a share of a core the command's own workers then lacked.
    """
    total, stack, seen = 0, [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            with open(f"/proc/{pid}/statm") as fh:
                total += int(fh.read().split()[1]) * _PAGE_SIZE
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as fh:
                    stack += map(int, fh.read().split())
        except (OSError, IndexError, ValueError):  # the process (or thread) ended meanwhile
            continue
    return total


_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def measure(cmd: list[str], env: dict | None = None, cwd: Path = ROOT) -> Run:
    """Run ``cmd`` (in ``cwd``) and sample its process tree's RSS every 20 ms until it exits."""
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    return Run(seconds, peak, proc.returncode, out, err, _children_cpu() - cpu_before)


def _children_cpu() -> float:
    """CPU seconds of every child process reaped so far (a child's own reaped workers included)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def best_of(commands: dict[str, list[str]], repeat: int) -> dict[str, Run]:
    """The fastest of ``repeat`` runs of each command, the commands taking turns round after round.

    The machine is shared: taking turns spreads its busy spells over every command instead of
    letting all the runs of one command fall into one of them, which would skew the ratios
    between commands. Peak RSS is the largest seen. A report a command writes (``--output
    PATH``) is kept from its fastest run, so the in-process time read from it belongs to the same
    run as the wall time.
    """
    runs: dict[str, list[Run]] = {name: [] for name in commands}
    reports = {name: Path(cmd[cmd.index("--output") + 1]) if "--output" in cmd else None
               for name, cmd in commands.items()}
    for _ in range(repeat):
        for name, cmd in commands.items():
            run = measure(cmd)
            report = reports[name]
            best_so_far = not runs[name] or run.seconds < min(r.seconds for r in runs[name])
            if report is not None and report.exists() and best_so_far:
                shutil.copyfile(report, report.with_name(report.name + ".best"))
            runs[name].append(run)
    fastest: dict[str, Run] = {}
    for name, report in reports.items():
        if report is not None and report.with_name(report.name + ".best").exists():
            shutil.move(report.with_name(report.name + ".best"), report)
        fastest[name] = min(runs[name], key=lambda r: r.seconds)
        fastest[name].peak_rss = max(r.peak_rss for r in runs[name])
    return fastest


def best(cmd: list[str], repeat: int) -> Run:
    """The fastest of ``repeat`` runs of one command (see :func:`best_of`)."""
    return best_of({"": cmd}, repeat)[""]


def byte_compile() -> bool:
    """Byte-compile shardscan and the benchmark modules into ``__pycache__``, as installing the package does.

    The timed processes then load compiled modules even when PYTHONDONTWRITEBYTECODE forbids
    them to write their own; returns whether every module compiled.
    """
    package = compileall.compile_dir(ROOT / "shardscan", quiet=1)
    benchmarks = compileall.compile_dir(HERE, maxlevels=0, quiet=1)  # not the corpus folder below it
    return bool(package and benchmarks)


def ensure_corpus(folder: Path, mb: float, shards: int, row_groups: int, seed: int, profile: str = "sparse") -> dict:
    """Generate the corpus unless an identical one is already there; return its manifest."""
    from benchmarks.generate import generate, generator_digest, manifest_path

    path = manifest_path(folder)
    if path.exists() and folder.is_dir():
        manifest = json.loads(path.read_text())
        wanted = (mb, shards, row_groups, seed, generator_digest(), profile)
        keys = ("mb", "shards", "row_groups", "seed", "generator", "profile")
        if tuple(manifest.get(key, "sparse" if key == "profile" else None) for key in keys) == wanted:
            return manifest
    if folder.exists():
        shutil.rmtree(folder)

    return generate(folder, mb, shards, row_groups, seed, profile=profile)


def scan_cmd(paths: list[str], jobs: int, report: Path, *extra: str) -> list[str]:
    return [PY, "-m", "shardscan.cli", "scan", *paths, "--jobs", str(jobs), "--format", "json", "--output",
            str(report), "--stats", "--now", "2026-12-02", "--no-cache", "--no-allowlist", *extra]


def export_jsonl(shards: list[Path], folder: Path) -> int:
    """Write each shard's rows as JSON lines (what gitleaks can read); return the bytes written.

    Exports of shards that are not in ``shards`` (an earlier corpus) are deleted: gitleaks reads
    the whole folder.
    """
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    wanted = {shard.stem + ".jsonl" for shard in shards}
    for stale in folder.glob("*.jsonl"):
        if stale.name not in wanted:
            stale.unlink()
    total = 0
    for shard in shards:
        out = folder / (shard.stem + ".jsonl")
        if not out.exists():
            with out.open("w") as fh:
                parquet = pq.ParquetFile(shard)
                for i in range(parquet.num_row_groups):
                    for row in parquet.read_row_group(i).to_pylist():
                        fh.write(json.dumps(row) + "\n")
        total += out.stat().st_size
    return total


def findings_of(report: Path) -> list[dict]:
    data = json.loads(report.read_text())
    return data["findings"]


_CPU_LOOP = "s = 0\nfor i in range(8_000_000): s += i * i"


def probe_cmd(copies: int) -> list[str]:
    """A command running ``copies`` copies of a CPU-bound Python loop at once.

    Timed with 1 copy and with one per core, taking turns with the scans, it measures how much
    faster this machine runs process-parallel work during the same minutes: the ceiling for any
    such program. On a shared or virtual machine the cores are not always whole cores, so 2
    workers cannot be held to 2x.
    """
    launcher = (f"import subprocess, sys\nprocs = [subprocess.Popen([sys.executable, '-S', '-c', {_CPU_LOOP!r}]) "
                f"for _ in range({copies})]\nsys.exit(max(p.wait() for p in procs))")
    return [PY, "-S", "-c", launcher]


def mb_s(nbytes: int, seconds: float) -> float:
    return nbytes / 1e6 / seconds if seconds > 0 else 0.0


# Each profile's target for the all-cores scan's wall time, as a multiple of the baseline's.
PROFILE_TARGETS = {"sparse": 1.5, "dense": 3.0, "seed": 2.0}


def profile_runs(names: list[str], mb: float, shards: int, repeat: int, cores: int, tmp: Path,
                 gitleaks: str | None) -> tuple[list[str], list[tuple[str, str, str]], list[str]]:
    """Time the corpus profiles side by side (``benchmarks.generate``: sparse, dense, seed).

    Per profile: the baseline, the all-cores scan, the same with decoding off, and on ``seed`` the
    one-worker scan; all of them take turns in the same rounds (see :func:`best_of`). gitleaks,
    when installed, reads each profile's JSONL export once. Returns the markdown lines, the target
    rows and notes.
    """
    corpora = {name: ensure_corpus(DATA / f"profile-{name}", mb, shards, 2, seed=1, profile=name) for name in names}
    commands: dict[str, list[str]] = {}
    reports: dict[str, Path] = {}
    for name in names:
        folder = str(DATA / f"profile-{name}")
        commands[f"{name}:base"] = [PY, "-m", "benchmarks.baseline", folder]
        variants = {"all": (cores, ()), "depth0": (cores, ("--max-decode-depth", "0"))}
        if name == "seed" and cores >= 2:
            variants["1"] = (1, ())
        for label, (jobs, extra) in variants.items():
            reports[f"{name}:{label}"] = tmp / f"profile-{name}-{label}.json"
            commands[f"{name}:{label}"] = scan_cmd([folder], jobs, reports[f"{name}:{label}"], *extra)
    if cores >= 2:  # this machine's own parallel speed-up in the same rounds (see probe_cmd)
        commands["probe-1"], commands["probe-all"] = probe_cmd(1), probe_cmd(cores)
    print(f"timing {len(commands)} profile commands, {repeat} rounds ...", file=sys.stderr, flush=True)
    timed = best_of(commands, repeat)
    gl: dict[str, Run] = {}
    if gitleaks:
        for name in names:
            out = DATA / f"profile-{name}-jsonl"
            export_jsonl(sorted((DATA / f"profile-{name}").glob("*.parquet")), out)
            gl[name] = best([gitleaks, "dir", str(out), "--no-banner", "--log-level", "error", "--report-format",
                             "json", "--report-path", str(tmp / f"gitleaks-{name}.json"), "--exit-code", "0"], 1)

    lines = ["| profile | strings MB | rows | candidate cells | baseline wall s | scan wall s (all cores) | MB/s "
             "| vs baseline | decoding off wall s | decoding on vs off | peak RSS MiB | gitleaks wall s |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    targets: list[tuple[str, str, str]] = []
    notes: list[str] = []
    stats: list[str] = []
    for name in names:
        base, run, off = timed[f"{name}:base"], timed[f"{name}:all"], timed[f"{name}:depth0"]
        nbytes = json.loads(base.stdout)["bytes"]
        ratio, extra = run.seconds / base.seconds, run.seconds / off.seconds - 1
        picked = re.search(r"candidates\s+(\d+) cell", run.stderr)
        glrun = gl.get(name)
        lines.append(f"| {name} | {nbytes / 1e6:.1f} | {corpora[name]['rows']} | {picked.group(1) if picked else '?'} "
                     f"| {base.seconds:.2f} | {run.seconds:.2f} | {mb_s(nbytes, run.seconds):.1f} | {ratio:.2f}x "
                     f"| {off.seconds:.2f} | {extra:+.1%} | {max(run.peak_rss, off.peak_rss) / 2**20:.0f} "
                     f"| {f'{glrun.seconds:.2f}' if glrun else 'not installed'} |")
        verdict = "met" if ratio <= PROFILE_TARGETS[name] else "NOT met"
        targets.append((f"{name}: all-cores scan <= {PROFILE_TARGETS[name]:.1f}x baseline", f"{ratio:.2f}x", verdict))
        targets.append((f"{name}: decoding on vs off < 15%", f"{extra:+.1%}", "met" if extra < 0.15 else "NOT met"))
        rss = max(timed[k].peak_rss for k in timed if k.startswith(name + ":") and not k.endswith(":base"))
        targets.append((f"{name}: peak RSS < 1 GB", f"{rss / 2**20:.0f} MiB", "met" if rss < 2**30 else "NOT met"))
        if glrun is not None:
            factor = glrun.seconds / run.seconds
            targets.append(
                (f"{name}: >= 10x gitleaks throughput", f"{factor:.1f}x", "met" if factor >= 10 else "NOT met")
            )
        elif name == "dense":
            targets.append(
                ("dense: >= 10x gitleaks throughput", "gitleaks is not installed on this machine", "not measured")
            )
        found_all = findings_of(reports[f"{name}:all"])
        located = {(f["shard"], f["row"], f["column"], f["rule_id"]) for f in found_all}
        planted = corpora[name]["planted"]
        hit = sum((p["shard"], p["row"], p["column"], p["rule_id"]) in located for p in planted)
        notes.append(f"{name}: {len(found_all)} findings ({sum(f['blocking'] for f in found_all)} blocking); "
                     f"{hit}/{len(planted)} planted credentials found.")
        if f"{name}:1" in timed:
            one = timed[f"{name}:1"]
            speedup = one.seconds / run.seconds
            same = findings_of(reports[f"{name}:1"]) == found_all
            targets.append((f"{name}: {cores} workers >= 1.7x one",
                            f"{speedup:.2f}x ({one.seconds:.2f} s with 1 worker; findings identical: {same})",
                            "met" if speedup >= 1.7 else "NOT met"))
        stats += [f"### {name}", "", "```", run.stderr.strip(), "```", ""]
    if cores >= 2:
        ceiling = cores * timed["probe-1"].seconds / timed["probe-all"].seconds
        notes.append(f"This machine's own speed-up for {cores} copies of a CPU-bound loop, timed in the same rounds: "
                     f"{ceiling:.2f}x (idle cores give {cores}x); the worker speed-up cannot exceed it.")
        for name in names:
            if f"{name}:1" in timed:
                one, every = timed[f"{name}:1"], timed[f"{name}:all"]
                notes.append(f"{name}: CPU seconds {one.cpu_seconds:.2f} with 1 worker, {every.cpu_seconds:.2f} with "
                             f"{cores}; wall {one.seconds:.2f} s and {every.seconds:.2f} s.")
    return lines + ["", "## Where the time went per profile (`--stats`, all cores)", "", *stats], targets, notes


def profiles_only(args: argparse.Namespace) -> None:
    """Run only the profiles (``--quick`` or ``--profiles-only``) and write RESULTS.md from them."""
    sys.path.insert(0, str(ROOT))
    import pyarrow

    from shardscan.executor import default_jobs

    cores = default_jobs()
    compiled = byte_compile()
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="shardscan-bench-"))
    gitleaks = None if args.no_gitleaks else shutil.which("gitleaks")
    names = [n for n in args.profiles.split(",") if n]
    table, targets, notes = profile_runs(names, args.profile_mb, args.profile_shards, args.repeat, cores, tmp, gitleaks)
    load_after = os.getloadavg()
    if not gitleaks:
        notes.append("gitleaks is not installed on this machine (no binary on PATH; none was downloaded), so its "
                     "time on the same rows was not measured in this run. The packaged routes were tried: Debian 12 "
                     "has no gitleaks package, and PyPI and npm only carry third-party wrappers, whose bundled "
                     "or downloaded binaries were not run here.")
    notes.append("Timed on byte-compiled modules (`compileall`), as a `pip install` leaves them."
                 if compiled else "Byte-compiling the package FAILED: timings include compiling every module.")
    notes.append("Only the profiles were run (`--profiles-only`/`--quick`): the full 2.15 GB corpus, the 1 GB "
                 "shard's memory and the small-scan rows are measured by `python -m benchmarks.run` without it. "
                 "How the profiles' time is spent and what was changed for them: `docs/throughput.md`.")
    lines = [
        "# shardscan benchmark results",
        "",
        "Written by `python -m benchmarks.run` (do not edit by hand).",
        "",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {cores} core(s) usable, {platform.machine()}, Python {platform.python_version()}, "
        f"pyarrow {pyarrow.__version__}",
        f"- load average before / after: {load_before[0]:.2f} / {load_after[0]:.2f} (the machine is shared; each "
        f"timing is the fastest of {args.repeat} runs, the commands taking turns)",
        f"- profiles: {', '.join(names)}, {args.profile_mb:.0f} MB of strings each in {args.profile_shards} shards "
        f"x 2 row groups (`benchmarks/generate.py --profile`, seed 1)",
        "",
        "## Profiles side by side",
        "",
        *table,
        "## Targets",
        "",
        "| target | measured | |",
        "| --- | --- | --- |",
        *(f"| {t} | {m} | {v} |" for t, m, v in targets),
        "",
        "## Notes",
        "",
        *(f"- {n}" for n in notes),
        "",
    ]
    args.output.write_text("\n".join(lines))
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:  # noqa: C901 (a linear script)
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=2150.0, help="MB of strings in the corpus")
    parser.add_argument("--shards", type=int, default=100)
    parser.add_argument("--row-groups", type=int, default=2, help="row groups per shard")
    parser.add_argument("--small-mb", type=float, default=160.0, help="MB of strings in the small corpus (0: skip)")
    parser.add_argument("--repeat", type=int, default=5, help="rounds of the timed commands (the fastest run counts)")
    parser.add_argument("--big", action="store_true", help="also measure memory on a 1 GB single shard")
    parser.add_argument("--big-mb", type=float, default=1000.0)
    parser.add_argument("--no-gitleaks", action="store_true")
    parser.add_argument("--output", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--profiles", default="sparse,dense,seed", help="corpus profiles to run side by side")
    parser.add_argument("--profile-mb", type=float, default=160.0, help="MB of strings per profile")
    parser.add_argument("--profile-shards", type=int, default=8)
    parser.add_argument("--profiles-only", action="store_true", help="run only the profiles, not the full corpus")
    parser.add_argument("--quick", action="store_true",
                        help="a few minutes on a small machine: profiles only, 40 MB each, 2 rounds")
    args = parser.parse_args()
    if args.quick:
        args.profile_mb, args.repeat, args.profiles_only = min(args.profile_mb, 40.0), min(args.repeat, 2), True
    if args.profiles_only:
        profiles_only(args)
        return

    sys.path.insert(0, str(ROOT))
    from shardscan.executor import default_jobs

    cores = default_jobs()
    compiled = byte_compile()
    load_before = os.getloadavg()
    corpus = DATA / "corpus"
    manifest = ensure_corpus(corpus, args.mb, args.shards, args.row_groups, seed=1)
    shards = sorted(corpus.glob("*.parquet"))
    half = shards[: len(shards) // 2]
    tmp = Path(tempfile.mkdtemp(prefix="shardscan-bench-"))
    rows: list[tuple[str, str, str, str, str, str, str]] = []
    notes: list[str] = []

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    # ---- the timed commands on the corpus, taking turns --------------------------------------
    depth_help = subprocess.run([PY, "-m", "shardscan.cli", "scan", "--help"], capture_output=True, text=True,
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    reports: dict[str, Path] = {"1": tmp / "scan-1.json", "all": tmp / "scan-all.json"}
    report0 = tmp / "scan-depth0.json"
    half_report = tmp / "scan-half.json"
    commands = {
        "base": [PY, "-m", "benchmarks.baseline", str(corpus)],
        "base_half": [PY, "-m", "benchmarks.baseline", *map(str, half)],
        "1": scan_cmd([str(corpus)], 1, reports["1"]),
        "all": scan_cmd([str(corpus)], cores, reports["all"]),
        "half": scan_cmd(list(map(str, half)), cores, half_report),
    }
    if cores >= 2:
        commands["probe-1"], commands["probe-all"] = probe_cmd(1), probe_cmd(cores)
    if "--max-decode-depth" in depth_help:
        commands["depth0"] = scan_cmd([str(corpus)], cores, report0, "--max-decode-depth", "0")
    log(f"timing {len(commands)} commands on the corpus, {args.repeat} rounds ...")
    timed = best_of(commands, args.repeat)

    base = timed["base"]
    base_out = json.loads(base.stdout)
    nbytes = base_out["bytes"]
    base_half = timed["base_half"]
    half_bytes = json.loads(base_half.stdout)["bytes"]

    def row(name: str, run: Run, inner: float | None, data: int = nbytes, vs: Run | None = base) -> None:
        ratio = f"{run.seconds / vs.seconds:.2f}x" if vs else "-"
        rows.append((name, f"{run.seconds:.2f}", f"{inner:.2f}" if inner is not None else "-",
                     f"{run.cpu_seconds:.2f}", f"{mb_s(data, run.seconds):.1f}", ratio, f"{run.peak_rss / 2**20:.0f}"))

    row("baseline: pyarrow reads every row group, sums string lengths", base, base_out["seconds"], vs=None)

    # ---- shardscan, 1 worker and all cores ----------------------------------------------------
    scans = {label: timed[label] for label in ("1", "all")}
    for label, jobs in (("1", 1), ("all", cores)):
        row(f"shardscan scan --jobs {jobs}", scans[label], json.loads(reports[label].read_text())["scanned"]["seconds"])
    stats_text = scans["all"].stderr.strip()
    run0 = timed.get("depth0")
    if run0 is not None:
        row(f"shardscan scan --jobs {cores} --max-decode-depth 0 (decoding off)", run0,
            json.loads(report0.read_text())["scanned"]["seconds"])
    half_run = timed["half"]
    row(f"shardscan scan --jobs {cores}, half the corpus ({len(half)} shards)", half_run,
        json.loads(half_report.read_text())["scanned"]["seconds"], data=half_bytes, vs=base_half)

    # ---- gitleaks -----------------------------------------------------------------------------
    gitleaks = shutil.which("gitleaks")
    gitleaks_run = None
    if gitleaks and not args.no_gitleaks:
        log("gitleaks on the JSONL export ...")
        jsonl_bytes = export_jsonl(shards, DATA / "jsonl")
        gl_report = tmp / "gitleaks.json"
        gitleaks_run = best([gitleaks, "dir", str(DATA / "jsonl"), "--no-banner", "--log-level", "error",
                             "--report-format", "json", "--report-path", str(gl_report), "--exit-code", "0"],
                            1)
        gl_findings = json.loads(gl_report.read_text()) if gl_report.exists() else []
        row("gitleaks dir on the JSONL export of the same rows", gitleaks_run, None)
        version = subprocess.run([gitleaks, "version"], capture_output=True, text=True).stdout.strip()
        notes.append(f"gitleaks {version} read {jsonl_bytes / 1e6:.1f} MB of JSONL (the same rows; MB/s above "
                     f"counts the {nbytes / 1e6:.1f} MB of strings for every tool) and reported "
                     f"{len(gl_findings)} findings.")

    # ---- memory on one big shard --------------------------------------------------------------
    big_rows: list[tuple[str, Run, int]] = []
    if args.big:
        big = DATA / "big"
        log(f"generating / checking the {args.big_mb:.0f} MB single shard ...")
        big_manifest = ensure_corpus(big, args.big_mb, 1, 10, seed=7)
        for jobs in (1, cores):
            log(f"big shard, --jobs {jobs} ...")
            report = tmp / f"big-{jobs}.json"
            run = measure(scan_cmd([str(big)], jobs, report))
            big_rows.append((f"shardscan scan --jobs {jobs}", run, big_manifest["string_bytes"]))
        big_base = measure([PY, "-m", "benchmarks.baseline", str(big)])
        big_rows.insert(0, ("baseline (pyarrow, default threads)", big_base, big_manifest["string_bytes"]))

    # ---- small scans: where the fixed cost of a run weighs most ------------------------------
    small_rows: list[tuple[str, float, Run, Run, Run]] = []
    small_speedup = ""
    if args.small_mb > 0:
        for label, folder, mb, shards_n, groups in (
            (f"small corpus ({args.small_mb:.0f} MB, 6 shards)", DATA / "small", args.small_mb, 6, 4),
            ("one shard of one row", DATA / "one-row", 0.0001, 1, 1),
        ):
            log(f"{label} ...")
            small_manifest = ensure_corpus(folder, mb, shards_n, groups, seed=1)
            small_base = best([PY, "-m", "benchmarks.baseline", str(folder)], args.repeat)
            small_scans = [best(scan_cmd([str(folder)], jobs, tmp / f"small-{jobs}.json"), args.repeat)
                           for jobs in (1, cores)]
            small_rows.append((label, small_manifest["string_bytes"], small_base, *small_scans))
        _, _, _, small_one, small_all = small_rows[0]
        small_speedup = f"; {small_one.seconds / small_all.seconds:.2f}x on the small corpus"

    ceiling = cores * timed["probe-1"].seconds / timed["probe-all"].seconds if cores >= 2 else 1.0
    big_times = {name: run.seconds for name, run, _ in big_rows}
    big_speedup = ""
    if f"shardscan scan --jobs {cores}" in big_times and cores >= 2:
        big_speedup = (f"; {big_times['shardscan scan --jobs 1'] / big_times[f'shardscan scan --jobs {cores}']:.2f}x "
                       f"end to end on the 1 GB shard")

    # ---- checks -------------------------------------------------------------------------------
    one, every = findings_of(reports["1"]), findings_of(reports["all"])
    identical = one == every
    located = {(f["shard"], f["row"], f["column"], f["rule_id"]) for f in every}
    planted = manifest["planted"]
    found = sum((p["shard"], p["row"], p["column"], p["rule_id"]) in located for p in planted)
    blocking = sum(1 for f in every if f["blocking"])
    load_after = os.getloadavg()

    scan_all, scan_one = scans["all"], scans["1"]
    ratio = scan_all.seconds / base.seconds
    inner_ratio = json.loads(reports["all"].read_text())["scanned"]["seconds"] / base_out["seconds"]
    speedup = scan_one.seconds / scan_all.seconds
    inner_one = json.loads(reports["1"].read_text())["scanned"]["seconds"]
    inner_all = json.loads(reports["all"].read_text())["scanned"]["seconds"]
    growth = scan_all.seconds / half_run.seconds
    inner_half = json.loads(half_report.read_text())["scanned"]["seconds"]

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    targets = [
        ("all-cores scan wall time <= 2.0x baseline (stretch 1.5x)",
         f"{ratio:.2f}x end to end; {inner_ratio:.2f}x excluding interpreter start-up", verdict(ratio <= 2.0)),
        ("2 workers >= 1.7x faster than 1", f"{speedup:.2f}x end to end; {inner_one / inner_all:.2f}x in-process"
         f"{big_speedup}{small_speedup} (this machine's own speed-up for {cores} copies of a CPU-bound loop, "
         f"timed in the same rounds: {ceiling:.2f}x; CPU time {scan_all.cpu_seconds:.2f} s with {cores} workers "
         f"against {scan_one.cpu_seconds:.2f} s with 1, {scan_all.cpu_seconds / scan_one.cpu_seconds - 1:+.0%})"
         if cores >= 2 else "single core machine", verdict(cores >= 2 and speedup >= 1.7)),
        ("2x data takes <= 2.1x time",
         f"{growth:.2f}x time for {nbytes / half_bytes:.2f}x data end to end; {inner_all / inner_half:.2f}x in-process",
         verdict(growth <= 2.1 * nbytes / half_bytes / 2)),
    ]
    if run0 is not None:
        extra = scan_all.seconds / run0.seconds - 1
        inner0 = json.loads(report0.read_text())["scanned"]["seconds"]
        targets.append(("decoding costs < 15% extra wall time vs --max-decode-depth 0",
                        f"{extra:+.1%} end to end; {inner_all / inner0 - 1:+.1%} in-process", verdict(extra < 0.15)))
    if gitleaks_run is not None:
        factor = gitleaks_run.seconds / scan_all.seconds
        targets.append((">= 10x gitleaks throughput", f"{factor:.1f}x", verdict(factor >= 10)))
    for name, run, size in big_rows:
        if name.startswith("shardscan"):
            targets.append((f"peak RSS < 1 GB on one {size / 1e9:.2f} GB shard ({name})",
                            f"{run.peak_rss / 2**20:.0f} MiB", verdict(run.peak_rss < 2**30)))
    targets.append(("findings identical for --jobs 1 and --jobs " + str(cores),
                     f"{len(every)} findings ({blocking} blocking), {found}/{len(planted)} planted credentials found",
                     verdict(identical)))

    # Why the parallel speed-up falls short, in measured terms: a fixed cost every run pays (the
    # one-row scan) and the extra CPU of running workers bound it even on idle cores; the loop
    # probe says how far from idle the machine was.
    if cores >= 2 and speedup < 1.7 and len(small_rows) > 1:
        fixed = small_rows[1][3].seconds
        overhead = scan_all.cpu_seconds / scan_one.cpu_seconds
        alone = scan_one.seconds / (fixed + (scan_one.seconds - fixed) / cores)
        with_overhead = scan_one.seconds / (fixed + (scan_one.seconds - fixed) * overhead / cores)
        notes.append(f"What bounds the {cores}-worker speed-up ({speedup:.2f}x), measured in this run: every run "
                     f"pays a fixed {fixed:.2f} s that workers cannot share (interpreter, imports, rules, report: "
                     f"the one-row scan with --jobs 1), so even {cores} idle cores would give at most {alone:.2f}x; "
                     f"the "
                     f"{cores}-worker run also used {overhead - 1:+.0%} CPU (the parent receiving results on cores the "
                     f"workers use, work items and results crossing processes, other work on the machine), which "
                     f"brings that to {with_overhead:.2f}x; and this machine's own speed-up for {cores} CPU-bound "
                     f"loops was {ceiling:.2f}x in the same rounds.")

    # The decoding target, when missed: what decoding costs per candidate cell, from --stats.
    if run0 is not None and scan_all.seconds / run0.seconds - 1 >= 0.15:
        decode = re.search(r"^\s*decode\s+([0-9.]+) s", stats_text, re.M)
        total = re.search(r"^\s*total\s+([0-9.]+) s", stats_text, re.M)
        picked = re.search(r"candidates\s+(\d+) cell", stats_text)
        if decode and total and picked:
            seconds, cells = float(decode.group(1)), int(picked.group(1))
            notes.append(f"Decoding runs on every candidate cell the prefilter selects, whether or not it holds an "
                         f"encoded form: {seconds:.2f} s of the {float(total.group(1)):.2f} s the stages took (summed "
                         f"over workers), {seconds / max(1, cells) * 1e6:.0f} us for each of {cells} candidate cells "
                         f"(triggers tested, base64 runs looked for, wrapped lines checked).")

    # The load average after the run counts this run's own workers; the one before it, and the
    # CPU-loop probe, tell whether other work was sharing the cores.
    if cores >= 2 and (load_before[0] > 1.0 or ceiling < 0.9 * cores):
        notes.insert(0, f"Other work shared this machine during the run (load average {load_before[0]:.1f} before it "
                        f"started; {cores} copies of a CPU-bound loop ran {ceiling:.2f}x faster than one, where idle "
                        f"cores give {cores}x): a second worker then waits for a CPU, so the parallel speed-up and the "
                        f"ratios to the baseline are below those of an idle machine. Re-run `python -m benchmarks.run` "
                        f"on a quiet machine to judge the time targets.")
    notes.append("Timed on byte-compiled modules (`compileall` into `__pycache__` before the first run), as a "
                 "`pip install` leaves them; run from a source tree with PYTHONDONTWRITEBYTECODE set, every "
                 "module would be recompiled on every run (about 0.15 s more per command)."
                 if compiled else "Byte-compiling the package FAILED: the timings include compiling every module "
                 "on every run (about 0.15 s per command).")
    notes.append(f"shardscan reported {len(every)} findings, {blocking} of them blocking (the rest are documented "
                 f"example keys such as AKIAIOSFODNN7EXAMPLE in code, judged non-blocking).")

    import pyarrow

    lines = [
        "# shardscan benchmark results",
        "",
        "Written by `python -m benchmarks.run` (do not edit by hand).",
        "",
        f"- date: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}",
        f"- machine: {cores} core(s) usable, {platform.machine()}, Python {platform.python_version()}, "
        f"pyarrow {pyarrow.__version__}",
        f"- load average before / after: {load_before[0]:.2f} / {load_after[0]:.2f} (the machine is shared; each "
        f"timing is the fastest of {args.repeat} runs, the commands taking turns)",
        f"- corpus: {manifest['shards']} shards x {manifest['row_groups']} row groups, {manifest['rows']} rows, "
        f"{nbytes / 1e6:.1f} MB of strings, {len(planted)} planted credentials (`benchmarks/generate.py`, seed 1)",
        "",
        "## Throughput",
        "",
        "| command | wall s (process) | s in process | CPU s (process tree) | MB/s (wall) | vs baseline "
        "| peak RSS MiB (process tree) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        *(f"| {' | '.join(r)} |" for r in rows),
        "",
        "\"wall s\" includes interpreter start-up and imports; \"s in process\" is the time the tool itself reports; "
        "\"CPU s\" is user + system time of the process and its workers (the fastest run's).",
        "The half-corpus row is compared with the baseline on the same half.",
        "",
        "## Targets",
        "",
        "| target | measured | |",
        "| --- | --- | --- |",
        *(f"| {t} | {m} | {v} |" for t, m, v in targets),
        "",
    ]
    if big_rows:
        lines += [
            "## Memory on one large shard",
            "",
            "| command | shard strings MB | wall s | peak RSS MiB (process tree) |",
            "| --- | ---: | ---: | ---: |",
            *(f"| {n} | {s / 1e6:.0f} | {r.seconds:.1f} | {r.peak_rss / 2**20:.0f} |" for n, r, s in big_rows),
            "",
        ]
    if small_rows:
        lines += [
            "## Small scans: the fixed cost of a run",
            "",
            "Every run pays the interpreter, the imports (pyarrow alone takes most of the baseline's start-up) "
            "and loading the rules, however many workers it has; on small inputs that cost dominates.",
            "",
            f"| input | strings MB | baseline wall s | --jobs 1 wall s | --jobs {cores} wall s "
            f"| --jobs {cores} vs baseline | --jobs 1 / --jobs {cores} |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
            *(f"| {label} | {size / 1e6:.1f} | {b.seconds:.2f} | {one.seconds:.2f} | {every.seconds:.2f} | "
              f"{every.seconds / b.seconds:.2f}x | {one.seconds / every.seconds:.2f}x |"
              for label, size, b, one, every in small_rows),
            "",
        ]
    lines += ["## Where the time went (`--stats`, all cores)", "", "```", stats_text, "```", ""]
    names = [n for n in args.profiles.split(",") if n]
    if names:
        log("corpus profiles ...")
        table, profile_targets, profile_notes = profile_runs(names, args.profile_mb, args.profile_shards, args.repeat,
                                                             cores, tmp, None if args.no_gitleaks else gitleaks)
        lines += [f"## Profiles side by side ({args.profile_mb:.0f} MB of strings each)", "", *table,
                  "## Profile targets", "", "| target | measured | |", "| --- | --- | --- |",
                  *(f"| {t} | {m} | {v} |" for t, m, v in profile_targets), ""]
        notes += profile_notes
    if notes:
        lines += ["## Notes", "", *(f"- {n}" for n in notes), ""]
    args.output.write_text("\n".join(lines))
    print("\n".join(lines))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

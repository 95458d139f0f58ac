"""The run-overhead benchmark's measurements (see ``run_overhead.py``): sequential runs, one batch through
``run_all``, the breakdown of one run with its steps timed, the components timed on their own, and the machine
they ran on."""

from __future__ import annotations

import contextlib
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _run_overhead_timing import RUN_ONE_STEPS, SANDBOX_STEPS, RunTimes, Timers, instrumented, pct

import podium.data.verify
import podium.run.execute
import podium.run.schedule
import podium.sandbox
import podium.sandbox._bwrap
from podium import __version__
from podium.agents import load_agent
from podium.competition import Competition
from podium.grading import grade
from podium.paths import CompetitionPaths
from podium.records import RunRecord
from podium.run import RunConfig, run_all, run_one
from podium.sandbox import Limits, Mount, get_sandbox
from podium.services import ValidationServer
from podium.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
COMPETITION = "spaceship-titanic"
TIME_LIMIT = 24 * 3600.0  # `podium run`'s default


# --------------------------------------------------------------------------------------------
# The benchmark


def make_config(
    data_dir: Path, runs_dir: Path, group: str, seeds: int, workers: int, sandbox: str = "bwrap"
) -> RunConfig:
    agent = load_agent("dummy")
    return RunConfig(
        agent=agent,
        seeds=seeds,
        time_limit=TIME_LIMIT,
        sandbox=sandbox,
        cpus=agent.cpus,
        memory_bytes=agent.memory_bytes,
        gpus=0,
        run_group=group,
        data_dir=data_dir,
        runs_dir=runs_dir,
        workers=workers,
    )


def check_record(run: RunRecord) -> None:
    record = run.to_dict()
    result, report = record["agent_result"], record["grade"]
    if result["exit_code"] != 0 or not report["valid_submission"]:
        raise SystemExit(f"run seed {record['seed']} did not finish cleanly: {result} / {report.get('error')}")


def timed_run_all(config: RunConfig, competition: Competition) -> dict[str, Any]:
    """Run one group through run_all; per-run wall and agent seconds, total wall, run_all's own start-up."""
    times = RunTimes()
    log = io.StringIO()
    with times.installed(), contextlib.redirect_stderr(log):
        t0 = time.perf_counter()
        records = run_all(config, [competition])
        total = time.perf_counter() - t0
    failures = [line for line in log.getvalue().splitlines() if "not run" in line or "harness error" in line]
    if failures or len(records) != config.seeds:
        raise SystemExit(f"run_all {config.run_group}: {len(records)} of {config.seeds} runs; {failures[:3]}")
    for record in records:
        check_record(record)
    rows = sorted(times.rows, key=lambda r: r["end"])
    overheads = [r["wall"] - r["agent"] for r in rows]
    n = len(rows)
    quarter = max(1, n // 4)
    return {
        "runs": n,
        "total_s": total,
        "runs_per_min": 60 * n / total,
        "per_run_s": total / n,
        "wall_median_s": statistics.median(r["wall"] for r in rows),
        "agent_median_s": statistics.median(r["agent"] for r in rows),
        "overhead_median_s": statistics.median(overheads),
        "overhead_p90_s": pct(overheads, 90),
        "overhead_max_s": max(overheads),
        "startup_s": rows and min(r["start"] for r in rows) - t0,  # run_all before the first run: reconcile, is_done
        "first_quarter_overhead_s": statistics.median(overheads[:quarter]),
        "last_quarter_overhead_s": statistics.median(overheads[-quarter:]),
    }


def sequential(config: RunConfig, competition: Competition, n: int) -> dict[str, Any]:
    store = RunStore(config.runs_dir)
    walls, agents = [], []
    for seed in range(n):
        t0 = time.perf_counter()
        record = run_one(config, competition, seed, store)
        walls.append(time.perf_counter() - t0)
        agents.append(record.agent_result["seconds"])
        check_record(record)
    overheads = [w - a for w, a in zip(walls, agents, strict=True)]
    return {
        "runs": n,
        "total_s": sum(walls),
        "wall_median_s": statistics.median(walls),
        "agent_median_s": statistics.median(agents),
        "overhead_median_s": statistics.median(overheads),
        "overhead_p90_s": pct(overheads, 90),
        "overhead_max_s": max(overheads),
        "overhead_min_s": min(overheads),
        "last_record": record.to_dict(),
    }


def breakdown(config: RunConfig, competition: Competition, n: int) -> dict[str, Any]:
    """Median per step over ``n`` instrumented runs (seeds 0..n-1 of the given group)."""
    store = RunStore(config.runs_dir)
    timers = Timers()
    per_run: list[dict[str, float]] = []
    with instrumented(timers):
        for seed in range(n):
            timers.clear()
            t0 = time.perf_counter()
            record = run_one(config, competition, seed, store)
            wall = time.perf_counter() - t0
            check_record(record)
            row = {name: timers.total(name) for _, _, name in RUN_ONE_STEPS + SANDBOX_STEPS}
            row["wall"] = wall
            row["agent"] = record.agent_result["seconds"]
            per_run.append(row)
    return {
        "runs": n,
        "mean": {key: statistics.fmean(r[key] for r in per_run) for key in per_run[0]},
        "median": {key: statistics.median(r[key] for r in per_run) for key in per_run[0]},
        "max": {key: max(r[key] for r in per_run) for key in per_run[0]},
    }


def components(
    competition: Competition, data_dir: Path, scratch: Path, record: dict[str, Any], repeats: int
) -> list[tuple[str, float, str]]:
    """Each component on its own, median of ``repeats`` (after one warm-up call)."""
    paths = CompetitionPaths(data_dir, competition.id)
    sample = paths.prepared / competition.sample_submission
    scratch.mkdir(parents=True, exist_ok=True)
    out: list[tuple[str, float, str]] = []

    def measure(name: str, fn: Callable[[], Any], note: str = "") -> list[Any]:
        fn()
        times, results = [], []
        for _ in range(repeats):
            t0 = time.perf_counter()
            results.append(fn())
            times.append(time.perf_counter() - t0)
        out.append((name, statistics.median(times), note))
        return results

    measure("get_sandbox('bwrap')", lambda: get_sandbox("bwrap"), "shutil.which + cached probe")
    sandbox = get_sandbox("bwrap")
    (scratch / "out").mkdir(exist_ok=True)
    mounts = [Mount(paths.public, "/home/data"), Mount(scratch / "out", "/home/submission", writable=True)]
    limits = Limits(wall_seconds=60, memory_bytes=1 << 30, cpus=1)

    def sandboxed(command: list[str]) -> Callable[[], Any]:
        return lambda: sandbox.run(
            command, mounts=mounts, env={}, limits=limits, workdir="/home",
            stdout=scratch / "stdout.log", stderr=scratch / "stderr.log",
        )  # fmt: skip

    results = measure("bwrap run `true` (wall)", sandboxed(["true"]), "cgroups + bwrap setup/teardown, no agent")
    out.append(
        (
            "&nbsp;&nbsp;↳ its ExecResult.seconds",
            statistics.median(r.seconds for r in results),
            "part of agent_result.seconds",
        )
    )
    results = measure("bwrap run `python3 -c pass` (wall)", sandboxed(["python3", "-c", "pass"]), "")
    out.append(("&nbsp;&nbsp;↳ its ExecResult.seconds", statistics.median(r.seconds for r in results), ""))
    measure(
        "host `python3 -c pass` (subprocess)",
        lambda: subprocess.run([sys.executable, "-c", "pass"], check=True),
        "interpreter start, no sandbox",
    )

    sockets = Path(tempfile.mkdtemp(prefix="podium-b-"))
    server_times: dict[str, list[float]] = defaultdict(list)
    for i in range(repeats + 1):
        server = ValidationServer(competition, sample, sockets / "v.sock", scratch / f"calls{i}.jsonl")
        t0 = time.perf_counter()
        server.start()
        t1 = time.perf_counter()
        server.stop()
        t2 = time.perf_counter()
        if i:
            server_times["start"].append(t1 - t0)
            server_times["stop"].append(t2 - t1)
    shutil.rmtree(sockets, ignore_errors=True)
    out.append(("ValidationServer start", statistics.median(server_times["start"]), ""))
    out.append(
        (
            "ValidationServer stop, right after start",
            statistics.median(server_times["stop"]),
            "shutdown() waits for serve_forever's next 0.1 s poll tick; in a run that wait is 0-100 ms",
        )
    )

    measure(
        "verify(competition, data_dir)",
        lambda: podium.data.verify.verify(competition, data_dir),
        "checksums, every run_one",
    )
    measure("grade(sample submission)", lambda: grade(competition, sample, data_dir), "")

    text_holder: list[int] = [0]

    def write_record() -> None:
        text_holder[0] += 1
        staging = scratch / f".rec.tmp-{text_holder[0]}"
        staging.mkdir()
        (staging / "record.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
        os.replace(staging, scratch / f"rec-{text_holder[0]}")

    measure("record.json dump + write + rename", write_record, f"{len(json.dumps(record, indent=2))} bytes")

    store = RunStore(scratch / "store")
    counter = [0]

    def add() -> None:
        counter[0] += 1
        store.add({**record, "run_group": "components", "seed": counter[0]}, scratch / "record.json")

    measure("RunStore.add (SQLite insert+commit)", add, "own connection each call")
    measure(
        "RunStore.is_done (SQLite query)",
        lambda: store.is_done("components", competition.id, 1, "dummy"),
        "run_all: once per pair",
    )
    return out


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "?",
    )
    bwrap = subprocess.run(["bwrap", "--version"], capture_output=True, text=True).stdout.strip()
    cgroup = "v2" if Path("/sys/fs/cgroup/cgroup.controllers").exists() else "v1"
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "src"], capture_output=True, text=True
    ).stdout.strip()
    return (
        f"{cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}, Python {platform.python_version()}, {bwrap}, "
        f"cgroup {cgroup}; podium {__version__} at {commit}{' (src/ modified)' if dirty else ''}"
    )

"""The same dummy run under each sandbox, side by side in one process: what isolation costs per run.

    OMP_NUM_THREADS=1 python benchmarks/sandbox_compare.py [--runs 20] [--batch 50] [--workers 2]
                                                           [--sandboxes local,bwrap,docker]
                                                           [--out benchmarks/sandbox_compare.md]

Baseline: ``bwrap``, podium's default sandbox (``local``, no isolation at all, is the floor). Each
sandbox runs the built-in ``dummy`` agent (copies the sample submission) on ``spaceship-titanic``
prepared from ``podium.fixtures.make_raw`` data, through ``podium.run.run_one`` (section 1: ``--runs``
sequential runs, interleaved across sandboxes so that machine noise hits all alike, after one
untimed warm-up each) and ``podium.run.run_all`` (section 2: ``--batch`` runs with ``--workers``).
Docker uses the engine ``DOCKER_HOST`` names (``scripts/dockerd.sh`` starts one) and the host image.

Run wall = ``time.perf_counter()`` around ``run_one``; agent = ``record["agent_result"]["seconds"]``
(from the agent's start to its exit, as the sandbox reports it); overhead = wall - agent.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from run_overhead import make_config  # noqa: E402  (benchmarks/ is on sys.path: it holds this script)

from podium import __version__, registry  # noqa: E402
from podium.data.prepare import prepare_competition  # noqa: E402
from podium.fixtures import make_raw  # noqa: E402
from podium.records import RunRecord  # noqa: E402
from podium.run import run_all, run_one  # noqa: E402
from podium.sandbox import get_sandbox  # noqa: E402
from podium.store import RunStore  # noqa: E402

COMPETITION = "spaceship-titanic"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 10 else f"{seconds:.2f} s"


def checked(run: RunRecord) -> dict[str, Any]:
    record = run.to_dict()
    if record["agent_result"]["exit_code"] != 0 or not record["grade"]["valid_submission"]:
        raise SystemExit(f"a {record['sandbox']} run did not finish cleanly: {record['agent_result']}")
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--sandboxes", default="local,bwrap,docker")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "sandbox_compare.md"))
    args = parser.parse_args()
    sandboxes = args.sandboxes.split(",")
    for name in sandboxes:
        get_sandbox(name)  # fail early, with the fix, when one is unavailable
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="podium-sbx-bench-") as tmp:
        root = Path(tmp)
        competition = registry.get(COMPETITION)
        prepare_competition(competition, root / "data", source=make_raw(competition, root / "raw"))
        store = RunStore(root / "runs")
        sequential: dict[str, list[tuple[float, float]]] = {name: [] for name in sandboxes}
        with contextlib.redirect_stderr(io.StringIO()):  # the local sandbox warns on every run
            for name in sandboxes:  # warm-up: the docker host image is built or found here
                run_one(
                    make_config(root / "data", root / "runs", f"warm-{name}", 1, 1, sandbox=name), competition, 0, store
                )
            for seed in range(args.runs):
                for name in sandboxes:
                    config = make_config(root / "data", root / "runs", f"seq-{name}", args.runs, 1, sandbox=name)
                    t0 = time.perf_counter()
                    record = checked(run_one(config, competition, seed, store))
                    sequential[name].append((time.perf_counter() - t0, record["agent_result"]["seconds"]))
            batch: dict[str, tuple[float, int]] = {}
            for name in sandboxes:
                config = make_config(
                    root / "data", root / "runs", f"batch-{name}", args.batch, args.workers, sandbox=name
                )
                t0 = time.perf_counter()
                records = [checked(r) for r in run_all(config, [competition])]
                batch[name] = (time.perf_counter() - t0, len(records))
    total = time.perf_counter() - started

    docker_version = ""
    with contextlib.suppress(Exception):
        docker_version = subprocess.run(
            ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout
    lines = [
        "# One run under each sandbox, side by side (dummy agent)",
        "",
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/sandbox_compare.py --runs {args.runs} --batch {args.batch} "
        f"--workers {args.workers} --sandboxes {args.sandboxes}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
        f"Python {platform.python_version()}, Docker engine {docker_version or 'n/a'}; podium {__version__} at "
        f"{commit.strip()}. Whole benchmark: {total:.0f} s.",
        "",
        "Baseline: `bwrap` (the default sandbox); `local` (no isolation) is the floor. Overhead = run wall "
        "(`run_one`, timed here) - `agent_result.seconds` (the sandbox's own measure of the agent).",
        "",
        f"## 1. {args.runs} sequential runs each, interleaved",
        "",
        "| sandbox | run wall median | p90 | agent median | overhead median | wall vs bwrap |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    base = statistics.median(w for w, _ in sequential.get("bwrap", sequential[sandboxes[0]]))
    for name in sandboxes:
        walls = sorted(w for w, _ in sequential[name])
        agents = [a for _, a in sequential[name]]
        overheads = [w - a for w, a in sequential[name]]
        wall = statistics.median(walls)
        lines.append(
            f"| {name} | {ms(wall)} | {ms(walls[int(0.9 * (len(walls) - 1))])} | {ms(statistics.median(agents))} | "
            f"{ms(statistics.median(overheads))} | {wall / base:.2f}x |"
        )
    lines += [
        "",
        f"## 2. {args.batch} runs with {args.workers} workers (`run_all`)",
        "",
        "| sandbox | total | runs/min | wall per run |",
        "|---|---:|---:|---:|",
    ]
    for name in sandboxes:
        seconds, n = batch[name]
        lines.append(f"| {name} | {seconds:.1f} s | {60 * n / seconds:.0f} | {ms(seconds / n)} |")
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

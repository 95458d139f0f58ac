"""`podium run --cluster ray` against local workers, side by side in one run, with the dummy agent.

    OMP_NUM_THREADS=1 python benchmarks/cluster/bench.py [--runs 200] [--nodes 1,2,3] [--cpus-per-node 2]
                                                         [--queued 10000] [--out benchmarks/cluster/results.md]

Everything goes through the command line as a user runs it (`podium run` in a subprocess), on
practice-wine (prepared offline into a temporary folder), with the built-in `dummy` agent under
bwrap. For each configuration the batch is ``--runs`` seeds of that competition in a fresh runs
folder, and the wall time of the whole command is taken (start-up, Ray's connection and the report
included, so the per-run figure is that time over the runs).

1. local: ``--workers K`` for K = ``--cpus-per-node``;
2. cluster: a ``ray.cluster_utils.Cluster`` on this machine, a head without CPUs and N worker nodes of
   ``--cpus-per-node`` CPUs each, for each N in ``--nodes``;
3. the driver's memory with ``--queued`` runs queued: `podium run --seeds QUEUED --cluster ...` is
   started, its peak resident memory (VmHWM) read after ``--watch`` seconds, then it is stopped with
   Ctrl-C (what it ran by then is thrown away with its runs folder).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPETITION = "practice-wine"


def podium(args: list[str], data: Path, runs: Path, cluster: str | None = None, **popen) -> subprocess.Popen:
    command = [sys.executable, "-m", "podium", "run", "--agent", "dummy", "--competitions", COMPETITION]
    command += ["--data-dir", str(data), "--runs-dir", str(runs), "--time-limit", "5m", *args]
    if cluster:
        command += ["--cluster", f"ray:{cluster}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PODIUM_PROGRESS_SECONDS": "0", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **popen)


def timed(args: list[str], data: Path, runs: Path, cluster: str | None = None) -> float:
    started = time.perf_counter()
    process = podium(args, data, runs, cluster)
    out, _ = process.communicate()
    if process.returncode != 0:
        raise SystemExit(f"podium run failed:\n{out[-3000:]}")
    return time.perf_counter() - started


def _ctrl_c_default() -> None:
    """SIGINT as a terminal gives it, even when this script runs in the background (where it is ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--nodes", default="1,2,3")
    parser.add_argument("--cpus-per-node", type=int, default=2)
    parser.add_argument("--queued", type=int, default=10_000)
    parser.add_argument("--watch", type=float, default=30.0)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "cluster" / "results.md"))
    options = parser.parse_args()
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["PYTHONPATH"] = str(ROOT / "src")
    sys.path.insert(0, str(ROOT / "src"))
    import ray.cluster_utils

    from podium import registry
    from podium.data.prepare import prepare_offline

    work = Path(tempfile.mkdtemp(prefix="podium-bench-cluster-"))
    os.environ["PODIUM_NODE_CACHE"] = str(work / "node-cache")
    data = work / "data"
    prepare_offline([registry.get(COMPETITION)], data)
    seeds = ["--seeds", str(options.runs)]
    k = options.cpus_per_node
    rows = []
    wall = timed([*seeds, "--workers", str(k)], data, work / "local")
    rows.append((f"local, --workers {k}", wall))
    print(rows[-1], flush=True)
    queued_rss = None
    for n in [int(x) for x in options.nodes.split(",") if x]:
        cluster = ray.cluster_utils.Cluster(
            initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False}
        )
        try:
            for _ in range(n):
                cluster.add_node(num_cpus=k)
            cluster.wait_for_nodes()
            wall = timed(seeds, data, work / f"cluster-{n}", cluster.address)
            rows.append((f"cluster, {n} worker node(s) x {k} CPUs", wall))
            print(rows[-1], flush=True)
            if n == 1 and options.queued:
                driver = podium(
                    ["--seeds", str(options.queued)], data, work / "queued", cluster.address, preexec_fn=_ctrl_c_default
                )
                time.sleep(options.watch)
                queued_rss = peak_rss(driver.pid)
                driver.send_signal(signal.SIGINT)
                driver.communicate(timeout=300)
        finally:
            cluster.shutdown()
    local_per_run = rows[0][1] / options.runs
    lines = [
        f"`podium run --agent dummy --competitions {COMPETITION} --seeds {options.runs}` (bwrap), wall time of the "
        "whole command; per run = wall / runs; extra = per run minus local's.",
        "",
        "| configuration | wall (s) | per run (s) | runs/min | extra per run vs local (s) |",
        "|---|---|---|---|---|",
    ]
    for name, wall in rows:
        per_run = wall / options.runs
        lines.append(f"| {name} | {wall:.1f} | {per_run:.2f} | {60 / per_run:.1f} | {per_run - local_per_run:+.2f} |")
    if queued_rss is not None:
        lines += ["", f"Driver peak RSS with {options.queued} runs queued (after {options.watch:.0f} s): "
                  f"{queued_rss / 2**20:.0f} MiB."]  # fmt: skip
    lines += ["", f"Command: `{' '.join(['python', 'benchmarks/cluster/bench.py', *sys.argv[1:]])}`"]
    Path(options.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""`podium report` over many runs: time and peak memory, side by side with two baselines, in one run.

    OMP_NUM_THREADS=1 python benchmarks/report.py --runs 1000 10000 --out benchmarks/report.md

For each size it writes a runs folder of that many run records (four agents' groups over the 75
competitions of split75, as many seeds as it takes; each record in the shape `podium run` writes,
its score drawn around the competition's leaderboard and its flags placed there), then times, each
as a fresh process (interpreter start and imports included; the median of three):

- **read records** (baseline): ``json.load`` of every ``record.json``, nothing else: the floor any
  report over these files pays;
- **published table** (baseline): the records read by podium and aggregated by the published rules
  only (what ``podium report`` computed before pass@k, comparisons, costs and per-run tables);
- **podium report --format json / text / html**: the whole report.

Peak memory is the process's maximum resident set size.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from podium import registry  # noqa: E402

AGENTS = ("alpha", "beta", "gamma", "delta")

READ_ONLY = """
import json, sys
from pathlib import Path
records = [json.loads(p.read_text()) for p in Path(sys.argv[1]).glob("*/*/*/record.json")]
print(len(records))
"""

PUBLISHED_ONLY = """
import sys
from podium import registry
from podium.report.aggregate import build_seeds, published_numbers
from podium.report.inputs import load_inputs
ids = registry.split_ids("split75")
for item in load_inputs([sys.argv[1]]):
    published_numbers(build_seeds(item.runs, ids), len(ids))
"""


def _record(group: str, agent: str, cid: str, seed: int, rng: random.Random) -> dict[str, object]:
    comp = registry.get(cid)
    board = comp.leaderboard
    if board is None:  # no leaderboard to place on: a score and nothing else
        score, medal, above, percentile, rank, teams, higher, source = (
            rng.random(),
            None,
            False,
            None,
            None,
            None,
            True,
            None,
        )
    else:
        spread = abs(board.median - board.gold) or 1.0
        score = board.median + rng.gauss(0, 1.5) * spread
        placement = board.place(score)
        medal, above, percentile, rank = placement.medal, placement.above_median, placement.percentile, placement.rank
        teams, higher, source = board.n_teams, board.higher_is_better, board.source
    grade = {
        "competition_id": cid,
        "competition_version": 1,
        "score": score,
        "gold_medal": medal == "gold",
        "silver_medal": medal == "silver",
        "bronze_medal": medal == "bronze",
        "any_medal": medal is not None,
        "above_median": above,
        "submission_exists": True,
        "valid_submission": True,
        "is_lower_better": not higher,
        "percentile": percentile,
        "rank": rank,
        "n_teams": teams,
        "leaderboard": source,
        "other_versions": [],
        "warnings": [],
    }
    seconds = rng.uniform(600, 86_400)
    return {
        "run_group": group,
        "competition_id": cid,
        "competition_version": 1,
        "seed": seed,
        "agent": agent,
        "status": "finished",
        "sandbox": "bwrap",
        "limits": {"time_limit_s": 86_400.0, "cpus": 8.0, "gpus": 1, "memory_bytes": 2**36, "disk_bytes": None},
        "description": "original",
        "agent_result": {"exit_code": 0, "timed_out": False, "killed_for": None, "seconds": seconds, "samples": []},
        "validation_calls": [],
        "llm": {
            "calls": 400,
            "input_tokens": 2_000_000,
            "output_tokens": 300_000,
            "cost_usd": 12.5,
            "models": {"m": "m"},
        },
        "grade": grade,
    }


def make_runs(root: Path, n: int) -> Path:
    ids = registry.split_ids("split75")
    rng = random.Random(n)
    runs = root / f"runs-{n}"
    count = 0
    seed = 0
    while count < n:
        for agent in AGENTS:
            for cid in ids:
                if count == n:
                    break
                folder = runs / f"group-{agent}" / cid / str(seed)
                folder.mkdir(parents=True)
                (folder / "record.json").write_text(json.dumps(_record(f"group-{agent}", agent, cid, seed, rng)))
                count += 1
        seed += 1
    return runs


def _env() -> dict[str, str]:
    return {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(SRC)}


def _measure(command: list[str]) -> tuple[float, float]:
    """(median wall seconds of three, the largest peak RSS in MB), each run's RSS from its own wait4."""
    times, peaks = [], []
    for _ in range(3):
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=_env())
        assert process.stderr is not None
        err = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
        times.append(time.perf_counter() - started)
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode:
            raise SystemExit(f"{' '.join(command)}: {err.decode()[-2000:]}")
        peaks.append(usage.ru_maxrss / 1024)  # KiB on Linux
    return statistics.median(times), max(peaks)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--out", type=Path, default=None, help="write the table as Markdown here")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="podium-report-bench-") as tmp:
        for n in args.runs:
            runs = make_runs(Path(tmp), n)
            out = Path(tmp) / f"report-{n}.html"
            cases = {
                "read records (baseline)": [sys.executable, "-c", READ_ONLY, str(runs)],
                "published table (baseline)": [sys.executable, "-c", PUBLISHED_ONLY, str(runs)],
                "podium report --format json": [
                    sys.executable,
                    "-m",
                    "podium",
                    "report",
                    str(runs),
                    "--format",
                    "json",
                ],
                "podium report (text)": [sys.executable, "-m", "podium", "report", str(runs)],
                "podium report --output x.html": [
                    sys.executable,
                    "-m",
                    "podium",
                    "report",
                    str(runs),
                    "--output",
                    str(out),
                ],
            }
            for name, command in cases.items():
                seconds, mb = _measure(command)
                rows.append((n, name, seconds, mb))
                print(f"{n:>6} runs  {name:<32} {seconds:6.2f} s  {mb:6.0f} MB", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        f"`podium report` over N runs (4 groups x the 75 competitions of split75), commit `{commit}`; "
        "wall time of a fresh process, the median of three; peak RSS. Reproduce: "
        "`OMP_NUM_THREADS=1 python benchmarks/report.py --runs 1000 10000 --out benchmarks/report.md`",
        "",
        "| runs | what | seconds | peak MB |",
        "|---|---|---|---|",
        *(f"| {n:,} | {name} | {s:.2f} | {mb:.0f} |" for n, name, s, mb in rows),
    ]
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`podium serve`'s pages over a big runs folder, side by side with a baseline that reads every record.

    OMP_NUM_THREADS=1 python benchmarks/serve.py --runs 10000 --out benchmarks/serve.md

It writes a runs folder with one group of ``--runs`` finished runs (100 competitions x as many seeds as
it takes; each folder with a ``record.json`` in the shape `podium run` writes, with logs) and indexes
them with the store's own row (one transaction, so that building the folder stays quick), then times,
in one process with the app warm (the median of ``--repeat`` requests through Starlette's TestClient,
template rendering included):

- **read every record.json** (baseline): ``json.loads`` of each record of the group, nothing else: what
  a group page pays that reads the records instead of the index;
- **group page, first and last page**: ``GET /group/bench`` (100 runs a page, from the index);
- **home page**: ``GET /`` (every group's counts, the runs in progress);
- **run page**: ``GET /run/bench/<competition>/<seed>`` (one record, its logs).
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from podium.records import RunRecord  # noqa: E402
from podium.store import _INSERT, RunStore, _row  # noqa: E402

GROUP = "bench"
COMPETITIONS = 100


def _record(cid: str, seed: int, rng: random.Random) -> dict[str, object]:
    score = rng.random()
    medal = rng.choice(["gold", "silver", "bronze", None, None, None])
    samples = [{"t": t, "cpu_seconds": t * 0.9, "rss_bytes": 10**8 + t * 10**6} for t in range(1, 61)]
    return {
        "run_group": GROUP, "competition_id": cid, "competition_version": 1, "seed": seed, "agent": "alpha",
        "status": "finished", "sandbox": "bwrap", "started_at": "2026-01-01T00:00:00+00:00",
        "finished_at": "2026-01-01T01:00:00+00:00", "limits": {"time_limit_s": 3600.0, "cpus": 2.0, "gpus": 0},
        "agent_result": {"exit_code": 0, "timed_out": False, "killed_for": None, "seconds": 3600.0,
                         "peak_memory_bytes": 2 * 10**8, "samples": samples, "warnings": []},
        "grade": {"competition_id": cid, "competition_version": 1, "score": score, "gold_threshold": 0.9,
                  "silver_threshold": 0.8, "bronze_threshold": 0.7, "median_threshold": 0.5,
                  "any_medal": medal is not None, "gold_medal": medal == "gold", "silver_medal": medal == "silver",
                  "bronze_medal": medal == "bronze", "above_median": score > 0.5, "submission_exists": True,
                  "valid_submission": True, "is_lower_better": False, "created_at": "2026-01-01T01:00:00+00:00",
                  "submission_path": "submission/submission.csv", "percentile": score, "rank": 1, "n_teams": 100},
    }  # fmt: skip


def build(root: Path, runs: int) -> list[tuple[str, int]]:
    """A runs folder with ``runs`` finished runs in one group, indexed; the (competition, seed) of each."""
    rng = random.Random(0)
    RunStore(root)  # the index's schema
    (root / GROUP).mkdir()
    (root / GROUP / "group.json").write_text(json.dumps({"run_group": GROUP, "settings": {"agent": "alpha"}}))
    pairs = [(f"competition-{i % COMPETITIONS:03d}", i // COMPETITIONS) for i in range(runs)]
    rows = []
    for cid, seed in pairs:
        folder = root / GROUP / cid / str(seed)
        (folder / "logs").mkdir(parents=True)
        (folder / "logs" / "agent.stdout.log").write_text("step\n" * 200)
        record = _record(cid, seed, rng)
        (folder / "record.json").write_text(json.dumps(record, indent=2))
        rows.append(_row(RunRecord.from_dict(record), folder / "record.json"))
    with sqlite3.connect(root / "podium.db") as db:
        db.executemany(f"INSERT {_INSERT}", rows)
    return pairs


def _median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[10_000])
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--out", type=Path, default=None, help="write the table (Markdown) here too")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

    from podium.serve import create_app

    lines = ["| runs | read every record.json (baseline) | group page 1 | group page (last) | home page | run page |",
             "|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    for runs in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp) / "runs"
            started = time.perf_counter()
            pairs = build(root, runs)
            print(f"{runs} runs written and indexed in {time.perf_counter() - started:.1f} s", file=sys.stderr)
            records = sorted((root / GROUP).glob("*/*/record.json"))
            baseline = _median_ms(lambda records=records: [json.loads(p.read_bytes()) for p in records], 3)
            with TestClient(create_app(root)) as client:
                last = (runs + 99) // 100
                cid, seed = pairs[-1]

                def get(url: str, client: TestClient = client) -> None:
                    answer = client.get(url)
                    assert answer.status_code == 200, (url, answer.status_code)

                cells = [_median_ms(lambda url=url: get(url), args.repeat) for url in
                         (f"/group/{GROUP}", f"/group/{GROUP}?page={last}", "/", f"/run/{GROUP}/{cid}/{seed}")]  # fmt: skip
            lines.append(f"| {runs:,} | {baseline:.0f} ms | " + " | ".join(f"{c:.1f} ms" for c in cells) + " |")
            print(lines[-1], file=sys.stderr)
    table = "\n".join(lines) + "\n"
    print(table)
    if args.out is not None:
        args.out.write_text(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

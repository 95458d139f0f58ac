"""Splitting a multi-GB CSV: podium's streaming split beside pandas read-all + train_test_split.

    python benchmarks/prepare_large_csv.py [--rows 30000000] [--workdir /tmp/podium-bench-csv]

Generates a CSV shaped like new-york-city-taxi-fare-prediction's train.csv (key, fare_amount,
pickup_datetime, 4 coordinates, passenger_count), then runs each method in a fresh process and
records wall time and peak RSS (ru_maxrss of the child). Both must pick the same test rows.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

ROOT = Path(__file__).resolve().parents[1]

PODIUM = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from podium.data.spec import SplitSpec
from podium.data.split import split_csv
work = Path(sys.argv[1])
spec = SplitSpec(source="train.csv", test_size=float(sys.argv[2]), random_state=0, drop_from_test=("fare_amount",), answer_columns=("key", "fare_amount"))
print(split_csv(spec, work, work / "podium" / "public", work / "podium" / "private", "test.csv"))
"""

PANDAS = """
import sys
from pathlib import Path
import pandas as pd
from sklearn.model_selection import train_test_split
work = Path(sys.argv[1])
table = pd.read_csv(work / "train.csv")
train, test = train_test_split(table, test_size=float(sys.argv[2]), random_state=0)
out = work / "pandas"
out.mkdir(exist_ok=True)
train.to_csv(out / "train.csv", index=False)
test.drop(columns=["fare_amount"]).to_csv(out / "test.csv", index=False)
test[["key", "fare_amount"]].to_csv(out / "answers.csv", index=False)
print(len(train), len(test))
"""


def generate(path: Path, rows: int, block: int = 2_000_000) -> None:
    rng = np.random.default_rng(0)
    start = np.datetime64("2009-01-01T00:00:00")
    schema = pa.schema(
        [
            ("key", pa.string()),
            ("fare_amount", pa.float64()),
            ("pickup_datetime", pa.string()),
            ("pickup_longitude", pa.float64()),
            ("pickup_latitude", pa.float64()),
            ("dropoff_longitude", pa.float64()),
            ("dropoff_latitude", pa.float64()),
            ("passenger_count", pa.int64()),
        ]
    )
    with pacsv.CSVWriter(str(path), schema, write_options=pacsv.WriteOptions(quoting_style="none")) as writer:
        for offset in range(0, rows, block):
            n = min(block, rows - offset)
            seconds = rng.integers(0, 6 * 365 * 86400, n)
            stamps = (start + seconds.astype("timedelta64[s]")).astype(str)
            keys = np.char.add(np.char.add(stamps, "."), np.arange(offset, offset + n).astype(str))
            table = pa.Table.from_arrays(
                [
                    pa.array(keys),
                    pa.array(np.round(rng.gamma(2.0, 5.0, n), 2)),
                    pa.array(np.char.add(stamps, " UTC")),
                    pa.array(np.round(rng.normal(-73.97, 0.05, n), 6)),
                    pa.array(np.round(rng.normal(40.75, 0.05, n), 6)),
                    pa.array(np.round(rng.normal(-73.97, 0.05, n), 6)),
                    pa.array(np.round(rng.normal(40.75, 0.05, n), 6)),
                    pa.array(rng.integers(1, 7, n)),
                ],
                schema=schema,
            )
            writer.write_table(table)


def run(code: str, *args: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True).stdout.strip()
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak <= before:
        raise RuntimeError("run the methods in separate invocations: ru_maxrss of children is a running maximum")
    return seconds, peak / 1024, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=30_000_000)
    parser.add_argument("--test-size", default="0.0003305")  # 9,914 of 30M, like the benchmark's taxi split
    parser.add_argument("--workdir", default="/tmp/podium-bench-csv")
    parser.add_argument("--method", choices=["podium", "pandas", "both"], default="both")
    args = parser.parse_args()
    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    source = work / "train.csv"
    if not source.exists():
        print(f"generating {args.rows:,} rows ...", file=sys.stderr)
        generate(source, args.rows)
    size_gb = source.stat().st_size / 1e9
    methods = ["podium", "pandas"] if args.method == "both" else [args.method]
    for name in methods:
        if args.method == "both":  # each method in its own invocation, so ru_maxrss is its own
            subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--rows",
                    str(args.rows),
                    "--test-size",
                    args.test_size,
                    "--workdir",
                    str(work),
                    "--method",
                    name,
                ],
                check=True,
            )
            continue
        code = PODIUM if name == "podium" else PANDAS
        seconds, peak_mb, out = run(code, str(work), args.test_size, str(ROOT / "src"))
        print(f"| {name} | {size_gb:.2f} GB, {args.rows:,} rows | {seconds:.1f} s | {peak_mb:,.0f} MB | {out} |")
    if args.method == "both":
        import pandas as pd

        mine = pd.read_csv(work / "podium" / "private" / "test.csv")["key"]
        theirs = pd.read_csv(work / "pandas" / "answers.csv")["key"]
        print(f"same test rows: {sorted(mine) == sorted(theirs)} ({len(mine):,} rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""`podium audit`'s deterministic and integrity checks over many runs, cold and cached.

    OMP_NUM_THREADS=1 python benchmarks/audit.py --runs 1000 --out benchmarks/audit.md

It prepares one competition from its fixture, then writes ``--runs`` synthetic run folders in the
shape `podium run` leaves them: a ``record.json`` with the sandbox's isolation and ``--calls``
validation calls (each with its body's digest and row sketch), a submission of ``--rows`` rows, three
Python files of about 150 lines in ``code/`` and a 2,000-line ``agent.stdout.log``; one run in ten
holds a planted violation (an LLM SDK import, answers as a literal list). It then times, in one process:

- **cold**: :func:`podium.audit.audit_paths` with the checks ``submission, answers, external, oracle,
  integrity`` on every run (each ``audit.json`` written);
- **cached**: the same call again (every result reused by its content hash; nothing rewritten);
- baseline, **read every file**: reading every file the checks read, and nothing else (the I/O floor).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
sys.path.insert(0, str(SRC))

from podium import registry  # noqa: E402
from podium.audit import audit_paths  # noqa: E402
from podium.data.prepare import prepare_competition  # noqa: E402
from podium.fixtures import make_raw  # noqa: E402
from podium.paths import CompetitionPaths  # noqa: E402
from podium.services.digest import body_digest  # noqa: E402

CID = "spaceship-titanic"
CHECKS = ["submission", "answers", "external", "oracle", "integrity"]
CODE = """import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.model_selection import train_test_split

train = pd.read_csv("/home/data/train.csv")
test = pd.read_csv("/home/data/test.csv")
"""


def _digest(text: str, scratch: Path) -> dict[str, object]:
    scratch.write_text(text)
    fd = os.open(scratch, os.O_RDONLY)
    try:
        return body_digest(fd, scratch.stat().st_size)
    finally:
        os.close(fd)


def make_runs(root: Path, data: Path, n: int, rows: int, calls: int, rng: random.Random) -> Path:
    group = root / "runs" / "bench"
    answers = str(CompetitionPaths(data, CID).private)
    ids = [f"{i:04d}_01" for i in range(rows)]
    scratch = root / "scratch.csv"
    for i in range(n):
        run = group / CID / str(i)
        for folder in ("submission", "code", "logs", "home"):
            (run / folder).mkdir(parents=True)
        values = [rng.random() < 0.5 for _ in ids]
        submission = "PassengerId,Transported\n" + "".join(f"{a},{v}\n" for a, v in zip(ids, values, strict=True))
        (run / "submission" / "submission.csv").write_text(submission)
        for k in range(3):
            body = CODE + "".join(f"feature_{j} = train['x{j}'] * {j} + 1  # step {j}\n" for j in range(140))
            if i % 10 == 0 and k == 0:
                body = "import openai\n" + body if i % 20 == 0 else body + f"answers = {values}\n"
            (run / "code" / f"step_{k}.py").write_text(body)
        log = "".join(f"epoch {j}: loss {rng.random():.4f} val {rng.random():.4f}\n" for j in range(2000))
        (run / "logs" / "agent.stdout.log").write_text(log)
        logged = []
        for _ in range(calls):
            values[rng.randrange(rows)] ^= True
            text = "PassengerId,Transported\n" + "".join(f"{a},{v}\n" for a, v in zip(ids, values, strict=True))
            logged.append({"time": "2026-01-01T00:00:00+00:00", "verdict": "valid", "status": 200, "error": None,
                           "body_bytes": len(text), "body": _digest(text, scratch)})  # fmt: skip
        mounts = [{"source": str(CompetitionPaths(data, CID).public), "target": "/home/data", "writable": False},
                  {"source": str(run / "code"), "target": "/home/code", "writable": True}]  # fmt: skip
        record = {"run_group": "bench", "competition_id": CID, "competition_version": 1, "seed": i, "agent": "dummy",
                  "status": "finished", "validation_calls": logged,
                  "isolation": {"sandbox": "bwrap", "isolated": True, "network": "loopback only", "answers": answers,
                                "mounts": mounts},
                  "grade": {"score": 0.5, "valid_submission": True, "submission_exists": True}}  # fmt: skip
        (run / "record.json").write_text(json.dumps(record))
    return group


def read_everything(group: Path) -> int:
    total = 0
    for run in sorted(group.glob("*/*")):
        for path in (run / "record.json", run / "submission" / "submission.csv", *run.glob("code/*.py"),
                     *run.glob("logs/*")):  # fmt: skip
            total += len(path.read_bytes())
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1000, help="rows of each submission")
    parser.add_argument("--calls", type=int, default=5, help="validation calls of each run")
    parser.add_argument("--out", default=None, help="write the table (Markdown) here")
    args = parser.parse_args()
    rng = random.Random(0)
    with tempfile.TemporaryDirectory(prefix="podium-audit-bench-") as tmp:
        root = Path(tmp)
        comp = registry.get(CID)
        data = root / "data"
        prepare_competition(comp, data, source=make_raw(comp, root / "raw"))
        started = time.perf_counter()
        group = make_runs(root, data, args.runs, args.rows, args.calls, rng)
        built = time.perf_counter() - started
        options = {"data_dir": str(data)}
        timings: dict[str, tuple[float, float]] = {}
        wall, cpu = time.perf_counter(), time.process_time()
        audits = audit_paths([group], CHECKS, options)
        timings["cold"] = (time.perf_counter() - wall, time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        again = audit_paths([group], CHECKS, options)
        timings["cached"] = (time.perf_counter() - wall, time.process_time() - cpu)
        wall, cpu = time.perf_counter(), time.process_time()
        size = read_everything(group)
        timings["read every file (baseline)"] = (time.perf_counter() - wall, time.process_time() - cpu)
    flagged = sum(a.verdict == "flagged" for a in audits)
    assert [a.verdict for a in again] == [a.verdict for a in audits]
    lines = [
        f"# podium audit: {args.runs} runs, deterministic and integrity checks", "",
        f"Each run: a {args.rows}-row submission, 3 code files, a 2,000-line log, {args.calls} validation calls; "
        f"{size / 2**20:.0f} MiB read in all. {flagged} runs flagged (the planted ones: {args.runs // 10}). "
        f"Building the runs took {built:.1f} s.", "",
        f"Command: `OMP_NUM_THREADS=1 python benchmarks/audit.py --runs {args.runs} --rows {args.rows} "
        f"--calls {args.calls}`", "",
        f"Load average while it ran: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (wall time includes the "
        "wait for a core; CPU time is this process's own).", "",
        "| what | wall s | CPU s | CPU ms per run |", "|---|---:|---:|---:|",
        *(f"| {name} | {w:.2f} | {c:.2f} | {1000 * c / args.runs:.2f} |" for name, (w, c) in timings.items()),
    ]  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

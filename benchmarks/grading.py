"""Grading speed and peak memory: podium against a baseline written like the published harness.

    OMP_NUM_THREADS=1 python benchmarks/grading.py [--ids a,b] [--scale 1 10] [--out benchmarks/results.md]

For every competition (default: all registered ones whose metric module is importable) and every
scale, generate answers at the realistic test size from ``benchmarks/sizes.yaml`` (times the
scale) with podium's fixture generator, turn the perfect submission into an imperfect one, write
the prepared layout to a temporary directory, and run both graders as fresh processes:

    python -m podium grade-sample SUB.csv ID --data-dir DIR
    python benchmarks/baseline.py  SUB.csv ID --data-dir DIR

Wall time (median of the repeats) and peak RSS (``ru_maxrss`` of that child, from ``os.wait4``)
are recorded per process, whole process included (interpreter start, imports, reading, scoring).
Both scores must agree within 1e-6 relative; a disagreement is reported as a bug in one of them.
Results go to a Markdown table (``--out``) and a JSON file beside it.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _src_dir(argv: Sequence[str]) -> Path:
    """The podium source tree to benchmark: ``--src DIR`` (e.g. a ``git archive`` snapshot), else src/."""
    for i, arg in enumerate(argv):
        if arg == "--src" and i + 1 < len(argv):
            return Path(argv[i + 1]).resolve()
        if arg.startswith("--src="):
            return Path(arg.split("=", 1)[1]).resolve()
    return ROOT / "src"


SRC = _src_dir(sys.argv)
sys.path.insert(0, str(SRC))

from podium import registry  # noqa: E402
from podium.competition import Competition  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the modules beside this file, however it is loaded

from _grading_data import SIZES, prepare  # noqa: E402
from _grading_report import markdown, summary  # noqa: E402

REL_TOL = 1e-6


# --------------------------------------------------------------------------------------------
# Measuring


PYCACHE = Path(tempfile.gettempdir()) / "podium-bench-pycache"


def child_env() -> dict[str, str]:
    """The graders' environment: one thread per library, podium from src/, bytecode cached.

    Bytecode goes to a cache outside the repository (an installed package has its .pyc files;
    recompiling podium's sources in every process would charge podium for something users never
    pay). Both graders run with the same environment.
    """
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    return env


def run(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` as a fresh process: wall seconds, peak RSS (MB) and CPU seconds, stdout, rc.

    Peak RSS and CPU come from ``/usr/bin/time`` (the child of a small process: a child forked
    straight from this big generator process would report the parent's pages as its peak).
    """
    with tempfile.TemporaryFile() as err, tempfile.NamedTemporaryFile("r", suffix=".time") as usage:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            ["/usr/bin/time", "-f", "%M %U %S", "-o", usage.name, *cmd],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
            cwd=ROOT,
        )
        out, _ = proc.communicate()
        wall = time.perf_counter() - t0
        err.seek(0)
        stderr = err.read().decode(errors="replace")
        fields = usage.read().split()[-3:]
    kb, user, system = (float(x) for x in fields) if len(fields) == 3 else (float("nan"),) * 3
    return {
        "s": wall,
        "mb": kb / 1024,
        "cpu_s": user + system,
        "stdout": out.decode(errors="replace"),
        "stderr": stderr[-2000:],
        "rc": proc.returncode,
    }


def _score(result: dict[str, Any]) -> tuple[float | None, str | None]:
    try:
        data = json.loads(result["stdout"])
    except json.JSONDecodeError:
        return (
            None,
            f"rc={result['rc']}: {result['stderr'].strip().splitlines()[-1] if result['stderr'].strip() else 'no output'}",
        )
    return data.get("score"), data.get("error")


def measure(comp: Competition, sub: Path, data_dir: Path, env: dict[str, str], budget_s: float) -> dict[str, Any]:
    cmds = {
        "podium": [sys.executable, "-m", "podium", "grade-sample", str(sub), comp.id, "--data-dir", str(data_dir)],
        "baseline": [
            sys.executable,
            str(ROOT / "benchmarks" / "baseline.py"),
            str(sub),
            comp.id,
            "--data-dir",
            str(data_dir),
        ],
    }
    runs: dict[str, list[dict[str, Any]]] = {"podium": [], "baseline": []}
    repeats = 3
    i = 0
    while i < repeats:
        for name in ("baseline", "podium"):
            runs[name].append(run(cmds[name], env))
        if i == 0:
            slowest = max(runs["baseline"][0]["s"], runs["podium"][0]["s"])
            repeats = 3 if slowest < 2 else 2 if slowest < 8 and budget_s > 60 else 1
        i += 1
    out: dict[str, Any] = {}
    for name, rs in runs.items():
        score, error = _score(rs[0])
        out[name] = {
            "s": statistics.median(r["s"] for r in rs),
            "mb": max(r["mb"] for r in rs),
            "cpu_s": statistics.median(r["cpu_s"] for r in rs),
            "score": score,
            "error": error,
            "repeats": len(rs),
        }
    return out


def agreement(a: float | None, b: float | None) -> str:
    if a is None and b is None:
        return "both invalid"
    if a is None or b is None:
        return "MISMATCH"
    if a == b or abs(a - b) <= REL_TOL * max(abs(a), abs(b), 1e-12):
        return "ok"
    return "MISMATCH"


def metric_available(comp: Competition) -> str | None:
    module = comp.metric.metric.target.partition(":")[0]
    if importlib.util.find_spec(f"podium.metrics.{module}") is None:
        return f"podium.metrics.{module} missing"
    return None


def startup(env: dict[str, str]) -> dict[str, float]:
    passes = [run([sys.executable, "-c", "pass"], env)["s"] for _ in range(5)]
    imports = [run([sys.executable, "-c", "import pandas, sklearn.metrics"], env)["s"] for _ in range(3)]
    podium_imports = [
        run([sys.executable, "-c", "import podium.cli, podium.grading, podium.competition"], env)["s"] for _ in range(3)
    ]
    return {
        "python_pass_s": statistics.median(passes),
        "pandas_sklearn_import_s": statistics.median(imports),
        "podium_grading_import_s": statistics.median(podium_imports),
    }


def probe_bytes_per_row(comp: Competition, base_rows: int, tmp_root: str | None) -> float:
    """Bytes of answers + submission per answer row, from a small generated sample."""
    n = min(base_rows, 5000)
    tmp = Path(tempfile.mkdtemp(prefix="podium-bench-probe-", dir=tmp_root))
    try:
        return prepare(comp, n, tmp / "data")[2]["bytes"] / max(1, n)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def merged(kept: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Earlier results with the new ones in place of the same (id, scale), sorted."""
    fresh = {(r["id"], r["scale"]) for r in new}
    rows = [r for r in kept if (r["id"], r["scale"]) not in fresh] + new
    return sorted(rows, key=lambda r: (r["scale"], r["id"].lower()))


def podium_commit() -> str:
    """The commit of the benchmarked source: a snapshot's COMMIT file, else HEAD (+dirty)."""
    marker = SRC / "COMMIT"
    if marker.exists():
        return marker.read_text().strip()
    try:
        git = ["git", "-C", str(ROOT)]
        head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout
        dirty = subprocess.run([*git, "status", "--porcelain", "--", str(SRC)], capture_output=True, text=True).stdout
        return head.strip() + (" + uncommitted changes" if dirty.strip() else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def selected_ids(arg: str | None) -> list[str]:
    if arg:
        return [s.strip() for s in arg.split(",") if s.strip()]
    return registry.ids()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ids", default=None, help="comma-separated competition ids (default: every registered one)")
    parser.add_argument("--scale", type=int, nargs="+", default=[1, 10])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results.md"))
    parser.add_argument(
        "--max-bytes", type=float, default=2e9, help="cap rows so answers + submission stay under this many bytes"
    )
    parser.add_argument(
        "--budget", type=float, default=1200, help="seconds; later runs above 1x are skipped once spent"
    )
    parser.add_argument("--tmp", default=None, help="where the generated data is written (default: system temp)")
    parser.add_argument(
        "--append",
        action="store_true",
        help="keep the other results already in --out's JSON file (same id and scale are replaced)",
    )
    parser.add_argument("--src", default=None, help="podium source tree to benchmark (default: src/ of this checkout)")
    args = parser.parse_args(argv)

    env = child_env()
    started = time.perf_counter()
    env_info = {**startup(env), "podium_src": str(SRC), "podium_commit": podium_commit()}
    print(f"startup: {env_info}", flush=True)
    results: list[dict[str, Any]] = []
    bytes_per_row: dict[str, float] = {}
    out_path = Path(args.out)
    kept: list[dict[str, Any]] = []
    if args.append and out_path.with_suffix(".json").exists():
        previous = json.loads(out_path.with_suffix(".json").read_text())
        kept = previous.get("results", [])
        env_info = {**previous.get("startup", {}), **env_info}
        for r in kept:
            if r.get("data") and r["scale"] == 1:
                bytes_per_row[r["id"]] = r["data"]["bytes"] / max(1, r["rows"])
    for scale in sorted(args.scale):
        for cid in selected_ids(args.ids):
            comp = registry.get(cid)
            record: dict[str, Any] = {"id": cid, "metric": comp.metric.name, "scale": scale}
            if cid not in SIZES["rows"]:
                results.append({**record, "skipped": "no realistic size in sizes.yaml"})
                print(f"{cid} {scale}x: skipped (no size in sizes.yaml)", flush=True)
                continue
            base_rows = int(SIZES["rows"][cid])
            missing = metric_available(comp)
            if missing:
                results.append({**record, "skipped": missing})
                print(f"{cid} {scale}x: skipped ({missing})", flush=True)
                continue
            n = base_rows * scale
            if scale > 1 and cid in SIZES.get("scaled_max_rows", {}) and n > int(SIZES["scaled_max_rows"][cid]):
                n = int(SIZES["scaled_max_rows"][cid])
                record["capped"] = "sizes.yaml scaled_max_rows"
            if scale > 1 and cid not in bytes_per_row:
                bytes_per_row[cid] = probe_bytes_per_row(comp, base_rows, args.tmp)
            if scale > 1 and n * bytes_per_row[cid] > args.max_bytes:
                n = int(args.max_bytes / bytes_per_row[cid])
                record["capped"] = f"data over {args.max_bytes / 1e9:g} GB"
            if scale > 1 and n <= base_rows:
                results.append({**record, "rows": n, "skipped": f"not run above 1x ({record['capped']})"})
                continue
            spent = time.perf_counter() - started
            if scale > 1 and spent > args.budget:
                results.append({**record, "rows": n, "skipped": f"time budget ({args.budget:.0f} s) spent"})
                continue
            tmp = Path(tempfile.mkdtemp(prefix="podium-bench-", dir=args.tmp))
            try:
                sub, _, info = prepare(comp, n, tmp / "data")
                bytes_per_row[cid] = info["bytes"] / max(1, n)
                for path in (sub, *(tmp / "data").rglob("*")):
                    if path.is_file():
                        path.read_bytes()  # warm the page cache for both graders alike
                m = measure(comp, sub, tmp / "data", env, args.budget - spent)
            except Exception as exc:  # a generator failure is reported, not fatal
                results.append({**record, "rows": n, "skipped": f"run failed: {type(exc).__name__}: {exc}"})
                print(f"{cid} {scale}x: run failed: {exc!r}", flush=True)
                continue
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            record.update(
                rows=n,
                data=info,
                **m,
                agreement=agreement(m["baseline"]["score"], m["podium"]["score"]),
                commit=env_info["podium_commit"],
            )
            results.append(record)
            b, p = m["baseline"], m["podium"]
            print(
                f"{cid} {scale}x n={n}: baseline {b['s']:.2f}s {b['mb']:.0f}MB score={b['score']} | podium {p['s']:.2f}s {p['mb']:.0f}MB score={p['score']} "
                f"| {b['s'] / p['s']:.1f}x {record['agreement']} (gen {info['generate_s']}s, {info['bytes'] / 1e6:.0f}MB)",
                flush=True,
            )
            out_path.with_suffix(".json").write_text(
                json.dumps({"startup": env_info, "results": merged(kept, results)}, indent=1, default=str)
            )
    results = merged(kept, results)
    out_path.write_text(markdown(results, env_info))
    data = {"startup": env_info, "summary": summary(results, env_info), "results": results}
    out_path.with_suffix(".json").write_text(json.dumps(data, indent=1, default=str))
    print(json.dumps(data["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

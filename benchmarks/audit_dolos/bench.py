"""Dolos for one run against 50 notebooks: podium's plagiarism check against a direct dolos-lib call.

    OMP_NUM_THREADS=1 python benchmarks/audit_dolos/bench.py [--kernels 50] [--repeat 3] [--out FILE]

Stand-ins for notebooks: the 50 Python modules of the installed scikit-learn closest to 12 KB (a
top Kaggle notebook's code is a few hundred lines); the run left three files, one of them a renamed
copy of the first "notebook". Four ways, side by side on the same files:

- ``direct``: dolos-lib called in Node as its documentation shows (``new Dolos().analyzePaths(files)``,
  then ``report.allPairs()`` with each pair's similarity, as the published detector reads it): the
  baseline; and the same building every pair's fragments (what a wrapper that reports them does);
- ``podium (dolos)``: ``podium audit --checks plagiarism`` on the run (``audit_run``): staging the files,
  the driver (pairs with the agent's side only), evidence, ``audit.json``;
- ``podium (winnowing)``: the same check with podium's own fallback engine.

Wall seconds (median of ``--repeat``) and the peak RSS of the process that did the work (Node's for the
first two, Python's for the third). Needs Dolos installed (``python -m podium.audit.dolos``).
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from podium.audit import audit_run, dolos

DIRECT = """
import { Dolos } from "@dodona/dolos-lib";
const files = JSON.parse(process.argv[1]);
const withFragments = process.argv[2] === "fragments";
const report = await new Dolos().analyzePaths(files);
const pairs = report.allPairs().map((p) => ({left: p.leftFile.path, right: p.rightFile.path,
  similarity: p.similarity, fragments: withFragments ? p.buildFragments().length : 0}));
console.log(JSON.stringify(pairs.length));
"""


def _notebooks(count: int) -> list[Path]:
    import sklearn

    files = [p for p in Path(sklearn.__file__).parent.rglob("*.py") if "tests" not in p.parts]
    files.sort(key=lambda p: abs(p.stat().st_size - 12_000))
    return sorted(files[:count])


def _layout(root: Path, count: int) -> tuple[Path, Path, list[Path]]:
    kernels = root / "kernels" / "spaceship-titanic"
    kernels.mkdir(parents=True)
    sources = _notebooks(count)
    for i, source in enumerate(sources):
        shutil.copy(source, kernels / f"nb{i:02d}__{source.stem}.py")
    run = root / "runs" / "g" / "spaceship-titanic" / "0"
    for folder in ("code", "logs", "submission"):
        (run / folder).mkdir(parents=True)
    record = {"run_group": "g", "competition_id": "spaceship-titanic", "competition_version": 1, "seed": 0,
              "agent": "bench", "status": "finished"}  # fmt: skip
    (run / "record.json").write_text(json.dumps(record))
    copied = sources[0].read_text()
    for name in sorted(set(re.findall(r"\bdef (\w+)", copied)))[:20]:
        copied = re.sub(rf"\b{name}\b", f"renamed_{name}", copied)
    (run / "code" / "main.py").write_text(copied)
    (run / "code" / "features.py").write_text(sources[-1].read_text()[:3000].rsplit("\n", 1)[0] + "\n")
    (run / "code" / "train.py").write_text("import numpy as np\n\nprint(np.arange(10).sum())\n")
    return kernels.parent, run, sorted(kernels.iterdir()) + sorted((run / "code").iterdir())


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _children_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kernels", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    ok, detail = dolos.dolos_available(install=False)
    if not ok:
        print(f"Dolos cannot run: {detail} (python -m podium.audit.dolos)", file=sys.stderr)
        return 1
    home, node = dolos.dolos_home(), shutil.which("node")
    with tempfile.TemporaryDirectory() as scratch:
        kernels, run, files = _layout(Path(scratch), args.kernels)
        lines = sum(len(p.read_text().splitlines()) for p in files)

        def direct(fragments: str) -> None:
            listed = json.dumps([str(p) for p in files])
            subprocess.run([node, "--input-type=module", "-e", DIRECT, listed, fragments],
                           cwd=home, check=True, capture_output=True)  # fmt: skip

        def podium(engine: str) -> None:
            (run / "audit.json").unlink(missing_ok=True)  # no cache
            audit_run(run, ["plagiarism"], {"kernels": str(kernels), "plagiarism_engine": engine})

        rows = []
        flagged = {}
        for name, fn in (("direct dolos-lib: similarities (baseline)", lambda: direct("")),
                         ("direct dolos-lib: similarities + fragments of every pair", lambda: direct("fragments")),
                         ("podium (dolos)", lambda: podium("dolos")),
                         ("podium (winnowing)", lambda: podium("winnowing"))):  # fmt: skip
            times = [_timed(fn) for _ in range(args.repeat)]
            rows.append((name, statistics.median(times), _children_rss_mb()))
            if name.startswith("podium"):
                audit = json.loads((run / "audit.json").read_text())
                flagged[name] = [f["reason"] for f in audit["flags"]]
    self_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = [
        f"Dolos for one run (3 files) against {args.kernels} notebooks: {len(files)} files, {lines} lines; "
        f"{detail}; median of {args.repeat}.",
        "",
        "| path | wall s | peak RSS MB (children so far) |",
        "|---|---|---|",
        *[f"| {name} | {seconds:.2f} | {rss:.0f} |" for name, seconds, rss in rows],
        "",
        f"podium's own peak RSS: {self_rss:.0f} MB. Flagged: {flagged}",
    ]
    text = "\n".join(out)
    print(text)
    if args.out:
        args.out.write_text(f"`{' '.join(sys.argv)}`\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run ``podium check`` over every competition of a split and print the Markdown table of docs/declaring.md.

    python scripts/check_split.py --split split75 --out /tmp/checks          # runs each check, then the table
    python scripts/check_split.py --split split75 --out /tmp/checks --table  # the table of the checks in --out

Each competition is checked in a process of its own (``podium check ID --json``), its document kept as
``OUT/ID.json`` and its stderr as ``OUT/ID.err``; extra arguments after ``--`` go to every check
(``-- --skip-run``). Without ``--from``, a check prepares the declaration's generated fixture: the table says what
the checks find there, not on the real data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path


def _run(ids: list[str], out: Path, extra: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for i, cid in enumerate(ids, start=1):
        started = time.monotonic()
        with (out / f"{cid}.json").open("w") as stdout, (out / f"{cid}.err").open("w") as stderr:
            code = subprocess.call(
                [sys.executable, "-m", "podium", "check", cid, "--json", *extra],
                stdout=stdout,
                stderr=stderr,
                env={**os.environ, "OMP_NUM_THREADS": "1"},
            )
        print(f"[{i}/{len(ids)}] {cid}: exit {code} ({time.monotonic() - started:.0f} s)", file=sys.stderr)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _row(cid: str, out: Path) -> str:
    try:
        report = json.loads((out / f"{cid}.json").read_text())
    except (OSError, ValueError):
        return f"| {cid} | no report | see {cid}.err |  |"
    checks = {c["name"]: c for c in report["checks"]}
    baseline = checks.get("baseline", {})
    lands = next((n.removeprefix("the baseline lands at ") for n in baseline.get("notes", [])), None)
    said = lands or "; ".join(baseline.get("findings", [])) or f"{baseline.get('status')}: {baseline.get('summary')}"
    if lands is None and baseline.get("findings"):
        said = f"**{said}**"
    found = "; ".join(f"[{f['check']}] {f['text']}" for f in report["findings"] if f["check"] != "baseline")
    not_run = "; ".join(f"not run [{c['name']}]" for c in report["checks"] if c["status"] == "not run")
    verdict = "passed" if report["verdict"] == "passed" else "**refused**"
    return f"| {cid} | {verdict} | {_cell('; '.join(p for p in (found, not_run) if p)) or '-'} | {_cell(said)} |"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="split75")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--table", action="store_true", help="only print the table of the checks already in --out")
    parser.add_argument("extra", nargs="*", help="arguments for every check (after --)")
    args = parser.parse_args(argv)
    from podium import registry

    ids = registry.split_ids(args.split)
    if not args.table:
        _run(ids, args.out, args.extra)
    print("| competition | verdict | findings of the other checks (each with its evidence) | the baseline run |")
    print("|---|---|---|---|")
    for cid in ids:
        print(_row(cid, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Every competition's grading and validation verdicts on a fixed set of generated submissions.

Used to show that a change which should not change behaviour (a restructure, a faster reader) leaves
every grade as it was, byte for byte:

    python scripts/grading_digest.py --out before.json        # on the old code (or --src OLD/src)
    python scripts/grading_digest.py --compare before.json    # on the new code; exit 1 on a difference

For every competition and every version it grades, with podium's public API, the perfect
submission, the sample submission, a perturbed one (a third of each target column's cells
exchanged between rows, then every row shuffled) and four broken ones (a row dropped, an id
duplicated, a column missing, a target cell emptied), and validates each against the sample
submission. What is kept is the whole grading report less ``created_at`` and the file's path, and
the validation verdict and message. ``--src DIR`` runs another source tree (e.g. a ``git archive``
snapshot), so both sides can run from one checkout.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def _src(argv: list[str]) -> None:
    for i, arg in enumerate(argv):
        value = argv[i + 1] if arg == "--src" and i + 1 < len(argv) else arg[6:] if arg.startswith("--src=") else None
        if value:
            sys.path.insert(0, str(Path(value).resolve()))


_src(sys.argv)

import numpy as np  # noqa: E402

import podium  # noqa: E402
from podium.fixtures import make_fixture, write_csv, write_prepared  # noqa: E402


def _variants(comp: podium.Competition, seed: int) -> dict[str, Any]:
    fixture = make_fixture(comp, seed=seed)
    frame_type = type(fixture.perfect)
    perfect = fixture.perfect
    n = perfect.n_rows
    rng = np.random.default_rng(seed)
    columns = {name: np.array(perfect[name], dtype=object) for name in perfect.names}
    targets = [name for name in perfect.names if name not in comp.id_columns]
    for name in targets:
        rows = rng.choice(n, size=max(1, n // 3), replace=False)
        columns[name][rows] = columns[name][rng.permutation(rows)]
    perturbed = frame_type(columns, n).take(rng.permutation(n))
    variants = {"perfect": perfect, "sample": fixture.sample, "perturbed": perturbed}
    if n > 1:
        variants["dropped_row"] = perfect.take(np.arange(n - 1))
        variants["duplicated_id"] = perfect.take(np.concatenate([np.arange(n), [0]]))
    if targets:
        variants["missing_column"] = frame_type({k: perfect[k] for k in perfect.names if k != targets[-1]}, n)
        emptied = {name: np.array(perfect[name], dtype=object) for name in perfect.names}
        emptied[targets[0]][0] = ""
        variants["empty_cell"] = frame_type(emptied, n)
    return {"fixture": fixture, "submissions": variants}


def _validate(comp: podium.Competition, path: Path, sample: Path) -> dict[str, Any]:
    try:
        from podium.grading import validate  # the restructured layout
    except ImportError:
        from podium.validation import validate  # the layout before podium.grading
    result = validate(comp, path, sample)
    return {"valid": result.valid, "error": result.error, "warnings": list(getattr(result, "warnings", []) or [])}


def digest(ids: list[str], work: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for cid in ids:
        first = podium.get_competition(cid)
        for version in first.versions:
            comp = podium.get_competition(cid, version)
            made = _variants(comp, seed=version)
            data = work / comp.ref
            prepared = write_prepared(comp, made["fixture"], data)
            sample = prepared / comp.sample_submission
            for name, frame in made["submissions"].items():
                path = write_csv(frame, work / "subs" / comp.ref / name / "submission.csv")
                report = podium.grade(comp, path, data_dir=data).to_dict()
                report.pop("created_at", None)
                report.pop("submission_path", None)
                out[f"{comp.ref} {name}"] = {"grade": report, "validate": _validate(comp, path, sample)}
        print(f"{cid}: {len(first.versions)} version(s)", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ids", nargs="*", help="competition ids (default: all)")
    parser.add_argument("--src", help="the podium source tree to run (default: the installed one)")
    parser.add_argument("--out", type=Path, help="write the verdicts as JSON")
    parser.add_argument("--compare", type=Path, help="compare with verdicts written earlier; exit 1 on a difference")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="podium-grading-digest-") as tmp:
        verdicts = digest(args.ids or podium.ids(), Path(tmp))
    text = json.dumps(verdicts, indent=1, sort_keys=True, default=str) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.compare:
        expected = json.loads(args.compare.read_text(encoding="utf-8"))
        now = json.loads(text)
        problems = [f"{key}: only before" for key in sorted(expected.keys() - now.keys())]
        problems += [f"{key}: only now" for key in sorted(now.keys() - expected.keys())]
        problems += [f"{key}: differs" for key in sorted(expected.keys() & now.keys()) if expected[key] != now[key]]
        for line in problems:
            print(line)
        print(f"{len(now)} verdicts compared, {len(problems)} differences")
        return 1 if problems else 0
    if not args.out:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`podium example`: every competition of a split graded on generated submissions, with no data,
credentials or network (what exercises the whole registry in seconds)."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from podium import registry
from podium.fixtures import make_fixture, write_csv, write_prepared
from podium.grading import grade
from podium.records import GradeReport

__all__ = ["run_example"]


def run_example(split: str, output_dir: Path | None, *, latest: bool = False) -> int:
    """Grade each competition's generated sample and perfect submissions; print a table."""
    if output_dir is not None:
        return _run_example(split, output_dir, latest)
    with tempfile.TemporaryDirectory(prefix="podium-example-") as tmp:
        return _run_example(split, Path(tmp), latest)


def _run_example(split: str, root: Path, latest: bool) -> int:
    header = ["competition", "metric", "sample", "perfect", "medal"]
    rows = []
    failures = 0
    comps = registry.load_all(split, latest=latest)
    for i, comp in enumerate(comps, start=1):
        print(f"[{i}/{len(comps)}] {comp.ref}", file=sys.stderr)
        fixture = make_fixture(comp)
        write_prepared(comp, fixture, root)
        sample = grade(comp, write_csv(fixture.sample, root / "submissions" / comp.id / "sample.csv"), root)
        perfect = grade(comp, write_csv(fixture.perfect, root / "submissions" / comp.id / "perfect.csv"), root)
        failures += not (sample.valid_submission and perfect.valid_submission)
        medal = perfect.medal or "-"
        rows.append([comp.ref, comp.metric.name, _score_text(sample), _score_text(perfect), medal])
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    print(f"\ngraded {2 * len(comps)} generated example submissions for split {split!r}; {failures} failure(s)")
    print("published definitions (version 1)" if not latest else "latest definitions (--latest)")
    return 1 if failures else 0


def _score_text(report: GradeReport) -> str:
    if report.score is not None:
        return f"{report.score:.5g}"
    return "undefined" if report.valid_submission else "invalid"

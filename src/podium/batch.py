"""Grading many submissions at once, and the offline example.

``grade_jsonl`` reads MLE-bench's submission list (one ``{"competition_id", "submission_path"}``
object per line) and writes one grading report. ``run_example`` grades generated submissions for
every competition of a split with no data, credentials or network.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from podium import competition as registry
from podium.errors import PodiumError
from podium.grading import GradeReport, answers_path, default_data_dir, grade

__all__ = ["grade_jsonl", "read_submission_list", "run_example", "summarise"]


def read_submission_list(path: Path, *, latest: bool = False) -> list[tuple[str, Path]]:
    """Parse a JSONL submission list; a bad line is named with its number and the fix."""
    if not path.is_file():
        raise PodiumError(f"submission list {path} does not exist")
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            entries.append((str(item["competition_id"]), Path(item["submission_path"])))
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise PodiumError(
                f"{path}:{number}: expected a JSON object with competition_id and submission_path ({exc.__class__.__name__}: {exc}); got {line[:120]!r}"
            ) from None
    if not entries:
        raise PodiumError(f"submission list {path} holds no entries")
    for cid, _ in entries:
        registry.get(cid, latest=latest)  # fail fast on an unknown id or version, before grading anything
    return entries


def summarise(reports: Iterable[GradeReport]) -> dict[str, int]:
    """Counts in MLE-bench's report vocabulary."""
    reports = list(reports)
    return {
        "total_runs": len(reports),
        "total_runs_with_submissions": sum(r.submission_exists for r in reports),
        "total_valid_submissions": sum(r.valid_submission for r in reports),
        "total_medals": sum(r.any_medal for r in reports),
        "total_gold_medals": sum(r.gold_medal for r in reports),
        "total_silver_medals": sum(r.silver_medal for r in reports),
        "total_bronze_medals": sum(r.bronze_medal for r in reports),
        "total_above_median": sum(r.above_median for r in reports),
    }


def _atomic_write_json(data: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=2)  # a score of -inf (champs v1, perfect group) prints as -Infinity
        handle.write("\n")
    os.replace(tmp, path)


def grade_jsonl(
    submission_list: Path, output_dir: Path, data_dir: str | Path | None = None, *, latest: bool = False
) -> Path:
    """Grade every entry of ``submission_list``; write and return the grading report's path.

    Ids without ``@N`` are graded at the published version (1), or the newest with ``latest``.
    """
    entries = read_submission_list(submission_list, latest=latest)
    root = Path(data_dir) if data_dir else default_data_dir()
    for cid in dict.fromkeys(cid for cid, _ in entries):  # every answers file present before any grading
        answers_path(registry.get(cid, latest=latest), root)
    reports = []
    for i, (cid, path) in enumerate(entries, start=1):
        report = grade(registry.get(cid, latest=latest), path, data_dir)
        reports.append(report)
        outcome = f"score {report.score:.5g}" if report.score is not None else f"invalid: {report.error}"
        print(f"[{i}/{len(entries)}] {cid}: {outcome}", file=sys.stderr)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M-%S")
    out = output_dir / f"{stamp}_grading_report.json"
    from podium.report import definitions

    named = definitions(
        {"competition_id": r.competition_id, "competition_version": r.competition_version} for r in reports
    )
    summary = {**summarise(reports), "definitions": named}
    _atomic_write_json({**summary, "competition_reports": [r.to_dict() for r in reports]}, out)
    print(f"graded by the {named}", file=sys.stderr)
    return out


def run_example(split: str, output_dir: Path | None, *, latest: bool = False) -> int:
    """Grade each competition's generated sample and perfect submissions; print a table."""
    if output_dir is not None:
        return _run_example(split, output_dir, latest)
    with tempfile.TemporaryDirectory(prefix="podium-example-") as tmp:
        return _run_example(split, Path(tmp), latest)


def _run_example(split: str, root: Path, latest: bool) -> int:
    from podium.fixtures import make_fixture, write_csv, write_prepared

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
        medal = next((m for m in ("gold", "silver", "bronze") if getattr(perfect, f"{m}_medal")), "-")
        rows.append([comp.ref, comp.metric.name, _fmt(sample), _fmt(perfect), medal])
    widths = [max(len(r[k]) for r in [header, *rows]) for k in range(len(header))]
    for row in [header, *rows]:
        print("  ".join(x.ljust(w) for x, w in zip(row, widths, strict=True)).rstrip())
    print(f"\ngraded {2 * len(comps)} generated example submissions for split {split!r}; {failures} failure(s)")
    print("published definitions (version 1)" if not latest else "latest definitions (--latest)")
    return 1 if failures else 0


def _fmt(report: GradeReport) -> str:
    if report.score is not None:
        return f"{report.score:.5g}"
    return "undefined" if report.valid_submission else "invalid"

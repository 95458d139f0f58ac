"""Grading many submissions at once: MLE-bench's submission list in, one grading report out.

``grade_jsonl`` reads the list (one ``{"competition_id", "submission_path"}`` object per line) and
writes ``<time>_grading_report.json``: MLE-bench's summary counts, the definitions graded by, and
one :class:`~podium.records.GradeReport` per entry.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from podium import registry
from podium.errors import UsageError
from podium.grading.grader import answers_path, grade
from podium.paths import default_data_dir, write_atomic
from podium.records import MEDAL_FLAGS, GradeReport, definitions
from podium.untrusted import UntrustedJSONError, loads

__all__ = ["grade_jsonl", "read_submission_list", "summarise"]


def read_submission_list(path: Path, *, latest: bool = False) -> list[tuple[str, Path]]:
    """Parse a JSONL submission list; a bad line is named with its number and the fix."""
    if not path.is_file():
        raise UsageError(f"submission list {path} does not exist")
    entries = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = loads(line, what="the line")
            entries.append((str(item["competition_id"]), Path(item["submission_path"])))
        except (UntrustedJSONError, KeyError, TypeError) as exc:
            raise UsageError(
                f"{path}:{number}: expected a JSON object with competition_id and submission_path ({exc.__class__.__name__}: {exc}); got {line[:120]!r}"
            ) from None
    if not entries:
        raise UsageError(f"submission list {path} holds no entries")
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
        **{f"total_{flag}s": sum(getattr(r, flag) for r in reports) for flag in MEDAL_FLAGS},
        "total_above_median": sum(r.above_median for r in reports),
    }


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
    named = definitions(
        {"competition_id": r.competition_id, "competition_version": r.competition_version} for r in reports
    )
    summary = {**summarise(reports), "definitions": named}
    # a score of -inf (champs v1, perfect group) prints as -Infinity
    write_atomic(out, json.dumps({**summary, "competition_reports": [r.to_dict() for r in reports]}, indent=2) + "\n")
    print(f"graded by the {named}", file=sys.stderr)
    return out

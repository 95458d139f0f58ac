"""The runs of the run groups being published, each with its grade by the published definition (version 1).

The runs are read with :func:`podium.report.load_inputs`, labelled by agent, so they come in the
published reading order that ``podium report`` uses (groups in sorted path order, each competition's
runs in ascending seed number) and seed *i* of a competition is its *i*-th run here as there.

A run graded at version 1 keeps its recorded grade. A run graded at a later version that shares
version 1's data is graded again at version 1 (its submission, in a child process, against the
prepared answers: :func:`podium.grading.grade_isolated`); a run at a version whose data differs
from version 1's has no published grade, and publishing it is refused with the fix. A run the
harness failed (no grade) counts as the published numbers count it: a failure with no submission.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.audit import read_bounded
from podium.errors import UsageError
from podium.records import RUN_FLAGS, GradeReport
from podium.untrusted import UntrustedJSONError, loads

__all__ = ["PublishedRun", "agent_slug", "collect_runs", "group_paths", "progress", "read_record"]

#: The largest record read (records are podium's, but a bundle's come from elsewhere).
MAX_RECORD = 64 << 20


@dataclass
class PublishedRun:
    """One run as it is published: where it lies, its record as written, and its grade at version 1."""

    row: dict[str, Any]  # the report's row of the run (flags as recorded, details, run_dir)
    record: dict[str, Any]
    published: GradeReport  # the grade at version 1
    regraded: bool  # graded again here, at version 1, because its record holds a later version's grade

    @property
    def run_dir(self) -> Path:
        return Path(self.row["run_dir"])

    @property
    def competition_id(self) -> str:
        return str(self.row["competition_id"])

    @property
    def seed(self) -> int:
        return int(self.row["seed"])

    @property
    def group(self) -> str:
        return str(self.row["run_group"])

    def published_row(self) -> dict[str, Any]:
        """The report's row with the published grade's flags: what the published aggregation counts."""
        flags = {flag: bool(getattr(self.published, flag)) for flag in RUN_FLAGS}
        return {**self.row, **flags, "competition_version": 1, "other_versions": [], "score": self.published.score}


def progress(line: str) -> None:
    """Where progress and notes go unless a caller says otherwise: standard error, one line each."""
    print(line, file=sys.stderr)


def read_record(path: Path) -> dict[str, Any] | None:
    """A ``record.json`` as JSON (at most :data:`MAX_RECORD` bytes, no link followed), or None."""
    data = read_bounded(path, MAX_RECORD)
    if data is None:
        return None
    try:
        value = loads(data, max_bytes=MAX_RECORD, what="record.json")
    except UntrustedJSONError:  # not JSON, or nested too deep to read
        return None
    return value if isinstance(value, dict) else None


def group_paths(groups: Sequence[str], runs_dir: Path) -> list[str]:
    """Each GROUP as a folder: a path that exists, else a group of ``runs_dir``; a usage error names the others."""
    out = []
    for group in groups:
        path = Path(group)
        if not path.is_dir() and (runs_dir / group).is_dir():
            path = runs_dir / group
        if not path.is_dir():
            raise UsageError(
                f"run group {group!r}: no such folder, nor {runs_dir / group}; give a run group folder "
                "(RUNS/<group>) or a group name with --runs-dir RUNS"
            )
        out.append(str(path))
    return out


def agent_slug(agent: str) -> str:
    """An agent's name as a folder name may carry it: a folder agent's last part, in ``[A-Za-z0-9._-]``."""
    name = Path(agent.rstrip("/")).name or "agent"
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.") or "agent"


def _published_grade(
    row: dict[str, Any], record: dict[str, Any], data_dir: Path | None, say: Callable[[str], None]
) -> tuple[GradeReport, bool]:
    from podium import registry
    from podium.grading import grade_isolated, unscored_report

    competition_id = str(row["competition_id"])
    version = int(row["competition_version"])
    published = registry.get(competition_id, 1)
    grade = record.get("grade")
    submission = Path(row["run_dir"]) / "submission"
    if not isinstance(grade, dict):
        failure = row.get("failure") or "no grade in its record"
        return unscored_report(published, submission / "submission.csv", exists=False, error=str(failure)), False
    if version == 1:
        return GradeReport.from_dict(grade), False
    if not registry.get(competition_id, version).shares_data_with(1):
        raise UsageError(
            f"{row['run_dir']}: graded as {competition_id}@{version}, whose data differs from the published "
            f"version's, so it has no published grade; rerun it at version 1 (podium run without --latest), or "
            "leave its group out"
        )
    from podium.paths import default_data_dir

    say(f"{row['run_group']}/{competition_id}/{row['seed']}: graded at version {version}; grading it at version 1")
    return grade_isolated(published, submission, data_dir or default_data_dir()), True


def collect_runs(
    groups: Sequence[str], *, data_dir: Path | None = None, say: Callable[[str], None] | None = None
) -> dict[str, list[PublishedRun]]:
    """Every run of ``groups`` (run group folders), by agent, in the published reading order, each with its
    version-1 grade (``data_dir`` holds the prepared answers for the runs that must be graded again)."""
    from podium.report import load_inputs

    say = say or progress
    by_agent: dict[str, list[PublishedRun]] = {}
    for item in load_inputs(list(groups), by=("agent",)):
        if item.kind != "podium run group":
            raise UsageError(f"{', '.join(item.paths)}: not a podium run group; give run group folders")
        runs = []
        for row in item.runs:
            record = read_record(Path(row["run_dir"]) / "record.json")
            if record is None:
                raise UsageError(f"{row['run_dir']}/record.json: unreadable; move the run away or rerun it")
            grade, regraded = _published_grade(row, record, data_dir, say)
            runs.append(PublishedRun(dict(row), record, grade, regraded))
        by_agent[item.label] = runs
    return by_agent

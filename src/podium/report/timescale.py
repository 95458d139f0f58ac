"""Time scaling: how good each label's runs were after 1, 2, ... hours, from their best-so-far snapshots.

An agent that places its submissions through ``/home/podium_submission.py`` (podium's own agents,
the AIDE wrapper) leaves a copy of every submission it placed in ``logs/snapshots/``, listed in
``snapshots.jsonl`` with the seconds into the run. The best-so-far at time *t* is the last snapshot
placed by *t*; it is graded against the prepared answers, in a child process as every agent-written
file is (:func:`podium.grading.grade_isolated`). A run without snapshots is counted with its final
submission from the moment its agent ended, and with none before. At each time point the label's
runs give the share with any medal, above the median and valid, and the mean leaderboard percentile
(a run without a valid submission counts 0).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.report.sections import any_medal
from podium.untrusted import iter_json_lines

__all__ = ["default_hours", "snapshots", "time_scaling"]

#: Time points when the longest run is shorter than two hours: this many, evenly spaced.
_SHORT_POINTS = 10


def snapshots(run_dir: Path) -> list[tuple[float, str]]:
    """(seconds into the run, file name) of each snapshot a run left, in time order; [] for none."""
    index = run_dir / "logs" / "snapshots" / "snapshots.jsonl"
    try:
        lines = index.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    out = []
    for entry in iter_json_lines(lines):
        try:
            elapsed, name = float(entry["elapsed_s"]), str(entry["file"])  # type: ignore[index]
        except (ValueError, KeyError, TypeError):
            continue  # a line the agent tore or wrote badly: not a snapshot
        if "/" not in name and name not in ("", ".", "..") and math.isfinite(elapsed):
            out.append((elapsed, name))
    return sorted(out)


def default_hours(runs: Sequence[Mapping[str, Any]]) -> list[float]:
    """Every hour up to the longest time limit (or runtime); ten even steps when that is under two hours."""
    longest = max((float(r.get("time_limit_s") or r.get("runtime_s") or 0) for r in runs), default=0.0)
    if longest <= 0:
        return []
    hours = longest / 3600
    if hours >= 2:
        return [float(h) for h in range(1, math.ceil(hours) + 1)]
    return [hours * (i + 1) / _SHORT_POINTS for i in range(_SHORT_POINTS)]


class _Grades:
    """Snapshot grades, each graded once."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.done: dict[tuple[str, str], dict[str, Any]] = {}

    def of(self, run: Mapping[str, Any], name: str) -> dict[str, Any]:
        key = (str(run["run_dir"]), name)
        if key not in self.done:
            from podium import registry
            from podium.errors import DataNotFoundError
            from podium.grading import grade_isolated

            competition = registry.get(run["competition_id"], run["competition_version"])
            try:
                report = grade_isolated(
                    competition, Path(run["run_dir"]) / "logs" / "snapshots", self.data_dir, name=name
                )
            except DataNotFoundError as exc:
                raise UsageError(f"time scaling grades the snapshots against the prepared answers: {exc}") from None
            self.done[key] = {
                "valid_submission": report.valid_submission,
                "above_median": report.above_median,
                "any_medal": report.any_medal,
                "percentile": report.percentile if report.valid_submission else 0.0,
            }
        return self.done[key]


def _final(run: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "valid_submission": bool(run["valid_submission"]),
        "above_median": bool(run["above_median"]),
        "any_medal": any_medal(run),
        "percentile": float(run.get("percentile") or 0.0) if run["valid_submission"] else 0.0,
    }


_NOTHING = {"valid_submission": False, "above_median": False, "any_medal": False, "percentile": 0.0}


def time_scaling(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], data_dir: Path, hours: Sequence[float] | None = None
) -> dict[str, Any]:
    """Per label: the best-so-far at each time point (``hours``, or :func:`default_hours` of all runs)."""
    podium_runs = {label: [r for r in rows if r.get("run_dir") and not r.get("padded")] for label, rows in runs.items()}
    every = [r for rows in podium_runs.values() for r in rows]
    points = sorted(set(hours)) if hours else default_hours(every)
    if hours and any(h <= 0 for h in hours):
        raise UsageError(f"--hours {','.join(f'{h:g}' for h in hours)}: give positive hours, e.g. 1,2,4,8,24")
    grades = _Grades(data_dir)
    out: dict[str, Any] = {"hours": points, "labels": {}}
    for label, rows in podium_runs.items():
        if not rows:
            continue
        timelines: list[tuple[Mapping[str, Any], list[tuple[float, str | None]]]] = []
        with_snapshots = 0
        for run in rows:
            taken: list[tuple[float, str | None]] = list(snapshots(Path(run["run_dir"])))
            with_snapshots += bool(taken)
            timelines.append((run, taken or [(float(run.get("runtime_s") or 0.0), None)]))
        series = []
        for point in points:
            states = []
            for run, timeline in timelines:
                placed = [name for elapsed, name in timeline if elapsed <= point * 3600]
                if not placed:
                    states.append(_NOTHING)
                else:
                    states.append(_final(run) if placed[-1] is None else grades.of(run, placed[-1]))
            n = len(states)
            series.append(
                {
                    "hours": point,
                    "any_medal_percentage": sum(s["any_medal"] for s in states) / n * 100,
                    "above_median_percentage": sum(s["above_median"] for s in states) / n * 100,
                    "valid_submissions_percentage": sum(s["valid_submission"] for s in states) / n * 100,
                    "mean_percentile": sum(s["percentile"] for s in states) / n * 100,
                }
            )
        out["labels"][label] = {"runs": len(rows), "runs_with_snapshots": with_snapshots, "points": series}
    return out

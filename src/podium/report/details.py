"""What a report says of each run beyond the published flags: score and placement, the metric, how the
agent ended, what it cost, and the settings that label it.

Every run that ``podium report`` reads becomes one flat dict (a *run row*): the published flags
(:data:`podium.records.RUN_FLAGS`, which the aggregation reads) and the keys of :data:`DETAILS`. A
podium run record fills them all; an MLE-bench grading report fills the score and flags, and the
percentile and rank are placed on podium's copy of the competition's leaderboard.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from podium.records import medal_of

__all__ = ["DETAILS", "LABEL_FIELDS", "grading_report_details", "label_of", "record_details"]

#: The keys every run row carries besides the flags (None where the input does not say).
DETAILS = (
    "seed",
    "run_group",
    "agent",
    "score",
    "percentile",
    "rank",
    "n_teams",
    "medal",
    "metric",
    "higher_is_better",
    "leaderboard",
    "status",
    "failure",
    "failure_kind",
    "runtime_s",
    "exit_code",
    "model",
    "time_limit_s",
    "cpus",
    "gpus",
    "hardware",
    "description",
    "llm_calls",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "gpu_hours",
    "run_dir",
    "compute_profile",
    "compute_used",
    "declaration_sha256",
    "declaration_source",
)

#: What ``--by`` may label the rows by: the field and how its value is written in a label.
LABEL_FIELDS = ("agent", "group", "model", "time_limit", "hardware", "description")


def _metric(competition_id: str, version: int, cache: dict[tuple[str, int], Any]) -> Any:
    """The competition at that version (None where podium does not know it), looked up once."""
    key = (competition_id, version)
    if key not in cache:
        from podium import registry
        from podium.errors import PodiumError

        try:
            cache[key] = registry.get(competition_id, version)
        except PodiumError:
            cache[key] = None
    return cache[key]


def hardware_text(cpus: float | None, gpus: int | None) -> str:
    """A run's hardware in a label's words: ``2 CPU``, ``4 CPU + 1 GPU``, ``1 GPU`` (CPUs not capped)."""
    parts = [] if cpus is None else [f"{cpus:g} CPU"]
    if gpus:
        parts.append(f"{gpus} GPU")
    return " + ".join(parts) or "CPU"


def record_details(data: Mapping[str, Any], path: Path, cache: dict[tuple[str, int], Any]) -> dict[str, Any]:
    """The detail keys of a podium run record (``data``, read from ``path``)."""
    from podium.report.compute import run_compute
    from podium.run.outcome import agent_end, crashed

    grade = data.get("grade") or {}
    result = data.get("agent_result") or {}
    limits = data.get("limits") or {}
    llm = data.get("llm") or {}
    version = int(data.get("competition_version") or grade.get("competition_version") or 1)
    competition = _metric(str(data["competition_id"]), version, cache)
    status = str(data.get("status") or "finished")
    failure, kind = None, None
    if status != "finished" or not result:
        detail = data.get("error") or result.get("error")
        failure = f"status {status}" + (f": {str(detail).strip().splitlines()[0][:200]}" if detail else "")
        kind = "harness"
    elif not grade.get("valid_submission"):
        said = "no submission" if not grade.get("submission_exists") else f"invalid submission: {grade.get('error')}"
        failure, kind = f"{said}; the agent {agent_end(result)}", "agent"
    elif crashed(result) or result.get("killed_for"):
        failure, kind = f"the agent {agent_end(result)} (its submission is graded)", "agent"
    seconds = result.get("seconds")
    gpus = limits.get("gpus")
    models = sorted((llm.get("models") or {}).keys())
    return {
        "score": grade.get("score"),
        "percentile": grade.get("percentile"),
        "rank": grade.get("rank"),
        "n_teams": grade.get("n_teams"),
        "medal": medal_of(grade),
        "metric": competition.metric.name if competition is not None else None,
        "higher_is_better": (not grade["is_lower_better"]) if "is_lower_better" in grade else None,
        "leaderboard": grade.get("leaderboard"),
        "status": status,
        "failure": failure,
        "failure_kind": kind,
        "runtime_s": seconds,
        "exit_code": result.get("exit_code"),
        "model": ", ".join(models) or None,
        "time_limit_s": limits.get("time_limit_s"),
        "cpus": limits.get("cpus"),
        "gpus": gpus,
        "hardware": hardware_text(limits.get("cpus"), gpus),
        "description": data.get("description"),
        "gym": data["gym"].get("task") if isinstance(data.get("gym"), dict) else None,  # a training episode's task
        "llm_calls": llm.get("calls"),
        "input_tokens": llm.get("input_tokens"),
        "output_tokens": llm.get("output_tokens"),
        "cost_usd": llm.get("cost_usd"),
        "gpu_hours": (gpus or 0) * float(seconds) / 3600 if seconds is not None else None,
        "run_dir": str(path.parent),
        **run_compute(data),
        **_declaration(data.get("declaration")),
    }


def _declaration(declared: Any) -> dict[str, str | None]:
    """The record's declaration (its digest; ``built-in`` or ``user``); None where an older podium wrote none."""
    declared = declared if isinstance(declared, dict) else {}
    sha256, source = declared.get("sha256"), declared.get("source")
    return {
        "declaration_sha256": sha256 if isinstance(sha256, str) else None,
        "declaration_source": source if source in ("built-in", "user") else None,
    }


def grading_report_details(report: Mapping[str, Any], cache: dict[tuple[str, int], Any]) -> dict[str, Any]:
    """The detail keys of one competition report of an MLE-bench grading report."""
    version = int(report.get("competition_version") or 1)
    competition = _metric(str(report["competition_id"]), version, cache)
    score = report.get("score")
    percentile = rank = n_teams = None
    board = competition.leaderboard if competition is not None else None
    if board is not None and isinstance(score, (int, float)):
        placement = board.place(float(score))
        percentile, rank, n_teams = placement.percentile, placement.rank, board.n_teams
    valid = bool(report.get("valid_submission"))
    failure = None
    if not valid:
        failure = "no submission" if not report.get("submission_exists") else "invalid submission"
    details = dict.fromkeys(DETAILS)
    details.update(
        {
            "score": score,
            "percentile": percentile,
            "rank": rank,
            "n_teams": n_teams,
            "medal": medal_of(report),
            "metric": competition.metric.name if competition is not None else None,
            "higher_is_better": (not report["is_lower_better"]) if report.get("is_lower_better") is not None else None,
            "leaderboard": board.source if board is not None else None,
            "status": "finished",
            "failure": failure,
            "failure_kind": None if valid else "agent",
        }
    )
    return details


def _time_text(seconds: float | None) -> str:
    """A time limit in a label's words: ``24h``, ``90m``, ``45s``."""
    if seconds is None:
        return "no time limit"
    value = float(seconds)
    if value >= 3600 and value % 3600 == 0:
        return f"{value / 3600:g}h"
    if value >= 60 and value % 60 == 0:
        return f"{value / 60:g}m"
    return f"{value:g}s"


def label_of(run: Mapping[str, Any], by: tuple[str, ...]) -> str:
    """A run's label from the fields of ``by`` (:data:`LABEL_FIELDS`), joined with ' / '."""
    words = {
        "agent": lambda: str(run.get("agent") or "?"),
        "group": lambda: str(run.get("run_group") or "?"),
        "model": lambda: str(run.get("model") or "no model"),
        "time_limit": lambda: _time_text(run.get("time_limit_s")),
        "hardware": lambda: str(run.get("hardware") or "?"),
        "description": lambda: str(run.get("description") or "description ?"),
    }
    return " / ".join(words[field]() for field in by)

"""How a run ended, in words: one line per finished run, and the runs whose agent failed."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.paths import RunPaths
from podium.records import RunRecord
from podium.units import seconds_text

__all__ = ["agent_end", "agent_failures", "crashed", "no_submission_message", "outcome", "tail_lines"]


def tail_lines(path: Path, lines: int = 12, max_bytes: int = 8192) -> list[str]:
    """The last non-empty lines of a log file (at most ``max_bytes`` of it); [] when there is none."""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - max_bytes))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip()[:500] for line in text.splitlines() if line.strip()][-lines:]


def agent_end(result: Mapping[str, Any]) -> str:
    """How the agent's process ended, in words: 'exited with status 1 after 0.03s' and the like."""
    took = seconds_text(float(result.get("seconds") or 0))
    code, killed = result.get("exit_code"), result.get("killed_for")
    if killed:
        return f"was stopped at its {killed} limit after {took}"
    if code is None:
        return f"was stopped after {took}"
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by signal {signal.Signals(-code).name} after {took}"
        return f"was killed by signal {-code} after {took}"
    return f"exited with status {code} after {took}"


def crashed(result: Mapping[str, Any]) -> bool:
    """Whether the agent ended badly on its own (not at a limit podium enforced)."""
    code = result.get("exit_code")
    return not result.get("killed_for") and code is not None and code != 0


def outcome(record: RunRecord) -> str:
    """A finished run in one line (and, for an agent that crashed, the last lines of its stderr)."""
    g, result = record.grade, record.agent_result or {}
    assert g is not None, "a finished run has a grade"
    if g.score is not None:
        text = f"score {g.score:.5g}"
        for other in g.other_versions:
            if other["score"] is not None:
                text += f" (version {other['competition_version']}: {other['score']:.5g})"
    elif not g.submission_exists:
        text = "no submission"
    else:
        text = f"invalid submission: {g.error}"
    if crashed(result) or result.get("killed_for") or g.score is None:
        text += f"; the agent {agent_end(result)}"
    llm = record.llm or {}
    refused = llm.get("refused") if isinstance(llm.get("refused"), int) else 0
    if refused and not llm.get("answered_calls"):  # a scaffold the proxy's rules refuse works with no model at all
        calls = RunPaths(Path(g.submission_path).parent.parent).root / "llm_calls.jsonl"
        text += f"; podium's proxy refused all {refused} of its model calls and answered none (why: {calls})"
    tail = record.agent_stderr_tail
    if crashed(result) and tail:
        log = RunPaths(Path(g.submission_path).parent.parent).stderr
        text += f"; its stderr ended with ({log}):\n" + "\n".join(f"    {line}" for line in tail[-5:])
    return text


def read_records(rows: Sequence[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], RunRecord]]:
    """Each index row with its run's record (rows whose record cannot be read are left out)."""
    from podium.run.group import records

    return [(row, RunRecord.from_dict(data)) for row, data in records(rows)]


def agent_failures(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The runs (index rows) whose agent crashed, was stopped at a limit, or left no valid submission:
    competition, seed, how the agent ended, and the last lines of its stderr (from each run's record)."""
    out = []
    for row, record in read_records(rows):
        if not record.finished:  # the harness failed, not the agent
            continue
        result = record.agent_result or {}
        if not (crashed(result) or result.get("killed_for") or not row["valid_submission"]):
            continue
        log = RunPaths(Path(row["record_path"]).parent).stderr
        out.append(
            {
                "competition_id": row["competition_id"],
                "competition_version": row["competition_version"],
                "seed": row["seed"],
                "exit_code": result.get("exit_code"),
                "killed_for": result.get("killed_for"),
                "seconds": result.get("seconds"),
                "ended": agent_end(result),
                "crashed": crashed(result),
                "submission": "valid" if row["valid_submission"] else "invalid" if row["submission_exists"] else "none",
                "stderr_tail": record.agent_stderr_tail or tail_lines(log),
                "stderr_log": str(log),
            }
        )
    return out


def no_submission_message(failures: Sequence[Mapping[str, Any]], runs: int) -> str:
    """Why no run made a submission, grouped by the last line the agents wrote to stderr."""
    by_last: dict[str, list[Mapping[str, Any]]] = {}
    for failure in failures:
        last = failure["stderr_tail"][-1] if failure["stderr_tail"] else "(nothing on stderr)"
        by_last.setdefault(last, []).append(failure)
    lines = [f"podium: error: no run made a submission ({runs} run(s)). What the agents wrote to stderr:"]
    for last, group in sorted(by_last.items(), key=lambda item: -len(item[1])):
        first = group[0]
        lines.append(
            f"  {len(group)} run(s) ended with: {last}\n"
            f"    e.g. {first['competition_id']} seed {first['seed']}: the agent {first['ended']}; "
            f"all of its stderr: {first['stderr_log']}"
        )
    return "\n".join(lines)

"""What each page shows, as plain data for its template: a group's summary and runs, a run's grade,
resources, logs, validation calls, LLM calls and journal. Reads only (:mod:`podium.serve.index`,
:mod:`podium.serve.runfiles`); the templates print it, redacted on the way out."""

from __future__ import annotations

import math
from datetime import datetime
from pathlib import Path
from typing import Any

from podium.audit import read_audit
from podium.paths import RunPaths
from podium.records import compute_profile, medal_of
from podium.serve.index import LiveRun, RunsIndex
from podium.serve.journal import Journal, load_journal
from podium.serve.runfiles import LOGS, live_samples, read_jsonl, read_record, resource_charts, tail

__all__ = ["PAGE_SIZE", "duration", "group_page", "live_rows", "node_page", "run_page", "tree"]

#: Finished runs per page of a group.
PAGE_SIZE = 100


def duration(seconds: float | None) -> str:
    """``3h 05m``, ``4m 12s``, ``9s``; ``-`` for nothing."""
    if seconds is None or not math.isfinite(seconds):
        return "-"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    return f"{s // 60}m {s % 60:02d}s" if s >= 60 else f"{s}s"


def live_rows(runs: list[LiveRun]) -> list[dict[str, Any]]:
    """The runs in progress as a table (and the JSON of ``/api/live``)."""
    return [
        {
            "group": r.group,
            "competition_id": r.competition_id,
            "seed": r.seed,
            "started": datetime.fromtimestamp(r.started).astimezone().isoformat(timespec="seconds"),
            "started_epoch": r.started,
            "elapsed_s": round(r.elapsed_s, 1),
            "elapsed": duration(r.elapsed_s),
            "owner_alive": r.owner_alive,
            "node": r.node,
            "url": f"/run/{r.group}/{r.competition_id}/{r.seed}",
        }
        for r in runs
    ]


def group_page(index: RunsIndex, group: str, page: int) -> dict[str, Any]:
    summary = index.summaries().get(group, {})
    total = int(summary.get("runs") or 0)
    pages = max(1, math.ceil(total / PAGE_SIZE))
    page = min(max(1, page), pages)
    runs = index.runs(group, (page - 1) * PAGE_SIZE, PAGE_SIZE)
    document = index.settings(group)
    settings = document.get("settings") if isinstance(document.get("settings"), dict) else {}
    return {
        "group": group,
        "summary": summary,
        "settings": settings,
        "hardware": _hardware(settings) if settings else None,
        "time_limit": duration(settings.get("time_limit_s")) if settings else None,
        "created_at": document.get("created_at"),
        "runs": runs,
        "page": page,
        "pages": pages,
        "live": live_rows(index.live(group)),
    }


def _hardware(settings: dict[str, Any]) -> str | None:
    """The group's compute in the reports' words ('2 CPUs, 4 GiB, no GPU'); an unset cap says 'not capped'."""
    cpus, memory, gpus = settings.get("cpus"), settings.get("memory_bytes"), settings.get("gpus")
    compute = {"cpus": cpus, "memory_bytes": memory, "gpu_count": gpus if isinstance(gpus, int) else 0}
    words = compute_profile(compute) or ""
    words = words.replace("CPUs unknown", "CPUs not capped") if cpus is None else words
    return words.replace("memory unknown", "memory not capped") if memory is None else words


def run_page(index: RunsIndex, group: str, competition_id: str, seed: int, folder: Path, live: bool) -> dict[str, Any]:
    run = RunPaths(folder)
    record = None if live else read_record(run)
    row = None if live else index.run(group, competition_id, seed)
    result = (record or {}).get("agent_result") or {}
    grade = (record or {}).get("grade") or {}
    llm_calls = read_jsonl(run.root, run.llm_log)
    samples = live_samples(run) if live else result.get("samples") or []
    started = None
    if live:
        started = next((r for r in index.live(group) if r.folder == folder), None)
    return {
        "group": group,
        "competition_id": competition_id,
        "seed": seed,
        "live": live,
        "started_epoch": started.started if started else None,
        "elapsed": duration(started.elapsed_s) if started else None,
        "owner_alive": started.owner_alive if started else None,
        "record": record,
        "row": row,
        "grade": grade,
        "medal": (row or {}).get("medal") or medal_of(grade),
        "result": result,
        "runtime": duration(result.get("seconds")) if result else None,
        "charts": resource_charts(samples),
        "samples_note": _samples_note(live, record, samples),
        "logs": {name: tail(run.root, run.logs / file) for name, file in LOGS.items()},
        "validation_calls": read_jsonl(run.root, run.validation_log),
        "llm": (record or {}).get("llm"),
        "llm_calls": llm_calls,
        "llm_totals": _llm_totals(llm_calls),
        "journal": load_journal(run),
        "audit": None if live else read_audit(run.root),
    }


def _samples_note(live: bool, record: dict[str, Any] | None, samples: list[Any]) -> str | None:
    if live:
        if len(samples) >= 2:
            return None
        return (
            "No resource graph yet: the sandbox writes a sample of CPU and memory every second to the run's "
            "resources.jsonl once the agent starts; the graph appears with the second one."
        )
    if record is None:
        return "This run's record.json cannot be read, so there are no resource samples to show."
    if len(samples) < 2:
        return "The sandbox recorded fewer than two resource samples for this run (it ended within about a second)."
    return None


def _llm_totals(calls: list[dict[str, Any]]) -> dict[str, Any]:
    priced = [c["cost_usd"] for c in calls if isinstance(c.get("cost_usd"), (int, float))]
    return {
        "calls": len(calls),
        "input_tokens": sum(int(c.get("input_tokens") or 0) for c in calls),
        "output_tokens": sum(int(c.get("output_tokens") or 0) for c in calls),
        "cost_usd": sum(priced) if priced else None,
        "unpriced": len(calls) - len(priced),
    }


def tree(journal: Journal) -> list[dict[str, Any]]:
    """The journal as nested dicts (node and children), roots first, for the template's tree."""
    by_id = {n.id: n for n in journal.nodes}
    seen: set[str] = set()

    def branch(node_id: str) -> dict[str, Any]:
        seen.add(node_id)
        node = by_id[node_id]
        return {"node": node, "children": [branch(c) for c in node.children if c in by_id and c not in seen]}

    return [branch(n.id) for n in journal.roots() if n.id not in seen]


def node_page(folder: Path, node_id: str) -> dict[str, Any] | None:
    journal = load_journal(RunPaths(folder))
    node = journal.node(node_id) if journal is not None else None
    if journal is None or node is None:
        return None
    return {"journal": journal, "node": node, "parent": journal.node(node.parent) if node.parent else None}

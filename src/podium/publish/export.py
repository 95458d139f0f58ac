"""``podium export mlebench``: what a leaderboard pull request adds to openai/mle-bench, from podium run groups.

The folder ``DIR`` is laid out like the repository, so the published aggregation script runs on it
unchanged (copy ``experiments/aggregate_grading_reports.py`` into ``DIR/experiments/``)::

    DIR/runs/<UTC start>_run-group_<agent>/<UTC time>_grading_report.json   one folder per seed
    DIR/runs/run_group_experiments.csv      experiment_id,run_group: the rows to append
    DIR/experiments/splits/<split>.txt       the splits the row was computed on (to check it; not for the PR)
    DIR/.gitattributes                       the Git LFS lines the repository requires of runs/ files
    DIR/LEADERBOARD.md                       the README's row(s), footnotes, known leakage, runs/README.md line
    DIR/SUBMISSION.md                        the pull request template's disclosure with the audit's statement
    DIR/podium-export.json                   all of it as data: exact numbers, runs per seed, notes

Folder *i* of an agent holds, for every competition, its *i*-th run in the published reading order
(:mod:`podium.publish.runs`), graded at version 1. The folders' names sort in seed order (the
script reads them sorted): each is named by the earliest start of its runs, and a seed that would sort
before the one before it (runs started in parallel) takes that one's time plus one second. The row's
numbers are :func:`podium.report.published` over the same version-1 grades, so the script on ``DIR``
with ``--experiment-id`` gives them exactly.

``DIR`` is written in a staging folder beside it and put in place in one step; a previous export in
``DIR`` is replaced, any other content refuses the export.
"""

from __future__ import annotations

import json
import shutil
import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.paths import exchange_folders, write_atomic
from podium.publish.runs import PublishedRun, agent_slug, collect_runs
from podium.publish.texts import (
    GITATTRIBUTES,
    PAD_FOOTNOTE,
    PR_CHECKBOX,
    README_HEAD,
    README_SPLITS,
    hardware_words,
    leaderboard_cells,
    submission_statement,
)

__all__ = ["EXPORT_FILE", "PUBLISHED_FIELDS", "AgentExport", "export_mlebench", "published_report", "seed_folders"]

#: The export's own record, in ``DIR``; its presence marks a folder a new export may replace.
EXPORT_FILE = "podium-export.json"
#: A competition report's fields in the published grading report (mlebench/grade_helpers.py), in its order.
PUBLISHED_FIELDS = (
    "competition_id", "score", "gold_threshold", "silver_threshold", "bronze_threshold", "median_threshold",
    "any_medal", "gold_medal", "silver_medal", "bronze_medal", "above_median", "submission_exists",
    "valid_submission", "is_lower_better", "created_at", "submission_path",
)  # fmt: skip
_EXTRA_SPLITS = ("dev", "practice")
_STAMP = "%Y-%m-%dT%H-%M-%S"


@dataclass
class AgentExport:
    """One agent's part of the export."""

    agent: str
    experiment_id: str
    folders: list[str] = field(default_factory=list)
    numbers: dict[str, dict[str, Any]] = field(default_factory=dict)


def _when(text: Any) -> datetime | None:
    try:
        moment = datetime.fromisoformat(str(text))
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def seed_folders(runs: Sequence[PublishedRun]) -> list[list[PublishedRun]]:
    """Seed *i*: every competition's *i*-th run in reading order (a competition with fewer runs is absent)."""
    per_competition: dict[str, list[PublishedRun]] = defaultdict(list)
    for run in runs:
        per_competition[run.competition_id].append(run)
    count = max((len(v) for v in per_competition.values()), default=0)
    return [[v[i] for v in per_competition.values() if i < len(v)] for i in range(count)]


def _folder_times(seeds: Sequence[Sequence[PublishedRun]]) -> list[datetime]:
    """Each seed's earliest start, moved on where needed so that the times strictly increase in seed order."""
    out: list[datetime] = []
    for seed in seeds:
        starts = [t for r in seed if (t := _when(r.record.get("started_at") or r.record.get("finished_at")))]
        moment = (min(starts) if starts else datetime(1970, 1, 1, tzinfo=UTC)).replace(microsecond=0)
        if out and moment <= out[-1]:
            moment = out[-1] + timedelta(seconds=1)
        out.append(moment)
    return out


def published_report(seed: Sequence[PublishedRun]) -> dict[str, Any]:
    """A seed's grading report in the published schema: the summary counts and one report per competition."""
    from podium.grading import summarise

    reports = sorted((r for r in seed), key=lambda r: r.competition_id)
    entries = []
    for run in reports:
        data = run.published.to_dict()
        data["submission_path"] = f"{run.group}/{run.competition_id}/{run.seed}/submission/submission.csv"
        entries.append({key: data[key] for key in PUBLISHED_FIELDS})
    return {**summarise(r.published for r in reports), "competition_reports": entries}


def _splits(names: Sequence[str] | None, ran: set[str]) -> dict[str, list[str]]:
    """The splits the row is computed on: ``names`` (split names or .txt files of ids), else the README's
    four and any other named split the runs cover."""
    from podium import registry

    chosen: dict[str, list[str]] = {}
    for name in names or [*README_SPLITS, *_EXTRA_SPLITS]:
        path = Path(name)
        if path.suffix == ".txt":
            if not path.is_file():
                raise UsageError(f"--split {name}: no such file; give a split name or a .txt file of competition ids")
            chosen[path.stem] = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
            continue
        key = {"all": "split75", "lite": "low"}.get(name, name)
        ids = registry.split_ids(key)
        if names or key in README_SPLITS or ran & set(ids):
            chosen[key] = ids
    return chosen


def _numbers(rows: Sequence[dict[str, Any]], ids: Sequence[str], pad_missing: bool, key: str) -> dict[str, Any]:
    from podium.report import AggregationError, published

    if not {r["competition_id"] for r in rows} & set(ids):
        return {"error": f"no run of its {len(ids)} competitions"}
    try:
        return published(rows, ids, pad_missing=pad_missing, split=key)
    except AggregationError as exc:
        return {"error": str(exc)}


def _row_words(agent: str, runs: Sequence[PublishedRun]) -> dict[str, str]:
    from podium.agents import BUILTIN

    models = sorted({m for r in runs for m in str(r.row.get("model") or "").split(", ") if m})
    limits = sorted({r.row.get("time_limit_s") for r in runs}, key=lambda v: (v is None, v or 0))
    hours = ", ".join("no limit" if v is None else f"{round(float(v) / 3600, 2):g}" for v in limits)
    finished = sorted(str(r.record.get("finished_at") or "")[:10] for r in runs)
    builtin = (BUILTIN / agent).is_dir() and "/" not in str(runs[0].row.get("agent"))
    return {
        "models": ", ".join(models) or "none (no model calls)",
        "hours": hours,
        "date": finished[-1] if finished else "",
        "source": "✓" if builtin else "?",
    }


def _agent_markdown(export: AgentExport, runs: Sequence[PublishedRun], pad_missing: bool) -> list[str]:
    words = _row_words(export.agent, runs)
    row = leaderboard_cells(
        export.agent, words["models"], export.numbers, words["hours"], words["date"], words["source"], pad_missing
    )
    hardware, notes = hardware_words([r.record for r in runs])
    lines = [f"## {export.agent} (experiment `{export.experiment_id}`)", "", README_HEAD, "|" + "---|" * 10, row, ""]
    if pad_missing:
        lines += [f"[^pad]: {PAD_FOOTNOTE}", ""]
    lines += ["Any medal (%) as mean ± SEM over seeds, by `experiments/aggregate_grading_reports.py`'s rules:", ""]
    for key, numbers in export.numbers.items():
        title = README_SPLITS.get(key, f"{key} (not a leaderboard column)")
        if "error" in numbers:
            lines.append(f"- {title}: not computed: {numbers['error']}")
            continue
        metric = numbers["metrics"]["any_medal_percentage"]
        lines.append(
            f"- {title}: {metric['mean']:.2f} ± {metric['standard_error']:.2f} over "
            f"{numbers['num_seeds_averaged']} seed(s) of {numbers['num_competitions_per_seed']} competitions "
            f"({'missing runs padded as failures' if pad_missing else 'complete seeds only'}); check: "
            f"`python experiments/aggregate_grading_reports.py --experiment-id {export.experiment_id} --split "
            f"{key}{' --pad-missing' if pad_missing else ''}`"
        )
    if words["source"] == "?":
        lines.append("- Source Code Available: fill in ✓ or X (podium cannot tell for an agent folder of your own)")
    regraded = [f"{r.group}/{r.competition_id}/{r.seed}" for r in runs if r.regraded]
    if regraded:
        lines.append(f"- graded again at version 1 (their records hold a later version's grade): {', '.join(regraded)}")
    lines += ["", "The line for the table of `runs/README.md`:", ""]
    models = "" if words["models"].startswith("none") else f" ({words['models']})"
    lines += [f"| {export.experiment_id} | {export.agent}{models}, {words['hours']} hours, {hardware} |", ""]
    lines += [f"- {note}" for note in notes]
    return [*lines, ""]


def _leakage(runs: Sequence[PublishedRun]) -> dict[str, list[str]]:
    from podium.audit import known_leakage

    return {cid: facts for cid in sorted({r.competition_id for r in runs}) if (facts := known_leakage(cid, 1))}


def _place(staging: Path, out: Path) -> None:
    """Put the finished ``staging`` folder at ``out``: replacing a previous export, never other content."""
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: a file, not a folder; give a new or empty folder")
    if out.is_dir() and any(out.iterdir()):
        if not (out / EXPORT_FILE).is_file():
            raise UsageError(f"--out {out}: holds files that are not a podium export; give a new or empty folder")
        if not exchange_folders(staging, out):
            aside = out.with_name(f".{out.name}.old-{uuid.uuid4().hex[:8]}")
            out.rename(aside)
            staging.rename(out)
            staging = aside
        shutil.rmtree(staging, ignore_errors=True)
        return
    if out.is_dir():
        out.rmdir()
    staging.rename(out)


def export_mlebench(
    groups: Sequence[str],
    out: Path,
    *,
    experiment_id: str | None = None,
    pad_missing: bool = False,
    splits: Sequence[str] | None = None,
    data_dir: Path | None = None,
) -> dict[str, Any]:
    """Write the export of the run group folders ``groups`` into ``out`` (see the module docstring); returns
    the content of ``podium-export.json``."""
    from podium import __version__

    if experiment_id is not None and (not experiment_id or any(c in experiment_id for c in ',"\n\r\t /\\')):
        raise UsageError(
            f"--experiment-id {experiment_id!r}: an id is one word of the CSV (no comma, space, quote or slash), "
            "e.g. my-agent-gpt-4o"
        )
    by_agent = collect_runs(groups, data_dir=data_dir)
    every = [r for runs in by_agent.values() for r in runs]
    chosen = _splits(splits, {r.competition_id for r in every})
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.tmp-{uuid.uuid4().hex[:8]}")
    staging.mkdir()
    try:
        document = _write(staging, by_agent, chosen, experiment_id, pad_missing, groups, __version__)
        _place(staging, out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return document


def _write(
    root: Path,
    by_agent: dict[str, list[PublishedRun]],
    chosen: dict[str, list[str]],
    experiment_id: str | None,
    pad_missing: bool,
    groups: Sequence[str],
    version: str,
) -> dict[str, Any]:
    csv_lines = ["experiment_id,run_group"]
    markdown = ["# Leaderboard entry (podium export mlebench)", ""]
    agents: dict[str, Any] = {}
    slugs = [agent_slug(a) for a in by_agent]
    if len(set(slugs)) < len(slugs):
        raise UsageError(f"agents {sorted(by_agent)} share a folder name; export them one at a time")
    for agent, runs in by_agent.items():
        slug = agent_slug(agent)
        ident = experiment_id if experiment_id and len(by_agent) == 1 else f"{experiment_id or 'podium'}-{slug}"
        export = AgentExport(slug, ident)
        seeds = seed_folders(runs)
        for seed, moment in zip(seeds, _folder_times(seeds), strict=True):
            folder = f"{moment.strftime(_STAMP)}-UTC_run-group_{slug}"
            graded = max((_when(r.published.created_at) or moment for r in seed), default=moment)
            name = f"{graded.strftime(_STAMP)}-UTC_grading_report.json"
            write_atomic(root / "runs" / folder / name, json.dumps(published_report(seed), indent=2) + "\n", mode=0o644)
            export.folders.append(folder)
            csv_lines.append(f"{ident},{folder}")
        rows = [r.published_row() for r in runs]
        export.numbers = {key: _numbers(rows, ids, pad_missing, key) for key, ids in chosen.items()}
        markdown += _agent_markdown(export, runs, pad_missing)
        backed, statement = submission_statement([r.row for r in runs], groups)
        hardware, notes = hardware_words([r.record for r in runs])
        agents[agent] = {
            "experiment_id": ident,
            "run_groups": export.folders,
            "seeds": {
                folder: [f"{r.group}/{r.competition_id}/{r.seed}" for r in seed]
                for folder, seed in zip(export.folders, seeds, strict=True)
            },
            "runs": len(runs),
            "regraded": [f"{r.group}/{r.competition_id}/{r.seed}" for r in runs if r.regraded],
            "published": export.numbers,
            "hardware": hardware,
            "notes": notes,
            "integrity": {"backed": backed, "statement": statement},
        }
    every = [r for runs in by_agent.values() for r in runs]
    leakage = _leakage(every)
    markdown += ["## Known leakage in the published versions of the competitions run", ""]
    markdown += [f"- {cid}: {fact}" for cid, facts in leakage.items() for fact in facts] or ["- none recorded"]
    write_atomic(root / "runs" / "run_group_experiments.csv", "\n".join(csv_lines) + "\n", mode=0o644)
    for key, ids in chosen.items():
        write_atomic(root / "experiments" / "splits" / f"{key}.txt", "\n".join(ids) + "\n", mode=0o644)
    write_atomic(root / ".gitattributes", "\n".join(GITATTRIBUTES) + "\n", mode=0o644)
    write_atomic(root / "LEADERBOARD.md", "\n".join(markdown).rstrip("\n") + "\n", mode=0o644)
    write_atomic(root / "SUBMISSION.md", _submission_markdown(agents, leakage), mode=0o644)
    document = {
        "schema": "podium-export/1",
        "podium_version": version,
        "groups": [str(g) for g in groups],
        "pad_missing": pad_missing,
        "splits": chosen,
        "agents": agents,
        "known_leakage": leakage,
    }
    write_atomic(root / EXPORT_FILE, json.dumps(document, indent=2) + "\n", mode=0o644)
    return document


def _submission_markdown(agents: dict[str, Any], leakage: dict[str, list[str]]) -> str:
    backed = all(a["integrity"]["backed"] for a in agents.values())
    lines = ["## Leaderboard Submission Disclosure", "", f"- [{'x' if backed else ' '}] {PR_CHECKBOX}", ""]
    if not backed:
        lines += ["Not ticked: the audit does not back the statement for every run (below says which).", ""]
    lines += ["### What the records back (podium audit, integrity check of every run)", ""]
    for agent, data in agents.items():
        lines += [f"**{agent}** (experiment `{data['experiment_id']}`, {data['runs']} runs):", ""]
        lines += [f"- {line}" for line in data["integrity"]["statement"]] or ["- no audit found"]
        lines.append("")
    lines += ["### Known leakage in the published versions of the competitions run", ""]
    lines += [f"- {cid}: {fact}" for cid, facts in leakage.items() for fact in facts] or ["- none recorded"]
    return "\n".join(lines) + "\n"

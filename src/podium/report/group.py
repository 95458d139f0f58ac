"""The run group's report after ``podium run``: the published benchmark's table, as mean +- SEM over seeds.

For each agent and seed, each rate is the share of the run group's competitions (in %); the table
reports the mean of those per-seed rates and its standard error over seeds, by the published
aggregation's rules (:mod:`podium.report.aggregate`, which ``podium report`` uses over splits and groups).

Every report names the definitions it grades by: the published ones (version 1 of every
competition, comparable with the paper and the leaderboard) or later versions. Where a later
version corrects only the grading of the same data, each run was graded both ways, and the report
shows the corrected scores and rates beside the published ones.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.deadlines import RECORD_KEY, sources_text
from podium.paths import write_atomic
from podium.records import definitions, medal_of
from podium.untrusted import RECORD_MAX_BYTES, read_json

__all__ = ["RATES", "aggregate", "corrected_rows", "definitions", "write_group_report", "write_report"]

#: (column in the index, label in the table)
RATES = (
    ("submission_exists", "made submission"),
    ("valid_submission", "valid"),
    ("above_median", "above median"),
    ("bronze_medal", "bronze"),
    ("silver_medal", "silver"),
    ("gold_medal", "gold"),
    ("any_medal", "any medal"),
)


#: The published aggregation's metric key of each rate.
_PUBLISHED_KEYS = {
    "submission_exists": "submission_exists_percentage",
    "valid_submission": "valid_submissions_percentage",
    "above_median": "above_median_percentage",
    "bronze_medal": "bronze_medal_percentage",
    "silver_medal": "silver_medal_percentage",
    "gold_medal": "gold_medal_percentage",
    "any_medal": "any_medal_percentage",
}


def aggregate(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per agent: every rate as {mean, sem, ci_lower, ci_upper} in %, by the published aggregation's rules.

    The competitions are those the agent's rows cover; seed i is each competition's i-th run in seed
    order, and only seeds complete over all of them count (:mod:`podium.report.aggregate`); the SEM is
    0.0 with one seed, as the published script gives it.
    """
    from podium.report.aggregate import published

    by_agent: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in rows:
        by_agent[row["agent"]].append(row)
    out: dict[str, Any] = {}
    for agent, runs in sorted(by_agent.items()):
        runs.sort(key=lambda r: (r["competition_id"], r["seed"]))
        competitions = sorted({r["competition_id"] for r in runs})
        numbers = published(runs, competitions)
        rates = {}
        for column, label in RATES:
            metric = numbers["metrics"][_PUBLISHED_KEYS[column]]
            rates[label] = {
                "mean": metric["mean"],
                "sem": metric["standard_error"],
                "ci_lower": metric["ci_lower"],
                "ci_upper": metric["ci_upper"],
            }
        out[agent] = {
            "seeds": numbers["num_seeds_averaged"],
            "competitions": len(competitions),
            "runs": len(runs),
            "rates": rates,
        }
    return out


def _rate_text(rate: Mapping[str, float], seeds: int) -> str:
    return f"{rate['mean']:.1f}" if seeds < 2 else f"{rate['mean']:.1f} ± {rate['sem']:.1f}"


def corrected_rows(rows: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rows as the newest version that grades the same data scores them (unchanged where there is none)."""
    out = []
    for row in rows:
        newer = [v for v in row.get("other_versions") or () if v["competition_version"] > row["competition_version"]]
        out.append({**row, **max(newer, key=lambda v: v["competition_version"])} if newer else dict(row))
    return out


def _rates_table(summary: Mapping[str, Any]) -> list[str]:
    header = ["agent", "seeds", "competitions"] + [label for _, label in RATES]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for agent, data in summary.items():
        cells = [agent, str(data["seeds"]), str(data["competitions"])] + [
            _rate_text(data["rates"][label], data["seeds"]) for _, label in RATES
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _medal(row: Mapping[str, Any]) -> str:
    return medal_of(row) or "-"


def _score(value: float | None) -> str:
    return "-" if value is None else f"{value:.5g}"


def _markdown(
    group: str,
    rows: Sequence[Mapping[str, Any]],
    summary: Mapping[str, Any],
    leaderboards: Mapping[str, str],
    compute: Mapping[str, str],
    ended_after: Mapping[str, Any] | None = None,
) -> str:
    lines = [f"# Run group `{group}`", "", f"Graded by the {definitions(rows)}.", ""]
    if ended_after:
        lines += [_cutoff_sentence(ended_after), ""]
    lines += [
        "## Per agent (% of competitions; mean ± SEM over seeds)",
        "",
        "By the published MLE-bench aggregation: seed i is each competition's i-th run in seed order, and only "
        "seeds complete over every competition count. `podium report` gives the splits, missing runs padded and "
        "podium's own view.",
        "",
        *(f"Compute of {agent}'s runs: {profile}." for agent, profile in compute.items()),
        *([""] if compute else []),
        *_rates_table(summary),
    ]
    harness = sum(1 for r in rows if r.get("status", "finished") != "finished")
    if harness:
        lines += [
            "",
            f"{harness} run(s) failed because of the harness, not the agent (`harness failure` below): the published "
            "aggregation counts them as the agent's failures, as above; `podium report` leaves them out of podium's "
            "own view; the same `podium run` command runs them again.",
        ]
    corrected = corrected_rows(rows)
    changed = sorted(
        {f"{r['competition_id']}@{r['competition_version']}" for r in corrected}
        - {f"{r['competition_id']}@{r['competition_version']}" for r in rows}
    )
    if changed:
        lines += [
            "",
            f"Beside it, the same runs graded by the corrected metric of {', '.join(changed)} (same data, newer "
            "version; not comparable with the published leaderboard numbers):",
            "",
            *_rates_table(aggregate(corrected)),
        ]
    head = ["competition", "agent", "seed", "score", "medal"]
    if changed:
        head += ["corrected score", "corrected medal"]
    head += ["above median", "valid", "leaderboard"]
    lines += ["", "## Per run", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r, c in zip(rows, corrected, strict=True):
        cells = [f"{r['competition_id']}@{r['competition_version']}", r["agent"], str(r["seed"])]
        failed = r.get("status", "finished") != "finished"
        cells += ["harness failure" if failed else _score(r["score"]), _medal(r)]
        if changed:
            same = c["competition_version"] == r["competition_version"]
            cells += ["" if same else f"{_score(c['score'])} (v{c['competition_version']})", "" if same else _medal(c)]
        cells += ["yes" if r["above_median"] else "no", "yes" if r["valid_submission"] else "no"]
        cells.append(leaderboards.get(r["competition_id"], "none"))
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Leaderboards marked `reference` come from podium's reference solutions, not from Kaggle."]
    return "\n".join(lines) + "\n"


def _failures_markdown(failures: Sequence[Mapping[str, Any]]) -> list[str]:
    """Runs whose agent crashed, was stopped at a limit or left no valid submission: how, and its stderr's end."""
    if not failures:
        return []
    lines = ["", f"## Runs whose agent failed ({len(failures)})", ""]
    for f in failures:
        lines.append(
            f"- `{f['competition_id']}@{f['competition_version']}` seed {f['seed']}: the agent {f['ended']}; "
            f"submission: {f['submission']}; stderr: `{f['stderr_log']}`"
        )
        if f["stderr_tail"]:
            lines += ["", *(f"      {line}" for line in f["stderr_tail"][-5:]), ""]
    return lines


def write_report(
    folder: Path,
    group: str,
    rows: Sequence[Mapping[str, Any]],
    leaderboards: Mapping[str, str],
    failures: Sequence[Mapping[str, Any]] = (),
    compute: Mapping[str, str] | None = None,
    ended_after: Mapping[str, Any] | None = None,
) -> tuple[Path, Path]:
    """Write report.json and report.md for a run group; returns both paths.

    ``failures`` (from :func:`podium.run.outcome.agent_failures`) lists the runs whose agent crashed or made
    no valid submission, with how it ended and the last lines of its stderr; ``compute`` each agent's compute
    profile (:func:`podium.report.compute.label_compute`), stated above the table; ``ended_after`` the group's
    ``--ended-after`` selection (its ``group.json`` record), named in the header.
    """
    folder.mkdir(parents=True, exist_ok=True)
    summary = aggregate(rows)
    data = {
        "run_group": group,
        "definitions": definitions(rows),
        "agents": summary,
        "agents_corrected": aggregate(corrected_rows(rows)),
        "runs": [dict(r) for r in rows],
        "leaderboards": dict(leaderboards),
        "agent_failures": [dict(f) for f in failures],
        "compute": dict(compute or {}),
        "ended_after": dict(ended_after) if ended_after else None,
    }
    json_path, md_path = folder / "report.json", folder / "report.md"
    write_atomic(json_path, json.dumps(data, indent=2) + "\n")
    markdown = _markdown(group, rows, summary, leaderboards, compute or {}, ended_after)
    markdown += "\n".join(_failures_markdown(failures))
    write_atomic(md_path, markdown.rstrip("\n") + "\n")
    return json_path, md_path


def write_group_report(runs_dir: Path, group: str) -> tuple[Path, Path, list[dict[str, Any]]]:
    """Write the report of every run in ``runs_dir/group`` (from the index); (json, md, the index rows)."""
    from podium import registry
    from podium.run.outcome import agent_failures
    from podium.store import RunStore

    rows = RunStore(runs_dir).rows(group)
    boards = {}
    for row in rows:
        comp = registry.get(row["competition_id"], row["competition_version"])
        boards[comp.id] = comp.leaderboard.source if comp.leaderboard else "none"
    compute = _profiles(rows)
    json_path, md_path = write_report(
        runs_dir / group,
        group,
        rows,
        boards,
        failures=agent_failures(rows),
        compute=compute,
        ended_after=_selection(runs_dir / group),
    )
    return json_path, md_path, rows


def _selection(group_dir: Path) -> dict[str, Any] | None:
    """The group's ``--ended-after`` selection as its ``group.json`` records it, or None."""
    try:
        data = read_json(group_dir / "group.json", max_bytes=RECORD_MAX_BYTES, what="group.json")
    except (OSError, ValueError):
        return None
    record = data.get(RECORD_KEY) if isinstance(data, dict) else None
    return record if isinstance(record, dict) else None


def _cutoff_sentence(record: Mapping[str, Any]) -> str:
    deadlines = record.get("deadlines") or {}
    sources = sources_text(d.get("source") for d in deadlines.values() if isinstance(d, dict))
    return (
        f"Fresh split: the {len(record.get('competitions') or ())} competition(s) of {record.get('from')} whose "
        f"deadline is after {record.get('cutoff')} (`--ended-after`, a model's training cutoff; selected on "
        f"{str(record.get('selected_at'))[:10]}, recorded in group.json); deadlines: {sources}. Left out: "
        f"{record.get('ended_before')} that ended on or before it, {len(record.get('without_deadline') or ())} "
        "without a deadline."
    )


def _profiles(rows: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Each agent's compute profile, from its runs' records (the index does not keep it)."""
    from podium.report.compute import label_compute, run_compute

    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        try:
            record = read_json(row["record_path"], max_bytes=RECORD_MAX_BYTES, what="the record")
        except (OSError, ValueError, KeyError, TypeError):
            record = {}
        failed = row.get("status") != "finished"
        by_agent[row["agent"]].append(
            {**run_compute(record if isinstance(record, dict) else {}), "harness_failure": failed}
        )
    return {agent: label_compute(runs)["profile"] for agent, runs in sorted(by_agent.items())}

"""Aggregate runs into the published benchmark's table, as mean +- SEM over seeds.

For each agent and seed, each rate is the share of the run group's competitions (in %); the table
reports the mean of those per-seed rates and its standard error over seeds (none with one seed).
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["RATES", "aggregate", "write_report"]

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


def _mean_sem(values: list[float]) -> tuple[float, float | None]:
    mean = sum(values) / len(values)
    if len(values) < 2:
        return mean, None
    variance = sum((v - mean) ** 2 for v in values) / (len(values) - 1)
    return mean, math.sqrt(variance / len(values))


def aggregate(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Per agent: every rate as {mean, sem} in %, with the number of seeds and competitions."""
    by_agent_seed: dict[str, dict[int, list[Mapping[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        by_agent_seed[row["agent"]][row["seed"]].append(row)
    out: dict[str, Any] = {}
    for agent, seeds in sorted(by_agent_seed.items()):
        rates = {}
        for column, label in RATES:
            per_seed = [100.0 * sum(bool(r[column]) for r in runs) / len(runs) for runs in seeds.values()]
            mean, sem = _mean_sem(per_seed)
            rates[label] = {"mean": mean, "sem": sem}
        competitions = {r["competition_id"] for runs in seeds.values() for r in runs}
        out[agent] = {"seeds": len(seeds), "competitions": len(competitions), "rates": rates}
    return out


def _fmt(rate: Mapping[str, float | None]) -> str:
    mean, sem = rate["mean"], rate["sem"]
    assert mean is not None
    return f"{mean:.1f}" if sem is None else f"{mean:.1f} ± {sem:.1f}"


def _markdown(
    group: str, rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any], leaderboards: Mapping[str, str]
) -> str:
    lines = [f"# Run group `{group}`", "", "## Per agent (% of competitions; mean ± SEM over seeds)", ""]
    header = ["agent", "seeds", "competitions"] + [label for _, label in RATES]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for agent, data in summary.items():
        cells = [agent, str(data["seeds"]), str(data["competitions"])] + [
            _fmt(data["rates"][label]) for _, label in RATES
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Per run",
        "",
        "| competition | agent | seed | score | medal | above median | valid | leaderboard |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        medal = next((m for m in ("gold", "silver", "bronze") if r[f"{m}_medal"]), "-")
        score = "-" if r["score"] is None else f"{r['score']:.5g}"
        board = leaderboards.get(r["competition_id"], "none")
        lines.append(
            f"| {r['competition_id']}@{r['competition_version']} | {r['agent']} | {r['seed']} | {score} | {medal} | "
            f"{'yes' if r['above_median'] else 'no'} | {'yes' if r['valid_submission'] else 'no'} | {board} |"
        )
    lines += ["", "Leaderboards marked `reference` come from podium's reference solutions, not from Kaggle."]
    return "\n".join(lines) + "\n"


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(tmp, path)


def write_report(
    folder: Path, group: str, rows: Sequence[Mapping[str, Any]], leaderboards: Mapping[str, str]
) -> tuple[Path, Path]:
    """Write report.json and report.md for a run group; returns both paths."""
    folder.mkdir(parents=True, exist_ok=True)
    summary = aggregate(rows)
    data = {"run_group": group, "agents": summary, "runs": [dict(r) for r in rows], "leaderboards": dict(leaderboards)}
    json_path, md_path = folder / "report.json", folder / "report.md"
    _atomic_write(json_path, json.dumps(data, indent=2) + "\n")
    _atomic_write(md_path, _markdown(group, rows, summary, leaderboards))
    return json_path, md_path

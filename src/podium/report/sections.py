"""The report's sections beyond the published table, from a label's run rows (:mod:`podium.report.details`):
pass@k per split, the paired comparisons of labels, each competition's runs, and what the runs cost.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from podium.errors import UsageError
from podium.report.aggregate import names_text, runs_by_competition
from podium.report.stats import paired_comparison, pass_at_k

__all__ = [
    "COMPARED",
    "PASS_FLAGS",
    "RUN_KEYS",
    "any_medal",
    "comparison_pairs",
    "comparisons",
    "costs",
    "pass_at_k_blocks",
    "pass_at_k_curves",
    "per_competition",
]

#: The run flags pass@k is given for, with their words.
PASS_FLAGS = {"any_medal": "any medal", "above_median": "above median", "valid_submission": "valid"}
#: The per-run values a paired comparison compares, with their words (both in %).
COMPARED = {"any_medal": "any medal (% of runs)", "percentile": "leaderboard percentile (%)"}


def any_medal(run: Mapping[str, Any]) -> bool:
    """A medal of any colour, from the medal flags (as the published script counts it)."""
    return bool(run["gold_medal"] or run["silver_medal"] or run["bronze_medal"])


def _success(run: Mapping[str, Any], flag: str) -> bool:
    return any_medal(run) if flag == "any_medal" else bool(run[flag])


def pass_at_k_curves(
    runs: Sequence[Mapping[str, Any]], competition_ids: Sequence[str], *, pad_missing: bool = False
) -> dict[str, Any]:
    """pass@k (in %) for k = 1..K over the split's competitions, for each flag of :data:`PASS_FLAGS`.

    As the published table counts complete seeds, K is the fewest runs any competition of the split
    has, and a competition without runs makes the split fail; ``pad_missing`` instead takes K as the
    most runs any competition has and counts every missing run as a failure.
    """
    by_competition = runs_by_competition(runs, competition_ids)
    missing = [cid for cid in competition_ids if not by_competition[cid]]
    if missing and not pad_missing:
        return {"error": f"no run of {len(missing)} competition(s) ({names_text(missing, 5)}); pass --pad-missing"}
    sizes = [len(by_competition[cid]) for cid in competition_ids]
    top = max(sizes) if pad_missing else min(sizes)
    if top == 0:
        return {"error": "no runs of this split"}
    curves = {}
    for flag in PASS_FLAGS:
        counts: list[tuple[int, int]] = []
        for cid in competition_ids:
            attempts = by_competition[cid]
            n = max(len(attempts), top) if pad_missing else len(attempts)
            counts.append((n, sum(1 for run in attempts if _success(run, flag))))
        curves[flag] = [sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) * 100 for k in range(1, top + 1)]
    return {"k": list(range(1, top + 1)), "competitions": len(competition_ids), "curves": curves}


def _values(runs: Sequence[Mapping[str, Any]], what: str) -> dict[str, list[float]]:
    """competition -> its runs' values of ``what`` (:data:`COMPARED`), in %; a run without a percentile counts 0."""
    out: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.get("padded"):
            continue
        if what == "any_medal":
            out[run["competition_id"]].append(100.0 if any_medal(run) else 0.0)
        else:
            out[run["competition_id"]].append(100.0 * float(run.get("percentile") or 0.0))
    return out


def comparison_pairs(labels: Sequence[str], asked: Sequence[str]) -> list[tuple[str, str]]:
    """The pairs to compare: each ``A,B`` of ``--compare``, else every label against the first."""
    if not asked:
        return [(labels[0], other) for other in labels[1:]]
    pairs = []
    for text in asked:
        parts = [part.strip() for part in text.split(",")]
        unknown = [part for part in parts if part not in labels]
        if len(parts) != 2 or unknown or parts[0] == parts[1]:
            raise UsageError(
                f"--compare {text!r}: give two different labels as A,B; the labels are: {'; '.join(labels)}"
            )
        pairs.append((parts[0], parts[1]))
    return pairs


def comparisons(
    runs: Mapping[str, Sequence[Mapping[str, Any]]], pairs: Sequence[tuple[str, str]], *, seed: int = 0
) -> list[dict[str, Any]]:
    """For each (A, B): A minus B on the competitions both ran, for every value of :data:`COMPARED`."""
    out = []
    for a, b in pairs:
        results = {
            what: paired_comparison(_values(runs[a], what), _values(runs[b], what), seed=seed) for what in COMPARED
        }
        out.append({"a": a, "b": b, "competitions": results["any_medal"]["competitions"], "values": results})
    return out


#: What each run of a competition says in the report, in this order.
RUN_KEYS = (
    "seed",
    "score",
    "percentile",
    "rank",
    "n_teams",
    "medal",
    "above_median",
    "valid_submission",
    "runtime_s",
    "exit_code",
    "status",
    "failure",
    "failure_kind",
    "cost_usd",
    "run_dir",
    "audit",
    "audit_reasons",
)


def per_competition(runs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each competition the label ran: its metric and direction, and every run (seed order) with its
    score, placement, medal, runtime, exit status and failure (``failure_kind`` harness or agent)."""
    by_competition: dict[tuple[str, int], list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs:
        if not run.get("padded"):
            by_competition[(run["competition_id"], run["competition_version"])].append(run)
    out = []
    for (cid, version), rows in sorted(by_competition.items()):
        percentiles = [float(r["percentile"]) for r in rows if r.get("percentile") is not None]
        first = rows[0]
        out.append(
            {
                "competition_id": cid,
                "competition_version": version,
                "metric": first.get("metric"),
                "higher_is_better": first.get("higher_is_better"),
                "leaderboard": first.get("leaderboard"),
                "runs": [{key: r.get(key) for key in RUN_KEYS} for r in rows],
                "medals": sum(1 for r in rows if any_medal(r)),
                "mean_percentile": sum(percentiles) / len(percentiles) if percentiles else None,
                "harness_failures": sum(1 for r in rows if r.get("failure_kind") == "harness"),
                "agent_failures": sum(
                    1 for r in rows if r.get("failure_kind") == "agent" and not r["valid_submission"]
                ),
            }
        )
    return out


def _total(rows: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [float(r[key]) for r in rows if r.get(key) is not None]
    return sum(values) if values else None


def _per(value: float | None, count: int) -> float | None:
    return None if value is None or count == 0 else value / count


def costs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What the label's runs used: LLM calls, tokens and USD, GPU-hours and wall-clock hours, in total,
    per run and per medal (None where no run says, or no run won a medal)."""
    rows = [r for r in runs if not r.get("padded")]
    medals = sum(1 for r in rows if any_medal(r))
    usd = _total(rows, "cost_usd")
    gpu_hours = _total(rows, "gpu_hours")
    seconds = _total(rows, "runtime_s")
    hours = None if seconds is None else seconds / 3600
    return {
        "runs": len(rows),
        "medals": medals,
        "llm_calls": _total(rows, "llm_calls"),
        "input_tokens": _total(rows, "input_tokens"),
        "output_tokens": _total(rows, "output_tokens"),
        "cost_usd": usd,
        "priced_runs": sum(1 for r in rows if r.get("cost_usd") is not None),
        "gpu_hours": gpu_hours,
        "runtime_hours": hours,
        "cost_usd_per_run": _per(usd, len(rows)),
        "cost_usd_per_medal": _per(usd, medals),
        "gpu_hours_per_medal": _per(gpu_hours, medals),
        "runtime_hours_per_medal": _per(hours, medals),
    }


def pass_at_k_blocks(report: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(label, split key, its pass@k block) of every label's split that has curves and runs: what the
    tables and the figure of pass@k show."""
    for label, data in report["labels"].items():
        for key, cell in data["splits"].items():
            block = cell.get("pass_at_k") or {}
            if "curves" in block and cell["runs"]:
                yield label, key, block

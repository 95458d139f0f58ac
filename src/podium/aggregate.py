"""`podium report`: run groups aggregated exactly as the published MLE-bench script does, side by side.

Inputs (each PATH of ``podium report``):

- a podium run group folder ``RUNS/<group>/`` (``<competition>/<seed>/record.json``; the records
  are read, they are the truth; the SQLite index is not needed), labelled ``agent (group)``;
- a runs folder ``RUNS/`` (every group in it, each its own label);
- an MLE-bench grading-report JSON file (a ``competition_reports`` list, as ``podium grade`` and
  MLE-bench's ``grade`` write it), labelled by the file's stem;
- a folder of such files (its ``*grading_report*.json`` files, else every ``*.json``), labelled by
  the folder's name.

``--label NAME`` given once pools every PATH into one label; given once per PATH, it names each.
Inputs that share a label are pooled the way the published script pools the files passed to its
``--grading-reports``: in sorted path order.

The published rules (``experiments/aggregate_grading_reports.py`` of openai/mle-bench), reproduced:

- reports are read file by file in sorted path order; within a file, in competition-id order
  (a stable sort); seed *i* of a competition is its *i*-th report;
- only complete seeds count: the number of seeds is the smallest report count over the split's
  competitions, and a competition of the split with no report at all is an error;
  ``--pad-missing`` instead takes the largest count and fills missing reports with failures;
- ``--seeds N`` keeps the first N seeds (-1: all); asking for more than there are is an error;
- reports of competitions outside the split are ignored;
- each seed gives the percentage of the split's competitions with a submission, a valid one, a
  score above the median, gold, silver, bronze, and any medal (gold or silver or bronze);
- the result is the mean over seeds, the standard error of the mean (ddof 1; 0.0 with one seed),
  and the 95% interval mean +- 1.96 SEM.

Seed order in a podium run group: a competition's runs are its reports in ascending ``seed``
number, so the *i*-th report is the run with the *i*-th smallest seed number. A gap closes up: with
seeds 0 and 2 only, seed 2 is that competition's second report and is aligned with the other
competitions' seed 1 (exactly what the published script does with a grading report written from
those runs in seed order); the report lists such gaps in its notes.

podium's own view, beside the published numbers and never mixed into them: runs that failed because
of the harness (a record whose ``status`` is not ``"finished"``, or that has no ``agent_result``)
are counted apart from the agent's failures (a finished run without a valid submission) and left
out of each seed's denominator; the interval is Student's t with n-1 degrees of freedom (none
with one seed). In the published numbers such a run counts as the failure it looks like.

Where runs were also graded by a later version that changes only the metric (``other_versions``
in the grade), a second block gives the published rules' numbers on those corrected grades.

JSON (``--format json``), schema ``podium-report/1``::

    {
      "schema": "podium-report/1",
      "aggregation": "...",                      # the rules, in words
      "pad_missing": false, "seeds": -1,         # the options
      "splits": {SPLIT: {"title": "low (lite)", "competitions": 22}, ...},
      "labels": {
        LABEL: {
          "kind": "podium run group" | "grading report",
          "paths": [...], "runs": 66, "notes": ["..."],
          "splits": {
            SPLIT: {
              "runs": 66,                                # runs of the split's competitions read
              "definitions": "published definitions (version 1 of every competition, ...)",
              "published": {                     # the published script's JSON output, key for key
                "num_seeds_averaged": 3, "num_competitions_per_seed": 22,
                "metrics": {METRIC: {"mean", "ci_lower", "ci_upper", "standard_error"}, ...}
              } | {"error": "..."},
              "corrected": null | {"definitions": "...", "changed": ["id@2", ...],
                                   "num_seeds_averaged", "num_competitions_per_seed", "metrics"},
              "podium": null | {"num_seeds": 3, "runs": 66, "harness_failures": 1,
                                "agent_failures": 5, "padded": 0, "unused_runs": 0,
                                "metrics": {METRIC: {"mean", "standard_error", "t_lower", "t_upper"}}}
            }}}}
    }

METRIC is one of the published keys: ``total_competitions`` (published block only),
``submission_exists_percentage``, ``valid_submissions_percentage``, ``above_median_percentage``,
``gold_medal_percentage``, ``silver_medal_percentage``, ``bronze_medal_percentage``,
``any_medal_percentage``. SPLIT is ``low``, ``medium``, ``high``, ``split75`` (all 75), and
``dev`` or ``practice`` when some input ran them, or the one ``--split`` names.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from podium import competition as registry
from podium.errors import UsageError
from podium.report import corrected_rows, definitions

__all__ = [
    "FLAGS",
    "METRICS",
    "AggregationError",
    "build_report",
    "build_seeds",
    "load_inputs",
    "podium_view",
    "published",
    "published_numbers",
    "render",
    "t_quantile",
]

#: The run flags that the published aggregation reads.
FLAGS = ("submission_exists", "valid_submission", "above_median", "gold_medal", "silver_medal", "bronze_medal")

#: The published script's metric keys, in its order, with the words podium's tables use.
METRICS = {
    "total_competitions": "competitions",
    "submission_exists_percentage": "made submission",
    "valid_submissions_percentage": "valid",
    "above_median_percentage": "above median",
    "gold_medal_percentage": "gold",
    "silver_medal_percentage": "silver",
    "bronze_medal_percentage": "bronze",
    "any_medal_percentage": "any medal",
}
_RATE_KEYS = tuple(k for k in METRICS if k != "total_competitions")
_SHORT = {
    "submission_exists_percentage": "made sub.",
    "valid_submissions_percentage": "valid",
    "above_median_percentage": ">median",
    "gold_medal_percentage": "gold",
    "silver_medal_percentage": "silver",
    "bronze_medal_percentage": "bronze",
    "any_medal_percentage": "any medal",
}
_DEFAULT_SPLITS = ("low", "medium", "high", "split75")
_EXTRA_SPLITS = ("dev", "practice")
_TITLES = {"low": "low (lite)", "split75": "all (split75)"}
_WIDTH = 100
RULES = (
    "the published MLE-bench aggregation (experiments/aggregate_grading_reports.py): seed i of a competition is "
    "its i-th report; only complete seeds count unless --pad-missing; mean over seeds, SEM (ddof 1), "
    "95% interval mean +- 1.96 SEM"
)


class AggregationError(UsageError):
    """The published rules cannot aggregate these reports over this split (the message says why and the fix)."""


# --------------------------------------------------------------------------------------------------
# The published rules


def _zero_run(competition_id: str) -> dict[str, Any]:
    """A missing run, as --pad-missing counts it: every flag false."""
    return {
        "competition_id": competition_id,
        "competition_version": 1,
        **dict.fromkeys(FLAGS, False),
        "other_versions": [],
        "harness_failure": None,
        "padded": True,
    }


def _names(ids: Sequence[str], most: int | None = None) -> str:
    if most is None or len(ids) <= most:
        return ", ".join(ids)
    return f"{', '.join(ids[:most])} and {len(ids) - most} more"


def build_seeds(
    runs: Iterable[Mapping[str, Any]],
    competition_ids: Sequence[str],
    *,
    seeds: int = -1,
    pad_missing: bool = False,
    split: str = "the split",
) -> list[list[Mapping[str, Any]]]:
    """The seeds the published rules form: one run per competition of the split in each seed.

    ``runs`` are in reading order (see the module docstring); runs of competitions outside
    ``competition_ids`` are ignored. Raises :class:`AggregationError` where the published script
    raises.
    """
    if seeds == 0 or seeds < -1:
        raise AggregationError(f"--seeds {seeds}: pass a number of seeds of at least 1, or -1 for every seed")
    if not competition_ids:
        raise AggregationError(f"split {split} has no competitions")
    wanted = set(competition_ids)
    per_competition: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for run in runs:
        if run["competition_id"] in wanted:
            per_competition[run["competition_id"]].append(run)
    missing = [cid for cid in competition_ids if not per_competition[cid]]
    if missing and not pad_missing:
        raise AggregationError(
            f"split {split}: no report for {len(missing)} of its {len(competition_ids)} competitions "
            f"({_names(missing)}); pass --pad-missing to count missing runs as failures"
        )
    counts = [len(per_competition[cid]) for cid in competition_ids]
    available = max(counts) if pad_missing else min(counts)
    if available == 0:
        raise AggregationError(
            f"split {split}: no report for any of its {len(competition_ids)} competitions; choose a split "
            "that the runs cover, or leave this input out"
        )
    if seeds > available:
        kind = "seed(s), counting missing runs as failures" if pad_missing else "complete seed(s)"
        raise AggregationError(
            f"--seeds {seeds}: split {split} has only {available} {kind}; pass --seeds {available} or -1"
        )
    count = available if seeds == -1 else seeds
    out = []
    for index in range(count):
        out.append(
            [
                per_competition[cid][index] if index < len(per_competition[cid]) else _zero_run(cid)
                for cid in competition_ids
            ]
        )
    return out


def _seed_percentages(seed: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """One seed's percentages of its competitions, computed in the published script's order of operations."""
    total = len(seed)

    def share(flag: Any) -> float:
        return sum(1 for run in seed if flag(run)) / total * 100

    return {
        "total_competitions": float(total),
        "submission_exists_percentage": share(lambda r: r["submission_exists"]),
        "valid_submissions_percentage": share(lambda r: r["valid_submission"]),
        "above_median_percentage": share(lambda r: r["above_median"]),
        "gold_medal_percentage": share(lambda r: r["gold_medal"]),
        "silver_medal_percentage": share(lambda r: r["silver_medal"]),
        "bronze_medal_percentage": share(lambda r: r["bronze_medal"]),
        "any_medal_percentage": share(lambda r: r["gold_medal"] or r["silver_medal"] or r["bronze_medal"]),
    }


def _mean_sem(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the mean (ddof 1), as numpy and scipy.stats.sem compute them; SEM 0.0 for one value."""
    array = np.asarray(values, dtype=np.float64)
    mean = float(np.mean(array))
    sem = float(np.std(array, ddof=1) / len(values) ** 0.5) if len(values) > 1 else 0.0
    return mean, sem


def published(
    runs: Iterable[Mapping[str, Any]],
    competition_ids: Sequence[str],
    *,
    seeds: int = -1,
    pad_missing: bool = False,
    split: str = "the split",
) -> dict[str, Any]:
    """The published script's JSON output for these runs over this split."""
    built = build_seeds(runs, competition_ids, seeds=seeds, pad_missing=pad_missing, split=split)
    return published_numbers(built, len(competition_ids))


def published_numbers(built: Sequence[Sequence[Mapping[str, Any]]], competitions: int) -> dict[str, Any]:
    per_seed = [_seed_percentages(seed) for seed in built]
    metrics = {}
    for key in METRICS:
        mean, sem = _mean_sem([p[key] for p in per_seed])
        metrics[key] = {
            "mean": mean,
            "ci_lower": mean - 1.96 * sem,
            "ci_upper": mean + 1.96 * sem,
            "standard_error": sem,
        }
    return {"num_seeds_averaged": len(per_seed), "num_competitions_per_seed": competitions, "metrics": metrics}


# --------------------------------------------------------------------------------------------------
# podium's own view


def _t_coverage(t: float, df: int) -> float:
    """P(-t < T < t) for Student's t with integer ``df`` (Abramowitz & Stegun 26.7.3-4, finite sums)."""
    theta = math.atan(t / math.sqrt(df))
    c2 = math.cos(theta) ** 2
    total, term = 1.0, 1.0
    if df % 2:
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * c2
            total += term
        inner = math.sin(theta) * math.cos(theta) * total if df > 1 else 0.0
        return 2 / math.pi * (theta + inner)
    for k in range(1, df // 2):
        term *= (2 * k - 1) / (2 * k) * c2
        total += term
    return math.sin(theta) * total


def t_quantile(probability: float, df: int) -> float:
    """The ``probability`` quantile (above 0.5) of Student's t with ``df`` >= 1 degrees of freedom."""
    if df < 1 or not 0.5 < probability < 1:
        raise ValueError(f"t_quantile needs df >= 1 and 0.5 < probability < 1, got {df}, {probability}")
    coverage = 2 * probability - 1
    low, high = 0.0, 1.0
    while _t_coverage(high, df) < coverage:
        high *= 2
    for _ in range(200):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if _t_coverage(middle, df) < coverage:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def podium_view(built: Sequence[Sequence[Mapping[str, Any]]], unused_runs: int = 0) -> dict[str, Any] | None:
    """Rates over the same seeds without the harness's failures, with a t interval; None if no seed has a run left."""
    per_seed = []
    runs = harness = agent = padded = 0
    for seed in built:
        counted = [r for r in seed if not r.get("harness_failure")]
        real = [r for r in seed if not r.get("padded")]
        runs += len(real)
        padded += len(seed) - len(real)
        harness += len(seed) - len(counted)
        agent += sum(1 for r in real if not r.get("harness_failure") and not r["valid_submission"])
        if counted:
            per_seed.append(_seed_percentages(counted))
    if not per_seed:
        return None
    n = len(per_seed)
    factor = t_quantile(0.975, n - 1) if n > 1 else None
    metrics = {}
    for key in _RATE_KEYS:
        mean, sem = _mean_sem([p[key] for p in per_seed])
        metrics[key] = {
            "mean": mean,
            "standard_error": sem if n > 1 else None,
            "t_lower": mean - factor * sem if factor is not None else None,
            "t_upper": mean + factor * sem if factor is not None else None,
        }
    return {
        "num_seeds": n,
        "runs": runs,
        "harness_failures": harness,
        "agent_failures": agent,
        "padded": padded,
        "unused_runs": unused_runs,
        "metrics": metrics,
    }


# --------------------------------------------------------------------------------------------------
# Inputs


@dataclass
class _Source:
    """One unit the published script would read as one file: a grading report, or one agent's runs in a podium group."""

    path: str
    kind: str
    label: str
    runs: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@dataclass
class LabelInput:
    """Everything read under one label, in the published reading order."""

    label: str
    kind: str
    paths: list[str]
    runs: list[dict[str, Any]]
    notes: list[str]


def _flags(report: Mapping[str, Any]) -> dict[str, bool]:
    return {flag: bool(report.get(flag)) for flag in FLAGS}


def _grading_report(path: Path) -> _Source:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(
            f"{path}: not a readable JSON file ({exc}); give a grading report written by podium grade or MLE-bench"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("competition_reports"), list):
        raise UsageError(
            f"{path}: no competition_reports list, so not an MLE-bench grading report; give the grading report "
            "(podium grade / mlebench grade write one) or a podium run group folder"
        )
    runs = []
    for report in sorted(data["competition_reports"], key=lambda r: str(r["competition_id"])):
        runs.append(
            {
                "competition_id": str(report["competition_id"]),
                "competition_version": int(report.get("competition_version") or 1),
                **_flags(report),
                "other_versions": list(report.get("other_versions") or []),
                "harness_failure": None,
                "padded": False,
            }
        )
    return _Source(str(path), "grading report", path.stem, runs)


def harness_failure(record: Mapping[str, Any]) -> str | None:
    """Why a run record failed because of the harness, not the agent; None for a run the agent finished."""
    status = record.get("status")
    if status != "finished":
        detail = record.get("error") or (record.get("agent_result") or {}).get("error")
        text = f"status {status!r}" + (f": {str(detail).strip().splitlines()[0][:200]}" if detail else "")
        return text
    if record.get("agent_result") is None:
        return "no agent result (the agent never ran)"
    return None


def _record_files(group: Path) -> list[Path]:
    return sorted(
        p
        for p in group.glob("*/*/record.json")
        if not p.parent.name.startswith(".") and not p.parent.parent.name.startswith(".")
    )


def _podium_group(group: Path) -> list[_Source]:
    """One source per agent of a run group; each competition's runs in ascending seed number."""
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in _record_files(group):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise UsageError(f"{path}: unreadable run record ({exc}); move it away or rerun that run") from None
        grade = record.get("grade") or {}
        by_agent[str(record.get("agent", "?"))].append(
            {
                "competition_id": str(record["competition_id"]),
                "competition_version": int(record.get("competition_version") or grade.get("competition_version") or 1),
                **_flags(grade),
                "other_versions": list(grade.get("other_versions") or []),
                "harness_failure": harness_failure(record),
                "padded": False,
                "seed": int(record["seed"]),
                "run_group": str(record.get("run_group", group.name)),
            }
        )
    sources = []
    for agent, runs in sorted(by_agent.items()):
        runs.sort(key=lambda r: (r["competition_id"], r["seed"]))
        sources.append(_Source(str(group), "podium run group", f"{agent} ({group.name})", runs, _gap_notes(runs)))
    return sources


def _gap_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    seeds: dict[str, list[int]] = defaultdict(list)
    for run in runs:
        seeds[run["competition_id"]].append(run["seed"])
    gaps = [f"{cid} (seeds {', '.join(map(str, s))})" for cid, s in seeds.items() if s != list(range(len(s)))]
    if not gaps:
        return []
    return [f"seed numbers with gaps close up (the i-th smallest seed is the i-th report): {_names(gaps, 5)}"]


def _read_path(text: str) -> list[_Source]:
    path = Path(text)
    fix = "give a podium run group folder (RUNS/<group>), a runs folder, an MLE-bench grading-report JSON file or a folder of them"
    if not path.exists():
        raise UsageError(f"{text}: no such file or folder; {fix}")
    if path.is_file():
        return [_grading_report(path)]
    if _record_files(path):
        return _podium_group(path)
    groups = [g for g in sorted(path.iterdir()) if g.is_dir() and not g.name.startswith(".") and _record_files(g)]
    if groups:
        return [source for group in groups for source in _podium_group(group)]
    files = sorted(p for p in path.glob("*grading_report*.json") if p.is_file()) or sorted(
        p for p in path.glob("*.json") if p.is_file()
    )
    if not files:
        raise UsageError(f"{text}: holds no run records (<competition>/<seed>/record.json) and no JSON files; {fix}")
    sources = [_grading_report(p) for p in files]
    for source in sources:
        source.label = path.resolve().name
    return sources


def load_inputs(paths: Sequence[str], labels: Sequence[str] = ()) -> list[LabelInput]:
    """Read every PATH and pool the sources by label (see the module docstring)."""
    if not paths:
        raise UsageError("name at least one PATH: a podium run group folder or an MLE-bench grading report")
    if labels and len(labels) not in (1, len(paths)):
        raise UsageError(
            f"{len(labels)} --label value(s) for {len(paths)} PATH(s); give --label once (one label for all) "
            "or once per PATH, in the same order"
        )
    per_path = [_read_path(p) for p in paths]
    if labels:
        for index, sources in enumerate(per_path):
            for source in sources:
                source.label = labels[0] if len(labels) == 1 else labels[index]
    else:  # the same automatic label from two PATHs: name the PATH too
        owner: dict[str, int] = {}
        for index, sources in enumerate(per_path):
            for source in sources:
                first = owner.setdefault(source.label, index)
                if first != index:
                    source.label = f"{source.label} ({paths[index]})"
    pooled: dict[str, list[_Source]] = defaultdict(list)
    for sources in per_path:
        for source in sources:
            pooled[source.label].append(source)
    out = []
    for label, sources in pooled.items():
        sources.sort(key=lambda s: s.path)  # the published script reads sorted(paths)
        kinds = sorted({s.kind for s in sources})
        runs = [run for s in sources for run in s.runs]
        notes = [note for s in sources for note in s.notes]
        if not runs:
            notes.append("no runs")
        paths_read = list(dict.fromkeys(s.path for s in sources))
        out.append(LabelInput(label, " + ".join(kinds), paths_read, runs, notes))
    return out


# --------------------------------------------------------------------------------------------------
# The report


def _split_ids(name: str) -> tuple[str, list[str]]:
    """(key, competition ids) of a split name (``all`` is split75, the published benchmark) or a split file."""
    path = Path(name)
    if path.suffix == ".txt":
        if not path.is_file():
            raise UsageError(
                f"--split {name}: no such split file; give a split name (low, medium, high, all) or an existing file"
            )
        ids = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        return path.stem, ids
    key = {"all": "split75", "lite": "low"}.get(name, name)
    return key, registry.split_ids(key)


def build_report(
    inputs: Sequence[LabelInput], *, split: str | None = None, seeds: int = -1, pad_missing: bool = False
) -> dict[str, Any]:
    """The report's data (the JSON schema of the module docstring).

    With ``split`` named, a label that the published rules cannot aggregate over it is an error;
    without, such a cell carries the reason and the other splits are still given.
    """
    if seeds == 0 or seeds < -1:
        raise UsageError(f"--seeds {seeds}: pass a number of seeds of at least 1, or -1 for every seed")
    if split is not None:
        chosen = [_split_ids(split)]
    else:
        chosen = [(name, registry.split_ids(name)) for name in _DEFAULT_SPLITS]
        ran = {run["competition_id"] for item in inputs for run in item.runs}
        chosen += [(name, ids) for name in _EXTRA_SPLITS if ran & set(ids := registry.split_ids(name))]
    report: dict[str, Any] = {
        "schema": "podium-report/1",
        "aggregation": RULES,
        "pad_missing": pad_missing,
        "seeds": seeds,
        "splits": {key: {"title": _TITLES.get(key, key), "competitions": len(ids)} for key, ids in chosen},
        "labels": {},
    }
    for item in inputs:
        cells = {}
        for key, ids in chosen:
            cells[key] = _cell(item, key, ids, seeds=seeds, pad_missing=pad_missing, strict=split is not None)
        report["labels"][item.label] = {
            "kind": item.kind,
            "paths": item.paths,
            "runs": len(item.runs),
            "notes": item.notes,
            "splits": cells,
        }
    every = [(label, key, c) for label, v in report["labels"].items() for key, c in v["splits"].items()]
    if split is None and all("error" in c["published"] for _, _, c in every):
        # nothing to show: say why for the split the runs cover best (most runs, then the smallest split)
        label, _, cell = max(every, key=lambda x: (x[2]["runs"], -report["splits"][x[1]]["competitions"]))
        raise AggregationError(f"{label}: {cell['published']['error']}")
    return report


def _cell(
    item: LabelInput, key: str, ids: Sequence[str], *, seeds: int, pad_missing: bool, strict: bool
) -> dict[str, Any]:
    wanted = set(ids)
    in_split = [r for r in item.runs if r["competition_id"] in wanted]
    cell: dict[str, Any] = {
        "runs": len(in_split),
        "definitions": definitions(in_split),
        "published": None,
        "corrected": None,
        "podium": None,
    }
    title = _TITLES.get(key, key)
    try:
        built = build_seeds(item.runs, ids, seeds=seeds, pad_missing=pad_missing, split=title)
    except AggregationError as exc:
        if strict:
            raise AggregationError(f"{item.label}: {exc}") from None
        cell["published"] = {"error": str(exc)}
        return cell
    cell["published"] = published_numbers(built, len(ids))
    used = sum(1 for seed in built for r in seed if not r.get("padded"))
    cell["podium"] = podium_view(built, unused_runs=len(in_split) - used)
    corrected = corrected_rows(in_split)
    changed = sorted(
        {f"{c['competition_id']}@{c['competition_version']}" for c, r in zip(corrected, in_split, strict=True)
         if c["competition_version"] != r["competition_version"]}
    )  # fmt: skip
    if changed:
        rebuilt = build_seeds(corrected, ids, seeds=seeds, pad_missing=pad_missing, split=title)
        cell["corrected"] = {
            "definitions": definitions(corrected),
            "changed": changed,
            **published_numbers(rebuilt, len(ids)),
        }
    return cell


# --------------------------------------------------------------------------------------------------
# Rendering


def render(report: Mapping[str, Any], fmt: str) -> str:
    """The report as ``text`` (fits 100 columns), ``md`` or ``json``."""
    if fmt == "json":
        return json.dumps(report, indent=2) + "\n"
    if fmt == "md":
        return _markdown(report)
    if fmt == "text":
        return _text(report)
    raise UsageError(f"--format {fmt}: pass text, md or json")


def _pm(metric: Mapping[str, Any]) -> str:
    return f"{metric['mean']:.1f}±{metric['standard_error']:.1f}"


def _interval(low: float | None, high: float | None) -> str:
    return "-" if low is None or high is None else f"[{low:.1f}, {high:.1f}]"


def _definitions_lines(report: Mapping[str, Any], key: str, which: str, prefix: str, width: int = _WIDTH) -> list[str]:
    """The definitions the split's numbers were graded by: one line if the labels share them, else one per label."""
    per_label = {}
    for label, data in report["labels"].items():
        cell = data["splits"][key]
        block = cell["corrected"] if which == "corrected" else cell
        if block:
            per_label[label] = block["definitions"]
    if not per_label:
        return []
    if len(set(per_label.values())) == 1:
        return textwrap.wrap(f"{prefix}{next(iter(per_label.values()))}", width, subsequent_indent="  ")
    lines = [f"{prefix}per label:"]
    for label, words in per_label.items():
        lines += textwrap.wrap(f"{label}: {words}", width, initial_indent="  ", subsequent_indent="    ")
    return lines


def _text_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns padded to their widths; the first column left-aligned, the rest right-aligned.

    A first cell too long for 100 columns goes on its own line above its row.
    """
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(1, len(header))]
    rest = sum(w + 2 for w in widths)
    first = min(max(len(r[0]) for r in [header, *rows]), max(8, _WIDTH - rest))

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(first)] + [c.rjust(w) for c, w in zip(row[1:], widths, strict=True)]
        return "  ".join(cells).rstrip()

    out = [line(header)]
    for row in rows:
        if len(row[0]) > first:
            out.append(row[0])
            row = ["", *row[1:]]
        out.append(line(row))
    return out


def _text(report: Mapping[str, Any]) -> str:
    labels = report["labels"]
    options = "missing runs padded as failures" if report["pad_missing"] else "complete seeds only"
    seeds = "every seed" if report["seeds"] == -1 else f"the first {report['seeds']} seed(s)"
    lines = textwrap.wrap(
        f"podium report: {len(labels)} label(s), the published MLE-bench aggregation (seed i = each competition's "
        f"i-th report; {options}; {seeds}). Cells: % of the split's competitions, mean±SEM over seeds.",
        _WIDTH,
    )
    empty = []
    for key, split in report["splits"].items():
        cells = {label: data["splits"][key] for label, data in labels.items()}
        if len(report["splits"]) > 1 and all(not cell["runs"] for cell in cells.values()):
            empty.append(split["title"])
            continue
        lines += ["", f"== {split['title']}: {split['competitions']} competitions =="]
        lines += _definitions_lines(report, key, "published", "Published rules; definitions: ")
        lines += _published_text(cells, "published")
        if any(c["corrected"] for c in cells.values()):
            lines += [""]
            lines += _definitions_lines(
                report,
                key,
                "corrected",
                "Corrected (a later version changes only the metric; not comparable with the leaderboard): ",
            )
            lines += _published_text({k: c for k, c in cells.items() if c["corrected"]}, "corrected")
        lines += _headline_text(cells)
    if empty:
        lines += ["", *textwrap.wrap(f"No runs in split(s): {', '.join(empty)}.", _WIDTH)]
    notes = [(label, note) for label, data in labels.items() for note in data["notes"]]
    if notes:
        lines += ["", "Notes:"]
        for label, note in notes:
            lines += textwrap.wrap(f"{label}: {note}", _WIDTH, initial_indent="  ", subsequent_indent="    ")
    return "\n".join(lines) + "\n"


def _headline_text(cells: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Any medal with the published interval beside podium's view (failure counts, t interval)."""
    header = ["label", "any medal", "95% interval", "runs", "harness", "agent", "padded", "podium", "t interval"]
    rows = []
    for label, cell in cells.items():
        pub, own = cell["published"], cell["podium"]
        if "error" in pub:
            continue
        any_medal = pub["metrics"]["any_medal_percentage"]
        row = [label, f"{any_medal['mean']:.1f}", _interval(any_medal["ci_lower"], any_medal["ci_upper"])]
        if own is None:
            row += ["-"] * 6
        else:
            mine = own["metrics"]["any_medal_percentage"]
            row += [str(own["runs"]), str(own["harness_failures"]), str(own["agent_failures"]), str(own["padded"])]
            row += [f"{mine['mean']:.1f}", _interval(mine["t_lower"], mine["t_upper"])]
        rows.append(row)
    if not rows:
        return []
    intro = (
        "Any medal: the published 95% interval (mean ± 1.96 SEM); podium's view: runs, failures of the harness "
        "and of the agent, missing runs padded, and the rate without the harness's failures with a Student t "
        "interval (n-1 df):"
    )
    return ["", *textwrap.wrap(intro, _WIDTH), *_text_table(header, rows)]


def _published_text(cells: Mapping[str, Mapping[str, Any]], which: str) -> list[str]:
    header = ["label", "seeds", *(_SHORT[k] for k in _RATE_KEYS)]
    rows, errors = [], []
    for label, cell in cells.items():
        block = cell[which]
        if "error" in block:
            errors.append((label, block["error"] if cell["runs"] else "no runs of this split"))
            continue
        rows.append([label, str(block["num_seeds_averaged"]), *(_pm(block["metrics"][k]) for k in _RATE_KEYS)])
    lines = _text_table(header, rows) if rows else []
    for label, error in errors:  # at most three lines each here; --format json has the whole message
        wrapped = textwrap.wrap(f"{label}: not aggregated: {error}", _WIDTH, subsequent_indent="  ")
        lines += wrapped if len(wrapped) <= 3 else [*wrapped[:2], wrapped[2][: _WIDTH - 4] + " ..."]
    return lines


def _md_metric(metric: Mapping[str, Any], low: str, high: str) -> str:
    if metric.get("standard_error") is None:
        return f"{metric['mean']:.1f}"
    return f"{metric['mean']:.1f} ± {metric['standard_error']:.1f} {_interval(metric[low], metric[high])}"


def _markdown(report: Mapping[str, Any]) -> str:
    labels = report["labels"]
    options = "`--pad-missing` (missing runs count as failures)" if report["pad_missing"] else "complete seeds only"
    seeds = "every seed" if report["seeds"] == -1 else f"the first {report['seeds']} seed(s)"
    lines = [
        "# podium report",
        "",
        f"Numbers by {report['aggregation']}. Options: {options}; {seeds}.",
        "Cells: % of the split's competitions, mean ± SEM over seeds [95% interval].",
    ]
    rate_head = [METRICS[k] for k in _RATE_KEYS]
    for key, split in report["splits"].items():
        cells = {label: data["splits"][key] for label, data in labels.items()}
        lines += ["", f"## {split['title']}: {split['competitions']} competitions", ""]
        lines += _definitions_lines(report, key, "published", "Published rules; definitions: ", 10**6)
        lines += ["", _md_row(["label", "seeds", *rate_head]), _md_row(["---"] * (2 + len(rate_head)))]
        errors = []
        for label, cell in cells.items():
            pub = cell["published"]
            if "error" in pub:
                errors.append(f"- {label}: not aggregated: {pub['error']}")
                continue
            values = [_md_metric(pub["metrics"][k], "ci_lower", "ci_upper") for k in _RATE_KEYS]
            lines.append(_md_row([label, str(pub["num_seeds_averaged"]), *values]))
        if errors:
            lines += ["", *errors]
        corrected = {label: c["corrected"] for label, c in cells.items() if c["corrected"]}
        if corrected:
            lines += [
                "",
                *_definitions_lines(
                    report,
                    key,
                    "corrected",
                    "Corrected (a later version that changes only the metric; not comparable with the leaderboard): ",
                    10**6,
                ),
                "",
            ]
            lines += [_md_row(["label", "seeds", *rate_head]), _md_row(["---"] * (2 + len(rate_head)))]
            for label, block in corrected.items():
                values = [_md_metric(block["metrics"][k], "ci_lower", "ci_upper") for k in _RATE_KEYS]
                lines.append(_md_row([label, str(block["num_seeds_averaged"]), *values]))
        own = {label: c["podium"] for label, c in cells.items() if c["podium"]}
        if own:
            lines += [
                "",
                "podium's view: runs that failed because of the harness are left out of each seed's denominator; "
                "mean ± SEM [Student t 95% interval, n-1 df].",
                "",
            ]
            head = ["label", "seeds", "runs", "harness failures", "agent failures", "padded", *rate_head]
            lines += [_md_row(head), _md_row(["---"] * len(head))]
            for label, view in own.items():
                counts = [str(view[k]) for k in ("num_seeds", "runs", "harness_failures", "agent_failures", "padded")]
                values = [_md_metric(view["metrics"][k], "t_lower", "t_upper") for k in _RATE_KEYS]
                lines.append(_md_row([label, *counts, *values]))
    notes = [(label, note) for label, data in labels.items() for note in data["notes"]]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {label}: {note}" for label, note in notes]
    lines += ["", "## Inputs", ""]
    lines += [
        f"- {label} ({data['kind']}, {data['runs']} runs): {', '.join(data['paths'])}" for label, data in labels.items()
    ]
    return "\n".join(lines) + "\n"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

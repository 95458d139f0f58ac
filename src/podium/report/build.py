"""`podium report`'s data: every label's numbers on every split, in one JSON-ready document.

JSON (``--format json``), schema ``podium-report/2``::

    {
      "schema": "podium-report/3",
      "aggregation": "...",                      # the rules, in words
      "pad_missing": false, "seeds": -1,         # the options
      "splits": {SPLIT: {"title": "low (lite)", "competitions": 22}, ...},
      "compute": {"mixed_hardware": false, "profiles": {LABEL: "2 CPUs, 4 GiB, no GPU" | "unknown" | ...}},
      "labels": {
        LABEL: {
          "kind": "podium run group" | "grading report",
          "paths": [...], "runs": 66, "notes": ["..."],
          "compute": {"profile", "profiles": {PROFILE: runs}, "runs_with_compute",
                      "used": {"cpu_hours", "peak_memory_bytes", "gpu_hours", "wall_hours"}},
          "cost": {"runs", "medals", "llm_calls", "input_tokens", "output_tokens", "cost_usd",
                   "priced_runs", "gpu_hours", "runtime_hours", "cost_usd_per_run",
                   "cost_usd_per_medal", "gpu_hours_per_medal", "runtime_hours_per_medal"},
          "competitions": [{"competition_id", "competition_version", "metric", "higher_is_better",
                            "leaderboard", "medals", "mean_percentile", "harness_failures",
                            "agent_failures",
                            "runs": [{"seed", "score", "percentile", "rank", "n_teams", "medal",
                                      "above_median", "valid_submission", "runtime_s", "exit_code",
                                      "status", "failure", "failure_kind", "cost_usd", "run_dir"}]}],
          "splits": {
            SPLIT: {
              "runs": 66,                                # runs of the split's competitions read
              "pass_at_k": {"k": [1, 2, 3], "competitions": 22,
                            "curves": {"any_medal" | "above_median" | "valid_submission": [%, ...]}}
                           | {"error": "..."},
              "definitions": "published definitions (version 1 of every competition, ...)",
              "published": {                     # the published script's JSON output, key for key
                "num_seeds_averaged": 3, "num_competitions_per_seed": 22,
                "metrics": {METRIC: {"mean", "ci_lower", "ci_upper", "standard_error"}, ...}
              } | {"error": "..."},
              "corrected": null | {"definitions": "...", "changed": ["id@2", ...],
                                   "num_seeds_averaged", "num_competitions_per_seed", "metrics"},
              "podium": null | {"num_seeds": 3, "runs": 66, "harness_failures": 1,
                                "agent_failures": 5, "padded": 0, "unused_runs": 0,
                                "metrics": {METRIC: {"mean", "standard_error", "t_lower", "t_upper"}}
                                           | null (every run the harness's failure)},
              "readings": {                      # the three headline readings (podium.report.readings)
                "published": {"definitions", "not_version_1": ["id@2", ...],
                              "num_seeds_averaged", "num_competitions_per_seed", "metrics"} | {..., "error"},
                "corrected": {"definitions", "changed": ["id@2", ...],
                              "not_newest": [{"competition_id", "read_at", "newest", "reason", "fix"}],
                              "num_seeds_averaged", "num_competitions_per_seed", "metrics"} | {..., "error"},
                "without_leaks": {"definitions", "competitions": 21,
                                  "excluded": [{"competition_id", "reason"}],
                                  "num_seeds_averaged", "num_competitions_per_seed", "metrics"} | {..., "error"}}
            }}}},
      "versions": {COMPETITION: {"versions": [{"version", "data_version", "changes"}],
                                 "known_leakage": ["..."]}},   # every competition run or left out for a leak
      "comparisons": [{"a": LABEL, "b": LABEL, "competitions": 22,
                       "values": {"any_medal" | "percentile": {      # A minus B, in points of %
                          "competitions", "mean_a", "mean_b", "mean_difference",
                          "per_competition": [{"competition_id", "a", "b", "difference", "runs_a", "runs_b"}],
                          "bootstrap": {"confidence", "lower", "upper", "resamples", "seed"},
                          "sign_test": {"wins", "losses", "ties", "p"},
                          "permutation": {"p", "method"}}}}],
      "audit": null | {LABEL: {...}},         # medals before and after the audit (podium.report.audited)
      "time_scaling": null | {"hours": [1, 2, ...], "labels": {LABEL: {"runs", "runs_with_snapshots",
                       "points": [{"hours", "any_medal_percentage", "above_median_percentage",
                                   "valid_submissions_percentage", "mean_percentile"}]}}},
      "familiarity": null | {...},               # with --familiarity: podium.report.contamination
      "ended_after": null | {...}                # --ended-after or a group made with it: podium.report.cutoff
    }

``readings`` puts side by side the published reading (version 1), podium's corrected reading (the
newest version of every competition that grades the runs' data) and the published reading without
the split's competitions whose version-1 data has a known leak; ``compute`` the compute profile of each
label's runs (:mod:`podium.report.compute`); ``/3`` added ``readings``, ``versions`` and ``compute`` to
``/2``'s keys, which are unchanged. ``pass_at_k`` is the unbiased estimator over the split's competitions, ``comparisons`` the paired
comparisons of :mod:`podium.report.stats` (each label against the first unless ``--compare``
names the pairs), ``time_scaling`` the best-so-far snapshots graded hour by hour
(:mod:`podium.report.timescale`; only with ``--time-scaling``).

METRIC is one of the published keys: ``total_competitions`` (published block only),
``submission_exists_percentage``, ``valid_submissions_percentage``, ``above_median_percentage``,
``gold_medal_percentage``, ``silver_medal_percentage``, ``bronze_medal_percentage``,
``any_medal_percentage``. SPLIT is, without ``--split``, the competitions asked of the run groups
(``asked``, or ``asked-1``, ``asked-2``, ... for groups asked different ones; the split's name where
they are one), and where some input does not say what it was asked (a grading report, a group from
before group.json listed it) ``low``, ``medium``, ``high``, ``split75`` (all 75), and ``dev`` or
``practice`` when some input ran them; with ``--split``, the one it names.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from podium import registry
from podium.errors import UsageError
from podium.report.aggregate import RULES, AggregationError, build_seeds, podium_view, published_numbers
from podium.report.audited import audit_section
from podium.report.compute import check_profiles, label_compute
from podium.report.cutoff import Deadlines, cutoff_section, narrow, narrow_splits
from podium.report.group import corrected_rows, definitions
from podium.report.inputs import LabelInput
from podium.report.readings import leaky_competitions, readings, version_facts
from podium.report.sections import comparison_pairs, comparisons, costs, pass_at_k_curves, per_competition
from podium.report.training import sealed_training

__all__ = ["TITLES", "build_report"]

_DEFAULT_SPLITS = ("low", "medium", "high", "split75")
_EXTRA_SPLITS = ("dev", "practice")
#: How a split is called in tables.
TITLES = {"low": "low (lite)", "split75": "all (split75)"}


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


def _asked_splits(inputs: Sequence[LabelInput], titles: dict[str, str]) -> list[tuple[str, list[str]]]:
    """One split per set of competitions asked of the run groups (a named split where it is one), first seen first;
    ``titles`` gains the titles of those that are no named split."""
    named = {frozenset(registry.split_ids(name)): name for name in (*_DEFAULT_SPLITS, *_EXTRA_SPLITS)}
    sets: dict[frozenset[str], list[str]] = {}
    for item in inputs:
        if item.asked is not None:
            sets.setdefault(frozenset(item.asked), []).append(item.label)
    out = []
    unnamed = [ids for ids in sets if ids not in named]
    for ids, labels in sets.items():
        if ids in named:
            out.append((named[ids], sorted(ids)))
            continue
        key = "asked" if len(unnamed) == 1 else f"asked-{unnamed.index(ids) + 1}"
        whose = labels[0] + (f" and {len(labels) - 1} more" if len(labels) > 1 else "")
        titles[key] = "asked of the run group" if len(sets) == 1 else f"asked of {whose}"
        out.append((key, sorted(ids)))
    return out


def build_report(
    inputs: Sequence[LabelInput],
    *,
    split: str | None = None,
    seeds: int = -1,
    pad_missing: bool = False,
    compare: Sequence[str] = (),
    time_scaling: Path | None = None,
    hours: Sequence[float] | None = None,
    familiarity: Path | None = None,
    mixed_hardware: bool = False,
    training_roots: Sequence[Path] = (),
    ended_after: date | None = None,
) -> dict[str, Any]:
    """The report's data (the JSON schema of the module docstring).

    ``compare`` names the pairs to compare (``A,B``); ``time_scaling`` is the data dir to grade the
    runs' snapshots against (None: no time scaling), at ``hours`` (None: every hour of the limit);
    ``familiarity`` a `podium familiarity` file to set against each label's performance
    (:mod:`podium.report.contamination`); ``training_roots`` the runs folders searched for sealed training episodes
    of the labels' models (:mod:`podium.report.training`). Labels whose runs had different compute (or one label whose
    runs did) are refused with :class:`podium.report.compute.MixedHardwareError` unless ``mixed_hardware``.
    ``ended_after`` keeps only the runs of the competitions whose deadline is after it, and narrows every split to
    them (:mod:`podium.report.cutoff`).

    Without ``split``, the splits are the competitions asked of the run groups (:attr:`LabelInput.asked`),
    and the named splits where some input does not say what was asked of it (a grading report, an old group).
    With ``split`` named, a label that the published rules cannot aggregate over it is an error;
    without, such a cell carries the reason and the other splits are still given.
    """
    if seeds == 0 or seeds < -1:
        raise UsageError(f"--seeds {seeds}: pass a number of seeds of at least 1, or -1 for every seed")
    left_out, known = None, Deadlines()
    if ended_after is not None:
        inputs, left_out = narrow(inputs, ended_after, known)
    compute = {item.label: label_compute(item.runs) for item in inputs}
    check_profiles({label: block["profile"] for label, block in compute.items()}, mixed_hardware=mixed_hardware)
    familiar = None
    if familiarity is not None:  # read first: a wrong file is refused before any aggregation
        from podium.audit.familiarity import load_familiarity

        familiar = load_familiarity(familiarity)
    titles = dict(TITLES)
    if split is not None:
        chosen = [_split_ids(split)]
    else:
        chosen = _asked_splits(inputs, titles)
        if not chosen or any(item.asked is None for item in inputs):
            named = {key for key, _ in chosen}
            chosen += [(name, registry.split_ids(name)) for name in _DEFAULT_SPLITS if name not in named]
            ran = {run["competition_id"] for item in inputs for run in item.runs}
            chosen += [
                (name, ids)
                for name in _EXTRA_SPLITS
                if name not in named and ran & set(ids := registry.split_ids(name))
            ]
    if ended_after is not None:
        chosen = narrow_splits(chosen, ended_after, titles, known)
    report: dict[str, Any] = {
        "schema": "podium-report/3",
        "aggregation": RULES,
        "pad_missing": pad_missing,
        "seeds": seeds,
        "splits": {key: {"title": titles.get(key, key), "competitions": len(ids)} for key, ids in chosen},
        "labels": {},
    }
    report["compute"] = {
        "mixed_hardware": mixed_hardware,
        "profiles": {label: block["profile"] for label, block in compute.items()},
    }
    leaks: dict[str, list[str]] = {}
    for item in inputs:
        cells = {}
        for key, ids in chosen:
            cells[key] = _cell(item, key, ids, seeds=seeds, pad_missing=pad_missing, strict=split is not None)
            cells[key]["readings"] = readings(
                item.runs,
                ids,
                seeds=seeds,
                pad_missing=pad_missing,
                split=titles.get(key, key),
                leaks=leaky_competitions(ids, leaks),
            )
        report["labels"][item.label] = {
            "kind": item.kind,
            "paths": item.paths,
            "runs": len(item.runs),
            "notes": item.notes,
            "cost": costs(item.runs),
            "compute": compute[item.label],
            "competitions": per_competition(item.runs),
            "splits": cells,
        }
    every = [(label, key, c) for label, v in report["labels"].items() for key, c in v["splits"].items()]
    if split is None and all("error" in c["published"] for _, _, c in every):
        # nothing to show: say why for the split the runs cover best (most runs, then the smallest split)
        label, _, cell = max(every, key=lambda x: (x[2]["runs"], -report["splits"][x[1]]["competitions"]))
        raise AggregationError(f"{label}: {cell['published']['error']}")
    named = {run["competition_id"] for item in inputs for run in item.runs} | {c for c, facts in leaks.items() if facts}
    report["versions"] = version_facts(sorted(named), leaks)
    by_label = {item.label: item.runs for item in inputs}
    labels = list(by_label)
    report["comparisons"] = (
        comparisons(by_label, comparison_pairs(labels, compare)) if len(labels) > 1 or compare else []
    )
    report["audit"] = audit_section(by_label)
    report["sealed_training"] = sealed_training(by_label, training_roots)
    report["time_scaling"] = None
    if time_scaling is not None:
        from podium.report.timescale import time_scaling as graded_over_time

        report["time_scaling"] = graded_over_time(by_label, time_scaling, hours)
    report["familiarity"] = None
    if familiar is not None:
        from podium.report.contamination import familiarity_section

        pairs = [(c["a"], c["b"]) for c in report["comparisons"]]
        report["familiarity"] = familiarity_section(by_label, familiar, source=str(familiarity), pairs=pairs)
    report["ended_after"] = cutoff_section(inputs, ended_after, left_out, known)
    return report


def _cell(
    item: LabelInput, key: str, ids: Sequence[str], *, seeds: int, pad_missing: bool, strict: bool
) -> dict[str, Any]:
    wanted = set(ids)
    in_split = [r for r in item.runs if r["competition_id"] in wanted]
    cell: dict[str, Any] = {
        "runs": len(in_split),
        "pass_at_k": pass_at_k_curves(item.runs, ids, pad_missing=pad_missing),
        "definitions": definitions(in_split),
        "published": None,
        "corrected": None,
        "podium": None,
    }
    title = TITLES.get(key, key)
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

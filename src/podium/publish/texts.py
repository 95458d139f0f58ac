"""The words of a leaderboard pull request: the README's row, the hardware line of ``runs/README.md``,
the ``.gitattributes`` lines and ``SUBMISSION.md``'s integrity statement, each from the records.

Nothing here is typed in by hand: the numbers come from the published aggregation, the hardware
from what the records say each run had (its compute where the record carries one, else the caps
podium set), the integrity statement from each run's ``audit.json``. Where the records cannot back
a claim, the text says so instead of making it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "GITATTRIBUTES",
    "PAD_FOOTNOTE",
    "PR_CHECKBOX",
    "README_HEAD",
    "hardware_words",
    "leaderboard_cells",
    "submission_statement",
]

#: The leaderboard table's header in openai/mle-bench's README.
README_HEAD = (
    "| Agent | LLM(s) used | Low == Lite (%) | Medium (%) | High (%) | All (%) | Running Time (hours) | Date "
    "| Source Code Available | Grading Reports Available |"
)
#: The published splits in the README's column order, with their titles.
README_SPLITS = {"low": "Low == Lite (%)", "medium": "Medium (%)", "high": "High (%)", "split75": "All (%)"}
#: What the repository's ``.gitattributes`` asks of the files a pull request adds under ``runs/``.
GITATTRIBUTES = (
    "runs/**/*.json filter=lfs diff=lfs merge=lfs -text",
    "runs/**/*.jsonl filter=lfs diff=lfs merge=lfs -text",
)
#: The footnote of a row computed with missing runs counted as failures.
PAD_FOOTNOTE = (
    "Computed with `--pad-missing`: seeds missing a competition's run are padded with a failing report "
    "(no submission) instead of being dropped."
)
#: The pull request template's disclosure (openai/mle-bench, .github/PULL_REQUEST_TEMPLATE.md).
PR_CHECKBOX = (
    "The scaffold/harness used in this leaderboard submission does not expose to the agent feedback signals "
    "derived from the held-out test set during rollouts."
)


def _run_hardware(record: Mapping[str, Any]) -> tuple[str, bool]:
    """(the hardware a run had, in words; whether the record's compute backs it) for one record: its compute
    (:func:`podium.records.compute_profile`, and the CPU's model), else the caps podium set (its limits)."""
    from podium.records import compute_profile

    compute = record.get("compute")
    if isinstance(compute, dict) and (words := compute_profile(compute)):
        return words + (f", CPU {compute['cpu_model']}" if compute.get("cpu_model") else ""), True
    limits = record.get("limits") or {}
    caps = {"cpus": limits.get("cpus"), "memory_bytes": limits.get("memory_bytes"), "gpu_count": limits.get("gpus")}
    return compute_profile(caps) or "", False


def hardware_words(records: Sequence[Mapping[str, Any]]) -> tuple[str, list[str]]:
    """The hardware of a group of runs in words (each distinct profile with its count when they differ), and
    the notes on what the records could not say."""
    profiles: Counter[str] = Counter()
    unbacked = 0
    for record in records:
        words, backed = _run_hardware(record)
        profiles[words] += 1
        unbacked += not backed
    if len(profiles) == 1:
        text = next(iter(profiles))
    else:
        text = "; ".join(f"{words} ({count} runs)" for words, count in profiles.most_common())
    notes = []
    if unbacked:
        notes.append(
            f"{unbacked} of {len(records)} runs carry no compute record (CPU and GPU models, memory given): their "
            "hardware is the caps podium set (limits in record.json), not a measurement"
        )
    return text, notes


def _cell(numbers: Mapping[str, Any] | None) -> str:
    if numbers is None or "error" in numbers:
        return "-"
    metric = numbers["metrics"]["any_medal_percentage"]
    return f"{metric['mean']:.2f} ± {metric['standard_error']:.2f}"


def leaderboard_cells(
    agent: str,
    models: str,
    numbers: Mapping[str, Mapping[str, Any]],
    hours: str,
    date: str,
    source_code: str,
    padded: bool,
) -> str:
    """The README's row: any medal (%) as mean ± SEM per published split, the rest of the row's columns."""
    cells = [agent, models]
    for key in README_SPLITS:
        cell = _cell(numbers.get(key))
        cells.append(cell + "[^pad]" if padded and cell != "-" else cell)
    cells += [hours, date, source_code, "✓"]
    return "| " + " | ".join(cells) + " |"


def submission_statement(runs: Sequence[Mapping[str, Any]], groups: Sequence[str]) -> tuple[bool, list[str]]:
    """(whether every run's audit backs the disclosure, the statement's lines) from the runs' audit fields
    (:func:`podium.report.audited.audit_fields`: ``integrity_verdict`` and ``integrity``)."""
    from podium.report.audited import audit_section

    section = audit_section({"runs": list(runs)})
    verdicts = Counter(r.get("integrity_verdict") for r in runs)
    missing = [r for r in runs if r.get("integrity_verdict") is None]
    lines = []
    if section is not None:
        lines += list(section["runs"]["integrity"]["statement"])
    backed = not missing and verdicts["clean"] == len(runs)
    if missing:
        lines.append(
            f"{len(missing)} of {len(runs)} runs have no integrity audit: run `podium audit {' '.join(groups)} "
            "--data-dir DIR` and export again"
        )
    for verdict in ("flagged", "unclear"):
        named = [
            f"{r['run_group']}/{r['competition_id']}/{r['seed']}" for r in runs if r.get("integrity_verdict") == verdict
        ]
        if named:
            lines.append(
                f"integrity {verdict} on {len(named)} runs: {', '.join(named[:10])}{' ...' if len(named) > 10 else ''}"
            )
    return backed, lines

"""What `podium report` reads: podium run groups and MLE-bench grading reports, pooled by label.

Inputs (each PATH of ``podium report``):

- a podium run group folder ``RUNS/<group>/`` (``<competition>/<seed>/record.json``; the records
  are read, they are the truth; the SQLite index is not needed), labelled ``agent (group)``;
- a runs folder ``RUNS/`` (every group in it, each its own label);
- an MLE-bench grading-report JSON file (a ``competition_reports`` list, as ``podium grade`` and
  MLE-bench's ``grade`` write it), labelled by the file's stem;
- a folder of such files (its ``*grading_report*.json`` files, else every ``*.json``), labelled by
  the folder's name.

A run group's denominator is the competitions asked of it (``competitions`` in its ``group.json``,
written by ``podium run``): :attr:`LabelInput.asked`; a group made with ``--ended-after`` names its selection
(:attr:`LabelInput.ended_after`), which the report's header states. A group from before that list has none, and is
reported against the splits, as it was then (its notes say so).

``--label NAME`` given once pools every PATH into one label; given once per PATH, it names each.
Inputs that share a label are pooled the way the published script pools the files passed to its
``--grading-reports``: in sorted path order.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.records import RunRecord
from podium.report.aggregate import FLAGS, names_text
from podium.report.audited import audit_fields
from podium.report.details import LABEL_FIELDS, grading_report_details, label_of, record_details
from podium.untrusted import RECORD_MAX_BYTES, UntrustedJSONError, loads, printable, read_json

__all__ = ["LabelInput", "load_inputs"]


@dataclass
class _Source:
    """One unit the published script would read as one file: a grading report, or one agent's runs in a podium group."""

    path: str
    kind: str
    label: str
    runs: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    asked: list[str] | None = None
    ended_after: dict[str, Any] | None = None


@dataclass
class LabelInput:
    """Everything read under one label, in the published reading order.

    ``asked``: the competitions asked of the label's run groups (their union), or None when some input
    does not say (a grading report, a group from before group.json listed them). ``ended_after``: each of its
    run groups made with ``--ended-after`` by its path, with the selection its ``group.json`` records."""

    label: str
    kind: str
    paths: list[str]
    runs: list[dict[str, Any]]
    notes: list[str]
    asked: list[str] | None = None
    ended_after: dict[str, dict[str, Any]] = field(default_factory=dict)


def _flags(report: Mapping[str, Any]) -> dict[str, bool]:
    return {flag: bool(report.get(flag)) for flag in FLAGS}


def _grading_report(path: Path, cache: dict[tuple[str, int], Any]) -> _Source:
    try:
        data = loads(path.read_bytes(), max_bytes=RECORD_MAX_BYTES, what="the grading report")
    except (OSError, UntrustedJSONError) as exc:
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
                **grading_report_details(report, cache),
            }
        )
    return _Source(str(path), "grading report", path.stem, runs)


def _record_files(group: Path) -> list[Path]:
    """``<competition>/<seed>/record.json`` of every finished run (no staging folder), in path order."""
    found = []
    with os.scandir(group) as competitions:
        for competition in competitions:
            if competition.name.startswith(".") or not competition.is_dir():
                continue
            with os.scandir(competition.path) as seeds:
                for seed in seeds:
                    if not seed.name.startswith(".") and os.path.isfile(
                        record := os.path.join(seed.path, "record.json")
                    ):
                        found.append(record)
    return [Path(p) for p in sorted(found)]


def _podium_group(group: Path, cache: dict[tuple[str, int], Any]) -> list[_Source]:
    """One source per agent of a run group; each competition's runs in ascending seed number."""
    by_agent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for path in _record_files(group):
        try:
            data = read_json(path, max_bytes=RECORD_MAX_BYTES, what="the record")
            known = {k: v for k, v in data.items() if k != "grade"}  # the grade is read as written, below
            record = RunRecord.from_dict({"run_group": group.name, "agent": "?", "competition_version": 0, **known})
        except (OSError, UnicodeDecodeError, ValueError, TypeError, AttributeError) as exc:
            raise UsageError(f"{path}: unreadable run record ({exc}); move it away or rerun that run") from None
        grade = data.get("grade") or {}
        by_agent[str(record.agent)].append(
            {
                "competition_id": str(record.competition_id),
                "competition_version": int(record.competition_version or grade.get("competition_version") or 1),
                **_flags(grade),
                "other_versions": list(grade.get("other_versions") or []),
                "harness_failure": record.harness_failure(),
                "padded": False,
                **record_details(data, path, cache),
                **audit_fields(path.parent),
                "seed": int(record.seed),
                "run_group": str(record.run_group),
                "agent": str(record.agent),
            }
        )
    document = _group_document(group)
    asked = _asked(document)
    old = [] if asked is not None else [_NOT_ASKED.format(group=group)]
    selection = document.get("ended_after") if document else None
    selection = selection if isinstance(selection, dict) else None
    sources = []
    for agent, runs in sorted(by_agent.items()):
        runs.sort(key=lambda r: (r["competition_id"], r["seed"]))
        label = f"{agent} ({group.name})"
        notes = old + _gap_notes(runs) + _declared_notes(runs)
        sources.append(_Source(str(group), "podium run group", label, runs, notes, asked, selection))
    return sources


def _declared_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    """Which declarations outside podium graded the runs (a user's own, ``--competitions-dir``), by digest."""
    declared: dict[str, set[str]] = defaultdict(set)
    for run in runs:
        if run.get("declaration_source") == "user":
            declared[str(run["competition_id"])].add(str(run.get("declaration_sha256"))[:16])
    if not declared:
        return []
    named = ", ".join(f"{printable(cid, 100)} (sha256 {'/'.join(sorted(d))}...)" for cid, d in sorted(declared.items()))
    return [f"graded by declarations of the user's own, not podium's: {named}"]


_NOT_ASKED = (
    "{group}/group.json does not list the competitions asked of the group (it was run before podium recorded "
    "them), so it is reported against the splits, as before; --split FILE (one id a line) names its denominator"
)


def _group_document(group: Path) -> dict[str, Any] | None:
    """A run group's ``group.json``, or None where it has none that reads."""
    try:
        with (group / "group.json").open("rb") as file:
            data = loads(file.read(_GROUP_JSON_BYTES + 1), max_bytes=_GROUP_JSON_BYTES, what="group.json")
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _asked(data: dict[str, Any] | None) -> list[str] | None:
    """The competitions asked of a run group (group.json's ``competitions``), or None where it does not list them."""
    listed = data.get("competitions") if isinstance(data, dict) else None
    if not isinstance(listed, list) or not listed or not all(isinstance(c, str) for c in listed):
        return None
    return sorted(set(listed))


_GROUP_JSON_BYTES = 4_000_000  # far above the list of every competition; a larger file is not podium's


def _gap_notes(runs: Sequence[Mapping[str, Any]]) -> list[str]:
    seeds: dict[str, list[int]] = defaultdict(list)
    for run in runs:
        seeds[run["competition_id"]].append(run["seed"])
    gaps = [f"{cid} (seeds {', '.join(map(str, s))})" for cid, s in seeds.items() if s != list(range(len(s)))]
    if not gaps:
        return []
    return [f"seed numbers with gaps close up (the i-th smallest seed is the i-th report): {names_text(gaps, 5)}"]


def _read_path(text: str, cache: dict[tuple[str, int], Any]) -> list[_Source]:
    path = Path(text)
    fix = "give a podium run group folder (RUNS/<group>), a runs folder, an MLE-bench grading-report JSON file or a folder of them"
    if not path.exists():
        raise UsageError(f"{text}: no such file or folder; {fix}")
    if path.is_file():
        return [_grading_report(path, cache)]
    if _record_files(path):
        return _podium_group(path, cache)
    groups = [g for g in sorted(path.iterdir()) if g.is_dir() and not g.name.startswith(".") and _record_files(g)]
    if groups:
        return [source for group in groups for source in _podium_group(group, cache)]
    if (path / "group.json").is_file():  # a run group none of whose runs has finished (yet)
        raise UsageError(
            f"{text}: run group {printable(path.resolve().name)} has no finished run yet (no "
            "<competition>/<seed>/record.json); report it once a run has finished (podium run --run-group resumes it)"
        )
    files = sorted(p for p in path.glob("*grading_report*.json") if p.is_file()) or sorted(
        p for p in path.glob("*.json") if p.is_file()
    )
    if not files:
        raise UsageError(f"{text}: holds no run records (<competition>/<seed>/record.json) and no JSON files; {fix}")
    sources = [_grading_report(p, cache) for p in files]
    for source in sources:
        source.label = path.resolve().name
    return sources


def _split_by(sources: Sequence[_Source], by: tuple[str, ...]) -> list[_Source]:
    """Each source cut into one per label that ``by`` gives its runs (a run group's runs share their settings,
    so a group usually stays whole)."""
    out = []
    for source in sources:
        parts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for run in source.runs:
            parts[label_of(run, by)].append(run)
        for label, runs in parts.items():
            gaps = _gap_notes(runs) if runs[0].get("seed") is not None else []
            out.append(_Source(source.path, source.kind, label, runs, gaps, source.asked, source.ended_after))
    return out


def load_inputs(paths: Sequence[str], labels: Sequence[str] = (), by: Sequence[str] = ()) -> list[LabelInput]:
    """Read every PATH and pool the sources by label (see the module docstring).

    ``by`` (fields of :data:`podium.report.details.LABEL_FIELDS`) labels every run by those of its
    settings instead: runs of any PATH with the same values are pooled under one label.
    """
    if not paths:
        raise UsageError("name at least one PATH: a podium run group folder or an MLE-bench grading report")
    if labels and len(labels) not in (1, len(paths)):
        raise UsageError(
            f"{len(labels)} --label value(s) for {len(paths)} PATH(s); give --label once (one label for all) "
            "or once per PATH, in the same order"
        )
    unknown = [field for field in by if field not in LABEL_FIELDS]
    if unknown:
        raise UsageError(f"--by {','.join(by)}: unknown field(s) {unknown}; use some of {', '.join(LABEL_FIELDS)}")
    if labels and by:
        raise UsageError("--label and --by both name the labels; give one of them")
    cache: dict[tuple[str, int], Any] = {}
    per_path = [_read_path(p, cache) for p in paths]
    if by:
        per_path = [_split_by(sources, tuple(by)) for sources in per_path]
    elif labels:
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
        asked = None if any(s.asked is None for s in sources) else sorted({c for s in sources for c in s.asked or ()})
        notes = list(dict.fromkeys(notes))  # a group split by --by says its note once
        selections = {s.path: s.ended_after for s in sources if s.ended_after is not None}
        out.append(LabelInput(label, " + ".join(kinds), paths_read, runs, notes, asked, selections))
    return out

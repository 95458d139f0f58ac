"""Training on the test set, made visible: sealed training episodes of the model a report evaluates.

A gym episode with ``task="sealed"`` on one of the benchmark's competitions was graded against that
competition's private answers (``record.json``'s ``gym.sealed_test_touched``), so a policy trained on it has
seen a signal of the very test set the benchmark grades. :func:`sealed_training` finds such episodes in the
runs folders that hold the report's run groups (and in ``--training-runs DIR``), and names, per label, the
competitions of the evaluation on which episodes of the same model were sealed: the report prints them with
its integrity statement, so an evaluation after such training is never silently clean.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from podium.untrusted import loads_object, printable, read_bounded

__all__ = ["sealed_training", "sealed_training_lines", "training_roots"]

_MAX_RECORD = 16 << 20
_DEPTH = 3  # RUNS/<group>/<competition>/<seed>


def training_roots(paths: Sequence[str], extra: Sequence[str] = ()) -> list[Path]:
    """The runs folders to search: each report PATH that is a run group's folder gives its runs folder (its
    parent); a runs folder gives itself; ``extra`` (``--training-runs``) is searched as given."""
    roots: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            continue  # a grading report file: no runs folder beside it to search
        roots.append(path.parent if (path / "group.json").is_file() or _has_runs(path) else path)
    roots += [Path(p) for p in extra]
    return sorted({r.resolve() for r in roots})


def _has_runs(folder: Path) -> bool:
    """Whether ``folder`` looks like one run group (``<competition>/<seed>/record.json`` below it)."""
    for competition in _subfolders(folder):
        for seed in _subfolders(competition):
            if (seed / "record.json").is_file():
                return True
    return False


def _subfolders(folder: Path) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(".") and entry.is_dir(follow_symlinks=False):
            yield Path(entry.path)


def _records(root: Path, depth: int = _DEPTH) -> Iterator[dict[str, Any]]:
    data = read_bounded(root / "record.json", _MAX_RECORD, single_link=True)
    if data is not None:
        try:
            record = loads_object(data, max_bytes=_MAX_RECORD, what="record.json")
        except ValueError:
            return
        yield record
        return
    if depth > 0:
        for child in _subfolders(root):
            yield from _records(child, depth - 1)


def _sealed(roots: Iterable[Path]) -> list[tuple[str, str, str]]:
    """(model, competition, where) of every sealed training episode under ``roots``."""
    found = []
    for root in roots:
        for record in _records(root, _DEPTH + 1):
            gym = record.get("gym")
            if not isinstance(gym, dict) or gym.get("sealed_test_touched") is not True:
                continue
            model = gym.get("model") if isinstance(gym.get("model"), str) else None
            competition = record.get("competition_id")
            if isinstance(competition, str):
                found.append((model or "", competition, str(root)))
    return found


def sealed_training(
    runs_by_label: Mapping[str, Sequence[Mapping[str, Any]]], roots: Sequence[Path]
) -> dict[str, dict[str, Any]]:
    """Per label, the competitions it was evaluated on where the searched folders hold sealed training episodes of
    one of its models (``{"models": [...], "competitions": {id: episodes}, "searched": [...]}``), and apart the
    episodes of other or unnamed policies on the same competitions (``other_policies``). Labels with neither
    are left out. Gym episodes themselves are not an evaluation and are not counted against their own label."""
    episodes = _sealed(roots)
    if not episodes:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for label, runs in runs_by_label.items():
        evaluated = [r for r in runs if not r.get("gym")]  # the episodes themselves are no evaluation
        models = {m.strip() for r in evaluated for m in str(r.get("model") or "").split(",") if m.strip()}
        competitions = {str(r.get("competition_id")) for r in evaluated}
        same = Counter(c for m, c, _ in episodes if m and m in models and c in competitions)
        other = Counter(c for m, c, _ in episodes if not (m and m in models) and c in competitions)
        if same or other:
            out[label] = {
                "models": sorted(models),
                "competitions": dict(sorted(same.items())),
                "other_policies": dict(sorted(other.items())),
                "searched": sorted({w for _, c, w in episodes if c in competitions}),
            }
    return out


def sealed_training_lines(report: Mapping[str, Any], *, markdown: bool = False) -> list[str]:
    """The report's lines on sealed training episodes (none when there are none)."""
    block = report.get("sealed_training") or {}
    if not block:
        return []
    title = "Test-signal integrity: sealed training episodes on the competitions evaluated"
    lines = ["", f"## {title}", ""] if markdown else ["", f"== {title} =="]
    bullet = "- " if markdown else "  "
    for label, found in block.items():
        where = ", ".join(printable(w) for w in found["searched"])
        if found["competitions"]:
            named = ", ".join(f"{printable(c)} ({n})" for c, n in found["competitions"].items())
            models = ", ".join(printable(m) for m in found["models"])
            lines.append(
                f"{bullet}{printable(label)}: model {models} was trained with sealed episodes (graded on the private "
                f"answers) of {named}; its results on these competitions are not a clean evaluation (found in {where})"
            )
        if found["other_policies"]:
            named = ", ".join(f"{printable(c)} ({n})" for c, n in found["other_policies"].items())
            lines.append(
                f"{bullet}{printable(label)}: sealed episodes of other or unnamed policies on {named} ({where})"
            )
    return lines

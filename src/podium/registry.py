"""The registry of competitions: ``competition.yaml`` read into a ``Competition`` at a version, ids,
named splits.

Loading one competition parses only its own folder (and its ``leaderboard.json``), so grading a
single competition stays cheap; declarations are read once per process.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import re
from collections.abc import Mapping
from datetime import date, datetime
from functools import cache
from pathlib import Path
from typing import Any

from podium import declarations, schema
from podium.competition import (
    COLUMN_KINDS,
    COMPETITIONS_DIR,
    DEADLINE_SOURCES,
    PUBLISHED_VERSION,
    Column,
    Competition,
    MetricSpec,
)
from podium.errors import RegistryError, UnknownCompetitionError, UnknownVersionError, UsageError
from podium.leaderboard import Leaderboard
from podium.metrics import METRICS
from podium.yaml_cache import load_yaml

__all__ = ["COMPETITIONS_DIR", "SPLITS", "get", "ids", "load_all", "split_ids"]

#: The named splits (``splits.yaml``, plus ``lite`` = ``low``, ``user``: the competitions of the user's own folders,
#: and ``all``: podium's and the user's).
SPLITS = ("low", "lite", "medium", "high", "split75", "dev", "systemcard", "practice", "user", "all")


class _NotYAML(Exception):
    """A file that YAML cannot read (the reason, on one line)."""


def _yaml_text(text: str) -> Any:
    """``text`` read as YAML, with its fastest safe loader; yaml is imported here, where a declaration is parsed,
    not by ``podium --help`` (:mod:`podium.yaml_cache` keeps what it gives)."""
    import yaml

    try:
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        raise _NotYAML(" ".join(str(exc).split())[:300]) from None


def _columns(raw: Mapping[str, Any] | None, where: str) -> tuple[Column, ...]:
    cols = []
    for name, spec in (raw or {}).items():
        spec = {"kind": spec} if isinstance(spec, str) else dict(spec)
        kind = spec.pop("kind", None)
        if kind not in COLUMN_KINDS:
            raise RegistryError(f"{where}: column {name!r} has kind {kind!r}; use one of {sorted(COLUMN_KINDS)}")
        cols.append(Column(str(name), kind, spec))
    return tuple(cols)


def _class_columns(raw: Mapping[str, Any] | None, where: str) -> tuple[Column, ...]:
    """Expand ``class_columns: {names: [...], kind: ..., <options>}`` into one column per class."""
    if not raw:
        return ()
    spec = dict(raw)
    names = spec.pop("names")
    return _columns({name: dict(spec) for name in names}, where)


def _merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _folder(competition_id: str) -> Path:
    folder = declarations.folders().get(competition_id)
    if folder is None:
        raise UnknownCompetitionError(competition_id, _suggest(competition_id))
    return folder


def _read_declaration(competition_id: str) -> dict[str, Any]:
    folder = _folder(competition_id)
    path = folder / "competition.yaml"
    return _parse(path, path.stat().st_mtime_ns, competition_id)


@cache
def _parse(path: Path, mtime_ns: int, competition_id: str) -> dict[str, Any]:
    """``competition.yaml`` at ``path`` as it is on disk (``mtime_ns`` keys the cache: an edit is read anew)."""
    try:
        data = load_yaml(path, _yaml_text)
    except _NotYAML as exc:
        raise RegistryError(f"{path}: not YAML ({exc})") from None
    except ValueError as exc:  # YAML reads 2021-02-30 as a date, and the calendar refuses it
        raise RegistryError(
            f"{path}: a date in it is not a day of the calendar ({exc}). Fix: write it as YYYY-MM-DD "
            "(deadline: 2021-11-03)"
        ) from None
    if not isinstance(data, dict) or data.get("id") != competition_id:
        raise RegistryError(f"{path}: the declaration must be a mapping whose id is {competition_id!r}")
    schema.check_fields(data, str(path))
    left = declarations.todos(data)
    if left:
        raise RegistryError(
            f"{path}: {len(left)} TODO(s) left to decide: {'; '.join(left)}. Fix: write each value and remove its "
            "TODO (docs/declaring.md, 'Adding a competition')"
        )
    return data


def _read_leaderboard(folder: Path, higher_is_better: bool) -> Leaderboard | None:
    path = folder / "leaderboard.json"
    if not path.exists():
        return None
    board = Leaderboard.from_dict(json.loads(path.read_text(encoding="utf-8")))
    if board.higher_is_better != higher_is_better:
        raise RegistryError(f"{path}: direction disagrees with competition.yaml; regenerate it")
    return board


_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _deadline(data: Mapping[str, Any], board: Leaderboard | None, where: str) -> tuple[date | None, str | None]:
    """(deadline, its source): the declaration's ``deadline:`` (``null``: it has none, e.g. a leaderboard that never
    closes) with its ``deadline_source``, else the leaderboard's last submission, else none."""
    source = data.get("deadline_source")
    if "deadline" not in data:
        if source is not None:
            raise RegistryError(f"{where}: deadline_source {source!r} names the source of no deadline; add deadline:")
        if board is None or board.last_submission is None:
            return None, None
        try:
            return datetime.fromisoformat(board.last_submission).date(), DEADLINE_SOURCES[2]
        except ValueError:
            raise RegistryError(
                f"{where}: leaderboard.json's last_submission {board.last_submission!r} is not a date; regenerate it"
            ) from None
    source = "declared" if source is None else source
    if source not in DEADLINE_SOURCES[:2]:
        raise RegistryError(
            f"{where}: deadline_source must be kaggle (Kaggle's metadata) or declared (your own word), got {source!r}"
        )
    value = data["deadline"]
    if value is None:
        return None, source
    if isinstance(value, str) and _DAY.fullmatch(value.strip()):
        with contextlib.suppress(ValueError):  # 2021-02-30: said below, as any other value that is not a day
            value = date.fromisoformat(value.strip())
    if type(value) is not date:  # a datetime is a date too, but a deadline is a day
        raise RegistryError(
            f"{where}: deadline {str(value)[:40]!r} is not a day. Fix: write it as YYYY-MM-DD (deadline: 2021-11-03), "
            "or null for a competition that never closed"
        )
    return value, source


#: The values the grading settings that name a mode accept (docs/declaring.md, "Pairing as published").
_CHOICES = {
    ("matching", "pairing"): ("key", "sorted", "sorted_index", "position", "subset"),
    ("matching", "columns"): ("name", "position"),
    ("matching", "no_rows"): ("graded", "invalid"),
    ("where", "submission_rows"): ("paired", "file_position", "id"),
}


def _check_choices(merged: Mapping[str, Any], where: str, version: int) -> None:
    sections = {"matching": merged.get("matching") or {}, "where": merged["metric"].get("where") or {}}
    for (section, key), allowed in _CHOICES.items():
        value = sections[section].get(key, allowed[0])
        if value not in allowed:
            raise RegistryError(
                f"{where}: version {version}: {section}.{key} must be one of {', '.join(allowed)}, got {value!r}"
            )


def _build(data: Mapping[str, Any], version: int | None) -> Competition:
    cid = data["id"]
    folder = _folder(cid)
    where = (
        f"competitions/{cid}/competition.yaml"
        if folder.parent == COMPETITIONS_DIR
        else str(folder / "competition.yaml")
    )
    versions_raw: Mapping[int, Any] = data.get("versions") or {}
    versions = tuple(sorted({1, *map(int, versions_raw)}))
    chosen = versions[-1] if version is None else version
    if chosen not in versions:
        raise UnknownVersionError(
            f"{cid} has no version {chosen}. Versions: {', '.join(map(str, versions))} "
            f"(1 is the published definition). Fix: write {cid}@{versions[0]} or pass --latest."
        )
    merged: dict[str, Any] = dict(data)
    changes = ""
    data_versions = {1: 1}
    for v in versions[1:]:
        block = dict(versions_raw[v])
        same_data = block.pop("same_data", False)
        if not isinstance(same_data, bool):
            raise RegistryError(f"{where}: version {v}: same_data must be true or false, got {same_data!r}")
        data_versions[v] = data_versions[v - 1] if same_data and v - 1 in data_versions else v
        if v <= chosen:
            changes = block.pop("changes", "")
            merged = _merge(merged, block)
    metric_raw = merged["metric"]
    if metric_raw["name"] not in METRICS:
        raise RegistryError(f"{where}: unknown metric {metric_raw['name']!r}")
    metric = MetricSpec(
        name=metric_raw["name"],
        higher_is_better=bool(metric_raw["higher_is_better"]),
        options=metric_raw.get("options") or {},
        inputs=metric_raw.get("inputs") or {},
        where=metric_raw.get("where"),
    )
    if METRICS[metric.name].higher_is_better != metric.higher_is_better:
        raise RegistryError(f"{where}: higher_is_better contradicts the metric table for {metric.name}")
    _check_choices(merged, where, chosen)
    columns = _columns(merged["columns"], where) + _class_columns(merged.get("class_columns"), where)
    id_columns = tuple(merged["id_columns"])
    names = [c.name for c in columns]
    targets_raw = merged.get("targets") or {n: n for n in names if n not in id_columns}
    score = merged.get("sample_submission_score")
    board = _read_leaderboard(folder, metric.higher_is_better)
    deadline, deadline_source = _deadline(data, board, where)
    return Competition(
        id=cid,
        name=merged["name"],
        version=chosen,
        versions=versions,
        complexity=merged["complexity"],
        data_kind=merged["data_kind"],
        awards_medals=bool(merged["awards_medals"]),
        answers=merged["answers"],
        sample_submission=merged["sample_submission"],
        id_columns=id_columns,
        columns=columns,
        answer_columns=_columns(merged.get("answer_columns"), where),
        targets=tuple((str(s), str(a)) for s, a in targets_raw.items()),
        metric=metric,
        checks=merged.get("checks") or {},
        matching=merged.get("matching") or {},
        sample_submission_score=None if score is None else float(score),
        changes=changes,
        notes=tuple(merged.get("notes") or ()),
        leaderboard=board,
        folder=folder,
        fixture=merged.get("fixture") or {},
        prepare=merged.get("prepare") or {},
        data_version=data_versions[chosen],
        data_versions=data_versions,
        deadline=deadline,
        deadline_source=deadline_source,
    )


_REF = re.compile(r"^(?P<id>[^@]+?)(?:@v?(?P<version>\d+))?$")


def get(ref: str, version: int | None = None, *, latest: bool = False) -> Competition:
    """The competition ``ref`` (an id, or ``id@N`` for version N).

    Without a version it is the published definition (version 1), so that a score is comparable
    with the paper and the leaderboard; ``latest=True`` selects the newest version instead (the
    corrected data and metric). An explicit ``@N`` or ``version`` always wins.
    """
    match = _REF.match(ref.strip())
    if not match:
        raise UnknownCompetitionError(ref, _suggest(ref))
    if match["version"] is not None:
        if version is not None and version != int(match["version"]):
            raise UsageError(f"{ref!r} names version {match['version']} but version {version} was asked for too")
        version = int(match["version"])
    if version is None and not latest:
        version = PUBLISHED_VERSION
    return _build(_read_declaration(match["id"]), version)


def ids() -> list[str]:
    """Every registered competition id, podium's own and those of the user's folders, sorted."""
    return sorted(declarations.folders())


def _splits() -> dict[str, tuple[str, ...]]:
    splits = dict(_named_splits())
    found = declarations.folders()
    splits["user"] = tuple(sorted(cid for cid, folder in found.items() if folder.parent != COMPETITIONS_DIR))
    splits["all"] = tuple(sorted(found))
    return splits


@cache
def _named_splits() -> dict[str, tuple[str, ...]]:
    raw = load_yaml(COMPETITIONS_DIR / "splits.yaml", _yaml_text)
    splits = {name: tuple(members) for name, members in raw.items()}
    splits["lite"] = splits["low"]
    return splits


def split_ids(name: str) -> list[str]:
    """The competition ids of a named split (low/lite, medium, high, split75, dev, systemcard, all)."""
    splits = _splits()
    if name not in splits:
        close = difflib.get_close_matches(name, list(splits), n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UsageError(f"Unknown split {name!r}.{hint} Known splits: {', '.join(sorted(splits))}")
    return list(splits[name])


def load_all(split: str = "all", *, latest: bool = False) -> list[Competition]:
    """Every competition of a split, at the published version (the newest with ``latest=True``)."""
    return [get(cid, latest=latest) for cid in split_ids(split)]


def _suggest(name: str) -> list[str]:
    known = ids()
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    if not close:
        close = [k for k in known if name.lower() in k.lower()][:3]
    return close

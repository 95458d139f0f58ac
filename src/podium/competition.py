"""What a competition is, and the registry of all of them.

A competition is declared by ``competitions/<id>/competition.yaml`` (see ``docs/declaring.md``)
with a generated ``leaderboard.json`` holding the Kaggle private-leaderboard figures, and, only
where the data needs code, Python beside it: ``hooks.py`` for answers that are not a plain table,
``prepare.py`` for a prepare step the declarative split does not cover. :meth:`Competition.hook`
is the one way to that code (:data:`HOOKS` lists what each file may define). Loading one
competition parses only its own folder, so grading a single competition stays cheap.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import yaml

from podium.errors import RegistryError, UnknownCompetitionError, UnknownVersionError, UsageError
from podium.leaderboard import Leaderboard
from podium.metrics import METRICS, Metric

__all__ = [
    "COLUMN_KINDS",
    "HOOKS",
    "PUBLISHED_VERSION",
    "SPLITS",
    "Column",
    "Competition",
    "MetricSpec",
    "get",
    "ids",
    "load_all",
    "split_ids",
]

COMPETITIONS_DIR = Path(str(resources.files("podium") / "competitions"))

#: Column kinds: how a cell is parsed, checked and generated in fixtures.
COLUMN_KINDS = frozenset(
    {"id", "int_id", "float", "probability", "int", "label", "bool", "text", "rle", "tokens", "boxes"}
)
Complexity = Literal["low", "medium", "high", "dev", "practice"]
#: The version that reproduces the published benchmark; an id without ``@N`` means it.
PUBLISHED_VERSION = 1
#: The named splits (``splits.yaml``, plus ``lite`` = ``low`` and ``all``).
SPLITS = ("low", "lite", "medium", "high", "split75", "dev", "systemcard", "practice", "all")
#: What a competition's own Python may define, and in which file. ``hooks.py``: ``load_answers(path)``
#: and ``write_answers(frame, path)`` for answers that are not a CSV table; ``make_answers``,
#: ``perfect_submission`` and ``sample_submission`` for fixtures whose answers differ in shape from
#: submissions. ``prepare.py``: ``prepare(raw, public, private, version=)``, ``make_raw(raw, rng)``
#: (a tiny raw folder in the Kaggle layout, for tests) and ``fetch_raw(folder)`` (data that a package
#: ships: no download).
HOOKS = {
    "load_answers": "hooks",
    "write_answers": "hooks",
    "make_answers": "hooks",
    "perfect_submission": "hooks",
    "sample_submission": "hooks",
    "prepare": "prepare",
    "make_raw": "prepare",
    "fetch_raw": "prepare",
}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Column:
    """One column of a submission or of the answers.

    ``options`` holds kind-specific settings used by checks and fixture generators
    (``values``/``range`` for labels, ``shape``/``shape_from`` for RLE masks, ``format`` for boxes,
    ``default`` for the sample submission's value).
    """

    name: str
    kind: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class MetricSpec:
    """Which metric scores the competition and how its arguments are taken from the data.

    ``inputs`` maps extra keyword arguments of the metric to columns of the aligned answers or
    submission (``"answers.col"``, ``"submission.col"`` or ``{"answers": [cols]}`` for a 2-D array).
    ``where`` restricts scoring to answer rows whose column equals (or not) a value.
    """

    name: str
    higher_is_better: bool
    options: Mapping[str, Any] = field(default_factory=dict)
    inputs: Mapping[str, Any] = field(default_factory=dict)
    where: Mapping[str, Any] | None = None

    @property
    def metric(self) -> Metric:
        return METRICS[self.name]


@dataclass(frozen=True)
class Competition:
    """A competition at one version: everything grading needs, and no I/O."""

    id: str
    name: str
    version: int
    versions: tuple[int, ...]
    complexity: Complexity
    data_kind: str
    awards_medals: bool
    answers: str
    sample_submission: str
    id_columns: tuple[str, ...]
    columns: tuple[Column, ...]
    answer_columns: tuple[Column, ...]
    targets: tuple[tuple[str, str], ...]
    metric: MetricSpec
    checks: Mapping[str, Any]
    matching: Mapping[str, Any]
    sample_submission_score: float | None
    changes: str
    notes: tuple[str, ...]
    leaderboard: Leaderboard | None
    folder: Path
    fixture: Mapping[str, Any] = field(default_factory=dict)
    prepare: Mapping[str, Any] = field(default_factory=dict)
    #: The version whose prepared data this version grades: itself, or for a version that only changes
    #: grading (``same_data: true`` in its block), the version it grades the data of.
    data_version: int = 1
    #: ``data_version`` of every version, so the versions that share this one's data are known without loading them.
    data_versions: Mapping[int, int] = field(default_factory=dict)

    @property
    def ref(self) -> str:
        """``id@version``: the name every report uses."""
        return f"{self.id}@{self.version}"

    @property
    def higher_is_better(self) -> bool:
        return self.metric.higher_is_better

    @property
    def is_published(self) -> bool:
        """Whether this is version 1: the published benchmark's definition (data, metric and grader)."""
        return self.version == PUBLISHED_VERSION

    def shares_data_with(self, version: object) -> bool:
        """Whether data prepared for ``version`` (as recorded by prepare) is this version's data."""
        return isinstance(version, int) and self.data_versions.get(version) == self.data_version

    @property
    def same_data_versions(self) -> tuple[int, ...]:
        """The other versions that grade the same prepared data (only the grading differs), oldest first."""
        mine = self.data_versions.get(self.version, self.data_version)
        return tuple(v for v, d in sorted(self.data_versions.items()) if d == mine and v != self.version)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(name)

    def answer_column(self, name: str) -> Column:
        """The kind of an answer column: declared in ``answer_columns``, else as in ``columns``."""
        for col in self.answer_columns:
            if col.name == name:
                return col
        return self.column(name)

    def hook(self, name: str) -> Callable[..., Any] | None:
        """The function ``name`` (one of :data:`HOOKS`) of the competition's own Python; None where it has none."""
        if name not in HOOKS:
            raise ValueError(f"{name!r} is not a competition hook; hooks: {', '.join(HOOKS)}")
        module = load_module(self.folder, HOOKS[name])
        fn: Callable[..., Any] | None = getattr(module, name, None)
        return fn

    @property
    def has_prepare_step(self) -> bool:
        """Whether it is prepared at all: by a declarative split or by its prepare.py."""
        return bool(self.prepare.get("split")) or self.hook("prepare") is not None

    @property
    def brings_own_data(self) -> bool:
        """Whether its raw data comes from a package (``fetch_raw``), so preparing it needs no download."""
        return self.hook("fetch_raw") is not None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what `podium show --json` prints)."""
        board = self.leaderboard
        return {
            "id": self.id,
            "ref": self.ref,
            "name": self.name,
            "version": self.version,
            "versions": list(self.versions),
            "changes": self.changes,
            "data_version": self.data_version,
            "complexity": self.complexity,
            "data_kind": self.data_kind,
            "awards_medals": self.awards_medals,
            "metric": self.metric.name,
            "metric_options": dict(self.metric.options),
            "higher_is_better": self.higher_is_better,
            "is_lower_better": not self.higher_is_better,
            "id_columns": list(self.id_columns),
            "target_columns": [s for s, _ in self.targets],
            "columns": {c.name: c.kind for c in self.columns},
            "answers": self.answers,
            "sample_submission": self.sample_submission,
            "sample_submission_score": self.sample_submission_score,
            "leaderboard": board.to_dict() if board else None,
            "n_teams": board.n_teams if board else None,
            "gold_threshold": board.gold if board else None,
            "silver_threshold": board.silver if board else None,
            "bronze_threshold": board.bronze if board else None,
            "median_threshold": board.median if board else None,
            "notes": list(self.notes),
        }


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


@cache
def _read_declaration(competition_id: str) -> dict[str, Any]:
    path = COMPETITIONS_DIR / competition_id / "competition.yaml"
    if not path.exists():
        raise UnknownCompetitionError(competition_id, _suggest(competition_id))
    data = yaml.load(path.read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    if not isinstance(data, dict) or data.get("id") != competition_id:
        raise RegistryError(f"{path}: the declaration must be a mapping whose id is {competition_id!r}")
    return data


def _read_leaderboard(competition_id: str, higher_is_better: bool) -> Leaderboard | None:
    path = COMPETITIONS_DIR / competition_id / "leaderboard.json"
    if not path.exists():
        return None
    board = Leaderboard.from_dict(json.loads(path.read_text(encoding="utf-8")))
    if board.higher_is_better != higher_is_better:
        raise RegistryError(f"{path}: direction disagrees with competition.yaml; regenerate it")
    return board


def _build(data: Mapping[str, Any], version: int | None) -> Competition:
    cid = data["id"]
    where = f"competitions/{cid}/competition.yaml"
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
    columns = _columns(merged["columns"], where) + _class_columns(merged.get("class_columns"), where)
    id_columns = tuple(merged["id_columns"])
    names = [c.name for c in columns]
    targets_raw = merged.get("targets") or {n: n for n in names if n not in id_columns}
    score = merged.get("sample_submission_score")
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
        leaderboard=_read_leaderboard(cid, metric.higher_is_better),
        folder=COMPETITIONS_DIR / cid,
        fixture=merged.get("fixture") or {},
        prepare=merged.get("prepare") or {},
        data_version=data_versions[chosen],
        data_versions=data_versions,
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
    """Every registered competition id, sorted."""
    return sorted(p.name for p in COMPETITIONS_DIR.iterdir() if (p / "competition.yaml").is_file())


@cache
def _splits() -> dict[str, tuple[str, ...]]:
    raw = yaml.load((COMPETITIONS_DIR / "splits.yaml").read_text(encoding="utf-8"), Loader=_YAML_LOADER)
    splits = {name: tuple(members) for name, members in raw.items()}
    splits["lite"] = splits["low"]
    splits["all"] = tuple(ids())
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


@cache
def load_module(folder: Path, kind: str) -> ModuleType | None:
    """A competition folder's ``<kind>.py`` (``hooks`` or ``prepare``) as a module, loaded once; None if absent."""
    path = folder / f"{kind}.py"
    if not path.exists():
        return None
    name = f"podium.competitions._{kind}_" + folder.name.replace("-", "_")
    spec = spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RegistryError(f"cannot load {path}")
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

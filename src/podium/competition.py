"""What a competition is: ``Competition`` (one competition at one version, everything grading needs,
no I/O), its columns and metric, and the one way to a competition's own Python.

A competition is declared by ``competitions/<id>/competition.yaml`` (see ``docs/declaring.md``;
``podium.registry`` reads it) with a generated ``leaderboard.json`` holding the Kaggle
private-leaderboard figures, and, only where the data needs code, Python beside it: ``hooks.py``
for answers that are not a plain table, ``prepare.py`` for a prepare step the declarative split
does not cover. :meth:`Competition.hook` is the one way to that code (:data:`HOOKS` lists what
each file may define).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from podium.errors import RegistryError
from podium.leaderboard import Leaderboard
from podium.metrics import METRICS, Metric

__all__ = [
    "COLUMN_KINDS",
    "COMPETITIONS_DIR",
    "DEADLINE_SOURCES",
    "HOOKS",
    "PUBLISHED_VERSION",
    "Column",
    "Competition",
    "MetricSpec",
    "load_module",
]

COMPETITIONS_DIR = Path(__file__).resolve().parent / "competitions"  # podium is a folder on disk, never a zip


#: Column kinds: how a cell is parsed, checked and generated in fixtures.
COLUMN_KINDS = frozenset(
    {"id", "int_id", "float", "probability", "int", "label", "bool", "text", "rle", "tokens", "boxes"}
)


Complexity = Literal["low", "medium", "high", "dev", "practice"]


#: The version that reproduces the published benchmark; an id without ``@N`` means it.
PUBLISHED_VERSION = 1


#: Where a competition's deadline comes from (docs/declaring.md, "Deadline"): Kaggle's metadata as the declaration
#: records it (``deadline_source: kaggle``, what ``podium new`` writes), the declaration's author's own word
#: (``declared``), else the latest submission on its private leaderboard (``leaderboard.json``'s ``last_submission``).
DEADLINE_SOURCES = ("kaggle", "declared", "last submission on the private leaderboard")


#: What a competition's own Python may define, and in which file. ``hooks.py``: ``load_answers(path)``
#: and ``write_answers(frame, path)`` for answers that are not a CSV table; ``make_answers``,
#: ``perfect_submission`` and ``sample_submission`` for fixtures whose answers differ in shape from
#: submissions; ``pair_rows(answers, submission)`` (columns in file order) -> (answer rows, submission
#: rows) for a version whose published grader selects and pairs the scored rows its own way
#: (``matching.pairing: subset``), or ``published_score(answers, submission)`` where its computation
#: is itself idiosyncratic. ``prepare.py``: ``prepare(raw, public, private, version=)``, ``make_raw(raw, rng)``
#: (a tiny raw folder in the Kaggle layout, for tests) and ``fetch_raw(folder)`` (data that a package
#: ships: no download).
HOOKS = {
    "load_answers": "hooks",
    "write_answers": "hooks",
    "make_answers": "hooks",
    "perfect_submission": "hooks",
    "sample_submission": "hooks",
    "pair_rows": "hooks",
    "published_score": "hooks",
    "prepare": "prepare",
    "make_raw": "prepare",
    "fetch_raw": "prepare",
}


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
    #: The day the competition ended (its final submission deadline), or None where nothing says (a practice one).
    deadline: date | None = None
    #: Where ``deadline`` comes from: one of :data:`DEADLINE_SOURCES` (None with no deadline and no declared word).
    deadline_source: str | None = None

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
            "deadline": self.deadline.isoformat() if self.deadline else None,
            "deadline_source": self.deadline_source,
            "notes": list(self.notes),
        }


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

"""A new competition's declaration assembled from what was found: the fields in the registry's schema, the notes
saying why, and the lines ``podium new`` prints for what it inferred.

What cannot be inferred is written as a ``TODO: ...`` value that says what to decide (the registry refuses a
declaration with one left, naming each). The prepare is the declarative split of docs/preparing.md, and the
``prepare: raw:`` spec lets ``podium.fixtures.make_raw`` build a tiny raw folder of the same shape for the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from podium.author.columns import raw_spec
from podium.author.infer import Tables, Targets
from podium.author.kaggle_meta import KaggleFacts
from podium.author.layout import FileRule, Split
from podium.author.rawfiles import Raw
from podium.author.submission import Columns
from podium.author.write import Commented
from podium.declarations import TODO
from podium.leaderboard import Leaderboard
from podium.metrics import METRICS

__all__ = ["Board", "Draft", "MetricChoice", "declaration"]

_IMAGES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".dcm", ".webp")
_AUDIO = (".wav", ".mp3", ".flac", ".ogg", ".aif", ".aiff")


@dataclass(frozen=True)
class MetricChoice:
    """The metric, its options and how it was chosen; ``name`` None when it is still to decide (``todo`` says what)."""

    name: str | None
    options: dict[str, Any] = field(default_factory=dict)
    how: str = ""
    todo: str = ""
    higher_is_better: bool | None = None  # without a name: the leaderboard's order, when it says
    inputs: dict[str, str] = field(default_factory=dict)  # the metric's keyword -> "answers.<column>" (or a TODO)

    @property
    def higher(self) -> bool | None:
        return METRICS[self.name].higher_is_better if self.name else self.higher_is_better


@dataclass(frozen=True)
class Board:
    """A leaderboard's scores (best first) and where they came from."""

    scores: tuple[float, ...]
    source: str
    rows: int
    left_out: int = 0
    last_submission: str | None = None


@dataclass
class Draft:
    """The declaration, its notes (comment lines above a field), the header, and what was inferred, a line each."""

    declaration: dict[str, Any]
    notes: dict[str, list[str]]
    header: list[str]
    inferred: list[str]
    leaderboard: Leaderboard | None


def _data_kind(
    tables: Tables, targets: Targets, rules: list[FileRule], columns: Columns, prediction: str | None
) -> str:
    suffixes = {rule.source.rpartition(".")[2].lower() for rule in rules}
    if any(f".{s}" in _IMAGES for s in suffixes):
        modality = "image"
    elif any(f".{s}" in _AUDIO for s in suffixes):
        modality = "audio"
    elif rules:
        modality = "files"
    elif any(tables.profiles[c].kind == "text" for c in tables.profiles if c not in targets.sources):
        modality = "text"
    else:
        modality = "tabular"
    if columns.one_hot is not None:
        task = f"{len(columns.one_hot[1])}-class classification"
    elif prediction == "float" or (prediction is None and tables.profiles[targets.sources[0]].numeric):
        task = "regression"
    elif prediction in ("probability", "label"):
        classes = max((len(v) for v in columns.classes.values()), default=2)
        task = "binary classification" if classes <= 2 else f"{classes}-class classification"
    else:
        task = f"{prediction} prediction"
    many = f", {len(targets.sources)} targets" if len(set(targets.sources)) > 1 else ""
    return f"{modality} ({task}{many})"


def _split(
    tables: Tables, targets: Targets, split: Split, rules: list[FileRule], columns: Columns, metric: MetricChoice
) -> dict[str, Any]:
    archive, sep, member = tables.train.rpartition(".zip:")
    spec: dict[str, Any] = {}
    pandas = bool(rules or split.group or split.time or tables.train.lower().endswith(".tsv"))
    if pandas:
        spec["engine"] = "pandas"
    spec["source"] = member if sep else tables.train
    if sep:
        spec["zip"] = f"{archive}.zip"
    if tables.train.lower().endswith(".tsv"):
        spec["read"] = {"dtype": "str", "keep_default_na": False, "sep": "\t"}
    spec["test_size"] = Commented(split.test_size, split.size_why)
    spec["random_state"] = 0
    if split.group:
        spec["group"] = Commented(split.group, f"a group split: {split.column_why}")
    if split.time:
        spec["time"] = Commented(split.time, f"a time split: {split.column_why}")
    spec["drop_from_test"] = sorted(set(targets.sources), key=list(tables.profiles).index)
    if columns.one_hot is not None:
        one_hot = {"column": columns.one_hot[0]}
        spec["outputs"] = {"private/test.csv": {"columns": list(targets.ids), "one_hot": one_hot}}
    else:
        spec["answer_columns"] = list(dict.fromkeys([*targets.ids, *targets.sources, *_input_columns(metric)]))
    if rules:
        spec["files"] = [{"from": r.source, "train": r.train, "test": r.test} for r in rules]
    return spec


def _raw(tables: Tables, targets: Targets, columns: Columns, rules: list[FileRule]) -> dict[str, Any]:
    archive, sep, member = tables.train.rpartition(".zip:")
    spec: dict[str, Any] = {"rows": 40 if rules else 200}
    if sep:
        spec["zip"] = f"{archive}.zip"
    if tables.train.lower().endswith(".tsv"):
        spec["sep"] = "\t"
    spec["columns"] = {
        name: raw_spec(p, is_id=name in targets.ids, all_values=columns.classes.get(name, ()))
        for name, p in tables.profiles.items()
    }
    return {member if sep else tables.train: spec}


def _leaderboard(board: Board | None, metric: MetricChoice, notes: dict[str, list[str]]) -> Leaderboard | None:
    if board is None or metric.higher is None:
        return None
    figures = Leaderboard.from_scores(
        board.scores, higher_is_better=metric.higher, source="kaggle", last_submission=board.last_submission
    )
    notes.setdefault("awards_medals", []).append(
        f"Thresholds by Kaggle's rules from {board.source}: {figures.n_teams} teams; gold {figures.gold:g}, silver "
        f"{figures.silver:g}, bronze {figures.bronze:g}, median {figures.median:g} (leaderboard.json)."
    )
    return figures


def declaration(
    competition_id: str,
    name: str,
    raw: Raw,
    found: tuple[Tables, Targets, Split, list[FileRule], Columns],
    metric: MetricChoice,
    board: Board | None,
    facts: KaggleFacts | None,
) -> Draft:
    """The declaration of ``competition_id`` from what was found in its raw files, its metric and its board."""
    tables, targets, split, rules, columns = found
    prediction = _prediction(metric)
    notes: dict[str, list[str]] = {"columns": [f"Inferred: the ids and targets from {targets.how}.", *columns.notes]}
    figures = _leaderboard(board, metric, notes)
    metric_spec: dict[str, Any] = {
        "name": metric.name or f"{TODO} {metric.todo}",
        "higher_is_better": metric.higher if metric.higher is not None else f"{TODO} true or false: which is better",
    }
    if metric.options:
        metric_spec["options"] = dict(metric.options)
    if metric.inputs:
        metric_spec["inputs"] = dict(metric.inputs)
    for column in _input_columns(metric):
        columns.answer_columns.setdefault(column, raw_spec(tables.profiles[column], is_id=False))
    notes["metric"] = [f"Inferred: {metric.how}." if metric.name else f"Not inferred: {metric.todo}."]
    medals = bool(facts.awards_points) if facts else False
    decl: dict[str, Any] = {
        "id": competition_id,
        "name": name,
        "complexity": Commented("medium", "not in Kaggle's data: set it"),
        "data_kind": _data_kind(tables, targets, rules, columns, prediction),
        "awards_medals": Commented(
            medals, "Kaggle's awardsPoints" if facts else "not in the files: set it if Kaggle did"
        ),
    }
    deadline = _deadline(facts, board, notes)
    if deadline:
        decl["deadline"] = deadline
        decl["deadline_source"] = "kaggle"
    if facts is not None:
        decl["kaggle"] = _kaggle_block(facts)
    decl |= {
        "answers": "test.csv",
        "sample_submission": "public/sample_submission.csv",
        "id_columns": list(targets.ids),
        "columns": columns.columns,
    }
    if columns.answer_columns:
        decl["answer_columns"] = columns.answer_columns
    decl["metric"] = metric_spec
    if columns.fixture:
        decl["fixture"] = columns.fixture
    if board is None:
        decl["notes"] = [
            "No leaderboard: grades are scores, without medals. A reference leaderboard, as the practice suite's, is "
            "made from a population of reference solutions: python scripts/practice_leaderboards.py -c ID "
            "--competitions-dir DIR --from RAW (docs/declaring.md, 'Adding a competition')."
        ]
    decl["prepare"] = {
        "split": _split(tables, targets, split, rules, columns, metric),
        "raw": _raw(tables, targets, columns, rules),
    }
    notes["prepare"] = [f"Inferred from the raw files: {'; '.join(tables.notes)}."]
    return Draft(decl, notes, _header(competition_id, facts, board), [], figures)


def _input_columns(metric: MetricChoice) -> list[str]:
    return [v.removeprefix("answers.") for v in metric.inputs.values() if v.startswith("answers.")]


def _prediction(metric: MetricChoice) -> str | None:
    from podium.author.metric_names import PREDICTIONS

    return PREDICTIONS.get(metric.name) if metric.name else None


def _deadline(facts: KaggleFacts | None, board: Board | None, notes: dict[str, list[str]]) -> str | None:
    """Kaggle's deadline, where its metadata says it; else none is declared, and the registry takes the day of the
    last submission from leaderboard.json (``deadline_source``: the private leaderboard's last submission)."""
    if facts is not None and facts.deadline is not None:
        notes["deadline"] = ["From Kaggle's metadata."]
        return facts.deadline.date().isoformat()
    if board is not None and board.last_submission:
        notes["awards_medals"] = [*notes.get("awards_medals", []), "No deadline declared: --ended-after takes the "
                                  f"day of the leaderboard's last submission ({board.last_submission[:10]})."]  # fmt: skip
    return None


def _kaggle_block(facts: KaggleFacts) -> dict[str, Any]:
    return {
        "title": facts.title,
        "category": facts.category,
        "evaluation_metric": facts.evaluation_metric,
        "team_count": facts.team_count,
        "code_only": facts.code_only,
        "leaderboard": {"board": facts.board, "rows": facts.board_rows, "pages": facts.board_pages},
        "files": len(facts.files),
        "notebooks": len(facts.notebooks),
    }


def _header(competition_id: str, facts: KaggleFacts | None, board: Board | None) -> list[str]:
    source = "Kaggle's metadata, pages, leaderboard and files" if facts else "the raw files"
    if board is not None and facts is None:
        source += f" and {board.source}"
    return [
        f"{competition_id}: written by `podium new` from {source}. Each field says what it means; the notes above a "
        "field say what was inferred and why. Edit freely; `podium check` tells whether it holds.",
    ]

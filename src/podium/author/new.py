"""``podium new ID``: a competition's declaration written from Kaggle (online) or from files the user has (offline).

Online (no ``--from``, or ``--kaggle``): Kaggle's metadata, pages, file list, whole leaderboard and top notebooks
(:mod:`podium.author.kaggle_meta`), and its data zip, downloaded where ``podium prepare`` looks for it. Offline:
``--from DIR`` (the raw files: a folder or Kaggle's zip), ``--leaderboard CSV``, ``--description FILE``; for your
own data also ``--train``, ``--target``, ``--id`` and ``--metric``. Every check of the input runs before anything
is written, and the folder appears complete or not at all (:func:`podium.author.write.write_folder`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium import declarations
from podium.author import describe, layout
from podium.author.declare import Board, MetricChoice, declaration
from podium.author.infer import Tables, Targets, find_tables, find_targets
from podium.author.kaggle_meta import KaggleFacts
from podium.author.metric_names import PREDICTIONS, check_options, find_in_text, required, resolve, unknown_message
from podium.author.rawfiles import Raw
from podium.author.submission import submission_columns
from podium.author.write import plain, render, write_folder
from podium.data.leaderboard_csv import direction_of, read_leaderboard_csv
from podium.declarations import TODO
from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["NewRequest", "Written", "new_competition"]

_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


@dataclass(frozen=True)
class NewRequest:
    """What the user asked ``podium new`` for."""

    competition_id: str
    out: Path
    source: Path | None = None  # --from
    kaggle: bool = False  # ask Kaggle even with --from
    train: str | None = None
    targets: tuple[str, ...] = ()
    ids: tuple[str, ...] = ()
    metric: str | None = None
    metric_options: Mapping[str, Any] = field(default_factory=dict)
    metric_inputs: Mapping[str, str] = field(default_factory=dict)  # the metric's keyword -> an answer column
    leaderboard: Path | None = None
    description: Path | None = None
    data_dir: Path | None = None

    @property
    def online(self) -> bool:
        return self.source is None or self.kaggle


@dataclass
class Written:
    """What ``podium new`` wrote and inferred, a line each, and the commands to run next."""

    folder: Path
    files: list[str]
    inferred: list[str]
    todos: list[str]
    next_commands: list[str]


def _check_id(request: NewRequest) -> Path:
    cid = request.competition_id
    if not _ID.fullmatch(cid):
        raise UsageError(
            f"'{printable(cid, 120)}' is not a competition id: letters, digits, '.', '_' and '-', at most 100, "
            "as Kaggle's slugs. Fix: give the competition's slug (the last part of its Kaggle address)"
        )
    known = declarations.folders().get(cid)
    if known is not None:
        where = declarations.source_of(known)
        raise UsageError(
            f"{cid} exists already ({'podium built-in' if where == declarations.BUILTIN else where}). Fix: choose "
            "another id, or edit the existing declaration"
        )
    target = request.out / cid
    if target.exists() or target.is_symlink():
        raise UsageError(f"{printable(str(target), 200)} exists already. Fix: choose another id or --out, or remove it")
    return target


def _metric(
    request: NewRequest, n_targets: int, columns: Sequence[str], facts: KaggleFacts | None, text: str | None
) -> MetricChoice:
    if request.metric:
        resolved = resolve(request.metric, n_targets=n_targets)
        if resolved is None:
            raise UsageError(unknown_message(request.metric))
        how = f"{resolved.name}, from --metric ({resolved.how})"
    elif facts is not None and facts.evaluation_metric:
        resolved = resolve(facts.evaluation_metric, n_targets=n_targets)
        if resolved is None:
            said = printable(facts.evaluation_metric, 80)
            return MetricChoice(None, todo=f"Kaggle names the metric {said!r}, which podium's table does not map: "
                                "write a podium metric name, or declare one (docs/development.md, 'A metric')")  # fmt: skip
        how = f"{resolved.name}, from Kaggle's metadata ('{printable(facts.evaluation_metric, 80)}')"
    elif text and (found := find_in_text(text)):
        resolved = found[1]
        how = f"{resolved.name}, from {resolved.how}"
    else:
        return MetricChoice(None, todo="no metric was named (--metric) or found: write a podium metric name")
    options = {**resolved.options, **request.metric_options}
    check_options(resolved.name, {**options, **request.metric_inputs})
    needed_options, needed_inputs = required(resolved.name)
    for key in needed_options:
        options.setdefault(key, f"{TODO} {resolved.name} needs its option {key} (--metric-option {key}=VALUE)")
    inputs: dict[str, str] = {}
    for key, column in request.metric_inputs.items():
        if column not in columns:
            raise UsageError(
                f"--metric-input {printable(key, 40)}={printable(column, 80)}: no such column of the train table. "
                "Fix: name one of its columns"
            )
        inputs[key] = f"answers.{column}"
    for key in needed_inputs:
        inputs.setdefault(key, f"{TODO} {resolved.name} takes {key} from the data: answers.<column> (--metric-input)")
    return MetricChoice(resolved.name, options, how, inputs=inputs)


def _board(request: NewRequest, facts: KaggleFacts | None) -> Board | None:
    if request.leaderboard is not None:
        read = read_leaderboard_csv(request.leaderboard)
        source = f"the leaderboard CSV {printable(request.leaderboard.name, 80)}"
        return Board(read.scores, source, read.rows, read.left_out, read.last_submission)
    if facts is not None:
        source = f"Kaggle's {facts.board} leaderboard ({facts.board_pages} pages)"
        return Board(
            facts.scores, source, facts.board_rows, facts.board_rows - len(facts.scores), facts.last_submission
        )
    return None


def _checked_direction(metric: MetricChoice, board: Board | None) -> MetricChoice:
    order = direction_of(board.scores) if board else None
    if metric.name is None:
        return MetricChoice(None, metric.options, metric.how, metric.todo, order)
    if board is not None and order is not None and order != metric.higher:
        said = "higher" if order else "lower"
        raise UsageError(
            f"the leaderboard ranks {said} scores first ({board.scores[0]:g} first, {board.scores[-1]:g} last), but "
            f"{metric.name} is {'higher' if metric.higher else 'lower'}-is-better. Fix: --metric with a metric whose "
            "better direction matches the leaderboard"
        )
    return metric


def _read_text(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        with path.open("rb") as handle:
            data = handle.read(describe.MAX_DESCRIPTION * 4)  # UTF-8 is at most 4 bytes a character
    except OSError as exc:
        raise UsageError(
            f"--description {printable(str(path), 200)}: cannot read it ({exc.strerror}). Fix: name a text file"
        ) from None
    return data.decode("utf-8", "replace")[: describe.MAX_DESCRIPTION]


def _name(request: NewRequest, facts: KaggleFacts | None, text: str | None) -> str:
    if facts is not None:
        return facts.title
    heading = re.search(r"(?m)^#\s+(.+)$", text or "")
    if heading:
        return heading.group(1).strip()[:200]
    return " ".join(w.capitalize() for w in re.split(r"[-_]+", request.competition_id))


def _download(request: NewRequest) -> Raw:
    from podium.data.kaggle import download_zip
    from podium.paths import CompetitionPaths, default_data_dir

    paths = CompetitionPaths(request.data_dir or default_data_dir(), request.competition_id)
    return Raw(download_zip(request.competition_id, paths))


def new_competition(request: NewRequest) -> Written:
    """Write the declaration ``request`` asks for; UsageError (one line, nothing written) for bad input."""
    target = _check_id(request)
    text = _read_text(request.description)
    board = _board(request, None)  # the CSV, read before anything is asked of Kaggle
    raw = Raw(request.source) if request.source is not None else None
    facts = None
    if request.online:
        from podium.author.kaggle_meta import fetch_facts

        facts = fetch_facts(request.competition_id, data=raw is None)
        board = board or _board(request, facts)
    raw = raw or _download(request)
    tables = find_tables(raw, train=request.train, ids=request.ids, targets=request.targets)
    targets = find_targets(tables, ids=request.ids, targets=request.targets)
    metric = _checked_direction(_metric(request, len(set(targets.sources)), list(tables.profiles), facts, text), board)
    prediction = PREDICTIONS.get(metric.name) if metric.name else None
    columns = submission_columns(raw, tables, targets, prediction)
    rules = layout.find_files(raw, tables, targets)
    split = layout.find_split(raw, tables, targets, rules)
    name = _name(request, facts, text)
    draft = declaration(
        request.competition_id, name, raw, (tables, targets, split, rules, columns), metric, board, facts
    )
    files = {
        "competition.yaml": render(draft.declaration, draft.notes, draft.header),
        "description.md": describe.description(name, tables, targets, draft.declaration, facts=facts, text=text),
    }
    if draft.leaderboard is not None:
        files["leaderboard.json"] = json.dumps(draft.leaderboard.to_dict(), indent=1) + "\n"
    if facts is not None and facts.notebooks:
        files["kernels.txt"] = "\n".join(facts.notebooks) + "\n"
    write_folder(target, files)
    inferred = _inferred(tables, targets, split, rules, metric, board, draft.leaderboard, facts)
    commands = _next(request, reference=board is None)
    return Written(target, sorted(files), inferred, declarations.todos(plain(draft.declaration)), commands)


def _inferred(tables: Tables, targets: Targets, split: layout.Split, rules: list[layout.FileRule], metric: MetricChoice,
              board: Board | None, figures: Any, facts: KaggleFacts | None) -> list[str]:  # fmt: skip
    lines = list(tables.notes)
    lines.append(f"ids: {', '.join(targets.ids)}; targets: {', '.join(dict.fromkeys(targets.sources))} ({targets.how})")
    lines.append(f"metric: {metric.how}" if metric.name else f"metric: TODO ({metric.todo})")
    lines.append(f"split: test_size {split.test_size} ({split.size_why})")
    if split.group or split.time:
        lines.append(f"split: {'group' if split.group else 'time'} {split.group or split.time} ({split.column_why})")
    lines += [f"files: {r.source} follow their rows ({r.found} of the ids tried)" for r in rules]
    if facts is not None:
        when = facts.deadline.date().isoformat() if facts.deadline else "unknown"
        lines.append(f"kaggle: {facts.category or 'no category'}, deadline {when}, {facts.team_count} teams, "
                     f"code-only {'yes' if facts.code_only else 'no'}, {len(facts.files)} files, {len(facts.notebooks)} notebooks")  # fmt: skip
    if board is not None and figures is not None:
        left = f", {board.left_out} rows without a score left out" if board.left_out else ""
        lines.append(f"leaderboard: {board.source}, {figures.n_teams} teams{left}; gold {figures.gold:g}, silver "
                     f"{figures.silver:g}, bronze {figures.bronze:g}, median {figures.median:g}")  # fmt: skip
    elif board is None:
        lines.append("leaderboard: none, so no medals: grades are scores (a reference leaderboard: docs/declaring.md)")
    else:
        lines.append(f"leaderboard: {board.source} read, but no leaderboard.json written: its order does not say "
                     "which way is better, and the metric is still to decide; run podium new again once it is")  # fmt: skip
    return [printable(line, 400) for line in lines]


def _next(request: NewRequest, *, reference: bool) -> list[str]:
    dirs = f"--competitions-dir {printable(str(request.out), 200)}"
    cid = request.competition_id
    source = f" --from {printable(str(request.source), 200)}" if request.source is not None else ""
    commands = [f"podium check {cid} {dirs}", f"podium prepare -c {cid}{source} {dirs}"]
    if reference and source:  # no leaderboard: the practice suite's reference population makes one
        commands.append(
            f"python scripts/practice_leaderboards.py -c {cid} {dirs}{source}   (optional: a reference leaderboard)"
        )
    return [*commands, f"podium run --competitions {cid} {dirs}"]

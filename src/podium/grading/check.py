"""The one submission check, shared by the validation endpoint and grading.

:func:`check_submission` takes a submission read by :func:`read_submission` (the one reader, see
:mod:`podium.grading.table`) and the expected row keys: the sample submission's for validation (no
answers in sight), the answers' for grading. It checks the columns, each column's cells by its kind
(:mod:`podium.grading.columns`), the ids (:mod:`podium.grading.align`) and the row sums, so both give
the same verdict and message on the same file. Every failure is an :class:`InvalidSubmissionError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from podium.competition import Column, Competition
from podium.errors import BrokenAnswersError, InvalidSubmissionError, quote
from podium.grading.align import align, align_published, keys_of
from podium.grading.columns import Values, arrow, as_numpy, convert_column, numeric_columns, take
from podium.grading.files import SubmissionFile
from podium.grading.published import NA_MARKERS
from podium.grading.table import Frame, from_numpy, read_csv, strings, to_numpy

__all__ = [
    "CheckedSubmission",
    "check_columns",
    "check_submission",
    "convert_columns",
    "expected_keys",
    "read_submission",
]


def _names(names: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(quote(n) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_columns(competition: Competition, frame: Frame) -> list[str]:
    """Raise if a declared column is missing; return warnings about ignored extra columns."""
    missing = [c for c in competition.column_names if c not in frame.names]
    if missing:
        raise InvalidSubmissionError(
            f"missing column(s) {_names(missing)}; found {_names(frame.names)}",
            fix=f"use the header of the sample submission: {','.join(competition.column_names)}",
        )
    extra = [c for c in frame.names if c not in competition.column_names]
    if extra and competition.matching.get("extra_columns") is False:
        raise InvalidSubmissionError(
            f"unexpected column(s) {_names(extra)}; the published grader accepts only the sample submission's columns",
            fix=f"write exactly the columns {','.join(competition.column_names)} (no index column)",
        )
    return [f"ignored extra column(s): {_names(extra)}"] if extra else []


def convert_columns(
    competition: Competition, frame: Frame, *, answers: bool, sources: Mapping[str, str] | None = None
) -> dict[str, Values]:
    """Convert the columns the grader needs, by kind; answers that fail are a harness error.

    ``sources`` reads a declared column from another column of the file (columns paired by position).
    """
    sources = sources or {}
    if answers:
        needed = [a for _, a in competition.targets] + list(competition.id_columns)
        needed += [c.name for c in competition.answer_columns]
        if competition.metric.where:
            needed.append(competition.metric.where["column"])
        lookup = competition.answer_column
    else:
        needed = list(competition.column_names)
        lookup = competition.column
    needed = list(dict.fromkeys(needed))
    missing = [n for n in needed if sources.get(n, n) not in frame.names]
    if answers and missing:
        raise BrokenAnswersError(f"{competition.id} answers lack column(s) {missing}")
    out: dict[str, Values] = {}
    for name in needed:
        try:
            out[name] = _convert(lookup(name), frame.arrow(sources.get(name, name)), cell_caps=not answers)
        except InvalidSubmissionError as exc:
            if answers:
                raise BrokenAnswersError(f"{competition.id} answers: {exc}") from exc
            text = frame.text(sources.get(name, name))
            if text is None:
                raise
            # parsed while reading: the check of the cells as written says what is wrong, so the
            # verdict and the message are those of the text check, however the file was read
            out[name] = _convert(lookup(name), text)
    return out


_MISSING_READ = {"nan": np.nan, "zero": 0.0, "unscored": np.nan}
_NA = strings(sorted(NA_MARKERS))


def _convert(column: Column, values: Any, *, cell_caps: bool = True) -> Values:
    """:func:`convert_column`, except that with ``missing: nan`` (or ``zero``, ``unscored``) on a numeric
    column a cell pandas reads as missing (empty, ``NA``, ``NaN``, ...) is accepted, as the published
    grader accepts it, and reaches the metric as NaN (or 0, where the published grader fills it); every
    other cell follows the kind's rules. ``unscored``: grading refuses a NaN that lands on a scored row."""
    fill = _MISSING_READ.get(str(column.options.get("missing")))
    if fill is None or column.kind not in ("float", "probability", "int"):
        return convert_column(column, values, cell_caps=cell_caps)
    raw = arrow(values)
    if pa.types.is_floating(raw.type) or pa.types.is_integer(raw.type):  # parsed while reading: nulls, NaN
        missing = to_numpy(pc.is_null(raw, nan_is_null=pa.types.is_floating(raw.type)))
    else:
        missing = to_numpy(pc.fill_null(pc.is_in(raw, value_set=_NA), True))
    strict = Column(column.name, column.kind, {k: v for k, v in column.options.items() if k != "missing"})
    if not missing.any():
        return convert_column(strict, raw, cell_caps=cell_caps)
    present = np.flatnonzero(~missing)
    out = np.full(len(raw), fill)
    out[present] = as_numpy(convert_column(strict, raw.take(from_numpy(present)), cell_caps=cell_caps))
    return out


@dataclass
class CheckedSubmission:
    """A submission that passed every rule, aligned row by row with the expected rows."""

    columns: dict[str, Values]
    expected_order: np.ndarray
    warnings: list[str]
    file_rows: np.ndarray | None = None  # the submission's row (0-based, header excluded) of each aligned row


def check_submission(competition: Competition, frame: Frame, expected_keys: Values) -> CheckedSubmission:
    """The one submission check, shared by validation (keys of the sample submission) and grading
    (keys of the answers): columns, kinds and values, ids, row sums. Raises InvalidSubmissionError."""
    warnings = check_columns(competition, frame)
    matching = competition.matching
    if frame.n_rows == 0 and matching.get("no_rows") == "invalid":
        raise InvalidSubmissionError(
            "the submission has no rows; the published grader reads the columns of a file without rows "
            "as text and refuses them",
            fix=f"write a row for every {'/'.join(competition.id_columns)} of the sample submission",
        )
    sources = _columns_by_position(competition, frame) if matching.get("columns") == "position" else None
    submission = convert_columns(competition, frame, answers=False, sources=sources)
    id_label = "/".join(competition.id_columns)
    keys = keys_of(submission, competition.id_columns)
    pairing = matching.get("pairing", "key")
    if pairing == "key":
        alignment = align(
            expected_keys,
            keys,
            duplicate_ids=bool(matching.get("duplicate_ids")),
            extra_ids=bool(matching.get("extra_ids")),
            id_label=id_label,
        )
    else:
        within = matching.get("within")
        alignment = align_published(
            expected_keys,
            keys,
            pairing=pairing,
            within=None if within is None else (competition.id_columns.index(within), len(competition.id_columns)),
            duplicate_ids=bool(matching.get("duplicate_ids")),
            extra_ids=bool(matching.get("extra_ids")),
            missing_ids=bool(matching.get("missing_ids")),
            id_label=id_label,
        )
    if alignment.ignored_extra_rows:
        warnings.append(f"ignored {alignment.ignored_extra_rows} row(s) whose {id_label} is not scored")
    aligned = {k: take(v, alignment.submission_order) for k, v in submission.items()}
    _check_row_sums(competition, aligned, alignment.submission_order)
    return CheckedSubmission(aligned, alignment.answer_order, warnings, alignment.submission_order)


def _columns_by_position(competition: Competition, frame: Frame) -> dict[str, str]:
    """``matching.columns: position``: the file's non-id columns, in file order, stand for the declared
    non-id columns in declared order (the published grader scores ``to_numpy()`` column by column)."""
    declared = [c for c in competition.column_names if c not in competition.id_columns]
    written = [c for c in frame.names if c not in competition.id_columns]
    if len(written) != len(declared):
        raise InvalidSubmissionError(
            f"the submission has {len(written)} prediction column(s); the published grader pairs them by "
            f"position with the {len(declared)} class columns and needs exactly that many",
            fix=f"write exactly the columns {','.join(competition.column_names)}",
        )
    return dict(zip(declared, written, strict=True))


def expected_keys(competition: Competition, frame: Frame, *, answers: bool) -> Values:
    """Row keys of the answers (``answers=True``) or of the sample submission."""
    lookup = competition.answer_column if answers else competition.column
    converted = {}
    for name in competition.id_columns:
        try:
            converted[name] = convert_column(lookup(name), frame.arrow(name))
        except (InvalidSubmissionError, KeyError) as exc:
            what = "answers" if answers else "sample submission"
            raise BrokenAnswersError(f"{competition.id}: the {what} id column {name!r} is unusable: {exc}") from exc
    return keys_of(converted, competition.id_columns)


def _row_sums_ok(sums: np.ndarray, rule: Mapping[str, Any]) -> tuple[np.ndarray, str]:
    """Which row sums pass the declared rule, and the rule in words.

    ``mode: abs`` (default): |sum - 1| <= ``tolerance``. ``mode: isclose``: numpy ``isclose(sum,
    1, rtol, atol)``, i.e. |sum - 1| <= atol + rtol. ``mode: round``: the sum rounded to
    ``decimals`` equals 1, with numpy's rounding (pandas ``Series.round``) or, with ``rounding:
    python``, Python's ``round``.
    """
    mode = rule.get("mode", "abs")
    if mode == "abs":
        tolerance = float(rule.get("tolerance", 1e-6))
        return np.abs(sums - 1.0) <= tolerance, f"|sum - 1| <= {tolerance:g}"
    if mode == "isclose":
        rtol, atol = float(rule.get("rtol", 1e-5)), float(rule.get("atol", 1e-8))
        return np.isclose(sums, 1.0, rtol=rtol, atol=atol), f"|sum - 1| <= {atol:g} + {rtol:g}"
    if mode == "round":
        decimals = int(rule["decimals"])
        if rule.get("rounding", "numpy") == "python":
            ok = np.fromiter((round(s, decimals) == 1 for s in sums.tolist()), dtype=bool, count=sums.size)
        else:
            ok = np.round(sums, decimals) == 1
        return ok, f"the sum rounded to {decimals} decimals equals 1"
    raise ValueError(f"unknown row_sum mode {mode!r}")


def _check_row_sums(competition: Competition, submission: Mapping[str, np.ndarray], file_rows: np.ndarray) -> None:
    rule = competition.checks.get("row_sum")
    if not rule:
        return
    names = list(rule["columns"])
    sums = np.array(as_numpy(submission[names[0]]), dtype=np.float64)
    for name in names[1:]:  # column by column, left to right: the order pandas' row sum adds in
        sums = sums + as_numpy(submission[name])
    ok, stated = _row_sums_ok(sums, rule)
    if not ok.all():
        bad = np.flatnonzero(~ok)
        order = np.argsort(file_rows[bad], kind="stable")[:5]
        examples = [f"row {int(file_rows[bad[i]]) + 2}: sum {sums[bad[i]]:.10f}" for i in order]
        raise InvalidSubmissionError(
            f"probabilities over {len(names)} columns must sum to 1 on every row ({stated}); {bad.size} row(s) do not",
            examples=examples,
            fix="normalise each row (divide every probability by the row's sum)",
        )


def read_submission(competition: Competition, file: SubmissionFile) -> Frame:
    """Read an open submission the one way validation and grading both read it."""
    if not file.name.lower().endswith(".csv"):
        raise InvalidSubmissionError(f"the submission must be a .csv file, got {file.name}")
    return read_csv(file, numeric=numeric_columns(competition.columns, submission=True))

"""The top-level fields of ``competition.yaml``: one definition that the registry reads with and ``podium new``
writes with (docs/declaring.md).

:data:`FIELDS` holds each field in the order a declaration writes it, whether every declaration needs it, and
the one-line comment ``podium new`` puts beside it. The registry refuses a key that is not here (with the
nearest field named), so a misspelt ``metrics:`` or ``awards_medal:`` is an error instead of a setting silently
left at its default; a ``versions:`` block may set these fields too, and ``same_data`` and ``changes`` besides.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from podium.errors import RegistryError
from podium.untrusted import printable

__all__ = ["FIELDS", "VERSION_FIELDS", "Field", "check_fields", "field"]


@dataclass(frozen=True)
class Field:
    """One top-level field: its key, whether every declaration has it, and what it means in one line."""

    key: str
    required: bool
    comment: str


FIELDS: tuple[Field, ...] = (
    Field("id", True, "the competition's id (the Kaggle slug); equals the folder's name"),
    Field("name", True, "its title, as `podium list` shows it"),
    Field("complexity", True, "low | medium | high | dev | practice: MLE-bench's estimate of an expert's time"),
    Field("data_kind", True, "free text, shown by `podium list`"),
    Field("awards_medals", True, "whether Kaggle awarded medals (medals are graded from the thresholds either way)"),
    Field("deadline", False, "the competition's last day (Kaggle's metadata; --ended-after selects by it)"),
    Field("deadline_source", False, "where the deadline comes from: kaggle (its metadata) or declared (your word)"),
    Field("kaggle", False, "what Kaggle said of it when it was declared (metadata only; grading never reads it)"),
    Field("answers", True, "the answers' file in prepared/private/"),
    Field("sample_submission", True, "the sample submission, relative to prepared/"),
    Field("id_columns", True, "the column(s) rows are matched on"),
    Field("columns", True, "the submission's columns in order: name -> kind, or {kind, options}"),
    Field("class_columns", False, "one column per class: {names: [...], kind: ..., options}"),
    Field("answer_columns", False, "answer columns the grader needs beyond the targets, or whose kind differs"),
    Field("targets", False, "submission column -> the answer column it is scored against (default: same name)"),
    Field("metric", True, "a name from podium.metrics, its direction (checked against the table) and options"),
    Field("checks", False, "checks beyond the columns' own (row_sum)"),
    Field("matching", False, "how submission rows are paired with the answers (default: by key)"),
    Field("sample_submission_score", False, "the sample submission's score (`podium check` records it)"),
    Field("leaderboard_exclude_scores", False, "leaderboard scores left out when its figures are derived"),
    Field("fixture", False, "how the conformance suite builds a tiny test set"),
    Field("notes", False, "what a reader of the results should know"),
    Field("prepare", False, "how the raw files become prepared/ (docs/preparing.md)"),
    Field("versions", False, "version 1 is the base above; a later version overrides keys"),
)

#: What a ``versions:`` block may hold besides the fields above.
VERSION_FIELDS = ("same_data", "changes")

_BY_KEY = {f.key: f for f in FIELDS}


def field(key: str) -> Field:
    """The field ``key`` (KeyError for a key that is no field)."""
    return _BY_KEY[key]


def check_fields(data: Mapping[str, Any], where: str) -> None:
    """Raise RegistryError, one line, for a key of ``data`` that is no field (nor of any version's block), naming
    the nearest field, and for a required field left out."""
    _unknown(data, set(_BY_KEY), where)
    missing = [f.key for f in FIELDS if f.required and f.key not in data]
    if missing:
        raise RegistryError(f"{where}: {', '.join(missing)} missing. Fix: declare each (docs/declaring.md)")
    for version, block in (data.get("versions") or {}).items():
        if not isinstance(block, Mapping):
            raise RegistryError(f"{where}: version {version} must be a mapping of fields to override")
        _unknown(block, set(_BY_KEY) - {"id", "versions"} | set(VERSION_FIELDS), f"{where}: version {version}")


def _unknown(data: Mapping[str, Any], allowed: set[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), sorted(allowed), n=1, cutoff=0.6)
            fix = f"did you mean {close[0]!r}?" if close else f"use one of {', '.join(sorted(allowed))}"
            raise RegistryError(
                f"{where}: '{printable(str(key), 80)}' is not a field of a declaration. Fix: {fix} (docs/declaring.md)"
            )

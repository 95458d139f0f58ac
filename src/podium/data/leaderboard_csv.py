"""A Kaggle leaderboard as a CSV file: its scores in rank order, read once for every caller (``podium new
--leaderboard``, ``scripts/derive_leaderboards.py``).

Kaggle's own export has ``TeamId,TeamName,SubmissionDate,Score``; the snapshots the published benchmark ships
have ``scoreNullable,teamId,hasTeamName,submissionDate,score,hasScore``. The score column is the first of
``score``, ``privatescore``, ``scorenullable``, ``publicscore`` (any case) the header has. A cell counts as a
score when it is a finite decimal number (``0.8``, ``-1.5e-3``); a row without one (empty, ``NaN``, ``1e999``,
``hasScore`` false) is left out and counted, as Kaggle lists teams whose submission failed. The file may be
anything a user found: it is read as UTF-8 with undecodable bytes replaced, and bounded in size.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["MAX_BYTES", "LeaderboardScores", "direction_of", "parse_score", "read_leaderboard_csv"]

#: The largest leaderboard file read (Kaggle's largest boards are a few MB).
MAX_BYTES = 64 << 20
_SCORE_COLUMNS = ("score", "privatescore", "scorenullable", "publicscore")
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class LeaderboardScores:
    """The scores of a leaderboard file, best first as the file ranks them."""

    scores: tuple[float, ...]
    rows: int  # data rows in the file
    left_out: int  # rows without a finite score
    column: str  # the header of the score column
    last_submission: str | None = None  # the latest submissionDate, as written (ISO dates compare as text)


def read_leaderboard_csv(path: Path, *, flag: str = "--leaderboard") -> LeaderboardScores:
    """The scores of the leaderboard CSV at ``path``; UsageError, one line naming ``flag`` and the fix, for a
    file that cannot be read, is too large, has no score column, or holds no score at all."""
    shown = printable(str(path), 200)
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise UsageError(
            f"{flag} {shown}: cannot read it ({exc.strerror}). Fix: name Kaggle's leaderboard CSV"
        ) from None
    if not path.is_file() or size > MAX_BYTES:
        raise UsageError(
            f"{flag} {shown}: not a file of at most {MAX_BYTES >> 20} MiB. Fix: name the leaderboard CSV Kaggle exports"
        )
    try:
        with path.open(encoding="utf-8", errors="replace", newline="") as handle:
            rows = list(csv.reader(handle))
    except csv.Error as exc:
        raise UsageError(
            f"{flag} {shown}: not a CSV file ({exc}). Fix: name the leaderboard CSV Kaggle exports"
        ) from None
    header = [cell.strip().lower() for cell in rows[0]] if rows else []
    column = next((name for name in _SCORE_COLUMNS if name in header), None)
    if column is None:
        found = ", ".join(printable(cell, 40) for cell in header[:12]) or "no header"
        raise UsageError(
            f"{flag} {shown}: no score column (the header has {found}). Fix: name Kaggle's leaderboard CSV, whose "
            "header has Score"
        )
    at, has = header.index(column), header.index("hasscore") if "hasscore" in header else None
    scores = [_score(row, at, has) for row in rows[1:]]
    kept = tuple(s for s in scores if s is not None)
    if not kept:
        raise UsageError(
            f"{flag} {shown}: none of its {len(scores)} rows has a score in column '{printable(rows[0][at], 40)}'. Fix: export the "
            "leaderboard of a competition whose scores are public (its private leaderboard, once it has ended)"
        )
    dated = header.index("submissiondate") if "submissiondate" in header else None
    dates = [r[dated].strip() for r in rows[1:] if dated is not None and dated < len(r) and r[dated].strip()]
    last = printable(max(dates), 40) if dates else None
    return LeaderboardScores(kept, len(scores), len(scores) - len(kept), printable(rows[0][at].strip(), 40), last)


def _score(row: Sequence[str], at: int, has: int | None) -> float | None:
    if at >= len(row) or (has is not None and has < len(row) and row[has].strip().lower() == "false"):
        return None
    return parse_score(row[at])


def parse_score(text: str) -> float | None:
    """A leaderboard cell's score: a finite decimal number, else None."""
    text = text.strip()
    if not _DECIMAL.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def direction_of(scores: Sequence[float]) -> bool | None:
    """Whether a board listed best first says higher is better (its first score above its last); None when they
    are equal, which says nothing."""
    if len(scores) < 2 or scores[0] == scores[-1]:
        return None
    return scores[0] > scores[-1]

"""Reading CSV files robustly into named numpy columns.

Every cell is read as text first (so ``"00012"`` and ``"NA"`` survive as written), then each
declared column is converted by its kind in :mod:`podium.submission`. Handles a UTF-8 byte-order
mark, non-UTF-8 encodings (cp1252 / latin-1), quoted fields with embedded newlines and commas, and
whitespace around header names.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from podium.errors import InvalidSubmissionError

__all__ = ["Frame", "read_csv"]

_FALLBACK_ENCODINGS = ("cp1252", "latin-1")


@dataclass
class Frame:
    """Columns of equal length, by name, in file order. Cells are ``str`` unless converted."""

    columns: dict[str, np.ndarray]
    n_rows: int

    @property
    def names(self) -> list[str]:
        return list(self.columns)

    def take(self, order: np.ndarray) -> Frame:
        return Frame({k: v[order] for k, v in self.columns.items()}, len(order))

    def __getitem__(self, name: str) -> np.ndarray:
        return self.columns[name]


def _header(path: Path, encoding: str) -> list[str]:
    with path.open(encoding="utf-8-sig" if encoding == "utf8" else encoding, newline="") as handle:
        return next(csv.reader(handle), [])


def _read(path: Path, encoding: str) -> pa.Table:
    # Every column as text: kinds decide conversion, and nothing is guessed.
    types = {name: pa.string() for name in _header(path, encoding)}
    return pacsv.read_csv(
        path,
        read_options=pacsv.ReadOptions(encoding=encoding, block_size=1 << 24),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False
        ),
    )


def read_csv(path: str | Path, *, what: str = "submission") -> Frame:
    """Read a CSV file into a :class:`Frame` of text columns.

    Raises :class:`InvalidSubmissionError` for an unreadable file (empty, ragged rows, duplicate
    header names); callers reading podium's own answers turn that into a harness error.
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise InvalidSubmissionError(
            f"the {what} file {path.name} is empty", fix="write a header line and one row per id"
        )
    table: pa.Table | None = None
    for encoding in ("utf8", *_FALLBACK_ENCODINGS):
        try:
            table = _read(path, encoding)
            break
        except UnicodeDecodeError:
            continue
        except pa.ArrowInvalid as exc:
            message = str(exc)
            if "utf8" in message.lower():
                continue
            raise InvalidSubmissionError(
                f"the {what} file {path.name} is not a well-formed CSV: {_first_line(message)}",
                fix="write one header line and the same number of comma-separated fields on every row; quote fields that contain commas or newlines",
            ) from None
    assert table is not None  # latin-1 decodes any byte string
    names = [n.strip().lstrip("\ufeff") for n in table.column_names]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidSubmissionError(
            f"the {what} header repeats column names", examples=duplicated, fix="give every column a unique name"
        )
    columns = {
        name: table.column(i).to_numpy(zero_copy_only=False).astype(object, copy=False) for i, name in enumerate(names)
    }
    return Frame(columns, table.num_rows)


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else message


def frame_from_records(names: Iterable[str], rows: Iterable[Iterable[object]]) -> Frame:
    """Build a text Frame from Python rows (used by hooks that load non-CSV answers)."""
    names = list(names)
    data = [list(r) for r in rows]
    columns = {
        n: np.array(["" if row[i] is None else str(row[i]) for row in data], dtype=object) for i, n in enumerate(names)
    }
    return Frame(columns, len(data))

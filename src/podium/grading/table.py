"""Reading CSV files robustly into named numpy columns.

Every cell is read as text first (so ``"00012"`` and ``"NA"`` survive as written), then each
declared column is converted by its kind in :mod:`podium.grading.columns`. Handles a UTF-8 byte-order
mark, non-UTF-8 encodings (cp1252 / latin-1), quoted fields with embedded newlines and commas, and
whitespace around header names.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from podium.arrow import from_numpy, strings, to_numpy
from podium.errors import InvalidSubmissionError, quote, shorten
from podium.grading.files import SubmissionFile, open_trusted

__all__ = ["Frame", "frame_from_records", "from_numpy", "read_csv", "strings", "to_numpy", "write_csv"]

_FALLBACK_ENCODINGS = ("cp1252", "latin-1")


class Frame:
    """Columns of equal length, by name, in file order. Cells are text unless converted.

    A frame read from CSV keeps its columns as Arrow string arrays, so the grader can check and
    align millions of rows without making Python strings; ``frame[name]`` and ``frame.columns``
    give numpy object arrays (made on first use), which is what hooks and tests work with.
    """

    def __init__(
        self,
        columns: Mapping[str, np.ndarray] | None = None,
        n_rows: int = 0,
        *,
        arrow: Mapping[str, pa.Array | pa.ChunkedArray] | None = None,
        reread: Callable[[], Frame] | None = None,
    ) -> None:
        self._numpy: dict[str, np.ndarray] | None = dict(columns) if columns is not None else None
        self._arrow: dict[str, pa.Array | pa.ChunkedArray] = dict(arrow or {})
        self.n_rows = n_rows
        self._reread = reread
        self._text: Frame | None = None

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """Every column as a numpy array; once asked for, these are the frame's truth."""
        if self._numpy is None:
            self._numpy = {k: _to_numpy(v) for k, v in self._arrow.items()}
            self._arrow = {}
        return self._numpy

    @property
    def names(self) -> list[str]:
        return list(self._numpy if self._numpy is not None else self._arrow)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __getitem__(self, name: str) -> np.ndarray:
        if self._numpy is not None:
            return self._numpy[name]
        return _to_numpy(self._arrow[name])

    def arrow(self, name: str) -> pa.Array | pa.ChunkedArray:
        """One column as Arrow (strings for text columns)."""
        if self._numpy is not None:
            return from_numpy(self._numpy[name])
        return self._arrow[name]

    def text(self, name: str) -> pa.Array | pa.ChunkedArray | None:
        """A column parsed as numbers while reading, as the text cells written in the file (the
        file is read again, once); None for a column that was read as text."""
        if self._reread is None or self._numpy is not None or pa.types.is_string(self._arrow[name].type):
            return None
        if self._text is None:
            self._text = self._reread()
        return self._text.arrow(name)

    def take(self, order: np.ndarray) -> Frame:
        if self._numpy is not None:
            return Frame({k: v[order] for k, v in self._numpy.items()}, len(order))
        indices = from_numpy(np.asarray(order, dtype=np.int64))
        return Frame(arrow={k: v.take(indices) for k, v in self._arrow.items()}, n_rows=len(order))


def _to_numpy(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    return to_numpy(values)


_PARSE = pacsv.ParseOptions(newlines_in_values=True)
_BLOCK = 1 << 24
_PROBE_BLOCK = 1 << 20


def _header(file: SubmissionFile, encoding: str) -> list[str]:
    """The header's column names as written, read by Arrow (as the rows will be)."""
    block = _PROBE_BLOCK
    while True:
        try:
            with file.reader() as handle:
                reader = pacsv.open_csv(
                    handle, read_options=pacsv.ReadOptions(encoding=encoding, block_size=block), parse_options=_PARSE
                )
                return list(reader.schema.names)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc) or block > file.size:
                raise
            block *= 16


def _read(file: SubmissionFile, encoding: str, numeric: Mapping[str, str] | None = None) -> pa.Table:
    # Text unless the caller knows a column is numeric: kinds decide conversion, nothing is guessed.
    numeric = numeric or {}
    arrow_types = {"float": pa.float64(), "int": pa.int64()}
    types = {}
    for name in _header(file, encoding):
        key = name.strip().lstrip("\ufeff")
        types[name] = arrow_types[numeric[key]] if key in numeric else pa.string()
    block = _BLOCK
    while True:
        try:
            with file.reader() as handle:
                return pacsv.read_csv(
                    handle,
                    read_options=pacsv.ReadOptions(encoding=encoding, block_size=block),
                    parse_options=_PARSE,
                    convert_options=pacsv.ConvertOptions(
                        column_types=types, strings_can_be_null=False, quoted_strings_can_be_null=False
                    ),
                )
        except pa.ArrowInvalid as exc:  # a row longer than a block: read in one block
            if "straddl" not in str(exc) or block > file.size:
                raise
            block = min(file.size + 1, 2**31 - 1)


def read_csv(
    source: str | Path | SubmissionFile, *, what: str = "submission", numeric: Mapping[str, str] | None = None
) -> Frame:
    """Read a CSV file into a :class:`Frame` of text columns.

    ``source`` is a path (podium's own files) or an open :class:`~podium.grading.files.SubmissionFile`
    (a submission, opened safely; it must stay open while the frame is checked).

    Columns named in ``numeric`` (name -> "float" or "int") are parsed while reading (empty and
    NaN-like cells become nulls), which saves a text copy of large numeric columns; if any such
    cell does not parse, the file is read again as text so the checks can name the offending cells,
    and :meth:`Frame.text` gives a parsed column's cells as written (read again on demand).

    Raises :class:`InvalidSubmissionError` for an unreadable file (empty, ragged rows, duplicate
    header names); callers reading podium's own answers turn that into a harness error.
    """
    if isinstance(source, SubmissionFile):
        return _read_file(source, what, numeric, keep=True)
    with open_trusted(source) as file:
        return _read_file(file, what, numeric, keep=False)


def _read_file(file: SubmissionFile, what: str, numeric: Mapping[str, str] | None, *, keep: bool) -> Frame:
    if file.size == 0:
        raise InvalidSubmissionError(
            f"the {what} file {file.name} is empty", fix="write a header line and one row per id"
        )
    table: pa.Table | None = None
    for encoding in ("utf8", *_FALLBACK_ENCODINGS):
        try:
            table = _read(file, encoding, numeric)
            break
        except UnicodeDecodeError:
            continue
        except pa.ArrowInvalid as exc:
            message = str(exc)
            if "utf8" in message.lower():
                continue
            if numeric and "conversion error" in message.lower():
                numeric = None  # a cell that does not parse: read as text, the checks name it
                try:
                    table = _read(file, encoding)
                    break
                except pa.ArrowInvalid as again:
                    message = str(again)
            raise InvalidSubmissionError(
                f"the {what} file {file.name} is not a well-formed CSV: {shorten(_first_line(message), 300)}",
                fix="write one header line and the same number of comma-separated fields on every row; quote fields that contain commas or newlines",
            ) from None
    assert table is not None  # latin-1 decodes any byte string
    names = [n.strip().lstrip("\ufeff") for n in table.column_names]
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InvalidSubmissionError(
            f"the {what} header repeats column names",
            examples=[quote(n) for n in duplicated],
            fix="give every column a unique name",
        )
    typed = any(not pa.types.is_string(t) for t in table.schema.types)
    reread = (lambda: _read_file(file, what, None, keep=False)) if keep and typed else None
    return Frame(arrow={name: table.column(i) for i, name in enumerate(names)}, n_rows=table.num_rows, reread=reread)


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


def write_csv(frame: Frame, path: Path) -> Path:
    """Write a text Frame as CSV (quoting as needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(frame.names)
        writer.writerows(zip(*(frame[c] for c in frame.names), strict=True))
    return path

"""The streamed engine of the declarative split (``engine: stream``; the declaration is
``podium.data.spec.SplitSpec``, the whole declarative prepare ``podium.data.declared``).

Rows are streamed in blocks, so a CSV of many gigabytes is split in bounded memory: a first pass
counts the rows, scikit-learn's ``train_test_split`` on the row numbers picks the test rows (the
same rows it picks on the whole table with the same ``test_size`` and ``random_state``), and a
second pass routes each block's rows to the output files, in file order. Cells are copied as text,
unchanged. (``engine: pandas``, in ``podium.data.declared``, reads the table with pandas and splits
it as the published prepare scripts do.)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from podium.data.options import SpecError
from podium.data.spec import SplitSpec
from podium.grading.table import from_numpy

__all__ = ["count_rows", "split_csv", "test_mask"]

_BLOCK = 1 << 24


def _header(path: Path) -> list[str]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        return next(csv.reader(handle))


def _batches(path: Path) -> Iterator[pa.RecordBatch]:
    names = _header(path)
    reader = pacsv.open_csv(
        path,
        read_options=pacsv.ReadOptions(block_size=_BLOCK),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in names}, strings_can_be_null=False, quoted_strings_can_be_null=False
        ),
    )
    yield from reader


def count_rows(path: Path) -> int:
    return sum(batch.num_rows for batch in _batches(path))


def test_mask(n_rows: int, test_size: float | int, random_state: int) -> np.ndarray:
    """Boolean mask of the rows ``train_test_split`` puts in the test set."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(n_rows, dtype=np.int32 if n_rows < 2**31 else np.int64)  # half the memory on big files
    _, test_rows = train_test_split(rows, test_size=test_size, random_state=random_state)
    mask = np.zeros(n_rows, dtype=bool)
    mask[test_rows] = True
    return mask


_NEEDS_QUOTES = r'[,"\r\n]'


def _needs_quotes(batch: pa.RecordBatch) -> bool:
    return any(pc.any(pc.match_substring_regex(column, _NEEDS_QUOTES)).as_py() for column in batch.columns)


class _Writer:
    """Appends batches to a CSV file, quoting only the blocks whose cells need quotes."""

    def __init__(self, path: Path, columns: Sequence[str] | None) -> None:
        self.path, self.columns = path, columns
        self.handle: BinaryIO | None = None
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if self.columns is not None:
            batch = batch.select(list(self.columns))
        if self.handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.handle = self.path.open("wb")
            header = io.StringIO()
            csv.writer(header, lineterminator="\n").writerow(batch.schema.names)
            self.handle.write(header.getvalue().encode())
        if batch.num_rows:
            style = "needed" if _needs_quotes(batch) else "none"
            sink = pa.BufferOutputStream()
            pacsv.write_csv(batch, sink, write_options=pacsv.WriteOptions(include_header=False, quoting_style=style))
            self.handle.write(sink.getvalue().to_pybytes())
        self.rows += batch.num_rows

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()


def split_csv(spec: SplitSpec, raw: Path, public: Path, private: Path, answers_file: str) -> tuple[int, int]:
    """Split ``raw/spec.source``; returns (train rows, test rows)."""
    if spec.engine != "stream" or spec.train_file is None or spec.test_file is None:
        raise SpecError(f"split_csv runs engine: stream with train_file and test_file, not {spec}")
    source = raw / spec.source
    names = _header(source)
    missing = [c for c in (*spec.drop_from_test, *(spec.answer_columns or ())) if c not in names]
    if missing:
        raise ValueError(f"{source} lacks column(s) {missing}; found {names}")
    n_rows = count_rows(source)
    test_size = spec.resolved_test_size(n_rows)
    assert test_size is not None and not isinstance(test_size, str)
    mask = test_mask(n_rows, test_size, spec.random_state)
    kept = [c for c in names if c not in spec.drop_from_test]
    writers = {
        "train": _Writer(public / spec.train_file, None),
        "test": _Writer(public / spec.test_file, kept),
        "answers": _Writer(private / answers_file, spec.answer_columns),
    }
    start = 0
    try:
        for batch in _batches(source):
            in_test = mask[start : start + batch.num_rows]
            start += batch.num_rows
            test = batch.filter(from_numpy(in_test))
            writers["train"].write(batch.filter(from_numpy(~in_test)))
            writers["test"].write(test)
            writers["answers"].write(test)
    finally:
        for writer in writers.values():
            writer.close()
    return writers["train"].rows, writers["test"].rows

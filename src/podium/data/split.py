"""The declarative split: what ``prepare: split:`` in competition.yaml says, and its streamed engine.

``SplitSpec`` is the parsed declaration (every key is documented in docs/preparing.md). Two engines
run it (``podium.data.declared`` runs the whole declarative prepare):

- ``stream`` (the default): rows are streamed in blocks, so a CSV of many gigabytes is split in
  bounded memory: a first pass counts the rows, scikit-learn's ``train_test_split`` on the row
  numbers picks the test rows (the same rows it picks on the whole table with the same
  ``test_size`` and ``random_state``), and a second pass routes each block's rows to the output
  files, in file order. Cells are copied as text, unchanged.
- ``pandas``: the table is read with pandas and split as the published prepare scripts do
  (``train_test_split`` on the frame, rows in its order; a group split keeps file order).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from podium.grading.table import from_numpy

__all__ = [
    "Archive",
    "Files",
    "Output",
    "Renumber",
    "SpecError",
    "SplitSpec",
    "Table",
    "count_rows",
    "read_options",
    "split_csv",
    "test_mask",
    "zip_member",
]

_BLOCK = 1 << 24


ENGINES = ("stream", "pandas")
ROWS = ("train", "test")
#: ``read:`` shorthands: how pandas reads the cells (``text``: every cell as written; ``pandas``: its defaults).
READ_MODES: dict[str, dict[str, Any]] = {"text": {"dtype": str, "keep_default_na": False}, "pandas": {}}
_READ_OPTIONS = frozenset({"dtype", "keep_default_na", "na_values", "sep", "float_precision"})
#: ``write:`` keys: the ``to_csv`` options a declaration may pass (``index: true`` writes pandas' row labels).
_WRITE_OPTIONS = frozenset({"sep", "float_format", "index", "quoting"})
#: ``write: {quoting: ...}``: the csv module's quoting styles by name.
QUOTING = {
    "minimal": csv.QUOTE_MINIMAL,
    "all": csv.QUOTE_ALL,
    "nonnumeric": csv.QUOTE_NONNUMERIC,
    "none": csv.QUOTE_NONE,
}
#: ``assign: {column: {random: ...}}``: the generators and their draws.
RANDOM_RNGS = ("RandomState", "default_rng")
RANDOM_DRAWS = ("randint", "uniform")
#: How a zip the prepare writes stores its members (``archives:``).
COMPRESSIONS = ("deflated", "stored")
TIMES = ("fixed", "source")


class SpecError(ValueError):
    """A ``prepare:`` declaration that cannot be run; the message names the key."""


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)):
        raise SpecError(f"{where}: expected a list of column names, got {value!r}")
    return tuple(str(v) for v in value)


def _keys(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(raw) - known)
    if unknown:
        raise SpecError(f"{where}: unknown key(s) {unknown}; known: {sorted(known)}")


def zip_member(path: str) -> tuple[str, str] | None:
    """``(archive, member)`` for a path into a zip (``train.zip:train/{id}.jpg``), None for a plain path."""
    if ".zip:" not in path:
        return None
    archive, member = path.split(".zip:", 1)
    return f"{archive}.zip", member


def _archive_of(path: str) -> str | None:
    member = zip_member(path)
    return None if member is None else member[0]


def read_options(read: Any, where: str = "read") -> dict[str, Any]:
    """pandas ``read_csv`` keyword arguments for a ``read:`` declaration (``"str"`` means Python's str;
    ``float_precision: round_trip`` is passed only where it is not pandas' default, as
    ``podium.grading.published.pandas_read_options``)."""
    if isinstance(read, str):
        if read not in READ_MODES:
            raise SpecError(f"{where}: {read!r} is not one of {sorted(READ_MODES)} (or a mapping of read_csv options)")
        return dict(READ_MODES[read])
    if not isinstance(read, Mapping):
        raise SpecError(f"{where}: expected {sorted(READ_MODES)} or a mapping, got {read!r}")
    _keys(read, set(_READ_OPTIONS), where)
    options = dict(read)
    dtype = options.get("dtype")
    if dtype == "str":
        options["dtype"] = str
    elif isinstance(dtype, Mapping):
        options["dtype"] = {str(k): str if v == "str" else v for k, v in dtype.items()}
    if "float_precision" in options:
        from podium.grading.published import pandas_read_options

        if options.pop("float_precision") != "round_trip":
            raise SpecError(f"{where}: float_precision: round_trip is the one value (the published harness's)")
        options.update(pandas_read_options())
    return options


def write_options(write: Any, where: str = "write") -> dict[str, Any]:
    """pandas ``to_csv`` keyword arguments for a ``write:`` declaration."""
    if write is None:
        return {}
    if not isinstance(write, Mapping):
        raise SpecError(f"{where}: expected a mapping of to_csv options {sorted(_WRITE_OPTIONS)}, got {write!r}")
    _keys(write, set(_WRITE_OPTIONS), where)
    options = dict(write)
    if "quoting" in options:
        if options["quoting"] not in QUOTING:
            raise SpecError(f"{where}: quoting is one of {sorted(QUOTING)}, got {options['quoting']!r}")
        options["quoting"] = QUOTING[options["quoting"]]
    return options


def _assigned(value: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A checked computed assignment: ``{format: TEMPLATE}`` (a Python format string over the row),
    ``{column: NAME}`` (that column's values) or ``{random: ...}`` (see ``draw``)."""
    kinds = [k for k in ("format", "column", "random") if k in value]
    if len(kinds) != 1:
        raise SpecError(f"{where}: a computed column is one of {{format: ...}}, {{column: ...}}, {{random: ...}}")
    if kinds[0] != "random":
        _keys(value, {kinds[0]}, where)
        return {kinds[0]: str(value[kinds[0]])}
    _keys(value, {"random", "low", "high", "seed", "rng", "round"}, where)
    missing = [k for k in ("random", "low", "high", "seed", "rng") if k not in value]
    if missing:
        raise SpecError(f"{where}: a random column needs {missing} (random, low, high, seed, rng; round optional)")
    if value["random"] not in RANDOM_DRAWS or value["rng"] not in RANDOM_RNGS:
        raise SpecError(f"{where}: random is one of {RANDOM_DRAWS} and rng one of {RANDOM_RNGS}, got {dict(value)}")
    return dict(value)


def draw(value: Mapping[str, Any], n: int) -> np.ndarray:
    """The ``n`` values of a random column: one generator seeded ``seed``, one call of size ``n``
    (``RandomState(seed).randint(low, high, size=n)``, ``default_rng(seed).uniform(low, high, n)``, ...),
    rounded to ``round`` decimals when given."""
    low, high = value["low"], value["high"]
    if value["rng"] == "RandomState":
        legacy = np.random.RandomState(value["seed"])
        values = legacy.randint(low, high, size=n) if value["random"] == "randint" else legacy.uniform(low, high, n)
    else:
        rng = np.random.default_rng(value["seed"])
        values = rng.integers(low, high, size=n) if value["random"] == "randint" else rng.uniform(low, high, n)
    if value.get("round") is not None:
        values = values.round(int(value["round"]))
    return np.asarray(values)


@dataclass(frozen=True)
class Output:
    """One table written from one side of the split (``outputs:``), built in this order: the
    ``columns`` kept (all by default) less ``drop``, ``one_hot`` columns appended, ``rename``,
    ``assign`` (a constant per column), ``defaults`` (every non-id submission column set to its
    declared ``default``)."""

    rows: str = "test"
    columns: tuple[str, ...] | None = None
    drop: tuple[str, ...] = ()
    one_hot: tuple[str, tuple[str, ...] | None] | None = None  # (source column, classes; None: the submission's)
    rename: Mapping[str, str] = field(default_factory=dict)
    assign: Mapping[str, Any] = field(default_factory=dict)  # a constant, or {format | column | random: ...}
    defaults: bool = False
    write: Mapping[str, Any] | None = None  # to_csv options; None: the split's ``write``

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None, where: str) -> Output:
        raw = dict(raw or {})
        _keys(raw, {"rows", "columns", "drop", "one_hot", "rename", "assign", "defaults", "write"}, where)
        rows = raw.get("rows", "test")
        if rows not in ROWS:
            raise SpecError(f"{where}: rows must be one of {ROWS}, got {rows!r}")
        one_hot = raw.get("one_hot")
        if one_hot is not None:
            if not isinstance(one_hot, Mapping) or set(one_hot) - {"column", "classes"} or "column" not in one_hot:
                raise SpecError(f"{where}: one_hot takes {{column: NAME, classes: [...]}} (classes: optional)")
            classes = one_hot.get("classes")
            one_hot = (
                str(one_hot["column"]),
                None if classes is None else _strings(classes, f"{where}: one_hot.classes"),
            )
        return cls(
            rows=rows,
            columns=None if raw.get("columns") is None else _strings(raw["columns"], f"{where}: columns"),
            drop=_strings(raw.get("drop", []), f"{where}: drop"),
            one_hot=one_hot,
            rename={str(k): str(v) for k, v in (raw.get("rename") or {}).items()},
            assign={
                str(k): _assigned(v, f"{where}: assign: {k}") if isinstance(v, Mapping) else v
                for k, v in (raw.get("assign") or {}).items()
            },
            defaults=bool(raw.get("defaults", False)),
            write=None if raw.get("write") is None else write_options(raw["write"], f"{where}: write"),
        )

    @property
    def random(self) -> dict[str, Mapping[str, Any]]:
        """The columns this output draws at random."""
        return {k: v for k, v in self.assign.items() if isinstance(v, Mapping) and "random" in v}


def _outputs(raw: Any, where: str) -> dict[str, Output | None]:
    """Prepared path -> table; None (``path: null``) leaves out a default table at that path."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise SpecError(f"{where}: expected a mapping of prepared paths (public/..., private/...) to tables")
    out: dict[str, Output | None] = {}
    for path, spec in raw.items():
        if not str(path).startswith(("public/", "private/")):
            raise SpecError(f"{where}: {path!r} must start with public/ or private/")
        if spec is None and zip_member(str(path)):
            raise SpecError(f"{where}: {path!r}: null leaves out a default table; a zip member is none")
        out[str(path)] = None if spec is None else Output.from_dict(spec, f"{where}: {path}")
    return out


@dataclass(frozen=True)
class Table:
    """Another raw table whose rows follow the split through a shared ``key`` column (``tables:``)."""

    source: str
    key: str
    read: Mapping[str, Any]
    outputs: Mapping[str, Output | None]

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str) -> Table:
        _keys(raw, {"source", "key", "read", "outputs"}, where)
        if "source" not in raw or "key" not in raw:
            raise SpecError(f"{where}: a table needs source and key")
        where = f"{where} ({raw['source']})"
        return cls(
            str(raw["source"]),
            str(raw["key"]),
            read_options(raw.get("read", "text"), f"{where}: read"),
            _outputs(raw.get("outputs"), f"{where}: outputs"),
        )


@dataclass(frozen=True)
class Files:
    """Raw files (or folders) that follow their row: ``from`` a raw path, to ``train``/``test`` prepared
    paths, each a Python format string over the row's columns (``{id}``, ``{id[0]}``; ``from`` over the
    row as read, the targets over the row as written, after ``renumber``). A path may name a member
    of a zip, ``ARCHIVE.zip:MEMBER`` (a raw zip for ``from``, a zip the prepare writes for a target)."""

    source: str
    train: str | None = None
    test: str | None = None

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str) -> Files:
        _keys(raw, {"from", "train", "test"}, where)
        if "from" not in raw or not ({"train", "test"} & set(raw)):
            raise SpecError(f"{where}: an entry needs from and at least one of train, test")
        for side in ("train", "test"):
            if raw.get(side) is not None and not str(raw[side]).startswith("public/"):
                raise SpecError(f"{where}: {side} {raw[side]!r} must start with public/")
            target = zip_member(str(raw.get(side) or ""))
            if target is not None and "{" in target[0]:
                raise SpecError(f"{where}: {side} {raw[side]!r}: the archive's name cannot depend on the row")
        source = zip_member(str(raw["from"]))
        if source is not None and "{" in source[0]:
            raise SpecError(f"{where}: from {raw['from']!r}: the archive's name cannot depend on the row")
        return cls(str(raw["from"]), raw.get("train"), raw.get("test"))


@dataclass(frozen=True)
class Renumber:
    """``renumber:``: after the split, a column is rewritten with each row's number on its side, in the
    side's order (``start``, ``start + 1``, ...), or with each distinct value's (``by: value``: in
    order of first appearance, as ``pandas.factorize``); ``sides: continued`` numbers the test rows on
    from the train rows; ``format`` (one template, or one per side) writes each number as text."""

    column: str
    start: int = 0
    sides: str = "separate"  # separate | continued
    format: Mapping[str, str] | None = None  # side -> template over {n}
    by: str = "row"  # row | value

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Renumber:
        if not isinstance(raw, Mapping) or "column" not in raw:
            raise SpecError(
                f"{where}: renumber takes {{column: NAME, start: N, sides: separate|continued, format: ...}}"
            )
        _keys(raw, {"column", "start", "sides", "format", "by"}, where)
        sides = raw.get("sides", "separate")
        if sides not in ("separate", "continued"):
            raise SpecError(f"{where}: sides must be separate or continued, got {sides!r}")
        by = raw.get("by", "row")
        if by not in ("row", "value"):
            raise SpecError(f"{where}: by must be row or value, got {by!r}")
        form = raw.get("format")
        if isinstance(form, str):
            form = dict.fromkeys(ROWS, form)
        elif form is not None:
            if not isinstance(form, Mapping) or set(form) != set(ROWS):
                raise SpecError(f"{where}: format is one template over {{n}}, or one per side (train, test)")
            form = {str(k): str(v) for k, v in form.items()}
        return cls(str(raw["column"]), int(raw.get("start", 0)), sides, form, by)

    def numbers(self, side: str, codes: np.ndarray, n_train: int) -> list[Any] | np.ndarray:
        """The new values of a side's rows, from their codes (0, 1, ... per row or per distinct value)
        and ``n_train``, the number the train side used (its rows or distinct values)."""
        first = self.start + (n_train if side == "test" and self.sides == "continued" else 0)
        numbers = codes + first
        if self.format is None:
            return numbers
        return [self.format[side].format(n=int(i)) for i in numbers]


@dataclass(frozen=True)
class Archive:
    """How a zip the prepare writes stores its members (``archives:``): ``compression`` deflated or
    stored, and each member's time ``fixed`` (1980-01-01 00:00) or that of the raw ``source`` member
    it was copied from."""

    compression: str = "deflated"
    times: str = "fixed"

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> Archive:
        raw = dict(raw or {})
        _keys(raw, {"compression", "times"}, where)
        archive = cls(**raw)
        if archive.compression not in COMPRESSIONS or archive.times not in TIMES:
            raise SpecError(f"{where}: compression is one of {COMPRESSIONS}, times one of {TIMES}, got {raw}")
        return archive


@dataclass(frozen=True)
class SplitSpec:
    """A declarative split, as written under ``prepare: split:`` in competition.yaml."""

    source: str
    test_size: float | int | str | None = None  # "all": no split, the whole source is the test set
    random_state: int = 0
    train_file: str | None = "train.csv"
    test_file: str | None = "test.csv"
    drop_from_test: tuple[str, ...] = ()
    answer_columns: tuple[str, ...] | None = None  # None: every column
    engine: str = "stream"
    train_size: float | int | None = None
    small_test_size: float | int | None = None  # used when the source has no more rows (or groups) than test_size
    zip: str | None = None  # the source is a member of this raw zip (pandas engine)
    read: Mapping[str, Any] = field(default_factory=lambda: dict(READ_MODES["text"]))
    group: str | None = None  # split this column's distinct values; each value's rows go to one side
    groups: str = "appearance"  # order of the distinct values given to train_test_split: appearance | sorted
    outputs: Mapping[str, Output | None] = field(default_factory=dict)
    tables: tuple[Table, ...] = ()
    files: tuple[Files, ...] = ()
    renumber: Renumber | None = None
    write: Mapping[str, Any] = field(default_factory=dict)  # to_csv options of every table written (pandas)
    archives: Mapping[str, Archive] = field(default_factory=dict)  # zip written -> how its members are stored

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any], where: str = "prepare.split") -> SplitSpec:
        known = {f for f in cls.__dataclass_fields__}
        _keys(raw, known, where)
        if "source" not in raw:
            raise SpecError(f"{where}: source is required")
        fields: dict[str, Any] = dict(raw)
        fields["drop_from_test"] = _strings(fields.get("drop_from_test", []), f"{where}: drop_from_test")
        if fields.get("answer_columns") is not None:
            fields["answer_columns"] = _strings(fields["answer_columns"], f"{where}: answer_columns")
        fields["read"] = read_options(fields.get("read", "text"), f"{where}: read")
        fields["outputs"] = _outputs(fields.get("outputs"), f"{where}: outputs")
        fields["tables"] = tuple(Table.from_dict(t, f"{where}: tables") for t in fields.get("tables") or ())
        fields["files"] = tuple(Files.from_dict(f, f"{where}: files") for f in fields.get("files") or ())
        if fields.get("renumber") is not None:
            fields["renumber"] = Renumber.from_dict(fields["renumber"], f"{where}: renumber")
        fields["write"] = write_options(fields.get("write"), f"{where}: write")
        archives = fields.get("archives") or {}
        if not isinstance(archives, Mapping):
            raise SpecError(f"{where}: archives maps the zips written (public/NAME.zip) to {{compression, times}}")
        fields["archives"] = {str(k): Archive.from_dict(v, f"{where}: archives: {k}") for k, v in archives.items()}
        spec = cls(**fields)
        spec._check(where)
        return spec

    def _check(self, where: str) -> None:
        if self.engine not in ENGINES:
            raise SpecError(f"{where}: engine must be one of {ENGINES}, got {self.engine!r}")
        if self.test_size is None and self.train_size is None:
            raise SpecError(f"{where}: test_size (or train_size) is required")
        if isinstance(self.test_size, str) and self.test_size != "all":
            raise SpecError(f"{where}: test_size is a fraction, a row count or 'all', got {self.test_size!r}")
        if self.groups not in ("appearance", "sorted"):
            raise SpecError(f"{where}: groups must be appearance or sorted, got {self.groups!r}")
        written = {member[0] for member in map(zip_member, self.written_paths()) if member is not None}
        unknown = sorted(set(self.archives) - written)
        if unknown:
            raise SpecError(f"{where}: archives: {unknown} are not zips the split writes; it writes {sorted(written)}")
        sourced = {name for name, archive in self.archives.items() if archive.times == "source"}
        tables = [p for p in self.written_paths(files=False) if _archive_of(p) in sourced]
        loose = [
            f.source
            for f in self.files
            if _archive_of(f.source) is None and any(_archive_of(t) in sourced for t in (f.train, f.test) if t)
        ]
        if tables or loose:
            raise SpecError(
                f"{where}: archives: times: source takes a member's time from the raw zip member it copies;"
                f" {tables + loose} come from no raw zip"
            )
        if self.engine == "stream":
            pandas_only = {
                "group": self.group,
                "train_size": self.train_size,
                "tables": self.tables,
                "files": self.files,
                "read": self.read != READ_MODES["text"],
                "test_size: all": self.test_size == "all",
                "train_file: null": self.train_file is None,
                "test_file: null": self.test_file is None,
                "renumber": self.renumber,
                "write": self.write,
            }
            used = [k for k, v in pandas_only.items() if v]
            if used:
                raise SpecError(f"{where}: {', '.join(used)} need engine: pandas")
            if any(o is None or o.rows != "test" for o in self.outputs.values()):
                raise SpecError(f"{where}: with engine: stream, outputs are built from the test rows only")
            zipped = [p for p in self.written_paths() if zip_member(p) is not None]
            if zipped:
                raise SpecError(f"{where}: {zipped}: tables written into a zip need engine: pandas")

    def written_paths(self, *, files: bool = True) -> list[str]:
        """Every prepared path a table (or a file) of this split may be written to (templates unformatted)."""
        paths = [p for p in (self.train_file, self.test_file) if p is not None]
        paths = [f"public/{p}" for p in paths] + list(self.outputs)
        paths += [p for t in self.tables for p in t.outputs]
        if files:
            paths += [p for f in self.files for p in (f.train, f.test) if p is not None]
        return paths

    def resolved_test_size(self, n: int) -> float | int | None:
        """``test_size``, or ``small_test_size`` when ``n`` (rows or groups) is no more than a row-count test_size."""
        size = self.test_size
        if isinstance(size, str):  # "all": no split
            return None
        if self.small_test_size is not None and isinstance(size, int) and n <= size:
            return self.small_test_size
        return size


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

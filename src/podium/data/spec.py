"""``prepare: split:`` parsed: ``SplitSpec`` and its parts (``outputs``, ``tables``, ``files``,
``renumber``, ``archives``). Every key is documented in docs/preparing.md; the engines that run a
spec are ``podium.data.split`` (stream) and ``podium.data.declared`` (pandas).
"""

from __future__ import annotations

import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from podium.data.options import (
    READ_MODES,
    SpecError,
    check_keys,
    column_names,
    computed_column,
    read_options,
    write_options,
)

__all__ = [
    "ENGINES",
    "ROWS",
    "Archive",
    "Files",
    "Output",
    "Renumber",
    "SplitSpec",
    "Table",
    "template_fields",
    "zip_member",
]

ENGINES = ("stream", "pandas")


ROWS = ("train", "test")


#: How a zip the prepare writes stores its members (``archives:``).
COMPRESSIONS = ("deflated", "stored")


TIMES = ("fixed", "source")


def zip_member(path: str) -> tuple[str, str] | None:
    """``(archive, member)`` for a path into a zip (``train.zip:train/{id}.jpg``), None for a plain path."""
    if ".zip:" not in path:
        return None
    archive, member = path.split(".zip:", 1)
    return f"{archive}.zip", member


def _archive_of(path: str) -> str | None:
    member = zip_member(path)
    return None if member is None else member[0]


def template_fields(template: str) -> list[str]:
    """The row columns a path template uses (``{id[0]}`` uses ``id``)."""
    names = []
    for _, name_spec, _, _ in string.Formatter().parse(template):
        if name_spec is not None:
            name = name_spec.split(".")[0].split("[")[0]
            if not name:
                raise SpecError(f"files: {template!r} uses a positional field; name the column")
            names.append(name)
    return list(dict.fromkeys(names))


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
        check_keys(raw, {"rows", "columns", "drop", "one_hot", "rename", "assign", "defaults", "write"}, where)
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
                None if classes is None else column_names(classes, f"{where}: one_hot.classes"),
            )
        return cls(
            rows=rows,
            columns=None if raw.get("columns") is None else column_names(raw["columns"], f"{where}: columns"),
            drop=column_names(raw.get("drop", []), f"{where}: drop"),
            one_hot=one_hot,
            rename={str(k): str(v) for k, v in (raw.get("rename") or {}).items()},
            assign={
                str(k): computed_column(v, f"{where}: assign: {k}") if isinstance(v, Mapping) else v
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
        check_keys(raw, {"source", "key", "read", "outputs"}, where)
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
        check_keys(raw, {"from", "train", "test"}, where)
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
        check_keys(raw, {"column", "start", "sides", "format", "by"}, where)
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
        check_keys(raw, {"compression", "times"}, where)
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
    time: str | None = None  # the test set is the latest rows by this column (a moment is never on both sides)
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
        check_keys(raw, known, where)
        if "source" not in raw:
            raise SpecError(f"{where}: source is required")
        fields: dict[str, Any] = dict(raw)
        fields["drop_from_test"] = column_names(fields.get("drop_from_test", []), f"{where}: drop_from_test")
        if fields.get("answer_columns") is not None:
            fields["answer_columns"] = column_names(fields["answer_columns"], f"{where}: answer_columns")
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
        if self.group is not None and self.time is not None:
            raise SpecError(f"{where}: group and time are two ways to split; declare one")
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
                "time": self.time,
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

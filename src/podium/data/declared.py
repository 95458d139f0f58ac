"""The declarative prepare: ``prepare:`` in competition.yaml does what a prepare.py would.

``prepare: split:`` (parsed by ``podium.data.spec.SplitSpec``) splits one labelled raw table and
writes the tables derived from each side (``outputs``), the other raw tables that follow the split
through a key column (``tables``) and the raw files that follow their row (``files``);
``prepare: copy:`` copies raw files or folders as they are. docs/preparing.md documents every key.

With ``engine: pandas`` every table is read and written by pandas exactly as the published
prepare scripts read and write it (``read_csv`` with the declared options, ``train_test_split`` on
the frame, ``to_csv(index=False)``), so a script of that shape and its declaration give the same
bytes. ``engine: stream`` is the bounded-memory split of ``podium.data.split``; its extra outputs
are built from the answers read back as text, a block of rows at a time.

A path ``ARCHIVE.zip:MEMBER`` names a member of a zip: of a raw zip where it is read (``files: from``,
``copy``), of a zip the prepare writes where it is written (``outputs``, ``files`` targets; stored as
``archives:`` declares).
"""

from __future__ import annotations

import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from podium.competition import Competition
from podium.data.files import FIXED_TIME, Archives, copy_files, copy_verbatim, extract, file_rows, write_table
from podium.data.options import READ_MODES, SpecError, draw
from podium.data.spec import Output, Renumber, SplitSpec, template_fields, zip_member
from podium.data.split import split_csv

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["build", "fixture_files", "prepare_declared", "read_source", "renumbered", "split_frame", "split_spec"]

#: Rows of the answers read at a time when the streamed engine builds its outputs.
_CHUNK_ROWS = 500_000


def split_spec(competition: Competition) -> SplitSpec | None:
    """The competition's ``prepare: split:``, parsed (None when it declares none)."""
    raw = competition.prepare.get("split")
    if raw is None:
        return None
    try:
        return SplitSpec.from_dict(raw, f"{competition.id}: prepare.split")
    except TypeError as exc:  # a key of the wrong type
        raise SpecError(f"{competition.id}: prepare.split: {exc}") from exc


def read_source(raw: Path, spec: SplitSpec) -> pd.DataFrame:
    """The split's source table, read with its ``read`` options (from inside ``zip`` when given)."""
    import pandas as pd

    if spec.zip is None:
        return pd.read_csv(raw / spec.source, **spec.read)
    with zipfile.ZipFile(raw / spec.zip) as archive, archive.open(spec.source) as handle:
        return pd.read_csv(handle, **spec.read)


def split_frame(frame: pd.DataFrame, spec: SplitSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) as the published scripts split: ``train_test_split`` on the frame (rows in its
    order), or on the group column's distinct values (each side in file order); or by time (``time``)."""
    from sklearn.model_selection import train_test_split

    if spec.test_size == "all":
        return frame.iloc[:0], frame
    if spec.time is not None:
        return _split_by_time(frame, spec)
    if spec.group is None:
        sizes = {"test_size": spec.resolved_test_size(len(frame)), "train_size": spec.train_size}
        train, test = train_test_split(frame, random_state=spec.random_state, **sizes)
        return train, test
    values = np.asarray(frame[spec.group].unique())  # numpy (pandas may give an Arrow-backed array)
    if spec.groups == "sorted":
        values = np.sort(values)
    sizes = {"test_size": spec.resolved_test_size(len(values)), "train_size": spec.train_size}
    _, test_values = train_test_split(values, random_state=spec.random_state, **sizes)
    in_test = frame[spec.group].isin(set(test_values))
    train, test = frame[~in_test], frame[in_test]
    assert set(train[spec.group]).isdisjoint(test[spec.group]), "a group is on both sides"
    return train, test


def _split_by_time(frame: pd.DataFrame, spec: SplitSpec) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The latest rows by ``spec.time`` (dates where every cell reads as one, else the text) as the test set, as
    many as ``train_test_split`` would draw; the rows at the cut's moment go with it, and each side keeps file order."""
    import math

    import pandas as pd

    assert spec.time is not None
    column = frame[spec.time]
    moments = pd.to_datetime(column, errors="coerce", utc=True, format="mixed")
    order = moments if moments.notna().all() else column.astype(str)
    size = spec.resolved_test_size(len(frame))
    count = math.ceil(size * len(frame)) if isinstance(size, float) else int(size or 0)
    if not 0 < count < len(frame):
        raise SpecError(f"prepare.split: a test size of {size} leaves no rows on one side of {len(frame)}")
    cut = order.sort_values(kind="stable").iloc[len(frame) - count]
    in_test = (order >= cut).to_numpy()
    return frame[~in_test], frame[in_test]


def renumbered(renumber: Renumber, sides: Mapping[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Each side with ``renumber.column`` rewritten as its rows' numbers (the side's order), or its
    distinct values' (``by: value``, in order of first appearance)."""
    import pandas as pd

    codes = {}
    for side, frame in sides.items():
        if renumber.column not in frame.columns:
            raise SpecError(f"renumber: column {renumber.column!r} not in the table; it has {list(frame.columns)}")
        if renumber.by == "row":
            codes[side] = np.arange(len(frame))
        else:  # a missing value is one more value, numbered where it first appears
            codes[side] = pd.factorize(frame[renumber.column], use_na_sentinel=False)[0]
    used = int(codes["train"].max()) + 1 if len(codes["train"]) else 0
    return {
        side: frame.assign(**{renumber.column: renumber.numbers(side, codes[side], used)})
        for side, frame in sides.items()
    }


def _computed(value: Mapping[str, Any], rows: pd.DataFrame, where: str) -> Any:
    """A ``{format: ...}`` or ``{column: ...}`` column's values, from the rows of the output's side."""
    if "column" in value:
        if value["column"] not in rows.columns:
            raise SpecError(f"{where}: column {value['column']!r} not in the table; it has {list(rows.columns)}")
        return rows[value["column"]].to_numpy()
    template = value["format"]
    fields = template_fields(template)
    missing = [f for f in fields if f not in rows.columns]
    if missing:
        raise SpecError(f"{where}: {template!r} uses column(s) {missing}; the table has {list(rows.columns)}")
    return [template.format_map(row) for row in rows[fields].to_dict("records")]


def _with(frame: pd.DataFrame, values: Mapping[str, Any]) -> pd.DataFrame:
    """``frame`` with columns set: an existing column keeps its place, a new one is appended."""
    import pandas as pd

    existing = {k: v for k, v in values.items() if k in frame.columns}
    new = {k: v for k, v in values.items() if k not in frame.columns}
    if existing:
        frame = frame.assign(**existing)
    if new:
        frame = pd.concat([frame, pd.DataFrame(new, index=frame.index)], axis=1)
    return frame


def _submission_columns(competition: Competition) -> list[str]:
    return [c.name for c in competition.columns if c.name not in competition.id_columns]


def build(
    out: Output,
    sides: Mapping[str, pd.DataFrame],
    competition: Competition,
    where: str,
    drawn: Mapping[str, np.ndarray] | None = None,
) -> pd.DataFrame:
    """The table ``out`` declares, from the rows of its side (``drawn``: the random columns' values for
    these rows, when the rows are one block of a longer table)."""
    rows = sides[out.rows]
    needed = [*(out.columns or ()), *out.drop, *([out.one_hot[0]] if out.one_hot else [])]
    missing = [c for c in needed if c not in rows.columns]
    if missing:
        raise SpecError(f"{where}: column(s) {missing} not in the table; it has {list(rows.columns)}")
    frame = rows if out.columns is None else rows[list(out.columns)]
    if out.drop:
        frame = frame.drop(columns=list(out.drop))
    if out.one_hot is not None:
        source, classes = out.one_hot
        labels = rows[source]
        names = list(classes or _submission_columns(competition))
        unknown = set(labels) - set(names)
        if unknown:
            raise SpecError(f"{where}: {source} holds label(s) that are not classes: {sorted(map(str, unknown))[:5]}")
        frame = _with(frame, {name: (labels == name).astype(int) for name in names})
    if out.rename:
        frame = frame.rename(columns=dict(out.rename))
    if out.assign:
        values = {}
        for k, v in out.assign.items():
            if not isinstance(v, Mapping):
                values[k] = v
            elif "random" in v:
                values[k] = draw(v, len(frame)) if drawn is None else drawn[k]
            else:
                values[k] = _computed(v, rows, where)
        frame = _with(frame, values)
    if out.defaults:
        defaults = {}
        for column in competition.columns:
            if column.name in competition.id_columns:
                continue
            if "default" not in column.options:
                raise SpecError(f"{where}: column {column.name!r} declares no default")
            defaults[column.name] = column.options["default"]
        frame = _with(frame, defaults)
    return frame


def _outputs(spec: SplitSpec, competition: Competition) -> dict[str, Output | None]:
    """The default tables (train_file, test_file less drop_from_test, the answers), then ``outputs``."""
    defaults: dict[str, Output | None] = {}
    if spec.train_file is not None:
        defaults[f"public/{spec.train_file}"] = Output(rows="train")
    if spec.test_file is not None:
        defaults[f"public/{spec.test_file}"] = Output(rows="test", drop=spec.drop_from_test)
    defaults[f"private/{competition.answers}"] = Output(rows="test", columns=spec.answer_columns)
    return {**defaults, **spec.outputs}


def _check_disjoint(competition: Competition, train: pd.DataFrame, test: pd.DataFrame, where: str) -> None:
    """No id (the competition's id columns, where the source has them) on both sides."""
    keys = list(competition.id_columns)
    if not keys or not set(keys) <= set(train.columns):
        return
    both = set(map(tuple, train[keys].to_numpy().tolist())) & set(map(tuple, test[keys].to_numpy().tolist()))
    if both:
        raise SpecError(f"{where}: {len(both)} id(s) on both sides of the split, e.g. {sorted(map(str, both))[:3]}")


def _stream(spec: SplitSpec, competition: Competition, raw: Path, public: Path, private: Path) -> None:
    """The streamed split (the source extracted from its zip first), then its outputs, block by block."""
    import pandas as pd

    prepared = public.parent
    where = f"{competition.id}: prepare.split"
    if spec.zip is None:
        _, n_test = split_csv(spec, raw, public, private, competition.answers)
    else:
        with tempfile.TemporaryDirectory(dir=prepared, prefix=".source-") as work:
            with zipfile.ZipFile(raw / spec.zip) as archive, archive.open(spec.source) as handle:
                extract(handle, Path(work) / spec.source)
            _, n_test = split_csv(spec, Path(work), public, private, competition.answers)
    outputs = [(path, out) for path, out in spec.outputs.items() if out is not None]
    if not outputs:
        return
    drawn = {path: {k: draw(v, n_test) for k, v in out.random.items()} for path, out in outputs}
    start = 0
    for chunk in pd.read_csv(private / competition.answers, chunksize=_CHUNK_ROWS, **READ_MODES["text"]):
        for path, out in outputs:
            block = {k: v[start : start + len(chunk)] for k, v in drawn[path].items()}
            frame = build(out, {"test": chunk}, competition, f"{where}: outputs: {path}", drawn=block)
            (prepared / path).parent.mkdir(parents=True, exist_ok=True)
            options = {"index": False, **(out.write or {})}
            frame.to_csv(prepared / path, mode="w" if start == 0 else "a", header=start == 0, **options)
        start += len(chunk)


def prepare_declared(competition: Competition, raw: Path, public: Path, private: Path) -> None:
    """Run ``prepare:`` of competition.yaml (the caller writes a default sample submission if none is declared)."""
    import pandas as pd

    spec = split_spec(competition)
    if spec is None:
        raise SpecError(f"{competition.id} declares no prepare step (prepare.py or prepare.split in competition.yaml)")
    prepared = public.parent
    where = f"{competition.id}: prepare.split"
    if spec.engine == "stream":
        _stream(spec, competition, raw, public, private)
        copy_verbatim(competition, raw, prepared)
        return
    frame = read_source(raw, spec)
    train, test = split_frame(frame, spec)
    assert len(train) + len(test) == len(frame)
    _check_disjoint(competition, train, test, where)
    read = {"train": train, "test": test}
    sides = read if spec.renumber is None else renumbered(spec.renumber, read)
    archives = Archives(prepared, spec.archives)
    try:
        for path, out in _outputs(spec, competition).items():
            if out is not None:
                table = build(out, sides, competition, f"{where}: outputs: {path}")
                write_table(table, path, prepared, archives, {**spec.write, **(out.write or {})})
        for table_spec in spec.tables:
            other = pd.read_csv(raw / table_spec.source, **table_spec.read)
            if table_spec.key not in other.columns or table_spec.key not in frame.columns:
                raise SpecError(
                    f"{where}: tables: key {table_spec.key!r} must be a column of {table_spec.source} and {spec.source}"
                )
            members = {
                side: other[other[table_spec.key].isin(set(rows[table_spec.key]))] for side, rows in read.items()
            }
            for path, out in table_spec.outputs.items():
                if out is not None:
                    table = build(out, members, competition, f"{where}: tables: {path}")
                    write_table(table, path, prepared, archives, {**spec.write, **(out.write or {})})
        copy_files(spec, read, sides, raw, prepared, archives)
    finally:
        archives.close()
    copy_verbatim(competition, raw, prepared)


def fixture_files(competition: Competition, raw: Path, rng: np.random.Generator) -> None:
    """For a generated raw folder: a small text file (or zip member) wherever a ``files:`` entry reads
    one, per source row (text, so that the leak scan can read one named .csv; distinct, so that no two
    look like copies)."""
    spec = split_spec(competition)
    if spec is None or not spec.files:
        return
    frame = read_source(raw, spec)
    for entry in spec.files:
        member = zip_member(entry.source)
        archive = None if member is None else zipfile.ZipFile(raw / member[0], "a")
        try:
            for row in file_rows(frame, [entry.source]):
                content = f"fixture\n{rng.bytes(8).hex()}\n"
                if archive is not None and member is not None:
                    archive.writestr(zipfile.ZipInfo(member[1].format_map(row), FIXED_TIME), content)
                    continue
                path = raw / entry.source.format_map(row)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="ascii")
        finally:
            if archive is not None:
                archive.close()

"""The declarative prepare: ``prepare:`` in competition.yaml does what a prepare.py would.

``prepare: split:`` (parsed by ``podium.data.split.SplitSpec``) splits one labelled raw table and
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

import shutil
import string
import tempfile
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from podium.competition import Competition
from podium.data.split import (
    READ_MODES,
    ROWS,
    Archive,
    Output,
    Renumber,
    SpecError,
    SplitSpec,
    draw,
    split_csv,
    zip_member,
)

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fixture_files", "prepare_declared", "renumbered", "split_frame", "split_spec"]

#: Rows of the answers read at a time when the streamed engine builds its outputs.
_CHUNK_ROWS = 500_000
#: The time of every member of a zip the prepare writes with ``times: fixed``.
FIXED_TIME: tuple[int, int, int, int, int, int] = (1980, 1, 1, 0, 0, 0)


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
    order), or on the group column's distinct values (each side in file order)."""
    from sklearn.model_selection import train_test_split

    if spec.test_size == "all":
        return frame.iloc[:0], frame
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
    fields = _fields(template)
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


class _RawZips:
    """The raw zips members are read from, each opened once."""

    def __init__(self, raw: Path) -> None:
        self.raw = raw
        self.open: dict[str, zipfile.ZipFile] = {}

    def info(self, path: str) -> tuple[zipfile.ZipFile, zipfile.ZipInfo]:
        member = zip_member(path)
        assert member is not None
        archive, name = member
        if archive not in self.open:
            self.open[archive] = zipfile.ZipFile(self.raw / archive)
        try:
            return self.open[archive], self.open[archive].getinfo(name)
        except KeyError:
            raise FileNotFoundError(2, f"{archive} has no member {name!r}", str(self.raw / archive)) from None

    def close(self) -> None:
        for handle in self.open.values():
            handle.close()


class _Archives:
    """The zips the prepare writes: members added in the order written, stored as ``archives:`` says."""

    def __init__(self, prepared: Path, settings: Mapping[str, Archive]) -> None:
        self.prepared, self.settings = prepared, settings
        self.open: dict[str, zipfile.ZipFile] = {}

    def archive(self, name: str) -> zipfile.ZipFile:
        if name not in self.open:
            (self.prepared / name).parent.mkdir(parents=True, exist_ok=True)
            self.open[name] = zipfile.ZipFile(self.prepared / name, "w")
        return self.open[name]

    def write(
        self, path: str, data: bytes | str, source_time: tuple[int, int, int, int, int, int] | None = None
    ) -> None:
        member = zip_member(path)
        assert member is not None
        name, member_name = member
        settings = self.settings.get(name, Archive())
        when = FIXED_TIME
        if settings.times == "source":
            if source_time is None:
                raise SpecError(f"archives: {name}: times: source, but {member_name!r} is not copied from a raw zip")
            when = source_time
        info = zipfile.ZipInfo(member_name, date_time=when)
        if settings.compression == "deflated":
            info.compress_type = zipfile.ZIP_DEFLATED
        self.archive(name).writestr(info, data)

    def close(self) -> None:
        for handle in self.open.values():
            handle.close()


def _write(frame: pd.DataFrame, path: str, prepared: Path, archives: _Archives, write: Mapping[str, Any]) -> None:
    """``frame`` as CSV (``to_csv`` with the ``write`` options) at a prepared path or zip member."""
    options = {"index": False, **write}
    if zip_member(path) is not None:
        archives.write(path, frame.to_csv(**options))
        return
    (prepared / path).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(prepared / path, **options)


def _fields(template: str) -> list[str]:
    """The row columns a path template uses (``{id[0]}`` uses ``id``)."""
    names = []
    for _, field, _, _ in string.Formatter().parse(template):
        if field is not None:
            name = field.split(".")[0].split("[")[0]
            if not name:
                raise SpecError(f"files: {template!r} uses a positional field; name the column")
            names.append(name)
    return list(dict.fromkeys(names))


def _rows(frame: pd.DataFrame, templates: list[str]) -> Iterator[dict[str, Any]]:
    """One mapping per distinct combination of the columns the templates use, in file order."""
    fields = list(dict.fromkeys(f for t in templates for f in _fields(t)))
    missing = [f for f in fields if f not in frame.columns]
    if missing:
        raise SpecError(f"files: {templates} use column(s) {missing}; the table has {list(frame.columns)}")
    yield from frame[fields].drop_duplicates().to_dict("records")


def _pairs(read: pd.DataFrame, written: pd.DataFrame, source: str, target: str) -> Iterator[tuple[str, str]]:
    """(raw path, prepared path) per distinct row of a side, in its order: ``source`` formatted over the
    row as read, ``target`` over the row as written (they differ in a renumbered column)."""
    if read is written:
        for row in _rows(read, [source, target]):
            yield source.format_map(row), target.format_map(row)
        return
    sources, targets = _fields(source), _fields(target)
    for frame, fields, templates in ((read, sources, source), (written, targets, target)):
        missing = [f for f in fields if f not in frame.columns]
        if missing:
            raise SpecError(f"files: {templates} uses column(s) {missing}; the table has {list(frame.columns)}")
    import pandas as pd

    both = pd.DataFrame(
        {**{f"from {c}": read[c].to_numpy() for c in sources}, **{f"to {c}": written[c].to_numpy() for c in targets}}
    )
    for row in both.drop_duplicates().to_dict("records"):
        yield (
            source.format_map({c: row[f"from {c}"] for c in sources}),
            target.format_map({c: row[f"to {c}"] for c in targets}),
        )


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)


def _extract(handle: IO[bytes], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as sink:
        shutil.copyfileobj(handle, sink, 1 << 20)


def _copy_files(
    spec: SplitSpec,
    read: Mapping[str, pd.DataFrame],
    written: Mapping[str, pd.DataFrame],
    raw: Path,
    prepared: Path,
    archives: _Archives,
) -> None:
    zips = _RawZips(raw)
    try:
        for entry in spec.files:
            for side in ROWS:
                template = getattr(entry, side)
                if template is None:
                    continue
                into = zip_member(template)
                if into is not None:
                    archives.archive(into[0])  # written even when the side has no rows
                else:
                    static = template.split("{", 1)[0]
                    (prepared / static).parent.mkdir(parents=True, exist_ok=True)
                    if static.endswith("/"):
                        (prepared / static).mkdir(parents=True, exist_ok=True)
                for source, target in _pairs(read[side], written[side], entry.source, template):
                    if zip_member(source) is None and into is None:
                        _copy(raw / source, prepared / target)
                        continue
                    if zip_member(source) is None:
                        archives.write(target, (raw / source).read_bytes())
                        continue
                    archive, info = zips.info(source)
                    if into is not None:
                        archives.write(target, archive.read(info), info.date_time)
                    else:
                        with archive.open(info) as handle:
                            _extract(handle, prepared / target)
    finally:
        zips.close()


def _copy_verbatim(competition: Competition, raw: Path, prepared: Path) -> None:
    entries = competition.prepare.get("copy") or {}
    if not isinstance(entries, Mapping):
        raise SpecError(f"{competition.id}: prepare.copy maps raw paths to prepared paths (public/..., private/...)")
    for source, target in entries.items():
        if not str(target).startswith(("public/", "private/")) or zip_member(str(target)) is not None:
            raise SpecError(f"{competition.id}: prepare.copy: {target!r} must start with public/ or private/ (no zip)")
        member = zip_member(str(source))
        if member is None:
            _copy(raw / str(source), prepared / str(target))
            continue
        with zipfile.ZipFile(raw / member[0]) as archive, archive.open(member[1]) as handle:
            _extract(handle, prepared / str(target))


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
                _extract(handle, Path(work) / spec.source)
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
        _copy_verbatim(competition, raw, prepared)
        return
    frame = read_source(raw, spec)
    train, test = split_frame(frame, spec)
    assert len(train) + len(test) == len(frame)
    _check_disjoint(competition, train, test, where)
    read = {"train": train, "test": test}
    sides = read if spec.renumber is None else renumbered(spec.renumber, read)
    archives = _Archives(prepared, spec.archives)
    try:
        for path, out in _outputs(spec, competition).items():
            if out is not None:
                table = build(out, sides, competition, f"{where}: outputs: {path}")
                _write(table, path, prepared, archives, {**spec.write, **(out.write or {})})
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
                    _write(table, path, prepared, archives, {**spec.write, **(out.write or {})})
        _copy_files(spec, read, sides, raw, prepared, archives)
    finally:
        archives.close()
    _copy_verbatim(competition, raw, prepared)


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
            for row in _rows(frame, [entry.source]):
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

"""The declarative prepare: ``prepare:`` in competition.yaml does what a prepare.py would.

``prepare: split:`` (parsed by ``podium.data.split.SplitSpec``) splits one labelled raw table and
writes the tables derived from each side (``outputs``), the other raw tables that follow the split
through a key column (``tables``) and the raw files that follow their row (``files``);
``prepare: copy:`` copies raw files or folders as they are. docs/preparing.md documents every key.

With ``engine: pandas`` every table is read and written by pandas exactly as the published
prepare scripts read and write it (``read_csv`` with the declared options, ``train_test_split`` on
the frame, ``to_csv(index=False)``), so a script of that shape and its declaration give the same
bytes. ``engine: stream`` is the bounded-memory split of ``podium.data.split``; its extra outputs
are built from the answers read back as text.
"""

from __future__ import annotations

import shutil
import string
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from podium.competition import Competition
from podium.data.split import READ_MODES, ROWS, Output, SpecError, SplitSpec, split_csv

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["fixture_files", "prepare_declared", "split_frame", "split_spec"]


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


def build(out: Output, sides: Mapping[str, pd.DataFrame], competition: Competition, where: str) -> pd.DataFrame:
    """The table ``out`` declares, from the rows of its side."""
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
        frame = _with(frame, out.assign)
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


def _write(frame: pd.DataFrame, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False)


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


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copyfile(source, target)


def _copy_files(spec: SplitSpec, sides: Mapping[str, pd.DataFrame], raw: Path, prepared: Path) -> None:
    for entry in spec.files:
        for side in ROWS:
            template = getattr(entry, side)
            if template is None:
                continue
            static = template.split("{", 1)[0]
            (prepared / static).parent.mkdir(parents=True, exist_ok=True)
            if static.endswith("/"):
                (prepared / static).mkdir(parents=True, exist_ok=True)
            for row in _rows(sides[side], [entry.source, template]):
                _copy(raw / entry.source.format_map(row), prepared / template.format_map(row))


def _copy_verbatim(competition: Competition, raw: Path, prepared: Path) -> None:
    entries = competition.prepare.get("copy") or {}
    if not isinstance(entries, Mapping):
        raise SpecError(f"{competition.id}: prepare.copy maps raw paths to prepared paths (public/..., private/...)")
    for source, target in entries.items():
        if not str(target).startswith(("public/", "private/")):
            raise SpecError(f"{competition.id}: prepare.copy: {target!r} must start with public/ or private/")
        _copy(raw / str(source), prepared / str(target))


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


def prepare_declared(competition: Competition, raw: Path, public: Path, private: Path) -> None:
    """Run ``prepare:`` of competition.yaml (the caller writes a default sample submission if none is declared)."""
    import pandas as pd

    spec = split_spec(competition)
    if spec is None:
        raise SpecError(f"{competition.id} declares no prepare step (prepare.py or prepare.split in competition.yaml)")
    prepared = public.parent
    where = f"{competition.id}: prepare.split"
    if spec.engine == "stream":
        split_csv(spec, raw, public, private, competition.answers)
        if spec.outputs:
            sides = {"test": pd.read_csv(private / competition.answers, **READ_MODES["text"])}
            for path, out in spec.outputs.items():
                assert out is not None
                _write(build(out, sides, competition, f"{where}: outputs: {path}"), prepared / path)
    else:
        frame = read_source(raw, spec)
        train, test = split_frame(frame, spec)
        assert len(train) + len(test) == len(frame)
        _check_disjoint(competition, train, test, where)
        sides = {"train": train, "test": test}
        for path, out in _outputs(spec, competition).items():
            if out is not None:
                _write(build(out, sides, competition, f"{where}: outputs: {path}"), prepared / path)
        for table in spec.tables:
            other = pd.read_csv(raw / table.source, **table.read)
            if table.key not in other.columns or table.key not in frame.columns:
                raise SpecError(
                    f"{where}: tables: key {table.key!r} must be a column of {table.source} and {spec.source}"
                )
            members = {side: other[other[table.key].isin(set(rows[table.key]))] for side, rows in sides.items()}
            for path, out in table.outputs.items():
                if out is not None:
                    _write(build(out, members, competition, f"{where}: tables: {path}"), prepared / path)
        _copy_files(spec, sides, raw, prepared)
    _copy_verbatim(competition, raw, prepared)


def fixture_files(competition: Competition, raw: Path, rng: np.random.Generator) -> None:
    """For a generated raw folder: a small text file wherever a ``files:`` entry reads one, per source row
    (text, so that the leak scan can read one named .csv; distinct, so that no two look like copies)."""
    spec = split_spec(competition)
    if spec is None or not spec.files:
        return
    frame = read_source(raw, spec)
    for entry in spec.files:
        for row in _rows(frame, [entry.source]):
            path = raw / entry.source.format_map(row)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"fixture\n{rng.bytes(8).hex()}\n", encoding="ascii")

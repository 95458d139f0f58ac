"""The raw files that follow their rows (``files:``), the raw files copied as they are (``copy:``),
and the zips a declarative prepare reads members from and writes members into
(``ARCHIVE.zip:MEMBER`` paths, stored as ``archives:`` declares).
"""

from __future__ import annotations

import shutil
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from podium.competition import Competition
from podium.data.options import SpecError
from podium.data.spec import ROWS, Archive, SplitSpec, template_fields, zip_member

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FIXED_TIME", "Archives", "copy_files", "copy_verbatim", "extract", "file_rows", "write_table"]

#: The time of every member of a zip the prepare writes with ``times: fixed``.
FIXED_TIME: tuple[int, int, int, int, int, int] = (1980, 1, 1, 0, 0, 0)


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


class Archives:
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


def write_table(frame: pd.DataFrame, path: str, prepared: Path, archives: Archives, write: Mapping[str, Any]) -> None:
    """``frame`` as CSV (``to_csv`` with the ``write`` options) at a prepared path or zip member."""
    options = {"index": False, **write}
    if zip_member(path) is not None:
        archives.write(path, frame.to_csv(**options))
        return
    (prepared / path).parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(prepared / path, **options)


def file_rows(frame: pd.DataFrame, templates: list[str]) -> Iterator[dict[str, Any]]:
    """One mapping per distinct combination of the columns the templates use, in file order."""
    fields = list(dict.fromkeys(f for t in templates for f in template_fields(t)))
    missing = [f for f in fields if f not in frame.columns]
    if missing:
        raise SpecError(f"files: {templates} use column(s) {missing}; the table has {list(frame.columns)}")
    yield from frame[fields].drop_duplicates().to_dict("records")


def _pairs(read: pd.DataFrame, written: pd.DataFrame, source: str, target: str) -> Iterator[tuple[str, str]]:
    """(raw path, prepared path) per distinct row of a side, in its order: ``source`` formatted over the
    row as read, ``target`` over the row as written (they differ in a renumbered column)."""
    if read is written:
        for row in file_rows(read, [source, target]):
            yield source.format_map(row), target.format_map(row)
        return
    sources, targets = template_fields(source), template_fields(target)
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


def extract(handle: IO[bytes], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("wb") as sink:
        shutil.copyfileobj(handle, sink, 1 << 20)


def copy_files(
    spec: SplitSpec,
    read: Mapping[str, pd.DataFrame],
    written: Mapping[str, pd.DataFrame],
    raw: Path,
    prepared: Path,
    archives: Archives,
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
                            extract(handle, prepared / target)
    finally:
        zips.close()


def copy_verbatim(competition: Competition, raw: Path, prepared: Path) -> None:
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
            extract(handle, prepared / str(target))

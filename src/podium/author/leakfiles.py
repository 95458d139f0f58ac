"""What the leak scan reads of a public folder: every file's name, size and time, and the content of some, bounded.

The public folder of a competition being checked is hostile input like any other: it comes from a user's raw
files through a declaration's own Python. Nothing is followed (no link, no device, no FIFO: only regular files,
opened with :func:`podium.untrusted.read_bounded`), and every read has a cap (:class:`Caps`): files listed,
files and bytes read, archive members listed and their bytes. Members of zip and tar archives are entries of their
own (``test.tar.gz:Sample0031.zip``), and so are the members of an archive inside one (one level deeper). Files
whose names say they are images, audio, arrays or other binary data are listed but not read.
"""

from __future__ import annotations

import calendar
import contextlib
import csv
import io
import json
import os
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from podium.untrusted import open_regular, read_bounded

__all__ = ["Caps", "Entry", "Inventory", "Table", "inventory", "table_of"]

_ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_TABLES = (".csv", ".tsv", ".json", ".jsonl", ".parquet")
_BINARY = frozenset(
    [
        ".jpg",
        ".jpeg",
        ".png",
        ".gif",
        ".bmp",
        ".tif",
        ".tiff",
        ".webp",
        ".dcm",
        ".dicom",
        ".npy",
        ".npz",
        ".wav",
        ".mp3",
        ".flac",
        ".ogg",
        ".aif",
        ".aiff",
        ".mp4",
        ".avi",
        ".mkv",
        ".mov",
        ".mat",
        ".h5",
        ".hdf5",
        ".pkl",
        ".pickle",
        ".pt",
        ".pth",
        ".bin",
        ".7z",
        ".gz",
        ".bz2",
        ".xz",
        ".zst",
        ".tfrec",
        ".tfrecord",
        ".nii",
        ".svs",
        ".ndpi",
        ".jp2",
        ".heic",
        ".pdf",
        ".rar",
        ".feather",
        ".arrow",
        ".onnx",
        ".safetensors",
    ]
)


@dataclass(frozen=True)
class Caps:
    """How much of a public folder the scan reads (every one said in the check's output)."""

    files: int = 50_000  # files listed
    read_files: int = 5_000  # files (and members) whose content is read
    file_bytes: int = 16 << 20  # read of one file or member (a table: its first rows within this)
    total_bytes: int = 512 << 20  # read in all
    members: int = 2_000  # members listed of one archive
    archive_bytes: int = 512 << 20  # decompressed while listing one archive

    def said(self) -> str:
        return (
            f"at most {self.files:,} files listed, {self.read_files:,} read ({self.file_bytes >> 20} MiB each, "
            f"{self.total_bytes >> 20} MiB in all), {self.members:,} members and {self.archive_bytes >> 20} MiB of "
            "each archive, one archive inside another"
        )


@dataclass
class Entry:
    """One public file or archive member: its name below public/, size, time, and its first bytes if read."""

    name: str
    size: int
    mtime_ns: int | None
    data: bytes | None = None
    truncated: bool = False

    @property
    def base(self) -> str:
        return self.name.rsplit(":", 1)[-1].rsplit("/", 1)[-1]

    @property
    def binary(self) -> bool:
        return self.data is not None and b"\x00" in self.data[:8192]


@dataclass
class Inventory:
    """What the scan saw of a public folder, and how much of it (the figures the output states)."""

    entries: list[Entry] = field(default_factory=list)
    unlisted: int = 0  # files past the cap
    skipped: list[str] = field(default_factory=list)  # links and special files (never followed)
    read_files: int = 0
    read_bytes: int = 0
    partial_archives: list[str] = field(default_factory=list)  # past the caps on members or bytes
    unreadable_archives: list[str] = field(default_factory=list)  # not an archive after all, or damaged

    def said(self) -> str:
        more = f" (and {self.unlisted:,} more not listed)" if self.unlisted else ""
        partial = f"; archives listed in part: {len(self.partial_archives)}" if self.partial_archives else ""
        bad = f"; unreadable archives: {len(self.unreadable_archives)}" if self.unreadable_archives else ""
        read = f"{self.read_files:,} read ({self.read_bytes / 2**20:.1f} MiB)"
        return f"{len(self.entries):,} files and members listed{more}, {read}{partial}{bad}"


def _suffix(name: str) -> str:
    low = name.lower()
    for archive in _ARCHIVES:
        if low.endswith(archive):
            return archive
    return os.path.splitext(low)[1]


def _walk(root: Path, caps: Caps, seen: Inventory) -> Iterator[tuple[Path, os.stat_result]]:
    stack = [root]
    count = 0
    while stack:
        folder = stack.pop()
        with contextlib.suppress(OSError), os.scandir(folder) as listing:
            for item in sorted(listing, key=lambda e: e.name):
                info = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(info.st_mode):
                    stack.append(Path(item.path))
                elif not stat.S_ISREG(info.st_mode):
                    seen.skipped.append(Path(item.path).relative_to(root).as_posix())
                elif count >= caps.files:
                    seen.unlisted += 1
                else:
                    count += 1
                    yield Path(item.path), info


def _wanted(name: str) -> bool:
    return _suffix(name) not in _BINARY


def _budget(seen: Inventory, caps: Caps) -> int:
    if seen.read_files >= caps.read_files:
        return 0
    return max(0, min(caps.file_bytes, caps.total_bytes - seen.read_bytes))


def _keep(entry: Entry, data: bytes, seen: Inventory) -> None:
    entry.data, entry.truncated = data, len(data) < entry.size
    seen.read_files += 1
    seen.read_bytes += len(data)


def inventory(public: Path, caps: Caps | None = None, *, leave_out: frozenset[str] = frozenset()) -> Inventory:
    """Every regular file under ``public`` (but ``leave_out``, names relative to it), archive members included."""
    caps = caps or Caps()
    seen = Inventory()
    for path, info in _walk(public, caps, seen):
        name = path.relative_to(public).as_posix()
        if name in leave_out:
            continue
        entry = Entry(name, info.st_size, info.st_mtime_ns)
        seen.entries.append(entry)
        limit = _budget(seen, caps)
        if limit and (_wanted(name) or _suffix(name) in _ARCHIVES):
            if _suffix(name) in _ARCHIVES:
                _members(entry, path, caps, seen, depth=0)
            else:
                data = read_bounded(path, limit)
                if data is not None:
                    _keep(entry, data, seen)
    return seen


def _members(entry: Entry, source: Path | bytes, caps: Caps, seen: Inventory, depth: int) -> None:
    """List (and read, within the caps) the members of the archive ``entry``, from its path or its bytes."""
    try:
        if _suffix(entry.name) == ".zip":
            _zip_members(entry, source, caps, seen, depth)
        else:
            _tar_members(entry, source, caps, seen, depth)
    except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, ValueError, RuntimeError):
        seen.unreadable_archives.append(entry.name)


def _member(parent: Entry, name: str, size: int, mtime_ns: int | None, seen: Inventory) -> Entry:
    member = Entry(f"{parent.name}:{name}", size, mtime_ns)
    seen.entries.append(member)
    return member


def _opened(source: Path | bytes) -> io.BufferedIOBase:
    """An archive's bytes to read: a public file opened without following a link, or a member already read."""
    if isinstance(source, bytes):
        return io.BytesIO(source)
    fd = open_regular(source)
    if fd is None:
        raise OSError(f"{source} is not a regular file")
    return os.fdopen(fd, "rb")


def _zip_members(entry: Entry, source: Path | bytes, caps: Caps, seen: Inventory, depth: int) -> None:
    with _opened(source) as fileobj, zipfile.ZipFile(fileobj) as archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
        if len(infos) > caps.members:
            seen.partial_archives.append(entry.name)
        unpacked = 0
        for info in infos[: caps.members]:
            stamp = calendar.timegm((*info.date_time, 0, 0, 0))
            member = _member(entry, info.filename, info.file_size, stamp * 10**9, seen)
            limit = min(_budget(seen, caps), caps.archive_bytes - unpacked)
            if limit <= 0 or not (_wanted(info.filename) or _nested(info.filename, depth)):
                continue
            with archive.open(info) as handle:
                data = handle.read(limit)
            unpacked += len(data)
            _use(member, data, caps, seen, depth)


def _nested(name: str, depth: int) -> bool:
    return depth == 0 and _suffix(name) in _ARCHIVES


def _use(member: Entry, data: bytes, caps: Caps, seen: Inventory, depth: int) -> None:
    if _nested(member.name.rsplit(":", 1)[-1], depth) and len(data) == member.size:
        _members(member, data, caps, seen, depth + 1)
    else:
        _keep(member, data, seen)


def _tar_members(entry: Entry, source: Path | bytes, caps: Caps, seen: Inventory, depth: int) -> None:
    with _opened(source) as fileobj, tarfile.open(fileobj=fileobj, mode="r|*") as archive:
        unpacked = listed = 0
        for info in archive:
            if listed >= caps.members or unpacked >= caps.archive_bytes:
                seen.partial_archives.append(entry.name)
                return
            if not info.isreg():
                continue
            listed += 1
            member = _member(entry, info.name, info.size, int(info.mtime) * 10**9, seen)
            limit = min(_budget(seen, caps), caps.archive_bytes - unpacked, info.size)
            handle = archive.extractfile(info)
            if handle is None or limit <= 0 or not (_wanted(info.name) or _nested(info.name, depth)):
                unpacked += info.size  # the stream reads past it all the same
                continue
            data = handle.read(limit)
            unpacked += info.size
            _use(member, data, caps, seen, depth)


@dataclass(frozen=True)
class Table:
    """A public table's first rows as text columns (a cell missing from a short row is empty)."""

    name: str
    columns: dict[str, list[str]]
    n_rows: int


def table_of(entry: Entry, max_rows: int = 100_000) -> Table | None:
    """``entry`` read as a table (CSV, TSV, JSON records or lines, Parquet), its first ``max_rows`` rows; None when
    it is not one or was not read."""
    if entry.data is None or (entry.binary and _suffix(entry.name) != ".parquet"):
        return None
    kind = _suffix(entry.name)
    try:
        if kind in (".csv", ".tsv"):
            return _csv_table(entry, "\t" if kind == ".tsv" else ",", max_rows)
        if kind in (".json", ".jsonl"):
            return _json_table(entry, max_rows)
        if kind == ".parquet" and not entry.truncated:
            return _parquet_table(entry, max_rows)
    except (ValueError, csv.Error, RecursionError, OSError):
        return None
    return None


def _csv_table(entry: Entry, delimiter: str, max_rows: int) -> Table | None:
    assert entry.data is not None
    text = entry.data.decode("utf-8", errors="replace")
    if entry.truncated:
        text = text[: text.rfind("\n") + 1]  # the last line read may be cut
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    header = next(reader, None)
    if not header or len(set(header)) != len(header):
        return None
    rows = [row for _, row in zip(range(max_rows), reader, strict=False)]
    columns = {name: [row[i] if i < len(row) else "" for row in rows] for i, name in enumerate(header)}
    return Table(entry.name, columns, len(rows))


def _cell(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _records(records: list[object], name: str, max_rows: int) -> Table | None:
    rows = [r for r in records[:max_rows] if isinstance(r, dict)]
    if not rows or len(rows) < len(records[:max_rows]) / 2:
        return None
    names = list(dict.fromkeys(str(k) for r in rows[:1000] for k in r))
    columns = {k: [_cell(r[k]) if k in r else "" for r in rows] for k in names}
    return Table(name, columns, len(rows))


def _json_table(entry: Entry, max_rows: int) -> Table | None:
    assert entry.data is not None
    text = entry.data.decode("utf-8", errors="replace")
    if not entry.truncated:
        with contextlib.suppress(ValueError):
            document = json.loads(text)
            return _records(document, entry.name, max_rows) if isinstance(document, list) else None
    records = []
    for line in text.splitlines()[:max_rows]:
        with contextlib.suppress(ValueError):
            records.append(json.loads(line))
    return _records(records, entry.name, max_rows)


def _parquet_table(entry: Entry, max_rows: int) -> Table | None:
    import pyarrow.parquet as pq

    assert entry.data is not None
    frame = pq.read_table(io.BytesIO(entry.data)).slice(0, max_rows)
    columns = {
        name: ["" if v is None else str(v) for v in frame.column(name).to_pylist()] for name in frame.column_names
    }
    return Table(entry.name, columns, frame.num_rows)

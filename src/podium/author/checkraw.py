"""Where ``podium check`` takes a competition's raw files from, and whether it may read them at all.

In this order: ``--from RAW`` (the Kaggle zip or its extracted folder, or a folder of ``<id>.zip`` / ``<id>/`` as
``podium prepare --from`` takes), the raw files a ``--keep-raw`` prepare kept in ``--data-dir`` (``D/ID/raw`` or
``D/ID/ID.zip``; ``D/ID/prepared`` is never read or touched), the data a package ships (``fetch_raw``), and
last the declaration's generated fixture (:func:`podium.fixtures.make_raw`), which is tiny and random, so the
checks of the real data cannot be made on it; the line that says where the data came from says so.

A user's raw folder is hostile input: prepare copies what it names, and a copy follows links, so a link, a FIFO,
a device or a socket anywhere in it (or a zip member that is a link or whose name leaves the folder) is a finding
and nothing is prepared from it.
"""

from __future__ import annotations

import os
import stat
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from podium.competition import Competition
from podium.data.prepare import raw_source
from podium.errors import UsageError
from podium.fixtures import make_raw
from podium.paths import CompetitionPaths
from podium.untrusted import printable

__all__ = ["RawData", "find_raw", "unsafe_entries"]

#: Entries of a raw folder or zip looked at, at most (the count is said when it is reached).
MAX_ENTRIES = 1_000_000
_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"))


@dataclass(frozen=True)
class RawData:
    """The raw files a check prepares from, and where they came from, in words."""

    path: Path
    said: str
    real: bool  # the competition's own files (not the generated fixture)


def find_raw(competition: Competition, work: Path, *, source: Path | None, data_dir: Path | None) -> RawData:
    """The raw files to check ``competition`` with (a generated fixture is written under ``work``)."""
    if source is not None:
        found = raw_source(competition, source, alone=True)
        if found is None:
            raise UsageError(
                f"--from {printable(str(source))!r} does not exist. Fix: name the competition's Kaggle zip, its "
                "extracted folder, or a folder holding <id>.zip or <id>/"
            )
        return RawData(found, f"the raw files of --from {printable(str(found))}", True)
    if data_dir is not None:
        paths = CompetitionPaths(data_dir, competition.id)
        for kept in (paths.raw, paths.zip):
            if kept.exists():
                return RawData(
                    kept, f"the raw files kept in {printable(str(kept))} (its prepared data untouched)", True
                )
    fetch = competition.hook("fetch_raw")
    if fetch is not None:
        (work / "raw").mkdir(parents=True)
        fetch(work / "raw")
        return RawData(work / "raw", "the data a package ships (the competition's fetch_raw)", True)
    raw = make_raw(competition, work / "raw")
    return RawData(
        raw,
        "no raw data given (--from RAW, or a --keep-raw prepare's in --data-dir): the generated fixture "
        "(podium.fixtures.make_raw), tiny and random; the real data's checksums and sample score are not checked",
        False,
    )


def _zip_problems(path: Path) -> list[str]:
    problems = []
    try:
        with zipfile.ZipFile(path) as archive:
            for info in archive.infolist()[:MAX_ENTRIES]:
                name = printable(info.filename, 200)
                parts = PurePosixPath(info.filename.replace("\\", "/")).parts
                if info.filename.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                    problems.append(f"{printable(path.name)}: member {name!r} names a place outside the folder")
                elif stat.S_ISLNK(info.external_attr >> 16):
                    problems.append(f"{printable(path.name)}: member {name!r} is a symbolic link")
    except (OSError, zipfile.BadZipFile) as error:
        problems.append(f"{printable(path.name)} is not a readable zip ({printable(str(error), 200)})")
    return problems


def unsafe_entries(raw: Path) -> list[str]:
    """What in a raw folder or zip prepare must not read: links, FIFOs, sockets, devices; zip members that are
    links or leave the folder. One line each (at most 20, then a count)."""
    info = os.lstat(raw)
    if stat.S_ISLNK(info.st_mode):
        return [f"{printable(str(raw))} is a symbolic link; name the folder or zip itself"]
    if stat.S_ISREG(info.st_mode):
        return _zip_problems(raw) if zipfile.is_zipfile(raw) else [f"{printable(str(raw))} is not a zip file"]
    problems: list[str] = []
    stack, seen = [raw], 0
    while stack and seen < MAX_ENTRIES:
        folder = stack.pop()
        with os.scandir(folder) as listing:
            for item in listing:
                seen += 1
                mode = item.stat(follow_symlinks=False).st_mode
                name = printable(Path(item.path).relative_to(raw).as_posix(), 200)
                if stat.S_ISDIR(mode):
                    stack.append(Path(item.path))
                elif not stat.S_ISREG(mode):
                    kind = next((said for test, said in _KINDS if test(mode)), "a device")
                    problems.append(f"raw/{name} is {kind}; prepare follows no links: put the file itself there")
    if len(problems) > 20:
        problems = [*problems[:20], f"... and {len(problems) - 20} more"]
    return problems

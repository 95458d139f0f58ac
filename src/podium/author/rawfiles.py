"""A competition's raw files as ``podium new`` reads them: a folder or a Kaggle zip, every file named by its
path relative to ``raw/`` as ``podium prepare`` will see it, a raw zip's members as ``ARCHIVE.zip:MEMBER``.

The folder is the user's, but a downloaded one may hold anything: a symbolic link, a FIFO or a device anywhere in
it is refused in one line (a link could lead the declaration to a file outside it), and every file is opened
without following a link at any level (:func:`podium.untrusted.files.open_file_beneath`). Tables are sampled
(:data:`SAMPLE_ROWS` rows, cells as text, undecodable bytes replaced), and counted in full, in blocks.
"""

from __future__ import annotations

import os
import stat
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, TYPE_CHECKING

from podium.errors import UsageError
from podium.untrusted import printable
from podium.untrusted.files import NotOpened, open_file_beneath

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["SAMPLE_ROWS", "TABLE_SUFFIXES", "Raw"]

#: Rows of a table read to infer its columns.
SAMPLE_ROWS = 50_000
TABLE_SUFFIXES = (".csv", ".tsv")


class Raw:
    """The raw files of one competition (``source``: a folder or a zip), listed once."""

    def __init__(self, source: Path) -> None:
        shown = printable(str(source), 200)
        if not source.exists():
            raise UsageError(f"--from {shown}: no such folder or zip. Fix: name the competition's raw files")
        self.source = source.resolve()  # the folder the user named; a link inside it is refused below
        self.is_zip = self.source.is_file() and zipfile.is_zipfile(self.source)
        if not self.is_zip and not self.source.is_dir():
            raise UsageError(f"--from {shown}: neither a folder nor a zip. Fix: name the competition's raw files")
        top = self._zip_names(self.source) if self.is_zip else self._walk()
        nested = [f"{name}:{member}" for name in top if name.endswith(".zip") for member in self._members(name)]
        self.files: tuple[str, ...] = tuple(sorted(top)) + tuple(nested)

    def _walk(self) -> list[str]:
        found = []
        for folder, dirs, files in os.walk(self.source):
            for name in dirs + files:
                path = Path(folder, name)
                mode = path.lstat().st_mode
                relative = path.relative_to(self.source).as_posix()
                if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                    what = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
                    raise UsageError(
                        f"--from {printable(str(self.source), 200)}: {printable(relative, 200)} is {what}; podium new "
                        "reads only regular files of the folder. Fix: copy the file itself in, or remove it"
                    )
                if stat.S_ISREG(mode):
                    found.append(relative)
        return found

    @staticmethod
    def _zip_names(archive: Path | IO[bytes]) -> list[str]:
        with zipfile.ZipFile(archive) as handle:
            names = [info.filename for info in handle.infolist() if not info.is_dir()]
        return [n for n in names if not PurePosixPath(n).is_absolute() and ".." not in PurePosixPath(n).parts]

    def _members(self, name: str) -> list[str]:
        try:
            with self._open_plain(name) as handle:
                return self._zip_names(handle)
        except (zipfile.BadZipFile, OSError):
            return []

    @contextmanager
    def _open_plain(self, name: str) -> Iterator[IO[bytes]]:
        if self.is_zip:
            with zipfile.ZipFile(self.source) as archive, archive.open(name) as member:
                yield member
            return
        try:
            fd = open_file_beneath(self.source, name)
        except NotOpened as exc:
            raise UsageError(
                f"--from: cannot read {printable(name, 200)} ({exc}). Fix: make it a regular file"
            ) from None
        with os.fdopen(fd, "rb") as handle:
            yield handle

    @contextmanager
    def open(self, path: str) -> Iterator[IO[bytes]]:
        """A raw file (or a raw zip's member, ``ARCHIVE.zip:MEMBER``) opened for reading."""
        archive, sep, member = path.partition(".zip:")
        if not sep:
            with self._open_plain(path) as handle:
                yield handle
            return
        with self._open_plain(f"{archive}.zip") as outer, zipfile.ZipFile(outer) as inner, inner.open(member) as handle:
            yield handle

    @property
    def tables(self) -> list[str]:
        """Every raw table (``.csv``/``.tsv``, loose or in a raw zip), shortest path first."""
        return sorted((f for f in self.files if f.lower().endswith(TABLE_SUFFIXES)), key=lambda f: (len(f), f))

    def read(self, path: str, rows: int = SAMPLE_ROWS) -> pd.DataFrame:
        """The first ``rows`` rows of a table, every cell as the text it holds."""
        import pandas as pd

        try:
            with self.open(path) as handle:
                return pd.read_csv(
                    handle, sep=_separator(path), dtype=str, keep_default_na=False, nrows=rows,
                    encoding_errors="replace", on_bad_lines="skip",
                )  # fmt: skip
        except (ValueError, pd.errors.ParserError, UnicodeError) as exc:
            detail = " ".join(str(exc).split())[:160]
            raise UsageError(
                f"--from: {printable(path, 200)} is not a readable table ({detail}). Fix: make it a CSV with a "
                "header row, or take it out of the folder"
            ) from None

    def distinct(self, path: str, column: str, limit: int = 10_000) -> list[str]:
        """Every distinct non-empty value of one column over the whole table, in order of first appearance (at most
        ``limit``: a column with more is no set of classes)."""
        import pandas as pd

        seen: dict[str, None] = {}
        with self.open(path) as handle:
            for block in pd.read_csv(
                handle, sep=_separator(path), usecols=[column], dtype=str, keep_default_na=False, chunksize=200_000,
                encoding_errors="replace", on_bad_lines="skip",
            ):  # fmt: skip
                seen.update(dict.fromkeys(v.strip() for v in block[column] if v.strip()))
                if len(seen) > limit:
                    break
        return list(seen)[:limit]

    def count_rows(self, path: str) -> int:
        """The data rows of a table (a quoted newline is no row), read in blocks."""
        import pandas as pd

        with self.open(path) as handle:
            blocks = pd.read_csv(
                handle, sep=_separator(path), usecols=[0], dtype=str, keep_default_na=False, chunksize=200_000,
                encoding_errors="replace", on_bad_lines="skip",
            )  # fmt: skip
            return sum(len(block) for block in blocks)


def _separator(path: str) -> str:
    return "\t" if path.lower().endswith(".tsv") else ","

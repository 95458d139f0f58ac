"""Opening a submission file that someone else wrote, without being led anywhere else by it.

An agent controls every entry of its submission folder: ``submission.csv`` may be a symbolic
link to the private answers or to a host secret, a FIFO that never ends, a directory, or a file
that grows while it is read. :func:`open_submission` opens it the one safe way: the folder
first, then each component of the name relative to the folder's descriptor (``openat``) with
``O_NOFOLLOW``, so no symbolic link is followed at any level (:mod:`podium.untrusted.files`, the one
safe open); then ``fstat`` on the open file
must show a regular file no larger than the size cap, with no other name (a hard link could be the
answers or a host file under a second name). Everything afterwards reads through that
one descriptor (``pread``, bounded to the size seen at opening): the name is never looked up
again, so swapping the file after the check changes nothing.

:func:`open_user_file` is the same for a path a user names on the command line: any path, but
the file itself must be a regular file (not a link, a FIFO, a device or a directory); a hard link is
the user's own business there.

Messages name the file as given (with undecodable bytes escaped), never its content.
"""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import Any

from podium.errors import InvalidSubmissionError, shorten
from podium.untrusted.files import NotOpened, open_file, open_file_beneath

__all__ = [
    "MIN_SIZE_CAP",
    "SIZE_CAP_FACTOR",
    "NoSubmissionError",
    "SubmissionFile",
    "display_path",
    "open_submission",
    "open_trusted",
    "open_user_file",
    "size_cap",
]

#: The size cap on a submission is SIZE_CAP_FACTOR times the sample submission, and never below
#: MIN_SIZE_CAP (a sample with empty predictions says little about a real submission's size).
MIN_SIZE_CAP = 256 * 2**20
SIZE_CAP_FACTOR = 8

_NAME_END = 60  # characters of a long file name's end that messages and the .csv rule see whole


def size_cap(reference_bytes: int) -> int:
    """The largest submission accepted, given the size of the competition's sample submission."""
    return max(MIN_SIZE_CAP, SIZE_CAP_FACTOR * int(reference_bytes))


def display_path(path: str | os.PathLike[str]) -> str:
    """A path as text for messages and reports: bytes that are not UTF-8 are shown escaped."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


class NoSubmissionError(InvalidSubmissionError):
    """There is no file at the submission's name (reported as ``submission_exists: false``)."""


class SubmissionFile:
    """An open, regular submission file: read it with :meth:`reader`, close it when done."""

    def __init__(self, fd: int, path: str, size: int) -> None:
        self.fd = fd
        self.path = path  # for messages, as display_path() writes it
        self.size = size

    @property
    def name(self) -> str:
        """The file's base name, a long one cut in the middle: its end (the suffix) is kept whole."""
        return shorten(self.path.rsplit("/", 1)[-1], 200, keep_end=_NAME_END)

    def reader(self) -> Any:
        """A fresh binary stream from the first byte, up to the size seen when the file was opened.

        On Linux, Arrow's own reader of this very file (``/proc/self/fd/N`` names the open file,
        not a path, so nothing is looked up again), which keeps Python out of Arrow's reading
        loop; elsewhere a Python reader of the descriptor (``pread``).
        """
        proc = f"/proc/self/fd/{self.fd}"
        if self.fd >= 0 and os.path.exists(proc):
            import pyarrow as pa

            return pa.OSFile(proc).get_stream(0, self.size)
        return io.BufferedReader(_Window(self.fd, self.size), buffer_size=1 << 20)

    def read_bytes(self) -> bytes:
        with self.reader() as handle:
            data: bytes = handle.read()
            return data

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> SubmissionFile:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class _Window(io.RawIOBase):
    """Bytes [0, size) of a descriptor, read with pread (the descriptor's offset is not used)."""

    def __init__(self, fd: int, size: int) -> None:
        super().__init__()
        self._fd, self._size, self._pos = fd, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._size - self._pos)
        if want <= 0:
            return 0
        got = os.preadv(self._fd, [view[:want]], self._pos)
        self._pos += got
        return got

    def close(self) -> None:  # the descriptor belongs to the SubmissionFile
        super().close()


_KINDS = {
    "directory": "is a directory, not a file",
    "link": "is a symbolic link; only a regular file is graded, and links are never followed",
    "fifo": "is a FIFO (named pipe), not a regular file",
    "socket": "is a socket, not a regular file",
    "device": "is a device, not a regular file",
}
_REGULAR_FILE = "write the submission as a regular file inside the submission folder"


def _check_size(size: int, shown: str, max_bytes: int | None) -> None:
    if max_bytes is not None and size > max_bytes:
        raise InvalidSubmissionError(
            f"the submission {shown} is {size:,} bytes; at most {max_bytes:,} bytes are accepted",
            fix="write only the columns and rows of the sample submission, with plain values",
        )


def _why(refused: NotOpened, shown: str) -> Exception:
    """The grader's error for a file :mod:`podium.untrusted.files` would not open."""
    reason = refused.reason
    if reason == "missing" or (reason == "root" and refused.errno == errno.ENOENT):
        return NoSubmissionError(f"no submission file at {shown}")
    if reason in _KINDS:
        return InvalidSubmissionError(
            f"the submission {shown} {_KINDS[reason]}", fix="write the submission as a regular CSV file"
        )
    if reason == "hard_link":
        links = refused.info.st_nlink if refused.info is not None else 2
        return InvalidSubmissionError(
            f"the submission {shown} is a hard link ({links} names for one file); a file that may be another file "
            "under a second name is never graded",
            fix="write the submission as a file of its own (cp or a plain write, not ln)",
        )
    if reason == "root" and refused.errno in (errno.ELOOP, errno.ENOTDIR):  # no sandbox: the agent owns the folder
        return InvalidSubmissionError(
            f"the submission folder of {shown} is a symbolic link or not a directory", fix=_REGULAR_FILE
        )
    if reason == "below":
        return InvalidSubmissionError(
            f"the submission {shown} lies below {refused.part!r}, which is a symbolic link or not a directory",
            fix=_REGULAR_FILE,
        )
    return InvalidSubmissionError(f"the submission {shown} cannot be read ({refused.detail})")


def _checked(fd: int, shown: str, max_bytes: int | None) -> SubmissionFile:
    try:
        size = os.fstat(fd).st_size
        _check_size(size, shown, max_bytes)
    except BaseException:
        os.close(fd)
        raise
    return SubmissionFile(fd, shown, size)


def open_submission(
    folder: str | os.PathLike[str], name: str = "submission.csv", *, max_bytes: int | None = None
) -> SubmissionFile:
    """Open ``folder/name``, a regular file inside ``folder``, following no symbolic link below it
    (:func:`podium.untrusted.files.open_file_beneath`).

    ``name`` is relative ("submission.csv", "out/preds.csv"); every component is opened with
    ``O_NOFOLLOW`` relative to its parent's descriptor, so a link at any level is refused, and
    ``..`` is not allowed. ``folder`` itself is podium's own (the run's submission folder). Raises
    :class:`NoSubmissionError` when nothing is there and :class:`InvalidSubmissionError` for a
    link (symbolic, or a hard link: a file with more than one name), a directory, a FIFO, a device,
    an unreadable file or one over ``max_bytes``.
    """
    parts = PurePosixPath(name).parts
    if not parts or PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts):
        raise ValueError(f"the submission name must be a relative path without '..': {name!r}")
    shown = display_path(Path(folder) / name)
    try:
        fd = open_file_beneath(folder, name, single_link=True)
    except NotOpened as refused:
        raise _why(refused, shown) from None
    return _checked(fd, shown, max_bytes)


def open_user_file(path: str | os.PathLike[str], *, max_bytes: int | None = None) -> SubmissionFile:
    """Open a submission a user names: any path to it, but the file itself must be a regular file
    (a symbolic link, FIFO, device or directory is refused), read through one descriptor."""
    shown = display_path(path)
    try:
        fd = open_file(path)
    except NotOpened as refused:
        raise _why(refused, shown) from None
    return _checked(fd, shown, max_bytes)


def open_trusted(path: str | os.PathLike[str]) -> SubmissionFile:
    """Open one of podium's own files (answers, sample submission) for reading."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
    except BaseException:
        os.close(fd)
        raise
    return SubmissionFile(fd, display_path(path), size)

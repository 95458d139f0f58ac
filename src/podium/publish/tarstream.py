"""A bundle's tar.gz, written and read as a stream: nothing of it is ever held whole in memory.

Writing goes through :mod:`tarfile` (podium's own files, in POSIX pax format, with fixed owners,
modes and times, so the same runs give the same archive). Reading a bundle someone else made goes
through podium's one reader for hostile archives (:mod:`podium.untrusted.archive`) under its
:data:`~podium.untrusted.archive.BUNDLE` policy: headers parsed there, not by :mod:`tarfile`; pax keys
``path`` and ``size`` only (times and owners accepted and ignored; ``GNU.sparse.*``, ``SCHILY.*``,
``hdrcharset`` and any other key refuse the archive, as do two pax headers in a row); regular files and
folders only; names relative, UTF-8, without ``..``, ``.``, an empty part, a backslash or a control character,
at most :data:`MAX_NAME` bytes and :data:`MAX_DEPTH` parts; no name twice, nothing below a file; every byte
read (headers included) counted against the caller's cap, and at most :data:`MAX_MEMBERS` members.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, BinaryIO

from podium.errors import UsageError
from podium.untrusted.archive import BUNDLE, ArchiveRefused, Member, name_problem, read_members
from podium.untrusted.tarheaders import MAX_PAX

__all__ = [
    "MAX_DEPTH",
    "MAX_MEMBERS",
    "MAX_NAME",
    "MAX_PAX",
    "ArchiveError",
    "Member",
    "add_bytes",
    "add_stream",
    "check_name",
    "members",
    "open_writer",
]

#: The longest member name accepted, in bytes.
MAX_NAME = BUNDLE.max_path
#: The most parts a member name may have.
MAX_DEPTH = BUNDLE.max_depth
#: The most members a bundle may hold (100,000 empty files fit in 621 KB of tar.gz).
MAX_MEMBERS = BUNDLE.max_members


class ArchiveError(UsageError):
    """Reading the archive stopped: it is corrupt, truncated, or over a cap (the message says which)."""


def check_name(name: str) -> str | None:
    """Why ``name`` may not be a member's name in a bundle, or None when it may."""
    return name_problem(name, BUNDLE)


def members(stream: BinaryIO, cap: int) -> Iterator[Member]:
    """The members of the gzip-compressed tar ``stream``, reading at most ``cap`` decompressed bytes; a member
    refused by the policy comes with :attr:`Member.refused` set, an unreadable archive raises
    :class:`ArchiveError`."""
    try:
        yield from read_members(
            gzip.GzipFile(fileobj=stream, mode="rb"),
            BUNDLE,
            cap,
            cap_hint="; pass --max-size to raise it",
            error=ArchiveError,
        )
    except ArchiveRefused as error:
        raise ArchiveError(str(error)) from None
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise ArchiveError(f"not a readable tar.gz ({exc})") from None


# -- writing ---------------------------------------------------------------------------------------


@contextmanager
def open_writer(fileobj: IO[bytes]) -> Iterator[tarfile.TarFile]:
    """A pax tar.gz writer on ``fileobj`` (gzip header without a time, so equal content gives equal bytes)."""
    with (
        gzip.GzipFile(filename="", fileobj=fileobj, mode="wb", mtime=0) as compressed,
        tarfile.open(fileobj=compressed, mode="w|", format=tarfile.PAX_FORMAT) as tar,
    ):
        yield tar


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = size, 0o644, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class _Hashing(io.RawIOBase):
    """Reads from ``source`` and hashes what was read; tarfile reads exactly the member's size through it."""

    def __init__(self, source: IO[bytes]) -> None:
        self.source = source
        self.digest = hashlib.sha256()

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.source.read(size)
        self.digest.update(data)
        return data


def add_stream(tar: tarfile.TarFile, name: str, source: IO[bytes], size: int) -> str:
    """Add ``size`` bytes read from ``source`` as the file ``name``; returns their sha256."""
    hashing = _Hashing(source)
    tar.addfile(_info(name, size), hashing)
    return hashing.digest.hexdigest()


def add_bytes(tar: tarfile.TarFile, name: str, data: bytes) -> str:
    """Add ``data`` as the file ``name``; returns its sha256."""
    return add_stream(tar, name, io.BytesIO(data), len(data))

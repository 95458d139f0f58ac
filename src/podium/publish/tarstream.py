"""A bundle's tar.gz, written and read as a stream: nothing of it is ever held whole in memory.

Writing goes through :mod:`tarfile` (podium's own files, in POSIX pax format, with fixed owners,
modes and times, so the same runs give the same archive). Reading a bundle someone else made does
not: :func:`members` parses the archive itself, since the archive is hostile input and
:mod:`tarfile`'s own defences depend on the interpreter's patch level (it also reads long names and
pax headers whole into memory, whatever size they declare). Only what podium writes is accepted:

- ustar headers with a valid checksum, pax extended headers (``x``) of at most :data:`MAX_PAX` bytes
  that set ``path`` and ``size``; regular files and folders. Anything else (links, devices, FIFOs,
  GNU long names, global or sparse headers) is reported as refused and its data skipped;
- names: relative, UTF-8, no ``..``, ``.`` or empty part, no backslash or control character, at most
  :data:`MAX_NAME` bytes and :data:`MAX_DEPTH` parts;
- sizes: every byte read, headers included, counts against a cap the caller gives (a decompression
  bomb stops there), and the number of members against :data:`MAX_MEMBERS`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, BinaryIO

from podium.errors import UsageError

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

BLOCK = 512
#: The longest member name accepted, in bytes.
MAX_NAME = 4096
#: The most parts a member name may have.
MAX_DEPTH = 32
#: The largest pax extended header accepted.
MAX_PAX = 64 * 1024
#: The most members an archive may hold.
MAX_MEMBERS = 5_000_000
_CHUNK = 1 << 20
_KINDS = {b"0": "file", b"\0": "file", b"5": "folder"}
_REFUSED = {
    b"1": "a hard link", b"2": "a symbolic link", b"3": "a character device", b"4": "a block device",
    b"6": "a FIFO", b"7": "a contiguous file", b"g": "a global pax header", b"L": "a GNU long name",
    b"K": "a GNU long link name", b"S": "a GNU sparse file",
}  # fmt: skip


class ArchiveError(UsageError):
    """Reading the archive stopped: it is corrupt, truncated, or over a cap (the message says which)."""


@dataclass
class Member:
    """One archive member: its name, kind (``file``, ``folder``, or why it is refused) and declared size.

    A file's data is read with :meth:`chunks`, at most once; what is not read is skipped when the next
    member is asked for."""

    name: str
    kind: str
    size: int
    refused: str | None
    _reader: _Reader

    def chunks(self) -> Iterator[bytes]:
        yield from self._reader.data(self.size)


def check_name(name: str) -> str | None:
    """Why ``name`` may not be a member's name, or None when it may."""
    raw = name.encode("utf-8", "surrogateescape")
    if not name or len(raw) > MAX_NAME:
        return f"a name of {len(raw)} bytes"
    if name.startswith("/") or "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        return "an absolute name, or one with a backslash or control character"
    parts = name.rstrip("/").split("/")
    if len(parts) > MAX_DEPTH or any(p in ("", ".", "..") for p in parts):
        return "a name with an empty, '.' or '..' part, or too deep"
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return "a name that is not UTF-8"
    return None


class _Reader:
    """The decompressed stream, every byte counted against the cap."""

    def __init__(self, stream: gzip.GzipFile, cap: int) -> None:
        self.stream = stream
        self.cap = cap
        self.read_bytes = 0
        self.pending = 0  # bytes of the current member (and its padding) not yet read

    def exact(self, count: int) -> bytes:
        self.read_bytes += count
        if self.read_bytes > self.cap:
            raise ArchiveError(
                f"the archive unpacks to more than {self.cap} bytes (the cap); pass --max-size to raise it"
            )
        data = self.stream.read(count)
        if len(data) != count:
            raise ArchiveError("the archive ends in the middle of a member (truncated)")
        return data

    def data(self, size: int) -> Iterator[bytes]:
        left = min(size, self.pending)
        while left > 0:
            chunk = self.exact(min(left, _CHUNK))
            left -= len(chunk)
            self.pending -= len(chunk)
            yield chunk

    def skip(self) -> None:
        while self.pending > 0:
            step = min(self.pending, _CHUNK)
            self.exact(step)
            self.pending -= step


def _octal(field: bytes, what: str) -> int:
    text = field.rstrip(b"\0 ").lstrip(b" ")
    if field[:1] and field[0] & 0x80:
        raise ArchiveError(f"a header's {what} is in base-256, which podium never writes")
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise ArchiveError(f"a header's {what} is not a number") from None


def _pax(data: bytes) -> dict[str, str]:
    """The records of a pax extended header (``LEN key=value\\n`` each)."""
    out: dict[str, str] = {}
    at = 0
    while at < len(data):
        space = data.find(b" ", at)
        try:
            length = int(data[at:space])
        except ValueError:
            raise ArchiveError("a pax header record has no length") from None
        record = data[space + 1 : at + length]
        if length <= 0 or not record.endswith(b"\n") or b"=" not in record:
            raise ArchiveError("a pax header record is malformed")
        key, _, value = record[:-1].partition(b"=")
        out[key.decode("utf-8", "replace")] = value.decode("utf-8", "surrogateescape")
        at += length
    return out


def members(stream: BinaryIO, cap: int) -> Iterator[Member]:
    """The members of the gzip-compressed tar ``stream``, reading at most ``cap`` decompressed bytes."""
    reader = _Reader(gzip.GzipFile(fileobj=stream, mode="rb"), cap)
    extended: dict[str, str] = {}
    count = 0
    try:
        while True:
            reader.skip()
            header = reader.exact(BLOCK)
            if header == bytes(BLOCK):
                return  # the end (a second zero block may follow; nothing after it is read)
            stored = _octal(header[148:156], "checksum")
            if stored != sum(header[:148]) + 8 * 32 + sum(header[156:]):
                raise ArchiveError("a member's header checksum is wrong (a corrupt or forged archive)")
            count += 1
            if count > MAX_MEMBERS:
                raise ArchiveError(f"the archive has more than {MAX_MEMBERS} members")
            size = _octal(header[124:136], "size")
            flag = header[156:157]
            if flag == b"x":
                if size > MAX_PAX:
                    raise ArchiveError(f"a pax header of {size} bytes (at most {MAX_PAX} are read)")
                reader.pending = size + (-size % BLOCK)
                extended = _pax(b"".join(reader.data(size)))
                continue
            name = header[:100].split(b"\0", 1)[0]
            prefix = header[345:500].split(b"\0", 1)[0]
            text = (prefix + b"/" + name if prefix else name).decode("utf-8", "surrogateescape")
            text = extended.get("path", text)
            if "size" in extended:
                try:
                    size = int(extended["size"])
                except ValueError:
                    raise ArchiveError("a pax header's size is not a number") from None
            extended = {}
            kind = _KINDS.get(flag)
            refused = _REFUSED.get(flag, f"a member of type {flag!r}") if kind is None else check_name(text)
            reader.pending = size + (-size % BLOCK)
            yield Member(text, kind or "refused", size, refused, reader)
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

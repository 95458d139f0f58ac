"""The headers of a tar someone else made, parsed here rather than by :mod:`tarfile`.

:mod:`tarfile`'s defences depend on the interpreter's patch level (the 2025 link-escape fixes are in
3.11.13 and 3.12.11, not in the 3.11.7 podium runs on), it reads long names, pax headers and sparse maps
whole into memory whatever size they declare, and it applies pax keys podium never writes (GNU tar even
renames a member after ``GNU.sparse.name``). :func:`headers` reads one ustar header at a time from a
:class:`Counted` stream, where every byte (headers, pax records, data, padding) counts against the caller's
cap, so a decompression bomb stops there. A header is refused (:class:`ArchiveRefused`, the archive as a
whole) when:

- its checksum is wrong, a number is in base-256 or not a number, or its magic is not ustar's;
- it is a pax extended header (``x``) larger than :data:`MAX_PAX` bytes, with a malformed record, a key
  named twice, or a key off the allowlist the caller gives (see :data:`METADATA_KEYS` for the metadata
  accepted and ignored), or one directly after another pax header;
- a pax header is the last thing in the archive.

A header of any other kind (links, devices, FIFOs, GNU long names, global or sparse headers) is returned
with its type flag; what a caller accepts is its own policy (:mod:`podium.untrusted.archive`).
"""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import BinaryIO

from podium.errors import PodiumError, quote

__all__ = ["BLOCK", "MAX_PAX", "METADATA_KEYS", "ArchiveRefused", "Counted", "Header", "headers"]

BLOCK = 512
#: The largest pax extended header read (podium's longest: a name and a link target, 7 KiB).
MAX_PAX = 64 << 10
#: pax keys that only describe a member (times, owners): accepted wherever the caller allows metadata, and
#: ignored (podium sets its own modes and times, and never owners). ``comment`` is not among them: podium
#: never writes it, so an archive carrying one was not made by podium.
METADATA_KEYS = frozenset({"mtime", "atime", "ctime", "uid", "gid", "uname", "gname"})
_CHUNK = 1 << 20
_MAGICS = (b"ustar\x0000", b"ustar  \x00")


class ArchiveRefused(PodiumError):
    """The archive as a whole is refused: corrupt, truncated, over a cap, or holding a header podium never
    writes (the message says which). Callers turn it into their own error (a usage error for a bundle, a
    harness error for a node's tar)."""


class Counted:
    """A binary stream read in exact amounts, every byte counted against ``cap`` (None: uncapped); running
    past the cap, a truncated or corrupt stream raise ``error`` (the caller's own class, since a member's data
    is read by the caller, outside the reader's generator)."""

    def __init__(
        self, stream: BinaryIO, cap: int | None, *, cap_hint: str = "", error: type[Exception] = ArchiveRefused
    ) -> None:
        self.stream, self.cap, self.cap_hint, self.error = stream, cap, cap_hint, error
        self.read_bytes = 0
        self.pending = 0  # bytes of the current member (data and padding) not yet read

    def exact(self, count: int) -> bytes:
        self.read_bytes += count
        if self.cap is not None and self.read_bytes > self.cap:
            raise self.error(f"the archive unpacks to more than {self.cap} bytes (the cap){self.cap_hint}")
        parts = []
        left = count
        while left > 0:  # a raw stream may return less than asked before its end
            try:
                data = self.stream.read(left)
            except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a corrupt or cut compressed stream
                raise self.error(f"not a readable archive ({exc})") from None
            if not data:
                raise self.error("the archive ends in the middle of a member (truncated)")
            parts.append(data)
            left -= len(data)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def data(self, size: int) -> Iterator[bytes]:
        """At most ``size`` bytes of the current member, in chunks (what was already read is not read again)."""
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


@dataclass(frozen=True)
class Header:
    """One member's header, pax keys applied: its name (bytes decoded as UTF-8 with surrogateescape, so a
    name that is not UTF-8 keeps its bytes), type flag, size, mode, modification time and link target."""

    name: str
    flag: bytes
    size: int
    mode: int
    mtime: int
    linkname: str
    utf8: bool  # whether the name's bytes are UTF-8


def _number(field: bytes, what: str) -> int:
    if field[:1] and field[0] & 0x80:
        raise ArchiveRefused(f"a header's {what} is in base-256, which podium never writes")
    text = field.split(b"\0", 1)[0].strip(b" ")
    if text and not text.isdigit():
        raise ArchiveRefused(f"a header's {what} is not a number")
    try:
        return int(text or b"0", 8)
    except ValueError:
        raise ArchiveRefused(f"a header's {what} is not a number") from None


def _text(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", "surrogateescape"), False


def parse_pax(data: bytes, allowed: Collection[str]) -> dict[str, bytes]:
    """The records of a pax extended header (``LEN key=value\\n`` each), refused when one is malformed, a key
    is named twice, or a key is not in ``allowed`` (GNU tar and :mod:`tarfile` act on keys podium never
    writes, so any such key means the archive would read differently elsewhere)."""
    out: dict[str, bytes] = {}
    at = 0
    while at < len(data):
        space = data.find(b" ", at, at + 24)
        digits = data[at:space] if space > at else b""
        if not digits.isdigit():
            raise ArchiveRefused("a pax header record has no length")
        length = int(digits)
        record = data[space + 1 : at + length]
        if length <= space - at + 1 or at + length > len(data) or not record.endswith(b"\n") or b"=" not in record:
            raise ArchiveRefused("a pax header record is malformed")
        raw_key, _, value = record[:-1].partition(b"=")
        key = raw_key.decode("utf-8", "replace")
        if key not in allowed:
            sparse = " (it marks a sparse file, which GNU tar would write under another name)"
            why = sparse if key.startswith("GNU.sparse.") else ""
            raise ArchiveRefused(f"a pax header sets the key {quote(key, 60)}{why}; podium never writes it")
        if key in out:
            raise ArchiveRefused(f"a pax header sets the key {quote(key, 60)} twice")
        out[key] = value
        at += length
    return out


def headers(reader: Counted, allowed_pax: Collection[str]) -> Iterator[Header]:
    """Each member's header read from ``reader`` until the end-of-archive block (the data of the member before
    is skipped when the next is asked for; the caller reads it with ``reader.data``)."""
    extended: dict[str, bytes] | None = None
    while True:
        reader.skip()
        block = reader.exact(BLOCK)
        if block == bytes(BLOCK):
            if extended is not None:
                raise ArchiveRefused("the archive ends after a pax header, with no member for it")
            return  # a second zero block may follow; nothing after the first is read
        if _number(block[148:156], "checksum") != sum(block[:148]) + 8 * 32 + sum(block[156:]):
            raise ArchiveRefused("a member's header checksum is wrong (a corrupt or forged archive)")
        magic = block[257:265]
        if magic not in _MAGICS:
            raise ArchiveRefused("a member's header is not a ustar header (an old or foreign tar format)")
        size = _number(block[124:136], "size")
        flag = block[156:157]
        reader.pending = size + (-size % BLOCK)
        if flag == b"x":
            if extended is not None:
                raise ArchiveRefused("two pax headers in a row (tar readers disagree on which one counts)")
            if size > MAX_PAX:
                raise ArchiveRefused(f"a header of {size} bytes (a pax header; at most {MAX_PAX} are read)")
            extended = parse_pax(b"".join(reader.data(size)), allowed_pax)
            continue
        name = block[:100].split(b"\0", 1)[0]
        prefix = block[345:500].split(b"\0", 1)[0] if magic == _MAGICS[0] else b""
        raw = prefix + b"/" + name if prefix else name
        link = block[157:257].split(b"\0", 1)[0]
        pax = extended or {}
        extended = None
        if "path" in pax:
            raw = pax["path"]
        if "linkpath" in pax:
            link = pax["linkpath"]
        if "size" in pax:
            if not pax["size"].isdigit():
                raise ArchiveRefused("a pax header's size is not a number")
            size = int(pax["size"])
            reader.pending = size + (-size % BLOCK)
        if "hdrcharset" in pax and pax["hdrcharset"] != b"BINARY":
            raise ArchiveRefused("a pax header's hdrcharset is not BINARY")
        text, utf8 = _text(raw)
        mode = _number(block[100:108], "mode")
        mtime = _number(block[136:148], "modification time")
        yield Header(text, flag, size, mode, mtime, _text(link)[0], utf8)

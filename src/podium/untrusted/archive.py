"""The one tar reader for archives someone else made (a bundle, a node's tar of a run folder).

:func:`read_members` reads the headers itself (:mod:`podium.untrusted.tarheaders`: every byte counted against
the caller's cap, pax keys on an allowlist, two pax headers in a row, a global header or a base-256 number
refused) and checks each member against the caller's :class:`ArchivePolicy`:

- its kind: files and folders always; symbolic links only where the policy keeps them (kept as links, never
  resolved); hard links, devices, FIFOs, contiguous and sparse files, GNU long names and global headers never;
- its name (:func:`name_problem`): relative, no ``..``, ``.`` or empty part, no control character (nor a
  backslash where the policy says), UTF-8 unless the policy keeps other bytes, within the caps on one part,
  the whole, and the depth;
- its place: a name that an earlier member took (a duplicate), one below a member that is not a folder (a
  file or a link where a folder is), and, where the policy asks, one whose folder no earlier member made;
- the caps: members (:attr:`ArchivePolicy.max_members`) and regular files' bytes (``max_bytes``).

A member that fails a check is yielded with :attr:`Member.refused` saying why (its data is skipped), so a
verifier can list every difference; :func:`podium.untrusted.extract.extract` stops at the first. The names
seen are kept as keyed 64-bit digests, so a million members cost tens of MB, and a collision can only refuse
a member, never let one through.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from podium.errors import quote
from podium.untrusted.tarheaders import METADATA_KEYS, ArchiveRefused, Counted, Header, headers

__all__ = ["BUNDLE", "RUN_FOLDER", "ArchivePolicy", "ArchiveRefused", "Member", "name_problem", "read_members"]

_KINDS = {b"0": "file", b"\0": "file", b"5": "folder", b"2": "link"}
_NEVER = {
    b"1": "a hard link", b"3": "a character device", b"4": "a block device", b"6": "a FIFO",
    b"7": "a contiguous file", b"g": "a global pax header", b"L": "a GNU long name",
    b"K": "a GNU long link name", b"S": "a sparse file (GNU)", b"2": "a symbolic link",
}  # fmt: skip
_CONTROL = frozenset(chr(c) for c in (*range(32), 127))


@dataclass(frozen=True)
class ArchivePolicy:
    """What one caller accepts from an archive: kinds, name rules and caps."""

    links: bool = False  # keep symbolic links (as links, never resolved)
    max_members: int = 20_000
    max_bytes: int | None = None  # the regular files' bytes, all together
    max_part: int = 255  # bytes of one part of a name
    max_path: int = 4096  # bytes of a whole name
    max_depth: int = 32  # parts of a name
    utf8_only: bool = True  # refuse a name whose bytes are not UTF-8
    backslash: bool = False  # accept a backslash in a name
    parents_first: bool = False  # a member's folder must be an earlier member
    metadata: bool = True  # accept (and ignore) the pax keys in METADATA_KEYS

    def pax_keys(self) -> frozenset[str]:
        keys = {"path", "size"} | ({"linkpath"} if self.links else set()) | (METADATA_KEYS if self.metadata else set())
        return frozenset(keys | (set() if self.utf8_only else {"hdrcharset"}))


#: A bundle (``podium bundle create``'s tar.gz): files and folders only, UTF-8 names, 20,000 members at most.
BUNDLE = ArchivePolicy(max_path=4096, max_depth=32)
#: A run folder or a data folder a node or the driver sends: links kept as links, any bytes in a name (an agent's
#: files keep theirs), each folder made before what it holds.
RUN_FOLDER = ArchivePolicy(
    links=True, max_members=1_000_000, max_path=3072, max_depth=128, utf8_only=False, backslash=True,
    parents_first=True,
)  # fmt: skip


def name_problem(name: str, policy: ArchivePolicy, *, utf8: bool = True) -> str | None:
    """Why ``name`` may not name a member under ``policy``, or None when it may (one trailing ``/`` is allowed,
    as tar writes folders)."""
    if name.startswith("/"):
        return "an absolute name"
    if name.endswith("/"):
        name = name[:-1]
    if any(c in _CONTROL for c in name) or (not policy.backslash and "\\" in name):
        return "a backslash or control character in its name"
    if policy.utf8_only and not utf8:
        return "a name that is not UTF-8"
    parts = name.split("/")
    bad = "'..' in its name" if ".." in parts else "an empty or '.' part" if {"", "."} & set(parts) else None
    if bad is None and len(parts) > policy.max_depth:
        bad = f"more than {policy.max_depth} folders deep"
    if bad is not None:
        return f"a name with an empty, '.' or '..' part, or too deep ({bad})"
    sizes = [len(os.fsencode(part)) for part in parts]
    if max(sizes) > policy.max_part:
        return f"a name of {max(sizes)} bytes (at most {policy.max_part})"
    if sum(sizes) + len(sizes) - 1 > policy.max_path:
        return f"a path of more than {policy.max_path} bytes"
    return None


@dataclass
class Member:
    """One archive member: its name (without a trailing ``/``), kind (``file``, ``folder``, ``link`` or
    ``refused``), declared size, link target, mode and time, and why it is refused (None when it is not).

    A file's data is read with :meth:`chunks`, at most once; what is not read is skipped when the next member
    is asked for."""

    name: str
    kind: str
    size: int
    refused: str | None
    _reader: Counted
    linkname: str = ""
    mode: int = 0o644
    mtime: int = 0

    def chunks(self) -> Iterator[bytes]:
        yield from self._reader.data(self.size if self.kind == "file" else 0)


class _Places:
    """The names taken so far, as keyed digests: which are folders, which are anything else."""

    def __init__(self) -> None:
        self.key = os.urandom(16)
        self.taken: dict[int, bool] = {}  # digest -> is a folder (made, or implied by a member below it)

    def digest(self, name: str) -> int:
        raw = name.encode("utf-8", "surrogateescape")
        return int.from_bytes(hashlib.blake2b(raw, digest_size=8, key=self.key).digest(), "big")

    def refused(self, name: str) -> None:
        self.taken.setdefault(self.digest(name), False)

    def problem(self, name: str, kind: str, parents_first: bool) -> str | None:
        parts = name.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            state = self.taken.get(self.digest(folder))
            if state is False:
                return (
                    f"it lies below {quote(folder, 200)}, which is a symbolic link or a file (links are never followed)"
                )
            if state is None and parents_first:
                return f"its folder {quote(folder, 200)} was not made by an earlier member"
        here = self.digest(name)
        if here in self.taken:
            return "a second member of the same name"
        for depth in range(1, len(parts)):
            self.taken.setdefault(self.digest("/".join(parts[:depth])), True)
        self.taken[here] = kind == "folder"
        return None


def read_members(
    stream: object,
    policy: ArchivePolicy,
    cap: int | None,
    *,
    cap_hint: str = "",
    error: type[Exception] = ArchiveRefused,
) -> Iterator[Member]:
    """The members of the (uncompressed) tar ``stream`` under ``policy``, reading at most ``cap`` bytes of it;
    :class:`ArchiveRefused` for what makes the whole archive unreadable (see the module's docstring), or
    ``error`` where that happens while a member's data is read (past the cap, truncated, corrupt)."""
    reader = Counted(stream, cap, cap_hint=cap_hint, error=error)  # type: ignore[arg-type]
    places = _Places()
    file_bytes = 0
    after_long_name = False
    for count, header in enumerate(headers(reader, policy.pax_keys()), start=1):
        if count > policy.max_members:
            raise ArchiveRefused(f"the archive has more than {policy.max_members:,} members")
        kind, refused = _judge(header, policy)
        name = header.name[:-1] if header.name.endswith("/") and len(header.name) > 1 else header.name
        if refused is None and after_long_name:
            refused = "it follows a GNU long name, so other tar readers give it another name"
        after_long_name = header.flag in (b"L", b"K")
        if refused is None:
            refused = places.problem(name, kind, policy.parents_first)
        elif header.flag not in (b"L", b"K", b"g"):
            places.refused(name)  # nothing may land below a member that was refused
        if refused is None and kind == "file":
            file_bytes += header.size
            if policy.max_bytes is not None and file_bytes > policy.max_bytes:
                raise ArchiveRefused(
                    f"member {quote(name, 200)}: the files pass their cap of {policy.max_bytes:,} bytes"
                )
        if refused is not None:
            kind = "refused"
        yield Member(name, kind, header.size, refused, reader, header.linkname, header.mode, header.mtime)


def _judge(header: Header, policy: ArchivePolicy) -> tuple[str, str | None]:
    kind = _KINDS.get(header.flag)
    if kind == "link" and not policy.links:
        kind = None
    if kind is None:
        what = _NEVER.get(header.flag, f"a member of type {header.flag!r}")
        if header.flag == b"1":
            what = f"a hard link to {quote(header.linkname, 200)}"
        kept = "folders, files and symbolic links" if policy.links else "folders and files"
        return "refused", f"{what}; only {kept} are kept"
    problem = name_problem(header.name, policy, utf8=header.utf8)
    if problem is None and kind == "link":
        target = header.linkname
        if not target or "\0" in target or len(os.fsencode(target)) >= 4096:
            problem = "a symbolic link with an empty or too long target"
    return kind, problem

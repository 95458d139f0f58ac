"""Folders as bytes between the driver and the nodes: a competition's public data out, a run's folder back.

A folder travels as an uncompressed tar (links kept as links, never followed) and is unpacked with
Python's ``data`` filter: no absolute paths, no ``..``, no links that leave the folder, no device
nodes, no setuid bits. A run's folder is the agent's hostile output and is treated as such. The
public data a node caches is named by a digest of its recorded checksums and verified against them
before any run reads it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import shutil
import tarfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from podium.data.checksums import compare, digest_tree
from podium.errors import HarnessError
from podium.paths import write_atomic

__all__ = ["check_public", "pack", "public_checksums", "public_digest", "unpack"]


def public_checksums(checksums: Mapping[str, str]) -> dict[str, str]:
    """The recorded checksums of a prepared competition's public side (``public/NAME`` keys only)."""
    return {key: value for key, value in checksums.items() if key.startswith("public/")}


def public_digest(checksums: Mapping[str, str]) -> str:
    """One name for a public folder's content: the sha256 of its sorted checksum lines."""
    lines = "\n".join(f"{key} {checksums[key]}" for key in sorted(checksums))
    return hashlib.sha256(lines.encode()).hexdigest()


def check_public(prepared: Path, expected: Mapping[str, str], where: str, verified: Path | None = None) -> None:
    """Raise :class:`HarnessError` unless ``prepared/public`` matches the recorded checksums.

    With ``verified`` (a folder of the node's), a successful check is remembered under the checksums'
    digest with the folder's listing (names, sizes, modification times): while the listing is the
    same, the files are not hashed again, so a node reads a large shared folder once, not per run.
    """
    public = prepared / "public"
    if not public.is_dir():
        raise HarnessError(f"{where}: no prepared public folder at {public}")
    marker = (
        verified / f"{public_digest(expected)}-{hashlib.sha256(str(public).encode()).hexdigest()[:16]}"
        if verified
        else None
    )
    listing = _listing(public)
    with contextlib.suppress(OSError):
        if marker is not None and marker.read_text(encoding="utf-8") == listing:
            return
    actual = public_checksums(digest_tree(prepared, sides=("public",)))
    problems = compare(dict(expected), actual)
    if problems:
        raise HarnessError(f"{where}: public data differs from its recorded checksums: {'; '.join(problems[:5])}")
    if marker is not None:
        with contextlib.suppress(OSError):
            marker.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(marker, listing)


def _listing(folder: Path) -> str:
    """A digest of every entry's name, size and modification time under ``folder`` (cheap: no file is read)."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        info = path.lstat()
        digest.update(f"{path.relative_to(folder)}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def pack(folder: Path, skip: Sequence[Path] = (), hidden: bool = True) -> bytes:
    """``folder``'s tree as tar bytes (symbolic links stored as links), without the folders in ``skip`` and,
    unless ``hidden``, without hidden entries and ``__pycache__``."""
    skipped = {
        str(p.resolve().relative_to(folder.resolve())) for p in skip if p.resolve().is_relative_to(folder.resolve())
    }

    def keep(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        parts = Path(info.name).parts
        if info.name in skipped or (not hidden and any(p.startswith(".") or p == "__pycache__" for p in parts)):
            return None
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for entry in sorted(folder.iterdir()):
            tar.add(entry, arcname=entry.name, recursive=True, filter=keep)
    return buffer.getvalue()


def unpack(data: bytes, destination: Path) -> None:
    """Unpack tar bytes into the existing folder ``destination``, refusing anything that would leave it."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tar:
            tar.extractall(destination, filter="data")
    except (tarfile.TarError, OSError) as error:
        raise HarnessError(
            f"a run's folder from the cluster could not be unpacked into {destination}: {error}"
        ) from error


def cache_public(data: bytes, cache: Path, competition_id: str, digest: str, expected: Mapping[str, str]) -> Path:
    """The node's data dir holding ``competition_id``'s public folder named by ``digest``, unpacked once.

    The folder is unpacked beside its final name, verified, and renamed into place, so a node that
    dies half-way leaves no folder a later run would trust.
    """
    root = cache / digest[:32]
    prepared = root / competition_id / "prepared"
    if (prepared / "public").is_dir():
        return root
    staging = root / competition_id / f".prepared.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "public").mkdir(parents=True)
    try:
        unpack(data, staging / "public")
        check_public(staging, expected, competition_id)
        with contextlib.suppress(OSError):  # another worker of this node got there first: theirs is as good
            os.rename(staging, prepared)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return root

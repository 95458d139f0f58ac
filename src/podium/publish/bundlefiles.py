"""The files of a bundle being written: each run file read twice (hashed and scanned for keys, then streamed
into the archive, where it must hash the same), copies of the prepared data and over-size files left out, and
every member's sha256 and size kept for the manifest. Used by :mod:`podium.publish.bundle`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from podium.errors import UsageError
from podium.paths import CompetitionPaths
from podium.publish.tarstream import add_bytes, add_stream
from podium.untrusted import open_regular

__all__ = ["MANIFEST", "ROOT", "SCHEMA", "checksums_digest"]

#: The folder every member lies in.
ROOT = "podium-bundle"
#: The manifest's name in it.
MANIFEST = "manifest.json"
SCHEMA = "podium-bundle/1"
_CHUNK = 1 << 20
_OVERLAP = 512
_MAX_DEPTH = 64
_SUBMISSION = "submission/submission.csv"


def checksums_digest(checksums: Mapping[str, Any]) -> str:
    """The sha256 naming a competition's prepared data: of its checksums, as canonical JSON."""
    return hashlib.sha256(json.dumps(checksums, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class _Prepared:
    """What the competitions' prepared data is (for the manifest) and which run files are copies of it."""

    def __init__(self, competition_ids: Sequence[str], data_dir: Path) -> None:
        self.summary: dict[str, Any] = {}
        self.by_hash: dict[str, str] = {}
        for cid in competition_ids:
            paths = CompetitionPaths(data_dir, cid)
            marker = paths.record()
            if marker is None or not isinstance(marker.get("checksums"), dict):
                raise UsageError(
                    f"{cid} is not prepared in {data_dir}: a bundle names the prepared data its runs were graded "
                    f"against; pass --data-dir DIR where it is prepared (podium prepare -c {cid} --data-dir DIR)"
                )
            checksums = marker["checksums"]
            self.summary[cid] = {
                "data_of_version": marker.get("version"),
                "checksums_sha256": checksums_digest(checksums),
                "entries": len(checksums),
            }
            for name, value in checksums.items():
                if isinstance(value, str) and not value.startswith("manifest:"):
                    self.by_hash.setdefault(value, f"{cid}/prepared/{name}")

    def private_only(self) -> _Prepared:
        """The same, knowing only the private files' copies (a declaration's description is also public)."""
        view = object.__new__(_Prepared)
        view.summary = self.summary
        view.by_hash = {h: where for h, where in self.by_hash.items() if "/prepared/private/" in where}
        return view


def _walk(
    root: Path, leave: Callable[[os.DirEntry[str]], bool] | None = None
) -> Iterator[tuple[str, Path | None, str | None]]:
    """(relative path, path or None, why it is left out or None) of everything under ``root``: a folder's files
    by name, then its folders; ``leave`` names entries passed over without a word."""
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        with os.scandir(folder) as listing:
            entries = sorted((e for e in listing if leave is None or not leave(e)), key=lambda e: e.name)
        below = []
        for entry in entries:
            relative = Path(entry.path).relative_to(root).as_posix()
            if entry.is_symlink():
                yield relative, None, "a symbolic link (never followed)"
            elif entry.is_dir(follow_symlinks=False):
                if depth < _MAX_DEPTH:
                    below.append((Path(entry.path), depth + 1))
                else:
                    yield relative, None, f"a folder deeper than {_MAX_DEPTH} levels"
            elif entry.is_file(follow_symlinks=False):
                yield relative, Path(entry.path), None
            else:
                yield relative, None, "not a regular file (a device, FIFO or socket)"
        stack.extend(reversed(below))


def _read(handle: IO[bytes], size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        chunk = handle.read(min(left, _CHUNK))
        if not chunk:
            return
        left -= len(chunk)
        yield chunk


def _scan(handle: IO[bytes], size: int, secret_in: Callable[[str], str | None]) -> tuple[str, str | None]:
    """(sha256 of the first ``size`` bytes, the first secret in them or None), read in overlapping chunks."""
    digest = hashlib.sha256()
    tail = b""
    for chunk in _read(handle, size):
        digest.update(chunk)
        found = secret_in((tail + chunk).decode("latin-1"))
        if found is not None:
            return digest.hexdigest(), found
        tail = chunk[-_OVERLAP:]
    return digest.hexdigest(), None


class _Writer:
    """The archive being written: every member's hash and size, for the manifest."""

    def __init__(self, tar: Any) -> None:
        self.tar = tar
        self.files: dict[str, dict[str, Any]] = {}

    def add(self, name: str, handle: IO[bytes], size: int) -> str:
        digest = add_stream(self.tar, f"{ROOT}/{name}", handle, size)
        self.files[name] = {"sha256": digest, "size": size}
        return digest

    def add_data(self, name: str, data: bytes) -> None:
        self.files[name] = {"sha256": add_bytes(self.tar, f"{ROOT}/{name}", data), "size": len(data)}


def _add_file(
    writer: _Writer, name: str, path: Path, relative: str, prepared: _Prepared, max_file: int, secret_in: Any
) -> str | None:
    """Add one run file; returns why it was left out, or None."""
    fd = open_regular(path)
    if fd is None:
        return "not a regular file"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if info.st_size > max_file and relative != _SUBMISSION:
            return f"{info.st_size} bytes, over --max-file-size ({max_file})"
        digest, secret = _scan(handle, info.st_size, secret_in)
        if secret is not None:
            raise UsageError(
                f"{path}: holds {secret}; a bundle never carries a key: remove it from the file (and revoke the key), "
                "then bundle again"
            )
        copy = prepared.by_hash.get(digest)
        if copy is not None and ("/prepared/private/" in copy or relative != _SUBMISSION):
            return f"a copy of the prepared data ({copy})"
        handle.seek(0)
        if writer.add(name, handle, info.st_size) != digest:
            raise UsageError(f"{path}: changed while it was bundled; bundle again once the run folder is at rest")
    return None


def _add_tree(
    writer: _Writer,
    root: Path,
    place: str,
    prepared: _Prepared,
    max_file: int,
    secret_in: Any,
    leave: Callable[[os.DirEntry[str]], bool] | None = None,
) -> tuple[list[str], list[dict[str, str]]]:
    """Add every file under ``root`` as ``place/...``; returns the files added and those left out (with why)."""
    files, left_out = [], []
    for relative, path, why in _walk(root, leave):
        if path is not None:
            why = _add_file(writer, f"{place}/{relative}", path, relative, prepared, max_file, secret_in)
        if why is None:
            files.append(relative)
        else:
            left_out.append({"path": relative, "reason": why})
    return files, left_out

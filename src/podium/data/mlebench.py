"""`podium prepare --from-mlebench DIR`: take the data MLE-bench already prepared instead of downloading it again.

MLE-bench prepares each competition into ``DIR/<competition-id>/prepared/public/`` and ``.../private/``
(``mlebench/registry.py``: ``public_dir`` and ``private_dir`` under its data dir, by default
``~/.cache/mle-bench/data``); its splits are the published ones, which version 1 of every podium
competition reproduces. For each competition this module:

1. finds ``DIR/ID/prepared/{public,private}/``, opening every folder without following a link (a
   symbolic link, a device or a pipe anywhere in the source is refused and named, never followed out);
2. takes every file into a staging folder: a reflink where the filesystem can (a copy-on-write copy that
   shares nothing with the source afterwards), else a hard link (only for a file every user may read,
   since its mode cannot be changed without changing the source), else a streamed copy. The source is
   only read: nothing in it is written, renamed or chmod-ed (a hard link adds to its link count);
3. writes podium's own ``description.md`` in place of MLE-bench's, checks the invariants every prepare
   checks (the answers and the sample submission carry the same ids) and runs the leak scan;
4. compares the checksums with those podium records for the competition's real data (``checksums.json``
   beside its declaration, :func:`podium.data.checksums.reference_checksums`). Data that differs is not
   taken; where podium records none, the data is taken and the outcome says it was not compared;
5. renames the staging folder to ``prepared/`` with ``podium.json`` as a prepare writes it (plus where
   the data came from), so a prepared folder that exists is complete.

A competition already prepared is skipped, and an interrupted take resumes: the staging folder
(``.prepared.tmp-mlebench``) is kept, and a file already taken (the same inode, or a copy of the same
size and time) is not taken again.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from podium.competition import Competition
from podium.data._mlebench_files import (
    _SIDES,
    _Entry,
    _locked,
    _open_dir,
    _opened,
    _Progress,
    _Refused,
    _scan,
    _shown,
    _size,
    _source,
    _stale,
    _take_all,
)
from podium.data.checksums import DESCRIPTION, compare, digest_tree, reference_checksums, without_description
from podium.data.leaks import scan_for_leaks
from podium.errors import PodiumError
from podium.paths import MARKER, CompetitionPaths

__all__ = ["DEFAULT_MLEBENCH_DIR", "Taken", "competitions_in", "take_from_mlebench", "take_many"]

#: Where MLE-bench keeps its data unless told otherwise (appdirs' user cache dir on Linux).
DEFAULT_MLEBENCH_DIR = Path("~/.cache/mle-bench/data")
_STAGING_TAG = "mlebench"
_DESCRIPTION_LIMIT = 1 << 20  # bytes of MLE-bench's description read to compare it with podium's


@dataclass
class Taken:
    """What ``--from-mlebench`` did with one competition."""

    competition_id: str
    status: Literal["taken", "skipped", "differs", "missing", "failed"]
    detail: str
    differed: list[str] = field(default_factory=list)
    fix: str | None = None
    files: int = 0
    bytes: int = 0
    how: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


def _their_description(entries: list[_Entry], src_fd: int) -> bytes | None:
    """MLE-bench's ``public/description.md`` (at most 1 MB of it, read without following a link), or None."""
    mine = [e for e in entries if e.path == DESCRIPTION]
    if not mine:
        return None
    public = _open_dir("public", src_fd)
    try:
        fd = _opened(mine[0], "description.md", public)
    finally:
        os.close(public)
    try:
        return os.read(fd, _DESCRIPTION_LIMIT)
    finally:
        os.close(fd)


def _describe(competition: Competition, staging: Path, obfuscated: bool, theirs: bytes | None) -> str:
    """podium's own description in place of MLE-bench's; the words for the outcome."""
    from podium.data.prepare import description_path

    target = staging / DESCRIPTION
    ours = description_path(competition, obfuscated)
    target.unlink(missing_ok=True)
    if ours is None:
        return "no description (podium has none for it)"
    shutil.copyfile(ours, target)
    if theirs is None:
        return "podium's description.md added (MLE-bench's folder had none)"
    same = theirs == ours.read_bytes()
    return "description.md: podium's own" + (" (the same text)" if same else " (MLE-bench's differs)")


def _mismatch(competition: Competition, problems: list[str], started: float) -> Taken:
    fix = f"podium prepare -c {competition.ref} (prepares it from Kaggle's data)"
    detail = f"not taken: {len(problems)} difference(s) from podium's recorded checksums"
    return Taken(competition.id, "differs", detail, problems, fix, seconds=time.monotonic() - started)


def take_from_mlebench(
    competition: Competition,
    source: Path,
    data_dir: Path,
    *,
    force: bool = False,
    obfuscated: bool = False,
    say: Callable[[str], None] | None = None,
) -> Taken:
    """Take one competition's prepared data from the MLE-bench data dir ``source`` (see the module docstring)."""
    from podium.data.prepare import check_invariants

    tell = say or (lambda line: print(line, file=sys.stderr))
    started = time.monotonic()
    fix = f"podium prepare -c {competition.ref}"
    if competition.data_version != 1:
        return Taken(competition.id, "missing", f"MLE-bench holds version 1's data; {competition.ref} needs "
                     f"version {competition.data_version}'s", fix=fix)  # fmt: skip
    paths = CompetitionPaths(data_dir, competition.id)
    record = paths.record()
    if record is not None and not force:
        if competition.shares_data_with(record.get("version")):
            return Taken(competition.id, "skipped", "already prepared (pass --force to take it again)")
        return Taken(competition.id, "failed", f"prepared with the data of version {record.get('version')}",
                     fix=f"{fix} --force")  # fmt: skip
    try:
        src_fd, missing = _source(source, competition.id)
    except _Refused as exc:
        return Taken(competition.id, "failed", f"not taken: {exc}", fix=fix)
    if missing is not None:
        return Taken(competition.id, "missing", missing, fix=fix)
    try:
        entries: list[_Entry] = []
        for side in _SIDES:
            try:
                side_fd = _open_dir(side, src_fd)
            except FileNotFoundError:
                return Taken(competition.id, "missing", f"no {competition.id}/prepared/{side}/ in {source}", fix=fix)
            try:
                _scan(side_fd, side, entries)
            finally:
                os.close(side_fd)
        theirs = _their_description(entries, src_fd)
        entries = [e for e in entries if e.path != DESCRIPTION]
        total = sum(e.size for e in entries)
        tell(f"  {competition.id}: taking {len(entries):,} files ({_size(total)}) from {source / competition.id}")
        paths.root.mkdir(parents=True, exist_ok=True)
        staging = paths.staging(_STAGING_TAG)
        staging.mkdir(exist_ok=True)
        with _locked(staging, competition.id):
            _stale(staging, {e.path for e in entries})
            how = _take_all(entries, src_fd, staging, _Progress(tell, competition.id, len(entries), total))
            for side in _SIDES:
                (staging / side).mkdir(exist_ok=True)
            described = _describe(competition, staging, obfuscated, theirs)
            test_ids = check_invariants(competition, staging)
            leaks = scan_for_leaks(competition, staging / "public", staging / "private", test_ids)
            if leaks:
                shutil.rmtree(staging)
                return Taken(competition.id, "failed", "the leak scan found: " + "; ".join(leaks), fix=fix)
            tell(f"  {competition.id}: checking {_size(total)} against podium's checksums")
            checksums = digest_tree(staging, done=_Progress(tell, f"{competition.id} checked", len(entries), total))
            reference = reference_checksums(competition)
            if reference is not None:
                problems = compare(reference, without_description(checksums))
                if problems:
                    shutil.rmtree(staging)
                    return _mismatch(competition, problems, started)
            checked = "identical to podium's recorded checksums" if reference is not None else (
                "not compared: podium records no checksums of its real data")  # fmt: skip
            marker = {
                "competition_id": competition.id,
                "version": competition.data_version,
                "checksums": checksums,
                "source": {"mlebench": str(source / competition.id / "prepared"), "taken": how},
            }
            (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
            if paths.prepared.exists():
                shutil.rmtree(paths.prepared)
            os.replace(staging, paths.prepared)
    except _Refused as exc:
        shutil.rmtree(paths.staging(_STAGING_TAG), ignore_errors=True)
        return Taken(competition.id, "failed", f"not taken: {exc}", fix=fix)
    finally:
        os.close(src_fd)
    ways = ", ".join(f"{count:,} {way}" for way, count in sorted(how.items()))
    detail = f"{len(entries):,} files ({_size(total)}): {ways}; {checked}; {described}"
    return Taken(competition.id, "taken", detail, files=len(entries), bytes=total, how=how,
                 seconds=time.monotonic() - started)  # fmt: skip


def competitions_in(source: Path, known: Iterable[str]) -> Iterator[str]:
    """The competitions of ``known`` that the MLE-bench data dir ``source`` holds a folder of."""
    for cid in known:
        if (source / cid / "prepared").is_dir() and not (source / cid).is_symlink():
            yield cid


def take_many(
    competitions: Iterable[Competition],
    source: Path,
    data_dir: Path,
    *,
    force: bool = False,
    obfuscated: bool = False,
    say: Callable[[str], None] | None = None,
) -> list[Taken]:
    """:func:`take_from_mlebench` for each competition, going on past failures, with a line per competition."""
    tell = say or (lambda line: print(line, file=sys.stderr))
    comps = list(competitions)
    out = []
    for index, comp in enumerate(comps, start=1):
        tell(f"[{index}/{len(comps)}] {comp.ref}")
        fix = f"podium prepare -c {comp.ref}"
        try:
            out.append(take_from_mlebench(comp, source, data_dir, force=force, obfuscated=obfuscated, say=tell))
        except PodiumError as exc:  # the data is not what podium expects (an answers file missing): not taken
            shutil.rmtree(CompetitionPaths(data_dir, comp.id).staging(_STAGING_TAG), ignore_errors=True)
            out.append(Taken(comp.id, "failed", f"not taken: {exc}", fix=fix))
        except OSError as exc:  # a full disk, an unreadable file: what was taken stays staged for the next run
            out.append(Taken(comp.id, "failed", f"{exc.strerror or exc} ({_shown(str(exc.filename or ''))}); "
                             "what was taken is kept, and a rerun resumes", fix=f"rerun, or {fix}"))  # fmt: skip
    return out

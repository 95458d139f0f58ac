"""Where runs live: one folder per run, indexed in an embedded SQLite database.

    RUNS/<group>/<competition>/<seed>/record.json   a finished run (the folder is named by its seed)
    RUNS/<group>/<competition>/.<seed>.tmp-<owner>-<n>/   a run in progress: its staging folder
    RUNS/.owners/<owner>.lock                       held (flock) by each podium process that stages runs
    RUNS/podium.db                                  the index: one row per finished run

A run is staged (:meth:`RunStore.stage`) in a folder of its own and finished by :meth:`RunStore.land`:
``record.json`` is written to a temporary file, fsynced and renamed into the staging folder, the
staging folder is fsynced and renamed to its final name, the parent folder is fsynced, and only then
is the run indexed. Only folders with a final name are runs: a staging folder, whatever it holds (a
record torn by a kill included), is a leftover, never indexed.

A staging folder's name carries its owner's token (pid, start time and boot id; see
:mod:`podium.owner`), and its owner holds an flock on ``.owners/<owner>.lock`` for as long as it
runs. :meth:`RunStore.sweep` removes the staging folders whose owner no longer holds its lock (a
process killed with SIGKILL drops its locks at once, reaped or not), so a reused pid never keeps a
dead run's folder, and a live podium's runs are never touched. The lock file names its host: on a
shared folder whose filesystem has no working locks, another host's runs are kept (its pids mean
nothing here). :meth:`RunStore.reconcile` is the one
place that repairs the index: it adds a row for every final folder with a readable record and none,
and drops every row whose record is gone, so after it the index lists exactly the finished runs.
Killing podium at any instruction therefore loses no finished run and counts none twice.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import json
import os
import re
import shutil
import socket
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from podium import owner
from podium.paths import exchange_folders, fsync_dir, write_durably
from podium.records import MEDAL_FLAGS, RunRecord
from podium.untrusted import RECORD_MAX_BYTES, read_json

__all__ = ["INDEX_NAME", "STAGING_NAME", "RunStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_group TEXT NOT NULL,
    competition_id TEXT NOT NULL,
    competition_version INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    agent TEXT NOT NULL,
    status TEXT NOT NULL,
    score REAL,
    valid_submission INTEGER NOT NULL,
    submission_exists INTEGER NOT NULL,
    above_median INTEGER NOT NULL,
    {medals},
    any_medal INTEGER NOT NULL,
    record_path TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    other_versions TEXT NOT NULL DEFAULT '[]',
    percentile REAL,
    rank INTEGER,
    UNIQUE (run_group, competition_id, seed, agent)
)
""".replace("{medals}", ",\n    ".join(f"{flag} INTEGER NOT NULL" for flag in MEDAL_FLAGS))
#: Columns added after the first schema, with their declarations, for indexes written by older podiums.
#: Rows indexed before a column was added read NULL there (``percentile`` and ``rank``: not placed).
_ADDED_COLUMNS = {"other_versions": "TEXT NOT NULL DEFAULT '[]'", "percentile": "REAL", "rank": "INTEGER"}
#: The columns of a row, in the order :func:`_row` gives them (named, so a migrated table's order does not matter).
_COLUMNS = (
    "run_group", "competition_id", "competition_version", "seed", "agent", "status", "score",
    "valid_submission", "submission_exists", "above_median", *MEDAL_FLAGS, "any_medal",
    "record_path", "finished_at", "other_versions", "percentile", "rank",
)  # fmt: skip
_INSERT = f"INTO runs ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
_OWNERS = ".owners"
_STAGING_MARK = ".tmp-"
#: The index's file in the runs folder.
INDEX_NAME = "podium.db"
#: A staging folder's name: ``.<seed>.tmp-<owner token>-<n>`` (see ``RunStore._staging_name``).
STAGING_NAME = re.compile(rf"\.(\d+){re.escape(_STAGING_MARK)}(.+)")
#: The owner lock this process holds in each runs folder: (pid, the folder of locks) -> its descriptor.
_HELD: dict[tuple[int, str], int] = {}
_COUNTER = itertools.count()


class RunStore:
    """The runs folder and its index."""

    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute(_SCHEMA)
            present = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
            for name, declaration in _ADDED_COLUMNS.items():
                if name not in present:
                    db.execute(f"ALTER TABLE runs ADD COLUMN {name} {declaration}")
            if "percentile" not in present:  # once, when the columns arrive: the runs already indexed are placed
                _backfill_placement(db)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.root / INDEX_NAME, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def run_dir(self, group: str, competition_id: str, seed: int) -> Path:
        return self.root / group / competition_id / str(seed)

    def is_done(self, group: str, competition_id: str, seed: int, agent: str) -> bool:
        with self._connect() as db:
            row = db.execute(
                "SELECT 1 FROM runs WHERE run_group=? AND competition_id=? AND seed=? AND agent=?",
                (group, competition_id, seed, agent),
            ).fetchone()
        return row is not None

    # -- a run's folder: staged, then landed --------------------------------------------------------

    def stage(self, group: str, competition_id: str, seed: int) -> Path:
        """A new, empty staging folder for the run, owned by this process until :meth:`land` renames it."""
        self._hold_owner_lock()
        final = self.run_dir(group, competition_id, seed)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = self._staging_name(final)
        staging.mkdir()
        return staging

    def land(self, staging: Path, record: RunRecord | Mapping[str, Any]) -> Path:
        """Finish a staged run: its record, durably, then the folder under its final name, then its index row.

        A folder already at the final name (a run being redone, or a folder a crash left without a
        record) is replaced: its row goes first, then the folder is moved aside and removed.
        """
        record = _typed(record)
        final = self.run_dir(record.run_group, record.competition_id, record.seed)
        if staging.parent != final.parent:
            raise ValueError(f"{staging} is not a staging folder of {final}")
        write_durably(staging / "record.json", (json.dumps(record.to_dict(), indent=2) + "\n").encode())
        fsync_dir(staging)
        aside = None
        if os.path.lexists(final):
            with self._connect() as db:
                db.execute(*_delete_run(record.run_group, record.competition_id, record.seed))
            if exchange_folders(staging, final):  # one step: the old run now lies under the staging name
                aside = staging
            else:
                aside = self._staging_name(final)
                os.replace(final, aside)
                os.replace(staging, final)
        else:
            os.replace(staging, final)
        fsync_dir(final.parent)
        self._index(record, final / "record.json")
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        return final

    def add(self, record: RunRecord | Mapping[str, Any], record_path: Path) -> None:
        """Index a finished run (idempotent: a second add of the same run changes nothing)."""
        record = _typed(record)
        with self._connect() as db:
            db.execute(f"INSERT OR IGNORE {_INSERT}", _row(record, record_path))

    def _index(self, record: RunRecord, record_path: Path) -> None:
        """The run's one row, replacing any row of the same (group, competition, seed)."""
        with self._connect() as db:
            db.execute(*_delete_run(record.run_group, record.competition_id, record.seed))
            db.execute(f"INSERT {_INSERT}", _row(record, record_path))

    def discard_own_staging(self, group: str) -> None:
        """Remove this process's staging folders in ``group`` (a batch quitting at once)."""
        for staging in (self.root / group).glob(f"*/.*{_STAGING_MARK}{owner.own_token()}-*"):
            shutil.rmtree(staging, ignore_errors=True)

    def _staging_name(self, final: Path) -> Path:
        return final.with_name(f".{final.name}{_STAGING_MARK}{owner.own_token()}-{next(_COUNTER)}")

    # -- ownership of staging folders --------------------------------------------------------------

    def _lock_path(self, token: str) -> Path:
        return self.root / _OWNERS / f"{token}.lock"

    def _hold_owner_lock(self) -> None:
        """Take (once per process and runs folder) the lock that says this process's staging folders are live."""
        path = self._lock_path(owner.own_token())
        key = (os.getpid(), str(path.parent.resolve()))
        if key in _HELD:
            return
        path.parent.mkdir(exist_ok=True)
        for _ in range(10):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
            with contextlib.suppress(OSError):  # the host, for podiums elsewhere that share the folder
                os.ftruncate(fd, 0)
                os.pwrite(fd, f"host={socket.gethostname()}\n".encode(), 0)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # a filesystem without locks: liveness falls back to /proc (podium.owner.alive)
                os.close(fd)
                return
            with contextlib.suppress(FileNotFoundError):
                if os.fstat(fd).st_ino == os.stat(path).st_ino:  # not unlinked by a sweep between open and lock
                    _HELD[key] = fd
                    return
            os.close(fd)

    def _owner_alive(self, token: str) -> bool:
        """Whether the podium process named by ``token`` still runs: it holds its lock (any host sharing the
        folder), or, where it has no lock file, it is alive on this host. On a filesystem without locks, a
        lock file that names another host keeps its runs: this host cannot see that host's processes."""
        if token == owner.own_token():
            return True
        try:
            fd = os.open(self._lock_path(token), os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return owner.alive(token)
        except OSError:
            return True  # cannot tell: keep it
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:  # held, or a filesystem without locks: then only this host's pids can tell
            return error.errno in (errno.EWOULDBLOCK, errno.EAGAIN) or owner.alive(token) or _elsewhere(fd)
        else:
            return False
        finally:
            os.close(fd)  # closing drops the lock we may have taken

    def sweep(self) -> list[Path]:
        """Remove the staging folders (in every group) of podium processes that no longer run, and their locks.

        Staging folders named by podiums before owner tokens (``.<seed>.tmp-<pid>-<ns>``) go when that pid
        is gone, as they did then.
        """
        verdicts: dict[str, bool] = {}
        removed = []
        for staging in sorted(self.root.glob(f"*/*/.*{_STAGING_MARK}*")):
            if not staging.is_dir() or staging.is_symlink():
                continue
            token = owner.token_in(staging.name.partition(_STAGING_MARK)[2])
            if token is None:
                dead = _legacy_owner_dead(staging.name)
            else:
                if token not in verdicts:
                    verdicts[token] = self._owner_alive(token)
                dead = not verdicts[token]
            if dead:
                shutil.rmtree(staging, ignore_errors=True)
                removed.append(staging)
        with contextlib.suppress(OSError):
            for lock in (self.root / _OWNERS).glob("*.lock"):
                token = lock.name.removesuffix(".lock")
                if not (verdicts[token] if token in verdicts else self._owner_alive(token)):
                    lock.unlink(missing_ok=True)
        return removed

    # -- the index ---------------------------------------------------------------------------------

    def reconcile(self, group: str | None = None) -> int:
        """Make the index of ``group`` (default: every group) list exactly its finished runs; returns how many
        rows were added.

        A row whose run folder has no record (the folder is gone) is dropped, and its run will be run
        again; a final folder with a readable record and no row is indexed. Staging folders are never
        read. Records of indexed runs are not opened, so this stays cheap however many runs are stored.
        """
        groups = [group] if group is not None else sorted(p.name for p in self.root.iterdir() if _is_group(p))
        added = 0
        for name in groups:
            rows = self.rows(name)
            indexed = set()
            for row in rows:
                final = self.run_dir(name, row["competition_id"], row["seed"]) / "record.json"
                if final.is_file() and Path(row["record_path"]).parent.name == str(row["seed"]):
                    indexed.add((row["competition_id"], str(row["seed"])))
                    continue
                with self._connect() as db:
                    db.execute(*_delete_run(name, row["competition_id"], row["seed"]))
                if not final.is_file():
                    print(
                        f"{name}/{row['competition_id']}/{row['seed']}: indexed, but its folder holds no record; "
                        "dropped from the index (it will be run again)",
                        file=sys.stderr,
                    )
            for path in sorted((self.root / name).glob("*/*/record.json")):
                competition_id, seed = path.parent.parent.name, path.parent.name
                if not seed.isdigit() or competition_id.startswith(".") or (competition_id, seed) in indexed:
                    continue
                record = _read_record(path, name, competition_id, int(seed))
                if record is None:
                    continue
                self._index(record, path)
                added += 1
        return added

    def rows(self, group: str | None = None) -> list[dict[str, Any]]:
        with self._connect() as db:
            db.row_factory = sqlite3.Row
            order = " ORDER BY competition_id, seed, agent"
            if group is None:
                cursor = db.execute("SELECT * FROM runs" + order)
            else:
                cursor = db.execute("SELECT * FROM runs WHERE run_group=?" + order, (group,))
            rows = [dict(row) for row in cursor.fetchall()]
        for row in rows:
            row["other_versions"] = json.loads(row.get("other_versions") or "[]")
        return rows


def _typed(record: RunRecord | Mapping[str, Any]) -> RunRecord:
    return record if isinstance(record, RunRecord) else RunRecord.from_dict(record)


def _row(record: RunRecord, record_path: Path) -> tuple[Any, ...]:
    grade = record.grade
    flags = [
        int(bool(grade and getattr(grade, flag)))
        for flag in ("valid_submission", "submission_exists", "above_median", *MEDAL_FLAGS, "any_medal")
    ]
    if record.finished_at is None:
        raise ValueError("a run in the index has finished")
    return (
        record.run_group, record.competition_id, record.competition_version, record.seed, record.agent,
        record.status, grade.score if grade else None, *flags,
        str(record_path), record.finished_at, json.dumps(grade.other_versions if grade else []),
        grade.percentile if grade else None, grade.rank if grade else None,
    )  # fmt: skip


def _delete_run(group: str, competition_id: str, seed: int) -> tuple[str, tuple[Any, ...]]:
    return "DELETE FROM runs WHERE run_group=? AND competition_id=? AND seed=?", (group, competition_id, seed)


def _backfill_placement(db: sqlite3.Connection) -> None:
    """Fill percentile and rank of rows indexed before those columns from their records (read once)."""
    rows = db.execute("SELECT rowid, record_path FROM runs WHERE status IS NOT NULL").fetchall()
    for rowid, record_path in rows:
        try:
            grade = read_json(record_path, max_bytes=RECORD_MAX_BYTES, what="the record").get("grade") or {}
        except (OSError, ValueError, AttributeError):
            continue  # a missing or broken record stays unplaced (reconcile deals with it)
        if isinstance(grade, dict):
            db.execute(
                "UPDATE runs SET percentile = ?, rank = ? WHERE rowid = ?",
                (grade.get("percentile"), grade.get("rank"), rowid),
            )


def _read_record(path: Path, group: str, competition_id: str, seed: int) -> RunRecord | None:
    """The record of a final run folder, or None (with a line saying why) when it cannot stand for that run."""
    try:
        record = RunRecord.from_dict(read_json(path, max_bytes=RECORD_MAX_BYTES, what="the record"))
        where = (record.run_group, record.competition_id, record.seed)
        _row(record, path)  # every field the index needs is there
    except (OSError, ValueError, KeyError, TypeError) as error:
        problem = f"unreadable record ({type(error).__name__}: {error})"
    else:
        if where == (group, competition_id, seed):
            return record
        problem = f"its record is of another run {where}"
    print(f"{path.parent}: not indexed, {problem}; the run will be run again", file=sys.stderr)
    return None


def _is_group(path: Path) -> bool:
    return path.is_dir() and not path.is_symlink() and not path.name.startswith(".")


def _elsewhere(fd: int) -> bool:
    """Whether an owner lock names another host than this one (whose processes this host cannot see)."""
    try:
        text = os.pread(fd, 512, 0).decode("utf-8", errors="replace")
    except OSError:
        return False
    host = next((line[5:].strip() for line in text.splitlines() if line.startswith("host=")), "")
    return bool(host) and host != socket.gethostname()


def _legacy_owner_dead(name: str) -> bool:
    pid = name.partition(_STAGING_MARK)[2].split("-")[0]
    if not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False
    return False

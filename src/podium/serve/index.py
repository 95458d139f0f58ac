"""The runs folder as the dashboard reads it: the SQLite index (opened read-only), group folders and the
staging folders of runs in progress. Nothing here writes, creates or locks anything in the folder.

Names from a URL never become paths by themselves: a group, competition or seed is looked up among the
folder's own entries (and the index), and only an entry found there is opened.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from podium import owner
from podium.records import MEDAL_FLAGS, MEDALS, medal_of
from podium.store import INDEX_NAME, STAGING_NAME
from podium.untrusted import loads

__all__ = ["INDEX_NAME", "LiveRun", "RunsIndex", "safe_name"]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+\-]{0,199}")
#: The columns a page shows, and what they read as in an index written before they existed.
_OPTIONAL = {"percentile": "NULL", "rank": "NULL"}


def safe_name(text: str) -> bool:
    """Whether ``text`` can name a group or competition folder: no separators, no dots first, nothing odd."""
    return bool(_NAME.fullmatch(text)) and ".." not in text


@dataclass(frozen=True)
class LiveRun:
    """A run in progress: its staging folder, and whether the podium that owns it still runs."""

    group: str
    competition_id: str
    seed: int
    folder: Path
    started: float  # when podium wrote its instructions (epoch seconds)
    owner_alive: bool
    node: str | None = None  # the cluster node running it (``node.txt``, written by the driver), or None

    @property
    def elapsed_s(self) -> float:
        return max(0.0, time.time() - self.started)


class RunsIndex:
    """Read-only queries over a runs folder and its index (``RUNS/podium.db``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def db_path(self) -> Path:
        return self.root / INDEX_NAME

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection | None]:
        """The index opened read-only (``mode=ro``: SQLite never creates or writes it), or None when absent."""
        if not self.db_path.is_file():
            yield None
            return
        db = sqlite3.connect(f"file:{quote(str(self.db_path))}?mode=ro", uri=True, timeout=5)
        db.row_factory = sqlite3.Row
        try:
            yield db
        finally:
            db.close()

    @staticmethod
    def _columns(db: sqlite3.Connection) -> str:
        """What to select from ``runs`` ("" when the index has no table yet): every column, the optional
        ones read as NULL where an older podium's index lacks them."""
        present = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
        if not present:
            return ""
        missing = [f"{null} AS {name}" for name, null in _OPTIONAL.items() if name not in present]
        return ", ".join(["*", *missing])

    # -- groups --------------------------------------------------------------------------------------

    def group_names(self) -> list[str]:
        """Every run group: the folders with a ``group.json`` or indexed runs."""
        names = {p.name for p in _entries(self.root) if p.is_dir() and (p / "group.json").is_file()}
        with self._connect() as db:
            if db is not None and self._columns(db):
                names |= {row[0] for row in db.execute("SELECT DISTINCT run_group FROM runs")}
        return sorted(n for n in names if safe_name(n))

    def has_group(self, group: str) -> bool:
        return safe_name(group) and group in self.group_names()

    def summaries(self) -> dict[str, dict[str, Any]]:
        """Per group: runs, valid submissions, medals, mean percentile, agents and the last finish."""
        out = {name: _empty_summary() for name in self.group_names()}
        with self._connect() as db:
            if db is None or not (columns := self._columns(db)):
                return out
            medals = ", ".join(f"SUM({flag}) AS {medal}" for medal, flag in zip(MEDALS, MEDAL_FLAGS, strict=True))
            query = (
                f"SELECT run_group, COUNT(*) AS runs, SUM(valid_submission) AS valid, SUM(any_medal) AS medals, "
                f"SUM(above_median) AS above_median, {medals}, SUM(status != 'finished') AS harness_errors, "
                f"AVG(percentile) AS mean_percentile, GROUP_CONCAT(DISTINCT agent) AS agents, MAX(finished_at) AS last "
                f"FROM (SELECT {columns} FROM runs) GROUP BY run_group"
            )
            for row in db.execute(query):
                if row["run_group"] in out:
                    out[row["run_group"]] = dict(row)
        return out

    def settings(self, group: str) -> dict[str, Any]:
        """The group's ``group.json`` (its settings), or {} when it has none or it cannot be read."""
        folder = self._group_dir(group)
        if folder is None:
            return {}
        with contextlib.suppress(OSError, ValueError):
            data = loads((folder / "group.json").read_bytes()[:1_000_000], max_bytes=1_000_000)
            return data if isinstance(data, dict) else {}
        return {}

    def runs(self, group: str, offset: int = 0, limit: int = 100) -> list[dict[str, Any]]:
        """One page of the group's finished runs, in competition and seed order, from the index only."""
        with self._connect() as db:
            if db is None or not (columns := self._columns(db)):
                return []
            cursor = db.execute(
                f"SELECT {columns} FROM runs WHERE run_group=? ORDER BY competition_id, seed, agent LIMIT ? OFFSET ?",
                (group, limit, offset),
            )
            return [_with_medal(dict(row)) for row in cursor]

    def run(self, group: str, competition_id: str, seed: int) -> dict[str, Any] | None:
        """The index row of one finished run, or None."""
        with self._connect() as db:
            if db is None or not (columns := self._columns(db)):
                return None
            row = db.execute(
                f"SELECT {columns} FROM runs WHERE run_group=? AND competition_id=? AND seed=?",
                (group, competition_id, seed),
            ).fetchone()
        return None if row is None else _with_medal(dict(row))

    # -- folders -------------------------------------------------------------------------------------

    def _group_dir(self, group: str) -> Path | None:
        """The group's folder, found among the runs folder's entries (never built from the name alone)."""
        if not safe_name(group):
            return None
        return next((p for p in _entries(self.root) if p.name == group and p.is_dir() and not p.is_symlink()), None)

    def _competition_dir(self, group: str, competition_id: str) -> Path | None:
        folder = self._group_dir(group)
        if folder is None or not safe_name(competition_id):
            return None
        return next(
            (p for p in _entries(folder) if p.name == competition_id and p.is_dir() and not p.is_symlink()), None
        )

    def run_folder(self, group: str, competition_id: str, seed: str) -> tuple[Path, bool] | None:
        """(folder, in progress) of a run named by a URL: its final folder, else its newest staging folder."""
        if not seed.isdigit() or len(seed) > 12:
            return None
        folder = self._competition_dir(group, competition_id)
        if folder is None:
            return None
        final = next(
            (p for p in _entries(folder) if p.name == str(int(seed)) and p.is_dir() and not p.is_symlink()), None
        )
        if final is not None:
            return final, False
        live = [r for r in self.live(group) if r.competition_id == competition_id and r.seed == int(seed)]
        return (max(live, key=lambda r: r.started).folder, True) if live else None

    def live(self, group: str | None = None) -> list[LiveRun]:
        """The runs in progress (staging folders), of one group or all, newest first."""
        groups = [group] if group is not None else self.group_names()
        found = []
        for name in groups:
            group_dir = self._group_dir(name)
            for competition in _entries(group_dir) if group_dir is not None else []:
                if not competition.is_dir() or competition.is_symlink() or not safe_name(competition.name):
                    continue
                for entry in _entries(competition):
                    match = STAGING_NAME.fullmatch(entry.name)
                    if match is None or not entry.is_dir() or entry.is_symlink():
                        continue
                    token = owner.token_in(match.group(2))
                    found.append(
                        LiveRun(name, competition.name, int(match.group(1)), entry, _started(entry),
                                token is not None and owner.alive(token), _node(entry))
                    )  # fmt: skip
        return sorted(found, key=lambda r: -r.started)


def _entries(folder: Path) -> list[Path]:
    try:
        with os.scandir(folder) as it:
            return [Path(e.path) for e in it]
    except OSError:
        return []


def _node(folder: Path) -> str | None:
    """The node a cluster run is on (or ``queued``), from the first line of its ``node.txt``; None for a local run."""
    from podium.serve.runfiles import tail

    text = tail(folder, folder / "node.txt", limit=256).text.strip()
    return text.splitlines()[-1][:120] if text else None


def _started(folder: Path) -> float:
    """When the run started: its instructions are written first, once (else the folder's own time)."""
    for path in (folder / "home" / "instructions.md", folder):
        with contextlib.suppress(OSError):
            return os.stat(path, follow_symlinks=False).st_mtime
    return time.time()


def _empty_summary() -> dict[str, Any]:
    return {"runs": 0, "valid": 0, "medals": 0, "above_median": 0, "harness_errors": 0, "agents": None, "last": None}


def _with_medal(row: dict[str, Any]) -> dict[str, Any]:
    row["medal"] = medal_of(row)
    return row

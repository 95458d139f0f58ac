"""Where runs live: one folder per run, indexed in an embedded SQLite database.

    RUNS/<group>/<competition>/<seed>/record.json   the run's record (written last, atomically)
    RUNS/podium.db                                  the index: one row per finished run

A run folder appears by renaming a finished staging folder, and its index row is written after;
``reconcile`` indexes any folder whose row is missing (a crash between the two), so killing podium
at any moment loses no finished run, and the UNIQUE key counts none twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

__all__ = ["RunStore"]

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
    gold_medal INTEGER NOT NULL,
    silver_medal INTEGER NOT NULL,
    bronze_medal INTEGER NOT NULL,
    any_medal INTEGER NOT NULL,
    record_path TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    other_versions TEXT NOT NULL DEFAULT '[]',
    UNIQUE (run_group, competition_id, seed, agent)
)
"""
#: Columns added after the first schema, with their declarations, for indexes written by older podiums.
_ADDED_COLUMNS = {"other_versions": "TEXT NOT NULL DEFAULT '[]'"}


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

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.root / "podium.db", timeout=30)
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

    def remove(self, group: str, competition_id: str, seed: int) -> None:
        """Drop a run's row (a run being redone); ``reconcile`` indexes whichever folder is then in place."""
        with self._connect() as db:
            db.execute(
                "DELETE FROM runs WHERE run_group=? AND competition_id=? AND seed=?", (group, competition_id, seed)
            )

    def add(self, record: dict[str, Any], record_path: Path) -> None:
        """Index a finished run (idempotent: a second add of the same run changes nothing)."""
        grade = record.get("grade") or {}
        values = (
            record["run_group"], record["competition_id"], record["competition_version"], record["seed"], record["agent"],
            record["status"], grade.get("score"), int(bool(grade.get("valid_submission"))),
            int(bool(grade.get("submission_exists"))), int(bool(grade.get("above_median"))), int(bool(grade.get("gold_medal"))),
            int(bool(grade.get("silver_medal"))), int(bool(grade.get("bronze_medal"))), int(bool(grade.get("any_medal"))),
            str(record_path), record["finished_at"], json.dumps(grade.get("other_versions") or []),
        )  # fmt: skip
        with self._connect() as db:
            db.execute(f"INSERT OR IGNORE INTO runs VALUES ({','.join('?' * len(values))})", values)

    def reconcile(self, group: str) -> int:
        """Index every finished run folder of ``group`` that has no row yet; returns how many.

        Only folders without a row are read, so this stays cheap however many runs are stored.
        """
        indexed = {(r["competition_id"], str(r["seed"])) for r in self.rows(group)}
        added = 0
        for path in sorted((self.root / group).glob("*/*/record.json")):
            if (path.parent.parent.name, path.parent.name) in indexed or path.parent.name.startswith("."):
                continue  # indexed, or a staging folder (".<seed>.tmp-..."): never a finished run
            record = json.loads(path.read_text(encoding="utf-8"))
            self.add(record, path)
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

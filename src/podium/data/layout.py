"""Where a competition's files live under the data dir.

    DIR/ID/raw/                    the Kaggle files (extracted zip), or --from PATH used in place
    DIR/ID/prepared/public/        what the agent sees
    DIR/ID/prepared/private/       the answers
    DIR/ID/prepared/podium.json    written last inside the staging folder: version and checksums

``prepared/`` appears only by an atomic rename of a finished staging folder, so a folder that
exists is complete; staging folders (``.prepared.tmp-*``) of an interrupted run are removed by
the next one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["MARKER", "CompetitionPaths"]

MARKER = "podium.json"


@dataclass(frozen=True)
class CompetitionPaths:
    data_dir: Path
    competition_id: str

    @property
    def root(self) -> Path:
        return self.data_dir / self.competition_id

    @property
    def raw(self) -> Path:
        return self.root / "raw"

    @property
    def zip(self) -> Path:
        return self.root / f"{self.competition_id}.zip"

    @property
    def prepared(self) -> Path:
        return self.root / "prepared"

    @property
    def public(self) -> Path:
        return self.prepared / "public"

    @property
    def private(self) -> Path:
        return self.prepared / "private"

    @property
    def marker(self) -> Path:
        return self.prepared / MARKER

    def staging(self, tag: str) -> Path:
        return self.root / f".prepared.tmp-{tag}"

    def stale_staging(self) -> list[Path]:
        return sorted(self.root.glob(".prepared.tmp-*")) + sorted(self.root.glob(".raw.tmp-*"))

    def record(self) -> dict[str, Any] | None:
        """The marker of a finished prepare, or None if there is none."""
        if not self.marker.is_file():
            return None
        data: dict[str, Any] = json.loads(self.marker.read_text(encoding="utf-8"))
        return data

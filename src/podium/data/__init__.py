"""Data preparation: Kaggle download, the benchmark's splits, checksums and leak checks."""

from __future__ import annotations

from podium.data.prepare import PrepareOutcome, prepare_competition, prepare_many
from podium.paths import CompetitionPaths

__all__ = ["CompetitionPaths", "PrepareOutcome", "prepare_competition", "prepare_many"]

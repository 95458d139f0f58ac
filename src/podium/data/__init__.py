"""Data preparation: Kaggle download, the benchmark's splits, checksums and leak checks."""

from __future__ import annotations

from podium.data.kernels import download_kernels, import_kernels, kernel_refs
from podium.data.mlebench import Taken, take_from_mlebench, take_many
from podium.data.prepare import PrepareOutcome, prepare_competition, prepare_many
from podium.paths import CompetitionPaths

__all__ = [
    "CompetitionPaths",
    "PrepareOutcome",
    "Taken",
    "download_kernels",
    "import_kernels",
    "kernel_refs",
    "prepare_competition",
    "prepare_many",
    "take_from_mlebench",
    "take_many",
]

"""`podium verify`: prepared data against the checksums recorded when it was prepared.

The record in ``prepared/podium.json`` is written by prepare; where a competition version also
ships reference checksums (``checksums.json`` beside its declaration, from a prepare of the real
Kaggle data), those are checked too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from podium.competition import Competition
from podium.data.checksums import compare, digest_tree, reference_checksums, without_description
from podium.paths import CompetitionPaths

__all__ = ["VerifyResult", "verify"]


@dataclass
class VerifyResult:
    competition_id: str
    status: Literal["ok", "mismatch", "not prepared"]
    problems: list[str] = field(default_factory=list)


def verify(competition: Competition, data_dir: Path) -> VerifyResult:
    paths = CompetitionPaths(data_dir, competition.id)
    record = paths.record()
    if record is None:
        return VerifyResult(competition.id, "not prepared", [f"no prepared data under {paths.root}"])
    problems = []
    if not competition.shares_data_with(record.get("version")):
        problems.append(
            f"prepared with the data of version {record.get('version')}; {competition.ref} needs that of "
            f"version {competition.data_version} (prepare again with --force)"
        )
    actual = digest_tree(paths.prepared)
    problems += compare(record.get("checksums", {}), actual)
    reference = reference_checksums(competition)
    if reference:
        problems += [f"reference: {p}" for p in compare(reference, without_description(actual))]
    return VerifyResult(competition.id, "mismatch" if problems else "ok", problems)

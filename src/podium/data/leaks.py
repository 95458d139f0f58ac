"""Automated scan that the public folder reveals nothing about the answers.

A public CSV leaks when it holds test ids together with an answer column (a training file that
kept test rows, a public test file that kept its labels, a leftover raw file), or when it is a
byte-for-byte copy of a private file. The sample submission is the one public file allowed to
hold test ids and answer columns: its values are the declared defaults.

An id column declared ``row_number: true`` numbers the rows of each file 1..N (as the published
split does for nomad2018 and ventilator-pressure-prediction): the same number in a training file
and in the test set names two different rows, so sharing it is not a leak, provided both files
really hold 1..N in order.
"""

from __future__ import annotations

from pathlib import Path

from podium.competition import Competition
from podium.data.checksums import file_sha256
from podium.grading.table import read_csv

__all__ = ["scan_for_leaks"]


def _csv_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.csv") if p.is_file())


def _row_numbers(values: list[str]) -> bool:
    """Whether ``values`` are exactly 1, 2, ..., N in order."""
    return values == [str(i) for i in range(1, len(values) + 1)]


def _only_row_numbers(competition: Competition, id_column: str, ids: list[str], test_ids: set[str]) -> bool:
    """A declared row-number id column whose public file and test set both number rows 1..N."""
    if not competition.column(id_column).options.get("row_number") or not _row_numbers(ids):
        return False
    return test_ids == {str(i) for i in range(1, len(test_ids) + 1)}


def scan_for_leaks(competition: Competition, public: Path, private: Path, test_ids: set[str]) -> list[str]:
    """Problems found (empty when public/ is clean)."""
    problems: list[str] = []
    answer_targets = {a for _, a in competition.targets}
    sample = (public.parent / competition.sample_submission).resolve()
    private_hashes = {file_sha256(p): p.name for p in private.rglob("*") if p.is_file()}
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        copy_of = private_hashes.get(file_sha256(path))
        if copy_of:
            problems.append(f"{path.relative_to(public)} is a copy of the private file {copy_of}")
    for path in _csv_files(public):
        if path.resolve() == sample:
            continue
        frame = read_csv(path, what="public file")
        labels = sorted(answer_targets & set(frame.names))
        for id_column in competition.id_columns:
            if id_column in frame.names and labels:
                if _only_row_numbers(competition, id_column, frame[id_column].tolist(), test_ids):
                    continue
                overlap = test_ids & set(frame[id_column].tolist())
                if overlap:
                    problems.append(
                        f"{path.relative_to(public)} holds {len(overlap)} test id(s) (e.g. {sorted(overlap)[:3]}) "
                        f"together with answer column(s) {labels}"
                    )
    return problems

"""Automated scan that the public folder reveals nothing about the answers.

A public CSV leaks when it holds test ids together with an answer column (a training file that
kept test rows, a public test file that kept its labels, a leftover raw file); any public file
leaks when it is a byte-for-byte copy of a private file, and so does a member of a public zip (found
by its size and CRC in the zip's directory, confirmed by its sha256, so no member is read unless it
has a private file's size and checksum). The sample submission is the one public file allowed to
hold test ids and answer columns: its values are the declared defaults.

Only what is cheap and certain is here, since every prepare runs it; ``podium check`` adds the
statistical scan (a column that predicts the answers, the row order, files named after test rows:
``podium.author.leakscan``).

An id column declared ``row_number: true`` numbers the rows of each file 1..N (as the published
split does for nomad2018 and ventilator-pressure-prediction): the same number in a training file
and in the test set names two different rows, so sharing it is not a leak, provided both files
really hold 1..N in order.
"""

from __future__ import annotations

import hashlib
import zipfile
import zlib
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


def _crc32(path: Path) -> int:
    crc = 0
    with path.open("rb") as handle:
        while block := handle.read(1 << 20):
            crc = zlib.crc32(block, crc)
    return crc


def _zip_copies(archive: Path, private_files: list[Path], private_hashes: dict[str, str]) -> list[str]:
    """The members of a public zip that are byte copies of a private file."""
    by_size: dict[int, list[Path]] = {}
    for path in private_files:
        by_size.setdefault(path.stat().st_size, []).append(path)
    found = []
    try:
        with zipfile.ZipFile(archive) as handle:
            for info in handle.infolist():
                same = by_size.get(info.file_size, [])
                if not same or info.CRC not in {_crc32(p) for p in same}:
                    continue
                digest = hashlib.sha256()
                with handle.open(info) as member:
                    while block := member.read(1 << 20):
                        digest.update(block)
                copy_of = private_hashes.get(digest.hexdigest())
                if copy_of:
                    found.append(f"{archive.name}:{info.filename} is a copy of the private file {copy_of}")
    except (OSError, zipfile.BadZipFile):
        return []  # not a zip after all: the copy check of the file itself covers it
    return found


def scan_for_leaks(competition: Competition, public: Path, private: Path, test_ids: set[str]) -> list[str]:
    """Problems found (empty when public/ is clean)."""
    problems: list[str] = []
    answer_targets = {a for _, a in competition.targets}
    sample = (public.parent / competition.sample_submission).resolve()
    # a sample submission kept in private/ (billion-word-imputation, text-normalization) is no answer: its copies
    # in public/ are what the published benchmark gives the agent
    private_files = [p for p in private.rglob("*") if p.is_file() and p.resolve() != sample]
    private_hashes = {file_sha256(p): p.name for p in private_files}
    for path in sorted(p for p in public.rglob("*") if p.is_file()):
        copy_of = private_hashes.get(file_sha256(path))
        if copy_of:
            problems.append(f"{path.relative_to(public)} is a copy of the private file {copy_of}")
        elif path.suffix.lower() == ".zip":
            problems += [
                f"{path.parent.relative_to(public) / c}" for c in _zip_copies(path, private_files, private_hashes)
            ]
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

"""``podium check``'s leak scan: does anything public tell the private answers?

It runs on a prepared folder after prepare's own scan (:func:`podium.data.leaks.scan_for_leaks`: test ids beside
an answer column in a public CSV, a public copy of a private file), and measures, with the bounds
:mod:`podium.author.leakstats` states, whether the answers can be had from:

- a public table (CSV, TSV, JSON records or lines, Parquet; archive members too) that holds test ids beside an
  answer column, or a column that *is* the answer under another name, or one that predicts it almost perfectly;
- the id itself (as a number, or one of its parts: ``cat.123``);
- the order of the rows (the sample submission's, each public table's);
- the public files named after each test row (:mod:`podium.author.leakper`): their sub-folder, name, size, time,
  content, polygons;
- the answers' own numbers written in a public file (smartphone-decimeter's span_log.nmea tracks): a row is
  found when each of its answer values with at least 7 significant digits, unique among the answers, is in one
  group of files to 8 significant digits;
- whole test rows that are rows of a public training table (every shared column but the ids), with the training
  copy's answer.

Everything is read bounded (:class:`podium.author.leakfiles.Caps`; at most :data:`MAX_TABLES` tables, their first
:data:`TABLE_ROWS` rows; the measures over at most :data:`podium.author.leakanswers.MAX_ROWS` test rows), and the
bounds are part of the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from podium.author.leakanswers import MAX_ROWS, Answers, canon_id, canonical, read_answers
from podium.author.leakfiles import Caps, Entry, Inventory, Table, inventory, table_of
from podium.author.leakper import content_findings, files_by_id, name_findings, polygon_findings
from podium.author.leakstats import (
    BOUND,
    CHANCE,
    MIN_ROWS,
    canon,
    chance_of_matches,
    equal_to_answer,
    ordered_like_answer,
    tells_answer,
)
from podium.competition import Competition
from podium.data.leaks import scan_for_leaks
from podium.data.prepare import check_invariants
from podium.grading.table import read_csv
from podium.untrusted import printable

__all__ = ["MAX_TABLES", "TABLE_ROWS", "LeakScan", "scan_prepared"]

#: Public tables read, at most, and the rows read of each.
MAX_TABLES, TABLE_ROWS = 40, 100_000
#: Columns of one table measured, at most.
_MAX_COLUMNS = 100
_DECIMAL = re.compile(rb"\d+\.\d+(?:[eE][-+]?\d+)?")
_NUMBERS_PER_FILE, _NUMBERS = 1_000_000, 5_000_000
_COVERED = 0.5  # the share of rows whose answer numbers a group of files must hold
_PAIRED = 5  # test-side and training tables compared for duplicated rows, at most (of each)


@dataclass
class LeakScan:
    """What the scan found (one line each, with the evidence) and what it measured, within which bounds."""

    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Joined:
    """A public table joined to the test rows on the column that holds their ids."""

    table: Table
    key_column: str | None
    row_of: dict[str, int]  # test key -> the table's first row of it

    @property
    def hits(self) -> int:
        return len(self.row_of)


def _keyed(values: list[str], keys: frozenset[str]) -> dict[str, int]:
    row_of: dict[str, int] = {}
    for i, value in enumerate(values):
        key = canon_id(value)
        if key in keys and key not in row_of:
            row_of[key] = i
    return row_of


def _join(table: Table, answers: Answers) -> _Joined:
    keys, ids = answers.key_set, answers.competition.id_columns
    if not answers.single:
        if not set(ids) <= set(table.columns):
            return _Joined(table, None, {})
        tuples = ["\x1f".join(canon_id(v) for v in row) for row in zip(*(table.columns[c] for c in ids), strict=True)]
        return _Joined(table, ids[0], _keyed(tuples, keys))
    # the id column by its name; under another name only for ids that are not numbers (a column of counts holds
    # small numbers by chance, tabular-playground's Aspect the ids 11, 23 and 34)
    named = [c for c in ids if c in table.columns]
    numeric = all(k.lstrip("-").isdigit() for k in list(keys)[:1000])
    others = [] if named or numeric else list(table.columns)[:_MAX_COLUMNS]
    best = _Joined(table, None, {})
    for column in named + [c for c in others if any(canon_id(v) in keys for v in table.columns[c][:200])]:
        joined = _Joined(table, column, _keyed(table.columns[column], keys))
        if joined.hits > best.hits:
            best = joined
    return best


def _answer_names(competition: Competition) -> set[str]:
    return {a for _, a in competition.targets} | {s for s, _ in competition.targets}


def _row_numbers(competition: Competition) -> bool:
    return any(competition.column(c).options.get("row_number") for c in competition.id_columns)


def _sample_values(sample: Path, answers: Answers) -> dict[str, dict[str, str]]:
    """The sample submission's cells by column and key (canonical), to tell a copy of it from the answers."""
    frame = read_csv(sample, what="sample submission")
    ids = answers.competition.id_columns
    if not set(ids) <= set(frame.names):
        return {}
    keys = ["\x1f".join(canon_id(str(v)) for v in row) for row in zip(*(frame[c] for c in ids), strict=True)]
    return {c: dict(zip(keys, (canon(str(v)) for v in frame[c]), strict=True)) for c in frame.names if c not in ids}


def _is_sample(joined: _Joined, column: str, sample: dict[str, dict[str, str]]) -> bool:
    """Whether ``column`` holds the sample submission's values on every test row it has (a copy of the sample in
    another file: text-normalization's en_sample_submission_2.csv.zip)."""
    given = sample.get(column)
    cells = joined.table.columns[column]
    return given is not None and all(given.get(k) == canon(cells[i]) for k, i in joined.row_of.items())


def _train_with_test_ids(
    joined: list[_Joined], answers: Answers, reported: list[str], sample: dict[str, dict[str, str]]
) -> list[str]:
    """Tables that prepare's scan does not read (JSON, archive members, another id name) with test ids beside an
    answer column (that is not the sample submission's copy)."""
    if _row_numbers(answers.competition):
        return []
    findings = []
    for j in joined:
        named = _answer_names(answers.competition) & set(j.table.columns)
        labels = sorted(c for c in named if not _is_sample(j, c, sample))
        if j.hits and labels and not any(line.startswith(j.table.name + " ") for line in reported):
            example = sorted(j.row_of)[:3]
            findings.append(
                f"{printable(j.table.name, 160)} holds {j.hits} test id(s) (e.g. {printable(str(example), 120)}) "
                f"beside the answer column(s) {printable(str(labels), 120)}"
            )
    return findings


def _column_findings(joined: _Joined, answers: Answers) -> list[str]:
    findings = []
    name = printable(joined.table.name, 160)
    for column in [c for c in joined.table.columns if c != joined.key_column][:_MAX_COLUMNS]:
        cells = joined.table.columns[column]
        feature = canonical(answers.aligned({k: cells[i] for k, i in joined.row_of.items()}))
        for target in answers.targets:
            equal = equal_to_answer(feature, target)
            said = None if equal else tells_answer(feature, target)
            if equal or said:
                verb = equal or f"tells the answer {target.name!r}: {said}"
                findings.append(f"{name} column {printable(column, 80)!r} {verb}")
                break
    return findings


def _id_findings(answers: Answers) -> list[str]:
    """The id, one of its parts, or one of several id columns, as a feature."""
    keys = answers.sampled_keys()
    features: dict[str, list[str | None]] = {}
    for c, column in enumerate(answers.competition.id_columns):
        parts = [k.split("\x1f")[c] for k in keys]
        features[f"the id column {column!r}"] = list(parts)
        pieces = [re.findall(r"[a-z]+|[0-9]+", p.lower()) for p in parts]
        for j in range(min(6, max((len(p) for p in pieces), default=0))):
            features[f"part {j + 1} of the id {column!r}"] = [p[j] if j < len(p) else None for p in pieces]
    findings = []
    for name, values in features.items():
        feature = canonical(values)
        for target in answers.targets:
            said = tells_answer(feature, target)
            if said is not None:
                findings.append(f"{name} tells the answer {target.name!r}: {said}")
    return findings


def _order_findings(sample: Path | None, joined: list[_Joined], answers: Answers) -> list[str]:
    """The position of each test row in the (public) sample submission and in each public table holding test ids."""
    orders: dict[str, dict[str, int]] = {}
    with_ids = read_csv(sample, what="sample submission") if sample is not None else None
    ids = [with_ids[c] for c in answers.competition.id_columns if with_ids is not None and c in with_ids.names]
    if ids and len(ids) == len(answers.competition.id_columns):
        keys = ["\x1f".join(canon_id(str(v)) for v in row) for row in zip(*ids, strict=True)]
        orders[f"the sample submission ({answers.competition.sample_submission})"] = _keyed(keys, answers.key_set)
    for j in joined:
        orders[printable(j.table.name, 160)] = j.row_of
    findings = []
    for where, position in orders.items():
        feature = canonical(answers.aligned({k: str(p) for k, p in position.items()}))
        placed = sorted((int(p), r) for r, p in enumerate(feature) if p is not None)
        for target in answers.targets:
            in_order = [target.values[r] for _, r in placed]
            said = tells_answer(feature, target) or ordered_like_answer(in_order, target)
            if said is not None:
                findings.append(f"the row order of {where} tells the answer {target.name!r}: {said}")
    return findings


def _distinctive(cells: tuple[str, ...]) -> np.ndarray:
    """Each cell's value where it has at least 7 significant digits and no other row has it (else NaN)."""
    digits = [len(re.sub(r"[^0-9]", "", c.strip().lower().split("e")[0]).lstrip("0")) for c in cells]
    counts: dict[str, int] = {}
    for c in cells:
        counts[c] = counts.get(c, 0) + 1
    out = np.full(len(cells), np.nan)
    for i, cell in enumerate(cells):
        if digits[i] >= 7 and counts[cell] == 1:
            try:
                out[i] = abs(float(cell))
            except ValueError:
                continue
    return out


def _file_group(entry: Entry) -> str:
    top = entry.name.split("/", 1)[0].split(":", 1)[0]
    base = re.sub(r"\d+", "#", entry.base)
    return f"{top}/.../{base}" if top != entry.name else base


def _number_findings(seen: Inventory, answers: Answers) -> list[str]:
    kinds = ("float", "probability")
    values = {n: _distinctive(c) for n, c in answers.cells.items() if answers.kind(n) in kinds}
    values = {n: v for n, v in values.items() if np.isfinite(v).any()}
    if not values:
        return []
    groups: dict[str, list[np.ndarray]] = {}
    total = 0
    for entry in seen.entries:
        if entry.data is None or entry.binary or total >= _NUMBERS:
            continue
        found = [float(m) for _, m in zip(range(_NUMBERS_PER_FILE), _DECIMAL.findall(entry.data), strict=False)]
        total += len(found)
        groups.setdefault(_file_group(entry), []).append(np.array(found))
    considered = np.zeros(len(answers.rows), dtype=bool)
    for v in values.values():
        considered |= np.isfinite(v)
    findings = []
    for group, arrays in groups.items():
        public = np.unique(np.concatenate(arrays)) if arrays else np.array([])
        if public.size == 0 or considered.sum() < MIN_ROWS:
            continue
        matched = considered.copy()
        for v in values.values():
            at = np.clip(np.searchsorted(public, np.nan_to_num(v)), 1, public.size - 1)
            near = np.minimum(abs(public[at] - v), abs(public[at - 1] - v)) if public.size > 1 else abs(public[0] - v)
            matched &= ~np.isfinite(v) | (near <= 1e-8 * abs(v) + 1e-12)
        if matched.sum() / considered.sum() >= _COVERED:
            findings.append(
                f"public files {printable(group, 160)} hold the answer numbers ({', '.join(values)}) of "
                f"{int(matched.sum())} of {int(considered.sum())} test rows (matched to 8 significant digits)"
            )
    return findings


def _duplicate_findings(test_side: list[_Joined], train_side: list[Table], answers: Answers) -> list[str]:
    findings = []
    leave = _answer_names(answers.competition) | set(answers.competition.id_columns)
    for test in test_side[:_PAIRED]:
        for train in train_side[:_PAIRED]:
            shared = sorted((set(test.table.columns) & set(train.columns)) - leave - {test.key_column})
            target = next((t for t in answers.targets if t.name in train.columns), None)
            if not shared or target is None:
                continue
            copies: dict[tuple[str, ...], str] = {}
            for i in range(train.n_rows):
                copies.setdefault(
                    tuple(canon(train.columns[c][i]) for c in shared), canon(train.columns[target.name][i])
                )
            own = dict(zip(answers.sampled_keys(), target.values, strict=True))
            pairs = []
            for key, row in test.row_of.items():
                copy = copies.get(tuple(canon(test.table.columns[c][row]) for c in shared))
                if copy is not None and key in own:
                    pairs.append((copy, own[key]))
            same = [answer for copy, answer in pairs if copy == answer]
            chance = chance_of_matches(target.values, same)
            if len(pairs) >= MIN_ROWS and len(same) / len(pairs) >= BOUND and chance <= CHANCE:
                findings.append(
                    f"{len(pairs)} test rows of {printable(test.table.name, 160)} are whole rows of "
                    f"{printable(train.name, 160)} (columns {printable(', '.join(shared), 200)}; the ids left out), "
                    f"and the copy's {target.name!r} is the answer for {len(same)} of them "
                    f"(share >= {BOUND}; chance p {chance:.1e} <= {CHANCE:.0e})"
                )
    return findings


def scan_prepared(competition: Competition, prepared: Path, caps: Caps | None = None) -> LeakScan:
    """The whole scan of a prepared folder (``prepared/public`` against ``prepared/private``)."""
    caps = caps or Caps()
    public = prepared / "public"
    result = LeakScan(
        scan_for_leaks(competition, public, prepared / "private", check_invariants(competition, prepared))
    )
    answers = read_answers(competition, prepared)
    sample = prepared / competition.sample_submission
    inside = sample.is_relative_to(public)  # billion-word-imputation keeps its sample submission in private/
    leave_out = frozenset({sample.relative_to(public).as_posix() if inside else "", "description.md"})
    seen = inventory(public, caps, leave_out=leave_out)
    copies = sample.read_bytes()  # copies of the sample submission (hubmap's test/sample_submission.csv) are one too
    listed = [e for e in seen.entries if e.data != copies]
    tables = [t for t in (table_of(e, TABLE_ROWS) for e in listed) if t is not None][:MAX_TABLES]
    joined = [_join(t, answers) for t in tables]
    test_side = [j for j in joined if j.hits >= max(1, len(answers.key_set) // 2)]
    train_side = [j.table for j in joined if not j.hits and _answer_names(competition) & set(j.table.columns)]
    result.findings += _train_with_test_ids(joined, answers, result.findings, _sample_values(sample, answers))
    for j in test_side:
        result.findings += _column_findings(j, answers)
    result.findings += _id_findings(answers) + _order_findings(sample if inside else None, test_side, answers)
    files = files_by_id(listed, answers)
    result.findings += name_findings(files, answers) + content_findings(files, answers)
    result.findings += polygon_findings(files, answers) + _number_findings(seen, answers)
    result.findings += _duplicate_findings(test_side, train_side, answers)
    result.notes = _notes(seen, caps, tables, test_side, files, answers)
    return result


def _notes(
    seen: Inventory, caps: Caps, tables: list[Table], test_side: list[_Joined], files: list, answers: Answers
) -> list[str]:
    n, measured = len(answers.keys), len(answers.rows)
    notes = [
        f"read: {seen.said()}; bounds: {caps.said()}",
        f"tables: {len(tables)} read (at most {MAX_TABLES}, the first {TABLE_ROWS:,} rows of each), "
        f"{len(test_side)} holding the test ids (the first {_PAIRED} of them against the first {_PAIRED} training "
        f"tables for duplicated rows); {len({f.key for f in files})} test rows have public files named after them",
        f"measures: over {measured:,} of {n:,} test rows (a sample of at most {MAX_ROWS:,}); a finding needs the "
        f"measure >= {BOUND} and chance p <= {CHANCE:.0e}, on at least {MIN_ROWS} rows",
    ]
    if n < MIN_ROWS:
        notes.append(
            f"not measured: the test set has {n} rows (< {MIN_ROWS}), too few for any statistical measure; only "
            "prepare's scan, the polygon check and the number search apply"
        )
    if seen.skipped:
        notes.append(
            f"not followed: {len(seen.skipped)} links or special files in public/ (e.g. {printable(seen.skipped[0], 120)})"
        )
    return notes

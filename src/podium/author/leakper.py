"""The leak scan's look at the public files named after a test row's id: their names, sizes, times and contents.

A file (or archive member) belongs to a test row when a part of its path is the row's id: the part itself, its
name without the extension, that name up to its first ``-`` or ``_`` (``{id}-anatomical-structure.json``), or the
digits it ends with (``Sample0031.zip``). Files are grouped by the folder they sit in at the top and their
extension, so that ``test/dog/1.jpg`` and ``test/cat/2.jpg`` are one group whose sub-folder is a feature. What is
measured of each group:

- the sub-folder, the name (the id taken out), the size and the time, each as a feature of the row
  (:func:`podium.author.leakstats.tells_answer`);
- the content: a line, a cell or a column read down that is the row's own answer and no other test row's
  (gesture recognition's labels inside each test sample);
- a JSON file's polygons against a mask answer: the same area (within 10%) and bounding box (within 2 pixels or
  2%) as the answer's run-length mask (HuBMAP's glomerulus polygons).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from podium.author.leakanswers import Answers, canon_id, canonical
from podium.author.leakfiles import Entry
from podium.author.leakstats import BOUND, CHANCE, MIN_ROWS, canon, chance_of_matches, tells_answer
from podium.untrusted import printable

__all__ = ["IdFile", "content_findings", "files_by_id", "name_findings", "polygon_findings"]

_TRAILING_DIGITS = re.compile(r"^(.*?)(\d+)$")
_TOKEN = re.compile(r"[0-9a-z]+")
_CELL = re.compile(r"[,\t;|]")
_TEXT_BYTES = 1 << 20
_LINES = 10_000


@dataclass(frozen=True)
class IdFile:
    """A public file that belongs to a test row: the row's key and the file's name with the id as ``{id}``."""

    entry: Entry
    key: str
    pattern: str

    @property
    def group(self) -> str:
        top = self.pattern.split("/", 1)[0] if "/" in self.pattern.split(":", 1)[0] else self.pattern.split(":")[0]
        extension = self.pattern.rsplit(".", 1)[-1] if "." in self.entry.base else ""
        return f"{top}/*.{extension}" if top != self.pattern else self.pattern

    @property
    def folder(self) -> str:
        inner = self.pattern.split(":")[-1]
        return inner.rsplit("/", 1)[0] if "/" in inner else ""


def _id_in(part: str, keys: frozenset[str]) -> tuple[str, str] | None:
    """The key ``part`` of a path names, and the id as it is written there; None when it names none."""
    stem = part.split(".", 1)[0]
    digits = _TRAILING_DIGITS.match(stem)
    candidates = [part, stem, re.split(r"[-_]", stem, maxsplit=1)[0], digits.group(2) if digits else ""]
    for candidate in candidates:
        if candidate and canon_id(candidate) in keys:
            return canon_id(candidate), candidate
    return None


def files_by_id(entries: list[Entry], answers: Answers) -> list[IdFile]:
    """The files that belong to a test row (only where one id column names a row)."""
    if not answers.single:
        return []
    keys = answers.key_set
    found = []
    for entry in entries:
        parts = re.split(r"([/:])", entry.name)
        for i in range(len(parts) - 1, -1, -2):
            named = _id_in(parts[i], keys)
            if named is not None:  # the id written {id} there and in every part below it (Sample{id}_labels.csv)
                below = "".join(parts[i:]).replace(named[1], "{id}")
                found.append(IdFile(entry, named[0], "".join(parts[:i]) + below))
                break
    return found


def _groups(files: list[IdFile], *, by_pattern: bool = False) -> dict[str, list[IdFile]]:
    """The files by their group (``by_pattern``: by their name with the id as ``{id}``, one kind of file each)."""
    groups: dict[str, list[IdFile]] = {}
    for file in files:
        groups.setdefault(file.pattern if by_pattern else file.group, []).append(file)
    return groups


def _shown(group: str, files: list[IdFile]) -> str:
    return f"public files {printable(group, 160)} (e.g. {printable(files[0].entry.name, 120)})"


def _features(files: list[IdFile]) -> Iterator[tuple[str, dict[str, str]]]:
    first: dict[str, IdFile] = {}
    for file in files:
        first.setdefault(file.key, file)
    yield "sub-folder", {k: f.folder for k, f in first.items()}
    yield "name", {k: f.pattern.rsplit("/", 1)[-1] for k, f in first.items()}
    yield "size", {k: str(f.entry.size) for k, f in first.items()}
    yield "time", {k: str(f.entry.mtime_ns) for k, f in first.items() if f.entry.mtime_ns is not None}


def name_findings(files: list[IdFile], answers: Answers) -> list[str]:
    """Each group whose sub-folder, name, size or time tells an answer."""
    findings = []
    for group, members in _groups(files).items():
        for feature, values in _features(members):
            if len(set(values.values())) < 2:
                continue
            aligned = canonical(answers.aligned(values))
            for target in answers.targets:
                said = tells_answer(aligned, target)
                if said is not None:
                    findings.append(
                        f"{_shown(group, members)}: their {feature} tells the answer {target.name!r}: {said}"
                    )
    return findings


def _tokens(text: str) -> tuple[str, ...]:
    return tuple(_TOKEN.findall(canon(text)))


def _sequences(text: str) -> Iterator[tuple[str, ...]]:
    """Each line's tokens, each cell's, and each column's read down (with and without a header line); each cell
    as :func:`canon` writes it, so ``True`` is the answer ``1``."""
    lines = text.splitlines()[:_LINES]
    cells = [_CELL.split(line) for line in lines]
    for line, row in zip(lines, cells, strict=True):
        yield _tokens(line)
        for cell in row:
            yield _tokens(cell)
    width = len(cells[0]) if cells else 0
    if width > 1 and all(len(row) == width for row in cells):
        for column in range(width):
            down = [_tokens(row[column]) for row in cells]
            for start in (0, 1):
                yield tuple(token for tokens in down[start:] for token in tokens)


def content_findings(files: list[IdFile], answers: Answers) -> list[str]:
    """Each group whose files' content names their own row's answer and no other (a label file in a sample)."""
    readable = [f for f in files if f.entry.data and not f.entry.binary and f.key in answers.key_set]
    said = {id(f): set(_sequences((f.entry.data or b"")[:_TEXT_BYTES].decode("utf-8", "replace"))) for f in readable}
    findings = []
    for target in answers.targets:
        domain = {tuple(_TOKEN.findall(value)): value for value in set(target.values)}
        domain.pop((), None)
        if len(domain) < 2:
            continue
        own = dict(zip(answers.sampled_keys(), target.values, strict=True))
        for group, members in _groups(readable, by_pattern=True).items():
            named: dict[str, set[str]] = {}
            for file in members:
                named.setdefault(file.key, set()).update(domain[s] for s in said[id(file)] if s in domain)
            hits = [own[k] for k, found in named.items() if k in own and found == {own[k]}]
            considered = sum(1 for k in named if k in own)
            if considered < MIN_ROWS or len(hits) / considered < BOUND:
                continue
            chance = chance_of_matches(target.values, hits)
            if chance <= CHANCE:
                findings.append(
                    f"{_shown(group, members)}: the files name their own row's answer {target.name!r} and no other "
                    f"for {len(hits)} of {considered} rows (share >= {BOUND}; chance p {chance:.1e} <= {CHANCE:.0e})"
                )
    return findings


def _rings(document: object) -> Iterator[list[tuple[float, float]]]:
    """Every list of at least three [x, y] number pairs in a JSON document (GeoJSON rings among them)."""
    stack = [document]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            pairs = [p for p in item if isinstance(p, list) and len(p) >= 2 and all(_number(v) for v in p[:2])]
            if len(item) >= 3 and len(pairs) == len(item):
                yield [(float(p[0]), float(p[1])) for p in pairs]
            else:
                stack.extend(item)


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _polygon(document: object) -> tuple[float, tuple[float, float, float, float]] | None:
    rings = list(_rings(document))
    if not rings:
        return None
    area = sum(
        abs(sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(r, r[1:] + r[:1], strict=True))) / 2 for r in rings
    )
    xs, ys = [x for r in rings for x, _ in r], [y for r in rings for _, y in r]
    return area, (min(xs), min(ys), max(xs), max(ys))


def _mask(rle: str, height: int, width: int) -> tuple[int, list[tuple[int, int, int, int]]] | None:
    """A run-length mask's area and its bounding box (x0, y0, x1, y1; x1 and y1 past the last pixel), read
    column-major (pixels counted down each column) and row-major."""
    numbers = [int(v) for v in rle.split() if v.isdigit()]
    runs = [(s - 1, s + n - 2) for s, n in zip(numbers[0::2], numbers[1::2], strict=False) if n > 0]
    if not runs or height <= 0 or width <= 0:
        return None
    boxes = []
    for minor in (height, width):
        major = [p // minor for run in runs for p in run]
        if any(a // minor != b // minor for a, b in runs):  # a run that wraps covers the whole minor axis
            low, high = 0, minor - 1
        else:
            low, high = min(p % minor for run in runs for p in run), max(p % minor for run in runs for p in run)
        if minor == height:  # column-major: x is the column (major), y the row
            boxes.append((min(major), low, max(major) + 1, high + 1))
        else:
            boxes.append((low, min(major), high + 1, max(major) + 1))
    return sum(b - a + 1 for a, b in runs), boxes


def _shape(answers: Answers, column: str) -> tuple[list[int], list[int]] | None:
    options = answers.competition.answer_column(column).options
    n = len(answers.rows)
    if "shape_from" in options:
        height, width = options["shape_from"]
        if height in answers.frame.names and width in answers.frame.names:
            heights = [int(float(answers.frame[height][i])) for i in answers.rows]
            return heights, [int(float(answers.frame[width][i])) for i in answers.rows]
    if "shape" in options:
        return [int(options["shape"][0])] * n, [int(options["shape"][1])] * n
    return None


def _same(
    polygon: tuple[float, tuple[float, float, float, float]], mask: tuple[int, list[tuple[int, int, int, int]]]
) -> bool:
    area, box = polygon
    pixels, boxes = mask
    if not 0.9 <= area / pixels <= 1.1:
        return False
    return any(all(abs(a - b) <= max(2.0, 0.02 * max(c[2], c[3])) for a, b in zip(box, c, strict=True)) for c in boxes)


def polygon_findings(files: list[IdFile], answers: Answers) -> list[str]:
    """Each group of JSON files whose polygons are the row's mask answer (area and bounding box)."""
    findings = []
    for name, cells in answers.cells.items():
        shape = _shape(answers, name) if answers.kind(name) == "rle" else None
        if shape is None:
            continue
        masks = {answers.keys[i]: _mask(cells[j], shape[0][j], shape[1][j]) for j, i in enumerate(answers.rows)}
        jsons = [f for f in files if f.entry.data and f.entry.base.endswith(".json") and not f.entry.truncated]
        for group, members in _groups(jsons, by_pattern=True).items():
            considered = hits = 0
            for file in members:
                mask = masks.get(file.key)
                try:
                    polygon = _polygon(json.loads(file.entry.data or b""))
                except (ValueError, RecursionError):
                    polygon = None
                if mask is None or polygon is None or polygon[0] <= 0:
                    continue
                considered += 1
                hits += _same(polygon, mask)
            if considered >= 3 and hits / considered >= 0.9:
                findings.append(
                    f"{_shown(group, members)}: their polygons are the answer masks {name!r} for {hits} of "
                    f"{considered} rows (area within 10%, bounding box within 2 pixels or 2%)"
                )
    return findings

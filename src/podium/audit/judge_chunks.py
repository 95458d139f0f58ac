"""The judge's material as lines and chunks: where each line comes from, and chunks of a bounded size that
restate the title of the source they start in and know, for a quote, its file and line."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from pathlib import Path

from podium.audit.judge_steering import Found
from podium.audit.types import Evidence

__all__ = ["Chunk", "Chunker", "Row", "Source"]


@dataclass
class Chunk:
    """One chunk of material: its text as the judge sees it, and where each of its lines comes from."""

    index: int
    text: str
    _starts: list[int] = field(default_factory=list, repr=False)
    _places: list[tuple[str, int | None]] = field(default_factory=list, repr=False)
    #: The lines of this chunk that address the judge: (file, line, echoed from the competition's data, its text).
    addressed: list[tuple[str, int | None, bool, str]] = field(default_factory=list)

    def steered(self, evidence: Evidence) -> bool:
        """Whether ``evidence`` quotes a line of this chunk that the agent wrote to address the judge (the line's own
        text: a transcript's call holds many lines under one number)."""
        quote = " ".join(evidence.fragment.removesuffix("…").split())  # a long quote is kept cut
        return any(
            (file, line) == (evidence.file, evidence.line) and not echoed and quote in " ".join(text.split())
            for file, line, echoed, text in self.addressed
        )

    def find(self, quote: str) -> Evidence | None:
        """Where ``quote`` is in this chunk (one line's text, found verbatim, or with its runs of white space
        taken as one), as evidence at its file and line; None when it is not there."""
        at = self.text.find(quote)
        if at < 0:
            at = _find_loosely(self.text, quote)
        if at < 0:
            return None
        row = bisect.bisect_right(self._starts, at) - 1
        file, line = self._places[row] if row >= 0 else ("", None)
        return Evidence(file, line, quote) if file else None


def _find_loosely(text: str, quote: str) -> int:
    """The offset of ``quote`` in ``text`` with every run of white space matching any other; -1 if none."""
    words = quote.split()
    if not words:
        return -1
    pattern = r"[ \t]+".join(re.escape(w) for w in words)
    match = re.search(pattern, text)
    return match.start() if match else -1


@dataclass
class Source:
    """One thing read: the transcript or a file of the agent's; ``size`` bytes, ``done`` of them in chunks given out."""

    name: str
    path: Path
    size: int
    hits: int = 0
    scanned: bool = False
    done: int = 0


@dataclass
class Row:
    """One line of material: its text (no line break), where it comes from, the source's bytes read with it, and what
    is shown before it (its number, or its file and number)."""

    text: str
    file: str
    line: int | None
    source: Source | None = None
    done: int = 0
    label: str = ""


class Chunker:
    """Rows into chunks of at most ``size`` characters, each chunk restating the title of the source it starts in."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.count = 0
        self._parts: list[str] = []
        self._length = 0
        self._starts: list[int] = []
        self._places: list[tuple[str, int | None]] = []
        self._progress: dict[int, tuple[Source, int]] = {}
        self._title = ""
        self._addressed: list[tuple[str, int | None, bool, str]] = []

    def title(self, title: str) -> Chunk | None:
        self._title = title
        return self._put(f"=== {title} ===", ("", None))

    def row(self, row: Row, shown: str, notice: Found | None = None) -> Chunk | None:
        """Adds one line; ``notice``: it addresses the judge (the chunk it lands in names it)."""
        full = self._put(shown, (row.file, row.line))
        if notice is not None:
            self._addressed.append((row.file, row.line, notice.echoed, shown))
        self.passed(row)
        return full

    def passed(self, row: Row) -> None:
        """``row`` is in the chunk being built (or blank, left out): its source is read up to it with that chunk."""
        if row.source is not None:
            self._progress[id(row.source)] = (row.source, row.done)

    def _put(self, text: str, place: tuple[str, int | None]) -> Chunk | None:
        full = None
        if self._length + len(text) + 1 > self.size and self._places:
            full = self.flush()
            if place[0]:  # a chunk that starts inside a source says which
                self._add(f"=== {self._title} (continued) ===", ("", None))
        self._add(text, place)
        return full

    def _add(self, text: str, place: tuple[str, int | None]) -> None:
        self._starts.append(self._length)
        self._places.append(place)
        self._parts.append(text + "\n")
        self._length += len(text) + 1

    def flush(self, last: bool = False) -> Chunk | None:
        """The chunk built so far (None when it holds no line of material), and a fresh one begun; the sources are
        read up to its rows when it is given out, or when it is the ``last`` (blank lines at the end are read)."""
        chunk = None
        if any(file for file, _ in self._places):
            chunk = Chunk(self.count, "".join(self._parts), self._starts, self._places, self._addressed)
            self.count += 1
        if chunk is not None or last:
            for source, done in self._progress.values():
                source.done = max(source.done, done)
        self._parts, self._length, self._starts, self._places, self._progress = [], 0, [], [], {}
        self._addressed = []
        return chunk

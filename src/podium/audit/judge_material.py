"""What the LLM judge reads of a run, streamed and cut into chunks, and how much of it was left unread.

The material comes in this order, riskiest first:

1. **The transcript** ``RUN/llm_transcript.jsonl``: every model call the agent (and its sub-agents)
   made, as podium's proxy recorded it outside every folder the agent can write, so the agent cannot
   erase it. A call's request repeats the conversation so far; each message is shown once, the first
   time it appears (a message seen before, in this conversation or another, is counted, not repeated).
2. **Lines of risk**: a scan of the agent's files for what an unauthorised download, a look for the
   answers or a call to an outside model would leave (``wget``, ``kaggle``, web addresses, ``private``,
   ``solutions`` ...), each line with its file and number: a line hidden after megabytes of filler is
   judged in the first chunk.
3. **The agent's files**: the text files under ``logs/`` but tables, and its Python code, the files with
   the most lines of risk first, then in path order.

Everything is read as a stream (a file is never held whole: lines in pieces of at most
:data:`SEGMENT_CHARS` characters, chunks of at most ``chunk_chars``), with no link followed and no file of
several hard links read. Blank lines are left out (their numbers still count). :class:`Material`
stops after ``max_chunks`` chunks and then says what was left unread: the bytes of each source not in
a chunk given out. What it could not read at all (a file it could not open, the transcript short of
calls the record counts, a folder with more files than a walk visits) is in :attr:`Material.gaps`.
Text that addresses the judge (a ``VERDICT:`` line, "ignore previous instructions"; found by
:mod:`podium.audit.judge_steering`) is kept as evidence in :attr:`Material.addressed` (written by the agent)
and :attr:`Material.echoed` (echoed from the competition's data), and each chunk names its lines to the judge.
The transcript's calls are read by :mod:`podium.audit.judge_transcript`, the lines cut into chunks by
:mod:`podium.audit.judge_chunks`.
"""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Generator, Iterable, Iterator
from pathlib import Path
from typing import IO

from podium.audit.context import MAX_FILES, AuditContext
from podium.audit.judge_chunks import Chunk, Chunker, Row, Source
from podium.audit.judge_steering import Found, Steering, public_data_files, public_data_lines
from podium.audit.judge_transcript import MAX_SEEN, TRANSCRIPT, Counts, call_rows, json_object
from podium.audit.types import Evidence
from podium.untrusted import open_regular, printable, regular_size

__all__ = [
    "CHUNK_CHARS",
    "MAX_CHUNKS",
    "SCAN_BYTES",
    "SEGMENT_CHARS",
    "TRANSCRIPT",
    "Chunk",
    "Material",
    "material_digest",
]

#: Characters per chunk: the published check's window.
CHUNK_CHARS = 128_000
#: The most chunks judged per run (5.1 M characters); what is left is named, and the run is not clean.
MAX_CHUNKS = 40
#: The longest piece of one line shown as one numbered line; a longer line goes in several, same number.
SEGMENT_CHARS = 4000
#: The most bytes of the agent's files (and the transcript) scanned for risk and hashed for the cache key.
SCAN_BYTES = 256 << 20
#: The longest transcript line parsed (the proxy bounds its lines; a longer one is counted as unread).
MAX_TRANSCRIPT_LINE = 16 << 20
#: The most characters of lines of risk (about half a chunk); the files follow whole anyway.
RISK_CHARS = 64_000
#: Characters of a line of risk kept around what matched.
RISK_CONTEXT = 150
_BLOCK = 1 << 20

#: What an unauthorised download, a look for the answers or a call to an outside model leaves in a log (lower case).
RISK_WORDS = (
    b"wget", b"curl ", b"kaggle", b"http://", b"https://", b"ftp://", b"git clone", b"requests.get", b"requests.post",
    b"urllib", b"urlopen", b"httpx", b"socket.", b"solution", b"leaderboard", b"private", b"answer", b"test_labels",
    b"ground truth", b"ground_truth", b"../..", b"api_key", b"api-key", b"openai", b"anthropic", b"verdict",
)  # fmt: skip
_TABLES = (".csv",)


class Material:
    """A run's material for the judge (the module docstring): :meth:`chunks` streams it; afterwards
    :meth:`unread` says what was left, and :attr:`gaps`, :attr:`addressed` and the counts say the rest."""

    def __init__(self, ctx: AuditContext, chunk_chars: int = CHUNK_CHARS, max_chunks: int = MAX_CHUNKS) -> None:
        self.ctx = ctx
        self.chunk_chars = chunk_chars
        self.max_chunks = max_chunks
        #: What could not be read at all, one sentence each (the run cannot be judged clean).
        self.gaps: list[str] = []
        #: Lines that address the judge written by the agent, and those echoed from the competition's data (the first
        #: ten of each; :attr:`addressed_counts` counts them all): evidence, not a verdict.
        self.addressed: list[Evidence] = []
        self.echoed: list[Evidence] = []
        self.addressed_counts = {"agent": 0, "data": 0}
        self._addressed_at: set[tuple[str, int | None]] = set()
        self._steering = Steering(lambda: public_data_lines(ctx), printable)
        self.transcript_calls = 0
        self._counts = Counts()
        self.lines = 0
        self.chunks_given = 0
        self._sources: list[Source] | None = None
        self._risk: list[Row] = []

    @property
    def cut_messages(self) -> int:
        """Messages of the transcript that podium's proxy cut (its lines are bounded) and that were not shown whole."""
        return self._counts.cut

    @property
    def repeated_messages(self) -> int:
        return self._counts.repeated

    # -- the sources ------------------------------------------------------------------------------

    def sources(self) -> list[Source]:
        """The transcript (when there is one) and the agent's files, in the order they are read; scans the files
        for risk on first use."""
        if self._sources is None:
            self._sources = self._ordered()
        return self._sources

    def _transcript_source(self) -> Source | None:
        path = self.ctx.run_dir / TRANSCRIPT
        size = _regular_size(path)
        return Source(TRANSCRIPT, path, size) if size is not None else None

    def listing(self) -> list[Source]:
        """The transcript (when there is one) and the agent's files, in path order, not scanned."""
        ctx = self.ctx
        transcript = self._transcript_source()
        logs = [p for p in ctx.log_files() if not p.name.endswith(_TABLES)]
        sources = [transcript] if transcript else []
        for path in dict.fromkeys([*logs, *ctx.code_files()]):
            size = _regular_size(path)
            if size is None:
                self.gaps.append(f"{printable(ctx.relative(path))} could not be read (not a regular file of one link)")
            else:
                sources.append(Source(printable(ctx.relative(path)), path, size))
        if len(ctx.log_files()) >= MAX_FILES or len(ctx.code_files()) >= MAX_FILES:
            self.gaps.append(f"the agent's folders hold {MAX_FILES} files or more; those past them were not read")
        return sources

    def _ordered(self) -> list[Source]:
        listing = self.listing()
        budget = SCAN_BYTES
        for source in listing:
            if source.name != TRANSCRIPT and source.size <= budget:
                budget -= source.size
                self._scan(source)
        # the transcript first, then the most lines of risk; a file not scanned (past SCAN_BYTES) after every one
        return sorted(listing, key=lambda s: (s.name != TRANSCRIPT, -s.hits, not s.scanned, s.name))

    def _scan(self, source: Source) -> None:
        """Count ``source``'s lines of risk and keep them (bounded) for the material's second part."""
        handle = _open(source.path)
        if handle is None:
            self.gaps.append(f"{source.name} could not be read")
            return
        kept = sum(len(r.text) for r in self._risk)
        with handle:
            line, carry = 1, b""
            while block := handle.read(_BLOCK):
                data = carry + block
                end = data.rfind(b"\n") + 1 or (len(data) if len(data) > _BLOCK else 0)
                data, carry = data[:end], data[end:]
                kept += self._risk_lines(source, data, line, kept)
                line += data.count(b"\n")
            self._risk_lines(source, carry, line, kept)
        source.scanned = True

    def _risk_lines(self, source: Source, data: bytes, first: int, kept: int) -> int:
        """Lines of risk in ``data`` (whole lines, the first numbered ``first``); returns the characters kept.
        Searched word by word with ``bytes.find`` (a regular expression of many words is slower by far)."""
        lower = data.lower()
        starts: set[int] = set()
        for word in RISK_WORDS:
            at = lower.find(word)
            while at >= 0:
                start = lower.rfind(b"\n", 0, at) + 1
                starts.add(start)
                end = lower.find(b"\n", at)
                at = -1 if end < 0 else lower.find(word, end)
        added, number, counted = 0, first, 0
        for start in sorted(starts):
            number += data.count(b"\n", counted, start)
            counted = start
            source.hits += 1
            if kept + added >= RISK_CHARS:
                continue
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            at = min(i for w in RISK_WORDS if (i := lower.find(w, start, end)) >= 0)
            text = data[max(start, at - RISK_CONTEXT) : min(end, at + RISK_CONTEXT)].decode("utf-8", "replace")
            self._risk.append(Row(text, source.name, number, label=f"{source.name}:{number}: "))
            added += len(text) + len(source.name) + 12
        return added

    # -- the chunks -------------------------------------------------------------------------------

    def chunks(self) -> Generator[Chunk, None, None]:
        """The material in chunks, at most ``max_chunks`` of them."""
        chunker = Chunker(self.chunk_chars)
        for chunk in self._chunks(chunker):
            yield chunk
            self.chunks_given += 1
            if self.chunks_given >= self.max_chunks:
                return
        last = chunker.flush(last=True)
        if last is not None:
            yield last
            self.chunks_given += 1

    def _chunks(self, chunker: Chunker) -> Iterator[Chunk]:
        for title, rows in self._parts():
            titled = False
            for row in rows:
                if not row.text.strip():
                    chunker.passed(row)
                    continue
                if not titled:
                    titled = True
                    if full := chunker.title(title):
                        yield full
                self.lines += 1
                for start in range(0, len(row.text), SEGMENT_CHARS):
                    piece = row.text[start : start + SEGMENT_CHARS]
                    if full := chunker.row(row, row.label + piece, self._watch(row, piece)):
                        yield full

    def _parts(self) -> Iterator[tuple[str, Iterable[Row]]]:
        sources = self.sources()
        for source in sources:
            if source.name == TRANSCRIPT:
                yield from self._transcript(source)
        self._check_transcript()
        if self._risk:
            yield (
                "lines of the agent's files that mention downloads, web addresses, answers or keys (file:line)",
                self._risk,
            )
        for source in sources:
            if source.name != TRANSCRIPT:
                yield source.name, self._file_rows(source)

    def _watch(self, row: Row, piece: str) -> Found | None:
        """Whether ``piece`` of ``row`` (at most :data:`SEGMENT_CHARS` characters, so the cost is bounded) addresses
        the judge: kept as evidence, told apart by origin; the chunker names it to the judge."""
        found = self._steering.check(piece, row.file, row.line)
        if found is None:
            return None
        origin, kept = ("data", self.echoed) if found.echoed else ("agent", self.addressed)
        place = (row.file, row.line)  # a line of risk is shown twice: in the lines of risk and in its file
        if place in self._addressed_at or len(self._addressed_at) >= MAX_SEEN:
            return found
        self._addressed_at.add(place)
        self.addressed_counts[origin] += 1
        if len(kept) < 10:
            kept.append(found.evidence)
        return found

    def _file_rows(self, source: Source) -> Iterator[Row]:
        handle = _open(source.path)
        if handle is None:
            self.gaps.append(f"{source.name} could not be read")
            return
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        with handle:
            number, done, text = 1, 0, ""
            while piece := handle.readline(SEGMENT_CHARS):
                done += len(piece)
                text += decoder.decode(piece)
                if piece.endswith(b"\n"):
                    yield Row(text.rstrip("\r\n"), source.name, number, source, done, f"{number}: ")
                    number, text = number + 1, ""
                elif len(text) >= SEGMENT_CHARS:  # a long line: its pieces under the same number
                    yield Row(text, source.name, number, source, done, f"{number}: ")
                    text = ""
            text += decoder.decode(b"", final=True)
            yield Row(text, source.name, number, source, max(done, source.size), f"{number}: ")

    # -- the transcript ---------------------------------------------------------------------------

    def _transcript(self, source: Source) -> Iterator[tuple[str, Iterable[Row]]]:
        handle = _open(source.path)
        if handle is None:
            self.gaps.append(f"{TRANSCRIPT} could not be read")
            return
        seen: set[bytes] = set()
        with handle:
            number, start = 0, 0
            while raw := handle.readline(MAX_TRANSCRIPT_LINE):
                number += 1
                end = start + len(raw)
                if not raw.endswith(b"\n") and len(raw) >= MAX_TRANSCRIPT_LINE:
                    end += _skip_line(handle)
                    self.gaps.append(f"{TRANSCRIPT} line {number} is over {MAX_TRANSCRIPT_LINE} bytes and was not read")
                    start = end
                    continue
                call = json_object(raw)
                if call is None:
                    self.gaps.append(f"{TRANSCRIPT} line {number} is not a JSON object")
                else:
                    self.transcript_calls += 1
                    title, texts = call_rows(call, number, seen, self._counts)
                    rows = [Row(t, TRANSCRIPT, number, source, start) for t in texts]
                    if rows:
                        rows[-1].done = end
                    yield title, rows
                start = end

    def _check_transcript(self) -> None:
        """The transcript must hold every call the record counts (answered and refused)."""
        llm = self.ctx.record.llm if self.ctx.record is not None else None
        if not isinstance(llm, dict):
            return
        counted = sum(int(v) for k in ("calls", "refused") if isinstance(v := llm.get(k), int))
        if self.transcript_calls < counted:
            self.gaps.append(
                f"the transcript ({TRANSCRIPT}) holds {self.transcript_calls} of the {counted} model calls the record "
                "counts"
            )
        if self.cut_messages:
            self.gaps.append(
                f"podium's proxy cut {self.cut_messages} message(s) of the transcript that were not recorded whole before"
            )

    # -- what was left ----------------------------------------------------------------------------

    def unread(self) -> list[tuple[str, int]]:
        """(name, bytes) of each source with bytes left unread, in reading order."""
        return [(s.name, s.size - s.done) for s in self.sources() if s.size > s.done]


def _skip_line(handle: IO[bytes]) -> int:
    """Read past the rest of an over-long line; returns the bytes skipped."""
    skipped = 0
    while piece := handle.readline(_BLOCK):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def _open(path: Path) -> IO[bytes] | None:
    """``path`` as a buffered file when it is a regular file of one hard link (:func:`podium.untrusted.open_regular`)."""
    fd = open_regular(path, single_link=True)
    return None if fd is None else open(fd, "rb", buffering=_BLOCK)


def _regular_size(path: Path) -> int | None:
    return regular_size(path, single_link=True)


def material_digest(ctx: AuditContext) -> str:
    """A hash of everything :class:`Material` may read of the run: every source's name and size, and the bytes of
    the transcript and of the agent's files up to :data:`SCAN_BYTES` in all (streamed; what lies past them is never
    judged, since the files before them fill far more than the chunks judged)."""
    digest = hashlib.sha256()
    for path in public_data_files(ctx):  # what tells a line echoed from the data
        digest.update(f"\0data\0{path.name}\0{_regular_size(path)}\0".encode())
    budget = SCAN_BYTES
    for source in Material(ctx).listing():  # gaps need no hashing: they follow from the listing
        digest.update(f"\0{source.name}\0{source.size}\0".encode())
        handle = _open(source.path) if source.size <= budget else None
        if handle is None:
            continue
        budget -= source.size
        with handle:
            while block := handle.read(_BLOCK):
                digest.update(block)
    return digest.hexdigest()

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
Text that addresses the judge (a ``VERDICT:`` line, "ignore previous instructions") is kept in
:attr:`Material.addressed`: the agent tried to steer its auditor.
"""

from __future__ import annotations

import bisect
import codecs
import hashlib
import json
import os
import re
import stat
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from podium.audit.context import MAX_FILES, AuditContext
from podium.audit.types import Evidence

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
#: The transcript's name in the run's folder (I1: written by podium's proxy, outside the agent's reach).
TRANSCRIPT = "llm_transcript.jsonl"
#: The longest transcript line parsed (the proxy bounds its lines; a longer one is counted as unread).
MAX_TRANSCRIPT_LINE = 16 << 20
#: The most characters of lines of risk (about half a chunk); the files follow whole anyway.
RISK_CHARS = 64_000
#: Characters of a line of risk kept around what matched.
RISK_CONTEXT = 150
#: The most distinct messages remembered for de-duplication (beyond, repeats are shown again).
MAX_SEEN = 200_000
_BLOCK = 1 << 20

#: What an unauthorised download, a look for the answers or a call to an outside model leaves in a log (lower case).
RISK_WORDS = (
    b"wget", b"curl ", b"kaggle", b"http://", b"https://", b"ftp://", b"git clone", b"requests.get", b"requests.post",
    b"urllib", b"urlopen", b"httpx", b"socket.", b"solution", b"leaderboard", b"private", b"answer", b"test_labels",
    b"ground truth", b"ground_truth", b"../..", b"api_key", b"api-key", b"openai", b"anthropic", b"verdict",
)  # fmt: skip
_ADDRESSED = re.compile(
    r"\bverdict\s*[:=]\s*[*_`\"']*\s*(?:yes|no|clean)\b|ignore (?:all |any )?(?:the )?(?:previous|prior|above|earlier) "
    r"(?:instructions|prompts?)|(?:attention|note) to the (?:judge|auditor|reviewer)",
    re.IGNORECASE,
)
_TABLES = (".csv",)
#: Where podium's proxy cut a long string of a transcript line (I1: the middle goes, the start and the end stay).
_CUT = re.compile(r"\.\.\.\[podium cut \d+ characters\]\.\.\.")
#: The characters of a message's start and end that tell a cut copy of it (the proxy keeps at least 42 and 21).
_ENDS = (42, 21)


@dataclass
class Chunk:
    """One chunk of material: its text as the judge sees it, and where each of its lines comes from."""

    index: int
    text: str
    _starts: list[int] = field(default_factory=list, repr=False)
    _places: list[tuple[str, int | None]] = field(default_factory=list, repr=False)

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
class _Source:
    """One thing read: the transcript or a file of the agent's; ``size`` bytes, ``done`` of them in chunks given out."""

    name: str
    path: Path
    size: int
    hits: int = 0
    scanned: bool = False
    done: int = 0


@dataclass
class _Row:
    """One line of material: its text (no line break), where it comes from, the source's bytes read with it, and what
    is shown before it (its number, or its file and number)."""

    text: str
    file: str
    line: int | None
    source: _Source | None = None
    done: int = 0
    label: str = ""


class _Chunker:
    """Rows into chunks of at most ``size`` characters, each chunk restating the title of the source it starts in."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.count = 0
        self._parts: list[str] = []
        self._length = 0
        self._starts: list[int] = []
        self._places: list[tuple[str, int | None]] = []
        self._progress: dict[int, tuple[_Source, int]] = {}
        self._title = ""

    def title(self, title: str) -> Chunk | None:
        self._title = title
        return self._put(f"=== {title} ===", ("", None))

    def row(self, row: _Row, shown: str) -> Chunk | None:
        full = self._put(shown, (row.file, row.line))
        self.passed(row)
        return full

    def passed(self, row: _Row) -> None:
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
            chunk = Chunk(self.count, "".join(self._parts), self._starts, self._places)
            self.count += 1
        if chunk is not None or last:
            for source, done in self._progress.values():
                source.done = max(source.done, done)
        self._parts, self._length, self._starts, self._places, self._progress = [], 0, [], [], {}
        return chunk


class Material:
    """A run's material for the judge (the module docstring): :meth:`chunks` streams it; afterwards
    :meth:`unread` says what was left, and :attr:`gaps`, :attr:`addressed` and the counts say the rest."""

    def __init__(self, ctx: AuditContext, chunk_chars: int = CHUNK_CHARS, max_chunks: int = MAX_CHUNKS) -> None:
        self.ctx = ctx
        self.chunk_chars = chunk_chars
        self.max_chunks = max_chunks
        #: What could not be read at all, one sentence each (the run cannot be judged clean).
        self.gaps: list[str] = []
        #: Lines that address the judge (the first ten).
        self.addressed: list[Evidence] = []
        self.transcript_calls = 0
        #: Messages of the transcript that podium's proxy cut (its lines are bounded) and that were not shown whole.
        self.cut_messages = 0
        self.repeated_messages = 0
        self.lines = 0
        self.chunks_given = 0
        self._sources: list[_Source] | None = None
        self._risk: list[_Row] = []

    # -- the sources ------------------------------------------------------------------------------

    def sources(self) -> list[_Source]:
        """The transcript (when there is one) and the agent's files, in the order they are read; scans the files
        for risk on first use."""
        if self._sources is None:
            self._sources = self._ordered()
        return self._sources

    def _transcript_source(self) -> _Source | None:
        path = self.ctx.run_dir / TRANSCRIPT
        size = _regular_size(path)
        return _Source(TRANSCRIPT, path, size) if size is not None else None

    def listing(self) -> list[_Source]:
        """The transcript (when there is one) and the agent's files, in path order, not scanned."""
        ctx = self.ctx
        transcript = self._transcript_source()
        logs = [p for p in ctx.log_files() if not p.name.endswith(_TABLES)]
        sources = [transcript] if transcript else []
        for path in dict.fromkeys([*logs, *ctx.code_files()]):
            size = _regular_size(path)
            if size is None:
                self.gaps.append(f"{_printable(ctx.relative(path))} could not be read (not a regular file of one link)")
            else:
                sources.append(_Source(_printable(ctx.relative(path)), path, size))
        if len(ctx.log_files()) >= MAX_FILES or len(ctx.code_files()) >= MAX_FILES:
            self.gaps.append(f"the agent's folders hold {MAX_FILES} files or more; those past them were not read")
        return sources

    def _ordered(self) -> list[_Source]:
        listing = self.listing()
        budget = SCAN_BYTES
        for source in listing:
            if source.name != TRANSCRIPT and source.size <= budget:
                budget -= source.size
                self._scan(source)
        # the transcript first, then the most lines of risk; a file not scanned (past SCAN_BYTES) after every one
        return sorted(listing, key=lambda s: (s.name != TRANSCRIPT, -s.hits, not s.scanned, s.name))

    def _scan(self, source: _Source) -> None:
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

    def _risk_lines(self, source: _Source, data: bytes, first: int, kept: int) -> int:
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
            self._risk.append(_Row(text, source.name, number, label=f"{source.name}:{number}: "))
            added += len(text) + len(source.name) + 12
        return added

    # -- the chunks -------------------------------------------------------------------------------

    def chunks(self) -> Generator[Chunk, None, None]:
        """The material in chunks, at most ``max_chunks`` of them."""
        chunker = _Chunker(self.chunk_chars)
        for chunk in self._chunks(chunker):
            yield chunk
            self.chunks_given += 1
            if self.chunks_given >= self.max_chunks:
                return
        last = chunker.flush(last=True)
        if last is not None:
            yield last
            self.chunks_given += 1

    def _chunks(self, chunker: _Chunker) -> Iterator[Chunk]:
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
                self._watch(row)
                for start in range(0, len(row.text), SEGMENT_CHARS):
                    piece = row.text[start : start + SEGMENT_CHARS]
                    if full := chunker.row(row, row.label + piece):
                        yield full

    def _parts(self) -> Iterator[tuple[str, Iterable[_Row]]]:
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

    def _watch(self, row: _Row) -> None:
        low = row.text.lower()
        if len(self.addressed) >= 10 or not ("verdict" in low or "ignore" in low or " to the " in low):
            return
        if (match := _ADDRESSED.search(row.text)) and all(
            (e.file, e.line) != (row.file, row.line) for e in self.addressed
        ):
            self.addressed.append(Evidence(row.file, row.line, row.text[max(0, match.start() - 80) : match.end() + 80]))

    def _file_rows(self, source: _Source) -> Iterator[_Row]:
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
                    yield _Row(text.rstrip("\r\n"), source.name, number, source, done, f"{number}: ")
                    number, text = number + 1, ""
                elif len(text) >= SEGMENT_CHARS:  # a long line: its pieces under the same number
                    yield _Row(text, source.name, number, source, done, f"{number}: ")
                    text = ""
            text += decoder.decode(b"", final=True)
            yield _Row(text, source.name, number, source, max(done, source.size), f"{number}: ")

    # -- the transcript ---------------------------------------------------------------------------

    def _transcript(self, source: _Source) -> Iterator[tuple[str, Iterable[_Row]]]:
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
                call = _json_object(raw)
                if call is None:
                    self.gaps.append(f"{TRANSCRIPT} line {number} is not a JSON object")
                else:
                    self.transcript_calls += 1
                    title, texts = _call_rows(call, number, seen, self)
                    rows = [_Row(t, TRANSCRIPT, number, source, start) for t in texts]
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


def _call_rows(call: dict[str, Any], number: int, seen: set[bytes], material: Material) -> tuple[str, list[str]]:
    """One transcript line as a title and the lines of the messages new to the material."""
    api = str(call.get("api") or "other")
    title = (
        f"{TRANSCRIPT} line {number}: call {call.get('call')} ({api} {call.get('path')}, model {call.get('model')}, "
        f"status {call.get('status')})"
    )
    rows: list[str] = []
    repeated = 0
    for role, text in [*_request_messages(api, call.get("request")), *_response_messages(api, call.get("response"))]:
        keys = _keys(role, text)
        if keys[0] in seen:
            repeated += 1
            continue
        if len(seen) < MAX_SEEN:
            seen.update(keys)
        if _CUT.search(text):
            material.cut_messages += 1  # cut by the proxy, and not shown whole before: part of it is lost
        rows += [f"[{role}]", *text.splitlines()]
    if call.get("truncated") and not all(isinstance(call.get(k), dict | None) for k in ("request", "response")):
        material.cut_messages += 1  # the proxy kept only the start of the call's JSON
    if repeated:
        material.repeated_messages += repeated
        rows.insert(0, f"[{repeated} message(s) shown earlier in the material not repeated]")
    if call.get("error"):
        rows.append(f"[error] {call['error']}")
    return title, rows


def _keys(role: str, text: str) -> tuple[bytes, ...]:
    """What tells a message seen before: the hash of its whole text; for a whole one also the hash of its start and end
    (:data:`_ENDS` characters), which is all a copy the proxy cut in the middle keeps of it, so that copy is known."""
    cut = list(_CUT.finditer(text))
    if cut:
        head, tail = text[: cut[0].start()], text[cut[-1].end() :]
        if len(head) >= _ENDS[0] and len(tail) >= _ENDS[1]:
            return (hashlib.sha256(f"{role}\0{head[: _ENDS[0]]}\0{tail[-_ENDS[1] :]}".encode()).digest(),)
        return (hashlib.sha256(f"{role}\0{text}".encode()).digest(),)
    whole = hashlib.sha256(f"{role}\0{text}".encode()).digest()
    if len(text) < sum(_ENDS):
        return (whole,)
    return whole, hashlib.sha256(f"{role}\0{text[: _ENDS[0]]}\0{text[-_ENDS[1] :]}".encode()).digest()


def _request_messages(api: str, request: Any) -> list[tuple[str, str]]:
    """(role, text) of every message of a request, in order."""
    if not isinstance(request, dict):
        return [("request", _text(request))] if request is not None else []
    if api == "chat":
        return [_chat_message(m) for m in _list(request.get("messages"))]
    if api == "messages":
        system = [("system", _text(request["system"]))] if request.get("system") else []
        return system + [_chat_message(m) for m in _list(request.get("messages"))]
    if api == "responses":
        system = [("system", _text(request["instructions"]))] if request.get("instructions") else []
        given = request.get("input")
        items = [("user", given)] if isinstance(given, str) else [_item(i) for i in _list(given)]
        return system + items
    return [("request", _text(request))]


def _response_messages(api: str, response: Any) -> list[tuple[str, str]]:
    """(role, text) of what a call answered, shaped as the next request repeats it."""
    if not isinstance(response, dict):
        return [("response", _text(response))] if response is not None else []
    if api == "chat":
        return [_chat_message(c.get("message")) for c in _list(response.get("choices")) if isinstance(c, dict)]
    if api == "messages":
        return [("assistant", _text(response.get("content")))]
    if api == "responses":
        return [_item(i) for i in _list(response.get("output"))]
    return [("response", _text(response))]


def _chat_message(message: Any) -> tuple[str, str]:
    """A chat or messages-API message: its role, and its text with its tool calls."""
    if not isinstance(message, dict):
        return "message", _text(message)
    parts = [_text(message.get("content"))]
    for call in _list(message.get("tool_calls")):
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(f"[tool call {function.get('name')}]\n{_arguments(function.get('arguments'))}")
    if isinstance(message.get("function_call"), dict):
        function = message["function_call"]
        parts.append(f"[tool call {function.get('name')}]\n{_arguments(function.get('arguments'))}")
    return str(message.get("role") or "message"), "\n".join(p for p in parts if p)


def _item(item: Any) -> tuple[str, str]:
    """One item of the Responses API (a message, a tool call, a tool's output, a reasoning summary)."""
    if not isinstance(item, dict):
        return "item", _text(item)
    kind = str(item.get("type") or "message")
    if "role" in item:
        return str(item["role"]), _text(item.get("content"))
    if kind.endswith("_call") and ("arguments" in item or "input" in item or "action" in item):
        given = item.get("arguments", item.get("input", item.get("action")))
        return "assistant", f"[{kind} {item.get('name') or ''}]\n{_arguments(given)}"
    if kind.endswith("_call_output"):
        return "tool", f"[{kind}]\n{_text(item.get('output'))}"
    if kind == "reasoning":
        return "assistant", "[reasoning]\n" + _text(item.get("summary") or item.get("content"))
    return kind, _text(item)


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its parts (text, tool calls and results, images named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (_part(p) for p in content) if t)
    return json.dumps(content, ensure_ascii=False)


def _part(part: Any) -> str:
    if not isinstance(part, dict):
        return _text(part)
    kind = str(part.get("type") or "")
    for key in ("text", "thinking", "refusal"):
        if isinstance(part.get(key), str):
            return part[key] if key == "text" else f"[{key}]\n{part[key]}"
    if kind == "tool_use":
        return f"[tool call {part.get('name')}]\n{_arguments(part.get('input'))}"
    if kind == "tool_result":
        return f"[tool result]\n{_text(part.get('content'))}"
    if "image" in kind or "audio" in kind or kind in ("file", "input_file", "document"):
        return f"[{kind}]"
    return json.dumps(part, ensure_ascii=False)


def _arguments(value: Any) -> str:
    """A tool call's arguments, each on its own lines (a JSON string is decoded, so code shows as code)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    if isinstance(value, dict):
        return "\n".join(
            f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in value.items()
        )
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _printable(name: str) -> str:
    """A file name the agent chose, its control and other unprintable characters escaped (a line break in a name
    would start a line of its own in the material)."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in name)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _json_object(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _skip_line(handle: IO[bytes]) -> int:
    """Read past the rest of an over-long line; returns the bytes skipped."""
    skipped = 0
    while piece := handle.readline(_BLOCK):
        skipped += len(piece)
        if piece.endswith(b"\n"):
            break
    return skipped


def _open(path: Path) -> IO[bytes] | None:
    """``path`` opened for reading when it is a regular file of one hard link (no link followed); else None."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
        os.close(fd)
        return None
    return open(fd, "rb", buffering=_BLOCK)


def _regular_size(path: Path) -> int | None:
    """The size of ``path`` when it is a regular file of one hard link (not a link), else None."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 else None


def material_digest(ctx: AuditContext) -> str:
    """A hash of everything :class:`Material` may read of the run: every source's name and size, and the bytes of
    the transcript and of the agent's files up to :data:`SCAN_BYTES` in all (streamed; what lies past them is never
    judged, since the files before them fill far more than the chunks judged)."""
    digest = hashlib.sha256()
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

"""Server-sent events as the three wire formats stream them: split as they arrive, written back, bounded.

An event is the lines up to a blank line; ``event:`` names it (Anthropic, Responses) and ``data:``
carries its JSON (OpenAI chat streams name none and end with ``data: [DONE]``). :class:`EventSplitter`
cuts a byte stream into events without ever holding more than :data:`MAX_EVENT_BYTES` of one: a longer
event is passed on as it came and read no further (its JSON is then unknown to the proxy).
"""

from __future__ import annotations

import json
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

from podium.services.llm.accounting import Usage
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "MAX_ASSEMBLED_CHARS",
    "MAX_EVENT_BYTES",
    "Assembler",
    "Event",
    "EventSplitter",
    "as_dict",
    "as_index",
    "event_bytes",
]

#: The most of one event that is held to be read (larger ones pass through unread).
MAX_EVENT_BYTES = 8 << 20


@dataclass
class Event:
    """One event: its raw bytes (blank line included), its name and its data as JSON (None when it is not JSON,
    ``[DONE]``, a comment or too large to read)."""

    raw: bytes
    name: str | None = None
    data: Any = None

    @property
    def type(self) -> str | None:
        """The event's type: its ``type`` field, else its name."""
        if isinstance(self.data, dict) and isinstance(self.data.get("type"), str):
            return str(self.data["type"])
        return self.name


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (events are read without trusting their shape)."""
    return value if isinstance(value, dict) else {}


def as_index(value: Any, default: int = 0) -> int:
    """``value`` when it is an index (an int, not a bool, not negative), else ``default``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def event_bytes(name: str | None, data: Any) -> bytes:
    """An event as it is written on the wire (``event:`` only when it has a name)."""
    head = f"event: {name}\n" if name else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


def _parse(raw: bytes) -> Event:
    name = None
    data: list[bytes] = []
    for line in raw.splitlines():
        if line.startswith(b"event:"):
            name = line[6:].strip().decode("utf-8", "replace")
        elif line.startswith(b"data:"):
            data.append(line[5:].removeprefix(b" "))
    payload = b"\n".join(data)
    value = None
    if payload and payload.strip() != b"[DONE]":
        try:  # what the provider streams: a deep event is no event, never a crash of the relay
            value = loads(payload, max_bytes=len(payload), max_depth=500)
        except UntrustedJSONError:
            value = None
    return Event(raw, name, value)


class EventSplitter:
    """Feed it the stream's bytes; it yields whole events. An event over :data:`MAX_EVENT_BYTES` is yielded in
    pieces as it came (``data`` None), so memory stays bounded whatever the stream sends."""

    def __init__(self) -> None:
        self._buffer = b""
        self._searched = 0  # the buffer holds no blank line before this
        self._oversized = False  # inside an event that is passed on unread

    def feed(self, chunk: bytes) -> Iterator[Event]:
        self._buffer += chunk
        while True:
            end, size = _boundary(self._buffer, max(0, self._searched - 3))  # a blank line may straddle chunks
            if end < 0:
                self._searched = len(self._buffer)
                if len(self._buffer) > MAX_EVENT_BYTES:
                    piece, self._buffer = self._buffer[:-3], self._buffer[-3:]
                    self._searched, self._oversized = 3, True
                    yield Event(piece)
                return
            raw, self._buffer = self._buffer[: end + size], self._buffer[end + size :]
            self._searched = 0
            if self._oversized:
                self._oversized = False
                yield Event(raw)
            else:
                yield _parse(raw)

    def finish(self) -> Iterator[Event]:
        """What is left when the stream ends (an event without its blank line)."""
        rest, self._buffer = self._buffer, b""
        if rest.strip():
            yield Event(rest) if self._oversized else _parse(rest)
        elif rest:
            yield Event(rest)


def _boundary(buffer: bytes, start: int) -> tuple[int, int]:
    """Where the first blank line from ``start`` is, and how long it is; (-1, 0) when there is none yet."""
    found = [(i, len(sep)) for sep in (b"\n\n", b"\r\n\r\n", b"\r\r") if (i := buffer.find(sep, start)) >= 0]
    return min(found) if found else (-1, 0)


#: The most text one assembled answer keeps (the stream itself passes whole).
MAX_ASSEMBLED_CHARS = 16 << 20


class Assembler:
    """Reads a stream's events, as one wire format writes them, into that format's non-streaming answer.

    Subclasses read each event's JSON (:meth:`take`); :meth:`add` keeps streamed text within
    :data:`MAX_ASSEMBLED_CHARS` and counts its bytes (the output a stream is metered at between its usage
    events). :meth:`answer` is the answer so far, complete once the stream has ended; :meth:`cut` ends it early."""

    def __init__(self) -> None:
        self.usage = Usage()
        self.streamed_bytes = 0
        self._ascii_bytes = 0
        self._dense_bytes = 0
        self.truncated = False
        self.error: str | None = None  # an error event the stream carried
        self._kept = 0
        self._pieces: dict[Hashable, list[str]] = {}

    def feed(self, event: Event) -> None:
        if isinstance(event.data, dict):
            self.usage.read(event.data)
            self.take(event.data, event.type)

    def take(self, data: dict[str, Any], kind: str | None) -> None:
        raise NotImplementedError

    def answer(self) -> dict[str, Any] | None:
        raise NotImplementedError

    def cut(self, message: str, budget: bool = True) -> bytes:
        """The events that end this stream early, as its format reports an error: for a passed ``budget``, or
        for a provider whose stream broke."""
        raise NotImplementedError

    def add(self, key: Hashable, more: Any) -> None:
        """Append streamed text (``more``, when a str) to the piece named ``key``, within the answer's bound."""
        if not isinstance(more, str) or not more:
            return
        encoded = more.encode("utf-8", "replace")
        self.streamed_bytes += len(encoded)
        dense = len(encoded) - len(more) + sum(1 for c in more if ord(c) >= 0x80)  # the bytes of non-ASCII text
        self._ascii_bytes += len(encoded) - dense
        self._dense_bytes += dense
        room = MAX_ASSEMBLED_CHARS - self._kept
        if room < len(more):
            self.truncated = True
            more = more[: max(0, room)]
        self._kept += len(more)
        self._pieces.setdefault(key, []).append(more)

    @property
    def streamed_tokens(self) -> int:
        """At least as many tokens as the text streamed so far holds: a token per
        :data:`~podium.services.llm.accounting.BYTES_PER_TOKEN` bytes of ASCII text, and one per byte of any other
        (a tokenizer may spend a token on each byte of dense non-ASCII text; counted at four bytes a token it would
        pass unmetered)."""
        return -(-self._ascii_bytes // 4) + self._dense_bytes

    def text(self, key: Hashable, start: Any = "") -> str:
        """The piece named ``key``: ``start`` (when a str) and what :meth:`add` appended to it."""
        return (start if isinstance(start, str) else "") + "".join(self._pieces.get(key, ()))

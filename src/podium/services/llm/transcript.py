"""The full record of a run's model calls: ``RUN/llm_transcript.jsonl`` (interface I1), written by the proxy only.

One JSON object a line, one line a call, appended when the call ends (refused calls too)::

    {"call": 1, "time": "2025-01-01T00:00:00.000+00:00", "api": "chat" | "messages" | "responses" | "other",
     "path": "/v1/chat/completions", "model": "gpt-4o" | null, "status": 200, "stream": true,
     "request": <the JSON body the agent sent, secrets redacted>,
     "response": <the JSON answer; for a stream, the answer assembled from its events in the same API's
                  non-streaming shape; null when none>,
     "error": null | "why the call failed or was refused", "truncated": false}

It lies in the run's folder beside ``llm_calls.jsonl``, outside every folder the agent can write, so
the agent cannot erase or rewrite it. Secrets are redacted from every string (and key): the key the
proxy adds, the values of podium's own environment variables that name a key, token, secret or
password, and whatever looks like an API key or an ``Authorization`` header. A line is at most
:data:`MAX_LINE_BYTES`: longer strings are cut in their middle (the longest first, to one common
length), and ``truncated`` says so. Readers must still treat the file as hostile-sized.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = ["MAX_LINE_BYTES", "REDACTED", "Transcript", "bounded", "redactor", "secrets_of"]

#: The longest line of the transcript, in bytes.
MAX_LINE_BYTES = 1 << 20
REDACTED = "[redacted by podium]"
_SHORTEST_CUT = 64  # strings are never cut below this many characters; the whole value is, if still too long
_SECRET_NAMES = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)
_SHORTEST_SECRET = 8  # shorter values are too common to redact everywhere
_PATTERNS = re.compile(
    r"|".join(
        (
            r"\bsk-[A-Za-z0-9_\-]{16,}",  # OpenAI, Anthropic (sk-ant-...), OpenRouter (sk-or-...)
            r"\b(?:gh[pousr]_|github_pat_)[A-Za-z0-9_]{20,}",
            r"\bhf_[A-Za-z0-9]{20,}",
            r"\bAKIA[0-9A-Z]{16}\b",
            r"\bxox[abprs]-[A-Za-z0-9\-]{10,}",
            r"\bAIza[0-9A-Za-z_\-]{30,}",
        )
    )
)
# A header or setting that carries a credential, quoted or not: its value goes, its name stays (a value shaped
# like a token: code such as ``api_key = os.environ[...]`` is left as it is).
_HEADERS = re.compile(
    r"(?i)(\b(?:authorization|proxy-authorization|x-api-key|api[-_]?key|x-goog-api-key)[\"']?\s*[:=]\s*[\"']?)"
    r"((?:bearer|basic|token)\s+)?([A-Za-z0-9._~+/=\-]{16,})"
)


def secrets_of(environ: Mapping[str, str], *more: str | None) -> list[str]:
    """The values to redact: ``more`` (the proxy's key) and those of ``environ``'s variables named like secrets."""
    values = {v for v in more if v}
    values |= {value for name, value in environ.items() if _SECRET_NAMES.search(name)}
    return sorted((v for v in values if len(v) >= _SHORTEST_SECRET), key=len, reverse=True)


def redactor(secrets: Iterable[str]) -> Any:
    """A function that returns a JSON value with every secret in its strings (and keys) replaced."""
    known = [s for s in secrets if s]
    exact = re.compile("|".join(re.escape(s) for s in known)) if known else None

    def text(value: str) -> str:
        if exact is not None:
            value = exact.sub(REDACTED, value)
        value = _PATTERNS.sub(REDACTED, value)
        return _HEADERS.sub(lambda m: f"{m.group(1)}{m.group(2) or ''}{REDACTED}", value)

    def walk(value: Any) -> Any:
        if isinstance(value, str):
            return text(value)
        if isinstance(value, list):
            return [walk(v) for v in value]
        if isinstance(value, dict):
            return {text(str(k)): walk(v) for k, v in value.items()}
        return value

    return walk


def _strings(value: Any, lengths: list[int]) -> None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            lengths.append(len(item))
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())


def _cut(value: Any, limit: int) -> Any:
    if isinstance(value, str):
        if len(value) <= limit:
            return value
        head = limit * 2 // 3
        tail = limit - head
        return f"{value[:head]}...[podium cut {len(value) - limit} characters]...{value[len(value) - tail :]}"
    if isinstance(value, list):
        return [_cut(v, limit) for v in value]
    if isinstance(value, dict):
        return {k: _cut(v, limit) for k, v in value.items()}
    return value


def _common_length(lengths: list[int], room: int) -> int:
    """The longest length L such that the strings cut to L fit in ``room`` characters."""
    lengths = sorted(lengths, reverse=True)
    total = sum(lengths)
    for i, length in enumerate(lengths):  # cut the i+1 longest to one length; the rest stay whole
        total -= length
        shared = (room - total) // (i + 1)
        following = lengths[i + 1] if i + 1 < len(lengths) else 0
        if shared >= following:
            return max(0, shared)
    return 0


def bounded(
    entry: dict[str, Any],
    fields: tuple[str, ...] = ("request", "response", "error", "model"),
    limit: int = MAX_LINE_BYTES,
) -> str:
    """``entry`` as one JSON line of at most ``limit`` bytes: the longest strings of ``fields`` are cut to a common
    length (``truncated`` set), and a field whose structure alone is too long becomes the start of its JSON."""
    line = json.dumps(entry)
    if len(line) + 1 <= limit:
        return line
    entry = {**entry, "truncated": True}
    lengths: list[int] = []
    for name in fields:
        _strings(entry.get(name), lengths)
    overhead = len(line) - sum(lengths)
    length = _common_length(lengths, max(0, limit - overhead - 4096))
    while length >= _SHORTEST_CUT:
        cut = {**entry, **{name: _cut(entry.get(name), length) for name in fields}}
        line = json.dumps(cut)
        if len(line) + 1 <= limit:
            return line
        length //= 2  # escapes made the strings longer than counted
    share = max(0, (limit - 4096) // (2 * len(fields)))
    line = json.dumps({**entry, **{name: json.dumps(entry.get(name))[:share] for name in fields}})
    return line if len(line) + 1 <= limit else json.dumps({k: v for k, v in entry.items() if k not in fields})


class Transcript:
    """Appends the calls' lines to one file (created without following a link); nothing when ``path`` is None."""

    def __init__(self, path: Path | None, secrets: Iterable[str] = ()) -> None:
        self.path = path
        self._redact = redactor(secrets)
        self._lock = threading.Lock()

    def write(self, entry: dict[str, Any]) -> None:
        """Append one call (the I1 keys), its request and response redacted and the line bounded."""
        if self.path is None:
            return
        entry = {
            **entry,
            "request": self._redact(entry.get("request")),
            "response": self._redact(entry.get("response")),
        }
        entry["error"] = self._redact(entry.get("error"))
        data = (bounded(entry) + "\n").encode()
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        with self._lock:
            fd = os.open(self.path, flags, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)

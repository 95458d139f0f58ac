"""A call as the proxy admits it: its connection read within bounds, its body parsed once as hostile JSON.

An agent (or anything in its sandbox) can send a body of any size, nesting and shape, send it a byte at a time,
or open connections and send nothing. :class:`Handler` reads a request within :data:`MAX_REQUEST_BYTES` and
:data:`READ_DEADLINE_SECONDS` (each read also waits at most the service's read timeout), and
:func:`parse_request` refuses a body with more JSON containers than a conversation has before parsing it, then
parses it once, bounded in depth (:mod:`podium.untrusted`). The cap on connections per run is the service's
(:class:`podium.services._http.UnixService`).
"""

from __future__ import annotations

import contextlib
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from podium.services._http import send_json
from podium.services.llm.accounting import Refused
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "MAX_CONTAINERS",
    "MAX_PARSES",
    "MAX_REQUEST_BYTES",
    "READ_DEADLINE_SECONDS",
    "Handler",
    "json_or_text",
    "parse_request",
]

#: The largest request body read: a long conversation with inline images fits; a body past it is refused (413)
#: from its Content-Length, before a byte of it is read.
MAX_REQUEST_BYTES = 8 << 20
#: The most JSON objects and arrays a request may hold: a conversation of thousands of turns with tool schemas
#: holds tens of thousands; a body of ``[{},{},...]`` built to cost memory in the parser holds millions.
MAX_CONTAINERS = 200_000
#: How many request bodies one run's proxy parses at once. A body at the caps (8 MiB, 200,000 objects) costs up to
#: ~100 MB while it is parsed; its connection's other bodies wait their turn, read but unparsed, so 32 connections
#: of such bodies hold ~256 MiB and four parses rather than 32 parses (~3 GB, measured).
MAX_PARSES = 4
#: The deepest nesting parsed (tool schemas nest a dozen levels).
MAX_DEPTH = 100
#: How long reading a request's body may take in all (a client sending a byte at a time is cut off).
READ_DEADLINE_SECONDS = 60.0
_LINGER_SECONDS = 2.0  # how long a refused request of unknown length may go on sending before the socket closes
_LINGER_BYTES = 1 << 20
_CHUNK = 1 << 16
_ANSWER_DEPTH = 500


def parse_request(body: bytes) -> dict[str, Any]:
    """The request as a JSON object, parsed once; :class:`Refused` (400) for a body that is not one, nests too deep
    or holds more containers than :data:`MAX_CONTAINERS` (counted before parsing, without building anything)."""
    containers = body.count(b"{") + body.count(b"[")
    if containers > MAX_CONTAINERS:
        raise Refused(
            400, f"the request holds {containers} JSON objects and arrays, over the {MAX_CONTAINERS} accepted"
        )
    try:
        payload = loads(body, max_bytes=MAX_REQUEST_BYTES, max_depth=MAX_DEPTH, what="the request body")
    except UntrustedJSONError as error:
        raise Refused(400, str(error)) from None
    if not isinstance(payload, dict):
        raise Refused(400, "the request body is not a JSON object")
    return payload


def json_or_text(data: bytes) -> Any:
    """A body (a request's, a provider's answer) as JSON, else as text (what a transcript can still show); a body
    nested too deep to parse is text too."""
    try:
        return loads(data, max_bytes=len(data), max_depth=_ANSWER_DEPTH)
    except UntrustedJSONError:
        return data.decode("utf-8", "replace") if data else None


class Handler(BaseHTTPRequestHandler):
    """One connection to the proxy (its ``server.owner`` is the :class:`~podium.services.llm.proxy.LLMProxy`)."""

    server: Any
    protocol_version = "HTTP/1.0"  # close-delimited responses: streams pass through as they arrive
    body: bytes | None = None  # the request's body once read to its end
    unread: bool = False  # the request has a body that was not read (unknown length, or over the cap)

    def read_body(self) -> bytes:
        """The request's body, read to its end; raises Refused when its length is unknown, wrong or over the cap."""
        if self.body is not None:
            return self.body
        self.unread = True
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            raise Refused(411, "send the request with a Content-Length, not chunked")
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise Refused(400, "bad Content-Length") from None
        if length < 0:
            raise Refused(400, "bad Content-Length")
        if length > MAX_REQUEST_BYTES:
            raise Refused(413, f"request body over {MAX_REQUEST_BYTES} bytes")
        deadline = time.monotonic() + READ_DEADLINE_SECONDS
        pieces: list[bytes] = []
        left = length
        while left > 0:
            if time.monotonic() > deadline:
                raise Refused(408, f"the request body took over {READ_DEADLINE_SECONDS:g} s to arrive")
            piece = self.rfile.read1(min(left, _CHUNK))
            if not piece:
                raise Refused(400, f"the request body ended {left} bytes short of its Content-Length")
            pieces.append(piece)
            left -= len(piece)
        self.body = b"".join(pieces)
        self.unread = False
        return self.body

    def linger(self) -> None:
        """After a refusal of a request whose body was not read: let the client finish sending (within bounds)
        before the socket closes, so that it reads the refusal instead of meeting a broken pipe."""
        with contextlib.suppress(OSError):
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self.connection.settimeout(_LINGER_SECONDS)
            drained = 0
            while drained < _LINGER_BYTES and (chunk := self.rfile.read1(65536)):
                drained += len(chunk)

    def log_message(self, format: str, *args: Any) -> None:  # the proxy keeps its own log
        pass

    def do_POST(self) -> None:
        self.server.owner._handle(self)

    def do_GET(self) -> None:
        if self.path == "/health":
            send_json(self, 200, {"ok": True, "provider": self.server.owner.config.provider.name})
        else:
            self.server.owner._refuse(self, 405, "only POST to the provider's completion paths is forwarded")

    do_PUT = do_DELETE = do_PATCH = do_GET

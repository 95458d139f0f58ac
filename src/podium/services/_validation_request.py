"""One request to the validation server (:mod:`podium.services.validation`) as HTTP carries it: the handler
that routes ``/validate``, ``/score-holdout`` and ``/health``; the call that replies once and logs one line;
the body copied to a file in chunks, and a multipart form's ``file`` part found and copied out (its name made
a safe local name)."""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from podium.services._http import send_json

_CHUNK = 1 << 20
#: What a multipart form may add to the submission's bytes (boundaries and part headers).
_FORM_OVERHEAD = 64 << 10


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _file_name(name: str | None) -> str:
    """A safe local name for the body: the client's base name (so messages and the ``.csv`` rule
    match what grading would see), ``submission.csv`` when none was sent."""
    if not name:
        return "submission.csv"
    base = re.sub(r"[^A-Za-z0-9._-]", "_", name.replace("\\", "/").rsplit("/", 1)[-1])[-100:].lstrip(".")
    return base or "submission"


class _Handler(BaseHTTPRequestHandler):
    server: Any  # the socket server; ``server.owner`` is the ValidationServer
    server_version = "podium-validation/1"
    timeout = 300  # seconds a read from the client may stall before the connection is dropped

    def log_message(self, format: str, *args: Any) -> None:  # the server keeps its own log
        pass

    def _reply(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        with contextlib.suppress(OSError):  # the client went away; the call is still logged
            send_json(self, status, payload, headers)
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path == "/health":
            owner = self.server.owner
            self._reply(200, {"ok": True, "competition": owner.competition.ref, "max_body_bytes": owner.max_body_bytes})
        else:
            self._reply(404, {"error": f"no such endpoint {self.path!r}; use POST /validate or GET /health"})

    def do_POST(self) -> None:
        owner = self.server.owner
        if self.path == "/score-holdout" and owner.holdout_log is not None:
            owner._handle_holdout(self)
            return
        if self.path != "/validate":
            self._reply(404, {"error": f"no such endpoint {self.path!r}; use POST /validate"})
            return
        owner._handle_validate(self)

    def do_PUT(self) -> None:
        self._reply(405, {"error": "use POST /validate or GET /health"})

    do_DELETE = do_PATCH = do_PUT


def _copy_body(handler: BaseHTTPRequestHandler, fd: int, size: int) -> int:
    """Copy the next ``size`` bytes of the request's body into ``fd``; the bytes copied."""
    received = 0
    while received < size:
        chunk = handler.rfile.read(min(_CHUNK, size - received))
        if not chunk:
            break
        view = memoryview(chunk)
        while view:
            view = view[os.write(fd, view) :]
        received += len(chunk)
    return received


def _is_form(handler: BaseHTTPRequestHandler) -> bool:
    return (handler.headers.get("Content-Type") or "").lower().startswith("multipart/form-data")


def _boundary(content_type: str) -> bytes | None:
    for item in content_type.split(";")[1:]:
        key, _, value = item.strip().partition("=")
        if key.lower() == "boundary" and value:
            return value.strip('"').encode("latin-1")
    return None


def _form_file(fd: int, size: int, content_type: str) -> tuple[int, int, str] | None:
    """(start, end, file name) of the form's ``file`` field in the body held by ``fd``; None if there is none."""
    boundary = _boundary(content_type)
    if boundary is None or size == 0:
        return None
    delimiter = b"--" + boundary
    with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as body:
        at = body.find(delimiter)
        while at >= 0:
            head = at + len(delimiter)
            if body[head : head + 2] == b"--":  # the closing delimiter
                return None
            head += 2
            end_of_head = body.find(b"\r\n\r\n", head, head + 16384)
            if end_of_head < 0:
                return None
            headers = body[head:end_of_head].decode("latin-1")
            start = end_of_head + 4
            end = body.find(b"\r\n" + delimiter, start)
            if end < 0:
                return None
            disposition = next((h for h in headers.split("\r\n") if h.lower().startswith("content-disposition")), "")
            if re.search(r';\s*name="?file"?(;|$|\s)', disposition):
                named = re.search(r'filename="([^"]*)"', disposition)
                return start, end, _file_name(named.group(1) if named else None)
            at = end + 2
    return None


def _copy_part(body: Path, part: tuple[int, int, str]) -> tuple[int, str, int]:
    """The form's file field copied out of the body file into a file of its own: (fd, name, size)."""
    start, end, name = part
    target = body.with_name(f"part-{name}")
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(body, "rb") as source:
        source.seek(start)
        left = end - start
        while left:
            chunk = source.read(min(_CHUNK, left))
            if not chunk:
                break
            os.write(fd, chunk)
            left -= len(chunk)
    return fd, name, end - start


class _Call:
    """One ``/validate`` request: replies once and logs one line."""

    def __init__(self, handler: _Handler, log: Callable[[dict[str, Any]], None]) -> None:
        self.handler = handler
        self._log = log
        self._started = time.monotonic()
        self.record: dict[str, Any] = {
            "time": _now(),
            "verdict": "error",
            "status": None,
            "error": None,
            "body_bytes": 0,
        }

    def finish(
        self,
        status: int,
        payload: dict[str, Any],
        verdict: str = "error",
        *,
        headers: dict[str, str] | None = None,
        **log_only: Any,
    ) -> None:
        self.handler._reply(status, payload, headers)
        self.record.update(status=status, verdict=verdict, error=payload.get("error"))
        if payload.get("warnings"):
            self.record["warnings"] = payload["warnings"]
        self.record.update(log_only)
        self.record["duration_s"] = round(time.monotonic() - self._started, 4)
        self._log(self.record)

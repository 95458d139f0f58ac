"""The harness's side of an episode's persistent shell: the socket the in-sandbox shell server
(``podium/sandbox_files/podium_shell.py``) connects to, and one request at a time over it.

Everything the server answers is written by code the policy controls (it runs as the agent, beside the
policy's commands), so it is hostile input: frames are bounded in size, read under a deadline, decoded as
JSON objects, and their fields checked before use.
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from podium.errors import HarnessError
from podium.untrusted import UntrustedJSONError, loads

__all__ = ["ShellChannel", "ShellGone"]

#: The most one answer may hold beyond its output (the JSON around it, the working folder).
_FRAME_SLACK = 1 << 16


class ShellGone(HarnessError):
    """The shell server is gone (the sandbox ended: its time limit, a kill, the policy's own doing)."""


class ShellChannel:
    """A listening Unix socket at ``path`` (mode 0666: the sandbox's user connects) for one shell server."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        os.chmod(path, 0o666)
        self._listener.listen(1)
        self._conn: socket.socket | None = None
        self.hello: dict[str, Any] = {}

    def accept(self, timeout: float, alive: Callable[[], bool]) -> None:
        """Wait up to ``timeout`` seconds for the server's connection and its hello, while ``alive()``; the
        listener is closed after the first connection, so nothing else connects to it."""
        deadline = time.monotonic() + timeout
        self._listener.settimeout(0.05)
        while True:
            try:
                conn, _ = self._listener.accept()
                break
            except TimeoutError:
                if not alive():
                    raise ShellGone("the sandbox ended before its shell server started") from None
                if time.monotonic() > deadline:
                    raise ShellGone(f"the shell server did not connect within {timeout:.0f} s") from None
        self._listener.close()
        self._conn = conn
        self.hello = self._receive(deadline, 4096)
        if self.hello.get("ready") is not True:
            raise ShellGone("the shell server did not say hello")

    def request(self, message: dict[str, Any], timeout: float, max_bytes: int) -> dict[str, Any]:
        """Send ``message`` and wait up to ``timeout`` seconds for its answer (a JSON object of at most
        ``max_bytes`` plus some slack)."""
        if self._conn is None:
            raise ShellGone("the shell is not connected")
        body = json.dumps(message).encode()
        try:
            self._conn.settimeout(max(timeout, 1.0))
            self._conn.sendall(struct.pack(">I", len(body)) + body)
        except OSError as exc:
            raise ShellGone(f"the shell server is gone ({exc})") from None
        return self._receive(time.monotonic() + timeout, max_bytes + _FRAME_SLACK)

    def _receive(self, deadline: float, limit: int) -> dict[str, Any]:
        head = self._exact(4, deadline)
        (size,) = struct.unpack(">I", head)
        if size > limit:
            raise ShellGone(f"the shell server sent an answer of {size} bytes, over the {limit} allowed")
        try:  # the sandbox's side is the policy's: bounded above, nested too deep is refused here
            answer = loads(self._exact(size, deadline), max_bytes=limit, what="the shell server's answer")
        except UntrustedJSONError as exc:
            raise ShellGone(str(exc)) from None
        if not isinstance(answer, dict):
            raise ShellGone("the shell server sent an answer that is not a JSON object")
        return answer

    def _exact(self, n: int, deadline: float) -> bytes:
        assert self._conn is not None
        data = bytearray()
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ShellGone("the shell server did not answer in time")
            self._conn.settimeout(left)
            try:
                chunk = self._conn.recv(min(n - len(data), 1 << 20))
            except TimeoutError:
                continue
            except OSError as exc:
                raise ShellGone(f"the shell server is gone ({exc})") from None
            if not chunk:
                raise ShellGone("the shell server closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        for sock in (self._conn, self._listener):
            if sock is not None:
                sock.close()
        self._conn = None

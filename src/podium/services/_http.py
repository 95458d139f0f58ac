"""The small HTTP-on-a-Unix-socket base that podium's per-run services share.

A run's services (the validation endpoint, the LLM proxy) each listen on a Unix socket that is
mounted into the sandbox, so an agent reaches them without any network. :class:`UnixService`
binds the socket (mode 0666: the sandbox's user connects), serves it from a daemon thread, and on
stop removes it; :func:`send_json` is the one way either answers.
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import stat
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["MAX_UNIX_PATH", "UnixService", "send_json"]

#: The longest socket path Linux binds: sun_path is 108 bytes, including the terminating NUL.
MAX_UNIX_PATH = 107


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, path: str, handler: type[BaseHTTPRequestHandler], owner: UnixService) -> None:
        self.owner = owner
        super().__init__(path, handler)


def send_json(
    handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
) -> None:
    """Answer with ``payload`` as JSON (raises OSError when the client has gone)."""
    body = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


class UnixService:
    """An HTTP service on a Unix socket, served in a background thread; subclasses set :attr:`handler`.

    The handler's ``self.server.owner`` is the service. :meth:`_open` and :meth:`_close` are the
    subclass's own set-up and clean-up around the socket's life.
    """

    handler: type[BaseHTTPRequestHandler]
    thread_name = "podium-service"

    def __init__(self, socket_path: Path) -> None:
        self.socket_path = Path(socket_path)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    def _open(self) -> None:
        """Before the socket is bound (make folders, temporary files)."""

    def _close(self) -> None:
        """After the socket is gone (remove what :meth:`_open` made)."""

    def start(self) -> Self:
        """Bind the socket (replacing a stale socket, never another kind of file) and start serving."""
        if self._server is not None:
            raise RuntimeError(f"{type(self).__name__} is already running")
        path = str(self.socket_path)
        if len(os.fsencode(path)) > MAX_UNIX_PATH:
            raise ValueError(f"socket path is too long for a Unix socket ({len(path)} > {MAX_UNIX_PATH}): {path}")
        self.socket_path.parent.mkdir(parents=True, exist_ok=True)
        if self.socket_path.exists() or self.socket_path.is_symlink():
            if not stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                raise FileExistsError(f"{path} exists and is not a socket; refusing to replace it")
            self.socket_path.unlink()  # a stale socket from an earlier run
        self._open()
        try:
            server = _Server(path, self.handler, self)
        except BaseException:
            self._close()
            raise
        os.chmod(path, 0o666)
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.1}, name=self.thread_name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and remove the socket file and what :meth:`_open` made. Safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISSOCK(self.socket_path.lstat().st_mode):
                self.socket_path.unlink()
        self._close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

"""The small HTTP-on-a-Unix-socket base that podium's per-run services share.

A run's services (the validation endpoint, the LLM proxy) each listen on a Unix socket that is
mounted into the sandbox, so an agent reaches them without any network. :class:`UnixService`
binds the socket (mode 0666: the sandbox's user connects), serves it from a daemon thread, and on
stop removes it; :func:`send_json` is the one way either answers. A service holds at most
:attr:`UnixService.max_connections` connections (each a thread; more are answered 503 at once), each read on
them waits at most :attr:`UnixService.read_timeout`, and a handler that fails is written to the service's
error log, so that nothing an agent sends can exhaust the service's threads or fail unseen.
"""

from __future__ import annotations

import contextlib
import json
import os
import socketserver
import stat
import sys
import threading
import traceback
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import TracebackType
from typing import Any, Self

__all__ = ["MAX_UNIX_PATH", "UnixService", "send_json"]

#: The longest socket path Linux binds: sun_path is 108 bytes, including the terminating NUL.
MAX_UNIX_PATH = 107
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
    b'{"error": {"message": "podium: too many connections open to this service; close some and retry"}}'
)


class _Server(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 128  # a burst of connections waits to be accepted (or refused 503), not refused by the kernel

    def __init__(self, path: str, handler: type[BaseHTTPRequestHandler], owner: UnixService) -> None:
        self.owner = owner
        self._slots = threading.BoundedSemaphore(owner.max_connections)
        super().__init__(path, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        """A connection past :attr:`UnixService.max_connections` is answered 503 at once and closed: the run's
        other connections (and the other runs' services) keep their threads."""
        if not self._slots.acquire(blocking=False):
            with contextlib.suppress(OSError):
                request.settimeout(1.0)
                request.sendall(_BUSY)
            self.shutdown_request(request)
            self.owner.log_error(f"refused a connection: {self.owner.max_connections} already open")
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            request.settimeout(self.owner.read_timeout)  # a client that stalls mid-request is cut off
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A handler that failed (a malformed request that broke it, a podium bug) is written down, not lost."""
        self.owner.log_error("a request's handler failed:\n" + traceback.format_exc(limit=8))


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
    #: The most connections served at once (each is a thread); more are answered 503 and closed.
    max_connections = 32
    #: How long one read or write on a connection may wait (a client that sends nothing is cut off then).
    read_timeout = 20.0

    def __init__(self, socket_path: Path, error_log: Path | None = None) -> None:
        self.socket_path = Path(socket_path)
        #: Where a failed handler or a refused connection is written down (else podium's stderr).
        self.error_log = error_log
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._error_lock = threading.Lock()

    def log_error(self, message: str) -> None:
        """One line (and a traceback's lines) in :attr:`error_log`, stamped with the time and the service."""
        line = f"{datetime.now(UTC).isoformat(timespec='milliseconds')} {type(self).__name__}: {message}\n"
        with self._error_lock, contextlib.suppress(OSError):
            if self.error_log is None:
                sys.stderr.write(line)
                return
            with open(self.error_log, "a", encoding="utf-8") as log:
                log.write(line)

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

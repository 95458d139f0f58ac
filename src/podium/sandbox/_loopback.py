"""TCP ports on a container's own loopback, relayed to Unix sockets of the harness.

A run's services listen on Unix sockets mounted into the sandbox. Agents built for MLE-bench expect
them on TCP instead (the validation endpoint at ``localhost:5000``), and their images may hold no
Python to run a relay of their own. So the harness makes the listening socket itself, inside the
container's network namespace: one thread enters that namespace (``setns`` changes only the calling
thread's), binds ``127.0.0.1:PORT``, and returns; every connection it accepts is piped to the Unix
socket, which is reached by its path on the host. The container still has no network: the port lives
on its private loopback and leads only to the service.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Mapping
from pathlib import Path

from podium.errors import HarnessError

__all__ = ["LoopbackRelay"]

_CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, _CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def _pipe(source: socket.socket, target: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            target.sendall(data)
    with contextlib.suppress(OSError):
        target.shutdown(socket.SHUT_WR)


class LoopbackRelay:
    """Listen on ``127.0.0.1:port`` inside the network namespace of process ``pid``, for each of ``ports``."""

    def __init__(self, pid: int, ports: Mapping[int, Path]) -> None:
        self.pid = pid
        self.ports = dict(ports)
        self._listeners: list[socket.socket] = []
        self._stopping = threading.Event()

    def start(self) -> LoopbackRelay:
        error: list[BaseException] = []
        thread = threading.Thread(target=self._bind, args=(error,), name="podium-loopback-bind")
        thread.start()
        thread.join()
        if error:
            raise HarnessError(
                f"cannot listen on the sandbox's loopback ({error[0]}); podium needs to run as root for it"
            )
        for listener, path in zip(self._listeners, self.ports.values(), strict=True):
            threading.Thread(target=self._accept, args=(listener, path), name="podium-loopback", daemon=True).start()
        return self

    def _bind(self, error: list[BaseException]) -> None:
        """In a thread of its own: enter the namespace, make the sockets, leave it again."""
        own = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            target = os.open(f"/proc/{self.pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
            try:
                _setns(target)
                try:
                    for port in self.ports:
                        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                        listener.bind(("127.0.0.1", port))
                        listener.listen(64)
                        self._listeners.append(listener)
                finally:
                    _setns(own)
            finally:
                os.close(target)
        except BaseException as exc:  # reported by start()
            error.append(exc)
        finally:
            os.close(own)

    def _accept(self, listener: socket.socket, path: Path) -> None:
        while not self._stopping.is_set():
            try:
                client, _ = listener.accept()
            except OSError:
                return
            service = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                service.connect(str(path))
            except OSError:
                client.close()
                service.close()
                continue
            for a, b in ((client, service), (service, client)):
                threading.Thread(target=_pipe, args=(a, b), name="podium-loopback-pipe", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        for listener in self._listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()

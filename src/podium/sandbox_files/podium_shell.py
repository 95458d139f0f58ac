"""podium's shell server for Gymnasium episodes: the sandbox's command, driven by the harness over a Unix socket.

Started once per episode as ``python3 /home/podium_shell.py SOCKET``; it connects to the harness's socket
(mounted into the sandbox), says hello, then answers one request at a time, each a frame (4-byte big-endian
length, then JSON):

* ``{"op": "bash", "command": str, "timeout": float, "max_bytes": int}``: the command runs in ``bash -c`` in
  the shell's working folder and environment, which persist from one command to the next (an ``EXIT`` trap
  saves them); stdout and stderr together, kept as a head and a tail of ``max_bytes`` each with the count of
  what was cut; killed with its process group at ``timeout``. Answers the exit code, the output, the command's
  own time, its CPU time and peak memory (``wait4``).
* ``{"op": "write", "path": str, "content": str}``: the file written (folders made), relative to the working
  folder.
* ``{"op": "exit"}``: the server ends, and with it the sandbox.

Background processes a command leaves (``cmd &``) keep running; the answer does not wait for them beyond a
short grace once the command itself has ended. The harness hanging up (an episode discarded) kills the command
in progress with its process group, and the server ends. A request it cannot carry out (not JSON, a field of
the wrong type, a command or path no system call takes) is answered ``{"error": ...}``, and the server goes on.
Standard library only: it runs with whatever python3 the sandbox has.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import resource
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

_MAX_REQUEST_BYTES = 64 << 20
_MAX_STATE_BYTES = 1 << 20
_BAD = object()
_GRACE_S = 0.2  # how long output is still read after the command ended while a background process holds the pipe
_DROP = ("SHLVL", "_", "PODIUM_SHELL_STATE")
_TRAP = (
    'trap \'__podium_rc=$?; { printf "%s\\0" "$PWD"; env -0; } > "$PODIUM_SHELL_STATE" 2>/dev/null; '
    "exit $__podium_rc' EXIT\n"
)


def _recv_exact(conn: socket.socket, n: int) -> bytes | None:
    data = bytearray()
    while len(data) < n:
        chunk = conn.recv(min(n - len(data), 1 << 20))
        if not chunk:
            return None
        data += chunk
    return bytes(data)


def _recv(conn: socket.socket) -> object:
    """The next request (any JSON value; ``_BAD`` for a frame that is not JSON), or None when the harness hung up."""
    head = _recv_exact(conn, 4)
    if head is None:
        return None
    (size,) = struct.unpack(">I", head)
    if size > _MAX_REQUEST_BYTES:
        return None
    body = _recv_exact(conn, size)
    if body is None:
        return None
    try:
        return json.loads(body)
    except ValueError:  # not JSON, or not UTF-8: the whole frame was read, so the next one is read as usual
        return _BAD


def _send(conn: socket.socket, message: dict) -> None:
    body = json.dumps(message).encode()
    conn.sendall(struct.pack(">I", len(body)) + body)


class Output:
    """A command's output as its first and last ``limit`` bytes, and how many bytes came in all."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.limit:
                del self.tail[: len(self.tail) - self.limit]

    def to_dict(self) -> dict:
        return {
            "head": self.head.decode("utf-8", "replace"),
            "tail": self.tail.decode("utf-8", "replace"),
            "total_bytes": self.total,
            "cut_bytes": self.total - len(self.head) - len(self.tail),
        }


class Shell:
    """The working folder and environment that persist from one command to the next."""

    def __init__(self) -> None:
        self.cwd = os.getcwd()
        self.env = {k: v for k, v in os.environ.items() if k not in _DROP}
        self.state_dir = tempfile.mkdtemp(prefix=".podium-shell-")

    def bash(self, command: str, timeout: float, max_bytes: int, conn: socket.socket | None = None) -> dict:
        state = os.path.join(self.state_dir, "state")
        if os.path.lexists(state):
            os.unlink(state)
        cwd = self.cwd if os.path.isdir(self.cwd) else os.environ.get("HOME", "/")
        started = time.monotonic()
        script = _TRAP + command
        try:
            proc = subprocess.Popen(
                ["/bin/bash", "-c", script],
                cwd=cwd,
                env={**self.env, "PODIUM_SHELL_STATE": state},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except OSError as exc:
            if exc.errno != errno.E2BIG:
                raise
            size = len(script.encode("utf-8", "surrogateescape"))
            return {
                "error": f"the command is {size} bytes, over what one command line may hold (128 KiB); write it "
                "to a file with write_file and run that"
            }
        output = Output(max_bytes)
        status, usage, timed_out = _follow(proc, output, started + max(0.0, timeout), conn)
        elapsed = time.monotonic() - started
        self._load(state)
        if os.WIFEXITED(status):
            code = os.WEXITSTATUS(status)
        else:
            code = 128 + os.WTERMSIG(status) if os.WIFSIGNALED(status) else -1
        return {
            "exit_code": None if timed_out else code,
            "timed_out": timed_out,
            "elapsed_s": round(elapsed, 6),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 6) if usage is not None else None,
            "max_rss_bytes": usage.ru_maxrss * 1024 if usage is not None else None,
            "cwd": self.cwd,
            **output.to_dict(),
        }

    def _load(self, state: str) -> None:
        """The working folder and environment the command left, where its EXIT trap saved them."""
        try:
            with open(state, "rb") as handle:
                data = handle.read(_MAX_STATE_BYTES + 1)
        except OSError:
            return
        if len(data) > _MAX_STATE_BYTES:
            return
        fields = data.decode("utf-8", "surrogateescape").split("\0")
        if len(fields) < 2 or not fields[0].startswith("/") or len(fields[0]) > 4096:  # PATH_MAX
            return
        env = {}
        for entry in fields[1:]:
            key, sep, value = entry.partition("=")
            if sep and key and key not in _DROP:
                env[key] = value
        self.cwd, self.env = fields[0], env

    def write(self, path: str, content: str) -> dict:
        target = os.path.join(self.cwd, path)
        try:
            folder = os.path.dirname(target)
            if folder:
                os.makedirs(folder, exist_ok=True)
            data = content.encode("utf-8", "surrogateescape")
            with open(target, "wb") as handle:
                handle.write(data)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path, a lone surrogate in the text
            return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "path": target}
        return {"ok": True, "bytes": len(data), "path": os.path.normpath(target)}


def _hung_up(conn: socket.socket | None) -> bool:
    """Whether the harness closed its end of ``conn`` (without waiting)."""
    if conn is None or not select.select([conn], [], [], 0)[0]:
        return False
    try:
        return conn.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


def _follow(
    proc: subprocess.Popen, output: Output, deadline: float, conn: socket.socket | None = None
) -> tuple[int, resource.struct_rusage | None, bool]:
    """Read ``proc``'s output until it ends (or ``deadline``, or the harness hanging up ``conn``: its process group
    is killed); (status, rusage, timed out)."""
    assert proc.stdout is not None  # started with stdout=PIPE
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    status: int | None = None
    usage: resource.struct_rusage | None = None
    ended_at = 0.0
    timed_out = False
    eof = False
    watched = [fd] if conn is None else [fd, conn.fileno()]
    while not eof:
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        ready, _, _ = select.select(watched, [], [], min(deadline - now, 0.05))
        if conn is not None and conn.fileno() in ready:
            if _hung_up(conn):
                timed_out = True  # nobody waits for the answer: the command is killed as at its timeout
                break
            watched = [fd]  # the harness sent before its answer came: read after it, as usual
            ready = [r for r in ready if r == fd]
        if ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if chunk:
                output.add(chunk)
            else:
                eof = True
            continue
        if status is None:
            pid, status_now, usage_now = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                status, usage, ended_at = status_now, usage_now, time.monotonic()
        elif time.monotonic() - ended_at > _GRACE_S:
            break  # a background process holds the pipe: the command itself is over
    while status is None and not timed_out:
        pid, status_now, usage_now = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, usage = status_now, usage_now
        elif time.monotonic() >= deadline or _hung_up(conn):
            timed_out = True
        else:
            time.sleep(0.002)
    if timed_out:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        if status is None:
            _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0  # reaped here, through wait4
    proc.stdout.close()
    return (status if status is not None else -1), usage, timed_out


def _answer(shell: Shell, request: dict, conn: socket.socket) -> dict:
    """The answer to one request (``request`` is the harness's, but nothing in it is taken on trust)."""
    op = request.get("op")
    if op == "bash":
        command, timeout, max_bytes = request.get("command"), request.get("timeout"), request.get("max_bytes")
        if not isinstance(command, str):
            return {"error": "a bash request's command must be a string"}
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout >= 0:
            return {"error": "a bash request's timeout must be a number of seconds"}
        if not isinstance(max_bytes, int) or isinstance(max_bytes, bool):
            return {"error": "a bash request's max_bytes must be a whole number"}
        if "\0" in command:
            return {"error": "the command holds a NUL character, which no command line can hold"}
        try:
            command.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError as exc:
            return {"error": f"the command cannot be written as bytes ({exc.reason} at character {exc.start})"}
        return shell.bash(command, min(float(timeout), 1e9), max_bytes, conn)
    if op == "write":
        path, content = request.get("path"), request.get("content")
        if not isinstance(path, str) or not isinstance(content, str):
            return {"ok": False, "error": "a write request's path and content must be strings"}
        return shell.write(path, content)
    return {"error": f"unknown op {str(op)[:50]!r}"}


def main() -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sys.argv[1])
    shell = Shell()
    _send(conn, {"ready": True, "pid": os.getpid(), "cwd": shell.cwd})
    while True:
        request = _recv(conn)
        if request is None:
            return 0
        if not isinstance(request, dict):
            answer = {"error": "a request is a JSON object"}
        elif request.get("op") == "exit":
            with contextlib.suppress(OSError):
                _send(conn, {"ok": True})
            return 0
        else:
            try:
                answer = _answer(shell, request, conn)
            except Exception as exc:  # the server stays for the next request, whatever this one was
                answer = {"error": f"{type(exc).__name__}: {exc}"}
        try:
            _send(conn, answer)
        except OSError:  # the harness hung up (while the command ran): nobody to answer
            return 0


if __name__ == "__main__":
    sys.exit(main())

"""Which podium process owns a per-run resource, so that a later podium can tell dead owners' leftovers.

A harness killed with SIGKILL cleans nothing up: its runs' temporary folders, cgroups and staging
folders stay behind. Each of them carries its owner's *token* in its name::

    <pid>-<start>-<boot>     e.g. 4242-1830412-5fd02417

the harness's pid, its start time in clock ticks after boot (field 22 of ``/proc/<pid>/stat``) and
the first 8 hex digits of the kernel's boot id. A pid alone is no identity: pids are reused
(``pid_max`` is 32768 on many hosts) and a killed process's pid answers ``os.kill(pid, 0)`` until
its parent reaps it. The three together name one process on one host for ever, so "is the owner
alive" is a lookup in ``/proc``, never a guess from a folder's age.

This module names temporary folders (:func:`mkdtemp`) and sweeps those of dead owners
(:func:`sweep_temp`); ``podium.sandbox._cgroup`` names cgroups the same way, and
:class:`podium.store.RunStore` guards staging folders with a lock their owner holds as well. :func:`exclusive`
is the one way a podium process waits its turn for work another may be doing (a build, a prepare).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["alive", "exclusive", "mkdtemp", "own_token", "start_time", "sweep_temp", "token_in", "token_of"]

_TOKEN = re.compile(r"(\d+)-(\d+)-([0-9a-f]{8})")
#: A temporary folder of a run: ``podium-<kind>-<token>-<random>``.
_TEMP = re.compile(r"podium-[a-z]+-(\d+-\d+-[0-9a-f]{8})-")


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks after boot; None when there is no such process (zombies included)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # after the command name, which may hold spaces and ')'
    if fields[0] in ("Z", "X"):  # killed, waiting to be reaped: no longer an owner
        return None
    return int(fields[19])


@functools.cache
def boot_id() -> str:
    """The first 8 hex digits of this boot's id (a token from before a reboot never matches)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip().replace("-", "")[:8].lower()
    except OSError:
        return "00000000"


def token_of(pid: int) -> str | None:
    """The token of the running process ``pid``; None when there is none."""
    started = start_time(pid)
    return None if started is None else f"{pid}-{started}-{boot_id()}"


@functools.cache
def _own_token(pid: int) -> str:
    return token_of(pid) or f"{pid}-0-{boot_id()}"


def own_token() -> str:
    """This process's token (a forked child has its own)."""
    return _own_token(os.getpid())


def token_in(name: str) -> str | None:
    """The owner token a resource's name carries, or None (a name from a podium before owner tokens)."""
    match = _TOKEN.search(name)
    return match.group(0) if match else None


def alive(token: str) -> bool:
    """Whether the process the token names is running now, on this host, since this boot."""
    match = _TOKEN.fullmatch(token)
    if match is None:
        return False
    pid, started, boot = match.groups()
    return boot == boot_id() and start_time(int(pid)) == int(started)


def mkdtemp(kind: str) -> Path:
    """A private temporary folder of this process, ``podium-<kind>-<token>-<random>`` (short: sockets go in it)."""
    return Path(tempfile.mkdtemp(prefix=f"podium-{kind}-{own_token()}-"))


def sweep_temp(folder: Path | None = None) -> list[Path]:
    """Remove the temporary folders of podium processes that no longer run; returns what was removed.

    Only folders this user owns are touched (root does not clear other users' folders), links never.
    """
    base = Path(folder or tempfile.gettempdir())
    removed: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            match = _TEMP.match(entry.name)
            if match is None or alive(match.group(1)):
                continue
            with contextlib.suppress(OSError):
                info = entry.lstat()
                if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
                    shutil.rmtree(entry)
                    removed.append(entry)
    return removed


@contextlib.contextmanager
def exclusive(lock: Path, waiting: str | None = None) -> Iterator[int]:
    """Hold ``lock`` (an ``flock`` on the file, made if missing, never through a link) for the block, waiting while
    another process holds it (``waiting`` is printed to stderr first); the kernel lets go when the holder ends,
    however it ends. Yields the descriptor; an ``OSError`` when the lock file cannot be opened."""
    fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                print(waiting, file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)

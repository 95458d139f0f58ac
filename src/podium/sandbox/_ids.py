"""The host user and group id an agent runs as: never root, never an id that a host account holds.

When podium runs as root, each run takes an id of its own from ``AGENT_ID_BASE`` on (2,000,000,000
and up: far above the ids that accounts, system users and the usual subordinate-id ranges of
rootless containers use), skipping any id that ``/etc/passwd``, ``/etc/group`` (through NSS) or
``/etc/subuid``/``/etc/subgid`` know. The id is held with a lock file for as long as the run lasts,
so two concurrent runs, in one podium process or in several, never share an id; a killed harness's
locks go with it. Files that the agent writes belong on the host to that id until the run ends,
when they are handed to the harness's user (:mod:`podium.sandbox._handback`).

When podium does not run as root, it cannot act as anyone else: the agent runs as the harness's user
(inside its namespaces, without capabilities).
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import os
import pwd
from collections.abc import Iterator
from pathlib import Path

from podium.errors import PodiumError

AGENT_ID_BASE = 2_000_000_000
AGENT_ID_SLOTS = 4096


def subordinate_ranges() -> list[range]:
    """The id ranges ``/etc/subuid`` and ``/etc/subgid`` hand to users (``name:start:count`` lines)."""
    ranges = []
    for path in ("/etc/subuid", "/etc/subgid"):
        with contextlib.suppress(OSError):
            for line in Path(path).read_text().splitlines():
                parts = line.strip().split(":")
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    ranges.append(range(int(parts[1]), int(parts[1]) + int(parts[2])))
    return ranges


def held_by_host(uid: int, subordinate: list[range] | None = None) -> bool:
    """Whether ``uid`` (as a user or a group id) is an account's, a group's or in a subordinate range."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return any(uid in r for r in (subordinate if subordinate is not None else subordinate_ranges()))


@contextlib.contextmanager
def agent_ids(lock_dir: Path) -> Iterator[tuple[int, int]]:
    """(uid, gid) for one run: a free id of podium's range as root, else the harness's own ids."""
    if os.getuid() != 0:
        yield os.getuid(), os.getgid()
        return
    lock_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    subordinate = subordinate_ranges()
    for uid in range(AGENT_ID_BASE, AGENT_ID_BASE + AGENT_ID_SLOTS):
        if held_by_host(uid, subordinate):
            continue
        fd = os.open(lock_dir / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid, uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise PodiumError(
        f"all {AGENT_ID_SLOTS} agent ids from {AGENT_ID_BASE} on are in use or held by host accounts. "
        "Fix: run fewer sandboxes at once."
    )


def probe_ids() -> tuple[int, int]:
    """An id as :func:`agent_ids` would give (not held): for a moment's check that bwrap works as that id."""
    if os.getuid() != 0:
        return os.getuid(), os.getgid()
    subordinate = subordinate_ranges()
    uid = next(u for u in range(AGENT_ID_BASE, AGENT_ID_BASE + AGENT_ID_SLOTS) if not held_by_host(u, subordinate))
    return uid, uid

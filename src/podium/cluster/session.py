"""Connecting the driver to a Ray cluster: an address where nothing listens refused within seconds, a Ray
Client server that cannot start a session asked again, and a usage error naming the address and the fix."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from podium.errors import UsageError

__all__ = ["CLIENT_SESSION_ATTEMPTS", "CONNECT_PROBE_S", "connect"]

CONNECT_PROBE_S = 3.0  # how long an address gets to accept a connection before it counts as dead


def connect(address: str) -> Any:
    """``ray`` connected to the cluster at ``address``; a usage error naming the address and the fix when that fails.

    An address where nothing listens is refused within seconds (a TCP probe), before Ray's own
    connection, which retries for many minutes; Ray is given one attempt instead of twenty.
    """
    os.environ.setdefault("RAY_NUM_REDIS_GET_RETRIES", "1")  # read when ray is first imported, just below
    try:
        import ray
    except ImportError:
        raise UsageError(
            "--cluster ray needs Ray. Fix: pip install 'podium[cluster]' (ray[client]>=2.9) on the driver and every node"
        ) from None
    if not ray.is_initialized():
        _probe(address)
        attempts = CLIENT_SESSION_ATTEMPTS if address.startswith("ray://") else 1
        for attempt in range(1, attempts + 1):
            try:
                ray.init(address=address, logging_level=logging.WARNING, log_to_driver=False, configure_logging=False)
                break
            except (ConnectionError, RuntimeError, ValueError) as error:
                text = str(error).strip()
                if not (address.startswith("ray://") and text.startswith(_SESSION_FAILED)):
                    raise UsageError(_no_cluster(repr(address), _reason(text))) from None
                if attempt == attempts:
                    raise UsageError(
                        f"the Ray Client server at {address!r} answered but could not start a session for this driver "
                        f"in {attempts} attempts ({_reason(text)}). Fix: see ray_client_server*.err in the head's "
                        "session logs (/tmp/ray/session_latest/logs), or pass the head's own address: --cluster "
                        "ray:HOST:6379"
                    ) from None
                # the head starts a server process per client session; under load it may miss Ray's own deadline
                print(
                    f"the Ray Client server at {address} could not start a session ({_reason(text)}); trying again "
                    f"({attempt + 1} of {attempts})",
                    file=sys.stderr,
                )
                with contextlib.suppress(Exception):
                    ray.shutdown()
                time.sleep(2.0 * attempt)
    return ray


#: How often a ``ray://`` driver asks the head's Ray Client server for a session before giving up.
CLIENT_SESSION_ATTEMPTS = 3
#: How Ray Client says the head could not start the driver's session (its traceback follows).
_SESSION_FAILED = "Initialization failure from server"


def _reason(text: str) -> str:
    """Ray's error in one bounded line: its first line, and its last where it has several (a server's traceback
    ends with the exception that counts)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()] or ["no reason given"]
    shown = lines[0] if len(lines) == 1 else f"{lines[0].rstrip(':')}: {lines[-1]}"
    return shown[:300]


def _no_cluster(shown: str, why: str) -> str:
    return (
        f"no Ray cluster answers at {shown} ({why}). Fix: start one on this machine with "
        "`ray start --head --port 6379` and pass --cluster ray:127.0.0.1:6379 (docs/scaling.md, 'A cluster on "
        "one machine'), or pass a running head's address: --cluster ray:HOST:6379, or ray://HOST:10001 (Ray Client)"
    )


def _probe(address: str) -> None:
    """Refuse at once an address where nothing accepts a connection (for ``auto``: the cluster this machine
    last started, as Ray's address file names it; none there, and Ray itself says so at once)."""
    target = address.removeprefix("ray://")
    if address == "auto":
        where = Path(os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()) / "ray" / "ray_current_cluster"
        try:
            target = where.read_text(encoding="utf-8").split()[0]
        except (OSError, IndexError):
            return
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_PROBE_S):
            pass
    except (OSError, ValueError) as error:
        why = f"nothing answers within {CONNECT_PROBE_S:g} s" if isinstance(error, TimeoutError) else error
        shown = repr(address) if address != "auto" else f"auto (this machine's last cluster, {target})"
        raise UsageError(_no_cluster(shown, f"{target}: {why}")) from None

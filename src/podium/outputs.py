"""One up-front check of where podium will write, so an ordinary mistake (a folder where a file is meant, a file
where a folder is meant, a folder podium may not write in) is a one-line refusal before any work starts: a
command's flag (``--runs-dir``) or an environment's keyword (``runs_dir=``) named in it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from podium.errors import UsageError
from podium.untrusted import printable

__all__ = ["output_dir", "output_file"]


def output_file(value: str | os.PathLike[str], flag: str) -> Path:
    """``value`` as a file podium can write (new or replaced); raises UsageError naming ``flag`` otherwise."""
    path = Path(value)
    shown = _named(flag, value)
    if path.is_dir():
        raise UsageError(f"{shown} is a folder: name a file (a new one, or one to replace) inside it")
    existing = _nearest(path.parent)  # a missing folder is made when the file is written, as it always was
    if not existing.is_dir():
        raise UsageError(f"{shown}: {printable(str(existing))} is a file, not a folder; name a file in a folder")
    _probe(existing, shown)
    return path


def output_dir(value: str | os.PathLike[str], flag: str) -> Path:
    """``value`` as a folder podium can write in (made if missing); raises UsageError naming ``flag`` otherwise."""
    path = Path(value)
    shown = _named(flag, value)
    if path.exists() and not path.is_dir():
        raise UsageError(f"{shown} is a file, not a folder: name a folder (new or existing)")
    existing = _nearest(path)
    if not existing.is_dir():
        raise UsageError(f"{shown}: {printable(str(existing))} is a file, not a folder")
    _probe(existing, shown)
    return path


def _nearest(path: Path) -> Path:
    """``path``, or the nearest folder above it that exists (where a missing one would be made)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _named(flag: str, value: str | os.PathLike[str]) -> str:
    """How a message names the value: ``--out FILE`` for a flag, ``runs_dir='FILE'`` for a keyword (``runs_dir=``)."""
    return f"{flag}{str(value)!r}" if flag.endswith("=") else f"{flag} {printable(str(value))}"


def _probe(folder: Path, shown: str) -> None:
    """Write and remove one empty file in ``folder``: the only test that holds for root, ACLs and read-only mounts."""
    try:
        with tempfile.TemporaryFile(dir=folder, prefix=".podium-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise UsageError(
            f"{shown}: cannot write in {printable(str(folder))} ({reason}); pick a folder you can write in"
        ) from None

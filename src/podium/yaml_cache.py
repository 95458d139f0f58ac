"""YAML files read once: each file's parsed content kept as JSON in the user's cache, keyed by its path and stat.

Every command that names a competition reads declarations, and ``podium list`` reads all of them: PyYAML builds
the objects in Python, about 2 ms a declaration, where JSON takes a tenth of that (issue 44). So a parsed file is
kept in ``$XDG_CACHE_HOME/podium/yaml-<version>.json`` under its absolute path, with the inode, size and modification
time it had; a file whose stat differs is parsed again, and the cache rewritten at the end of the process (to a
temporary name, renamed over, so two processes at once never leave half a file). A cache that cannot be read or
written costs only the time: the YAML is parsed as before. What YAML gives that JSON has not (a date, a mapping
with integer keys such as ``versions: {2: ...}``) is written tagged and comes back as YAML gave it; anything else
(a time of day, bytes) is not kept.

The cache holds what the user's own files said, in the user's own cache folder, which no sandbox mounts; its
content is read as JSON, never executed.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["load_yaml"]

#: Changes when what is kept changes (a new file).
_VERSION = 1
_DATE, _PAIRS = "__date__", "__pairs__"
_MAX_ENTRIES = 4000
_memory: dict[str, Any] | None = None
_dirty = False


def _cache_file() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / f"yaml-{_VERSION}.json"


def _entries() -> dict[str, Any]:
    """Every kept file's ``{"stamp": [...], "json": ...}`` (and ``data`` once read back), by path."""
    global _memory
    if _memory is None:
        try:
            loaded = json.loads(_cache_file().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            loaded = None
        _memory = loaded if isinstance(loaded, dict) else {}
    return _memory


def _stamp(path: Path) -> list[int]:
    info = path.stat()
    return [info.st_ino, info.st_size, info.st_mtime_ns]


def load_yaml(path: Path, parse: Callable[[str], Any]) -> Any:
    """``parse(text)`` of the file at ``path`` (a YAML reader), or what it gave before while the file is unchanged.
    What it returns is shared with later calls for the same file: the caller does not change it."""
    global _dirty
    key = str(path.absolute())
    stamp = _stamp(path)
    entry = _entries().get(key)
    if isinstance(entry, dict) and entry.get("stamp") == stamp and "json" in entry:
        if "data" not in entry:
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                entry["data"] = _decode(entry["json"])
        if "data" in entry:
            return entry["data"]
    data = parse(path.read_text(encoding="utf-8"))
    try:
        _entries()[key] = {"stamp": stamp, "json": _encode(data), "data": data}
    except TypeError:  # what JSON cannot hold: not kept, parsed again next time
        return data
    if not _dirty:
        _dirty = True
        import atexit

        atexit.register(_write)
    return data


def _encode(value: Any) -> Any:
    """``value`` as JSON holds it, tagged where JSON has no form for it; TypeError for what cannot be kept."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return {_DATE: value.isoformat()}
    if isinstance(value, list):
        return [_encode(item) for item in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _DATE not in value and _PAIRS not in value:
            return {k: _encode(v) for k, v in value.items()}
        return {_PAIRS: [[_encode(k), _encode(v)] for k, v in value.items()]}
    raise TypeError(type(value).__name__)


def _decode(value: Any) -> Any:
    if isinstance(value, list):
        return [_decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1 and isinstance(value.get(_DATE), str):
        return datetime.date.fromisoformat(value[_DATE])
    if len(value) == 1 and isinstance(value.get(_PAIRS), list):
        return {_decode(k): _decode(v) for k, v in value[_PAIRS]}
    return {k: _decode(v) for k, v in value.items()}


def _write() -> None:
    """The cache, written once at the end of a process that parsed something: the files still there (tests and
    ``podium new`` make and remove many), at most :data:`_MAX_ENTRIES`, the newest last."""
    target = _cache_file()
    kept = {k: {"stamp": e["stamp"], "json": e["json"]} for k, e in _entries().items() if os.path.exists(k)}
    with contextlib.suppress(OSError):
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(prefix=".yaml-", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(dict(list(kept.items())[-_MAX_ENTRIES:]), out, separators=(",", ":"))
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

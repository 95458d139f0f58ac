"""JSON that someone else wrote (a manifest, a record from a node, a request body, a log line), parsed bounded.

``json.loads`` alone is not enough for such text: a document of a few MiB of ``[[[[...`` raises
``RecursionError`` (not ``ValueError``, so ``except ValueError`` lets it crash the command), a 48 MB document of
``{}`` costs over a GB of objects, and a duplicated key is read as its last value by Python while another reader
may take the first. :func:`loads` checks the size before parsing, turns every failure into one
:class:`UntrustedJSONError` (a ``ValueError``), bounds the nesting depth (the parser stops at Python's recursion
limit on its own; a walk without recursion checks the tighter ``max_depth`` afterwards, only when the document
holds more brackets than that), and can refuse duplicated keys.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from podium.untrusted.files import read_bounded

__all__ = [
    "JSON_MAX_BYTES",
    "JSON_MAX_DEPTH",
    "RECORD_MAX_BYTES",
    "UntrustedJSONError",
    "iter_json_lines",
    "loads",
    "loads_object",
    "read_json",
]

#: The largest document :func:`loads` parses unless told otherwise.
JSON_MAX_BYTES = 4 << 20
#: The deepest nesting :func:`loads` accepts unless told otherwise (podium's own files nest a few levels).
JSON_MAX_DEPTH = 64
#: The largest run record (``record.json``) read: a node's or a bundle's is hostile input too.
RECORD_MAX_BYTES = 32 << 20


class UntrustedJSONError(ValueError):
    """A JSON document from outside that is not one podium accepts: the message says why, without its content."""


def loads(
    data: bytes | str,
    *,
    max_bytes: int = JSON_MAX_BYTES,
    max_depth: int = JSON_MAX_DEPTH,
    unique_keys: bool = False,
    what: str = "the document",
) -> Any:
    """``data`` parsed as JSON, refused with :class:`UntrustedJSONError` when it is larger than ``max_bytes``
    (checked before parsing), nested deeper than ``max_depth``, not JSON, or (``unique_keys``) an object names a
    key twice. ``what`` names the document in the message."""
    size = len(data.encode("utf-8", "surrogatepass") if isinstance(data, str) and not data.isascii() else data)
    if size > max_bytes:
        raise UntrustedJSONError(f"{what} is {size} bytes, over the {max_bytes} bytes accepted")
    hook = _unique_object if unique_keys else None
    try:
        value = json.loads(data, object_pairs_hook=hook)
    except RecursionError:
        raise UntrustedJSONError(f"{what} nests too deep to read") from None
    except _DuplicateKey as error:
        raise UntrustedJSONError(f"{what} names the key {str(error)[:80]!r} twice in one object") from None
    except (ValueError, TypeError) as error:  # JSONDecodeError, undecodable bytes
        raise UntrustedJSONError(f"{what} is not valid JSON ({str(error)[:120]})") from None
    brackets = data.count("[") + data.count("{") if isinstance(data, str) else data.count(b"[") + data.count(b"{")
    if brackets > max_depth and isinstance(value, dict | list) and _deeper_than(value, max_depth):
        raise UntrustedJSONError(f"{what} nests deeper than {max_depth} levels")
    return value


def read_json(path: str | os.PathLike[str], *, max_bytes: int = JSON_MAX_BYTES, **options: Any) -> Any:
    """:func:`loads` of the regular file ``path`` (opened without following a link, read at most one byte past
    ``max_bytes``); a link, a folder, a FIFO or a missing file is an :class:`UntrustedJSONError` too."""
    data = read_bounded(path, max_bytes + 1)
    if data is None:
        what = options.get("what", "the document")
        raise UntrustedJSONError(f"{what} is not a regular file that can be read (a link, a folder or missing)")
    return loads(data, max_bytes=max_bytes, **options)


def loads_object(data: bytes | str, **options: Any) -> dict[str, Any]:
    """:func:`loads` of a document that must be a JSON object."""
    value = loads(data, **options)
    if not isinstance(value, dict):
        raise UntrustedJSONError(f"{options.get('what', 'the document')} is not a JSON object")
    return value


def iter_json_lines(
    lines: Iterable[bytes | str], *, max_line: int = JSON_MAX_BYTES, max_depth: int = JSON_MAX_DEPTH
) -> Iterator[dict[str, Any] | None]:
    """Each line of a JSON-lines log as an object, or None for a line that is not one (too long, too deep, not
    JSON, not an object): the caller decides whether such a line counts against the log. Blank lines are skipped."""
    for line in lines:
        if not line.strip():
            continue
        try:
            value = loads(line, max_bytes=max_line, max_depth=max_depth)
        except UntrustedJSONError:
            yield None
            continue
        yield value if isinstance(value, dict) else None


class _DuplicateKey(Exception):
    pass


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` nests containers deeper than ``limit`` (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False

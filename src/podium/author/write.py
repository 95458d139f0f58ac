"""Writing a declaration a human will edit: ``competition.yaml`` with its keys in :data:`podium.schema.FIELDS`'
order, each top-level key with its one-line meaning, and comments saying what was inferred and why; then the
folder, complete or not at all.

Values are plain YAML (mappings, lists, scalars); :class:`Commented` puts a comment beside a nested value. A
short mapping or list is written on one line (``{kind: float, range: [0, 1]}``), a long one as a block. The text
is read back and compared with what was meant to be written, so an emitter bug is never a wrong declaration.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from podium import schema
from podium.errors import HarnessError

__all__ = ["Commented", "clean", "plain", "render", "write_folder"]

_FLOW_WIDTH = 100
_COMMENT_WIDTH = 110


@dataclass(frozen=True)
class Commented:
    """A value with the comment written beside it (or above it, for a block)."""

    value: Any
    comment: str


def clean(text: str) -> str:
    """``text`` as it can be written to a UTF-8 file: a lone surrogate becomes U+FFFD."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace") if _has_surrogate(text) else text


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def plain(value: Any) -> Any:
    """``value`` without its comments: what a YAML reader gives back."""
    if isinstance(value, Commented):
        return plain(value.value)
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def _cleaned(value: Any) -> Any:
    if isinstance(value, Commented):
        return Commented(_cleaned(value.value), clean(value.comment))
    if isinstance(value, Mapping):
        return {_cleaned(k): _cleaned(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_cleaned(v) for v in value]
    return clean(value) if isinstance(value, str) else value


def _scalar(value: Any) -> str:
    """One scalar as YAML writes it inside a flow collection (so ``{id}`` or ``a, b`` is quoted)."""
    text = yaml.safe_dump([value], allow_unicode=True, width=10**9, default_flow_style=True).strip()
    return text[1:-1]


def _flow(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_scalar(k)}: {_flow(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(v) for v in value) + "]"
    return _scalar(value)


def _comment_lines(text: str, indent: str) -> list[str]:
    words, lines, line = clean(text).split(), [], ""
    for word in words:
        if line and len(indent) + len(line) + len(word) + 3 > _COMMENT_WIDTH:
            lines.append(f"{indent}# {line}")
            line = ""
        line = f"{line} {word}".strip()
    return [*lines, f"{indent}# {line}"] if line else lines


def _holds_mappings(value: Any) -> bool:
    """A mapping of mappings, or a list of them, is a block (its entries may each be one line)."""
    items = value.values() if isinstance(value, Mapping) else value
    return any(isinstance(v, Mapping) for v in items)


def _has_comment(value: Any) -> bool:
    if isinstance(value, Commented):
        return True
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list | tuple) else ()
    return any(_has_comment(v) for v in items)


def _entry(key: str | None, value: Any, indent: str, comment: str = "") -> list[str]:
    """The lines of ``key: value`` (``key`` None: a list item) at ``indent``."""
    if isinstance(value, Commented):
        return _entry(key, value.value, indent, value.comment)
    head = f"{indent}- " if key is None else f"{indent}{_scalar(key)}:"
    flat = plain(value)
    is_block = isinstance(flat, Mapping | list) and flat
    one_line = None if is_block else _flow(flat)
    if is_block and not _has_comment(value) and not _holds_mappings(flat):
        candidate = _flow(flat)
        one_line = candidate if len(indent) + len(str(key)) + len(candidate) <= _FLOW_WIDTH else None
    if one_line is not None:
        text = f"{head} {one_line}" if key is not None else f"{head}{one_line}"
        if comment and len(text) + len(comment) + 4 <= _COMMENT_WIDTH and "\n" not in comment:
            return [f"{text}  # {clean(comment)}"]
        return [*(_comment_lines(comment, indent) if comment else []), text]
    lines = _comment_lines(comment, indent) if comment else []
    inner = indent + "  "
    if isinstance(flat, list) and not any(isinstance(v, Mapping | list) for v in flat):
        return [*lines, *_wrapped(head, [_scalar(v) for v in flat], inner)]
    if isinstance(value, Mapping):
        body = [line for k, v in value.items() for line in _entry(str(k), v, inner)]
    else:
        body = [line for item in value for line in _entry(None, item, inner)]
    if key is None:  # a list item that is a block: its first line beside the dash
        return [*lines, f"{indent}- {body[0].strip()}", *body[1:]]
    return [*lines, head, *body]


def _wrapped(head: str, items: list[str], inner: str) -> list[str]:
    """A long list of scalars as a flow sequence over several lines."""
    lines, line = [], f"{head} ["
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "]")
        if len(line) + len(piece) + 1 > _FLOW_WIDTH and not line.endswith("["):
            lines.append(line)
            line = f"{inner}{piece}"
        else:
            line = f"{line}{'' if line.endswith('[') else ' '}{piece}"
    return [*lines, line]


def render(declaration: Mapping[str, Any], notes: Mapping[str, list[str]], header: list[str]) -> str:
    """competition.yaml's text: ``header`` comment lines, then each field in schema order with its meaning and
    ``notes`` (comment lines above it, saying what was inferred)."""
    declaration = _cleaned(declaration)
    order = {f.key: i for i, f in enumerate(schema.FIELDS)}
    lines = [line for text in header for line in _comment_lines(text, "")]
    for key in sorted(declaration, key=lambda k: order[k]):
        lines += [line for note in notes.get(key, ()) for line in _comment_lines(note, "")]
        value = declaration[key]
        meaning = schema.field(key).comment
        if isinstance(value, Commented):
            value, meaning = value.value, f"{meaning}; {value.comment}"
        lines += _entry(key, Commented(value, meaning), "")
    text = "\n".join(lines) + "\n"
    if yaml.safe_load(text) != plain(declaration):
        raise HarnessError("podium new wrote a competition.yaml that does not read back as meant (a bug in podium)")
    return text


def write_folder(target: Path, files: Mapping[str, str]) -> None:
    """Write ``files`` (name -> text) as the folder ``target``: built beside it under a temporary name and renamed
    into place, so the folder is there complete or not at all (a crash leaves only the temporary one, removed
    here on any error)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.new-", dir=target.parent))
    try:
        for name, text in files.items():
            path = staging / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(clean(text), encoding="utf-8")
        os.chmod(staging, 0o755)
        if target.exists():
            raise FileExistsError(f"{target} appeared while podium new wrote it")
        os.rename(staging, target)  # fails if target appeared meanwhile: nothing is replaced
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise

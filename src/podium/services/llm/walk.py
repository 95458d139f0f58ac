"""Every string of a request read where it sits: a URL the provider could fetch is refused wherever it is, and the
model names are gathered for the policy to check.

A provider fetches what a request points it at, in fields each API names its own way (chat's ``image_url.url``,
OpenRouter's ``file.file_data`` (PDFs) and ``video_url``, Anthropic's ``url`` sources, the Responses API's
``image_url`` and ``file_url``) and in fields added after this was written. So rather than list those fields,
:func:`walk_request` reads every string of the body, at any depth, and refuses one spelt as a URL of any scheme but
``data:``, however it is spelt: in any case, after blanks, control or invisible characters, with tabs or newlines
inside (URL parsers drop them), in full-width letters, with backslashes for slashes, as ``//host`` with no scheme
or ``http:host`` with no slashes. Spared, because no provider fetches them, are text and the model's own output:
a string whose key is one of :data:`TEXT_KEYS` (a message's ``content``, a part's ``text``, a tool call's
``arguments``, a tool's ``output``, ...), the ``input`` of an Anthropic ``tool_use`` block, and base64 in the fields
that carry inline bytes (:data:`BLOB_KEYS`; an MP3's base64 starts with ``//``). A field that holds a URL or
inline data (:func:`holds_url`: ``url``, ``image_url``, ``fileUri``, ... and ``file_data``) must hold a ``data:``
URL or base64, whatever else it looks like (``example.com/a.png`` too).

The strings under a ``model`` or ``models`` key are the model names, returned with where they are; an object
there is refused (a name is a string). Inside a tool's JSON schema and ``metadata`` the keys are the agent's own,
so nothing there names a model (a tool may well have a parameter called ``model``), and the values a schema gives
as examples of its data (:data:`SCHEMA_VALUES`: ``default``, ``examples``, ``enum``, ``const``) are spared, as
text is (a parameter's default may well be a URL, which no provider fetches); its other strings are still checked
(a ``$ref`` or ``$id`` could be resolved remotely).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from typing import Any

from podium.services.llm.accounting import Refused

__all__ = ["BLOB_KEYS", "SCHEMA_VALUES", "TEXT_KEYS", "holds_url", "looks_like_url", "walk_request"]

#: Keys whose strings are text the model reads, or its own earlier output: never fetched.
TEXT_KEYS = frozenset({
    "text", "content", "arguments", "input", "output", "instructions", "system", "prompt", "suffix", "stop",
    "description", "thinking", "reasoning", "reasoning_content", "summary", "refusal", "partial_json", "title",
    "context", "cited_text", "definition", "$schema",
})  # fmt: skip
#: Keys that hold inline bytes (base64) or a provider's opaque token: base64 passes, a URL does not.
BLOB_KEYS = frozenset({"data", "signature", "encrypted_content"})
_MODEL_KEYS = frozenset({"model", "models"})
#: Inside a tool's JSON schema: the values it gives as examples of its data, read as text.
SCHEMA_VALUES = frozenset({"default", "examples", "enum", "const"})
#: Objects whose keys are the agent's own names (a tool's JSON schema, metadata): they name no model.
_OWN_KEYS = frozenset({"parameters", "input_schema", "schema", "metadata"})
_HEAD = 48  # the visible characters that decide whether a string is a URL
_LOOKED_AT = 64 * _HEAD  # the characters read for them, once the junk no parser keeps is gone
#: A URL holds a colon or two slashes: these, and the characters NFKC folds into them (full-width, small forms).
_MARKS = re.compile("[:/\\\\\u2100\u2101\u2105\u2106\u2a74\ufe13\ufe55\ufe68\uff0f\uff1a\uff3c]")
#: Characters a URL parser drops, or a reader never sees, wherever they are: controls, surrogates, the invisible
#: format characters (removed in one pass, before the slower look at each character that is left).
_JUNK = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb\ud800-\udfff\U000e0000-\U000e0fff]+"
)
#: Any scheme followed by a slash (``https://``, ``file:/etc``, ``https:\\host``); no scheme but two slashes
#: (``//host``, ``\\host``); or a scheme that fetches without slashes (``http:host``).
_URL = re.compile(
    r"[a-z][a-z0-9+.\-]*:[/\\]|[/\\]{2}"
    r"|(?:https?|ftps?|sftp|wss?|file|gs|s3[an]?|hdfs|smb|nfs|gopher|ldaps?|tftp|dict|jar|blob|git|ssh|rsync):"
)
_BASE64 = re.compile(r"[A-Za-z0-9+/=_\-\s]*")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$\-]{0,39}")
_SHOWN = 240  # of a field's path in a refusal


def looks_like_url(value: str) -> bool:
    """Whether ``value`` would be read as a URL (any scheme but ``data:``), however it is spelt."""
    head = value[:_HEAD]
    if head.isascii() and head.isprintable() and not head.startswith(" "):  # the common case, read as it is
        if ":" not in head and "/" not in head and "\\" not in head:
            return False
        head = head.lower()
    elif _MARKS.search(value) is None:
        return False
    else:
        head = _head(value)
    return not head.startswith("data:") and _URL.match(head) is not None


def _head(value: str) -> str:
    """The first :data:`_HEAD` characters of ``value`` as a URL parser would read them, in lower case: leading
    blanks dropped, and (NFKC-folded) every control, format, surrogate, private, unassigned or combining character
    among the first :data:`_LOOKED_AT` after :data:`_JUNK` went."""
    kept: list[str] = []
    for char in _JUNK.sub("", value).lstrip()[:_LOOKED_AT]:
        for folded in unicodedata.normalize("NFKC", char):
            if unicodedata.category(folded)[0] not in "CM" and (kept or not folded.isspace()):
                kept.append(folded.lower())
        if len(kept) >= _HEAD or (kept and not kept[-1].isascii()):  # a URL starts in ASCII: decided here
            break
    return "".join(kept)


def holds_url(key: str | None) -> bool:
    """Whether a field named ``key`` holds a URL or the data itself (``url``, ``image_url``, ``video_url``,
    ``server_url``, ``fileUri``, ... in any case or spelling, and OpenRouter's ``file_data``)."""
    if key is None:
        return False
    plain = key.lower().replace("_", "").replace("-", "")
    return plain.endswith(("url", "uri")) or plain == "filedata"


@functools.lru_cache(maxsize=4096)
def _role(key: str | None, own: bool = False) -> str:
    """How a string under ``key`` is read (``own``: inside a schema or metadata): ``text``, ``url``
    (:func:`holds_url`), ``blob``, ``name`` (a model's) or ``plain``."""
    if key in TEXT_KEYS or (own and key in SCHEMA_VALUES):
        return "text"
    if holds_url(key):
        return "url"
    return "blob" if key in BLOB_KEYS else "name" if key in _MODEL_KEYS else "plain"


def _inline(value: str) -> bool:
    """A ``data:`` URL or base64: bytes given in the request, nothing to fetch."""
    if looks_like_url(value):
        return False
    return _head(value).startswith("data:") or _BASE64.fullmatch(value) is not None


def walk_request(payload: Any, *, tool_use: bool = False) -> list[tuple[str, str]]:
    """Refuse (:class:`Refused`, 400, naming the field) a request that holds a URL the provider could fetch; return
    the model names it carries, each with where it is (``models[1]``). ``tool_use``: the request is Anthropic's,
    whose ``tool_use`` blocks' ``input`` is spared."""
    names: list[tuple[str, str]] = []
    # (value, where: (the parent's where, a key or an index) or None, the nearest key, inside the agent's own names)
    stack: list[tuple[Any, Any, str | None, bool]] = [(payload, None, None, False)]
    while stack:
        value, where, key, own = stack.pop()
        inside: list[tuple[Any, Any, str | None, bool]] = []  # its objects and lists, walked after its strings
        if isinstance(value, dict):
            if key in _MODEL_KEYS and not own:
                raise Refused(400, f"{_where(where)} names a model with an object; name it with a string",
                              field=_where(where))  # fmt: skip
            spared = tool_use and value.get("type") == "tool_use"  # its input: the model's own call of a tool
            for child, item in value.items():
                if isinstance(item, str):
                    _check(item, (where, child), _role(child, own), own, names)
                elif isinstance(item, dict | list) and not (spared and child == "input"):
                    inside.append((item, (where, child), child, own or child in _OWN_KEYS))
        elif isinstance(value, list):
            role = _role(key, own)
            for index, item in enumerate(value):
                if isinstance(item, str):
                    if role != "text":  # a list of texts (embeddings' input, stop sequences) is spared
                        _check(item, (where, index), role, own, names)
                elif isinstance(item, dict | list):
                    inside.append((item, (where, index), key, own))
        stack.extend(reversed(inside))
    return names


def _check(value: str, where: Any, role: str, own: bool, names: list[tuple[str, str]]) -> None:
    if role == "text":
        return
    if role == "name" and not own:
        names.append((_where(where), value))
    if role == "url":
        fetched = not _inline(value)
    elif role == "blob":
        fetched = _BASE64.fullmatch(value) is None and looks_like_url(value)
    else:
        fetched = looks_like_url(value)
    if fetched:
        shown = _where(where)
        raise Refused(400, f"{shown} holds a URL ({_head(value)[:80]!a}...) that the provider would fetch; only "
                      "data: URLs and text pass podium's proxy. Fix: give it inline (base64, a data: URL) or as text",
                      field=shown)  # fmt: skip


def _where(where: Any) -> str:
    """A field's path as the refusals name it (``messages[0].content[1].file.file_data``), escaped, at most
    :data:`_SHOWN` characters."""
    steps: list[str | int] = []
    while where is not None:
        where, step = where
        steps.append(step)
    shown = ""
    for step in reversed(steps):
        if isinstance(step, int):
            shown += f"[{step}]"
        elif _NAME.fullmatch(step):
            shown += f".{step}" if shown else step
        else:
            shown += f"[{step[:40]!a}]"
    return shown if len(shown) <= _SHOWN else f"{shown[:100]}...{shown[-(_SHOWN - 103) :]}"

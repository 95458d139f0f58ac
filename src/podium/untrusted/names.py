"""Text from outside (a file name an agent chose, a value from a bundle) made safe to print."""

from __future__ import annotations

import re

__all__ = ["printable"]

#: What a terminal or a Markdown renderer acts on: C0 and C1 controls, DEL, line and paragraph separators, the
#: bidirectional marks and overrides that reorder what is shown, and the zero-width characters that hide text, and lone surrogates (undecodable bytes of a
#: file name, which a terminal's encoder refuses).
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\x1b": "\\e"}


def printable(text: str, limit: int | None = None) -> str:
    """``text`` safe to print on one line of a terminal or a Markdown page: every control character (escape
    sequences, newlines, carriage returns, bidirectional overrides, zero-width characters) written out as ``\\n``,
    ``\\e``, ``\\x07``, ``\\u202e``, so a name can neither move the cursor nor start a line of its own nor hide
    part of itself. With ``limit``, at most that many characters of ``text`` are kept (then ``...``); the cut is
    made before escaping, so an escape is never cut in half."""
    cut = limit is not None and len(text) > limit
    if cut:
        text = text[:limit]
    if _CONTROLS.search(text):
        text = _CONTROLS.sub(_escape, text)
    return text + "..." if cut else text


def _escape(match: re.Match[str]) -> str:
    char = match.group(0)
    return _NAMED.get(char) or (f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")

"""Sizes and durations as people write them: ``16G``, ``24h``; and back into words for messages."""

from __future__ import annotations

import math

from podium.errors import PodiumError

__all__ = ["duration", "parse_size", "seconds_text", "size_text", "time_text"]

_SIZE_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str | int | None) -> int | None:
    """'16G' / '512M' / '16GiB' / '16GB' / bytes -> bytes (binary units). Does not check the sign."""
    if text is None or (isinstance(text, int) and not isinstance(text, bool)):
        return text
    value = str(text).strip().upper().replace(" ", "").removesuffix("B").removesuffix("I")
    try:
        if value and value[-1] in _SIZE_UNITS:
            number = float(value[:-1])
            if math.isfinite(number):
                return int(number * _SIZE_UNITS[value[-1]])
        else:
            return int(value)
    except ValueError:
        pass
    raise PodiumError(f"cannot read the size {text!r}; write it like 16G, 512M or a number of bytes")


def time_text(seconds: float) -> str:
    """Seconds in the largest unit that holds them whole: 36000 -> 10h, 5400 -> 90m, 1.5 -> 1.5s."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds / size:g}{unit}"
    return f"{seconds:g}s"


def size_text(size: int) -> str:
    """Bytes in the largest binary unit that holds them whole: 17179869184 -> 16G."""
    for unit, scale in (("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if size >= scale and size % scale == 0:
            return f"{size // scale}{unit}"
    return f"{size} bytes"


def duration(seconds: float) -> str:
    """A clock reading of elapsed time: 3725 -> 1h02m, 185 -> 3m05s."""
    hours, rest = divmod(int(seconds), 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def seconds_text(seconds: float) -> str:
    """How long something took, as precisely as it matters: 0.03s, 42s, 3m05s."""
    return f"{seconds:.2f}s" if seconds < 10 else f"{seconds:.0f}s" if seconds < 60 else duration(seconds)

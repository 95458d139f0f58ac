"""What the policy reads: the observation space, the first observation (the task, the data's listing) and a
step's (exit code, output cut to fit, time).

Observations are text. The space is a :class:`gymnasium.spaces.Text` that admits any string up to its length:
Gymnasium's own ``Text`` checks each character against a set, and a set of every Unicode character costs about
100 MB per environment, while a command's output may hold any character; so :class:`AnyText` keeps a small set
to sample from and admits every ``str`` no longer than ``max_length``. Gymnasium's shared memory for ``Text``
indexes that set too, so an async vector environment passes observations by pipe:
``gymnasium.make_vec(ID, num_envs=N, vectorization_mode="async", vector_kwargs={"shared_memory": False})``.
"""

from __future__ import annotations

import os
import string
from pathlib import Path
from typing import Any

from gymnasium.spaces import Text

__all__ = ["MAX_OBSERVATION", "AnyText", "cut", "listing", "reset_text", "step_text"]

#: The longest observation, in characters (the first one holds the task and the competition's description).
MAX_OBSERVATION = 1 << 20
_LISTING_ENTRIES = 200
_SAMPLED = string.ascii_letters + string.digits + string.punctuation + " \n\t"


class AnyText(Text):
    """Any ``str`` of at most ``max_length`` characters; samples from printable ASCII."""

    def __init__(self, max_length: int = MAX_OBSERVATION) -> None:
        super().__init__(max_length, min_length=0, charset=_SAMPLED)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"


def cut(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters: its head and tail, saying how many characters were cut between them."""
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit} characters cut ...]\n"
    keep = max(0, limit - len(note))
    head = keep // 2
    return text[:head] + note + text[len(text) - (keep - head) :]


def listing(folder: Path, inside: str = "/home/data") -> str:
    """The files under ``folder`` as the sandbox shows them (``inside``), two levels deep, with sizes; at most
    a few hundred lines, sorted so that the same data lists the same way."""
    lines: list[str] = []
    more = 0

    def walk(path: Path, shown: str, depth: int) -> None:
        nonlocal more
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if len(lines) >= _LISTING_ENTRIES:
                more += 1
                continue
            name = f"{shown}/{entry.name}"
            if entry.is_dir(follow_symlinks=False):
                count = sum(1 for _ in os.scandir(entry.path))
                lines.append(f"{name}/  ({count} entries)")
                if depth < 2:
                    walk(Path(entry.path), name, depth + 1)
            else:
                lines.append(f"{name}  ({entry.stat(follow_symlinks=False).st_size} bytes)")

    walk(folder, inside, 1)
    if more:
        lines.append(f"... and {more} more")
    return "\n".join(lines)


def reset_text(instructions: str, description: str, files: str, task_note: str) -> str:
    """The first observation: podium's instructions, what this task variant is, the description, the data."""
    parts = [
        instructions.strip(),
        "# This episode\n\n" + task_note.strip() + "\n\nYou act through the tools bash, write_file and submit; "
        "submit ends the episode and grades /home/submission/submission.csv.",
        "# The competition's description (/home/data/description.md)\n\n" + description.strip(),
        "# /home/data\n\n" + files,
    ]
    return cut("\n\n".join(parts) + "\n", MAX_OBSERVATION)


def step_text(answer: dict[str, Any], limit: int) -> str:
    """A bash step's observation from the shell's (checked) answer: exit code, output within ``limit``, time."""
    head, tail = answer["head"], answer["tail"]
    cut_bytes = answer["cut_bytes"]
    output = head + (f"\n[... {cut_bytes} bytes of output cut ...]\n" if cut_bytes else "") + tail
    if answer["timed_out"]:
        status = f"timed out after {answer['elapsed_s']:.1f} s (killed)"
    else:
        status = f"exit code {answer['exit_code']}, {answer['elapsed_s']:.2f} s"
    return cut(output, limit) + ("" if output.endswith("\n") or not output else "\n") + f"[{status}]"

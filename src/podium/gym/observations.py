"""What the policy reads: the observation space, the first observation (the task, the data's listing) and a
step's (exit code, output cut to fit, time).

Observations are text. The space is a :class:`gymnasium.spaces.Text` that admits any string up to its length:
Gymnasium's own ``Text`` checks each character against a set, and a set of every Unicode character costs about
100 MB per environment, while a command's output may hold any character; so :class:`AnyText` keeps a small set
to sample from and admits every ``str`` no longer than ``max_length``. Gymnasium's shared memory for ``Text``
indexes that set too, so an async vector environment passes observations by pipe:
``gymnasium.make_vec(ID, num_envs=N, vectorization_mode="async", vector_kwargs={"shared_memory": False})``.

A command's output is the policy's (or its data's) text, so it is shown, not passed on raw (:func:`shown`): every
control character but newline and tab is written out as :func:`podium.untrusted.printable` writes it (ESC as
``\\e``, BEL as ``\\x07``, CR as ``\\r``, bidirectional overrides as ``\\u202e``), and a line that begins as
podium's own lines do (``[exit code``, ``[timed out after``, ``[...``) gets a backslash before it. So the last line of a
bash observation, ``[exit code N, T s]``, and the notes of what was cut are podium's and nothing else's.
"""

from __future__ import annotations

import os
import re
import string
from pathlib import Path
from typing import Any

from gymnasium.spaces import Text

from podium.records import GradeReport
from podium.untrusted import printable

__all__ = [
    "MAX_OBSERVATION",
    "SUBMISSION",
    "AnyText",
    "cut",
    "listing",
    "reset_text",
    "shown",
    "step_text",
    "submitted",
]

#: The longest observation, in characters (the first one holds the task and the competition's description).
MAX_OBSERVATION = 1 << 20
_LISTING_ENTRIES = 200
_SAMPLED = string.ascii_letters + string.digits + string.punctuation + " \n\t"
SUBMISSION = "/home/submission/submission.csv"
#: How podium's own lines in an observation begin: a bash step's footer and the notes of what was cut.
_OWN = ("[exit code ", "[timed out after ", "[... ")
_IMITATION = re.compile(r"^(?=\[(?:exit code |timed out after |\.\.\. ))", re.MULTILINE)
_KEPT = re.compile(r"([\n\t])")


class AnyText(Text):
    """Any ``str`` of at most ``max_length`` characters; samples from printable ASCII."""

    def __init__(self, max_length: int = MAX_OBSERVATION) -> None:
        super().__init__(max_length, min_length=0, charset=_SAMPLED)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.max_length})"


def cut(text: str, limit: int, own_at: int | None = None) -> str:
    """``text`` within ``limit`` characters: its head and tail, saying how many characters were cut between them.
    A tail that begins as podium's own lines do is marked as :func:`shown` marks such lines, unless it begins at
    ``own_at``, where ``text`` holds one of podium's own notes."""
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit} characters cut ...]\n"
    keep = max(0, limit - len(note))
    head = keep // 2
    start = len(text) - (keep - head)
    tail = text[start:] if keep > head else ""
    if head and tail.startswith(_OWN) and start != own_at:
        head, tail = head - 1, "\\" + tail
    return text[:head] + note + tail


def shown(text: str) -> str:
    """A command's output as the policy reads it (see the module's docstring): control characters but newline and
    tab written out, and each line that begins as podium's own lines do marked with a backslash."""
    text = "".join(piece if piece in ("\n", "\t") else printable(piece) for piece in _KEPT.split(text))
    return _IMITATION.sub("\\\\", text)


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
    own_at = None
    if cut_bytes:  # the tail begins a line of its own, after the note
        output = shown(head)
        output += "" if output.endswith("\n") or not output else "\n"
        own_at = len(output)
        output += f"[... {cut_bytes} bytes of output cut ...]\n" + shown(tail)
    else:
        output = shown(head + tail)
    if answer["timed_out"]:
        status = f"timed out after {answer['elapsed_s']:.1f} s (killed)"
    else:
        status = f"exit code {answer['exit_code']}, {answer['elapsed_s']:.2f} s"
    return cut(output, limit, own_at) + ("" if output.endswith("\n") or not output else "\n") + f"[{status}]"


def submitted(grade: GradeReport | None, reward: float) -> str:
    """What ``submit`` tells the policy, once the submission is graded (``grade`` None: graded elsewhere, on the
    cluster's driver)."""
    if grade is None:
        return f"submitted: {SUBMISSION} is graded where the answers are (the cluster's driver)"
    if not grade.submission_exists:
        return f"submitted with no {SUBMISSION}: there was nothing to grade; reward {reward:g}"
    if not grade.valid_submission:
        why = printable(grade.error or "no reason given", 300)
        return f"submitted: {SUBMISSION} is not a valid submission ({why}); reward {reward:g}"
    score = f"score {grade.score:g}; " if grade.score is not None else ""
    return f"submitted: {SUBMISSION} graded, {score}reward {reward:g}"

"""The action space: one tool call (:mod:`podium.gym.actions`), as a dict or as an OpenAI tool call."""

from __future__ import annotations

from typing import Any

from gymnasium.spaces import Space

from podium.gym.actions import ToolCall, parse_action

__all__ = ["ToolCallSpace"]

_SAMPLES = (
    {"tool": "bash", "command": "true"},
    {"tool": "bash", "command": "pwd"},
    {"tool": "bash", "command": "ls /home/data"},
    {"tool": "write_file", "path": "/home/code/note.txt", "content": "a note\n"},
)


class ToolCallSpace(Space[dict[str, Any]]):
    """Every action :func:`~podium.gym.actions.parse_action` reads as a tool call. Samples are harmless calls
    (never ``submit``), so a random policy explores without ending its episode at once."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        return dict(_SAMPLES[int(self.np_random.integers(len(_SAMPLES)))])

    def contains(self, x: Any) -> bool:
        return isinstance(parse_action(x), ToolCall)

    def __repr__(self) -> str:
        return "ToolCallSpace(bash, write_file, submit)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolCallSpace)

    def __hash__(self) -> int:
        return hash(type(self))

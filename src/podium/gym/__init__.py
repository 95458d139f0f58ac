"""podium's competitions as Gymnasium environments; importing this package registers their ids.

``gymnasium.make("podium/<competition>-v<version>", task=..., ...)`` (docs/gym.md lists every keyword) returns a
:class:`PodiumEnv` whose episodes are podium runs: the same sandbox, limits, validation endpoint, record, grade and
landing as ``podium run``'s, driven one tool call (``bash``, ``write_file``, ``submit``) at a time.
"""

from __future__ import annotations

from podium.gym.actions import TOOLS, ToolCall, parse_action, tool_schemas
from podium.gym.env import PodiumEnv
from podium.gym.episode import STEPS_FILE
from podium.gym.observations import AnyText
from podium.gym.registration import NAMESPACE, env_id, register_all
from podium.gym.rewards import REWARDS, reward_of
from podium.gym.spaces import ToolCallSpace

__all__ = [
    "NAMESPACE",
    "REWARDS",
    "STEPS_FILE",
    "TOOLS",
    "AnyText",
    "PodiumEnv",
    "ToolCall",
    "ToolCallSpace",
    "env_id",
    "parse_action",
    "register_all",
    "reward_of",
    "tool_schemas",
]

register_all()

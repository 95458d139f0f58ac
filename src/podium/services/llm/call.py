"""One call as it goes through the proxy: its log entry and its transcript line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from podium.services.llm.accounting import Usage
from podium.services.llm.sse import Assembler

__all__ = ["Call"]


@dataclass
class Call:
    """One call as it goes through the proxy: its log entry (``llm_calls.jsonl``) and its transcript line (I1)."""

    entry: dict[str, Any]
    line: dict[str, Any]
    usage: Usage = field(default_factory=Usage)
    sent: bool = False  # the answer's status line has gone to the agent
    stream: Assembler | None = None  # the stream being relayed, if one is

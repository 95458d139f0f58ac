"""What tests of agents and of podium itself run against: a scripted model server (no network, no key)."""

from __future__ import annotations

from podium.testing.scripted_llm import (
    ByContent,
    Fail,
    Reply,
    ScriptedLLM,
    Stall,
    ToolCall,
    load_script,
    research_step,
)

__all__ = ["ByContent", "Fail", "Reply", "ScriptedLLM", "Stall", "ToolCall", "load_script", "research_step"]

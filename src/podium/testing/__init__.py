"""What tests of agents and of podium itself run against: a scripted model server (no network, no key) that speaks
chat completions, Anthropic messages and the Responses API, plain and streamed."""

from __future__ import annotations

from podium.testing.scripted_llm import (
    ByContent,
    Expect,
    Fail,
    Reply,
    ScriptedLLM,
    Shell,
    Stall,
    ToolCall,
    crash_then_fix,
    last_tool_output,
    load_script,
    research_step,
)

__all__ = [
    "ByContent",
    "Expect",
    "Fail",
    "Reply",
    "ScriptedLLM",
    "Shell",
    "Stall",
    "ToolCall",
    "crash_then_fix",
    "last_tool_output",
    "load_script",
    "research_step",
]

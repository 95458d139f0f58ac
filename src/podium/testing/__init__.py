"""What tests of agents and of podium itself run against: a scripted model server (no network, no key) that speaks
chat completions, Anthropic messages and the Responses API, plain and streamed.

The names are :mod:`podium.testing.scripted_llm`'s, imported when first used, so that ``python -m
podium.testing.scripted_llm`` runs the module once, as ``__main__`` (Python warns when the package has imported it
before)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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


def __getattr__(name: str) -> Any:
    if name in __all__:
        from podium.testing import scripted_llm

        return getattr(scripted_llm, name)
    raise AttributeError(f"module 'podium.testing' has no attribute {name!r}")

"""The operators: draft, debug and improve write a node's code; review reads what it printed.

Prompts are the files in ``prompts/``. A code answer must hold a ```python block; the review comes
back as a forced tool call (``submit_review``), never parsed from prose. An answer without code, or
a tool call whose arguments are malformed, gets one repair prompt; a second failure makes the node
a failed one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from journal import Node
from podium_llm import Completion, LLMClient

__all__ = ["REVIEW_TOOL", "Context", "Unusable", "extract_code", "review", "write_code"]

PROMPTS = Path(__file__).parent / "prompts"
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)
_OUTPUT_CHARS = 3000
_CODE_CHARS = 20000

REVIEW_TOOL: dict[str, Any] = {
    "name": "submit_review",
    "description": "Report how the script's run went and the holdout metric it printed.",
    "parameters": {
        "type": "object",
        "properties": {
            "is_bug": {"type": "boolean", "description": "true if the run failed or its result cannot be trusted"},
            "summary": {
                "type": "string",
                "description": "what the script did and how it went, in one or two sentences",
            },
            "metric": {"type": ["number", "null"], "description": "the holdout metric it printed, or null"},
            "lower_is_better": {"type": "boolean", "description": "true if a lower value of the metric is better"},
        },
        "required": ["is_bug", "summary", "metric", "lower_is_better"],
    },
}


class Unusable(Exception):
    """The model's answer could not be used, even after a repair prompt."""


@dataclass
class Context:
    """What every prompt is filled in with."""

    task: str
    data_files: str
    hardware: str
    packages: str

    def fill(self, name: str, **values: Any) -> str:
        text = (PROMPTS / f"{name}.md").read_text(encoding="utf-8")
        return text.format(task=self.task, data_files=self.data_files, hardware=self.hardware,
                           packages=self.packages, **values)  # fmt: skip


def _system() -> str:
    return (PROMPTS / "system.md").read_text(encoding="utf-8")


def extract_code(text: str) -> tuple[str, str] | None:
    """(plan, code) of an answer: the longest ```python block, and the prose before it."""
    blocks = list(_CODE.finditer(text))
    if not blocks:
        return None
    block = max(blocks, key=lambda m: len(m.group(1)))
    code = block.group(1).strip()
    if not code:
        return None
    return text[: block.start()].strip(), code + "\n"


def _count(node: Node, answer: Completion) -> None:
    node.input_tokens += answer.input_tokens
    node.output_tokens += answer.output_tokens


def write_code(client: LLMClient, context: Context, node: Node, parent: Node | None, **values: Any) -> str:
    """The code of ``node`` (its plan kept on the node); raises :class:`Unusable`."""
    if parent is not None:
        values.update(code=_read(parent.code_file)[:_CODE_CHARS], output=parent.output_tail[-_OUTPUT_CHARS:],
                      metric="n/a" if parent.metric is None else f"{parent.metric:.6g}")  # fmt: skip
    prompt = context.fill(node.operator, **values)
    answer = client.complete(_system(), prompt)
    _count(node, answer)
    found = extract_code(answer.text)
    if found is None:
        answer = client.complete(_system(), prompt + "\n\n" + _repair("it held no ```python code block"))
        _count(node, answer)
        found = extract_code(answer.text)
        if found is None:
            raise Unusable("the model answered twice without a python code block")
    node.plan, code = found
    return code


def _repair(problem: str) -> str:
    return (PROMPTS / "repair.md").read_text(encoding="utf-8").format(problem=problem)


def _read(path: str | None) -> str:
    return Path(path).read_text(encoding="utf-8") if path else ""


def review(client: LLMClient, context: Context, node: Node, code: str, submission: str) -> dict[str, Any]:
    """The model's structured review of the node's run; raises :class:`Unusable` after one repair."""
    prompt = context.fill(
        "review", task_summary=context.task[:4000], code=code[:_CODE_CHARS], output=node.output_tail[-_OUTPUT_CHARS:],
        submission=submission,
    )  # fmt: skip
    problem = None
    for attempt in range(2):
        text = prompt if attempt == 0 else prompt + "\n\n" + _repair(str(problem))
        answer = client.complete(_system(), text, tool=REVIEW_TOOL)
        _count(node, answer)
        problem = answer.tool_error or _check_review(answer.tool_arguments)
        if problem is None:
            assert answer.tool_arguments is not None
            return answer.tool_arguments
    raise Unusable(f"the review was unusable twice: {problem}")


def _check_review(arguments: dict[str, Any] | None) -> str | None:
    if arguments is None:
        return "the answer made no tool call"
    missing = [key for key in REVIEW_TOOL["parameters"]["required"] if key not in arguments]
    if missing:
        return f"the submit_review call lacks {', '.join(missing)}"
    metric = arguments["metric"]
    if metric is not None and (isinstance(metric, bool) or not isinstance(metric, (int, float)) or metric != metric):
        return f"metric must be a number or null, got {metric!r}"
    if not isinstance(arguments["is_bug"], bool) or not isinstance(arguments["lower_is_better"], bool):
        return "is_bug and lower_is_better must be true or false"
    return None

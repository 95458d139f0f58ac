"""Reading one step's answer: the six named parts, the action, and its JSON input.

A part starts on its own line with its name and a colon (markdown emphasis or a heading mark around
the name is tolerated). The action must be one of the actions by name (case and spacing aside); the
input must be one JSON object (a fenced block around it is tolerated) holding that action's inputs.
Anything else is :class:`Malformed`, with a message that tells the model what to fix.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["PARTS", "Malformed", "Step", "parse"]

PARTS = ("Reflection", "Research Plan and Status", "Fact Check", "Thought", "Action", "Action Input")
_HEAD = re.compile(
    r"^[ \t>#*_]*(" + "|".join(re.escape(p) for p in PARTS) + r")[ \t*_]*:[ \t*_]*", re.IGNORECASE | re.MULTILINE
)


class Malformed(Exception):
    """The answer cannot be used; the message says why."""


@dataclass
class Step:
    reflection: str
    plan: str
    fact_check: str
    thought: str
    action: str
    action_input: dict[str, Any]


def _sections(text: str) -> dict[str, str]:
    marks = list(_HEAD.finditer(text))
    found: dict[str, str] = {}
    for number, mark in enumerate(marks):
        name = next(p for p in PARTS if p.lower() == mark.group(1).lower())
        end = marks[number + 1].start() if number + 1 < len(marks) else len(text)
        found.setdefault(name, text[mark.end() : end].strip())
    return found


def _json_object(raw: str) -> dict[str, Any]:
    text = raw.strip()
    fence = re.match(r"^```[a-zA-Z]*\s*\n?(.*?)```", text, re.DOTALL)
    if fence:
        text = fence.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        raise Malformed("the Action Input is not a JSON object (no {...} found)")
    try:
        value = json.loads(text[start : end + 1])
    except ValueError as error:
        raise Malformed(f"the Action Input is not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise Malformed("the Action Input must be a JSON object")
    return value


def _normal(name: str) -> str:
    return re.sub(r"[^a-z0-9()]+", " ", name.lower()).strip()


def parse(text: str, actions: dict[str, dict[str, str]]) -> Step:
    """The step in ``text``; ``actions`` maps each action's name to its inputs (name -> description)."""
    sections = _sections(text)
    missing = [p for p in PARTS if p not in sections]
    if missing:
        raise Malformed(f"it lacks {', '.join(missing)}")
    wanted = sections["Action"].strip().strip("`*\"'").splitlines()[0].strip() if sections["Action"].strip() else ""
    by_name = {_normal(name): name for name in actions}
    action = by_name.get(_normal(wanted)) or by_name.get(_normal(wanted).replace("(ai)", "").strip() + " (ai)")
    if action is None:
        raise Malformed(f"{wanted!r} is not an action")
    value = _json_object(sections["Action Input"])
    required = [k for k in actions[action] if k not in value and not _optional(action, k)]
    if required:
        raise Malformed(f"the input of {action} lacks {', '.join(required)}")
    return Step(
        reflection=sections["Reflection"],
        plan=sections["Research Plan and Status"],
        fact_check=sections["Fact Check"],
        thought=sections["Thought"],
        action=action,
        action_input=value,
    )


def _optional(action: str, key: str) -> bool:
    return (action, key) in {("Edit Script (AI)", "save_name"), ("List Files", "dir_path"),
                             ("Final Answer", "final_answer")}  # fmt: skip

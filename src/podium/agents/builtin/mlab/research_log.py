"""The research log: what the agent remembers of its past steps, and the journal of every step.

Each step adds an entry (its plan and status, the action with its input, the start of the
observation) to the log the next prompt shows, and its last steps are shown in full. When the log
grows past its budget, the model is asked to summarise all but the latest entries; the summary
replaces them (a summary that does not come back, the entries are cut short instead). The log is
also written to ``research_log.md`` as it stands after each step.

``journal.jsonl`` has one line per step in the form ``podium serve`` draws (id, parent: the step
before, operator: the action, plan, code file, seconds, output tail, summary, tokens, validity).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Entry", "ResearchLog"]

_ENTRY_OBSERVATION = 600  # characters of an observation kept in the log
_RECENT_OBSERVATION = 6000  # ... and in a recent step shown in full


@dataclass
class Entry:
    """One step, as the journal keeps it."""

    id: int
    parent: int | None
    operator: str  # the action
    started_s: float
    reflection: str = ""
    plan: str = ""  # the research plan and status
    fact_check: str = ""
    thought: str = ""
    action_input: dict[str, Any] = field(default_factory=dict)
    answer: str = ""  # the model's answer as given
    output_tail: str = ""  # the observation
    code_file: str | None = None
    seconds: float = 0.0
    retries: int = 0  # malformed answers before this one
    failure: str | None = None
    is_bug: bool = False
    valid: bool = False  # a submission from this step passed the validation endpoint
    validation: str = ""
    input_tokens: int = 0
    output_tokens: int = 0

    def summary_line(self) -> str:
        inputs = json.dumps({k: v if len(str(v)) < 200 else str(v)[:200] + "..." for k, v in self.action_input.items()})
        observation = self.output_tail[:_ENTRY_OBSERVATION] + (
            "..." if len(self.output_tail) > _ENTRY_OBSERVATION else ""
        )
        return f"Step {self.id}: {self.operator} {inputs}\nObservation: {observation}\nPlan then: {self.plan[:1500]}"


class ResearchLog:
    def __init__(self, folder: Path, *, budget_chars: int = 20_000, recent: int = 3) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.journal = folder / "journal.jsonl"
        self.file = folder / "research_log.md"
        self.budget = budget_chars
        self.recent = recent
        self.summary = ""
        self.entries: list[str] = []
        self.steps: list[Entry] = []
        self.compressions = 0

    def add(self, entry: Entry) -> None:
        """Journal the step, and add it to the log."""
        self.steps.append(entry)
        with open(self.journal, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(asdict(entry)) + "\n")
        self.entries.append(entry.summary_line())

    def size(self) -> int:
        return len(self.summary) + sum(len(e) for e in self.entries)

    def compress(self, summarise: Callable[[str, int], str | None]) -> bool:
        """Past the budget: the older entries become one summary (``summarise(text, words)``). True if done."""
        if self.size() <= self.budget or len(self.entries) <= self.recent:
            return False
        older, self.entries = self.entries[: -self.recent], self.entries[-self.recent :]
        text = (f"Summary so far:\n{self.summary}\n\n" if self.summary else "") + "\n\n".join(older)
        summary = summarise(text, max(200, self.budget // 16))
        if summary and summary.strip():
            self.summary = summary.strip()[: self.budget // 2]
        else:  # keep the starts of the entries instead
            self.summary = (self.summary + "\n" + "\n".join(e[:300] for e in older)).strip()[-(self.budget // 2) :]
        self.compressions += 1
        return True

    def text(self) -> str:
        parts = ([f"Summary of the earlier steps:\n{self.summary}"] if self.summary else []) + self.entries
        return "\n\n".join(parts) or "(nothing yet: this is the first step)"

    def recent_steps(self) -> str:
        shown = []
        for entry in self.steps[-self.recent :]:
            observation = entry.output_tail
            if len(observation) > _RECENT_OBSERVATION:
                observation = observation[:_RECENT_OBSERVATION] + "\n[... cut]"
            shown.append(f"## Step {entry.id}\n{entry.answer.strip()}\n\nObservation:\n```\n{observation}\n```")
        return "\n\n".join(shown) or "(none yet)"

    def save(self) -> None:
        partial = self.file.with_name(self.file.name + ".partial")
        partial.write_text(self.text() + "\n", encoding="utf-8")
        partial.replace(self.file)

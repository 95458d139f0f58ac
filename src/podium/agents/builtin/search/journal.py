"""The search tree: one node per attempt, written to ``journal.jsonl`` as it is made.

Each line of the journal is one node: its id and parent, the operator that made it, the plan, the
code file, how long its code ran and how it ended, the end of its output, the holdout metric the
model read from that output, whether the node's submission passed the validation endpoint, and the
tokens its model calls used. That is everything a report or a viewer needs to draw the tree.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Journal", "Node"]


@dataclass
class Node:
    id: int
    parent: int | None
    operator: str  # draft | debug | improve
    plan: str = ""
    code_file: str | None = None
    started_s: float = 0.0  # seconds into the run
    seconds: float = 0.0  # how long its code ran
    exit_code: int | None = None
    killed_for: str | None = None  # time | memory
    output_tail: str = ""
    is_bug: bool = True
    summary: str = ""
    metric: float | None = None
    lower_is_better: bool | None = None
    valid: bool = False  # its submission passed the validation endpoint
    validation: str = ""
    failure: str | None = None  # why the node has no result (no code, a malformed review, ...)
    input_tokens: int = 0
    output_tokens: int = 0
    debug_depth: int = 0
    children: list[int] = field(default_factory=list)

    @property
    def good(self) -> bool:
        """Ran, is not a bug by the review, has a metric, and left a valid submission."""
        return not self.is_bug and self.metric is not None and self.valid


class Journal:
    """Every node of the run, in order, and the file they are written to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.nodes: list[Node] = []
        path.parent.mkdir(parents=True, exist_ok=True)

    def new(self, operator: str, parent: Node | None, started_s: float) -> Node:
        node = Node(len(self.nodes), parent.id if parent else None, operator, started_s=started_s)
        if parent is not None:
            parent.children.append(node.id)
            node.debug_depth = parent.debug_depth + 1 if operator == "debug" else 0
        self.nodes.append(node)
        return node

    def write(self, node: Node) -> None:
        record: dict[str, Any] = asdict(node)
        record.pop("children")
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record) + "\n")

    def direction(self) -> bool | None:
        """Whether lower metrics are better, as the first good node's review said."""
        return next((n.lower_is_better for n in self.nodes if n.good and n.lower_is_better is not None), None)

    def good(self) -> list[Node]:
        return [n for n in self.nodes if n.good]

    def best(self) -> Node | None:
        """The good node with the best metric (the direction of the first good node)."""
        good = self.good()
        if not good:
            return None
        return min(good, key=self.rank)

    def rank(self, node: Node) -> float:
        """Lower is better: the metric, or its negative where higher metrics are better."""
        if node.metric is None:
            return float("inf")
        return node.metric if self.direction() else -node.metric

    def better(self, node: Node, than: Node | None) -> bool:
        if not node.good:
            return False
        if than is None:
            return True
        assert node.metric is not None and than.metric is not None
        return node.metric < than.metric if self.direction() else node.metric > than.metric

    def buggy_leaves(self, max_depth: int) -> list[Node]:
        """Nodes that failed, have not been debugged yet and are not too deep in a debug chain."""
        return [n for n in self.nodes if not n.good and not n.children and n.debug_depth < max_depth and n.code_file]

    def memory(self, limit: int = 8) -> str:
        """What was tried so far, for the improve prompt: the good nodes' plans and metrics."""
        lines = [
            f"- node {n.id} ({n.operator}): metric {n.metric:.6g}. {n.summary.strip()[:300]}"
            for n in self.good()[-limit:]
            if n.metric is not None
        ]
        return "\n".join(lines) or "(no working solution yet)"

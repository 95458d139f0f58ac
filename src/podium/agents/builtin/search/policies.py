"""Which node to expand next: greedy (as AIDE) or evolutionary (tournament selection).

A policy returns ``(operator, parent)``: ``("draft", None)`` for a new solution from the task,
``("debug", node)`` for a failed node, ``("improve", node)`` for a working one. Both start with
``drafts`` drafts and debug failed leaves (up to ``max_debug_depth`` in a chain) with probability
``debug_prob``; they differ in which working node they improve.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from journal import Journal, Node

__all__ = ["POLICIES", "Evolutionary", "Greedy"]


@dataclass
class Greedy:
    """Drafts first, then debug a failed leaf or improve the best node so far."""

    drafts: int = 5
    debug_prob: float = 1.0
    max_debug_depth: int = 3
    seed: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def _common(self, journal: Journal) -> tuple[str, Node | None] | None:
        drafted = sum(1 for n in journal.nodes if n.operator == "draft")
        if drafted < self.drafts:
            return "draft", None
        leaves = journal.buggy_leaves(self.max_debug_depth)
        if leaves and self.rng.random() < self.debug_prob:
            return "debug", leaves[-1]
        if not journal.good():
            return "draft", None
        return None

    def next(self, journal: Journal) -> tuple[str, Node | None]:
        return self._common(journal) or ("improve", journal.best())


@dataclass
class Evolutionary(Greedy):
    """Like greedy, but the node to improve wins a tournament of ``tournament`` random working nodes,
    and with probability ``fresh_prob`` a new draft joins the population instead."""

    tournament: int = 3
    fresh_prob: float = 0.1

    def next(self, journal: Journal) -> tuple[str, Node | None]:
        chosen = self._common(journal)
        if chosen is not None:
            return chosen
        if self.rng.random() < self.fresh_prob:
            return "draft", None
        good = journal.good()
        entrants = self.rng.sample(good, min(self.tournament, len(good)))
        return "improve", min(entrants, key=journal.rank)


POLICIES = {"greedy": Greedy, "evolutionary": Evolutionary}

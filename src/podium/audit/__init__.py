"""Audits of finished runs and of the models behind them (issue 20).

- :mod:`~podium.audit.familiarity`: how familiar a model is with each competition's texts (contamination),
  with :mod:`~podium.audit.logits`: where the token probabilities come from (a GGUF model or a server).
"""

from __future__ import annotations

from podium.audit.familiarity import (
    PUBLISHED_SAMPLES,
    ProbabilityCache,
    competition_documents,
    familiarity,
    familiarity_by_competition,
    load_familiarity,
    sampled_mean,
)
from podium.audit.logits import LlamaCppScorer, ServerScorer, TokenScorer, next_token_probabilities

__all__ = [
    "PUBLISHED_SAMPLES",
    "LlamaCppScorer",
    "ProbabilityCache",
    "ServerScorer",
    "TokenScorer",
    "competition_documents",
    "familiarity",
    "familiarity_by_competition",
    "load_familiarity",
    "next_token_probabilities",
    "sampled_mean",
]

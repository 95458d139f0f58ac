"""A run's services: what the sandboxed agent reaches, each on a Unix socket mounted into the sandbox.

- :class:`ValidationServer` (``/home/validate.sock``): the format check of a submission, never a score; and
  the hold-out scorer (the agent's own predictions against its own labels, logged apart);
- :class:`LLMProxy` (``/home/llm.sock``): the agent's model calls, to one provider, with podium's key,
  within the run's budget.

The agent's side of each is a file shipped in ``podium/sandbox_files`` and mounted into the sandbox
(:func:`sandbox_file`): ``validate_submission.py`` and its ``.sh`` wrapper; ``llm_bridge.py``,
which relays the sandbox's own loopback to the proxy's socket for SDKs that speak only TCP; and
``podium_submission.py``, which agents may import to validate and place their submission atomically;
``podium_llm.py`` (with an ``llm:`` section), a standard-library model client for the proxy that
podium's own agents (``search``, ``mlab``) share; ``score_holdout.py``, the hold-out scorer's client; and
``podium_journal.py``, which runs a command-line agent that prints JSON events (Claude Code, Codex) under
its time limit and keeps ``journal.jsonl`` from them; ``podium_shell.py``, the shell server a Gymnasium
episode's policy drives (:mod:`podium.gym`).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from podium.services.llm import BRIDGE_PORT, LLMProxy, model_failure
from podium.services.validation import ValidationServer

__all__ = ["BRIDGE_PORT", "SANDBOX_FILES", "LLMProxy", "ValidationServer", "model_failure", "sandbox_file"]

#: The files shipped for the sandbox, each mounted at ``/home/<name>``.
SANDBOX_FILES = (
    "validate_submission.py",
    "validate_submission.sh",
    "llm_bridge.py",
    "podium_submission.py",
    "podium_llm.py",
    "score_holdout.py",
    "podium_journal.py",
    "podium_shell.py",
)


def sandbox_file(name: str) -> Path:
    """The path of a file shipped for the sandbox (one of :data:`SANDBOX_FILES`)."""
    if name not in SANDBOX_FILES:
        raise KeyError(f"{name!r} is not a sandbox file; known: {', '.join(SANDBOX_FILES)}")
    return Path(str(resources.files("podium") / "sandbox_files" / name))

"""Run OpenAI's Codex CLI (``@openai/codex`` from npm, its native binary from the package, unpatched) headless.

Inside podium's sandbox, in the ``coding-agents`` root filesystem (Codex in ``/opt/coding-agents``, the code
environment at ``/opt/podium/env`` first on ``PATH``, login shells included: Codex runs each command in
``bash -lc``). What the wrapper does around Codex:

- the model: a provider ``podium`` in ``$CODEX_HOME/config.toml`` whose base URL is podium's bridge and whose
  wire API is OpenAI's Responses, so every call (its sub-agents' too) goes through the proxy, which adds the
  key, counts tokens and cost, keeps the transcript, and translates to chat completions for a provider that
  speaks only those;
- the task: MLE-bench's instructions (``/home/instructions.md``), then the competition's description, given
  on standard input to ``codex exec --json``;
- off: Codex's own sandbox and approval prompts (``--dangerously-bypass-approvals-and-sandbox``: podium's
  sandbox is the boundary), web search, the features named in ``CODEX_FEATURES_OFF`` (agent.yaml), analytics,
  OpenTelemetry export and the update check;
- the limits: the run's time limit: near its end Codex is stopped, so the submission check still happens;
- the record: Codex's JSON events in ``/home/logs/codex.events.jsonl`` and its session files under
  ``/home/logs/codex/`` (its ``CODEX_HOME``), and ``/home/logs/journal.jsonl`` in the form ``podium serve``
  draws (a node per command or file change);
- the submission: the sample submission is in place first (so a run that writes none is still graded); at
  the end the file in place is checked through the validation endpoint and the result logged.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.append(os.environ.get("PODIUM_HOME", "/home"))  # podium_submission.py, podium_journal.py: shipped by podium

from podium_journal import Journal, run_events, task
from podium_submission import start

HOME = Path(os.environ.get("PODIUM_HOME", "/home"))
LOGS = HOME / "logs"
CODEX = os.environ.get("CODEX_BIN", "/opt/coding-agents/bin/codex")
NAME = "codex"


def _log(message: str) -> None:
    print(f"[{NAME} {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Events:
    """Codex's exec events into the journal: a node per command (``command_execution``) or file change, opened
    when the item starts and written again when it completes; the model's words since the last node are its plan."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.words: list[str] = []
        self.usage: dict[str, int] = {}
        self.errors: list[str] = []

    def __call__(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        item = event.get("item") if isinstance(event.get("item"), dict) else {}
        assert isinstance(item, dict)
        key = str(item.get("id"))
        if kind in ("item.started", "item.completed") and item.get("type") in ("command_execution", "file_change",
                                                                               "mcp_tool_call"):  # fmt: skip
            if key not in self.journal.nodes:
                self._open(key, item)
            if kind == "item.completed":
                failed = item.get("status") == "failed" or item.get("exit_code") not in (None, 0)
                output = item.get("aggregated_output") or json.dumps(item.get("changes") or item.get("result"))
                self.journal.result(key, str(output), failed)
        elif kind == "item.completed" and item.get("type") in ("agent_message", "reasoning"):
            self.words.append(str(item.get("text") or ""))
        elif kind == "item.completed" and item.get("type") == "error":
            self.errors.append(str(item.get("message")))
        elif kind == "turn.completed" and isinstance(event.get("usage"), dict):
            for name, value in event["usage"].items():
                if isinstance(value, int):
                    self.usage[name] = self.usage.get(name, 0) + value
        elif kind in ("turn.failed", "error"):
            error = event.get("error")
            self.errors.append(str((error if isinstance(error, dict) else event).get("message")))

    def _open(self, key: str, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "command_execution":
            operator, arguments = "shell", {"command": item.get("command")}
        elif kind == "file_change":
            operator, arguments = "apply_patch", {"changes": item.get("changes")}
        else:
            operator, arguments = str(item.get("tool") or "mcp"), {"arguments": item.get("arguments")}
        paths = [str(c.get("path")) for c in item.get("changes") or [] if isinstance(c, dict)]
        code = next((p for p in paths if p.endswith(".py")), None)
        self.journal.action(key, operator, "\n".join(self.words), arguments, code)
        self.words = []


def config(model: str, base_url: str, effort: str, features_off: list[str]) -> str:
    """``config.toml``: the proxy as the one provider (Responses API), everything that reaches out turned off."""
    lines = [
        f"model = {json.dumps(model)}", 'model_provider = "podium"', f"model_reasoning_effort = {json.dumps(effort)}",
        'approval_policy = "never"', 'sandbox_mode = "danger-full-access"', "check_for_update_on_startup = false",
        'web_search = "disabled"', "",
        "[model_providers.podium]", "name = \"podium's LLM proxy\"", f"base_url = {json.dumps(base_url)}",
        'env_key = "OPENAI_API_KEY"', 'wire_api = "responses"', "request_max_retries = 4", "stream_max_retries = 4", "",
        "[shell_environment_policy]", 'inherit = "all"', "",
        "[analytics]", "enabled = false", "", "[otel]", 'exporter = "none"', "",
        "[tools]", "web_search = false", "", "[features]",
        *(f"{name} = false" for name in features_off),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def command(model: str) -> list[str]:
    """Codex's command line: ``exec`` with its JSON events, no sandbox or approvals of its own, the task on stdin."""
    return [CODEX, "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
            "--color", "never", "-C", str(HOME), "-m", model, "-"]  # fmt: skip


def main() -> int:
    begun = start(HOME, "CODEX_MODEL", _log)
    model = begun.model
    if not model:
        return 0
    codex_home = LOGS / NAME
    codex_home.mkdir(parents=True, exist_ok=True)
    features = [f for f in os.environ.get("CODEX_FEATURES_OFF", "").split(",") if f.strip()]
    base_url = os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8399/v1")
    effort = os.environ.get("CODEX_REASONING_EFFORT") or "medium"
    (codex_home / "config.toml").write_text(config(model, base_url, effort, features), encoding="utf-8")
    prompt = LOGS / f"{NAME}.task.md"
    prompt.write_text(task(HOME), encoding="utf-8")
    seconds = begun.seconds_left()
    env = {**os.environ, "CODEX_HOME": str(codex_home), "NO_COLOR": "1", "SHELL": "/bin/bash"}  # bash -lc, not sh
    _log(f"model {model}; at most {seconds:.0f} s; features off: {', '.join(features) or 'none'}")
    events = Events(Journal(LOGS / "journal.jsonl", begun.started))
    code = run_events(NAME, command(model), env, LOGS / f"{NAME}.events.jsonl", events, seconds, stdin=prompt)
    for error in events.errors[-3:]:
        _log(f"Codex said: {error[:500]}")
    _log(f"Codex finished (exit {code}; tokens {events.usage or 'none reported'}); "
         f"{len(events.journal.nodes)} command(s) and change(s)")  # fmt: skip
    begun.submission.check_in_place(_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

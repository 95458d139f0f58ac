"""Run Anthropic's Claude Code (``@anthropic-ai/claude-code`` from npm, unpatched) headless on one competition.

Inside podium's sandbox, in the ``coding-agents`` root filesystem (Claude Code in ``/opt/coding-agents``, the
code environment at ``/opt/podium/env`` first on ``PATH``), as the sandbox's own user (not root). What the
wrapper does around Claude Code:

- the model: ``ANTHROPIC_BASE_URL`` is podium's bridge, so every call (sub-agents' too: every model name
  Claude Code could pick is set to the run's model) goes through the proxy, which adds the key, counts tokens
  and cost and keeps the transcript;
- the task: MLE-bench's instructions (``/home/instructions.md``), then the competition's description, given
  on standard input to print mode (``-p``) with its JSON event stream (``--output-format stream-json``);
- the tools: ``CLAUDE_CODE_TOOLS`` (agent.yaml) are the only ones offered (``--tools``) and are allowed
  without asking (``--allowedTools``); the web tools are refused (``--disallowedTools``), skills, slash
  commands and MCP servers are off, and anything that would ask for permission is denied (nobody answers);
- off: telemetry, error reports, the auto-updater and every other non-essential call;
- the limits: at most ``CLAUDE_CODE_TURNS`` turns (``--max-turns``), and the run's time limit: near its end
  Claude Code is stopped, so the submission check still happens; a command may run as long as the run;
- the record: Claude Code's own event stream in ``/home/logs/claude-code.events.jsonl`` and its session files
  under ``/home/logs/claude-code/`` (its config folder), and ``/home/logs/journal.jsonl`` in the form
  ``podium serve`` draws (a node per tool call);
- the submission: the sample submission is in place first (so a run that writes none is still graded); at
  the end the file in place is checked through the validation endpoint and the result logged.
"""

from __future__ import annotations

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
CLAUDE = os.environ.get("CLAUDE_CODE_BIN", "/opt/coding-agents/bin/claude")
NAME = "claude-code"
#: Claude Code's tools that reach outside the sandbox: refused even if CLAUDE_CODE_TOOLS named them.
WEB_TOOLS = "WebFetch,WebSearch"


def _log(message: str) -> None:
    print(f"[{NAME} {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _text(content: Any) -> str:
    """The text of a message's content (a string, or its blocks' text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(block.get("text", block.get("content"))) for block in content if isinstance(block, dict))
    return ""


class Events:
    """Claude Code's stream-json events into the journal: a node per ``tool_use``, its ``tool_result`` after."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        self.result: dict[str, Any] = {}

    def __call__(self, event: dict[str, Any]) -> None:
        message = event.get("message") if isinstance(event.get("message"), dict) else {}
        blocks = [b for b in message.get("content") or [] if isinstance(b, dict)] if isinstance(message, dict) else []
        if event.get("type") == "assistant":
            words = "\n".join(str(b.get("text", "")) for b in blocks if b.get("type") in ("text", "thinking"))
            for block in blocks:
                if block.get("type") == "tool_use":
                    given = block.get("input")
                    arguments: dict[str, Any] = given if isinstance(given, dict) else {}
                    path = str(arguments.get("file_path") or "")
                    self.journal.action(str(block.get("id")), str(block.get("name")), words, arguments,
                                        path if path.endswith(".py") else None)  # fmt: skip
        elif event.get("type") == "user":
            for block in blocks:
                if block.get("type") == "tool_result":
                    output = _text(block.get("content"))
                    self.journal.result(str(block.get("tool_use_id")), output, bool(block.get("is_error")))
        elif event.get("type") == "result":
            self.result = event


def _env(model: str, seconds: float) -> dict[str, str]:
    env = dict(os.environ)
    command_ms = str(int(max(seconds, 60) * 1000))
    env.update({
        "CLAUDE_CONFIG_DIR": str(LOGS / NAME),  # its settings and session files, kept with the run
        "ANTHROPIC_MODEL": model, "ANTHROPIC_SMALL_FAST_MODEL": model, "CLAUDE_CODE_SUBAGENT_MODEL": model,
        "ANTHROPIC_DEFAULT_OPUS_MODEL": model, "ANTHROPIC_DEFAULT_SONNET_MODEL": model,
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_BUG_COMMAND": "1", "DISABLE_COST_WARNINGS": "1",
        "BASH_DEFAULT_TIMEOUT_MS": command_ms, "BASH_MAX_TIMEOUT_MS": command_ms,
    })  # fmt: skip
    return env


def command(model: str, turns: int, tools: str) -> list[str]:
    """Claude Code's command line: print mode, the JSON event stream, the tools, the turn limit."""
    offered = ",".join(t for t in tools.replace(" ", ",").split(",") if t and t not in WEB_TOOLS.split(","))
    return [
        CLAUDE, "-p", "--output-format", "stream-json", "--verbose", "--model", model, "--max-turns", str(turns),
        "--tools", offered, "--allowedTools", offered, "--disallowedTools", WEB_TOOLS,
        "--permission-prompts", "none", "--disable-slash-commands", "--strict-mcp-config", "--no-chrome",
    ]  # fmt: skip


def main() -> int:
    begun = start(HOME, "CLAUDE_CODE_MODEL", _log)
    model = begun.model
    if not model:
        return 0
    turns = int(os.environ.get("CLAUDE_CODE_TURNS") or 500)
    tools = os.environ.get("CLAUDE_CODE_TOOLS") or "Bash,Read,Write,Edit"
    prompt = LOGS / f"{NAME}.task.md"
    prompt.write_text(task(HOME), encoding="utf-8")
    seconds = begun.seconds_left()
    _log(f"model {model}; at most {turns} turns in {seconds:.0f} s; tools {tools}")
    events = Events(Journal(LOGS / "journal.jsonl", begun.started))
    code = run_events(NAME, command(model, turns, tools), _env(model, seconds), LOGS / f"{NAME}.events.jsonl",
                      events, seconds, stdin=prompt)  # fmt: skip
    result = events.result
    _log(f"Claude Code finished (exit {code}; {result.get('subtype', 'no result')}, {result.get('num_turns', '?')} "
         f"turns); {len(events.journal.nodes)} tool call(s)")  # fmt: skip
    begun.submission.check_in_place(_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

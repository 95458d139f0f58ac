"""Run OpenHands' CodeAct agent (openhands-sdk, openhands-tools; unpatched) headless on one competition.

Inside podium's sandbox, in the ``openhands`` root filesystem (Python 3.13, OpenHands in
``/opt/openhands``, the code environment at ``/opt/podium/env`` first on ``PATH``). What the wrapper
does around OpenHands:

- the model: LiteLLM's name ``openai/<model>`` (``anthropic/<model>``) with its base URL set to
  podium's bridge, so every call goes through the proxy, which adds the key and counts tokens and cost;
- the tools: OpenHands' terminal (its subprocess backend) and file editor, working in ``/home``;
- the task: MLE-bench's instructions (``/home/instructions.md``), then the competition's description;
- the limits: at most ``OPENHANDS_STEPS`` (500) steps, and the run's time limit: near its end the
  conversation is paused, so the journal and the submission check still happen;
- the record: OpenHands' own event files in ``/home/logs/openhands/``, and ``/home/logs/journal.jsonl``,
  one line per action (its tool, thought, input and, once it comes, its observation as the model saw it:
  the terminal's notes around the output, such as "the previous command is still running", included) in
  the form ``podium serve`` draws;
- the seed: the run's ``SEED`` is the model's sampling seed (OpenHands' ``LLM(seed=...)``, which LiteLLM
  sends where the provider takes one) and Python's ``random``'s;
- the submission: the sample submission is in place first (so a run that writes none is still
  graded); at the end the file in place is checked through the validation endpoint and the result logged.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.append(os.environ.get("PODIUM_HOME", "/home"))  # podium_submission.py, podium_journal.py: shipped by podium

from podium_journal import task
from podium_submission import start

HOME = Path(os.environ.get("PODIUM_HOME", "/home"))
LOGS = HOME / "logs"
_OUTPUT_CHARS = 4000
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # the terminal's control sequences, left out of the journal


def _log(message: str) -> None:
    print(f"[openhands {time.strftime('%H:%M:%S')}] {message}", flush=True)


def _text(value: Any) -> str:
    """The text of an SDK value (text contents, an observation, a message), or its JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (list, tuple)):
        return "\n".join(_text(v) for v in value)
    for attribute in ("text", "to_llm_content"):
        found = getattr(value, attribute, None)
        if found is not None:
            return _text(found() if callable(found) else found)
    dump = getattr(value, "model_dump", None)
    return json.dumps(dump(mode="json"), default=str)[:_OUTPUT_CHARS] if dump else str(value)


def _seen(event: Any) -> str:
    """What the model was told of an observation: the event's message to it (the terminal's prefix and suffix,
    e.g. that the previous command is still running, with the output), else the observation's own text."""
    try:
        return _text(event.to_llm_message().content)
    except Exception:  # an event of another shape: its observation, or its error
        return _text(getattr(event, "observation", None) or getattr(event, "error", None))


class Journal:
    """``journal.jsonl``: a node per action; its observation rewrites the node's line (the last one counts)."""

    def __init__(self, path: Path, started: float) -> None:
        self.path = path
        self.started = started
        self.nodes: dict[str, dict[str, Any]] = {}
        self.lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def _write(self, node: dict[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(node) + "\n")

    def on_event(self, event: Any) -> None:
        kind = type(event).__name__
        with self.lock:
            if kind == "ActionEvent":
                action = getattr(event, "action", None)
                arguments = action.model_dump(mode="json", exclude={"kind"}) if action is not None else {}
                node: dict[str, Any] = {
                    "id": len(self.nodes), "parent": len(self.nodes) - 1 if self.nodes else None,
                    "operator": str(getattr(event, "tool_name", "action")),
                    "plan": _text(getattr(event, "thought", None)), "summary": json.dumps(arguments)[:2000],
                    "started_s": round(time.monotonic() - self.started, 2), "output_tail": "", "is_bug": False,
                    "code_file": arguments.get("path") if str(arguments.get("path", "")).endswith(".py") else None,
                }  # fmt: skip
                self.nodes[str(getattr(event, "tool_call_id", node["id"]))] = node
                self._write(node)
            elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
                found = self.nodes.get(str(getattr(event, "tool_call_id", "")))
                if found is None:
                    return
                node = found
                output = _seen(event)
                node["output_tail"] = _ESCAPES.sub("", output)[-_OUTPUT_CHARS:]
                node["seconds"] = round(time.monotonic() - self.started - node["started_s"], 2)
                node["is_bug"] = kind != "ObservationEvent" or bool(getattr(event.observation, "is_error", False))
                self._write(node)


def _llm(model: str) -> Any:
    from openhands.sdk import LLM

    provider = os.environ.get("PODIUM_LLM_PROVIDER", "openai")
    # OPENHANDS_STRING_CONTENT=1: messages' content as plain strings, for OpenAI-compatible servers that
    # refuse content given as a list of parts (llama.cpp's); unset, OpenHands decides per model
    strings = True if os.environ.get("OPENHANDS_STRING_CONTENT") == "1" else None
    seed = _seed()
    if provider == "anthropic":
        return LLM(model=f"anthropic/{model}", base_url=os.environ["ANTHROPIC_BASE_URL"],
                   api_key=os.environ.get("ANTHROPIC_API_KEY", "podium"), usage_id="agent", seed=seed)  # fmt: skip
    return LLM(model=f"openai/{model}", base_url=os.environ["OPENAI_BASE_URL"],
               api_key=os.environ.get("OPENAI_API_KEY", "podium"), usage_id="agent",
               force_string_serializer=strings, seed=seed)  # fmt: skip


def _seed() -> int:
    """The run's seed (``SEED``, set by podium; 0 outside it)."""
    return int(os.environ.get("SEED") or 0)


def main() -> int:
    random.seed(_seed())
    begun = start(HOME, "OPENHANDS_MODEL", _log, min_margin=15.0)
    steps = int(os.environ.get("OPENHANDS_STEPS") or 500)
    model, limit, margin = begun.model, begun.limit, begun.margin
    if not model:
        return 0

    from openhands.sdk import Agent, Conversation, Tool
    from openhands.tools.file_editor import FileEditorTool
    from openhands.tools.terminal import TerminalTool

    journal = Journal(LOGS / "journal.jsonl", begun.started)
    tools = [Tool(name=TerminalTool.name, params={"terminal_type": "subprocess"}), Tool(name=FileEditorTool.name)]
    agent = Agent(llm=_llm(model), tools=tools)
    conversation = Conversation(
        agent=agent, workspace=str(HOME), persistence_dir=str(LOGS / "openhands"), max_iteration_per_run=steps,
        callbacks=[journal.on_event], visualizer=None, delete_on_close=False,
    )  # fmt: skip
    conversation.send_message(task(HOME))
    _log(f"model {model}; at most {steps} steps in {limit:.0f} s")
    failure: list[BaseException] = []

    def run() -> None:
        try:
            conversation.run()
        except BaseException as error:  # the agent's own failure: logged, the submission check still happens
            failure.append(error)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=max(1.0, begun.seconds_left()))
    if worker.is_alive():
        _log("time is nearly up: pausing the conversation")
        conversation.pause()
        worker.join(timeout=margin / 2)
    if failure:
        _log(f"OpenHands stopped with {type(failure[0]).__name__}: {str(failure[0])[:1000]}")
    state = getattr(conversation, "state", None)
    _log(f"OpenHands finished ({getattr(state, 'execution_status', 'unknown')}); {len(journal.nodes)} action(s)")
    begun.submission.check_in_place(_log)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The research agent's actions: what one step may do, each with its JSON inputs and an observation.

Files are named relative to the working folder (``/home/code``) or by an absolute path under
``/home``; writing is allowed in the working folder only (scripts the agent runs may write elsewhere,
as the instructions allow). Every observation is text, cut to a size the next prompt can hold.
``Edit Script (AI)``, ``Understand File`` and ``Reflection`` make model calls of their own (the second
call the design has): an edit asks the model for the whole rewritten script, an understanding
summarises the file part by part and combines the notes, a reflection thinks over the research log.

The actions offered in the prompt are MLAgentBench's research agent's by default (:data:`OFFERED`:
its tools less those its agent removes from the prompt, and less Request Help, which it drops when
not interactive). ``Read File``, ``Write File`` and ``Append File`` are offered too with
``MLAB_FILE_ACTIONS=1``; as in MLAgentBench, an answer that names one of them anyway is carried out.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from podium_llm import Completion, LLMClient

__all__ = ["ACTIONS", "FILE_ACTIONS", "OFFERED", "Action", "ActionError", "Tools", "describe_actions", "offered"]

PROMPTS = Path(__file__).parent / "prompts"
_OUTPUT_CHARS = 10_000  # an executed script's output shown in the observation (its end)
_READ_CHARS = 20_000
_INSPECT_LINES = 100
_CHUNK_CHARS = 12_000  # one part of a file for Understand File
_CHUNKS = 4
_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL)


class ActionError(Exception):
    """The action could not be done as asked; its message is the observation."""


@dataclass(frozen=True)
class Action:
    name: str
    purpose: str
    inputs: dict[str, str]  # input name -> what it is
    run: Callable[[Tools, dict[str, Any]], str]


@dataclass
class Tools:
    """What the actions work on: the working folder, the model, the time limit of one script."""

    workspace: Path
    client: LLMClient | None
    step_timeout: Callable[[], float]
    readable: tuple[Path, ...] = (Path("/home"),)
    backups: dict[Path, list[bytes | None]] = field(default_factory=dict)
    completions: list[Completion] = field(default_factory=list)  # the sub-calls of the current step
    task: str = ""  # the research problem, for a reflection
    research_log: Callable[[], str] = field(default=lambda: "")  # the log as it stands, for a reflection

    def path(self, name: Any, *, write: bool = False) -> Path:
        """The file an input names, inside the folders the action may use."""
        if not isinstance(name, str) or not name.strip():
            raise ActionError(f"a file name must be a non-empty text, got {name!r}")
        path = Path(os.path.normpath(self.workspace / name.strip()))
        allowed = (self.workspace,) if write else (self.workspace, *self.readable)
        if not any(path == root or root in path.parents for root in allowed):
            where = str(self.workspace) if write else ", ".join(str(r) for r in allowed)
            raise ActionError(f"{name} is outside the folders this action may use ({where})")
        return path

    def ask(self, prompt: str) -> str:
        """A model call of the action's own; its tokens count for the step."""
        if self.client is None:
            raise ActionError("no model to ask")
        system = (PROMPTS / "system.md").read_text(encoding="utf-8")
        answer = self.client.complete(system, prompt)
        self.completions.append(answer)
        return answer.text

    def remember(self, path: Path) -> None:
        """Keep the file's content (None: it did not exist) so an edit can be undone."""
        self.backups.setdefault(path, []).append(path.read_bytes() if path.is_file() else None)


def _text(path: Path, limit: int) -> str:
    if not path.is_file():
        raise ActionError(f"{path} is not a file")
    with open(path, "rb") as handle:
        data = handle.read(limit + 1)
    text = data[:limit].decode("utf-8", "replace")
    return text + (f"\n[... cut at {limit} characters]" if len(data) > limit else "")


def _fill(prompt: str, **values: Any) -> str:
    return (PROMPTS / f"{prompt}.md").read_text(encoding="utf-8").format(**values)


def list_files(tools: Tools, args: dict[str, Any]) -> str:
    folder = tools.path(args.get("dir_path") or ".")
    if not folder.is_dir():
        raise ActionError(f"{folder} is not a folder")
    lines = []
    for entry in sorted(folder.iterdir())[:500]:
        kind = "/" if entry.is_dir() and not entry.is_symlink() else ""
        size = f" ({entry.lstat().st_size:,} bytes)" if not kind else ""
        lines.append(f"{entry.name}{kind}{size}")
    return "\n".join(lines) or "(empty)"


def read_file(tools: Tools, args: dict[str, Any]) -> str:
    return _text(tools.path(args.get("file_name")), _READ_CHARS)


def write_file(tools: Tools, args: dict[str, Any], *, append: bool = False) -> str:
    path = tools.path(args.get("file_name"), write=True)
    content = args.get("content")
    if not isinstance(content, str):
        raise ActionError("content must be a text")
    tools.remember(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a" if append else "w", encoding="utf-8") as handle:
        handle.write(content)
    return f"{'appended to' if append else 'wrote'} {path.name}: {len(content):,} characters"


def copy_file(tools: Tools, args: dict[str, Any]) -> str:
    source = tools.path(args.get("source"))
    destination = tools.path(args.get("destination"), write=True)
    if not source.is_file():
        raise ActionError(f"{source} is not a file")
    tools.remember(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, destination)
    return f"copied {source} to {destination}"


def inspect_lines(tools: Tools, args: dict[str, Any]) -> str:
    path = tools.path(args.get("script_name"))
    try:
        start, end = int(args.get("start_line_number", 1)), int(args.get("end_line_number", _INSPECT_LINES))
    except (TypeError, ValueError):
        raise ActionError("start_line_number and end_line_number must be whole numbers") from None
    if end - start + 1 > _INSPECT_LINES or end < start or start < 1:
        raise ActionError(f"give 1 <= start <= end, at most {_INSPECT_LINES} lines")
    lines = _text(path, 4 * _READ_CHARS).splitlines()
    shown = [f"{n}: {line}" for n, line in enumerate(lines[start - 1 : end], start=start)]
    return f"{path.name} has {len(lines)} lines; lines {start} to {min(end, len(lines))}:\n" + "\n".join(shown)


def edit_script(tools: Tools, args: dict[str, Any]) -> str:
    path = tools.path(args.get("script_name"))
    save = tools.path(args.get("save_name") or args.get("script_name"), write=True)
    instruction = args.get("edit_instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise ActionError("edit_instruction must say what to change")
    old = _text(path, 4 * _READ_CHARS) if path.is_file() else ""
    answer = tools.ask(_fill("edit", name=path.name, script=old, instruction=instruction.strip()))
    blocks = _CODE.findall(answer)
    if not blocks or not max(blocks, key=len).strip():
        raise ActionError("the edit came back without a ```python block; the file is unchanged")
    new = max(blocks, key=len).rstrip() + "\n"
    tools.remember(save)
    save.parent.mkdir(parents=True, exist_ok=True)
    save.write_text(new, encoding="utf-8")
    diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), path.name, save.name))
    return f"the edited script is saved as {save.name}. The diff:\n" + (diff[:_READ_CHARS] or "(no change)")


def undo_edit(tools: Tools, args: dict[str, Any]) -> str:
    path = tools.path(args.get("script_name"), write=True)
    versions = tools.backups.get(path)
    if not versions:
        raise ActionError(f"there is no edit of {path.name} to undo")
    previous = versions.pop()
    if previous is None:
        path.unlink(missing_ok=True)
        return f"{path.name} did not exist before the edit: it is removed"
    path.write_bytes(previous)
    return f"{path.name} is back as it was before the last edit:\n" + _text(path, _READ_CHARS)


def execute_script(tools: Tools, args: dict[str, Any]) -> str:
    path = tools.path(args.get("script_name"))
    if not path.is_file():
        raise ActionError(f"{path} is not a file")
    timeout = tools.step_timeout()
    started = time.monotonic()
    log = tools.workspace / ".mlab-output.log"
    with open(log, "wb") as out:
        child = subprocess.Popen(
            [sys.executable, str(path)], cwd=tools.workspace, stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
        try:
            code: int | None = child.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)  # what it started in the background goes too
        child.wait()
    output = log.read_bytes().decode("utf-8", "replace")
    log.unlink(missing_ok=True)
    if len(output) > _OUTPUT_CHARS:
        output = f"[... the first {len(output) - _OUTPUT_CHARS:,} characters cut]\n" + output[-_OUTPUT_CHARS:]
    seconds = time.monotonic() - started
    ending = f"stopped after {timeout:.0f} s, its time limit" if code is None else f"exit code {code}"
    return f"The script ran for {seconds:.1f} s ({ending}). Its output:\n{output or '(none)'}"


def understand_file(tools: Tools, args: dict[str, Any]) -> str:
    path = tools.path(args.get("file_name"))
    things = args.get("things_to_look_for")
    if not isinstance(things, str) or not things.strip():
        raise ActionError("things_to_look_for must say what to look for")
    text = _text(path, _CHUNK_CHARS * _CHUNKS)
    parts = [text[i : i + _CHUNK_CHARS] for i in range(0, len(text), _CHUNK_CHARS)] or [""]
    notes = []
    for number, part in enumerate(parts, start=1):
        label = "the whole" if len(parts) == 1 else f"part {number} of {len(parts)}"
        notes.append(tools.ask(_fill("understand", part=label, name=path.name, content=part, things=things)))
    if len(notes) == 1:
        return notes[0]
    listed = "\n\n".join(f"Part {n}: {note}" for n, note in enumerate(notes, start=1))
    return tools.ask(_fill("combine", name=path.name, things=things, notes=listed))


def reflection(tools: Tools, args: dict[str, Any]) -> str:
    things = args.get("things_to_reflect_on")
    if not isinstance(things, str) or not things.strip():
        raise ActionError("things_to_reflect_on must say what to reflect on")
    log = tools.research_log() or "(nothing yet)"
    return tools.ask(_fill("reflect", task=tools.task, research_log=log, things=things.strip()))


def final_answer(tools: Tools, args: dict[str, Any]) -> str:
    return str(args.get("final_answer") or args.get("answer") or "done")


ACTIONS: dict[str, Action] = {
    a.name: a
    for a in (
        Action("List Files", "list a folder's files and sizes", {"dir_path": 'a folder, e.g. "."'}, list_files),
        Action(
            "Read File",
            f"read a text file (its first {_READ_CHARS:,} characters)",
            {"file_name": "the file"},
            read_file,
        ),
        Action(
            "Write File",
            "write a file in the working folder (replacing it)",
            {"file_name": "the file", "content": "its whole text"},
            write_file,
        ),
        Action(
            "Append File",
            "add text at the end of a file in the working folder",
            {"file_name": "the file", "content": "the text to add"},
            lambda tools, args: write_file(tools, args, append=True),
        ),
        Action(
            "Copy File",
            "copy a file into the working folder",
            {"source": "the file to copy", "destination": "the new file"},
            copy_file,
        ),
        Action(
            "Inspect Script Lines",
            f"show some lines of a script, numbered (at most {_INSPECT_LINES})",
            {"script_name": "the script", "start_line_number": "a number", "end_line_number": "a number"},
            inspect_lines,
        ),
        Action(
            "Edit Script (AI)",
            "have an assistant rewrite a script by your instruction; you see the diff",
            {
                "script_name": "the script (a new one may be named: it starts empty)",
                "edit_instruction": "what to change, precisely",
                "save_name": "where to save the result",
            },
            edit_script,
        ),
        Action(
            "Undo Edit Script",
            "put a file back as it was before its last write or edit",
            {"script_name": "the file"},
            undo_edit,
        ),
        Action(
            "Execute Script",
            "run a Python script in the working folder and see its output (its end)",
            {"script_name": "the script"},
            execute_script,
        ),
        Action(
            "Understand File",
            "have an assistant read a long file and report what you ask about",
            {"file_name": "the file", "things_to_look_for": "what to find out"},
            understand_file,
        ),
        Action(
            "Reflection",
            "have an assistant look over the research log and reflect on what you ask",
            {"things_to_reflect_on": "what to reflect on, and what to come back with"},
            reflection,
        ),
        Action(
            "Final Answer",
            "end the work: the latest valid submission.csv is what gets graded",
            {"final_answer": "a short summary of what you did and found"},
            final_answer,
        ),
    )
}


#: The actions MLAgentBench's research agent offers in its prompt by default.
OFFERED = (
    "List Files",
    "Copy File",
    "Undo Edit Script",
    "Execute Script",
    "Final Answer",
    "Understand File",
    "Inspect Script Lines",
    "Edit Script (AI)",
    "Reflection",
)
#: Offered too with ``MLAB_FILE_ACTIONS=1`` (MLAgentBench has them but leaves them out of its prompt).
FILE_ACTIONS = ("Read File", "Write File", "Append File")


def offered(file_actions: bool = False) -> list[str]:
    """The names of the actions the prompt offers, in :data:`ACTIONS`' order."""
    names = set(OFFERED) | (set(FILE_ACTIONS) if file_actions else set())
    return [name for name in ACTIONS if name in names]


def describe_actions(names: list[str] | None = None) -> str:
    """The action list for the prompt (``names``, else every action): each name, what it does, its JSON inputs."""
    lines = []
    for name in names if names is not None else list(ACTIONS):
        action = ACTIONS[name]
        inputs = ", ".join(f'"{k}": {v}' for k, v in action.inputs.items())
        lines.append(f"- {action.name}: {action.purpose}. Input: {{{inputs}}}")
    return "\n".join(lines)

"""An agent's search tree, read from the journal it left: podium's ``search`` agent or AIDE.

- podium's agent: ``logs/journal.jsonl``, one line per node (:mod:`podium.agents.builtin.search.journal`:
  id, parent, operator, plan, code file, seconds, exit code, output tail, metric, validity, tokens);
  a node's code is the file it names under ``/home/code``, read from the run's ``code/`` folder.
- AIDE: ``logs/aide/<experiment>/journal.json`` (AIDE's own serialisation: ``nodes`` with ``id``,
  ``step``, ``plan``, ``code``, ``_term_out``, ``exec_time``, ``metric`` {value, maximize},
  ``is_buggy``, ``analysis``, and the tree in ``node2parent``); the newest experiment is shown.

Both become :class:`Node` lists in the order the agent made them, with each node's children.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from podium.paths import RunPaths
from podium.serve.runfiles import inside, read_head
from podium.untrusted import loads

__all__ = ["Journal", "Node", "load_journal"]

_JOURNAL_BYTES = 64 * 1024 * 1024
#: Where the agent's folders are inside the sandbox, and which of the run's folders each is.
_MOUNTS = {"/home/code": "code", "/home/logs": "logs", "/home/submission": "submission"}


@dataclass
class Node:
    """One attempt of the search: what it tried, its code, what the code printed, and how it scored."""

    id: str
    parent: str | None
    step: int
    operator: str
    plan: str = ""
    code: str | None = None
    output: str = ""
    metric: float | None = None
    buggy: bool = True
    valid: bool | None = None
    seconds: float | None = None
    summary: str = ""
    detail: dict[str, Any] = field(default_factory=dict)  # the journal's other fields, as written
    children: list[str] = field(default_factory=list)


@dataclass
class Journal:
    """The nodes of a journal file, which agent wrote it, and where it lies in the run folder."""

    kind: str  # podium | aide
    path: str  # relative to the run folder
    nodes: list[Node]

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def roots(self) -> list[Node]:
        known = {n.id for n in self.nodes}
        return [n for n in self.nodes if n.parent is None or n.parent not in known]


def load_journal(run: RunPaths) -> Journal | None:
    """The run's journal (podium's agent first, then AIDE's newest), or None when it left none."""
    podium_journal = run.logs / "journal.jsonl"
    if podium_journal.is_file():
        return _podium(run, podium_journal)
    aide = sorted(_aide_journals(run), key=lambda p: p.stat().st_mtime)
    return _aide(run, aide[-1]) if aide else None


def _aide_journals(run: RunPaths) -> list[Path]:
    folder = run.logs / "aide"
    if not inside(run.root, folder) or not folder.is_dir():
        return []
    return [p for p in folder.glob("*/journal.json") if inside(run.root, p)]


def _link(nodes: list[Node]) -> list[Node]:
    by_id = {n.id: n for n in nodes}
    for n in nodes:
        if n.parent is not None and n.parent in by_id and n.id not in by_id[n.parent].children:
            by_id[n.parent].children.append(n.id)
    return nodes


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _podium(run: RunPaths, path: Path) -> Journal:
    head = read_head(run.root, path, _JOURNAL_BYTES)
    nodes: dict[str, Node] = {}
    for line in (head[0] if head else "").splitlines():
        with contextlib.suppress(ValueError):  # UntrustedJSONError too: a deep line is no node
            entry = loads(line, max_bytes=len(line.encode()), max_depth=64)
            if not isinstance(entry, dict) or "id" not in entry:
                continue
            node_id = str(entry["id"])
            parent = entry.get("parent")
            nodes[node_id] = Node(  # a node written twice keeps its last line
                id=node_id,
                parent=None if parent is None else str(parent),
                step=int(entry["id"]) if isinstance(entry["id"], int) else len(nodes),
                operator=_text(entry.get("operator")) or "node",
                plan=_text(entry.get("plan")),
                code=_code_file(run, entry.get("code_file")),
                output=_text(entry.get("output_tail")),
                metric=_number(entry.get("metric")),
                buggy=bool(entry.get("is_bug", True)),
                valid=bool(entry.get("valid")),
                seconds=_number(entry.get("seconds")),
                summary=_text(entry.get("summary") or entry.get("failure")),
                detail={k: entry.get(k) for k in ("exit_code", "killed_for", "validation", "failure",
                                                  "input_tokens", "output_tokens", "code_file") if k in entry},
            )  # fmt: skip
    return Journal("podium", str(path.relative_to(run.root)), _link(list(nodes.values())))


def _code_file(run: RunPaths, named: Any) -> str | None:
    """The code of a node, from the file its journal line names (a path inside the sandbox)."""
    if not isinstance(named, str) or not named:
        return None
    where = PurePosixPath(named)
    for mount, folder in _MOUNTS.items():
        with contextlib.suppress(ValueError):
            relative = where.relative_to(mount)
            path = run.root / folder / relative
            head = read_head(run.root, path)
            return None if head is None else head[0] + ("\n[... cut]" if head[1] else "")
    return None


def _aide(run: RunPaths, path: Path) -> Journal | None:
    head = read_head(run.root, path, _JOURNAL_BYTES)
    try:
        data = loads(head[0], max_bytes=_JOURNAL_BYTES * 4, max_depth=64) if head else None
    except ValueError:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("nodes"), list):
        return None
    linked = data.get("node2parent")
    parents: dict[str, Any] = linked if isinstance(linked, dict) else {}
    entries = [n for n in data["nodes"] if isinstance(n, dict) and "id" in n]
    buggy = {str(n["id"]): bool(n.get("is_buggy", True)) for n in entries}
    nodes = []
    for i, entry in enumerate(entries):
        node_id = str(entry["id"])
        scored = entry.get("metric")
        metric: dict[str, Any] = scored if isinstance(scored, dict) else {}
        output = entry.get("_term_out")
        parent = parents.get(node_id)
        nodes.append(
            Node(
                id=node_id,
                parent=None if parent is None else str(parent),
                step=int(entry["step"]) if isinstance(entry.get("step"), int) else i,
                operator="draft" if parent is None else "debug" if buggy.get(str(parent), True) else "improve",
                plan=_text(entry.get("plan")),
                code=_text(entry.get("code")),
                output="".join(map(_text, output)) if isinstance(output, list) else _text(output),
                metric=_number(metric.get("value")),
                buggy=bool(entry.get("is_buggy", True)),
                seconds=_number(entry.get("exec_time")),
                summary=_text(entry.get("analysis")),
                detail={k: entry.get(k) for k in ("exc_type", "exc_info") if entry.get(k) is not None}
                | ({"maximize": metric.get("maximize")} if "maximize" in metric else {}),
            )
        )
    nodes.sort(key=lambda n: n.step)
    return Journal("aide", str(path.relative_to(run.root)), _link(nodes))

"""The search agent's parts (issue 11 §2), tested alone: code extraction, the repair of unusable
answers, structured reviews, the policies, the journal, and containment of a node's code."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from podium.agents import BUILTIN
from podium.services import sandbox_file

sys.path.insert(0, str(BUILTIN / "search"))
sys.path.insert(0, str(sandbox_file("podium_submission.py").parent))

from journal import Journal
from operators import Context, Unusable, extract_code, review, write_code
from podium_llm import Completion
from podium_submission import Submission
from policies import Evolutionary, Greedy
from runner import run_code

CONTEXT = Context(task="Predict y.", data_files="- train.csv", hardware="2 CPU core(s)", packages="numpy")


@dataclass
class FakeClient:
    """Answers from a list, recording the prompts (the model side of the operators)."""

    answers: list[Completion]
    prompts: list[str] = field(default_factory=list)

    def complete(self, system: str, prompt: str, *, tool: dict[str, Any] | None = None) -> Completion:
        self.prompts.append(prompt)
        return self.answers.pop(0)


def text(value: str) -> Completion:
    return Completion(value, None, None, 10, 20)


def tool(arguments: dict[str, Any] | None, error: str | None = None) -> Completion:
    return Completion("", arguments, error, 5, 5)


def test_extract_code_takes_the_longest_python_block() -> None:
    answer = "Plan: fit a tree.\n```python\nprint(1)\n```\nand\n```python\nimport x\nprint(2)\n```\n"
    assert extract_code(answer) == ("Plan: fit a tree.\n```python\nprint(1)\n```\nand", "import x\nprint(2)\n")
    assert extract_code("no code at all") is None
    assert extract_code("```python\n\n```") is None


def test_an_answer_without_code_gets_one_repair_then_fails_the_node(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "journal.jsonl")
    node = journal.new("draft", None, 0.0)
    client = FakeClient([text("I would use a random forest."), text("```python\nprint('ok')\n```")])
    values = {"step_minutes": "5", "time_left": "1 h"}
    assert write_code(client, CONTEXT, node, None, **values) == "print('ok')\n"  # type: ignore[arg-type]
    assert "could not be used" in client.prompts[1] and node.input_tokens == 20 and node.output_tokens == 40
    stubborn = FakeClient([text("prose"), text("more prose")])
    with pytest.raises(Unusable, match="twice without a python code block"):
        write_code(stubborn, CONTEXT, journal.new("draft", None, 0.0), None, **values)  # type: ignore[arg-type]


def test_the_review_is_structured_and_a_malformed_call_is_repaired_once(tmp_path: Path) -> None:
    node = Journal(tmp_path / "j.jsonl").new("draft", None, 0.0)
    good = {"is_bug": False, "summary": "fine", "metric": 0.81, "lower_is_better": False}
    client = FakeClient([tool(None, "the tool call's arguments are not JSON"), tool(good)])
    assert review(client, CONTEXT, node, "print(1)", "yes") == good  # type: ignore[arg-type]
    assert "not JSON" in client.prompts[1]
    bad = FakeClient(
        [tool({"is_bug": False, "summary": "x", "metric": "0.8", "lower_is_better": False}), tool({"summary": "x"})]
    )
    with pytest.raises(Unusable, match="lacks is_bug, metric, lower_is_better"):
        review(bad, CONTEXT, node, "print(1)", "yes")  # type: ignore[arg-type]
    assert "metric must be a number" in bad.prompts[1]


def _good(journal: Journal, metric: float, operator: str = "draft", parent: Any = None) -> Any:
    node = journal.new(operator, parent, 0.0)
    node.is_bug, node.valid, node.metric, node.lower_is_better, node.code_file = False, True, metric, True, "x.py"
    return node


def test_greedy_drafts_debugs_then_improves_the_best(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    policy = Greedy(drafts=2, debug_prob=1.0, max_debug_depth=1)
    assert policy.next(journal) == ("draft", None)
    failed = journal.new("draft", None, 0.0)
    failed.code_file = "x.py"
    assert policy.next(journal) == ("draft", None)
    best = _good(journal, 0.3)
    assert policy.next(journal) == ("debug", failed)
    journal.new("debug", failed, 0.0).code_file = "y.py"  # a debug child at the depth limit
    _good(journal, 0.5)
    assert policy.next(journal) == ("improve", best)  # lower is better: 0.3


def test_evolutionary_improves_a_tournament_winner(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "j.jsonl")
    nodes = [_good(journal, m) for m in (0.9, 0.2, 0.5)]
    policy = Evolutionary(drafts=3, debug_prob=0.0, tournament=3, fresh_prob=0.0)
    assert policy.next(journal) == ("improve", nodes[1])


def test_the_journal_writes_one_line_per_node(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "logs" / "journal.jsonl")
    node = _good(journal, 0.4)
    journal.write(node)
    (line,) = (tmp_path / "logs" / "journal.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert record["id"] == 0 and record["metric"] == 0.4 and record["operator"] == "draft" and "children" not in record


def test_node_code_is_stopped_for_time_and_memory_and_its_output_kept(tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text(
        "import subprocess, time\nsubprocess.Popen(['sleep', '60'])\nprint('started', flush=True)\ntime.sleep(60)\n"
    )
    started = time.monotonic()
    result = run_code(slow, tmp_path, timeout_s=1.5, memory_bytes=None)
    assert result.killed_for == "time" and result.exit_code is None and time.monotonic() - started < 10
    assert "started" in result.output_tail and "stopped after 2 s" in result.output_tail
    hungry = tmp_path / "hungry.py"
    hungry.write_text(
        "import time\nblocks = []\nwhile True:\n    blocks.append(bytearray(20 << 20))\n    time.sleep(0.05)\n"
    )
    result = run_code(hungry, tmp_path, timeout_s=60, memory_bytes=200 << 20)
    assert result.killed_for == "memory" and result.peak_rss_bytes > 150 << 20
    crash = tmp_path / "crash.py"
    crash.write_text("raise ValueError('boom')\n")
    result = run_code(crash, tmp_path, timeout_s=30, memory_bytes=None)
    assert result.exit_code == 1 and "ValueError: boom" in result.output_tail


def test_the_submission_is_replaced_atomically_and_snapshotted(tmp_path: Path) -> None:
    target = tmp_path / "submission" / "submission.csv"
    submission = Submission(target, tmp_path / "snapshots", time.monotonic())
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("id,y\n1,0\n")
    second.write_text("id,y\n1,1\n")
    submission.place(first, "sample")
    submission.place(second, "node0003", 0.5)
    assert target.read_text() == "id,y\n1,1\n" and not target.is_symlink()
    index = [json.loads(line) for line in (tmp_path / "snapshots" / "snapshots.jsonl").read_text().splitlines()]
    assert [i["source"] for i in index] == ["sample", "node0003"] and index[1]["metric"] == 0.5
    assert all((tmp_path / "snapshots" / i["file"]).is_file() for i in index)

"""podium's research agent (`mlab`, after MLAgentBench's research-agent design; issue 22 §2): its answer
format, its actions, and end to end on two practice competitions against the scripted model server,
through podium's real proxy, in bwrap: a malformed answer retried, a crash debugged by an AI edit, a
valid submission placed through the endpoint, the research log compressed, tokens counted, a journal."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from podium import registry
from podium.agents import BUILTIN
from podium.paths import RunPaths
from podium.serve.journal import load_journal
from podium.services import sandbox_file
from podium.testing import Reply, ScriptedLLM, research_step
from test_llm_agents import _agent as copy_agent
from test_llm_agents import _run as run_podium

sys.path.insert(0, str(BUILTIN / "mlab"))
sys.path.insert(0, str(sandbox_file("podium_llm.py").parent))

from actions import ACTIONS, FILE_ACTIONS, ActionError, Tools, describe_actions, offered
from answer import Malformed, parse
from podium_llm import Completion
from research_log import Entry, ResearchLog

COMPS = ("practice-wine", "practice-titanic")
INPUTS = {name: action.inputs for name, action in ACTIONS.items()}
BUGGY = "import pandas as pd\ntrain = pd.read_csv('/home/data/train.csv')\nprint(train['no_such_column'])\n"
FIXED = """\
import pandas as pd
train = pd.read_csv('/home/data/train.csv')
sample = pd.read_csv('/home/data/sample_submission.csv')
print('rows:', len(train))
sample.to_csv('submission.csv', index=False)
"""


def test_the_answer_format_is_read_part_by_part() -> None:
    text = research_step("List Files", {"dir_path": "."}, thought="look around")
    step = parse(text.replace("Reflection:", "**Reflection:**"), INPUTS)
    assert step.action == "List Files" and step.action_input == {"dir_path": "."} and step.thought == "look around"
    fenced = research_step("edit script", {"script_name": "a.py", "edit_instruction": "x"}).replace(
        'Action Input: {', 'Action Input: ```json\n{').replace("}\n", "}\n```\n")  # fmt: skip
    assert parse(fenced, INPUTS).action == "Edit Script (AI)"
    with pytest.raises(Malformed, match="lacks Research Plan and Status, Fact Check"):
        parse("Reflection: a\nThought: b\nAction: List Files\nAction Input: {}", INPUTS)
    with pytest.raises(Malformed, match="lacks Reflection"):
        parse("I will look at the data first.", INPUTS)
    with pytest.raises(Malformed, match="not an action"):
        parse(research_step("Run Everything", {}), INPUTS)
    with pytest.raises(Malformed, match="not valid JSON"):
        parse(research_step("Read File", {}).replace("{}", "{file_name: x}"), INPUTS)
    with pytest.raises(Malformed, match="lacks file_name"):
        parse(research_step("Read File", {}), INPUTS)
    assert all(name in describe_actions() for name in ACTIONS)


class FakeClient:
    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def complete(self, system: str, prompt: str) -> Completion:
        self.prompts.append(prompt)
        return Completion(self.answers.pop(0), None, None, 3, 4)


def test_the_actions_edit_undo_inspect_and_execute(tmp_path: Path) -> None:
    client = FakeClient("Here:\n```python\nprint('edited')\n```", "the file has two columns")
    tools = Tools(tmp_path, client, lambda: 2.0, readable=(tmp_path,))  # type: ignore[arg-type]
    run = {name: action.run for name, action in ACTIONS.items()}
    run["Write File"](tools, {"file_name": "a.py", "content": "print('one')\nprint('two')\n"})
    assert "2: print('two')" in run["Inspect Script Lines"](tools, {"script_name": "a.py", "start_line_number": 2,
                                                                    "end_line_number": 2})  # fmt: skip
    observed = run["Edit Script (AI)"](tools, {"script_name": "a.py", "edit_instruction": "print edited"})
    assert "+print('edited')" in observed and "Edit it as follows: print edited" in client.prompts[0]
    assert (tmp_path / "a.py").read_text() == "print('edited')\n"
    assert "The script ran" in (out := run["Execute Script"](tools, {"script_name": "a.py"})) and "edited" in out
    run["Undo Edit Script"](tools, {"script_name": "a.py"})
    assert (tmp_path / "a.py").read_text().startswith("print('one')")
    (tmp_path / "slow.py").write_text("import subprocess, time\nsubprocess.Popen(['sleep', '60'])\ntime.sleep(60)\n")
    assert "stopped after 2 s" in run["Execute Script"](tools, {"script_name": "slow.py"})
    assert (
        run["Understand File"](tools, {"file_name": "a.py", "things_to_look_for": "columns"})
        == "the file has two columns"
    )
    assert len(tools.completions) == 2
    with pytest.raises(ActionError, match="outside the folders"):
        run["Write File"](tools, {"file_name": "../escape.txt", "content": "x"})
    with pytest.raises(ActionError, match=r"no edit of b\.py"):
        run["Undo Edit Script"](tools, {"script_name": "b.py"})


def test_the_prompt_offers_the_actions_mlagentbenchs_research_agent_offers(tmp_path: Path) -> None:
    """Issue 28 §8: MLAgentBench's research agent leaves Read File, Write File and Append File (with its
    research-log, REPL and segment-edit tools) out of its prompt, and offers Reflection; mlab offered the
    first three and had no Reflection. They are offered with MLAB_FILE_ACTIONS=1 (an answer naming one is
    still carried out, as MLAgentBench does)."""
    assert offered() == ["List Files", "Copy File", "Inspect Script Lines", "Edit Script (AI)", "Undo Edit Script",
                         "Execute Script", "Understand File", "Reflection", "Final Answer"]  # fmt: skip
    shown = describe_actions(offered())
    assert "- Reflection:" in shown and not any(f"- {name}:" in shown for name in FILE_ACTIONS)
    assert all(f"- {name}:" in describe_actions(offered(file_actions=True)) for name in FILE_ACTIONS)
    client = FakeClient("The crash came from a missing column; the fix worked.")
    tools = Tools(tmp_path, client, lambda: 2.0, readable=(tmp_path,), task="Predict y.",  # type: ignore[arg-type]
                  research_log=lambda: "step 3: train.py crashed on column z")  # fmt: skip
    answer = ACTIONS["Reflection"].run(tools, {"things_to_reflect_on": "why did step 3 fail?"})
    assert answer == "The crash came from a missing column; the fix worked." and len(tools.completions) == 1
    assert all(part in client.prompts[0] for part in ("Predict y.", "crashed on column z", "why did step 3 fail?"))
    with pytest.raises(ActionError, match="things_to_reflect_on"):
        ACTIONS["Reflection"].run(tools, {})


def test_the_research_log_is_compressed_past_its_budget(tmp_path: Path) -> None:
    log = ResearchLog(tmp_path, budget_chars=800, recent=2)
    for n in range(1, 6):
        log.add(Entry(n, n - 1 or None, "Execute Script", 0.0, plan="plan " * 40, output_tail="out " * 100))
    assert log.compress(lambda text, words: "SUMMARY: tried five scripts") and log.compressions == 1
    assert log.text().startswith("Summary of the earlier steps:\nSUMMARY") and len(log.entries) == 2
    assert len((tmp_path / "journal.jsonl").read_text().splitlines()) == 5
    assert not log.compress(lambda text, words: "again")  # under budget now


class Model:
    """The scripted researcher, per competition: one malformed answer, a crashing script debugged by an
    AI edit, a valid submission, then the final answer; it answers edits, and summaries of the log."""

    def __init__(self) -> None:
        self.steps: Counter[str] = Counter()

    def __call__(self, request: dict[str, Any]) -> Any:
        prompt = request["body"]["messages"][-1]["content"]
        if "Edit it as follows" in prompt:
            return Reply("The column name was wrong.\n```python\n" + FIXED + "```")
        if "Summarise it for whoever continues" in prompt:
            return Reply("Summary: train.py crashed on a missing column, then was fixed.")
        comp = "wine" if "Wine Cultivars" in prompt else "titanic"
        if "could not be used" not in prompt:
            self.steps[comp] += 1
        step = self.steps[comp]
        if step == 1 and "could not be used" not in prompt:
            return Reply("I will look at the data first.")  # no parts at all: retried
        script = [
            ("List Files", {"dir_path": "/home/data"}),
            ("Write File", {"file_name": "train.py", "content": BUGGY}),
            ("Execute Script", {"script_name": "train.py"}),
            (
                "Edit Script (AI)",
                {"script_name": "train.py", "edit_instruction": "use an existing column", "save_name": "train.py"},
            ),
            ("Execute Script", {"script_name": "train.py"}),
            ("Final Answer", {"final_answer": "the sample-based submission is in place"}),
        ]
        action, arguments = script[min(step, len(script)) - 1]
        return Reply(research_step(action, arguments, thought=f"step {step} of {comp}"))


@pytest.fixture(scope="module")
def practice_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from podium.data.prepare import prepare_competition

    root = tmp_path_factory.mktemp("practice-data")
    for comp in COMPS:
        prepare_competition(registry.get(comp), root)
    return root


def _agent(tmp_path: Path, **env: str) -> Path:
    settings = {"MLAB_STEPS": "12", "MLAB_RETRIES": "2", "MLAB_STEP_TIMEOUT": "60", "MLAB_LOG_CHARS": "1500",
                "OMP_NUM_THREADS": "1"}  # fmt: skip
    return copy_agent(tmp_path, "mlab", settings, **env)


def run_mlab(agent: Path, model: Any, data: Path, runs: Path, env_dir: Path, *more: str) -> Any:
    """`podium run` of the agent on both practice competitions (``model``: anything with a base_url)."""
    return run_podium(agent, model, data, runs, env_dir, "--competitions", ",".join(COMPS), "--time-limit", "4m", *more)


def test_mlab_runs_end_to_end_on_two_practice_competitions(
    tmp_path: Path, practice_data: Path, minimal_env_dir: Path
) -> None:
    with ScriptedLLM([Model()] * 60) as model:
        result = run_mlab(_agent(tmp_path), model, practice_data, tmp_path / "runs", minimal_env_dir)
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    for comp in COMPS:
        run = tmp_path / "runs" / "default" / comp / "0"
        out = (run / "logs" / "agent.stdout.log").read_text()
        journal = [json.loads(line) for line in (run / "logs" / "journal.jsonl").read_text().splitlines()]
        actions = [step["operator"] for step in journal]
        assert actions == ["List Files", "Write File", "Execute Script", "Edit Script (AI)", "Execute Script",
                           "Final Answer"], out[-3000:]  # fmt: skip
        assert journal[0]["retries"] == 1 and "train.csv" in journal[0]["output_tail"]
        crash, fixed = journal[2], journal[4]
        assert crash["is_bug"] and "no_such_column" in crash["output_tail"] and not crash["valid"]
        assert "+sample.to_csv" in journal[3]["output_tail"] and journal[3]["input_tokens"] > 0
        assert not fixed["is_bug"] and fixed["valid"] and "passed the validation endpoint" in fixed["output_tail"]
        assert all(step["input_tokens"] > 0 and step["output_tokens"] > 0 for step in journal)
        assert "compressed" in out and (run / "logs" / "research_log.md").read_text().startswith("Summary")
        shown = load_journal(RunPaths(run))  # what podium serve draws: a chain of steps, scripts' code read back
        assert shown is not None and [n.operator for n in shown.nodes] == actions and FIXED in str(shown.nodes[4].code)
        snapshots = (run / "logs" / "snapshots" / "snapshots.jsonl").read_text().splitlines()
        assert [json.loads(s)["source"] for s in snapshots] == ["sample", "step0005"]
        record = json.loads((run / "record.json").read_text())
        assert record["grade"]["valid_submission"] and record["environment"]["name"] == "minimal"
        llm = record["llm"]
        assert llm["input_tokens"] > 0 and llm["output_tokens"] > 0 and llm["cost_usd"] is None
        assert llm["input_tokens"] >= sum(step["input_tokens"] for step in journal)
    calls = sum(json.loads((tmp_path / "runs" / "default" / c / "0" / "record.json").read_text())["llm"]["calls"]
                for c in COMPS)  # fmt: skip
    assert calls == len(asked) and all(r["body"]["max_tokens"] == 16384 for r in asked)
    assert all(r["body"]["seed"] == 0 for r in asked), "the run's SEED is the model's sampling seed"
    steps = [
        r["body"]["messages"][-1]["content"] for r in asked if "# How to answer" in r["body"]["messages"][-1]["content"]
    ]
    assert steps and all("- Reflection:" in p and "- Write File:" not in p for p in steps)  # Write File: not offered

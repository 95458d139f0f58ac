"""agent.yaml: the whole file checked against its schema, one line per problem naming file, key and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from podium.agents import load_agent
from podium.errors import UsageError
from podium.units import parse_size


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("name: x\ncommand: [a\n", "not valid YAML at line 3"),
        ("- python3\n- main.py\n", "must be a mapping of keys"),
        ("command: [python3]\nenviron: {A: 1}\n", "unknown key 'environ'. Fix: did you mean 'env'?"),
        ("command: [python3]\nresources: {cpus: lots}\n", "resources.cpus must be a number of CPU cores above 0"),
        ("command: [python3]\nresources: {cpus: 0}\n", "resources.cpus must be a number"),
        ("command: [python3]\nresources: {memry: 1G}\n", "unknown key 'resources.memry'. Fix: did you mean 'memory'?"),
        ("command: [python3]\nresources: {memory: -1G}\n", "resources.memory must be a positive size"),
        ("command: [python3]\nresources: {gpus: 1.5}\n", "resources.gpus must be a whole number"),
        ("command: python3 main.py\n", "command must be a list of words"),
        ("name: x\n", "command must be a list of words"),
        ("command: [python3]\nenv: [A]\n", "env must be a mapping"),
        ("command: [python3]\nenv: {A: }\n", "env.A must be a text or a number"),
        ("command: [python3]\nllm: {provider: openai, model: [x]}\n", "unknown key 'llm.model'. Fix: did you mean"),
        ("command: [python3]\nllm: {provider: openai, bridge: 'no'}\n", "llm.bridge must be true or false"),
        ("command: [python3]\nimage: ''\n", "image must be an image name"),
        ("command: [python3]\nname: 'my agent'\n", "name must be a word"),
    ],
)
def test_agent_yaml_is_checked_whole(tmp_path: Path, text: str, says: str) -> None:
    (tmp_path / "agent.yaml").write_text(text)
    with pytest.raises(UsageError) as error:
        load_agent(str(tmp_path))
    assert says in str(error.value) and str(tmp_path / "agent.yaml") in str(error.value)


def test_agent_yaml_resources_become_the_runs_defaults(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_text(
        "name: mine\ncommand: [python3, main.py]\nenv: {N: 1}\nresources: {cpus: 2, memory: 8GiB, disk: 50G, gpus: 1}\n"
    )
    agent = load_agent(str(tmp_path))
    assert (agent.name, agent.cpus, agent.memory_bytes, agent.disk_bytes, agent.gpus) == (
        "mine",
        2.0,
        8 << 30,
        50 << 30,
        1,
    )
    assert agent.env == {"N": "1"}
    assert parse_size("512M") == 512 << 20 and parse_size("16gb") == 16 << 30 and parse_size(1024) == 1024

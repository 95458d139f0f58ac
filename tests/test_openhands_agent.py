"""OpenHands natively (issue 22 §1): the `openhands` root-filesystem environment (Debian 13, Python 3.13,
openhands-sdk and openhands-tools from PyPI), the bwrap sandbox running an agent in it with nothing of
the host's system visible, and `podium run --agent openhands` end to end on two practice competitions
against the scripted model server through podium's real proxy: a crash debugged, a valid submission,
tokens counted, a journal.

The environment takes minutes to build (scripts/openhands_env.sh; CI starts it in the background and
these end-to-end tests run last and wait for its status line). Without it they are skipped, and under
PODIUM_REQUIRE_OPENHANDS=1 (CI) they fail instead. The profile and sandbox tests here need no build.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from podium.environments import find, load_profile
from podium.environments import rootfs as rootfs_module
from podium.errors import UsageError
from podium.paths import RunPaths
from podium.sandbox import BwrapSandbox
from podium.serve.journal import load_journal
from podium.testing import ScriptedLLM, ToolCall

ENV_DIR = os.environ.get("PODIUM_OPENHANDS_ENV_DIR")
REQUIRE = os.environ.get("PODIUM_REQUIRE_OPENHANDS") == "1"
WAIT_S = float(os.environ.get("PODIUM_OPENHANDS_WAIT_S", "2400"))
COMPS = ("practice-wine", "practice-titanic")


def test_the_openhands_profile_is_a_debian_13_root_filesystem() -> None:
    profile = load_profile("openhands")
    assert profile.rootfs is not None and profile.rootfs.suite == "trixie" and profile.rootfs.python == "python3.13"
    assert "openhands-sdk==1.58.2" in profile.rootfs.agent_requirements
    assert profile.rootfs.code_requirements == load_profile("minimal").requirements  # the agent's code: minimal's
    assert profile.folder_name.startswith("openhands-") and profile.digest == load_profile("openhands").digest
    with pytest.raises(UsageError, match="no GPU variant"):
        load_profile("openhands", gpu=True)


def test_a_rootfs_profile_is_checked(tmp_path: Path) -> None:
    bad = tmp_path / "mine.yaml"
    bad.write_text(
        "suite: trixie\npython: python3.13\nagent_venv: /opt/x\ndebian_packages: []\nagent_requirements: [a]\n"
    )
    with pytest.raises(UsageError, match="debian_packages must be a non-empty list"):
        load_profile(str(bad))
    bad.write_text("suite: trixie\nflavour: sweet\n")
    with pytest.raises(UsageError, match=r"unknown key.*flavour"):
        load_profile(str(bad))


def test_the_debian_mirror_is_the_one_apt_uses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    listing = tmp_path / "sources.list.d"
    listing.mkdir()
    (listing / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm\nComponents: main\n"
    )
    (listing / "other.list").write_text("deb https://packages.example/apt stable main\n")
    monkeypatch.setattr(rootfs_module, "_SOURCES", (tmp_path / "sources.list", listing))
    monkeypatch.delenv("PODIUM_DEBIAN_MIRROR", raising=False)
    assert rootfs_module.debian_mirror() == "http://mirror.example/debian"
    monkeypatch.setenv("PODIUM_DEBIAN_MIRROR", "http://other.example/debian")
    assert rootfs_module.debian_mirror() == "http://other.example/debian"


def test_bwrap_with_a_root_binds_that_folder_alone_as_slash(tmp_path: Path) -> None:
    from podium.sandbox._stage import Staged

    root = tmp_path / "rootfs"
    root.mkdir()
    staged = Staged(mounts=[], prefixes=[], etc_dir=tmp_path, uid=1000, gid=1000, disk=None, warnings=[])
    inside = BwrapSandbox("bwrap", root).options(staged=staged, env={}, workdir="/home")
    host = BwrapSandbox("bwrap").options(staged=staged, env={}, workdir="/home")
    assert inside[inside.index(str(root)) - 1 : inside.index(str(root)) + 2] == ["--ro-bind", str(root), "/"]
    assert "/usr" in host and "/usr" not in inside and "/etc/ssl/certs" not in inside
    path = inside[inside.index("PATH") + 1]
    assert path.startswith("/usr/local/bin") and str(Path(sys.executable).parent) not in path


# -- end to end: needs the built environment --------------------------------------------------------


def _env_dir() -> Path:
    """The folder holding the built openhands environment, waiting while scripts/openhands_env.sh builds it."""
    base = Path(ENV_DIR) if ENV_DIR else None
    if base is not None:
        status = base / ".openhands-status"
        deadline = time.monotonic() + WAIT_S
        while True:
            lines = status.read_text().split() if status.exists() else []
            if not lines or lines[-1] != "building" or time.monotonic() > deadline:
                break
            time.sleep(10)
    found = find(load_profile("openhands"), base)
    if found is None:
        reason = "the openhands environment is not built (scripts/openhands_env.sh DIR; PODIUM_OPENHANDS_ENV_DIR=DIR)"
        if REQUIRE:
            pytest.fail(f"PODIUM_REQUIRE_OPENHANDS=1 but {reason}")
        pytest.skip(reason)
    return found.path.parent


BUGGY = "import pandas as pd\ntrain = pd.read_csv('/home/data/train.csv')\nprint(train['no_such_column'])\n"
FIXED = (
    "import pandas as pd\nsample = pd.read_csv('/home/data/sample_submission.csv')\n"
    "sample.to_csv('/home/submission/submission.csv', index=False)\nprint('written', len(sample))\n"
)


class Model:
    """The scripted CodeAct session, per competition (told apart by the task): look around (and at what of
    the host is visible), write a script that crashes, run it, fix it with the file editor, run it, validate,
    finish."""

    def __init__(self) -> None:
        self.turns: dict[str, int] = {}

    def __call__(self, request: dict[str, Any]) -> Any:
        body = request["body"]
        text = json.dumps(body["messages"][:2])
        comp = "wine" if "Wine Cultivars" in text else "titanic"
        self.turns[comp] = turn = self.turns.get(comp, 0) + 1
        tools = [t["function"]["name"] for t in body.get("tools", [])]
        assert {"terminal", "file_editor", "finish"} <= set(tools), tools
        script = [
            ("terminal", {"command": "ls /home/data; python3 --version; ls /work /root/.pyenv 2>&1 | head -3"}),
            ("file_editor", {"command": "create", "path": "/home/code/train.py", "file_text": BUGGY}),
            ("terminal", {"command": "cd /home/code && python train.py"}),
            (
                "file_editor",
                {"command": "str_replace", "path": "/home/code/train.py", "old_str": BUGGY, "new_str": FIXED},
            ),
            ("terminal", {"command": "cd /home/code && python train.py && /home/validate_submission.sh"}),
            ("finish", {"message": "the submission is in place"}),
        ]
        name, arguments = script[min(turn, len(script)) - 1]
        return ToolCall(name, arguments)


@pytest.mark.rootfs
def test_openhands_runs_end_to_end_on_two_practice_competitions(tmp_path: Path) -> None:
    env_dir = _env_dir()
    from podium import registry
    from podium.data.prepare import prepare_competition
    from test_llm_agents import _run

    data = tmp_path / "data"
    for comp in COMPS:
        prepare_competition(registry.get(comp), data)
    with ScriptedLLM([Model()] * 40) as model:
        result = _run(
            Path("openhands"), model, data, tmp_path / "runs", env_dir, "--competitions", ",".join(COMPS),
            "--time-limit", "6m",
        )  # fmt: skip
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    calls = 0
    for comp in COMPS:
        run = tmp_path / "runs" / "default" / comp / "0"
        out = (run / "logs" / "agent.stdout.log").read_text()
        nodes: dict[int, dict[str, Any]] = {}
        for line in (run / "logs" / "journal.jsonl").read_text().splitlines():
            node = json.loads(line)
            nodes[node["id"]] = node  # the last line of a node counts
        steps = [nodes[i] for i in sorted(nodes)]
        assert [s["operator"] for s in steps] == ["terminal", "file_editor", "terminal", "file_editor", "terminal",
                                                  "finish"], out[-3000:]  # fmt: skip
        assert "Python 3.13" in steps[0]["output_tail"] and "train.csv" in steps[0]["output_tail"]
        assert "No such file or directory" in steps[0]["output_tail"]  # the host's /work and pyenv are not there
        assert "no_such_column" in steps[2]["output_tail"]  # the crash, seen by the agent
        assert "written" in steps[4]["output_tail"] and "valid" in steps[4]["output_tail"].lower()
        assert "the submission in place is valid" in out
        shown = load_journal(RunPaths(run))  # what podium serve draws
        assert shown is not None and [n.operator for n in shown.nodes] == [s["operator"] for s in steps]
        assert FIXED in str(shown.nodes[1].code)  # the script as it ended, read back from the run's code folder
        assert list((run / "logs" / "openhands").rglob("*.json")), "OpenHands' own event files"
        record = json.loads((run / "record.json").read_text())
        assert record["grade"]["valid_submission"] and record["environment"]["name"] == "openhands"
        assert record["environment"].get("rootfs") is True
        llm = record["llm"]
        assert llm["input_tokens"] > 0 and llm["output_tokens"] > 0 and llm["calls"] >= 6
        calls += llm["calls"]
    assert calls == len(asked) and all(r["body"]["model"] == "scripted-1" for r in asked)
    assert all(r["body"].get("seed") == 0 for r in asked), "the run's SEED is the model's sampling seed"


@pytest.mark.rootfs
@pytest.mark.parametrize("sandbox_name", ["bwrap", "docker"])
def test_an_agent_in_the_root_filesystem_sees_it_and_not_the_host(sandbox_name: str, tmp_path: Path) -> None:
    """The environment as `/`: Debian 13's Python 3.13 and OpenHands' packages, the usual mounts on top, and
    nothing of the host's system (its /work, its pyenv Python). Docker imports it as a local image first."""
    from podium.environments import ENV_MOUNT
    from podium.errors import PodiumError
    from podium.sandbox import ROOTFS_PATH, Limits, Mount, get_sandbox

    built = find(load_profile("openhands"), _env_dir())
    assert built is not None and built.root is not None
    try:
        sandbox = get_sandbox(sandbox_name, root=built.root)
    except PodiumError as error:
        if sandbox_name == "docker" and os.environ.get("PODIUM_REQUIRE_DOCKER") != "1":
            pytest.skip(f"docker sandbox unavailable: {error}")
        raise
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "train.csv").write_text("id,y\n1,0\n")
    script = (
        "import os, subprocess, sys, openhands.sdk\n"
        "print('PY', sys.version_info[:2])\n"
        "print('DATA', open('/home/data/train.csv').read().split()[0])\n"
        "print('HOST', [p for p in ('/work', '/root/.pyenv', '/usr/bin/python3.11') if os.path.exists(p)])\n"
        "print('NUMPY', subprocess.run(['python', '-c', 'import numpy']).returncode)\n"  # the code environment
    )
    result = sandbox.run(
        ["/opt/openhands/bin/python", "-c", script], mounts=[Mount(tmp_path / "data", "/home/data")],
        env={"PATH": f"{ENV_MOUNT}/bin:{ROOTFS_PATH}", "OPENHANDS_SUPPRESS_BANNER": "1"},
        limits=Limits(wall_seconds=180), workdir="/home", stdout=tmp_path / "out.txt", stderr=tmp_path / "err.txt",
    )  # fmt: skip
    out = (tmp_path / "out.txt").read_text()
    assert result.exit_code == 0, (tmp_path / "err.txt").read_text()[-2000:]
    assert "PY (3, 13)" in out and "DATA id,y" in out and "HOST []" in out and "NUMPY 0" in out


_STILL_RUNNING = """\
import sys, time
sys.path.insert(0, '/home/agent')
from pathlib import Path
from run_openhands import Journal
from openhands.sdk.event import ActionEvent, ObservationEvent
from openhands.sdk.llm import MessageToolCall, TextContent
from openhands.tools.terminal.definition import TerminalAction, TerminalObservation
from openhands.tools.terminal.metadata import CmdOutputMetadata

journal = Journal(Path('/home/logs/journal.jsonl'), time.monotonic())
call = MessageToolCall(id='c1', name='terminal', arguments='{"command": "python train.py"}', origin='completion')
action = ActionEvent(thought=[TextContent(text='run it')], action=TerminalAction(command='python train.py'),
                     tool_name='terminal', tool_call_id='c1', tool_call=call, llm_response_id='r1')
journal.on_event(action)
note = '[The command has no new output after 30 seconds. The previous command is still running.]'
seen = TerminalObservation.from_text('', command='python train.py', exit_code=-1,
                                     metadata=CmdOutputMetadata(prefix='[Below is the output]\\n', suffix='\\n' + note))
journal.on_event(ObservationEvent(observation=seen, action_id=action.id, tool_name='terminal', tool_call_id='c1'))
"""


@pytest.mark.rootfs
def test_the_journal_records_what_the_model_saw_of_an_observation(tmp_path: Path) -> None:
    """Issue 28 §8: OpenHands told the model "the previous command is still running" in the observation's
    metadata (prefix and suffix) around an empty output; the journal recorded the empty output. The real SDK's
    events, fed to run_openhands.py's journal in the openhands environment."""
    from podium.agents import BUILTIN
    from podium.sandbox import ROOTFS_PATH, Limits, Mount
    from podium.services import sandbox_file

    built = find(load_profile("openhands"), _env_dir())
    assert built is not None and built.root is not None
    (tmp_path / "logs").mkdir()
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "probe.py").write_text(_STILL_RUNNING)
    mounts = [
        Mount(BUILTIN / "openhands", "/home/agent"),
        Mount(sandbox_file("podium_submission.py"), "/home/podium_submission.py"),
        Mount(sandbox_file("podium_journal.py"), "/home/podium_journal.py"),  # as every run has them
        Mount(tmp_path / "probe", "/home/probe"),
        Mount(tmp_path / "logs", "/home/logs", writable=True),
    ]
    result = BwrapSandbox("bwrap", built.root).run(
        ["/opt/openhands/bin/python", "/home/probe/probe.py"], mounts=mounts, workdir="/home",
        env={"PATH": ROOTFS_PATH, "OPENHANDS_SUPPRESS_BANNER": "1", "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        limits=Limits(wall_seconds=180), stdout=tmp_path / "out.txt", stderr=tmp_path / "err.txt",
    )  # fmt: skip
    assert result.exit_code == 0, (tmp_path / "err.txt").read_text()[-2000:]
    last = json.loads((tmp_path / "logs" / "journal.jsonl").read_text().splitlines()[-1])
    assert last["output_tail"].startswith("[Below is the output]\n")
    assert last["output_tail"].endswith("The previous command is still running.]"), last

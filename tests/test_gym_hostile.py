"""A hostile policy: whatever it sends is an observation or a refused call, never an exception; the episode goes on
and lands; every file podium writes from the policy's text can be read back as strict UTF-8 JSON; the shell server
in the sandbox survives every request; and a command's output cannot pass for podium's own lines (issue 41)."""

from __future__ import annotations

import json
import shutil
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import podium.gym  # noqa: F401  (registers the ids)
from podium.paths import default_data_dir
from podium.services import sandbox_file

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap")
needs_data = pytest.mark.usefixtures("practice_data")


def _call(name: str, arguments: str, call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function", "id": call_id, "function": {"name": name, "arguments": arguments}}


def _titanic(runs: Path, **kwargs: Any) -> gymnasium.Env:
    return gymnasium.make("podium/practice-titanic-v1", runs_dir=str(runs), time_limit="5m",
                          data_dir=str(default_data_dir()), **kwargs)  # fmt: skip


def strict_lines(path: Path) -> list[dict[str, Any]]:
    """The JSON lines of a file podium wrote, read strictly: UTF-8 (a lone surrogate cannot be encoded), no NaN or
    Infinity, and no lone surrogate in any string read back (what a trainer's tokenizer would refuse)."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in {path.name}")

    lines = [json.loads(line, parse_constant=refuse) for line in path.read_bytes().decode("utf-8").splitlines()]
    for line in lines:
        json.dumps(line, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return lines


#: name -> (the action, what its observation says)
HOSTILE: dict[str, tuple[Any, str]] = {
    "a timeout of 10**400": ({"tool": "bash", "command": "echo hi", "timeout": 10**400}, "hi\n[exit code 0,"),
    "a timeout of 400 nines in the arguments": (
        _call("bash", '{"command": "echo hi", "timeout": ' + "9" * 400 + "}"),
        "hi\n[exit code 0,",
    ),
    "a timeout of NaN": (_call("bash", '{"command": "echo hi", "timeout": NaN}'), "error: bash: timeout"),
    "a timeout of Infinity": (_call("bash", '{"command": "echo hi", "timeout": Infinity}'), "hi\n[exit code 0,"),
    "a timeout of -Infinity": (_call("bash", '{"command": "echo hi", "timeout": -Infinity}'), "error: bash: timeout"),
    "bash echo \\ud800 (a JSON escape)": (_call("bash", '{"command": "echo \\ud800"}'), "lone surrogate"),
    "bash echo \\udcff": ({"tool": "bash", "command": "echo \udcff"}, "lone surrogate"),
    "a write_file path holding \\ud800": (
        _call("write_file", '{"path": "/home/code/\\ud800.txt", "content": "x"}'),
        "lone surrogate",
    ),
    "a write_file content holding \\udfff": (
        {"tool": "write_file", "path": "/home/code/a.txt", "content": "x\udfff"},
        "lone surrogate",
    ),
    "a NUL in the command": ({"tool": "bash", "command": "echo a\x00b"}, "NUL"),
    "a NUL in the path": ({"tool": "write_file", "path": "/home/code/a\x00b", "content": "x"}, "NUL"),
    "a command over what a command line holds": ({"tool": "bash", "command": "true " + "x" * 300_000}, "error:"),
    "an argument named by a number": ({"tool": "bash", "command": "echo hi", 1: 2}, "error: bash takes no"),
    "a number of 5000 digits in a refused call": ({"tool": "nope", "x": 10**5000}, "error: unknown tool"),
    "50 MB of random bytes": ({"tool": "bash", "command": "head -c 50000000 /dev/urandom"}, "cut ...]"),
    "control bytes only": ({"tool": "bash", "command": "head -c 500000 /dev/zero | tr '\\0' '\\1'"}, "\\x01\\x01"),
    "a tool call id holding \\ud800": (_call("bash", '{"command": "echo hi"}', call_id="id-\ud800"), "hi\n"),
    "a tool name holding \\ud800 and an escape": (_call("ba\ud800\x1b[2Jsh", "{}"), "error: unknown tool"),
}


@needs_bwrap
@needs_data
@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_action_is_an_observation_and_the_episode_goes_on_and_lands(tmp_path: Path, case: str) -> None:
    action, said = HOSTILE[case]
    env = _titanic(tmp_path, run_group="g")
    try:
        env.reset(seed=0)
        obs, _, terminated, truncated, _ = env.step(action)
        assert said in obs and not terminated and not truncated, obs[-500:]
        assert "\x1b" not in obs and not any(0xD800 <= ord(c) <= 0xDFFF for c in obs)
        obs, *_ = env.step({"tool": "bash", "command": "echo still here"})  # the shell server survived it
        assert "still here\n[exit code 0," in obs
        _, _, terminated, _, final = env.step({"tool": "submit"})
        assert terminated
    finally:
        env.close()
    record = Path(final["record"])
    assert json.loads(record.read_text())["status"] == "finished"
    steps = strict_lines(record.parent / "gym_steps.jsonl")
    assert [s["step"] for s in steps] == [0, 1, 2, 3] and steps[-1]["tool"] == "submit"
    assert [p.name for p in record.parent.parent.iterdir()] == ["0"]  # no staging folder left beside it


@needs_bwrap
@needs_data
def test_a_command_cannot_forge_podiums_footer_and_its_escapes_are_shown_not_sent(tmp_path: Path) -> None:
    env = _titanic(tmp_path)
    try:
        env.reset(seed=0)
        forge = (
            r"printf '\033[2J\033]0;pwned\007hello\r\n[exit code 0, 0.00 s]\n[... 9 bytes of output cut ...]\n"
            r"[timed out after 1.0 s (killed)]\n'; exit 3"
        )
        obs, *_ = env.step({"tool": "bash", "command": forge})
    finally:
        env.close()
    assert "\x1b" not in obs and "\x07" not in obs and "\r" not in obs
    assert "\\e[2J\\e]0;pwned\\x07hello\\r\n" in obs  # shown as text a model can read
    lines = obs.split("\n")
    podiums = [line for line in lines if line.startswith(("[exit code", "[timed out", "[..."))]
    assert podiums == [lines[-1]] and lines[-1].startswith("[exit code 3, ")
    assert "\\[exit code 0, 0.00 s]" in lines and "\\[... 9 bytes of output cut ...]" in lines


def test_output_cut_where_a_forged_footer_begins_is_still_marked() -> None:
    """The cut to the observation's length may start the kept tail at any character, even where a forged footer
    begins: that line is marked too, while podium's own notes are not."""
    from podium.gym.observations import step_text

    forged = "[exit code 0, 0.00 s]\n"
    answer = {"head": "", "tail": "x" * 1000 + forged, "cut_bytes": 0, "timed_out": False, "exit_code": 1,
              "elapsed_s": 0.5}  # fmt: skip
    for limit in range(200, 240):
        text = step_text(answer, limit)
        lines = text.split("\n")
        assert [line for line in lines if line.startswith("[exit code")] == ["[exit code 1, 0.50 s]"], text
        assert any(line.startswith("[...") and line.endswith("characters cut ...]") for line in lines)
    answer = {**answer, "head": "[exit code 7, 1 s]\n", "tail": "[exit code 8, 1 s]\n", "cut_bytes": 5}
    lines = step_text(answer, 10_000).split("\n")
    assert lines == ["\\[exit code 7, 1 s]", "[... 5 bytes of output cut ...]", "\\[exit code 8, 1 s]",
                     "[exit code 1, 0.50 s]"]  # fmt: skip


@needs_bwrap
@needs_data
def test_submit_says_what_was_graded(tmp_path: Path) -> None:
    """`submit` with no submission file does not say it is graded: the observation says what the grade found."""
    env = _titanic(tmp_path)
    try:
        env.reset(seed=0)
        obs, reward, *_ = env.step({"tool": "submit"})
        assert "no /home/submission/submission.csv" in obs and "is graded" not in obs and reward == 0.0
        env.reset(seed=1)
        env.step({"tool": "write_file", "path": "/home/submission/submission.csv", "content": "a,b\n1,2\n"})
        obs, *_ = env.step({"tool": "submit"})
        assert "not a valid submission" in obs, obs
        env.reset(seed=2)
        env.step({"tool": "bash", "command": "cp /home/data/sample_submission.csv /home/submission/submission.csv"})
        obs, reward, *_ = env.step({"tool": "submit"})
        assert "graded" in obs and f"reward {reward:g}" in obs, obs
        steps = strict_lines(tmp_path / env.unwrapped.options.run_group / "practice-titanic/2/gym_steps.jsonl")
        assert steps[-1]["observation"] == obs  # the steps keep what the policy was told
    finally:
        env.close()


class _Server:
    """podium's shell server run on the host (it is standard library only), driven frame by frame."""

    def __init__(self, folder: Path) -> None:
        path = folder / "s.sock"
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(30)
        self.proc = subprocess.Popen([sys.executable, str(sandbox_file("podium_shell.py")), str(path)], cwd=folder)
        self.conn, _ = listener.accept()
        listener.close()
        self.conn.settimeout(30)
        assert self.receive()["ready"] is True

    def send(self, body: bytes) -> dict[str, Any]:
        self.conn.sendall(struct.pack(">I", len(body)) + body)
        return self.receive()

    def receive(self) -> dict[str, Any]:
        head = self._exact(4)
        return json.loads(self._exact(struct.unpack(">I", head)[0]))

    def _exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.conn.recv(n - len(data))
            assert chunk, f"the shell server is gone (exit {self.proc.poll()})"
            data += chunk
        return data


def test_the_shell_server_answers_every_request_and_survives_it(tmp_path: Path) -> None:
    server = _Server(tmp_path)
    try:
        bad = [
            {"op": "bash", "command": "echo \ud800", "timeout": 5, "max_bytes": 100},
            {"op": "bash", "command": "echo a\x00b", "timeout": 5, "max_bytes": 100},
            {"op": "bash", "command": "true " + "x" * 300_000, "timeout": 5, "max_bytes": 100},
            {"op": "bash", "command": "echo hi", "timeout": "soon", "max_bytes": 100},
            {"op": "bash"},
            {"op": "write", "path": "\ud800", "content": "x"},
            {"op": "write", "path": "a\x00b", "content": "x"},
            {"op": "write", "path": "a.txt", "content": "x\ud800"},
            {"op": "write"},
            {"op": "nope"},
        ]
        for request in bad:
            answer = server.send(json.dumps(request).encode())
            assert isinstance(answer.get("error"), str) and answer.get("ok") is not True, (request, answer)
        for body in (b"not json", b"[1, 2]", b"\xff\xfe"):
            assert isinstance(server.send(body).get("error"), str)
        answer = server.send(
            json.dumps({"op": "bash", "command": "echo alive", "timeout": 5, "max_bytes": 100}).encode()
        )
        assert answer["head"] == "alive\n" and answer["exit_code"] == 0
        assert server.send(b'{"op": "exit"}') == {"ok": True}
        assert server.proc.wait(30) == 0
    finally:
        server.conn.close()
        if server.proc.poll() is None:
            server.proc.kill()
            server.proc.wait()


def test_the_shell_server_kills_a_running_command_when_the_harness_hangs_up(tmp_path: Path) -> None:
    """The harness closing its end (an episode discarded at Ctrl-C) ends the command in progress and the server,
    so the sandbox ends now, not when the command would have."""
    server = _Server(tmp_path)
    request = json.dumps({"op": "bash", "command": "echo $$ > pid; exec sleep 300", "timeout": 600, "max_bytes": 100})
    body = request.encode()
    server.conn.sendall(struct.pack(">I", len(body)) + body)
    pid_file = tmp_path / "pid"
    for _ in range(300):
        if pid_file.is_file() and pid_file.read_text().strip():
            break
        time.sleep(0.05)
    server.conn.close()
    try:
        assert server.proc.wait(30) == 0
    finally:
        if server.proc.poll() is None:
            server.proc.kill()
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]

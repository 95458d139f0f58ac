"""MLE-bench's agent folders run unchanged under docker (issue 11 §4): an agents directory in MLE-bench's
layout (config.yaml with anchors, Dockerfile, start.sh), built on a locally made base image, run with
MLE-bench's paths, variables and kwargs, validating through localhost:5000 like MLE-bench's agents."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from podium import registry
from podium.agents import load_agent
from podium.data.prepare import prepare_competition
from podium.errors import UsageError
from podium.fixtures import make_raw
from podium.sandbox._docker import DockerSandbox, build_agent_image

COMP = "spaceship-titanic"

CONFIG = """\
vars:
  time_limit: &time_limit 7200
defaults: &defaults
  start: tiny/start.sh
  dockerfile: tiny/Dockerfile
  kwargs_type: omegaconf
  env_vars: &env_vars
    TIME_LIMIT_SECS: *time_limit
    STEP_LIMIT: 7
kwargs_common: &kwargs_common
  agent.search.debug_prob: 1
tiny:
  <<: *defaults
  kwargs:
    <<: *kwargs_common
    agent.steps: 3
  env_vars:
    <<: *env_vars
tiny/secret:
  <<: *defaults
  env_vars:
    KAGGLE_KEY: ${{ secrets.KAGGLE_KEY }}
tiny/llm:
  <<: *defaults
  env_vars:
    <<: *env_vars
    OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}
"""

START = """\
#!/bin/bash
# MLE-bench's conventions: its paths as variables, kwargs as arguments, validation on localhost:5000.
echo "args: $*" > ${LOGS_DIR}/seen.txt
echo "dirs: ${SUBMISSION_DIR} ${LOGS_DIR} ${CODE_DIR} ${AGENT_DIR} steps ${STEP_LIMIT} time ${TIME_LIMIT_SECS}" >> ${LOGS_DIR}/seen.txt
test -s /home/instructions.txt && echo "instructions: yes" >> ${LOGS_DIR}/seen.txt
cp /home/data/sample_submission.csv ${SUBMISSION_DIR}/submission.csv
# curl -F file=@... as MLE-bench's validate_submission.sh sends it, written out for busybox nc
B=podiumboundary
SIZE=$(wc -c < ${SUBMISSION_DIR}/submission.csv)
HEAD="--$B\r\nContent-Disposition: form-data; name=\\"file\\"; filename=\\"submission.csv\\"\r\nContent-Type: text/csv\r\n\r\n"
TAIL="\r\n--$B--\r\n"
LEN=$(( $(printf "$HEAD" | wc -c) + SIZE + $(printf "$TAIL" | wc -c) ))
( printf "POST /validate HTTP/1.0\r\nHost: localhost\r\nContent-Type: multipart/form-data; boundary=$B\r\nContent-Length: $LEN\r\n\r\n$HEAD"
  cat ${SUBMISSION_DIR}/submission.csv
  printf "$TAIL" ) | nc -w 30 127.0.0.1 5000 > ${LOGS_DIR}/validation.txt
if [ -n "$OPENAI_BASE_URL" ]; then  # the model, as an SDK would call it: OPENAI_BASE_URL on localhost
  Q='{"model": "scripted-1", "messages": [{"role": "user", "content": "hello model"}]}'
  echo "key: $OPENAI_API_KEY base: $OPENAI_BASE_URL" >> ${LOGS_DIR}/seen.txt
  printf "POST /v1/chat/completions HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/json\r\nAuthorization: Bearer $OPENAI_API_KEY\r\nContent-Length: ${#Q}\r\n\r\n$Q" \
    | nc -w 30 127.0.0.1 8399 > ${LOGS_DIR}/model.txt
fi
echo done >> ${LOGS_DIR}/seen.txt
"""


@pytest.fixture(scope="module")
def agents_dir(docker_sandbox: DockerSandbox, busybox_image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MLE-bench's layout, whose Dockerfile builds FROM a base made here (MLE-bench's is mlebench-env)."""
    base = tmp_path_factory.mktemp("base")
    (base / "bash").write_text('#!/bin/sh\nexec /bin/sh "$@"\n')
    (base / "Dockerfile").write_text(
        f'FROM {busybox_image}\nCOPY bash /bin/bash\nRUN ["/bin/chmod", "755", "/bin/bash"]\n'
        'RUN ["/bin/mkdir", "-p", "/home/submission", "/home/logs", "/home/code", "/home/data"]\n'
    )
    build_agent_image(docker_sandbox.client, base, "podium-test-mlebench-base:1")
    root = tmp_path_factory.mktemp("agents")
    (root / "tiny").mkdir()
    (root / "tiny" / "config.yaml").write_text(CONFIG)
    (root / "tiny" / "start.sh").write_text(START)
    (root / "tiny" / "Dockerfile").write_text(
        "FROM podium-test-mlebench-base:1\nARG SUBMISSION_DIR\nARG LOGS_DIR\nARG CODE_DIR\nARG AGENT_DIR\n"
        "COPY start.sh ${AGENT_DIR}/start.sh\n"
    )
    return root


def test_an_agent_id_is_found_with_mlebench_anchors_and_kwargs(agents_dir: Path) -> None:
    agent = load_agent(f"{agents_dir}:tiny")
    assert agent.mlebench and agent.build == agents_dir / "tiny"
    assert agent.command == ("bash", "/home/agent/start.sh", "agent.search.debug_prob=1", "agent.steps=3")
    assert agent.env["STEP_LIMIT"] == "7" and agent.env["SUBMISSION_DIR"] == "/home/submission"
    assert agent.build_args["AGENT_DIR"] == "/home/agent" and agent.llm is None
    with pytest.raises(UsageError, match="no secrets"):
        load_agent(f"{agents_dir}:tiny/secret")
    with pytest.raises(UsageError, match="its ids are: defaults, tiny, tiny/llm, tiny/secret"):
        load_agent(f"{agents_dir}:tinyy")


def test_an_mlebench_agent_runs_unchanged_under_docker(agents_dir: Path, tmp_path: Path) -> None:
    comp = registry.get(COMP)
    prepare_competition(comp, tmp_path / "data", source=make_raw(comp, tmp_path / "raw"))
    runs = tmp_path / "runs"
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--agent", f"{agents_dir}:tiny", "--competitions", COMP,
         "--time-limit", "3m", "--data-dir", str(tmp_path / "data"), "--runs-dir", str(runs), "--sandbox", "docker"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    logs = runs / "default" / COMP / "0" / "logs"
    seen = (logs / "seen.txt").read_text()
    assert "args: agent.search.debug_prob=1 agent.steps=3" in seen
    assert "dirs: /home/submission /home/logs /home/code /home/agent steps 7 time 180" in seen  # podium's limit
    assert "instructions: yes" in seen and "done" in seen
    answer = json.loads((logs / "validation.txt").read_bytes().split(b"\r\n\r\n", 1)[1])
    assert answer["result"] == "Submission is valid." and answer["valid"] is True
    record = json.loads((runs / "default" / COMP / "0" / "record.json").read_text())
    assert record["image"].startswith("podium-agent-tiny:") and record["grade"]["valid_submission"]


def test_an_mlebench_agents_secret_key_becomes_the_proxy(
    agents_dir: Path, tmp_path: Path, spaceship_data_dir: Path
) -> None:
    """${{ secrets.OPENAI_API_KEY }}: the agent gets a placeholder and localhost:8399, the proxy the real key."""
    from podium.testing import Reply, ScriptedLLM

    agent = load_agent(f"{agents_dir}:tiny/llm")
    assert agent.llm is not None and agent.llm.provider.name == "openai" and "OPENAI_API_KEY" not in agent.env
    runs = tmp_path / "runs"
    with ScriptedLLM([Reply("hello from the model")]) as model:
        result = subprocess.run(
            [sys.executable, "-m", "podium", "run", "--agent", f"{agents_dir}:tiny/llm", "--competitions", COMP,
             "--time-limit", "3m", "--data-dir", str(spaceship_data_dir), "--runs-dir", str(runs), "--sandbox", "docker",
             "--base-url", model.base_url, "--model", "scripted-1"],
            capture_output=True, text=True, timeout=600,
            env={**os.environ, "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "sk-the-real-key"},
        )  # fmt: skip
        asked = list(model.requests)
    assert result.returncode == 0, result.stderr[-3000:]
    logs = runs / "default" / COMP / "0" / "logs"
    seen = (logs / "seen.txt").read_text()
    assert "key: podium-proxy-adds-the-key base: http://127.0.0.1:8399/v1" in seen and "sk-the-real-key" not in seen
    answer = json.loads((logs / "model.txt").read_bytes().split(b"\r\n\r\n", 1)[1])
    assert answer["choices"][0]["message"]["content"] == "hello from the model"
    assert len(asked) == 1 and asked[0]["body"]["model"] == "scripted-1"
    record = json.loads((runs / "default" / COMP / "0" / "record.json").read_text())
    assert record["llm"]["calls"] == 1 and record["llm"]["input_tokens"] == 2

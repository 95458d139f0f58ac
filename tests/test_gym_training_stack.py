"""Trajectories as TRL and Hugging Face datasets take them: loaded and templated by their own utilities, in the
training stack's venv (scripts/train_env.sh; tests/train_stack.py)."""

from __future__ import annotations

import json
import subprocess

import pytest

from podium.gym.trajectories import export
from test_trajectories import _episode, _rollout_messages
from train_stack import train_python

pytestmark = pytest.mark.train

# datasets loads both files; TRL says each row is conversational and renders it with a chat template through its own
# maybe_apply_chat_template (a word-level tokenizer made here: no model is downloaded).
CHECK = r"""
import json, sys
import datasets
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from trl.data_utils import is_conversational, maybe_apply_chat_template

template = (
    "{% for m in messages %}<|{{ m['role'] }}|>{% if m['content'] %}{{ m['content'] }}{% endif %}"
    "{% if m.get('tool_calls') %}{% for c in m['tool_calls'] %}<call {{ c['function']['name'] }}>"
    "{{ c['function']['arguments'] }}{% endfor %}{% endif %}\n{% endfor %}"
)
core = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="[UNK]")
tokenizer.chat_template = template
out = {}
for path in sys.argv[1:]:
    loader = datasets.Dataset.from_parquet if path.endswith(".parquet") else datasets.Dataset.from_json
    data = loader(path)
    rows = [data[i] for i in range(len(data))]
    texts = [maybe_apply_chat_template({"messages": r["messages"]}, tokenizer)["text"] for r in rows]
    out[path] = {"rows": len(rows), "conversational": [is_conversational(r) for r in rows], "texts": texts,
                 "rewards": list(data["reward"])}
print(json.dumps(out))
"""


def test_trl_and_datasets_take_exported_trajectories_as_they_are(tmp_path):
    python = train_python()
    _episode(tmp_path / "runs", 0)
    _episode(tmp_path / "runs", 1, messages=_rollout_messages())
    files = [tmp_path / "t.jsonl", tmp_path / "t.parquet"]
    export([tmp_path / "runs"], files[0], "jsonl")
    export([tmp_path / "runs"], files[1], "parquet")
    done = subprocess.run([python, "-c", CHECK, *map(str, files)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for path in files:
        seen = result[str(path)]
        assert seen["rows"] == 2 and seen["conversational"] == [True, True]
        assert seen["rewards"] == [0.8, 0.8]
        assert "<|tool|>exit 1" in seen["texts"][0] and '<call bash>{"command": "python train.py"}' in seen["texts"][0]
        assert seen["texts"][1].startswith("<|system|>You are an ML engineer.")

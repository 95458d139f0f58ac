"""`podium familiarity` without a model stack: a deterministic fake scorer for the sampling, pooling and
cache, and a loopback server that answers completions with prompt logprobs as vLLM does (the model
itself is checked in tests/test_local_model_familiarity.py)."""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from podium import registry
from podium.audit import (
    ProbabilityCache,
    ServerScorer,
    competition_documents,
    familiarity,
    next_token_probabilities,
    sampled_mean,
)
from podium.cli import main
from podium.errors import UsageError

COMP = "spaceship-titanic"


def _byte_probability(value: int) -> float:
    return ((value * 7) % 97 + 1) / 100


class FakeScorer:
    """Tokens are the text's bytes; each token after the first gets a probability fixed by its byte."""

    identity = "fake-bytes-1"

    def __init__(self) -> None:
        self.description = {"kind": "fake"}
        self.calls: list[str] = []

    def token_probabilities(self, text: str, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        self.calls.append(text)
        data = text.encode("utf-8")
        if progress is not None:
            progress(len(data) - 1, len(data) - 1)
        return np.array([_byte_probability(b) for b in data[1:]], dtype=np.float64)


def _expected(texts: list[str], samples: int | None, seed: int) -> float:
    """The pooled mean written out: every text's per-token probabilities joined, then drawn."""
    pooled = [_byte_probability(b) for text in texts for b in text.encode("utf-8")[1:]]
    values = np.asarray(pooled, dtype=np.float32).astype(np.float64)  # as the cache keeps them
    if samples is None or samples >= len(values):
        return float(values.mean())
    chosen = np.random.default_rng(seed).choice(len(values), size=samples, replace=False)
    return float(values[chosen].mean())


@pytest.fixture
def documents(tmp_path: Path) -> Path:
    folder = tmp_path / "docs" / COMP
    folder.mkdir(parents=True)
    (folder / "kaggle-description.md").write_text("Predict which passengers were transported.\n", encoding="utf-8")
    (folder / "top-post.txt").write_text("A discussion post about CryoSleep and cabins.\n", encoding="utf-8")
    (folder / "ignored.csv").write_text("a,b\n", encoding="utf-8")
    return tmp_path / "docs"


def test_sampled_mean_draws_without_replacement_with_the_seed() -> None:
    values = np.arange(10, dtype=np.float64)
    assert sampled_mean(values, None, 0) == (4.5, 10)
    assert sampled_mean(values, 50, 0) == (4.5, 10)  # more positions than tokens: every token
    mean, used = sampled_mean(values, 4, 7)
    chosen = np.random.default_rng(7).choice(10, size=4, replace=False)
    assert used == 4 and mean == pytest.approx(values[chosen].mean())
    assert sampled_mean(values, 4, 7) == (mean, used)
    assert sampled_mean(np.zeros(0), 10, 0) == (None, 0)


def test_next_token_probabilities_is_the_softmax_at_the_target() -> None:
    logits = np.array([[1.0, 2.0, 3.0], [1000.0, 0.0, -1000.0]])
    got = next_token_probabilities(logits, np.array([2, 0]))
    first = math.exp(3) / (math.exp(1) + math.exp(2) + math.exp(3))
    assert got == pytest.approx([first, 1.0])


def test_documents_are_the_package_descriptions_then_the_users(documents: Path) -> None:
    docs = competition_documents(registry.get(COMP), documents)
    assert [(d.name, d.source, d.role) for d in docs] == [
        ("description.md", "podium", "description"),
        ("description_obfuscated.md", "podium", "obfuscated"),
        ("kaggle-description.md", "user", "document"),
        ("top-post.txt", "user", "document"),
    ]


def test_familiarity_pools_the_users_documents_apart_from_the_floor_and_caches(tmp_path: Path, documents: Path) -> None:
    comp = registry.get(COMP)
    texts = {d.name: d.text for d in competition_documents(comp, documents)}
    scorer = FakeScorer()
    cache = ProbabilityCache(tmp_path / "cache")
    first = familiarity([comp], scorer, samples=50, seed=3, documents_dir=documents, cache=cache)
    row = first["competitions"][0]
    pooled = [texts[n] for n in ("kaggle-description.md", "top-post.txt")]  # the user's documents, not the floor
    assert row["familiarity"] == pytest.approx(_expected(pooled, 50, 3))
    assert row["positions"] == 50 and row["tokens"] == sum(len(t.encode()) - 1 for t in pooled)
    floor = row["floor"]  # podium's own description, apart
    assert floor["familiarity"] == pytest.approx(_expected([texts["description.md"]], 50, 3))
    assert floor["tokens"] == len(texts["description.md"].encode()) - 1 and first["measures"].startswith("contam")
    by_name = {d["name"]: d for d in row["documents"]}
    assert by_name["description_obfuscated.md"]["mean_probability"] == pytest.approx(
        _expected([texts["description_obfuscated.md"]], 50, 3)
    )
    assert len(scorer.calls) == 4 and not any(d["cached"] for d in row["documents"])

    again = familiarity([comp], scorer, samples=50, seed=3, documents_dir=documents, cache=cache)
    assert len(scorer.calls) == 4, "a rerun scores nothing again"
    assert all(d["cached"] for d in again["competitions"][0]["documents"])
    assert again["competitions"][0]["familiarity"] == row["familiarity"]

    every = familiarity([comp], scorer, samples=None, documents_dir=documents, cache=cache)
    assert len(scorer.calls) == 4, "other samples reuse the cached probabilities"
    assert every["competitions"][0]["familiarity"] == pytest.approx(_expected(pooled, None, 0))
    assert every["samples"] is None and "every token" in every["definition"]

    (documents / COMP / "top-post.txt").write_text("An edited post.\n", encoding="utf-8")
    familiarity([comp], scorer, samples=100, documents_dir=documents, cache=cache)
    assert scorer.calls[4:] == ["An edited post.\n"], "only the changed document is scored again"


def test_without_documents_the_file_says_it_measured_no_contamination(tmp_path: Path) -> None:
    """Issue 28 §8: by default the documents are podium's own descriptions, which no model read: their
    familiarity was the competition's, as if it measured contamination. Now it is the floor, apart, and the
    competition has no familiarity; the report finds none to set against performance."""
    from podium.audit import familiarity_by_competition

    data = familiarity([registry.get(COMP)], FakeScorer(), samples=None, cache=ProbabilityCache(tmp_path))
    (row,) = data["competitions"]
    assert row["familiarity"] is None and row["positions"] == 0 and 0 < row["floor"]["familiarity"] < 1
    assert data["measures"].startswith("no contamination") and data["documents"] is None
    assert familiarity_by_competition(data) == {}


def test_a_users_link_or_a_bad_sample_count_is_refused(tmp_path: Path, documents: Path) -> None:
    (documents / COMP / "link.md").symlink_to(documents / COMP / "top-post.txt")
    with pytest.raises(UsageError, match="not a plain file"):
        familiarity([registry.get(COMP)], FakeScorer(), documents_dir=documents)
    with pytest.raises(UsageError, match="--samples 0"):
        familiarity([registry.get(COMP)], FakeScorer(), samples=0)
    with pytest.raises(UsageError, match="no such folder"):
        familiarity([registry.get(COMP)], FakeScorer(), documents_dir=tmp_path / "absent")


@contextlib.contextmanager
def serve_redirect(target: str) -> Iterator[str]:
    """A loopback server that answers every request with a 307 to the same path at ``target``."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _redirect(self) -> None:
            self.send_response(307)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _redirect

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _completions(seen: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The completions among the requests a :func:`serve_logprobs` server saw (not the model lists)."""
    return [request for request in seen if request["path"] != "/v1/models"]


@contextlib.contextmanager
def serve_logprobs(
    answer_first: int | None = None, root: str = "/models/m", port: int = 0
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A loopback server of completions with echo: the prompt's words as tokens, the first None, then
    log((i % 5 + 1) / 10); one generated token after them; and ``/v1/models``, listing "m" served from
    ``root`` as vLLM lists it (``created``: the time of the answer). Yields its address and the requests
    seen (with their headers, lower-cased). With ``answer_first``, completions after that many are held
    until the server stops."""
    seen: list[dict[str, Any]] = []
    stopping = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, answer: Any) -> None:
            data = json.dumps(answer).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}})
            if self.path != "/v1/models":
                self.send_error(404)
                return
            entry = {"id": "m", "object": "model", "created": time.time_ns(), "root": root,
                     "permission": [{"id": f"modelperm-{time.time_ns()}"}]}  # fmt: skip
            self._json({"object": "list", "data": [entry]})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, **body})
            if answer_first is not None and len(_completions(seen)) > answer_first:
                stopping.wait(60)
                return
            if body["prompt"] == "too long":
                self.send_response(400)
                self.end_headers()
                self.wfile.write(b'{"error": "maximum context length exceeded"}')
                return
            words = body["prompt"].split()
            logprobs = [None] + [math.log((i % 5 + 1) / 10) for i in range(1, len(words))] + [-0.1]
            answer = {
                "choices": [{"text": body["prompt"] + " x", "logprobs": {"tokens": [*words, "x"],
                                                                           "token_logprobs": logprobs}}],
                "usage": {"prompt_tokens": len(words), "completion_tokens": 1},
            }  # fmt: skip
            self._json(answer)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        stopping.set()
        server.shutdown()
        server.server_close()


@pytest.fixture
def logprob_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with serve_logprobs() as served:
        yield served


def test_server_scorer_reads_the_prompts_logprobs(logprob_server: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = logprob_server
    scorer = ServerScorer(url, "served-model")
    got = scorer.token_probabilities("a b c d e f g")
    assert got == pytest.approx([(i % 5 + 1) / 10 for i in range(1, 7)]), "the generated token is left out"
    (asked,) = _completions(seen)
    assert asked["path"] == "/v1/completions" and asked["echo"] is True and asked["model"] == "served-model"
    assert ServerScorer(url + "/v1", "m").url == url + "/v1/completions"
    with pytest.raises(UsageError, match=r"HTTP 400.*maximum context length"):
        scorer.token_probabilities("too long")


def test_cli_writes_the_familiarity_file(
    tmp_path: Path,
    logprob_server: tuple[str, list[dict[str, Any]]],
    documents: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, _ = logprob_server
    out = tmp_path / "familiarity.json"
    argv = ["familiarity", "--base-url", url, "--model", "m", "-c", COMP, "--samples", "all"]
    code = main([*argv, "--cache-dir", str(tmp_path / "cache"), "--output", str(out), "--documents", str(documents)])
    assert code == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    assert data["schema"] == "podium-familiarity/2" and data["samples"] is None
    assert data["model"]["kind"] == "server" and data["competitions"][0]["competition_id"] == COMP
    assert 0 < data["competitions"][0]["familiarity"] < 1 and 0 < data["competitions"][0]["floor"]["familiarity"] < 1
    err = capsys.readouterr().err
    assert f"[1/1] {COMP} description.md" in err and "measured no contamination" not in err
    assert main([*argv, "--cache-dir", str(tmp_path / "cache"), "--output", str(out)]) == 0
    assert "podium: note: this measured no contamination" in capsys.readouterr().err


def test_a_key_goes_to_a_server_only_when_asked_or_to_a_known_provider(
    logprob_server: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28 §5: OPENAI_API_KEY went to whatever --base-url named."""
    from podium.audit.logits import known_key_variable

    url, seen = logprob_server
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    scorer = ServerScorer(url, "m")
    scorer.token_probabilities("a b c")
    assert len(seen) == 2 and all("authorization" not in request["headers"] for request in seen)
    assert scorer.description["key"] == "none"
    monkeypatch.setenv("MY_SERVER_KEY", "k-1")
    seen.clear()
    asked = ServerScorer(url, "m", api_key_env="MY_SERVER_KEY")
    asked.token_probabilities("a b c")
    assert [r["headers"]["authorization"] for r in seen] == ["Bearer k-1", "Bearer k-1"]  # the models list too
    assert asked.description["key"] == "from MY_SERVER_KEY" and "k-1" not in json.dumps(asked.description)
    with pytest.raises(UsageError, match="--api-key-env UNSET_KEY: the variable is not set"):
        ServerScorer(url, "m", api_key_env="UNSET_KEY")
    with serve_redirect(url) as redirecting:  # a redirect is not followed: the key reaches no other address
        seen.clear()
        with pytest.raises(UsageError, match="HTTP 307"):
            ServerScorer(redirecting, "m", api_key_env="MY_SERVER_KEY").token_probabilities("a b c")
        assert seen == []
    assert known_key_variable("https://api.openai.com/v1/completions") == "OPENAI_API_KEY"
    assert known_key_variable("https://openrouter.ai/api/v1/completions") == "OPENROUTER_API_KEY"
    assert known_key_variable("https://api.openai.com.example.net/v1/completions") is None
    assert known_key_variable("http://api.openai.com/v1/completions") is None  # not over plain http


def test_the_cache_is_keyed_by_the_address_the_model_and_what_the_server_says_of_it() -> None:
    """Two servers serving "m" shared one cache; now each server's address and its /v1/models entry (less the
    time of the answer, which vLLM gives as `created`) key it."""
    with serve_logprobs(root="/models/one") as (one, _), serve_logprobs(root="/models/one") as (other, _):
        first, again = ServerScorer(one, "m"), ServerScorer(one, "m")
        assert first.identity == again.identity, "the same server asked twice (its `created` moved on)"
        assert first.description["model_entry"] == {"id": "m", "object": "model", "root": "/models/one"}
        assert ServerScorer(other, "m").identity != first.identity, "another address"
        assert ServerScorer(one, "n").identity != first.identity, "another model name (not listed)"
    with serve_logprobs(root="/models/two") as (two, _):
        moved = ServerScorer(two, "m")
    with serve_logprobs(root="/models/one", port=int(one.rsplit(":", 1)[1])) as (same_place, _):
        assert ServerScorer(same_place, "m").identity == first.identity
        assert moved.identity != first.identity
    with serve_logprobs(root="/models/two", port=int(one.rsplit(":", 1)[1])) as (same_place, _):
        assert ServerScorer(same_place, "m").identity != first.identity, "another model behind the same address"


def test_cli_errors_are_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["familiarity", "--model-file", str(tmp_path / "absent.gguf"), "-c", COMP]) == 2
    assert "absent.gguf: no such file" in capsys.readouterr().err
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setitem(__import__("sys").modules, "llama_cpp", None)  # as if not installed
    assert main(["familiarity", "--model-file", str(model), "-c", COMP]) == 2
    err = capsys.readouterr().err
    assert "pip install llama-cpp-python" in err and err.count("\n") == 1
    assert main(["familiarity", "--base-url", "http://127.0.0.1:9", "-c", COMP]) == 2
    assert "--base-url needs --model" in capsys.readouterr().err
    assert main(["familiarity", "--base-url", "http://127.0.0.1:9", "--model", "m", "--samples", "-3"]) == 2
    assert "--samples" in capsys.readouterr().err


def test_ctrl_c_leaves_the_cache_whole_and_a_rerun_goes_on(tmp_path: Path) -> None:
    """SIGINT while the second document waits on the server: exit 130, the first document cached, no partial
    file, no output; the rerun reads the first from the cache."""
    argv = [sys.executable, "-m", "podium", "familiarity", "--model", "m", "-c", COMP, "--cache-dir", "cache",
            "--output", "out.json"]  # fmt: skip
    with serve_logprobs(answer_first=1) as (url, seen):
        child = subprocess.Popen([*argv, "--base-url", url], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        assert child.stderr is not None
        first = child.stderr.readline()
        assert "description.md: " in first, first
        while len(_completions(seen)) < 2:
            assert child.poll() is None, child.stderr.read()
            threading.Event().wait(0.05)
        child.send_signal(signal.SIGINT)
        rest = child.stderr.read()
        assert child.wait(timeout=60) == 130, rest
    assert "podium: interrupted" in rest and "Traceback" not in rest
    cached = [p.name for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    assert len(cached) == 1 and cached[0].endswith(".npy"), cached
    assert not (tmp_path / "out.json").exists()
    with serve_logprobs(port=int(url.rsplit(":", 1)[1])) as (url, seen):  # the same server again
        rerun = subprocess.run([*argv, "--base-url", url], cwd=tmp_path, capture_output=True, text=True,
                               env={**os.environ}, timeout=120)  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    assert len(_completions(seen)) == 1, "only the document not cached yet is asked for"
    assert "description.md: cached" in rerun.stderr

"""One run's proxy parses a bounded number of bodies at once (issue 35 §2, exhaustion): 16 parallel bodies at the caps
(8 MiB, 200,000 objects) took the proxy to ~1.4 GB before; now they wait their turn, read but not parsed."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from podium.services import LLMProxy
from podium.services.llm import proxy as proxy_module
from podium.services.llm.admission import MAX_CONTAINERS, MAX_PARSES, MAX_REQUEST_BYTES
from podium.testing import Reply, ScriptedLLM
from test_llm_proxy import KEY, _post, _scripted, short_dir  # noqa: F401  (fixture)
from test_llm_proxy_hardening import _raw


def _rss() -> int:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def test_a_runs_bodies_are_parsed_a_few_at_a_time(short_dir, monkeypatch):  # noqa: F811
    parsing, most = [0], [0]
    lock = threading.Lock()
    parse = proxy_module.parse_request

    def slow_parse(body: bytes) -> dict[str, Any]:
        with lock:
            parsing[0] += 1
            most[0] = max(most[0], parsing[0])
        time.sleep(0.3)  # long enough that every connection's parse would overlap
        try:
            return parse(body)
        finally:
            with lock:
                parsing[0] -= 1

    monkeypatch.setattr(proxy_module, "parse_request", slow_parse)
    calls = 3 * MAX_PARSES
    with (
        ScriptedLLM([Reply("fine")] * calls) as model,
        LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY),
    ):
        statuses: list[int] = []
        ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        threads = [
            threading.Thread(
                target=lambda: statuses.append(_post(short_dir / "p.sock", "/v1/chat/completions", ask)[0])
            )
            for _ in range(calls)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    assert statuses == [200] * calls
    assert most[0] == MAX_PARSES


def test_parallel_bodies_at_the_caps_stay_within_memory(short_dir):  # noqa: F811
    item = b'{"a":"' + b"x" * 30 + b'"},'
    count = min(MAX_CONTAINERS - 1_000, (MAX_REQUEST_BYTES - 100) // len(item))
    body = b'{"model":"nope","x":[' + item * count + b"{}]}"
    request = f"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    with (
        ScriptedLLM([]) as model,
        LLMProxy(_scripted(model, models=("m",)), short_dir / "p.sock", short_dir / "p.jsonl", KEY),
    ):
        before, peak, done = _rss(), [0], threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], _rss())
                time.sleep(0.01)

        sampler = threading.Thread(target=sample)
        sampler.start()
        answers: list[bytes] = []
        threads = [
            threading.Thread(target=lambda: answers.append(_raw(short_dir / "p.sock", request))) for _ in range(16)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        sampler.join()
    assert len(answers) == 16 and all(b" 403 " in a.split(b"\r\n", 1)[0] for a in answers), answers[:1]
    assert peak[0] - before < 900 << 20, f"{(peak[0] - before) >> 20} MiB"  # ~1,300 MiB when all 16 parsed at once

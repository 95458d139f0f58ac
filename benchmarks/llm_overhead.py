"""What podium adds to an LLM agent's model calls, side by side in one run (issue 11, performance).

    OMP_NUM_THREADS=1 python benchmarks/llm_overhead.py [--calls 200] [--out benchmarks/llm_overhead.md]
    [--llama FILE.gguf]     # also the tokens/s of a local model through the proxy (llama-cpp-python[server])

1. Latency per call and calls per second: the scripted model server (``podium.testing.ScriptedLLM``)
   called directly over TCP (the baseline) against the same server called through podium's LLM proxy
   (Unix socket, key injected, budget reserved and settled, call logged), sequentially and with 8
   callers at once.
2. The search agent's own overhead per node: one node's wall time (draft call, code run, review call,
   journal) minus the model's time (the server's answers are immediate) minus the code's run time,
   measured on the agent's modules in this process.
3. With ``--llama``: a local model's output tokens per second, direct and through the proxy.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from podium.agents import PROVIDERS, LLMConfig  # noqa: E402
from podium.services import LLMProxy  # noqa: E402
from podium.testing import Reply, ScriptedLLM, ToolCall  # noqa: E402

BODY = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": "say hello in five words"}]}


class _Unix(http.client.HTTPConnection):
    def __init__(self, path: str) -> None:
        super().__init__("localhost", timeout=60)
        self.unix_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self.unix_path)


def _call(target: str, body: dict[str, Any]) -> float:
    data = json.dumps(body).encode()
    started = time.perf_counter()
    if target.startswith("http"):
        url = urlsplit(target)
        connection: http.client.HTTPConnection = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
    else:
        connection = _Unix(target)
    connection.request("POST", "/v1/chat/completions", body=data, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    connection.close()
    assert response.status == 200, response.status
    return time.perf_counter() - started


def _series(target: str, calls: int, workers: int) -> dict[str, float]:
    started = time.perf_counter()
    if workers == 1:
        latencies = [_call(target, BODY) for _ in range(calls)]
    else:
        with ThreadPoolExecutor(workers) as pool:
            latencies = list(pool.map(lambda _: _call(target, BODY), range(calls)))
    total = time.perf_counter() - started
    return {"median_ms": statistics.median(latencies) * 1000, "p90_ms": sorted(latencies)[int(0.9 * len(latencies))] * 1000,
            "calls_per_s": calls / total}  # fmt: skip


def proxy_table(calls: int) -> list[str]:
    rows = []
    with (
        tempfile.TemporaryDirectory(prefix="podium-llm-bench-") as tmp,
        ScriptedLLM([Reply("hello there friend")] * (6 * calls + 40)) as model,
    ):
        config = LLMConfig(PROVIDERS["openai"]).override(base_url=model.base_url)
        with LLMProxy(config, Path(tmp) / "p.sock", Path(tmp) / "calls.jsonl", api_key="sk-bench") as proxy:
            budgeted = replace(config, max_tokens=10**9)
            with LLMProxy(budgeted, Path(tmp) / "b.sock", Path(tmp) / "b.jsonl", api_key="sk-bench"):
                for _ in range(10):  # warm-up
                    _call(model.base_url, BODY), _call(str(proxy.socket_path), BODY)
                for workers in (1, 8):
                    direct = _series(model.base_url, calls, workers)
                    through = _series(str(proxy.socket_path), calls, workers)
                    budget = _series(str(Path(tmp) / "b.sock"), calls, workers)
                    for name, r in (
                        ("direct (baseline)", direct),
                        ("through the proxy", through),
                        ("proxy + token budget", budget),
                    ):
                        rows.append(
                            f"| {workers} | {name} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} | {r['calls_per_s']:.0f} |"
                        )
    return ["| callers | path | median ms | p90 ms | calls/s |", "|---|---|---|---|---|", *rows]


def node_overhead(nodes: int) -> list[str]:
    sys.path.insert(0, str(ROOT / "src" / "podium" / "agents" / "builtin" / "search"))
    from journal import Journal  # type: ignore[import-not-found]
    from llm_client import LLMClient  # type: ignore[import-not-found]
    from operators import Context, review, write_code  # type: ignore[import-not-found]
    from runner import run_code  # type: ignore[import-not-found]

    code = "```python\nprint('holdout metric: 0.5')\n```"
    verdict = {"is_bug": False, "summary": "ok", "metric": 0.5, "lower_is_better": False}
    script = [s for _ in range(nodes + 2) for s in (Reply(code), ToolCall("submit_review", verdict))]
    context = Context(task="Predict y. " * 200, data_files="- train.csv", hardware="2 CPU core(s)", packages="numpy")
    walls, runs = [], []
    with tempfile.TemporaryDirectory() as tmp, ScriptedLLM(script) as model:
        client = LLMClient("openai", "m", base_url=model.base_url)
        journal = Journal(Path(tmp) / "journal.jsonl")
        for i in range(nodes + 2):
            started = time.perf_counter()
            node = journal.new("draft", None, 0.0)
            folder = Path(tmp) / f"{i}"
            folder.mkdir()
            source = write_code(client, context, node, None, step_minutes="5", time_left="1 h")
            path = folder / "solution.py"
            path.write_text(source)
            result = run_code(path, folder, timeout_s=60, memory_bytes=None)
            review(client, context, node, source, "yes")
            journal.write(node)
            if i >= 2:  # two warm-up nodes
                walls.append(time.perf_counter() - started)
                runs.append(result.seconds)
    overhead = [w - r for w, r in zip(walls, runs, strict=True)]
    return [
        "| nodes | node wall, median ms | code run, median ms | agent + model calls, median ms |",
        "|---|---|---|---|",
        f"| {nodes} | {statistics.median(walls) * 1000:.1f} | {statistics.median(runs) * 1000:.1f} | {statistics.median(overhead) * 1000:.1f} |",
    ]


def llama_table(weights: Path) -> list[str]:
    import subprocess

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(weights), "--port", str(port),
                              "--n_ctx", "2048", "--n_threads", "1", "--model_alias", "local"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    body = {
        "model": "local",
        "max_tokens": 128,
        "temperature": 0,
        "messages": [{"role": "user", "content": "Write a long story about a cat."}],
    }
    rows = []
    try:
        for _ in range(240):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        with tempfile.TemporaryDirectory() as tmp:
            config = LLMConfig(PROVIDERS["openai"]).override(base_url=base)
            with LLMProxy(config, Path(tmp) / "l.sock", Path(tmp) / "l.jsonl", api_key="x") as proxy:
                for name, target in (("direct (baseline)", base), ("through the proxy", str(proxy.socket_path))):
                    _call(target, body)
                    seconds = [_call(target, body) for _ in range(3)]
                    tokens = proxy.summary()["output_tokens"] if name != "direct (baseline)" else None
                    rows.append((name, statistics.median(seconds), tokens))
    finally:
        child.kill()
    out = ["| path | median s per 128-token answer | tokens/s |", "|---|---|---|"]
    out += [f"| {name} | {s:.2f} | {128 / s:.0f} |" for name, s, _ in rows]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--nodes", type=int, default=20)
    parser.add_argument("--llama", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "llm_overhead.md")
    args = parser.parse_args()
    lines = ["# LLM path overhead", "", f"`OMP_NUM_THREADS=1 python benchmarks/llm_overhead.py --calls {args.calls} --nodes {args.nodes}"
             + (f" --llama {args.llama.name}" if args.llama else "") + "`", "", "## 1. Per call: direct against the proxy", ""]  # fmt: skip
    lines += proxy_table(args.calls)
    lines += ["", "## 2. The search agent's own time per node (model answers immediate)", ""]
    lines += node_overhead(args.nodes)
    if args.llama:
        lines += ["", f"## 3. A local model ({args.llama.name}, llama.cpp, 1 thread)", ""]
        lines += llama_table(args.llama)
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

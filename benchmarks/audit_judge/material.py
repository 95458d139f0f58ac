"""What reading a large run's material costs the judge: time and memory, with no model called.

    python benchmarks/audit_judge/material.py [--log-mb 200] [--files 20] [--calls 2000] [--out FILE]

Builds a synthetic run in a temporary folder: ``--files`` log files of ``--log-mb`` MB in all (training
output with one ``wget .../solutions.zip`` line near the end of the last file) and a transcript of
``--calls`` chat calls in one conversation (each request repeating every earlier message, as agents
send them, with a tool output of 2 kB a step). Then measures, in a child process each so peak RSS is
the reader's own: the previous reader as the baseline (every log file held whole at once), the cache key (``material_digest``: every byte hashed, streamed), and the material
(``Material.chunks``: the transcript de-duplicated, the risk scan, the 40 chunks judged by default).
Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

WGET = "wget https://www.kaggle.com/c/spaceship-titanic/leaderboard/solutions.zip"


def build(root: Path, log_mb: float, files: int, calls: int) -> Path:
    run = root / "g" / "spaceship-titanic" / "0"
    for folder in ("logs", "code", "submission"):
        (run / folder).mkdir(parents=True)
    line = "epoch 17/400 - loss 0.41321 - val_loss 0.43310 - lr 0.000100 " + "." * 38 + "\n"
    per_file = int(log_mb * 1e6 / files / len(line))
    for i in range(files):
        text = line * per_file
        if i == files - 1:
            text = text[: -len(line) * 10] + WGET + "\n" + line * 9
        (run / "logs" / f"{i:04d}-train.log").write_text(text)
    (run / "code" / "train.py").write_text("import pandas as pd\nprint(pd.read_csv('train.csv').shape)\n")
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a data scientist."}]
    messages.append({"role": "user", "content": "Solve spaceship-titanic."})
    with open(run / "llm_transcript.jsonl", "w") as out:
        for n in range(1, calls + 1):
            answer = {"role": "assistant", "content": f"Step {n}: try a model with depth {n % 12}."}
            call = {"call": n, "time": "2025-01-01T00:00:00+00:00", "api": "chat", "path": "/v1/chat/completions",
                    "model": "gpt-4o", "status": 200, "stream": False, "request": {"messages": messages},
                    "response": {"choices": [{"message": answer}]}, "error": None, "truncated": False}  # fmt: skip
            out.write(json.dumps(call) + "\n")
            messages = [*messages, answer, {"role": "user", "content": f"output of step {n}\n" + "x" * 2000}]
            if len(messages) > 60:  # the agent keeps its context bounded: system, task, the last steps
                messages = messages[:2] + messages[-40:]
    record = {"run_group": "g", "competition_id": "spaceship-titanic", "competition_version": 1, "seed": 0,
              "agent": "x", "llm": {"calls": calls, "refused": 0}}  # fmt: skip
    (run / "record.json").write_text(json.dumps(record))
    return run


def _measure(kind: str, run: str, queue: Any) -> None:
    from podium.audit import AuditContext
    from podium.audit.judge_material import Material, material_digest

    started = time.perf_counter()
    if kind == "import":  # the baseline: podium's audit imported, nothing read
        detail = "podium.audit imported, nothing read"
    elif kind == "held":  # the reader before issue 28: every log file held at once (each cut at 8 MiB)
        ctx = AuditContext(run)
        held = [(ctx.relative(p), ctx.read_text(p)) for p in ctx.log_files() if p.suffix != ".csv"]
        detail = f"previous reader: {sum(len(t) for _, t in held) / 1e6:.0f} M characters held, transcript unread"
    elif kind == "digest":
        material_digest(AuditContext(run))
        detail = "every byte hashed, streamed"
    else:
        material = Material(AuditContext(run))
        chunks = list(material.chunks())
        left = sum(n for _, n in material.unread())
        found = any("solutions.zip" in c.text for c in chunks)
        detail = (f"{len(chunks)} chunks, {material.repeated_messages} repeated messages not shown, "
                  f"{left / 1e6:.0f} MB unread, wget line in chunk: {found}")  # fmt: skip
    seconds = time.perf_counter() - started
    queue.put((seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, detail))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--log-mb", type=float, default=200)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run = build(Path(folder), args.log_mb, args.files, args.calls)
        sizes = sum(p.stat().st_size for p in run.rglob("*") if p.is_file())
        rows = [f"run: {args.log_mb:g} MB of logs in {args.files} files, {args.calls} calls "
                f"({(run / 'llm_transcript.jsonl').stat().st_size / 1e6:.0f} MB transcript), {sizes / 1e6:.0f} MB in all",
                "", "| step | wall s | peak RSS MB | what |", "|---|---|---|---|"]  # fmt: skip
        context = multiprocessing.get_context("spawn")
        for kind in ("import", "held", "digest", "material"):
            queue = context.Queue()
            child = context.Process(target=_measure, args=(kind, str(run), queue))
            child.start()
            seconds, rss, detail = queue.get()
            child.join()
            rows.append(f"| {kind} | {seconds:.2f} | {rss:.0f} | {detail} |")
    text = "\n".join(rows) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

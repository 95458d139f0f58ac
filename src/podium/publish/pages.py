"""A bundle's static page of one run: its grade, settings and compute, audit, the proxy's transcript of its
model calls, its journal, code and logs, and every file it holds, linked into the bundle.

The page is one HTML file that needs no server and no network: it opens from the unpacked bundle.
Everything on it was read the way the dashboard reads a run (:mod:`podium.serve.runfiles`, no link
followed, every read bounded), escaped by the template and passed through the dashboard's
:class:`~podium.serve.redact.Redactor`, so no key or path to the answers is printed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from podium.audit import read_audit
from podium.paths import RunPaths
from podium.untrusted import UntrustedJSONError, loads

__all__ = ["TRANSCRIPT", "run_page", "transcript_calls"]

#: The proxy's transcript of every model call, as its name in a run's folder (interface I1: ``RunPaths.transcript``).
TRANSCRIPT = RunPaths(Path()).transcript.name
#: Calls shown on a page, and the most characters of one request or response shown.
_CALLS_SHOWN = 500
_SHOWN_CHARS = 20_000
_LINE_BYTES = 4 << 20
#: The most code files and logs a page shows (every file is still listed and linked).
_FILES_SHOWN = 100
_LOG_SUFFIXES = (".log", ".txt", ".out", ".err")
_GRADE_KEYS = (
    "score", "valid_submission", "submission_exists", "gold_medal", "silver_medal", "bronze_medal",
    "above_median", "percentile", "rank", "n_teams", "leaderboard", "error",
)  # fmt: skip


def _lines(path: Path, limit: int) -> Iterator[bytes]:
    """The lines of a run's file, each cut at :data:`_LINE_BYTES`, read in chunks (never whole)."""
    from podium.serve.runfiles import inside

    if not inside(path.parent, path) or path.is_symlink() or not path.is_file():
        return
    with open(path, "rb") as handle:
        for count, line in enumerate(iter(lambda: handle.readline(_LINE_BYTES), b"")):
            if count >= limit:
                return
            yield line


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, indent=1, ensure_ascii=False)
    return (
        text
        if len(text) <= _SHOWN_CHARS
        else text[:_SHOWN_CHARS] + f"\n[... {len(text) - _SHOWN_CHARS} more characters]"
    )


def transcript_calls(run_dir: Path) -> tuple[list[dict[str, Any]], bool]:
    """The transcript's calls as a page shows them (at most :data:`_CALLS_SHOWN`), and whether some were left out."""
    calls = []
    for line in _lines(RunPaths(run_dir).transcript, _CALLS_SHOWN + 1):
        try:
            entry = loads(line, max_bytes=_LINE_BYTES, what="a transcript line")
        except UntrustedJSONError:
            entry = {"error": f"an unreadable line ({len(line)} bytes)"}
        if not isinstance(entry, dict):
            continue
        calls.append(
            {
                "call": entry.get("call"),
                "api": entry.get("api"),
                "model": entry.get("model"),
                "status": entry.get("status"),
                "truncated": bool(entry.get("truncated")),
                "request": _shown(entry.get("request")),
                "response": _shown(entry.get("response")),
                "error": entry.get("error"),
            }
        )
    return calls[:_CALLS_SHOWN], len(calls) > _CALLS_SHOWN


def _audit(run_dir: Path) -> dict[str, Any] | None:
    audit = read_audit(run_dir)
    if audit is None:
        return None
    checks = [{"name": r.check, "verdict": r.verdict, "reasons": [f.reason for f in r.flags]} for r in audit.results]
    checks += [{"name": name, "verdict": "skipped", "reasons": [why]} for name, why in audit.skipped.items()]
    return {"verdict": audit.verdict, "checks": checks}


def _settings(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    limits = record.get("limits") or {}
    compute = record.get("compute")
    rows: list[tuple[str, Any]] = [
        ("sandbox", record.get("sandbox")),
        ("time limit (s)", limits.get("time_limit_s")),
        ("CPUs given", limits.get("cpus")),
        ("memory given (bytes)", limits.get("memory_bytes")),
        ("GPUs given", limits.get("gpus")),
        ("environment", json.dumps(record.get("environment")) if record.get("environment") else "podium's own Python"),
        ("description", record.get("description")),
        ("podium", record.get("podium_version")),
    ]
    if isinstance(compute, dict):
        rows += [
            (f"compute: {key}", json.dumps(value) if isinstance(value, dict) else value)
            for key, value in compute.items()
        ]
    else:
        rows.append(("compute", "not recorded (a run from before podium recorded the compute each run had)"))
    result = record.get("agent_result") or {}
    rows += [
        ("exit code", result.get("exit_code")),
        ("seconds", result.get("seconds")),
        ("peak memory (bytes)", result.get("peak_memory_bytes")),
    ]
    llm = record.get("llm") or {}
    if llm:
        rows += [
            ("model calls", llm.get("calls")),
            ("models", ", ".join(sorted((llm.get("models") or {}).keys()))),
            ("cost (USD)", llm.get("cost_usd")),
        ]
    return rows


def _texts(run: RunPaths, files: Sequence[Mapping[str, Any]], folder: str, *, head: bool) -> list[dict[str, Any]]:
    from podium.serve.runfiles import read_head, tail

    out = []
    for file in files:
        path = str(file["path"])
        if not path.startswith(folder + "/"):
            continue
        if head:
            got = read_head(run.root, run.root / path)
            text, cut = got if got is not None else ("", False)
        else:
            end = tail(run.root, run.root / path)
            text, cut = end.text, end.cut
        out.append({"path": path, "size": file["size"], "text": text, "cut": cut})
    return out


def run_page(
    run_dir: Path,
    record: Mapping[str, Any],
    files: Sequence[Mapping[str, Any]],
    left_out: Sequence[Mapping[str, str]],
    *,
    files_base: str,
    index: str,
) -> str:
    """The run's page as HTML. ``files`` are the run's files in the bundle (``path`` relative to the run's folder,
    ``size``, ``sha256``), ``files_base`` the link from the page to the run's folder, ``index`` to the report."""
    import jinja2

    from podium.serve.journal import load_journal
    from podium.serve.redact import Redactor

    redactor = Redactor.from_environment()
    paths = RunPaths(run_dir)
    grade = record.get("grade")
    calls, cut = transcript_calls(run_dir)
    has_transcript = any(f["path"] == TRANSCRIPT for f in files)
    absent = (
        "The transcript is in the bundle but holds no readable call."
        if has_transcript
        else "No transcript: this run made no model calls through podium's proxy, or ran before the proxy kept one."
    )
    code = [f for f in files if str(f["path"]).endswith((".py", ".md", ".txt", ".sh", ".yaml", ".json", ".ipynb"))]
    template = (resources.files("podium.publish") / "templates" / "run.html.j2").read_text(encoding="utf-8")
    environment = jinja2.Environment(
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=lambda v: redactor.value(v) if isinstance(v, str) else v,
    )
    return environment.from_string(template).render(
        run={
            "competition": record.get("competition_id"),
            "version": record.get("competition_version"),
            "seed": record.get("seed"),
            "group": record.get("run_group"),
            "agent": record.get("agent"),
            "agent_hash": record.get("agent_hash"),
            "status": record.get("status"),
            "started": record.get("started_at"),
            "finished": record.get("finished_at"),
            "error": record.get("error"),
        },
        grade=[(k, grade.get(k)) for k in _GRADE_KEYS] if isinstance(grade, dict) else None,
        settings=_settings(record),
        audit=_audit(run_dir),
        transcript={"calls": calls, "cut": cut, "absent": absent},
        journal=load_journal(paths),
        code=_texts(paths, code[:_FILES_SHOWN], "code", head=True),
        logs=_texts(
            paths, [f for f in files if str(f["path"]).endswith(_LOG_SUFFIXES)][:_FILES_SHOWN], "logs", head=False
        ),
        files=files,
        left_out=left_out,
        files_base=files_base,
        index=index,
    )

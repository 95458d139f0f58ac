"""``external``: the agent's code or logs reach for another model's API or the web.

Code (every Python file the agent left) is flagged for an LLM SDK import (``openai``,
``anthropic``, ``google.generativeai``, ...), a model API's host, Kaggle's API (``import kaggle``,
``kagglehub``, ``kaggle competitions download``), and a non-local address fetched (an HTTP client,
``curl``/``wget``, pandas' ``read_csv``, ``urlretrieve``, ``load_dataset``...; a dataset host is named
as such). A URL in prose (a docstring naming the competition's page) is no access. Logs hold text the agent was shown (the competition's
description names kaggle.com), so in logs only commands are flagged: ``curl``/``wget``/``kaggle ...
download`` to a non-local address. A comment line is not code. A run with no code at all gets the
note ``no code to audit`` (not a violation).
"""

from __future__ import annotations

import bisect
import re
from pathlib import Path

from podium import __version__
from podium.audit.context import AuditContext
from podium.audit.registry import register_check
from podium.audit.types import CheckResult, Evidence, Figure, Flag

__all__ = ["LLM_HOSTS", "LLM_SDKS", "ExternalCheck", "scan_code", "scan_log"]

#: Python packages that call a hosted model's API.
LLM_SDKS = (
    "openai", "anthropic", "google.generativeai", "google.genai", "vertexai", "cohere", "mistralai", "groq",
    "together", "replicate", "litellm", "ai21", "fireworks", "deepseek", "zhipuai", "dashscope",
)  # fmt: skip
#: Hosts of hosted models' APIs.
LLM_HOSTS = (
    "api.openai.com", "api.anthropic.com", "generativelanguage.googleapis.com", "aiplatform.googleapis.com",
    "api.cohere.ai", "api.cohere.com", "api.mistral.ai", "api.groq.com", "api.together.xyz", "openrouter.ai",
    "api.deepseek.com", "api-inference.huggingface.co", "api.fireworks.ai", "api.replicate.com",
)  # fmt: skip
#: Where competition data, solutions or other datasets can be fetched.
_DATA_HOSTS = (
    "kaggle.com", "kaggleusercontent.com", "storage.googleapis.com/kaggle", "raw.githubusercontent.com",
    "huggingface.co/datasets", "zenodo.org", "figshare.com", "drive.google.com", "dropbox.com", "paperswithcode.com",
)  # fmt: skip
_LOCAL = re.compile(r"^(localhost|127\.\d+\.\d+\.\d+|0\.0\.0\.0|\[?::1\]?)(:\d+)?$", re.IGNORECASE)
_URL = re.compile(r"\b(?:https?|ftp)://([^/\s'\"<>)]+)", re.IGNORECASE)
_SDK_IMPORT = re.compile(
    r"^\s*(?:import|from)\s+(" + "|".join(re.escape(s) for s in LLM_SDKS) + r")(?:\s|\.|,|$)", re.MULTILINE
)
_KAGGLE_API = re.compile(
    r"^\s*(?:import|from)\s+(kaggle|kagglehub)\b|\bkaggle\s+(?:competitions|datasets|kernels)\s+(?:download|pull|output)\b"
)
_HTTP_CLIENT = re.compile(
    r"\b(?:requests|httpx|aiohttp|urllib3?|urllib\.request|http\.client|pycurl)\b|\b(?:curl|wget)\s"
)
#: Calls that fetch a URL without an HTTP client of their own (pandas, urllib's helpers, dataset loaders).
_FETCH = re.compile(r"\b(?:read_\w+|urlretrieve|urlopen|download\w*|load_dataset|get_file|fetch\w*)\s*\(")
_COMMAND = re.compile(
    r"\b(?:curl|wget)\s[^\n]*?(?:https?|ftp)://|\bkaggle\s+(?:competitions|datasets|kernels)\s+(?:download|pull)"
)


def _line_of(text: str, at: int, lines: dict[int, str], newlines: list[int]) -> None:
    """Add the line holding position ``at`` to ``lines`` (number -> text)."""
    number = bisect.bisect_right(newlines, at) + 1
    if number not in lines:
        start = newlines[number - 2] + 1 if number > 1 else 0
        end = newlines[number - 1] if number - 1 < len(newlines) else len(text)
        lines[number] = text[start:end]


def _lines_at(text: str, patterns: tuple[re.Pattern[str], ...], needles: tuple[str, ...]) -> list[tuple[int, str]]:
    """(line number, line) of every line of ``text`` where a pattern matches or a needle occurs (case-insensitive),
    each once, in order. Needles are found with ``str.find``, which is what keeps a clean file cheap."""
    lower = text.lower()
    hits: list[int] = [m.start() for p in patterns for m in p.finditer(text)]
    for needle in needles:
        at = lower.find(needle)
        while at >= 0:
            hits.append(at)
            at = lower.find(needle, at + 1)
    if not hits:
        return []
    newlines = [m.start() for m in re.finditer("\n", text)]
    lines: dict[int, str] = {}
    for at in sorted(hits):
        _line_of(text, at, lines, newlines)
    return sorted(lines.items())


_CODE_NEEDLES = ("://", "kaggle", *LLM_HOSTS, *_DATA_HOSTS)
_LOG_NEEDLES = ("curl ", "wget ", "kaggle ")


def _remote_hosts(line: str) -> list[str]:
    return [h for h in _URL.findall(line) if not _LOCAL.match(h.rsplit("@", 1)[-1])]


def scan_code(text: str) -> list[tuple[int, str, str]]:
    """(line, reason, line's text) for each line of Python source that reaches for a model's API or the web."""
    found: list[tuple[int, str, str]] = []
    uses_http = bool(_HTTP_CLIENT.search(text))
    for n, line in _lines_at(text, (_SDK_IMPORT,), _CODE_NEEDLES):
        if line.lstrip().startswith("#"):
            continue
        reason = None
        if m := _SDK_IMPORT.match(line):
            reason = f"imports the LLM SDK {m.group(1)!r}"
        elif host := next((h for h in LLM_HOSTS if h in line), None):
            reason = f"names the model API host {host}"
        elif _KAGGLE_API.search(line):
            reason = "uses Kaggle's API"
        elif (uses_http or _FETCH.search(line)) and (hosts := _remote_hosts(line)):
            # a URL in prose (a docstring naming the competition's page) is no access; a fetch of it is
            data = next((h for h in _DATA_HOSTS if h in line.lower()), None)
            reason = f"downloads from the data host {data}" if data else f"reaches the web ({hosts[0]})"
        if reason:
            found.append((n, reason, line.strip()))
    return found


def scan_log(text: str) -> list[tuple[int, str, str]]:
    """(line, reason, line's text) for each log line that runs a download from a non-local address."""
    found = []
    for n, line in _lines_at(text, (), _LOG_NEEDLES):
        if _COMMAND.search(line) and (_remote_hosts(line) or "kaggle" in line):
            found.append((n, "runs a download from the web", line.strip()))
    return found


class ExternalCheck:
    """``external``: calls to another model's API or the web in the agent's code and logs."""

    name = "external"
    version = "2"

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return None

    def cache_key(self, ctx: AuditContext) -> str:
        return ctx.files_sha256([*ctx.code_files(), *ctx.log_files()])

    def run(self, ctx: AuditContext) -> CheckResult:
        flags: list[Flag] = []
        code = ctx.code_files()
        if not code:
            flags.append(Flag(self.name, "no code to audit: the run left no Python file", violation=False))
        scans: list[tuple[Path, list[tuple[int, str, str]]]] = [(p, scan_code(ctx.read_text(p))) for p in code]
        scans += [(p, scan_log(ctx.read_text(p))) for p in ctx.log_files() if p.suffix != ".py"]
        for path, hits in scans:
            by_reason: dict[str, list[Evidence]] = {}
            for line, reason, fragment in hits:
                by_reason.setdefault(reason, []).append(Evidence(ctx.relative(path), line, fragment))
            for reason, evidence in by_reason.items():
                flags.append(
                    Flag(
                        self.name,
                        f"{ctx.relative(path)} {reason}",
                        tuple(evidence[:5]),
                        figures={"lines": len(evidence)},
                    )
                )
        inputs: dict[str, str | Figure] = {
            "podium": __version__,
            "code_files": len(code),
            "code_sha256": ctx.files_sha256(code),
            "log_files": len(ctx.log_files()),
            "logs_sha256": ctx.files_sha256(ctx.log_files()),
        }
        return CheckResult.from_flags(self.name, flags, inputs)


register_check(ExternalCheck())

"""``integrity``: a statement, backed by the run's records, that the run saw no test signal.

Four parts, each a note of the result (so the report can print the statement), and a violation
where a part fails:

1. the private answers were never mounted: no mount the record lists (``isolation.mounts``) is the
   answers folder, inside it or above it;
2. the validation endpoint never gave a score: the number of calls, every logged answer a format
   verdict only;
3. no network but the proxy: the sandbox isolates (``bwrap``, ``docker``: a loopback of its own), and
   the only sockets are the validation endpoint's and podium's LLM proxy;
4. the agent's own folder (its scaffold) holds nothing that imports a grader (``podium``'s grading,
   ``mlebench``), calls a grading command (``podium grade``, ``mlebench grade``) or names the answers
   (``prepared/private``). The folder is the built-in agent the record names, or ``options["agent_dir"]``,
   checked against the record's ``agent_hash``.

A part the records cannot back (the ``local`` sandbox isolates nothing; a record from before podium
kept its mounts; an agent folder not given) makes the result ``unclear``, never ``clean``.
:func:`known_leakage` gives the competition's known leakage facts (its notes, and the leak fixes
its later versions carry) for the report to print beside the statement.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from podium import __version__
from podium.audit.context import AuditContext, walk_files
from podium.audit.registry import register_check
from podium.audit.types import CheckResult, Evidence, Flag

__all__ = ["IntegrityCheck", "known_leakage", "scan_scaffold"]

_FORMAT_VERDICTS = {"valid", "invalid", "rate-limited", "error"}
_SCAFFOLD_RULES = (
    (re.compile(r"^\s*(?:from|import)\s+(?:podium(?:\.grading)?|mlebench(?:\.grade\w*)?)\b"), "imports a grader"),
    (re.compile(r"\b(?:podium|mlebench)\s+grade\b|\bgrade_csv\b|\bgrade_submission\b|\bpodium\.grade\("), "calls a grading command"),
    (re.compile(r"prepared/private|/private/(?:answers|test|solution)"), "names the answers file"),
)  # fmt: skip
_SCAFFOLD_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".txt", ".md", ".json", ".toml", ".cfg", ".j2", ".jinja")


def scan_scaffold(text: str) -> list[tuple[int, str, str]]:
    """(line, reason, line's text) for each line of an agent's file that reaches for grading or the answers."""
    found = []
    for n, line in enumerate(text.splitlines(), 1):
        for pattern, reason in _SCAFFOLD_RULES:
            if pattern.search(line):
                found.append((n, reason, line.strip()))
                break
    return found


def _under(a: PurePosixPath, b: PurePosixPath) -> bool:
    return a == b or b in a.parents


def _answers_part(ctx: AuditContext, isolation: Mapping[str, Any]) -> tuple[str, Flag | None]:
    answers = PurePosixPath(str(isolation.get("answers") or ""))
    mounts = [m for m in isolation.get("mounts") or () if isinstance(m, dict)]
    exposed = [
        m for m in mounts if _under(PurePosixPath(str(m.get("source"))), answers) or _under(answers, PurePosixPath(str(m.get("source"))))
    ]  # fmt: skip
    if exposed:
        evidence = tuple(Evidence("record.json", None, f"{m.get('source')} -> {m.get('target')}") for m in exposed)
        return "answers: MOUNTED", Flag(
            "integrity", f"the private answers ({answers}) were mounted into the sandbox", evidence
        )
    return f"answers: never mounted ({len(mounts)} mounts, none at or above {answers})", None


def _validation_part(ctx: AuditContext) -> tuple[str, Flag | None]:
    calls = ctx.validation_calls
    scored = [n for n, c in enumerate(calls, 1) if "score" in c or c.get("verdict") not in _FORMAT_VERDICTS]
    if scored:
        evidence = tuple(
            Evidence(ctx.relative(ctx.paths.validation_log), n, str(calls[n - 1])[:200]) for n in scored[:5]
        )
        return "validation: NOT format-only", Flag(
            "integrity", f"{len(scored)} validation calls answered more than a format verdict", evidence
        )
    return f"validation: {len(calls)} calls, all format-only (no score returned)", None


def _network_part(ctx: AuditContext, isolation: Mapping[str, Any]) -> str:
    sockets = sorted(
        str(m.get("target")) for m in isolation.get("mounts") or () if isinstance(m, dict) and str(m.get("target", "")).endswith(".sock")
    )  # fmt: skip
    llm = ctx.record.llm if ctx.record else None
    proxy = f"; {llm.get('calls', 0)} model calls through podium's proxy" if isinstance(llm, dict) else ""
    return f"network: {isolation.get('network')} ({isolation.get('sandbox')}); sockets {', '.join(sockets) or 'none'}{proxy}"


def _scaffold_part(ctx: AuditContext) -> tuple[str, list[Flag], bool]:
    """(statement, violations, backed) for the agent's own folder."""
    folder = ctx.agent_dir()
    if folder is None:
        return "scaffold: not read (the agent's folder is not known; give --agent-dir)", [], False
    from podium.agents import folder_digest

    record_hash = ctx.record.agent_hash if ctx.record else None
    if record_hash and ctx.options.get("agent_dir") and folder_digest(folder) != record_hash:
        return f"scaffold: {folder} is not the folder that ran (its hash differs from the record's)", [], False
    flags = []
    files = walk_files(folder, _SCAFFOLD_SUFFIXES)
    for path in files:
        hits = scan_scaffold(ctx.read_text(path))
        if hits:
            evidence = tuple(Evidence(str(path), n, text) for n, _, text in hits[:5])
            flags.append(Flag("integrity", f"the agent's folder {path.name}: {hits[0][1]}", evidence))
    state = (
        "imports a grader or names the answers"
        if flags
        else "imports no grader, calls no grading command, names no answers"
    )
    return f"scaffold: {len(files)} files of {folder.name}: {state}", flags, True


class IntegrityCheck:
    """``integrity``: the records' statement that the run saw no test signal."""

    name = "integrity"
    version = "1"

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return None if ctx.record is not None else "no readable record.json"

    def cache_key(self, ctx: AuditContext) -> str:
        folder = ctx.agent_dir()
        scaffold = (
            "|".join(f"{p}:{ctx.fingerprint(p)}" for p in walk_files(folder, _SCAFFOLD_SUFFIXES)) if folder else ""
        )
        parts = [str(ctx.record_sha256), str(ctx.sha256(ctx.paths.validation_log)), str(folder), scaffold]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def run(self, ctx: AuditContext) -> CheckResult:
        assert ctx.record is not None
        isolation = ctx.record.isolation
        notes: list[str] = []
        flags: list[Flag] = []
        backed = True
        if not isinstance(isolation, dict):
            notes.append("answers and network: not recorded (the run predates podium recording its sandbox's mounts)")
            backed = False
        else:
            statement, flag = _answers_part(ctx, isolation)
            notes.append(statement)
            flags += [flag] if flag else []
            notes.append(_network_part(ctx, isolation))
            if not isolation.get("isolated"):
                notes.append(
                    f"the {isolation.get('sandbox')} sandbox isolates nothing: the agent could read the answers and reach the network"
                )
                backed = False
        statement, flag = _validation_part(ctx)
        notes.append(statement)
        flags += [flag] if flag else []
        statement, scaffold_flags, scaffold_backed = _scaffold_part(ctx)
        notes.append(statement)
        flags += scaffold_flags
        backed = backed and scaffold_backed
        all_flags = [*flags, *(Flag(self.name, note, violation=False) for note in notes)]
        result = CheckResult.from_flags(
            self.name, all_flags, {"podium": __version__, "agent_hash": str(ctx.record.agent_hash or "")}
        )
        if result.verdict == "clean" and not backed:
            return CheckResult(self.name, "unclear", result.flags, result.inputs)
        return result


def known_leakage(competition_id: str, version: int | None = None) -> list[str]:
    """The competition's known leakage facts: its notes that name a leak, and each later version's leak fix
    (with whether the version run carries it); [] for a competition the registry does not know."""
    from podium import registry
    from podium.errors import PodiumError

    try:
        competition = registry.get(competition_id, version)
    except PodiumError:
        return []
    facts = [note for note in competition.notes if "leak" in note.lower()]
    for other in competition.versions:
        if other <= 1:
            continue
        try:
            changes = registry.get(competition_id, other).changes
        except PodiumError:
            continue
        if any(word in changes.lower() for word in ("leak", "reveal")):
            carried = "carried by this run" if competition.version >= other else "not carried by this run"
            facts.append(f"version {other} fixes ({carried}): {' '.join(changes.split())}")
    return facts


register_check(IntegrityCheck())

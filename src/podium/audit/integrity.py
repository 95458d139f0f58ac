"""``integrity``: a statement, backed by the run's records, that the run saw no test signal.

Four parts, each a note of the result (so the report can print the statement), and a violation
where a part fails:

1. the private answers were never mounted: no mount the record lists (``isolation.mounts``) is the
   answers folder, inside it or above it;
2. the validation endpoint never gave a score: the number of calls, every logged answer a format
   verdict only;
3. no network but the proxy: what the sandbox observed inside the agent's network namespace at start
   (``isolation.network_observed``: its interfaces and routes, taken by the sandbox or, on a cluster,
   by the node) is loopback only, and the only sockets are the validation endpoint's and podium's LLM
   proxy's. An interface that is up or has an address and is not a loopback, or a route through one
   (a default route among them), is a violation;
4. the agent's own folder (its scaffold) holds nothing that imports a grader (``podium``'s grading,
   ``mlebench``), calls a grading command (``podium grade``, ``mlebench grade``) or names the answers
   (``prepared/private``). The folder is the one the record names (``agent_folder``), the built-in
   agent it names, or ``options["agent_dir"]``, and it is read only when its hash is the record's
   ``agent_hash``.

A part the records cannot back makes the result ``unclear``, never ``clean``: the ``local`` sandbox
isolates nothing; a record from before podium kept its mounts, or observed the network; an agent
folder that is not found or not the one that ran; a file of the run refused for its hard links.
:func:`known_leakage` gives the competition's known leakage facts (its notes, and the leak fixes its
later versions carry) for the report to print beside the statement.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from podium import __version__
from podium.audit.context import AuditContext, walk_files
from podium.audit.registry import register_check
from podium.audit.types import CheckResult, Evidence, Flag

__all__ = ["IntegrityCheck", "known_leakage", "network_problems", "scan_scaffold"]

_FORMAT_VERDICTS = {"valid", "invalid", "rate-limited", "error"}
_SCAFFOLD_RULES = (
    (re.compile(r"^\s*(?:from|import)\s+(?:podium(?:\.grading)?|mlebench(?:\.grade\w*)?)\b"), "imports a grader"),
    (re.compile(r"\b(?:podium|mlebench)\s+grade\b|\bgrade_csv\b|\bgrade_submission\b|\bpodium\.grade\("), "calls a grading command"),
    (re.compile(r"prepared/private|/private/(?:answers|test|solution)"), "names the answers file"),
)  # fmt: skip
_SCAFFOLD_SUFFIXES = (".py", ".sh", ".yaml", ".yml", ".txt", ".md", ".json", ".toml", ".cfg", ".j2", ".jinja")
_DEVICE = re.compile(r"\bdev\s+(\S+)")
_DEFAULT = re.compile(r"^\s*(?:default|0\.0\.0\.0/0|::/0)\b")


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


def _answers_part(ctx: AuditContext, isolation: Mapping[str, Any]) -> tuple[Flag, Flag | None]:
    answers = PurePosixPath(str(isolation.get("answers") or ""))
    mounts = [m for m in isolation.get("mounts") or () if isinstance(m, dict)]
    exposed = [
        m for m in mounts if _under(PurePosixPath(str(m.get("source"))), answers) or _under(answers, PurePosixPath(str(m.get("source"))))
    ]  # fmt: skip
    figures = {"mounts": len(mounts), "answers_mounted": len(exposed)}
    if exposed:
        evidence = tuple(Evidence("record.json", None, f"{m.get('source')} -> {m.get('target')}") for m in exposed)
        flag = Flag(
            "integrity", f"the private answers ({answers}) were mounted into the sandbox", evidence, figures=figures
        )
        return _note("answers: MOUNTED", figures), flag
    return _note(f"answers: never mounted ({len(mounts)} mounts, none at or above {answers})", figures), None


def _note(reason: str, figures: Mapping[str, int | float] | None = None) -> Flag:
    return Flag("integrity", reason, violation=False, figures=dict(figures or {}))


def _validation_part(ctx: AuditContext) -> tuple[Flag, Flag | None]:
    calls = ctx.validation_calls
    scored = [n for n, c in enumerate(calls, 1) if "score" in c or c.get("verdict") not in _FORMAT_VERDICTS]
    figures = {"calls": len(calls), "scored": len(scored)}
    if scored:
        evidence = tuple(
            Evidence(ctx.relative(ctx.paths.validation_log), n, str(calls[n - 1])[:200]) for n in scored[:5]
        )
        flag = Flag(
            "integrity",
            f"{len(scored)} validation calls answered more than a format verdict",
            evidence,
            figures=figures,
        )
        return _note("validation: NOT format-only", figures), flag
    return _note(f"validation: {len(calls)} calls, all format-only (no score returned)", figures), None


def network_problems(observed: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(what is not loopback, what cannot be told) in a record's ``network_observed``: interfaces that are up or
    have an address and are not loopbacks, routes through such an interface or a default route; routes that name
    no interface."""
    interfaces = [i for i in observed.get("interfaces") or () if isinstance(i, dict)]
    loopbacks = {str(i.get("name")) for i in interfaces if i.get("loopback") is True}
    names = {str(i.get("name")) for i in interfaces}
    bad, unknown = [], []
    if not interfaces:
        unknown.append("no interface listed")
    for i in interfaces:
        if i.get("loopback") is not True and (i.get("up") or i.get("addresses")):
            addresses = ", ".join(str(a) for a in i.get("addresses") or ()) or "no address"
            bad.append(f"interface {i.get('name')} ({'up' if i.get('up') else 'down'}; {addresses})")
    routes = observed.get("routes")
    for route in routes if isinstance(routes, list) else ["(routes not listed)"]:
        text = str(route)
        named = _DEVICE.search(text)
        words = text.split()
        device = named.group(1) if named else (words[0] if words and words[0] in names else None)
        if device in loopbacks:
            continue
        if device is not None or _DEFAULT.match(text):
            bad.append(f"route {text!r}")
        else:
            unknown.append(f"route {text!r} names no interface")
    return bad, unknown


def _network_part(ctx: AuditContext, isolation: Mapping[str, Any]) -> tuple[Flag, Flag | None, bool]:
    """(statement, violation, backed) for the network."""
    sockets = sorted(
        str(m.get("target")) for m in isolation.get("mounts") or () if isinstance(m, dict) and str(m.get("target", "")).endswith(".sock")
    )  # fmt: skip
    llm = ctx.record.llm if ctx.record else None
    calls = llm.get("calls", 0) if isinstance(llm, dict) else None
    proxy = f"; {calls} model calls through podium's proxy" if calls is not None else ""
    tail = f"; sockets {', '.join(sockets) or 'none'}{proxy}"
    figures = {"sockets": len(sockets), **({"model_calls": calls} if isinstance(calls, int) else {})}
    sandbox = isolation.get("sandbox")
    observed = isolation.get("network_observed")
    if not isinstance(observed, dict) or "error" in observed:
        why = (
            f"it could not be taken: {observed.get('error')}"
            if isinstance(observed, dict)
            else "the record holds no observation of the sandbox's interfaces and routes"
        )
        return _note(f"network: NOT OBSERVED ({sandbox}, {why}){tail}", figures), None, False
    by = str(observed.get("observed_by") or "")
    who = f"{by}: the record was made by the node" if by.startswith("node") else by or "an unnamed observer"
    bad, unknown = network_problems(observed)
    interfaces = [i for i in observed.get("interfaces") or () if isinstance(i, dict)]
    figures |= {"interfaces": len(interfaces), "routes": len(observed.get("routes") or ())}
    if bad:
        evidence = tuple(Evidence("record.json", None, f"isolation.network_observed: {b}") for b in bad[:5])
        flag = Flag(
            "integrity", f"the sandbox's network was not loopback only: {'; '.join(bad[:3])}", evidence, figures=figures
        )
        return _note(f"network: NOT loopback only ({sandbox}, observed at start by {who}){tail}", figures), flag, True
    if unknown:
        return (
            _note(f"network: not shown loopback only ({sandbox}: {'; '.join(unknown[:3])}){tail}", figures),
            None,
            False,
        )
    names = ", ".join(str(i.get("name")) for i in interfaces)
    statement = f"network: loopback only ({sandbox}, observed at start by {who}: interfaces {names}){tail}"
    return _note(statement, figures), None, True


def _scaffold_part(ctx: AuditContext) -> tuple[Flag, list[Flag], bool]:
    """(statement, violations, backed) for the agent's own folder."""
    found = ctx.agent_folder
    if found.path is None:
        return _note(f"scaffold: not read: {found.how}"), [], False
    flags = []
    files = _scaffold_files(found.path)
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
    statement = f"scaffold: {len(files)} files of {found.path.name}: {state} (the folder: {found.how})"
    return _note(statement, {"files": len(files), "violations": len(flags)}), flags, True


def _scaffold_files(folder: Path) -> tuple[Path, ...]:
    return walk_files(folder, _SCAFFOLD_SUFFIXES)


class IntegrityCheck:
    """``integrity``: the records' statement that the run saw no test signal."""

    name = "integrity"
    version = "2"

    def skip_reason(self, ctx: AuditContext) -> str | None:
        return None if ctx.record is not None else "no readable record.json"

    def cache_key(self, ctx: AuditContext) -> str:
        found = ctx.agent_folder
        files = _scaffold_files(found.path) if found.path else ()
        scaffold = "|".join(f"{p}:{ctx.fingerprint(p)}" for p in files)
        parts = [str(ctx.record_sha256), str(ctx.sha256(ctx.paths.validation_log)), found.how, scaffold]
        parts += ctx.hard_links()
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def run(self, ctx: AuditContext) -> CheckResult:
        assert ctx.record is not None
        isolation = ctx.record.isolation
        notes: list[Flag] = []
        flags: list[Flag] = []
        backed = True
        if not isinstance(isolation, dict):
            notes.append(
                _note("answers and network: not recorded (the run predates podium recording its sandbox's mounts)")
            )
            backed = False
        else:
            statement, flag = _answers_part(ctx, isolation)
            notes.append(statement)
            flags += [flag] if flag else []
            statement, flag, observed = _network_part(ctx, isolation)
            notes.append(statement)
            flags += [flag] if flag else []
            backed = observed
            if not isolation.get("isolated"):
                notes.append(
                    _note(
                        f"the {isolation.get('sandbox')} sandbox isolates nothing: the agent could read the answers and reach the network"
                    )
                )
                backed = False
        statement, flag = _validation_part(ctx)
        notes.append(statement)
        flags += [flag] if flag else []
        statement, scaffold_flags, scaffold_backed = _scaffold_part(ctx)
        notes.append(statement)
        flags += scaffold_flags
        backed = backed and scaffold_backed
        if links := ctx.hard_links():
            shown = ", ".join(links[:5]) + (", ..." if len(links) > 5 else "")
            notes.append(
                _note(f"files not read: {len(links)} with more than one hard link ({shown})", {"files": len(links)})
            )
            backed = False
        result = CheckResult.from_flags(
            self.name, [*flags, *notes], {"podium": __version__, "agent_hash": str(ctx.record.agent_hash or "")}
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

"""The plagiarism check: every Python file the agent left, against the competition's top public notebooks.

Kernels come from ``options["kernels"]`` (``podium audit --kernels DIR``: ``DIR/<id>/*.py`` and
``*.ipynb``) or else from ``DATA/<id>/kernels/`` (``podium kernels download``). A notebook is compared
as its code cells in Python (jupytext); where a folder holds a notebook and its ``.py`` conversion,
the ``.py`` is used.

The engine is Dolos (``@dodona/dolos-lib``, pinned, default options, installed on demand; see
:mod:`podium.audit.dolos`); a pair's similarity is exactly ``pair.similarity`` of Dolos's
``report.allPairs()``. Where Node or Dolos is missing, podium's own winnowing
(:mod:`podium.audit.winnowing`) scores instead, and ``inputs["engine"]`` says so.
``options["plagiarism_engine"]`` picks one: ``auto`` (default), ``dolos`` or ``winnowing``.

Every pair above :data:`THRESHOLD` is a violation, with its matched fragments as evidence.
"""

from __future__ import annotations

import hashlib
import tempfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from podium.audit import winnowing
from podium.audit.context import AuditContext
from podium.audit.registry import register_check
from podium.audit.types import CheckResult, Evidence, Figure, Flag, NotApplicable
from podium.data.kernels import kernel_refs
from podium.untrusted import loads, read_bounded

__all__ = ["MAX_FRAGMENTS", "THRESHOLD", "PlagiarismCheck", "Similarity", "kernel_files", "similarities"]

#: The published detector's line: a pair over 60% similar counts as plagiarism.
THRESHOLD = 0.6
#: The most fragments quoted as evidence for one pair.
MAX_FRAGMENTS = 10
_MAX_KERNEL = 16 << 20


@dataclass(frozen=True)
class Similarity:
    """One of the agent's files against one kernel."""

    agent_file: str  # relative to the run's folder
    kernel: str  # the notebook's reference, or its file name
    similarity: float
    fragments: tuple[tuple[tuple[int, int], tuple[int, int]], ...]


def kernel_files(ctx: AuditContext) -> dict[str, Path]:
    """The competition's notebooks by label (their ``author/slug`` where podium downloaded them)."""
    given = ctx.options.get("kernels")
    folder = Path(given).expanduser() / ctx.competition_id if given else ctx.data_dir / ctx.competition_id / "kernels"
    if not folder.is_dir():
        return {}
    refs = _refs(folder)
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.is_symlink() or not path.is_file() or path.suffix not in (".py", ".ipynb"):
            continue
        if path.suffix == ".ipynb" and path.with_suffix(".py").is_file():
            continue  # its conversion is beside it
        found[refs.get(path.name, path.name)] = path
    return found


def _refs(folder: Path) -> dict[str, str]:
    """File name -> reference, from a downloaded folder's ``kernels.json``."""
    from podium.data.kernels import MANIFEST

    data = read_bounded(folder / MANIFEST, 16 << 20)
    try:
        entries = loads(data or b"{}", max_bytes=16 << 20, what=MANIFEST).get("kernels", [])
        return {str(e["python"]): str(e["ref"]) for e in entries if e.get("status") == "downloaded"}
    except (ValueError, AttributeError, KeyError, TypeError):
        return {}


def _agent_files(ctx: AuditContext) -> list[Path]:
    """The Python files the agent left, and its best node's code where that lies outside them (``search``)."""
    files = list(ctx.code_files())
    best = ctx.best_code()
    if best is not None and best not in files:
        files.append(best)
    return files


def _kernel_source(path: Path) -> str:
    text = (read_bounded(path, _MAX_KERNEL) or b"").decode("utf-8", "replace")
    if path.suffix != ".ipynb":
        return text
    from podium.data.kernels import notebook_to_python

    try:
        return notebook_to_python(text)
    except Exception:  # a broken notebook is compared as nothing rather than stopping the audit
        return ""


@cache
def _dolos_state(install: bool) -> tuple[bool, str]:
    from podium.audit import dolos  # imported when used: `python -m podium.audit.dolos` runs it as a script

    return dolos.dolos_available(install=install)


def _engine(ctx: AuditContext) -> tuple[str, str]:
    """("dolos" | "winnowing", its description for ``inputs``)."""
    wanted = str(ctx.options.get("plagiarism_engine") or "auto")
    winnow = f"winnowing (podium's tokens, k {winnowing.KGRAM}, window {winnowing.WINDOW})"
    if wanted == "winnowing":
        return "winnowing", winnow
    ok, detail = _dolos_state(True)
    if ok:
        return "dolos", detail
    if wanted == "dolos":
        from podium.audit.dolos import DolosError

        raise DolosError(f"Dolos was asked for but cannot run: {detail}")
    return "winnowing", f"{winnow}; Dolos unavailable: {detail}"


def similarities(agent: dict[str, str], kernels: dict[str, str], engine: str) -> list[Similarity]:
    """Every agent file against every kernel (sources by label), with ``engine``; pairs sharing nothing are 0."""
    if engine == "winnowing":
        prints = {label: winnowing.fingerprint(text) for label, text in kernels.items()}
        out = []
        for name, text in agent.items():
            mine = winnowing.fingerprint(text)
            for label, theirs in prints.items():
                match = winnowing.compare(mine, theirs)
                out.append(Similarity(name, label, match.similarity, match.fragments))
        return out
    with tempfile.TemporaryDirectory(prefix="podium-dolos-") as scratch:
        paths: dict[str, tuple[str, str]] = {}  # staged path -> (side, label)
        for side, sources in (("agent", agent), ("kernel", kernels)):
            (Path(scratch) / side).mkdir()
            for i, (label, text) in enumerate(sources.items()):
                staged = Path(scratch) / side / f"{i:04d}.py"
                staged.write_text(text, encoding="utf-8")
                paths[str(staged)] = (side, label)
        staged_agent = [Path(p) for p, (side, _) in paths.items() if side == "agent"]
        from podium.audit.dolos import run_dolos

        run = run_dolos([Path(p) for p in paths], focus=staged_agent)
    found = {}
    for pair in run.pairs:
        left, right = paths[pair.left], paths[pair.right]
        if left[0] == right[0]:
            continue
        fragments = pair.fragments
        if left[0] == "kernel":
            left, right = right, left
            fragments = tuple((b, a) for a, b in fragments)
        found[(left[1], right[1])] = Similarity(left[1], right[1], pair.similarity, fragments)
    return [found.get((a, k), Similarity(a, k, 0.0, ())) for a in agent for k in kernels]


def _evidence(item: Similarity, source: str) -> tuple[Evidence, ...]:
    lines = source.splitlines()
    out = []
    for (first, last), (their_first, their_last) in item.fragments[:MAX_FRAGMENTS]:
        shown = [line.strip() for line in lines[first - 1 : last] if line.strip()]
        quote = next((line for line in shown if not line.startswith("#")), shown[0] if shown else "")
        out.append(
            Evidence(
                item.agent_file,
                first,
                f"lines {first}-{last} ~ {item.kernel} lines {their_first}-{their_last}: {quote}",
            )
        )
    return tuple(out)


class PlagiarismCheck:
    """Dolos's pair similarity of the agent's code with the public notebooks; over 0.6 is plagiarism."""

    name = "plagiarism"
    version = "1"

    def skip_reason(self, ctx: AuditContext) -> str | None:
        if kernel_files(ctx):
            return None
        cid = ctx.competition_id
        if not kernel_refs(cid):  # practice competitions, and the two Kaggle ones with no public notebook listed
            return NotApplicable(
                f"{cid} has no public notebooks to compare with (podium lists none); pass --kernels DIR to give some"
            )
        return f"no public notebooks of {cid} found: run `podium kernels download -c {cid}` or pass --kernels DIR"

    def cache_key(self, ctx: AuditContext) -> str:
        digest = hashlib.sha256(f"{THRESHOLD}\0{_engine(ctx)[1]}".encode())
        for path in _agent_files(ctx):
            digest.update(f"\0{ctx.relative(path)}\0".encode() + (ctx.read_bytes(path) or b""))
        for label, path in kernel_files(ctx).items():
            digest.update(f"\0{label}\0".encode() + (read_bounded(path, _MAX_KERNEL) or b""))
        return digest.hexdigest()

    def run(self, ctx: AuditContext) -> CheckResult:
        engine, described = _engine(ctx)
        agent = {ctx.relative(p): ctx.read_text(p) for p in _agent_files(ctx)}
        kernels = {label: _kernel_source(path) for label, path in kernel_files(ctx).items()}
        found = similarities(agent, kernels, engine) if agent else []
        flags = [
            Flag(
                self.name,
                f"{item.agent_file} is {item.similarity:.0%} similar to the public notebook {item.kernel} "
                f"(over {THRESHOLD:.0%})",
                _evidence(item, agent[item.agent_file]),
                figures={"similarity": item.similarity, "threshold": THRESHOLD, "fragments": len(item.fragments)},
            )
            for item in sorted(found, key=lambda s: -s.similarity)
            if item.similarity > THRESHOLD
        ]
        top = max(found, key=lambda s: s.similarity, default=None)
        digest = hashlib.sha256("".join(sorted(f"{k}\0{v}\n" for k, v in kernels.items())).encode()).hexdigest()
        inputs: dict[str, str | Figure] = {
            "engine": described,
            "threshold": THRESHOLD,
            "agent_files": len(agent),
            "agent_sha256": ctx.files_sha256(_agent_files(ctx)),
            "kernels": len(kernels),
            "kernels_sha256": digest,
            "closest": f"{top.agent_file} ~ {top.kernel}" if top else "",
        }
        if top is not None:
            inputs["max_similarity"] = top.similarity
        return CheckResult.from_flags(self.name, flags, inputs)


register_check(PlagiarismCheck())

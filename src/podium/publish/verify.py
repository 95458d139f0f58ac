"""``podium bundle verify``: check a bundle made elsewhere against its manifest, the verifier's own prepared
data and podium's own audit checks; one line per difference.

The bundle is hostile input. It is read once, as a stream, by podium's own tar reader
(:func:`podium.publish.tarstream.members`: no links, devices or odd names, every byte counted
against ``--max-size``) and unpacked into a new temporary folder that only this process writes (every
folder made here, every file created new, never through a link). Then:

1. every member's sha256 and size against ``manifest.json``: a changed, missing or extra file is a
   difference, and so is a member the reader refused;
2. each competition's prepared data: the sha256 of the verifier's checksums against the manifest's
   (a difference means the grades below are against other data);
3. each run's submission graded again, in a child process, against the verifier's answers at the version
   its record names; score, validity, the median flag and the medal against the record's grade;
4. the deterministic audit checks (``submission``, ``answers``, ``external``, ``oracle``, ``integrity``)
   run again on the unpacked run, each verdict against the one in the bundle's ``audit.json``. The
   bundle's own results are never reused: podium's audit cache would take them on trust.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from podium.errors import PodiumError, UsageError
from podium.paths import CompetitionPaths, default_data_dir
from podium.publish.bundle import MANIFEST, ROOT, SCHEMA, checksums_digest
from podium.publish.runs import progress, read_record
from podium.publish.tarstream import ArchiveError, check_name, members

__all__ = ["AUDIT_CHECKS", "DEFAULT_MAX_SIZE", "shown", "verify_bundle"]

#: The audit checks run again: those that need no model and no other program.
AUDIT_CHECKS = ("submission", "answers", "external", "oracle", "integrity")
#: The most a bundle may unpack to unless ``--max-size`` says otherwise.
DEFAULT_MAX_SIZE = 64 << 30
_MAX_MANIFEST = 512 << 20
_GRADE_FLAGS = ("submission_exists", "valid_submission", "above_median", "gold_medal", "silver_medal", "bronze_medal")


def shown(text: object, most: int = 200) -> str:
    """A value from the bundle as it may be printed: control characters escaped, at most ``most`` characters."""
    value = str(text)
    value = value if len(value) <= most else value[:most] + "..."
    return "".join(c if c.isprintable() else ascii(c)[1:-1] for c in value)


class _Conflict(Exception):
    """A member whose name another member already holds (a file where a folder is, or the other way round)."""


class _Unpacked:
    """The temporary folder the bundle is unpacked into, and each member's sha256 and size."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files: dict[str, tuple[str, int]] = {}

    def _folder(self, parts: Iterable[str]) -> Path:
        folder = self.root
        for part in parts:
            folder = folder / part
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    raise _Conflict("a file of that name is unpacked already") from None
        return folder

    def folder(self, relative: str) -> None:
        self._folder(relative.split("/"))

    def write(self, relative: str, chunks: Iterable[bytes]) -> None:
        parts = relative.split("/")
        path = self._folder(parts[:-1]) / parts[-1]
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            raise _Conflict("a folder of that name is unpacked already") from None
        digest, size = hashlib.sha256(), 0
        with os.fdopen(fd, "wb") as handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                handle.write(chunk)
        self.files[relative] = (digest.hexdigest(), size)


def _unpack(
    stream: BinaryIO, into: _Unpacked, cap: int, differ: Callable[[str], None], say: Callable[[str], None]
) -> bytes | None:
    """Unpack every member; returns the manifest's bytes (None when there is none)."""
    manifest = None
    prefix = f"{ROOT}/"
    for count, member in enumerate(members(stream, cap), start=1):
        if count % 1000 == 0:
            say(f"unpacked {count} members")
        name = member.name.rstrip("/")
        relative = name.removeprefix(prefix)
        if member.refused is not None:
            differ(f"refused member {shown(member.name)}: {member.refused}")
        elif name == ROOT and member.kind == "folder":
            continue
        elif relative == name:
            differ(f"extra member outside {ROOT}/: {shown(member.name)}")
        elif relative == MANIFEST and manifest is None and member.kind == "file":
            if member.size > _MAX_MANIFEST:
                raise ArchiveError(f"its manifest declares {member.size} bytes (at most {_MAX_MANIFEST} are read)")
            manifest = b"".join(member.chunks())
        elif relative in into.files or relative == MANIFEST:
            differ(f"duplicate member: {shown(relative)} (the first one is checked)")
        else:
            try:
                if member.kind == "folder":
                    into.folder(relative)
                else:
                    into.write(relative, member.chunks())
            except _Conflict as conflict:
                differ(f"member {shown(relative)} conflicts with another: {conflict}")
    return manifest


def _compare_files(manifest: Mapping[str, Any], unpacked: _Unpacked, differ: Callable[[str], None]) -> None:
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        differ("manifest.json lists no files")
        return
    for name, entry in sorted(listed.items()):
        got = unpacked.files.get(name)
        if got is None:
            differ(f"removed: {shown(name)} (in the manifest, not in the bundle)")
        elif not isinstance(entry, dict) or got != (entry.get("sha256"), entry.get("size")):
            differ(
                f"changed: {shown(name)} (sha256 {got[0][:16]}..., the manifest says {shown(str((entry or {}).get('sha256'))[:16])}...)"
            )
    for name in sorted(unpacked.files.keys() - listed.keys()):
        differ(f"extra: {shown(name)} (in the bundle, not in the manifest)")


def _compare_data(manifest: Mapping[str, Any], data_dir: Path, differ: Callable[[str], None]) -> set[str]:
    """Check each competition's prepared data; returns the competitions prepared here."""
    prepared = set()
    for cid, entry in sorted((manifest.get("data") or {}).items()):
        marker = (
            CompetitionPaths(data_dir, str(cid)).record()
            if check_name(str(cid)) is None and "/" not in str(cid)
            else None
        )
        if marker is None or not isinstance(marker.get("checksums"), dict):
            differ(
                f"data: {shown(cid)} is not prepared in {data_dir}; prepare it (podium prepare -c {shown(cid)} --data-dir {data_dir}) to re-grade its runs"
            )
            continue
        prepared.add(str(cid))
        mine = checksums_digest(marker["checksums"])
        theirs = entry.get("checksums_sha256") if isinstance(entry, dict) else None
        if mine != theirs:
            differ(
                f"data: {shown(cid)}: your prepared data differs from the bundle's (checksums sha256 {mine[:16]}..., the bundle's {shown(str(theirs)[:16])}...); `podium verify -c {shown(cid)}` checks yours"
            )
    return prepared


def _same_score(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is b
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12) or (
            math.isnan(float(a)) and math.isnan(float(b))
        )
    except (TypeError, ValueError):
        return False


def _regrade(
    where: str, run_dir: Path, record: Mapping[str, Any], data_dir: Path, differ: Callable[[str], None]
) -> None:
    from podium import registry
    from podium.grading import grade_isolated

    grade = record.get("grade")
    if not isinstance(grade, dict):
        return  # a run the harness failed: nothing was graded, nothing to compare
    try:
        competition = registry.get(str(record.get("competition_id")), int(record.get("competition_version") or 1))
        again = grade_isolated(competition, run_dir / "submission", data_dir)
    except (PodiumError, ValueError, TypeError) as exc:
        differ(f"{where}: could not be graded again ({shown(exc)})")
        return
    if not _same_score(grade.get("score"), again.score):
        differ(f"{where}: score {shown(grade.get('score'))} in the record, {again.score} graded again")
    for flag in _GRADE_FLAGS:
        if bool(grade.get(flag)) != bool(getattr(again, flag)):
            differ(f"{where}: {flag} {bool(grade.get(flag))} in the record, {bool(getattr(again, flag))} graded again")


def _reaudit(where: str, run_dir: Path, data_dir: Path, agent_dir: Path | None, differ: Callable[[str], None]) -> bool:
    """Run the deterministic checks again on an unpacked run; returns whether ``integrity`` was among them: it
    reads the agent's own folder, run again only when the bundle carries it (``agent_dir``, which the check
    hashes against the record's ``agent_hash`` itself)."""
    from podium.audit import AuditContext, read_audit, resolve_checks

    bundled = read_audit(run_dir)
    options = {"data_dir": str(data_dir)} | ({"agent_dir": str(agent_dir)} if agent_dir is not None else {})
    context = AuditContext(run_dir, options)
    if bundled is None or context.record is None:
        return agent_dir is not None
    for check in resolve_checks([c for c in AUDIT_CHECKS if agent_dir is not None or c != "integrity"]):
        theirs = bundled.result(check.name)
        if check.skip_reason(context) is not None or theirs is None:
            continue
        mine: str
        try:
            mine = check.run(context).verdict
        except Exception as exc:  # a check that fails on this run says so, as the audit runner does
            mine = f"unclear (the check failed: {type(exc).__name__})"
        if mine != theirs.verdict:
            differ(f"{where}: audit {check.name} {shown(theirs.verdict)} in audit.json, {mine} run again")
    return agent_dir is not None


def _inside(root: Path, place: object, folder: str) -> Path | None:
    """``root/place`` for a place the manifest names under ``folder/``, when it is a valid name and was unpacked."""
    text = str(place)
    if not text.startswith(f"{folder}/") or check_name(text) is not None or not (root / text).is_dir():
        return None
    return root / text


def verify_bundle(
    path: Path,
    *,
    data_dir: Path | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    work_dir: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """Verify the bundle at ``path`` (see the module docstring): (the differences, one line each; a summary)."""

    say = say or progress
    data = data_dir or default_data_dir()
    if not path.is_file():
        raise UsageError(f"{path}: no such file; give the bundle's .tar.gz (podium bundle create writes one)")
    differences: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="podium-verify-", dir=work_dir))
    try:
        unpacked = _Unpacked(root)
        with open(path, "rb") as stream:
            raw = _unpack(stream, unpacked, max_size, differences.append, say)
        if raw is None:
            differences.append(f"no {MANIFEST} in the bundle: nothing to check its files against")
            return differences, {"runs": 0, "files": len(unpacked.files)}
        try:
            manifest = json.loads(raw)
        except ValueError:
            manifest = None
        if not isinstance(manifest, dict) or manifest.get("schema") != SCHEMA:
            differences.append(f"{MANIFEST} is not a {SCHEMA} manifest")
            return differences, {"runs": 0, "files": len(unpacked.files)}
        _compare_files(manifest, unpacked, differences.append)
        prepared = _compare_data(manifest, data, differences.append)
        runs = [r for r in manifest.get("runs") or () if isinstance(r, dict)]
        unchecked = 0
        for index, run in enumerate(runs, start=1):
            where = shown(str(run.get("path")).removeprefix("runs/"))
            run_dir = _inside(root, run.get("path"), "runs")
            record = read_record(run_dir / "record.json") if run_dir is not None else None
            if run_dir is None or record is None:
                differences.append(f"{where}: no readable record.json")
                continue
            say(f"[{index}/{len(runs)}] {where}: grading again and auditing")
            if str(record.get("competition_id")) in prepared:
                _regrade(where, run_dir, record, data, differences.append)
            agent_dir = _inside(root, run.get("agent_bundled"), "agents")
            if not _reaudit(where, run_dir, data, agent_dir, differences.append):
                unchecked += 1
        summary = {
            "runs": len(runs),
            "files": len(unpacked.files) + 1,
            "manifest_sha256": hashlib.sha256(raw).hexdigest(),
            "integrity_not_rerun": unchecked,
        }
        return differences, summary
    finally:
        shutil.rmtree(root, ignore_errors=True)

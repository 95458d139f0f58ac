"""``podium bundle verify``: check a bundle made elsewhere against its manifest, the verifier's own prepared
data and podium's own audit checks; one line per difference.

The bundle is hostile input, and so is its manifest: anyone can edit a member and recompute its hash there.
It is read once, as a stream, by podium's own tar reader (:func:`podium.publish.tarstream.members`), at most
``--max-files`` files unpacked (:mod:`podium.publish.unpack`) and the manifest read bounded
(:func:`podium.untrusted.loads`). Then (:mod:`podium.publish.recheck`):

1. every member's sha256 and size against ``manifest.json``;
2. the runs are the ``record.json`` files unpacked; the manifest's ``runs`` must name exactly them, and each
   record's group, competition and seed its place;
3. every competition they name must be prepared here and listed in the manifest's ``data``, else it is a
   difference ("not verified: cannot re-grade ..."), never a skip; its declaration is the verifier's own or the
   bundle's copy of the author's, and the digest each record names must be it (:mod:`podium.publish.declared`);
4. seeds whose files are another seed's, and run ids two records claim (:mod:`podium.publish.seeds`);
5. every other field a report reads against the bundle's evidence (:mod:`podium.publish.evidence`): the group's
   ``group.json``, the agent's folder, ``llm_calls.jsonl``, ``resources.jsonl``;
6. every run graded again and its whole grade compared (only ``created_at`` and ``submission_path`` may differ),
   but a gym holdout episode's (counted in the summary);
7. every deterministic audit check run again, its verdict required in ``audit.json``; the judge's and
   plagiarism's are carried, not verified (counted in the summary);
8. the pages (:data:`UNVERIFIED`) are not verified: hashes only, left out of ``--extract``;
9. the author's signature, when there is one, must be one of this manifest; with ``signers``, by a key they list
   (:mod:`podium.publish.signing`).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from podium.errors import UsageError
from podium.paths import CompetitionPaths, default_data_dir
from podium.publish.bundlefiles import MANIFEST, SCHEMA, checksums_digest
from podium.publish.declared import bundled_declarations
from podium.publish.evidence import (
    BUNDLES_WORD,
    agent_name,
    check_agent,
    check_group,
    check_holdout,
    check_llm,
    check_place,
    check_times,
    group_problem,
    holdout,
)
from podium.publish.recheck import AUDIT_CHECKS, CARRIED_CHECKS, find_runs, read_json, reaudit, regrade
from podium.publish.seeds import check_seeds
from podium.publish.signing import SIGNATURE, check_signature, read_signers
from podium.publish.tarstream import ArchiveError, check_name
from podium.publish.unpack import (
    DEFAULT_MAX_FILES,
    MAX_MANIFEST,
    _unpack,
    _Unpacked,
    empty_target,
    extract_tree,
    shown,
)
from podium.untrusted import UntrustedJSONError, loads_object

__all__ = ["AUDIT_CHECKS", "DEFAULT_MAX_SIZE", "UNVERIFIED", "shown", "verify_bundle"]

#: The most a bundle may unpack to unless ``--max-size`` says otherwise.
DEFAULT_MAX_SIZE = 64 << 30
#: What a bundle carries that is checked against the manifest's hashes only, never against the verified data:
#: the pages (``podium report`` rebuilds them from the runs) and the README. ``--extract`` leaves them out.
UNVERIFIED = ("index.html", "pages/", "README.md")


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


def _compare_data(
    manifest: Mapping[str, Any], competitions: set[str], data_dir: Path, differ: Callable[[str], None]
) -> set[str]:
    """Check the prepared data of each competition the runs name (from their records, not the manifest); returns
    those that can be graded again here. One that cannot is a difference, never a skip."""
    given = manifest.get("data")
    listed: Mapping[str, Any] = given if isinstance(given, dict) else {}
    prepared = set()
    for cid in sorted(competitions):
        marker = CompetitionPaths(data_dir, cid).record() if check_name(cid) is None and "/" not in cid else None
        if cid not in listed:
            differ(f"not verified: cannot re-grade {shown(cid)}: the manifest names no prepared data for it")
            continue
        if marker is None or not isinstance(marker.get("checksums"), dict):
            differ(
                f"not verified: cannot re-grade {shown(cid)}: it is not prepared in {data_dir} "
                f"(podium prepare -c {shown(cid)} --data-dir {data_dir})"
            )
            continue
        prepared.add(cid)
        mine = checksums_digest(marker["checksums"])
        entry = listed[cid]
        theirs = entry.get("checksums_sha256") if isinstance(entry, dict) else None
        if mine != theirs:
            differ(
                f"data: {shown(cid)}: your prepared data differs from the bundle's (checksums sha256 {mine[:16]}..., the bundle's {shown(str(theirs)[:16])}...); `podium verify -c {shown(cid)}` checks yours"
            )
    return prepared


def _compare_runs(manifest: Mapping[str, Any], found: list[str], differ: Callable[[str], None]) -> None:
    """The manifest's ``runs`` must name exactly the runs unpacked: it never decides which are checked."""
    listed = {str(r.get("path")) for r in manifest.get("runs") or () if isinstance(r, dict)}
    for place in sorted(set(found) - listed):
        differ(f"run {shown(place.removeprefix('runs/'))}: in the bundle, not in the manifest's runs")
    for place in sorted(listed - set(found)):
        differ(f"run {shown(place.removeprefix('runs/'))}: in the manifest's runs, no record.json in the bundle")


def _groups(root: Path, places: list[str], differ: Callable[[str], None]) -> dict[str, dict[str, Any] | None]:
    """Each group's ``group.json`` (its settings, the competitions asked of it), read from the bundle; one that
    is missing, unreadable or names another group is a difference, once."""
    documents: dict[str, dict[str, Any] | None] = {}
    for group in sorted({place.split("/")[1] for place in places}):
        document = read_json(root / "runs" / group / "group.json")
        if document is None:
            differ(
                f"runs/{shown(group)}/group.json: not in the bundle, or not readable: its runs' agent, limits and model cannot be checked"
            )
        elif (problem := group_problem(group, document)) is not None:
            differ(f"runs/{shown(group)}/group.json: {problem}")
        documents[group] = document
    return documents


def _check_runs(
    root: Path,
    records: Mapping[str, dict[str, Any] | None],
    data: Path,
    prepared: set[str],
    differ: Callable[[str], None],
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Every run against the evidence: its place and group (:mod:`podium.publish.evidence`), its grade again, its
    audit again (:mod:`podium.publish.recheck`). Returns what the summary counts."""
    from podium.agents import folder_digest

    groups = _groups(root, list(records), differ)
    names: dict[str, str | None] = {}
    unchecked, holdouts, carried = 0, 0, {c: 0 for c in CARRIED_CHECKS}
    for index, (place, record) in enumerate(records.items(), start=1):
        where = shown(place.removeprefix("runs/"))
        if record is None:
            differ(f"{where}: record.json is not a readable record")
            continue
        say(f"[{index}/{len(records)}] {where}: grading again and auditing")
        check_place(where, place, record, differ)
        settings = check_group(where, record, groups[place.split("/")[1]], differ)
        agent = f"agents/{record.get('agent_hash')}"
        agent_dir = root / agent if check_name(agent) is None and (root / agent).is_dir() else None
        if agent_dir is not None and agent not in names:
            names[agent] = agent_name(agent_dir) if folder_digest(agent_dir) == record.get("agent_hash") else None
        check_agent(where, record, names.get(agent), differ)
        check_llm(where, record, root / place, settings, differ)
        check_times(where, record, root / place, differ)
        if holdout(record):
            holdouts += 1
            check_holdout(where, record, differ)
        elif str(record.get("competition_id")) in prepared:
            regrade(where, root / place, record, data, differ)
        rerun, carried_here = reaudit(where, root / place, data, agent_dir, differ)
        unchecked += not rerun
        for check in carried_here:
            carried[check] += 1
    return {"integrity_not_rerun": unchecked, "carried": carried, "holdout": holdouts}


def _signature(
    manifest: bytes, signature: bytes | None, signers: bytes | None, differ: Callable[[str], None]
) -> dict[str, Any] | None:
    """The author's signature, which must be one of this manifest; checked against ``signers`` when given (then a
    bundle without one is a difference too)."""
    if signature is None:
        if signers is not None:
            differ(f"not signed: the bundle carries no {SIGNATURE}, and --signer asks for a signature")
        return None
    checked = check_signature(manifest, signature, signers)
    if checked.problem is not None:
        differ(f"signature: {checked.problem}")
        return None
    return {"checked": signers is not None, "signer": checked.signer, "key": checked.key}


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def verify_bundle(
    path: Path,
    *,
    data_dir: Path | None = None,
    max_size: int = DEFAULT_MAX_SIZE,
    max_files: int = DEFAULT_MAX_FILES,
    work_dir: Path | None = None,
    extract: Path | None = None,
    expect_sha256: str | None = None,
    signers: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> tuple[list[str], dict[str, Any]]:
    """Verify the bundle at ``path`` (see the module docstring): (the differences, one line each; a summary).
    ``extract``: where to write the verified tree, only when nothing differs. ``expect_sha256``: the bundle
    file's sha256 as published; another one stops the check (:class:`ArchiveError`) before anything is read.
    ``signers``: an allowed signers file (``ssh-keygen``'s): the bundle must then be signed by a key it lists."""
    from podium.publish.runs import progress

    say = say or progress
    data = data_dir or default_data_dir()
    if not path.is_file():
        raise UsageError(f"{path}: no such file; give the bundle's .tar.gz (podium bundle create writes one)")
    if extract is not None:
        empty_target(extract)
    allowed = read_signers(signers) if signers is not None else None
    if expect_sha256 is not None:
        actual = _file_sha256(path)
        if actual != expect_sha256.strip().lower():
            raise ArchiveError(f"its sha256 is {actual}, not the {shown(expect_sha256, 80)} expected")
    differences: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="podium-verify-", dir=work_dir))
    try:
        unpacked = _Unpacked(root, max_files)
        try:
            with open(path, "rb") as stream:
                raw = _unpack(stream, unpacked, max_size, differences.append, say)
        except EOFError:
            raise ArchiveError("the archive ends early") from None
        except ArchiveError as exc:  # the reader's own words for a cut gzip stream or a cut tar
            if isinstance(exc.__context__, EOFError) or "truncated" in str(exc):
                raise ArchiveError("the archive ends early") from None
            raise
        summary: dict[str, Any] = {"runs": 0, "files": len(unpacked.files)}
        if raw is None:
            differences.append(f"no {MANIFEST} in the bundle: nothing to check its files against")
            return differences, summary
        try:
            manifest = loads_object(raw, max_bytes=MAX_MANIFEST, unique_keys=True, what=MANIFEST)
        except UntrustedJSONError as exc:
            differences.append(f"{MANIFEST}: {exc}")
            return differences, summary
        if manifest.get("schema") != SCHEMA:
            differences.append(f"{MANIFEST} is not a {SCHEMA} manifest")
            return differences, summary
        _compare_files(manifest, unpacked, differences.append)
        found = find_runs(unpacked.files, differences.append)
        _compare_runs(manifest, found, differences.append)
        records = {place: read_json(root / place / "record.json") for place in found}
        with bundled_declarations(root, records, differences.append) as cannot:
            named = {str(r.get("competition_id")) for r in records.values() if r}
            prepared = _compare_data(manifest, named - cannot, data, differences.append)
            check_seeds(records, unpacked.files, differences.append)
            counts = _check_runs(root, records, data, prepared, differences.append, say)
        summary = {
            "runs": len(records),
            "files": len(unpacked.files) + 1 + (unpacked.signature is not None),
            "manifest_sha256": hashlib.sha256(raw).hexdigest(),
            **counts,
            "unverified": [n for n in UNVERIFIED if any(f.startswith(n) for f in unpacked.files)],
            "bundles_word": BUNDLES_WORD if records else None,
            "signature": _signature(raw, unpacked.signature, allowed, differences.append),
        }
        if extract is not None and not differences:
            kept = [f for f in unpacked.files if not any(f.startswith(n) for n in UNVERIFIED)]
            extract_tree(root, kept, raw, extract, unpacked.signature)
            summary["extracted"] = str(extract)
        return differences, summary
    finally:
        shutil.rmtree(root, ignore_errors=True)

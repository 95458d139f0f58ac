"""``podium bundle create``: one tar.gz that lets anyone check a result, streamed run by run.

First the deterministic audit checks run on every run (:func:`_audit`: cached results reused), so each carries
the ``audit.json`` that ``bundle verify`` checks. The archive holds, under ``podium-bundle/``::

    runs/<group>/group.json                  the group's settings and the competitions asked of it
    runs/<group>/<competition>/<seed>/...   every file of each run folder: record.json, submission/
                                             (and the best-so-far snapshots under logs/snapshots/), code/,
                                             logs/, llm_calls.jsonl, llm_transcript.jsonl (the proxy's
                                             transcript, where the run has one), validation_calls.jsonl,
                                             audit.json, resources.jsonl
    agents/<agent hash>/...                  each agent folder that ran, as its hash reads it (the audit
                                             finds it and checks it against the record's agent_hash)
    environments/<digest>.json               the lock of each environment the runs' code ran with
    competitions/<id>/...                    the declaration of each competition of the author's own
                                             (--competitions-dir) that the runs name (:mod:`podium.publish.declared`)
    index.html                               `podium report`'s HTML over the groups, each run linked to
    pages/<group>/<competition>/<seed>.html  its own page (transcript, code, journal, logs, files)
    README.md                                how to open and verify it
    manifest.json                            the sha256 and size of every other member, each run's
                                             agent folder hash and environment, the sha256 of each
                                             competition's prepared-data checksums, what was left out
    manifest.json.sig                        last, with ``sign``: the author's SSH signature of the manifest

Never in it: the private answers or any other prepared file (a run file whose sha256 is one of the
prepared files' is left out, and listed), a file that holds a key or token (the bundle is refused,
naming the file: nothing is written), a file over ``--max-file-size`` (left out, listed), links and
special files (left out, listed). Each file is read twice (once to hash it and look for secrets, once
into the archive, where its hash must come out the same), in chunks: nothing is held whole.

The archive is written to a temporary name beside ``FILE`` and renamed when complete. Members carry
no owner and no time, so the same runs give the same archive, and the manifest's sha256 (printed)
names the bundle.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from podium.errors import UsageError
from podium.paths import default_data_dir
from podium.publish.bundlefiles import (
    MANIFEST,
    ROOT,
    SCHEMA,
    _add_file,
    _add_tree,
    _Prepared,
    _Writer,
    checksums_digest,
)
from podium.publish.declared import declaration_entries, own_folders
from podium.publish.pages import TRANSCRIPT, run_page
from podium.publish.recheck import AUDIT_CHECKS
from podium.publish.runs import progress, read_record
from podium.publish.signing import SIGNATURE, sign_manifest
from podium.publish.tarstream import add_bytes, open_writer

__all__ = ["DEFAULT_MAX_FILE", "MANIFEST", "ROOT", "SCHEMA", "checksums_digest", "create_bundle"]

#: A run group's settings and the competitions asked of it (:mod:`podium.run.group`), bundled beside its runs.
GROUP_FILE = "group.json"
#: Files of a run larger than this are left out (the submission never is).
DEFAULT_MAX_FILE = 1 << 30
_README = """# A podium verification bundle

- Open `index.html` in a browser (no server needed): the report of the run groups, each run linked to
  its page (its grade, audit, the transcript of its model calls, its journal, code and logs).
- Check it: `podium bundle verify THIS.tar.gz --data-dir DIR`, where DIR holds the competitions
  prepared by podium (`podium prepare -c ID --data-dir DIR`). It checks every file against
  `manifest.json`, grades every submission again against DIR's answers at the version each run was
  graded by, re-runs the deterministic audit checks, checks each record against the bundle's own
  evidence, and prints one line per difference. A signed bundle (`manifest.json.sig`) names its signer
  with `--signer ALLOWED_SIGNERS`.
"""


def _environment_lock(record: Mapping[str, Any]) -> tuple[str | None, bytes | None]:
    """(the environment's digest, its ``podium-env.json``) of the environment a run's code ran with, if any."""
    environment = record.get("environment")
    digest = environment.get("digest") if isinstance(environment, dict) else None
    if not digest:
        return None, None
    from podium.environments import list_environments

    for built in list_environments():
        if built.digest == digest:
            lock = built.path / "podium-env.json"
            return str(digest), lock.read_bytes() if lock.is_file() else None
    return str(digest), None


def _report_html(inputs: Sequence[Any], pages: Mapping[str, str], spool: _TextSpool) -> None:
    """``podium report``'s HTML over ``inputs`` into ``spool``, each run linked to its page. ``inputs`` are the
    groups as read once for the bundle: a run that lands while the bundle is written is in neither its files nor
    its pages."""
    from podium.report import AggregationError, build_report
    from podium.report.html import html_pieces

    try:  # a bundle records what ran, whatever compute each group had: the report states each label's
        report = build_report(inputs, mixed_hardware=True)
    except AggregationError:  # the groups cover no split whole: the competitions they ran, missing runs padded
        with tempfile.TemporaryDirectory() as folder:
            ran = Path(folder) / "ran.txt"
            ran.write_text("\n".join(sorted({r["competition_id"] for i in inputs for r in i.runs})) + "\n")
            report = build_report(inputs, split=str(ran), pad_missing=True, mixed_hardware=True)
    for piece in html_pieces(report, run_link=lambda run_dir: pages.get(str(run_dir), "")):
        spool.write(piece)


class _TextSpool:
    """Text written into a binary spool as UTF-8 (the report's pieces, in order)."""

    def __init__(self, spool: IO[bytes]) -> None:
        self.spool = spool

    def write(self, text: str) -> int:
        return self.spool.write(text.encode("utf-8"))


def create_bundle(
    groups: Sequence[str],
    output: Path,
    *,
    data_dir: Path | None = None,
    max_file_size: int = DEFAULT_MAX_FILE,
    agent_dir: Path | None = None,
    sign: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write the bundle of the run group folders ``groups`` to ``output`` (see the module docstring); returns
    its summary: path, runs, files, bytes, the manifest's sha256 and the runs whose agent folder is not in it.
    ``agent_dir`` is the agent folder of runs whose record does not name theirs. ``sign``: an SSH key to sign
    the manifest with (:mod:`podium.publish.signing`)."""
    from podium import __version__
    from podium.report import load_inputs
    from podium.serve.redact import Redactor

    say = say or progress
    if sign is not None and not sign.is_file():
        raise UsageError(f"--sign {sign}: no such key file; give an SSH private key (ssh-keygen -t ed25519 makes one)")
    _audit(groups, data_dir or default_data_dir(), agent_dir, say)  # the data checked first: no audit without it
    inputs = load_inputs(list(groups))  # read once: the files, the pages and the index all come from these rows
    rows = [run for item in inputs for run in item.runs]
    if not rows:
        raise UsageError(f"{', '.join(groups)}: no finished run to bundle")
    places = [f"runs/{r['run_group']}/{r['competition_id']}/{r['seed']}" for r in rows]
    if len(set(places)) < len(places):
        raise UsageError("two of the groups share a name; bundle groups of different names")
    prepared = _Prepared(sorted({r["competition_id"] for r in rows}), data_dir or default_data_dir())
    secret_in = Redactor.from_environment().secret_in
    pages = {
        str(r["run_dir"]): f"pages/{place.removeprefix('runs/')}.html" for r, place in zip(rows, places, strict=True)
    }
    output.parent.mkdir(parents=True, exist_ok=True)
    partial = output.with_name(f".{output.name}.partial-{uuid.uuid4().hex[:8]}")
    manifest: dict[str, Any] = {
        "schema": SCHEMA,
        "podium_version": __version__,
        "groups": sorted({r["run_group"] for r in rows}),
    }
    try:
        with open(partial, "wb") as raw, open_writer(raw) as tar:
            writer = _Writer(tar)
            runs: list[dict[str, Any]] = []
            environments: dict[str, bool] = {}
            agents: dict[str, Any] = {}
            for index, (row, place) in enumerate(zip(rows, places, strict=True), start=1):
                group_file = Path(row["run_dir"]).parents[1] / GROUP_FILE
                if f"runs/{row['run_group']}/{GROUP_FILE}" not in writer.files and group_file.is_file():
                    name = f"runs/{row['run_group']}/{GROUP_FILE}"
                    _add_file(writer, name, group_file, GROUP_FILE, prepared, max_file_size, secret_in)
                entry, lock = _add_run(writer, row, place, prepared, max_file_size, secret_in, pages, agents, agent_dir)
                runs.append(entry)
                if entry["environment"] and entry["environment"] not in environments:
                    environments[entry["environment"]] = lock is not None
                    if lock is not None:
                        writer.add_data(f"environments/{entry['environment']}.json", lock)
                size = sum(writer.files[f"{place}/{f}"]["size"] for f in entry["files"])
                say(f"[{index}/{len(rows)}] {place.removeprefix('runs/')}: {len(entry['files'])} files, {size} bytes")
            declared = declaration_entries({str(r["competition_id"]) for r in rows})
            for place, folder in own_folders(declared).items():  # the author's own: the verifier may not have them
                _, left_out = _add_tree(writer, folder, place, prepared.private_only(), max_file_size, secret_in,
                                        _not_declared)  # fmt: skip
                if left_out:
                    raise UsageError(f"{folder}: cannot bundle the declaration whole ({left_out[0]['path']}: "
                                     f"{left_out[0]['reason']}); its runs could not be graded again elsewhere")  # fmt: skip
            with tempfile.SpooledTemporaryFile(max_size=32 << 20, mode="w+b") as spool:
                text = _TextSpool(spool)
                _report_html(inputs, pages, text)
                spool.seek(0, os.SEEK_END)
                length = spool.tell()
                spool.seek(0)
                writer.add("index.html", spool, length)
            writer.add_data("README.md", _README.encode())
            manifest |= {
                "runs": runs,
                "environments": environments,
                "agents": agents,
                "data": prepared.summary,
                "declarations": declared,
                "files": writer.files,
            }
            data = (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()
            add_bytes(tar, f"{ROOT}/{MANIFEST}", data)
            if sign is not None:
                add_bytes(tar, f"{ROOT}/{SIGNATURE}", sign_manifest(data, sign))
        os.replace(partial, output)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return {
        "path": str(output),
        "runs": len(runs),
        "files": len(writer.files) + 1,
        "bytes": output.stat().st_size,
        "manifest_sha256": hashlib.sha256(data).hexdigest(),
        "without_agent_folder": [r["path"] for r in runs if r["agent_bundled"] is None],
        "signed": sign is not None,
    }


def _not_declared(entry: os.DirEntry[str]) -> bool:
    """What a declaration's digest leaves out (:func:`podium.declarations.digest`), left out of the bundle too."""
    return entry.name in ("__pycache__", ".DS_Store")


def _audit(groups: Sequence[str], data_dir: Path, agent_dir: Path | None, say: Callable[[str], None]) -> None:
    """Run the deterministic audit checks on every run of ``groups`` (what ``bundle verify`` runs again), as
    ``podium audit --checks`` would: each result cached in the run's ``audit.json`` is reused while its inputs are
    unchanged, so an audited group costs little; a run never audited gets its ``audit.json`` here."""
    from podium.audit import audit_run, find_runs

    runs = [run for group in groups for run in find_runs(group)]
    if not runs:
        return  # nothing finished: the groups are refused as they are read, in their own words
    _Prepared(sorted({run.parent.name for run in runs}), data_dir)  # each competition prepared, else one line
    options = {"data_dir": str(data_dir)} | ({"agent_dir": str(agent_dir)} if agent_dir is not None else {})
    say(f"auditing {len(runs)} run(s) with the deterministic checks ({', '.join(AUDIT_CHECKS)}); cached ones reused")
    for run in runs:
        audit_run(run, AUDIT_CHECKS, options)


def _add_agent(
    writer: _Writer,
    run_dir: Path,
    prepared: _Prepared,
    max_file: int,
    secret_in: Any,
    agents: dict[str, Any],
    agent_dir: Path | None,
) -> tuple[str | None, str]:
    """Add the agent folder that ran (once per hash): the folder the audit finds and checks against the record's
    ``agent_hash``, with the files that hash leaves out (hidden ones, ``__pycache__``) left out here too, so the
    verifier can hash it again. Returns (its place in the bundle or None, how it was found or why not)."""
    from podium.audit import AuditContext

    context = AuditContext(run_dir)
    found = context.agent_folder
    if found.path is None and agent_dir is not None:  # a record that does not name its folder (an older podium's)
        found = AuditContext(run_dir, {"agent_dir": str(agent_dir)}).agent_folder
    digest = context.record.agent_hash if context.record else None
    if found.path is None or not digest:
        return None, found.how
    place = f"agents/{digest}"
    if digest not in agents:
        runs_root = run_dir.parents[2].resolve() if len(run_dir.parents) > 2 else None

        def leave(entry: os.DirEntry[str]) -> bool:
            folder = entry.is_dir(follow_symlinks=False)
            return (
                entry.name.startswith(".")
                or (folder and (entry.name == "__pycache__" or Path(entry.path).resolve() == runs_root))
                or (not folder and entry.name.endswith(".pyc"))
            )

        files, left_out = _add_tree(writer, found.path, place, prepared, max_file, secret_in, leave)
        agents[digest] = {"path": place, "files": len(files), "left_out": left_out}
    return place, found.how


def _add_run(
    writer: _Writer,
    row: Mapping[str, Any],
    place: str,
    prepared: _Prepared,
    max_file: int,
    secret_in: Any,
    pages: Mapping[str, str],
    agents: dict[str, Any],
    agent_dir: Path | None,
) -> tuple[dict[str, Any], bytes | None]:
    """Add one run's files, its agent's folder (once) and its page; returns its manifest entry and its
    environment's lock."""
    run_dir = Path(row["run_dir"])
    record = read_record(run_dir / "record.json") or {}
    files, left_out = _add_tree(writer, run_dir, place, prepared, max_file, secret_in)
    agent_place, agent_how = _add_agent(writer, run_dir, prepared, max_file, secret_in, agents, agent_dir)
    listed = [{"path": f, **writer.files[f"{place}/{f}"]} for f in files]
    depth = place.count("/")
    page = run_page(
        run_dir, record, listed, left_out, files_base="../" * depth + place, index="../" * depth + "index.html"
    )
    writer.add_data(pages[str(run_dir)], page.encode("utf-8"))
    digest, lock = _environment_lock(record)
    entry = {
        "path": place,
        "group": row["run_group"],
        "competition_id": row["competition_id"],
        "competition_version": row["competition_version"],
        "seed": row["seed"],
        "agent": row["agent"],
        "agent_hash": record.get("agent_hash"),
        "agent_folder": record.get("agent_folder"),
        "agent_bundled": agent_place,
        "agent_found": agent_how,
        "environment": digest,
        "transcript": TRANSCRIPT in files,
        "audit": "audit.json" in files,
        "page": pages[str(run_dir)],
        "files": files,
        "left_out": left_out,
    }
    return entry, lock

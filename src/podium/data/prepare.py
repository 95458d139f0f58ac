"""`podium prepare`: Kaggle files in, a public folder (what the agent sees) and a private one out.

Each competition is prepared into a staging folder that is renamed to ``prepared/`` only once the
split, the description, the invariants, the leak scan and the checksums are all done; an
interrupted run (Ctrl-C, kill -9, disk full) leaves at most a staging folder, which the next run
removes. Downloaded or extracted raw files are kept in ``raw/`` until the prepare succeeds, so a
rerun continues from what is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import time
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np

from podium import owner
from podium.competition import Competition
from podium.data.checksums import digest_tree
from podium.data.declared import prepare_declared
from podium.data.leaks import scan_for_leaks
from podium.data.options import SpecError
from podium.errors import HarnessError, PodiumError, PrepareError, UsageError
from podium.grading import expected_keys
from podium.grading.table import Frame, read_csv, to_numpy, write_csv
from podium.paths import MARKER, CompetitionPaths

__all__ = [
    "PrepareError",
    "PrepareOutcome",
    "check_invariants",
    "description_path",
    "description_variant",
    "needs_download",
    "prepare_competition",
    "prepare_many",
    "prepare_offline",
    "raw_source",
]

Downloader = Callable[[Competition, CompetitionPaths], Path]


@dataclass(frozen=True)
class PrepareOutcome:
    competition_id: str
    status: Literal["prepared", "skipped", "failed"]
    detail: str
    seconds: float


def _extract(archive: Path, paths: CompetitionPaths) -> Path:
    """Extract a Kaggle zip (top level only) into raw/, atomically."""
    staging = paths.root / f".raw.tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        with zipfile.ZipFile(archive) as handle:
            handle.extractall(staging)
    except zipfile.BadZipFile as exc:
        shutil.rmtree(staging, ignore_errors=True)
        if archive == paths.zip:  # our own download: set it aside so the next run fetches it afresh
            aside = archive.with_suffix(".zip.corrupt")
            os.replace(archive, aside)
            raise PrepareError(
                f"{archive} is not a valid zip file ({exc}); moved it to {aside.name}, run again to download it afresh"
            ) from exc
        raise PrepareError(
            f"{archive} is not a valid zip file ({exc}); download it again or pass the extracted folder"
        ) from exc
    shutil.rmtree(paths.raw, ignore_errors=True)
    os.replace(staging, paths.raw)
    return paths.raw


def _raw_folder(
    competition: Competition, paths: CompetitionPaths, source: Path | None, download: Downloader | None
) -> Path:
    if source is not None:
        if source.is_dir():
            return source
        if source.is_file() and zipfile.is_zipfile(source):
            return _extract(source, paths)
        raise PrepareError(f"--from {source}: expected the competition's Kaggle zip or its extracted folder")
    if paths.raw.is_dir():
        return paths.raw  # extracted by an earlier run
    fetch_raw = competition.hook("fetch_raw")
    if fetch_raw is not None:  # data shipped by a package: no download
        staging = paths.root / f".raw.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        fetch_raw(staging)
        os.replace(staging, paths.raw)
        return paths.raw
    if download is None:
        raise PrepareError(
            f"no raw data for {competition.id}: pass --from PATH (the Kaggle zip or folder) or set Kaggle credentials to download it"
        )
    return _extract(download(competition, paths), paths)


def _sample_submission(competition: Competition, ids: Frame, path: Path) -> None:
    """A sample submission from the answers' ids and each column's declared default."""
    columns = {}
    for column in competition.columns:
        if column.name in competition.id_columns:
            columns[column.name] = ids[column.name]
        elif "default" in column.options:
            columns[column.name] = np.full(ids.n_rows, str(column.options["default"]), dtype=object)
        else:
            raise HarnessError(
                f"{competition.id}: column {column.name!r} declares no default for the sample submission"
            )
    write_csv(Frame(columns, ids.n_rows), path)


def _run_prepare(competition: Competition, raw: Path, public: Path, private: Path) -> None:
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    prepare = competition.hook("prepare")
    if prepare is not None:
        prepare(raw, public, private, version=competition.data_version)
        return
    try:
        prepare_declared(competition, raw, public, private)
    except SpecError as exc:
        raise HarnessError(str(exc)) from exc
    sample = public.parent / competition.sample_submission
    if not sample.exists():
        answers = read_csv(private / competition.answers, what="answers")
        _sample_submission(competition, Frame({c: answers[c] for c in competition.id_columns}, answers.n_rows), sample)


def check_invariants(competition: Competition, prepared: Path) -> set[str]:
    """Assert what every prepare must guarantee; returns the test ids (as text)."""
    answers_path = prepared / "private" / competition.answers
    sample_path = prepared / competition.sample_submission
    for path in (answers_path, sample_path):
        if not path.is_file():
            raise HarnessError(f"{competition.id}: prepare did not write {path.relative_to(prepared)}")
    load = competition.hook("load_answers")
    answers = load(answers_path) if load is not None else read_csv(answers_path, what="answers")
    answer_keys = set(to_numpy(expected_keys(competition, answers, answers=True)).astype(str).tolist())
    sample_keys = set(
        to_numpy(expected_keys(competition, read_csv(sample_path, what="sample submission"), answers=False))
        .astype(str)
        .tolist()
    )
    if competition.matching.get("extra_ids"):
        if not answer_keys <= sample_keys:
            raise HarnessError(f"{competition.id}: the sample submission lacks answer ids")
    elif answer_keys != sample_keys:
        raise HarnessError(
            f"{competition.id}: the sample submission and the answers carry different ids ({len(sample_keys ^ answer_keys)} differ)"
        )
    return answer_keys


def description_path(competition: Competition, obfuscated: bool) -> Path | None:
    """The description file podium gives the agent (``description_obfuscated.md`` with ``obfuscated``), or
    None where the competition has none."""
    name = "description_obfuscated.md" if obfuscated else "description.md"
    path = competition.folder / name
    return path if path.is_file() else None


def description_variant(competition: Competition, data_dir: Path) -> str | None:
    """Which description the prepared data gives the agent: ``original``, ``obfuscated`` (prepared with
    ``--obfuscated``), ``other`` (neither file), or None where the data has no description."""
    try:
        given = (CompetitionPaths(data_dir, competition.id).public / "description.md").read_bytes()
    except OSError:
        return None
    for variant, obfuscated in (("original", False), ("obfuscated", True)):
        path = description_path(competition, obfuscated)
        if path is not None and path.read_bytes() == given:
            return variant
    return "other"


def prepare_competition(
    competition: Competition,
    data_dir: Path,
    *,
    source: Path | None = None,
    force: bool = False,
    keep_raw: bool = False,
    obfuscated: bool = False,
    download: Downloader | None = None,
    leak_scan: bool = True,
) -> PrepareOutcome:
    """Prepare one competition; raises PrepareError / HarnessError on failure. ``leak_scan=False`` leaves out the
    leak scan, for ``podium check``, which runs it itself (into its own temporary folders) to report what it finds."""
    started = time.monotonic()
    paths = CompetitionPaths(data_dir, competition.id)
    done = _already_prepared(competition, paths, force)
    if done is not None:
        return done
    paths.root.mkdir(parents=True, exist_ok=True)
    lock = paths.prepare_lock
    with contextlib.ExitStack() as held:
        try:  # one prepare of a competition at a time: a second waits, then finds the first one's data
            held.enter_context(owner.exclusive(lock, f"waiting for another prepare of {competition.id} in {data_dir}"))
        except OSError as error:
            raise PrepareError(
                f"{competition.id}: cannot lock {lock}: {error.strerror}. Fix: remove what is at that path, or "
                "pass a data dir of your own (--data-dir)"
            ) from None
        done = _already_prepared(competition, paths, force)
        if done is not None:
            return done
        return _prepare_held(competition, paths, started, source, keep_raw, obfuscated, download, leak_scan)


def _already_prepared(competition: Competition, paths: CompetitionPaths, force: bool) -> PrepareOutcome | None:
    """The outcome when ``competition`` is prepared already (None: prepare it); data of another version is refused."""
    record = paths.record()
    if record is None or force:
        return None
    if competition.shares_data_with(record.get("version")):
        return PrepareOutcome(
            competition.id, "skipped", f"already prepared (data of version {competition.data_version})", 0.0
        )
    raise PrepareError(
        f"{competition.id} is prepared with the data of version {record.get('version')}, but {competition.ref} "
        f"needs the data of version {competition.data_version}. Fix: pass --force to prepare again "
        f"(or grade and run {competition.id}@{record.get('version')})"
    )


def _prepare_held(
    competition: Competition,
    paths: CompetitionPaths,
    started: float,
    source: Path | None,
    keep_raw: bool,
    obfuscated: bool,
    download: Downloader | None,
    leak_scan: bool = True,
) -> PrepareOutcome:
    """Prepare ``competition`` into ``paths`` while holding its lock (so any staging folder here is a dead one's)."""
    for stale in paths.stale_staging():
        shutil.rmtree(stale, ignore_errors=True)
    raw = _raw_folder(competition, paths, source, download)
    staging = paths.staging(str(os.getpid()))
    try:
        try:
            _run_prepare(competition, raw, staging / "public", staging / "private")
        except FileNotFoundError as exc:
            missing = exc.filename or str(exc)
            raise PrepareError(
                f"{competition.id}: a raw file is missing ({missing}); the download or the --from folder is incomplete. "
                f"Delete {paths.raw} and prepare again, or pass --from with the complete Kaggle zip"
            ) from exc
        description = description_path(competition, obfuscated)
        if description is not None:
            shutil.copyfile(description, staging / "public" / "description.md")
        test_ids = check_invariants(competition, staging)
        leaks = scan_for_leaks(competition, staging / "public", staging / "private", test_ids) if leak_scan else []
        if leaks:
            raise HarnessError(f"{competition.id}: the leak scan found: " + "; ".join(leaks))
        marker = {
            "competition_id": competition.id,
            "version": competition.data_version,
            "checksums": digest_tree(staging),
        }
        (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")
        if paths.prepared.exists():
            shutil.rmtree(paths.prepared)
        os.replace(staging, paths.prepared)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if not keep_raw and source is None:
        shutil.rmtree(paths.raw, ignore_errors=True)
        paths.zip.unlink(missing_ok=True)
    detail = f"data of version {competition.data_version}"
    return PrepareOutcome(competition.id, "prepared", detail, time.monotonic() - started)


def prepare_many(
    competitions: Iterable[Competition],
    data_dir: Path,
    *,
    source_dir: Path | None = None,
    force: bool = False,
    keep_raw: bool = False,
    obfuscated: bool = False,
    download: Downloader | None = None,
) -> list[PrepareOutcome]:
    """Prepare each competition, going on past failures; ``source_dir`` holds <id>.zip or <id>/, or is
    another data dir whose raw files a ``keep_raw`` prepare kept (<id>/raw/)."""
    outcomes = []
    comps = list(competitions)
    for i, comp in enumerate(comps, start=1):
        print(f"[{i}/{len(comps)}] {comp.ref}", file=sys.stderr)
        source = None if source_dir is None else raw_source(comp, source_dir, alone=len(comps) == 1)
        started = time.monotonic()
        try:
            outcomes.append(
                prepare_competition(
                    comp,
                    data_dir,
                    source=source,
                    force=force,
                    keep_raw=keep_raw,
                    obfuscated=obfuscated,
                    download=download,
                )
            )
        except Exception as exc:  # --all goes on past any failure and reports it in the summary
            reason = str(exc) if isinstance(exc, PodiumError) else f"{type(exc).__name__}: {exc}"
            outcomes.append(PrepareOutcome(comp.id, "failed", reason, time.monotonic() - started))
    return outcomes


def raw_source(competition: Competition, source_dir: Path, *, alone: bool) -> Path | None:
    """Where ``--from source_dir`` keeps ``competition``'s raw files: ``<id>.zip``, then ``<id>/raw`` (another data
    dir's files kept by ``--keep-raw``), then ``<id>/`` (extracted); for a competition prepared ``alone``, else the
    folder or zip itself. None when it holds none of them."""
    candidates = [
        source_dir / f"{competition.id}.zip",
        source_dir / competition.id / "raw",
        source_dir / competition.id,
    ]
    found = next((c for c in candidates if c.exists()), None)
    return source_dir if found is None and alone and source_dir.exists() else found


def needs_download(competitions: Iterable[Competition], data_dir: Path, *, force: bool = False) -> list[Competition]:
    """The competitions a prepare would download: not prepared yet (or ``force``), not already extracted,
    and not built from data a package ships."""
    out = []
    for comp in competitions:
        paths = CompetitionPaths(data_dir, comp.id)
        if (force or not paths.prepared.exists()) and not paths.raw.is_dir() and not comp.brings_own_data:
            out.append(comp)
    return out


def prepare_offline(competitions: Iterable[Competition], data_dir: Path) -> None:
    """Make sure every competition is prepared: those that bring their own data are prepared now (the
    practice suite); any other unprepared one is a usage error naming the command that prepares it."""
    unprepared = [c for c in competitions if not CompetitionPaths(data_dir, c.id).prepared.is_dir()]
    offline = [c for c in unprepared if c.brings_own_data]
    missing = [c.id for c in unprepared if not c.brings_own_data]
    if missing:
        raise UsageError(
            f"not prepared: {', '.join(missing)}; run `podium prepare -c ID` for each (data dir {data_dir})"
        )
    if offline:
        print(f"preparing {len(offline)} offline competition(s) first ...", file=sys.stderr)
        for outcome in prepare_many(offline, data_dir):
            if outcome.status == "failed":
                raise PodiumError(f"could not prepare {outcome.competition_id}: {outcome.detail}")

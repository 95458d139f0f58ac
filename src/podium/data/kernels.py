"""A competition's top public Kaggle notebooks, the set the plagiarism check compares agents' code with.

    kernel_refs(competition_id)         the ``author/slug`` references podium ships (``kernels.txt``)
    download_kernels(ids, data_dir)     each notebook pulled with the official client into
                                        DIR/ID/kernels/, converted to Python, checksummed; resumable
    import_kernels(ids, data_dir, src)  the same from a folder already downloaded (``--from``)
    notebook_to_python(text)            a notebook's code as a Python script (jupytext)

DIR/ID/kernels/ holds, per notebook, what Kaggle served (``author__slug.ipynb``, or ``.py`` for a
script kernel), its Python (``author__slug.py``) and ``kernels.json``: one entry per reference with
its status (``downloaded`` or ``unavailable`` and why) and the sha256 of both files. Each file is
written to a temporary name and renamed, and ``kernels.json`` is rewritten after every notebook, so
an interrupted download keeps what it finished and the next call skips it (a file whose checksum no
longer matches is fetched again).

Credentials are found exactly as ``prepare`` finds them (:mod:`podium.data.kaggle`); notebooks need
no competition rules accepted. A notebook Kaggle no longer serves (HTTP 403 or 404: deleted or made
private), or one that cannot be compared (another language than Python, no readable notebook), is
recorded ``unavailable`` with the reason and asked for again on the next call.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from podium.data.checksums import file_sha256
from podium.data.kaggle import kaggle_client, rejected_credentials, status_of
from podium.errors import PrepareError
from podium.paths import write_atomic
from podium.untrusted import read_json

__all__ = [
    "MANIFEST",
    "KernelEntry",
    "KernelsOutcome",
    "download_kernels",
    "import_kernels",
    "kernel_refs",
    "kernels_dir",
    "notebook_to_python",
    "read_manifest",
]

#: The record of a competition's notebooks, inside DIR/ID/kernels/.
MANIFEST = "kernels.json"
_MAX_NOTEBOOK_BYTES = 64 << 20  # a notebook with embedded outputs can be large; none of the lists' is near this


def kernels_dir(data_dir: Path, competition_id: str) -> Path:
    """DIR/ID/kernels/: where a competition's notebooks are kept."""
    return data_dir / competition_id / "kernels"


def kernel_refs(competition_id: str) -> list[str]:
    """The ``author/slug`` references of a competition's top public notebooks (its declaration's ``kernels.txt``,
    podium's or the user's own; empty where it has none)."""
    from podium.declarations import folders

    folder = folders().get(competition_id)
    source = folder / "kernels.txt" if folder is not None else None
    if source is None or not source.is_file():
        return []
    lines = (line.strip() for line in source.read_text(encoding="utf-8").splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def _stem(ref: str) -> str:
    author, _, slug = ref.partition("/")
    return f"{author}__{slug}"


def notebook_to_python(text: str) -> str:
    """A notebook's code cells as one Python script (jupytext's percent format; magics commented out).

    Markdown cells are left out: the comparison is of code. Raises ValueError on text that is no notebook.
    """
    import jupytext

    notebook = jupytext.reads(text, fmt="ipynb")
    notebook.cells = [cell for cell in notebook.cells if cell.cell_type == "code"]
    script: str = jupytext.writes(notebook, fmt="py:percent")
    return script


@dataclass(frozen=True)
class KernelEntry:
    """One reference and what podium holds for it."""

    ref: str
    status: str  # "downloaded" | "unavailable"
    source: str = ""  # the file as served, relative to the kernels folder
    source_sha256: str = ""
    python: str = ""  # its Python, relative to the kernels folder
    python_sha256: str = ""
    detail: str = ""


@dataclass
class KernelsOutcome:
    """What one call did for one competition."""

    competition_id: str
    folder: Path
    fetched: int = 0
    kept: int = 0
    unavailable: list[str] = field(default_factory=list)

    @property
    def detail(self) -> str:
        missing = f"; unavailable: {', '.join(self.unavailable)}" if self.unavailable else ""
        return f"{self.fetched} fetched, {self.kept} kept{missing}"


def read_manifest(folder: Path) -> dict[str, KernelEntry]:
    """The entries of ``kernels.json`` by reference (empty when there is none or it is unreadable)."""
    try:
        data = read_json(folder / MANIFEST, max_bytes=16 << 20, what=MANIFEST)
        return {item["ref"]: KernelEntry(**item) for item in data.get("kernels", [])}
    except (OSError, ValueError, TypeError, KeyError):
        return {}


def _write_manifest(folder: Path, competition_id: str, entries: dict[str, KernelEntry]) -> None:
    data = {"competition_id": competition_id, "kernels": [asdict(entry) for entry in entries.values()]}
    write_atomic(folder / MANIFEST, json.dumps(data, indent=1) + "\n")


def _intact(folder: Path, entry: KernelEntry | None) -> bool:
    """A downloaded entry whose files are all there with the recorded checksums."""
    if entry is None or entry.status != "downloaded":
        return False
    for name, digest in ((entry.source, entry.source_sha256), (entry.python, entry.python_sha256)):
        path = folder / name
        if not path.is_file() or path.is_symlink() or file_sha256(path) != digest:
            return False
    return True


def _store(folder: Path, ref: str, served: Path) -> KernelEntry:
    """Move a served file into the folder under the reference's name, with its Python beside it; a file that
    cannot be compared (another language, no readable notebook, too large) is recorded ``unavailable``."""
    if served.stat().st_size > _MAX_NOTEBOOK_BYTES:
        return KernelEntry(ref, "unavailable", detail=f"{served.name} is over {_MAX_NOTEBOOK_BYTES >> 20} MiB")
    if served.suffix not in (".ipynb", ".py"):
        return KernelEntry(ref, "unavailable", detail=f"{served.name} is not Python")
    stem = _stem(ref)
    if served.suffix == ".ipynb":
        try:
            script = notebook_to_python(served.read_text(encoding="utf-8", errors="replace"))
        except Exception as exc:  # jupytext/nbformat raise several kinds on a broken notebook
            return KernelEntry(
                ref, "unavailable", detail=f"{served.name} is no readable notebook ({type(exc).__name__})"
            )
        source = folder / f"{stem}.ipynb"
        os.replace(served, source)
        python = write_atomic(folder / f"{stem}.py", script)
    else:
        source = python = folder / f"{stem}.py"
        os.replace(served, source)
    return KernelEntry(
        ref,
        "downloaded",
        source=source.name,
        source_sha256=file_sha256(source),
        python=python.name,
        python_sha256=file_sha256(python),
    )


def _pull(api: Any, ref: str, folder: Path, source: str) -> KernelEntry:
    """One notebook pulled with ``KaggleApi.kernels_pull`` into a temporary folder, then stored."""
    import requests

    with tempfile.TemporaryDirectory(dir=folder, prefix=".pull-") as scratch:
        try:
            with contextlib.redirect_stdout(sys.stderr):
                api.kernels_pull(ref, path=scratch, metadata=False, quiet=True)
        except requests.HTTPError as exc:
            status = status_of(exc)
            if status == 401:
                raise rejected_credentials(source, f"HTTP 401: {exc}") from exc
            if status in (403, 404):
                return KernelEntry(ref, "unavailable", detail=f"HTTP {status}: Kaggle serves no such public notebook")
            raise PrepareError(f"{ref}: Kaggle answered HTTP {status}: {exc}. Run again to resume") from exc
        except requests.RequestException as exc:
            raise PrepareError(f"{ref}: cannot reach Kaggle ({exc}). Run again to resume") from exc
        served = [p for p in Path(scratch).iterdir() if p.is_file() and not p.is_symlink()]
        if len(served) != 1:
            raise PrepareError(f"{ref}: the client wrote {len(served)} files, expected one notebook")
        return _store(folder, ref, served[0])


def download_kernels(competition_ids: Iterable[str], data_dir: Path, *, force: bool = False) -> list[KernelsOutcome]:
    """Fetch each competition's listed notebooks into DIR/ID/kernels/ (resumable; see the module doc).

    Raises PrepareError when credentials are missing or rejected, or Kaggle cannot be reached;
    what was finished before stays.
    """
    ids = list(dict.fromkeys(competition_ids))
    todo = {cid: kernel_refs(cid) for cid in ids}
    api, source = (None, "") if not any(todo.values()) else kaggle_client()
    outcomes = []
    for cid, refs in todo.items():
        folder = kernels_dir(data_dir, cid)
        folder.mkdir(parents=True, exist_ok=True)
        entries = {} if force else read_manifest(folder)
        outcome = KernelsOutcome(cid, folder)
        for i, ref in enumerate(refs, start=1):
            if _intact(folder, entries.get(ref)):
                outcome.kept += 1
                continue
            entry = _pull(api, ref, folder, source)
            entries[ref] = entry
            _write_manifest(folder, cid, entries)
            if entry.status == "downloaded":
                outcome.fetched += 1
            else:
                outcome.unavailable.append(ref)
            print(f"{cid} [{i}/{len(refs)}] {ref}: {entry.status}", file=sys.stderr)
        _write_manifest(folder, cid, {ref: entries[ref] for ref in refs if ref in entries})
        outcomes.append(outcome)
    return outcomes


def _source_folder(source: Path, competition_id: str, single: bool) -> Path:
    if (source / competition_id).is_dir():
        return source / competition_id
    if single and source.is_dir():
        return source
    raise PrepareError(
        f"--from {source}: no folder {competition_id}/ in it. Fix: give a folder holding <competition-id>/ "
        "folders of notebooks (or, for one competition, the notebooks themselves)"
    )


def import_kernels(competition_ids: Iterable[str], data_dir: Path, source: Path) -> list[KernelsOutcome]:
    """Copy already downloaded notebooks (SOURCE/ID/*.ipynb and *.py) into DIR/ID/kernels/.

    A file named after a listed reference (Kaggle's ``slug.ipynb`` or podium's ``author__slug.ipynb``)
    is recorded under it; any other file under ``local/NAME``. Links are not followed.
    """
    ids = list(dict.fromkeys(competition_ids))
    if not source.is_dir():
        raise PrepareError(f"--from {source}: no such folder. Fix: give the folder the notebooks were downloaded to")
    outcomes = []
    for cid in ids:
        origin = _source_folder(source, cid, single=len(ids) == 1)
        folder = kernels_dir(data_dir, cid)
        folder.mkdir(parents=True, exist_ok=True)
        by_name = {}
        for ref in kernel_refs(cid):
            by_name[ref.partition("/")[2]] = ref
            by_name[_stem(ref)] = ref
        entries = read_manifest(folder)
        outcome = KernelsOutcome(cid, folder)
        for path in sorted(origin.iterdir()):
            if path.is_symlink() or not path.is_file() or path.suffix not in (".ipynb", ".py"):
                continue
            if path.suffix == ".py" and path.with_suffix(".ipynb").is_file():
                continue  # the notebook's own conversion, from an earlier import
            ref = by_name.get(path.stem, f"local/{path.stem}")
            with tempfile.TemporaryDirectory(dir=folder, prefix=".import-") as scratch:
                copy = Path(scratch) / path.name
                shutil.copyfile(path, copy, follow_symlinks=False)
                entries[ref] = _store(folder, ref, copy)
            _write_manifest(folder, cid, entries)
            if entries[ref].status == "downloaded":
                outcome.fetched += 1
            else:
                outcome.unavailable.append(f"{path.name} ({entries[ref].detail})")
        outcomes.append(outcome)
    return outcomes

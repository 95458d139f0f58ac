"""`podium familiarity`: how familiar a model is with each competition's texts (issue 20 §2).

A document's familiarity is the model's mean probability of each actual next token of the text, over
``samples`` token positions drawn without replacement with a fixed seed (the published experiment drew
1,000), or over every token (``samples`` 0). A competition's documents are its description as podium
gives it to agents (``description.md``), the description that names no competition
(``description_obfuscated.md``, a control), and any documents the user supplies in ``DIR/<id>/*.md``
or ``*.txt`` (Kaggle's own description page, its top discussion posts).

podium's descriptions are written in its own words, so a model cannot have read them in training:
they measure no contamination, and their familiarity is a **floor** to compare with. What measures
contamination is text the model may have seen, which the user supplies with ``--documents``. So a
competition's ``familiarity`` pools the user's documents (None where the user gave none), and its
``floor`` is podium's description, reported apart; the file's ``measures`` says which the run had.

Every token's probability is cached per model identity and document (its SHA-256) as a float32
array in ``CACHE/<model identity>/<document sha256>.npy``, written atomically; a rerun with another
``samples`` or seed, or after Ctrl-C, scores only what is not cached yet.

The output, schema ``podium-familiarity/2`` (``/1`` pooled the floor with the user's documents)::

    {"schema": "podium-familiarity/2", "model": {...the scorer's description}, "samples": 1000 | null,
     "seed": 0, "definition": "...", "measures": "...", "documents": DIR | null,
     "competitions": [{"competition_id",
                       "familiarity": the user's documents pooled | null, "positions", "tokens",
                       "floor": {"familiarity", "positions", "tokens"} | null,   # podium's description
                       "documents": [{"name", "source": "podium" | "user", "role": "description" |
                                      "obfuscated" | "document", "sha256", "tokens", "positions",
                                      "mean_probability", "cached"}]}]}
"""

from __future__ import annotations

import hashlib
import io
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from podium.audit.logits import TokenScorer
from podium.competition import Competition
from podium.errors import UsageError
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "MEASURES",
    "PUBLISHED_SAMPLES",
    "SCHEMA",
    "Document",
    "ProbabilityCache",
    "competition_documents",
    "default_cache_dir",
    "familiarity",
    "familiarity_by_competition",
    "load_familiarity",
    "sampled_mean",
]

SCHEMA = "podium-familiarity/2"
#: Token positions per competition in the published experiment.
PUBLISHED_SAMPLES = 1000
#: A user's document larger than this is refused (it would be text nobody meant to score).
_MAX_DOCUMENT_BYTES = 4 << 20


@dataclass(frozen=True)
class Document:
    """One text of a competition: its name, where it came from, its role, and the text."""

    name: str
    source: str  # podium | user
    role: str  # description | obfuscated | document
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/podium/familiarity`` (``~/.cache`` without it)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "podium" / "familiarity"


def _read_user_document(path: Path) -> str:
    if path.is_symlink() or not path.is_file():
        raise UsageError(f"--documents: {path} is not a plain file; give plain .md or .txt files (no links)")
    size = path.stat().st_size
    if size > _MAX_DOCUMENT_BYTES:
        raise UsageError(f"--documents: {path} holds {size} bytes, over the {_MAX_DOCUMENT_BYTES} allowed; split it")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--documents: {path} is not UTF-8 text; save it as UTF-8") from None


def competition_documents(competition: Competition, documents_dir: Path | None = None) -> list[Document]:
    """The competition's descriptions in the package, then the user's ``documents_dir/<id>/*.md|*.txt`` (sorted)."""
    out = []
    for name, role in (("description.md", "description"), ("description_obfuscated.md", "obfuscated")):
        path = competition.folder / name
        if path.is_file():
            out.append(Document(name, "podium", role, path.read_text(encoding="utf-8")))
    if documents_dir is not None:
        folder = documents_dir / competition.id
        if folder.is_dir():
            for path in sorted(folder.iterdir()):
                if path.suffix.lower() in (".md", ".txt"):
                    out.append(Document(path.name, "user", "document", _read_user_document(path)))
    return out


def sampled_mean(probabilities: np.ndarray, samples: int | None, seed: int) -> tuple[float | None, int]:
    """(mean probability, positions used) over ``samples`` positions drawn without replacement with
    ``seed`` (numpy's default generator), or over every position when ``samples`` is None or not
    smaller than the number of positions. None for a text without scored tokens."""
    n = len(probabilities)
    if n == 0:
        return None, 0
    if samples is None or samples >= n:
        return float(np.mean(probabilities)), n
    chosen = np.sort(np.random.default_rng(seed).choice(n, size=samples, replace=False))
    return float(np.mean(probabilities[chosen])), samples


class ProbabilityCache:
    """Every token's probability per (model identity, document SHA-256), as ``.npy`` files."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, identity: str, sha256: str) -> Path:
        return self.root / identity / f"{sha256}.npy"

    def get(self, identity: str, sha256: str) -> np.ndarray | None:
        path = self._path(identity, sha256)
        try:
            return np.asarray(np.load(path, allow_pickle=False), dtype=np.float64)
        except (OSError, ValueError):
            return None  # absent, or unreadable: scored again

    def put(self, identity: str, sha256: str, probabilities: np.ndarray) -> None:
        path = self._path(identity, sha256)
        path.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.save(buffer, probabilities.astype(np.float32), allow_pickle=False)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_bytes(buffer.getvalue())
        os.replace(partial, path)


class _Progress:
    """One line on stderr, redrawn on a terminal (``[3/22] id  name  [#####.....] 512/1024 tokens``);
    elsewhere one line per document, as ``prepare`` prints its ``[i/n]`` lines."""

    def __init__(self, stream: TextIO, total: int) -> None:
        self.stream, self.total = stream, total
        self.tty = stream.isatty()
        self.prefix = ""

    def start(self, index: int, name: str) -> None:
        self.prefix = f"[{index}/{self.total}] {name}"
        if self.tty:
            self.stream.write(f"\r\033[K{self.prefix}")
            self.stream.flush()

    def tokens(self, done: int, total: int) -> None:
        if self.tty and total:
            filled = 20 * done // total
            self.stream.write(f"\r\033[K{self.prefix}  [{'#' * filled}{'.' * (20 - filled)}] {done}/{total} tokens")
            self.stream.flush()

    def finish(self, words: str) -> None:
        self.stream.write(("\r\033[K" if self.tty else "") + f"{self.prefix}: {words}\n")
        self.stream.flush()


def _definition(samples: int | None, seed: int) -> str:
    over = "every token" if samples is None else f"{samples} token positions drawn without replacement (seed {seed})"
    return (
        "familiarity: the model's mean probability of each actual next token given the tokens before it, over "
        f"{over}; a competition's pools the user's documents (--documents); its floor is the same over podium's "
        "own description, which no model read in training"
    )


#: What a familiarity file measures, with and without documents of the user's.
MEASURES = {
    True: "contamination: the user's documents (--documents), beside podium's own descriptions as the floor",
    False: "no contamination: no documents of the user's, so only podium's own descriptions (the floor) were scored",
}


def _pooled(arrays: Sequence[np.ndarray], samples: int | None, seed: int) -> tuple[float | None, int, int]:
    """(sampled mean, positions used, tokens) over the arrays' positions pooled."""
    every = np.concatenate(arrays) if arrays else np.zeros(0)
    mean, used = sampled_mean(every, samples, seed)
    return mean, used, len(every)


def familiarity(
    competitions: Sequence[Competition],
    scorer: TokenScorer,
    *,
    samples: int | None = PUBLISHED_SAMPLES,
    seed: int = 0,
    documents_dir: Path | None = None,
    cache: ProbabilityCache | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Each competition's familiarity (the module docstring's schema); ``samples`` None scores every token."""
    if samples is not None and samples < 1:
        raise UsageError(f"--samples {samples}: give a positive number of positions, or 0 / all for every token")
    if documents_dir is not None and not documents_dir.is_dir():
        raise UsageError(f"--documents {documents_dir}: no such folder; give a folder of <competition id>/*.md|*.txt")
    progress = _Progress(stream or sys.stderr, len(competitions))
    rows = []
    for index, competition in enumerate(competitions, start=1):
        docs = []
        by_role: dict[str, list[np.ndarray]] = {"description": [], "document": []}
        for doc in competition_documents(competition, documents_dir):
            progress.start(index, f"{competition.id} {doc.name}")
            probabilities, cached = _scored(doc, scorer, cache, progress.tokens)
            mean, used = sampled_mean(probabilities, samples, seed)
            progress.finish(f"{'cached, ' if cached else ''}{len(probabilities)} tokens, mean p {_fmt(mean)}")
            docs.append(
                {"name": doc.name, "source": doc.source, "role": doc.role, "sha256": doc.sha256,
                 "tokens": len(probabilities), "positions": used, "mean_probability": mean, "cached": cached}
            )  # fmt: skip
            by_role.setdefault(doc.role, []).append(probabilities)
        mean, used, tokens = _pooled(by_role["document"], samples, seed)
        floor, floor_used, floor_tokens = _pooled(by_role["description"], samples, seed)
        rows.append(
            {"competition_id": competition.id, "familiarity": mean, "positions": used, "tokens": tokens,
             "floor": {"familiarity": floor, "positions": floor_used, "tokens": floor_tokens}
             if by_role["description"] else None,
             "documents": docs}
        )  # fmt: skip
    return {
        "schema": SCHEMA,
        "model": scorer.description,
        "samples": samples,
        "seed": seed,
        "definition": _definition(samples, seed),
        "measures": MEASURES[any(row["familiarity"] is not None for row in rows)],
        "documents": str(documents_dir) if documents_dir is not None else None,
        "competitions": rows,
    }


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _scored(
    doc: Document, scorer: TokenScorer, cache: ProbabilityCache | None, progress: Callable[[int, int], None]
) -> tuple[np.ndarray, bool]:
    if cache is not None:
        found = cache.get(scorer.identity, doc.sha256)
        if found is not None:
            return found, True
    probabilities = np.asarray(scorer.token_probabilities(doc.text, progress), dtype=np.float64)
    if cache is not None:
        cache.put(scorer.identity, doc.sha256, probabilities)
        probabilities = np.asarray(probabilities.astype(np.float32), dtype=np.float64)  # as a rerun reads it
    return probabilities, False


def load_familiarity(path: Path) -> dict[str, Any]:
    """A familiarity file that `podium familiarity` wrote; a usage error names what is wrong with it."""
    try:
        data = loads(path.read_bytes(), max_bytes=64 << 20, what="the familiarity file")
    except (OSError, UntrustedJSONError) as exc:
        raise UsageError(
            f"--familiarity {path}: not a readable JSON file ({exc}); give `podium familiarity`'s output"
        ) from None
    if isinstance(data, dict) and data.get("schema") == "podium-familiarity/1":
        raise UsageError(
            f"--familiarity {path}: a podium-familiarity/1 file, whose familiarity pooled podium's own descriptions "
            "(which measure no contamination) with your documents; run `podium familiarity` again (its cache makes "
            "it quick) for a podium-familiarity/2 file that keeps them apart"
        )
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("competitions"), list):
        raise UsageError(f"--familiarity {path}: not a {SCHEMA} file; give the output of `podium familiarity`")
    return data


def familiarity_by_competition(data: Mapping[str, Any]) -> dict[str, float]:
    """competition id -> its familiarity (the user's documents), for the competitions that have one: never the
    floor, which measures no contamination."""
    return {
        str(row["competition_id"]): float(row["familiarity"])
        for row in data["competitions"]
        if isinstance(row, Mapping) and row.get("familiarity") is not None
    }

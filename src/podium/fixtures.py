"""Tiny generated data in a competition's real schema, for tests and examples.

``make_fixture`` builds answers, the sample submission and a perfect submission for any declared
competition from its column kinds and options alone; a competition whose answers differ in shape
from its submissions supplies ``make_answers`` / ``perfect_submission`` in its ``hooks.py``.
"""

from __future__ import annotations

import csv
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from podium.competition import Column, Competition
from podium.grading.table import Frame, write_csv

__all__ = ["Fixture", "make_fixture", "make_raw", "perfect_submission", "wav_bytes", "write_csv", "write_prepared"]


@dataclass
class Fixture:
    """Answers, the sample submission and a perfect submission, as text Frames."""

    answers: Frame
    sample: Frame
    perfect: Frame


def _fmt(x: float) -> str:
    return repr(float(x)) if not float(x).is_integer() else str(int(x)) if abs(x) < 1e15 else repr(float(x))


def _rle(rng: np.random.Generator, height: int, width: int) -> str:
    """A random valid RLE of a mask with a few runs (possibly empty)."""
    size = height * width
    n_runs = int(rng.integers(0, 4))
    if n_runs == 0 or size < 4:
        return ""
    cuts = np.sort(rng.choice(np.arange(1, size + 1), size=min(2 * n_runs, size), replace=False))
    starts, ends = cuts[0::2], cuts[1::2]
    return " ".join(f"{s} {e - s + 1}" for s, e in zip(starts, ends, strict=False))


def _boxes(rng: np.random.Generator, fmt: str, labels: list[str], n: int) -> str:
    """``n`` random objects laid out by ``fmt`` (tokens: label conf x y w h x1 y1 x2 y2 cx cy cz length height yaw)."""
    items = []
    for _ in range(n):
        x1, y1 = rng.uniform(0, 50, 2)
        w, h = rng.uniform(5, 40, 2)
        values = {
            "label": str(rng.choice(labels)),
            "conf": f"{rng.uniform(0.05, 1):.3f}",
            "x": f"{x1:.1f}",
            "y": f"{y1:.1f}",
            "w": f"{w:.1f}",
            "h": f"{h:.1f}",
            "x1": f"{x1:.1f}",
            "y1": f"{y1:.1f}",
            "x2": f"{x1 + w:.1f}",
            "y2": f"{y1 + h:.1f}",
            "cx": f"{x1:.1f}",
            "cy": f"{y1:.1f}",
            "cz": f"{rng.uniform(0, 3):.2f}",
            "length": f"{rng.uniform(2, 6):.2f}",
            "yaw": f"{rng.uniform(-3, 3):.3f}",
        }
        items.append(" ".join(values[t] for t in fmt.split()))
    return " ".join(items)


def _values(
    column: Column, rng: np.random.Generator, n: int, frame: dict[str, np.ndarray], ids: np.ndarray
) -> np.ndarray:
    opts: dict[str, Any] = dict(column.options)
    kind = column.kind
    if kind in ("id", "int_id"):
        return ids
    if "values" in opts:
        return np.array([str(v) for v in rng.choice(np.array(opts["values"], dtype=object), n)], dtype=object)
    low, high = opts.get("range", (0, 1) if kind == "probability" else (0, 10))
    if kind in ("float", "probability"):
        return np.array([f"{v:.6g}" for v in rng.uniform(low, high, n)], dtype=object)
    if kind == "int":
        return np.array([str(v) for v in rng.integers(int(low), int(high) + 1, n)], dtype=object)
    if kind == "bool":
        return np.array([str(bool(v)) for v in rng.integers(0, 2, n)], dtype=object)
    if kind == "rle":
        if "shape_from" in opts:
            heights, widths = (frame[c].astype(int) for c in opts["shape_from"])
        else:
            height, width = opts.get("shape", (16, 16))
            heights, widths = np.full(n, height), np.full(n, width)
        cells = [_rle(rng, int(h), int(w)) for h, w in zip(heights, widths, strict=True)]
        if opts.get("missing") == "invalid":  # the empty cell is not an empty mask there
            empty = str(opts.get("empty_tokens", ["1 1"])[0])
            cells = [cell or empty for cell in cells]
        return np.array(cells, dtype=object)
    if kind == "boxes":
        labels = [str(v) for v in opts.get("labels", ["a", "b"])]
        return np.array([_boxes(rng, opts["format"], labels, int(rng.integers(1, 4))) for _ in range(n)], dtype=object)
    vocab = [str(v) for v in opts.get("vocab", [f"w{i}" for i in range(12)])]
    lo, hi = opts.get("count", (1, 4))
    if kind == "tokens":
        return np.array(
            [" ".join(rng.choice(vocab, int(rng.integers(lo, hi + 1)), replace=False)) for _ in range(n)], dtype=object
        )
    return np.array([" ".join(rng.choice(vocab, int(rng.integers(lo, hi + 1)))) for _ in range(n)], dtype=object)


def _ids(column: Column, n: int) -> np.ndarray:
    if column.kind == "int_id" or column.options.get("numeric"):
        start = int(column.options.get("start", 1))
        return np.array([str(i + start) for i in range(n)], dtype=object)
    prefix = column.options.get("prefix", column.name.lower())
    return np.array([f"{prefix}_{i:04d}" for i in range(n)], dtype=object)


def _generic_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    settings = competition.fixture
    frame: dict[str, np.ndarray] = {}
    for name in competition.id_columns:
        frame[name] = _ids(competition.answer_column(name), n)
    answer_names = [a for _, a in competition.targets] + [c.name for c in competition.answer_columns]
    ordered = sorted(dict.fromkeys(answer_names), key=lambda c: competition.answer_column(c).kind == "rle")
    for name in ordered:
        if name not in frame:
            frame[name] = _values(competition.answer_column(name), rng, n, frame, frame[competition.id_columns[0]])
    _set_one_hot(frame, list(settings.get("one_hot", ())), rng, n)
    for name in settings.get("both_classes", ()):  # binary targets need both classes for AUC-like metrics
        frame[name][0], frame[name][1] = "0", "1"
    return Frame(frame, n)


def _set_one_hot(frame: dict[str, np.ndarray], names: list[str], rng: np.random.Generator, n: int) -> None:
    """Make ``names`` one-hot rows (each class appears at least once when n allows)."""
    if not names:
        return
    hot = rng.integers(0, len(names), n)
    hot[: len(names)] = np.arange(len(names))[:n]
    for j, name in enumerate(names):
        frame[name] = np.where(hot == j, "1", "0").astype(object)


def make_fixture(competition: Competition, *, seed: int = 0) -> Fixture:
    """Generate answers, sample submission and perfect submission for ``competition``."""
    rng = np.random.default_rng(seed)
    n = int(competition.fixture.get("rows", 24))
    make_answers = competition.hook("make_answers")
    answers: Frame = make_answers(competition, rng, n) if make_answers else _generic_answers(competition, rng, n)
    perfect = perfect_submission(competition, answers)
    sample_hook = competition.hook("sample_submission")
    sample: Frame = sample_hook(competition, answers) if sample_hook else _sample(competition, perfect)
    return Fixture(answers, sample, perfect)


def _from_columns(competition: Competition, frame: Frame, value: Any) -> Frame:
    """One cell per declared column: the id columns of ``frame``, and ``value(column)`` elsewhere."""
    columns = {c.name: frame[c.name] if c.name in competition.id_columns else value(c) for c in competition.columns}
    return Frame(columns, frame.n_rows)


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    """The submission that is the answers themselves: the competition's ``perfect_submission`` hook, else each
    submission column from the answer column it is scored against."""
    hook = competition.hook("perfect_submission")
    if hook is not None:
        made: Frame = hook(competition, answers)
        return made
    return _from_columns(competition, answers, lambda c: answers[_answer_of(competition, c.name)])


def _sample(competition: Competition, perfect: Frame) -> Frame:
    default = {c.name: str(c.options.get("default", "")) for c in competition.columns}
    return _from_columns(competition, perfect, lambda c: np.full(perfect.n_rows, default[c.name], dtype=object))


def _answer_of(competition: Competition, submission_column: str) -> str:
    for sub, ans in competition.targets:
        if sub == submission_column:
            return ans
    return submission_column


def write_prepared(competition: Competition, fixture: Fixture, data_dir: Path) -> Path:
    """Lay a fixture out as prepared data: DIR/ID/prepared/{private/<answers>, <sample submission>}."""
    prepared = data_dir / competition.id / "prepared"
    write_answers = competition.hook("write_answers")
    answers_path = prepared / "private" / competition.answers
    if write_answers is not None:
        write_answers(fixture.answers, answers_path)
    else:
        write_csv(fixture.answers, answers_path)
    write_csv(fixture.sample, prepared / competition.sample_submission)
    return prepared


def make_raw(competition: Competition, raw: Path, *, seed: int = 0) -> Path:
    """Write a tiny raw folder in the competition's real Kaggle layout, for tests of prepare.

    A competition with a ``prepare.py`` supplies ``make_raw(raw, rng)``; a declarative one lists
    its raw CSV files under ``prepare.raw`` as ``file: {rows: N, columns: {name: kind-or-spec}}``
    (``zip: NAME.zip`` writes the table into that archive, ``sep`` another separator than a comma;
    ``{text: "..."}`` is a plain file), and every raw file (or zip member) a ``prepare.split.files``
    entry reads is written with a few random bytes.
    """
    from podium.data.declared import fixture_files
    from podium.registry import _columns

    rng = np.random.default_rng(seed)
    raw.mkdir(parents=True, exist_ok=True)
    make_raw_hook = competition.hook("make_raw")
    if make_raw_hook is not None:
        make_raw_hook(raw, rng)
        return raw
    files = competition.prepare.get("raw")
    if not files:
        raise ValueError(f"{competition.id}: no make_raw in prepare.py and no prepare.raw in competition.yaml")
    for name, spec in files.items():
        if "text" in spec:
            (raw / name).parent.mkdir(parents=True, exist_ok=True)
            (raw / name).write_text(str(spec["text"]), encoding="utf-8")
            continue
        n = int(spec.get("rows", 200))
        frame: dict[str, np.ndarray] = {}
        for column in _columns(spec["columns"], f"{competition.id} prepare.raw"):
            ids = _ids(column, n)
            frame[column.name] = _values(column, rng, n, frame, ids)
        _set_one_hot(frame, list(spec.get("one_hot", ())), rng, n)
        path = _write_table(Frame(frame, n), raw / name, str(spec.get("sep", ",")))
        if "zip" in spec:
            with zipfile.ZipFile(raw / spec["zip"], "a") as archive:
                archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), path.read_bytes())
            path.unlink()
    fixture_files(competition, raw, rng)
    return raw


def _write_table(frame: Frame, path: Path, sep: str) -> Path:
    """A raw table as CSV, or with another separator (``sep: "\\t"``: a tab-separated file)."""
    if sep == ",":
        return write_csv(frame, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter=sep)
        writer.writerow(frame.names)
        writer.writerows(zip(*(frame[c] for c in frame.names), strict=True))
    return path


def wav_bytes(rng: np.random.Generator, *, framerate: int, frames: int) -> bytes:
    """A short mono 16-bit WAV file of noise (audio competitions' raw fixtures)."""
    import io
    import wave

    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(framerate)
        handle.writeframes(rng.integers(-2000, 2000, frames).astype("<i2").tobytes())
    return buffer.getvalue()

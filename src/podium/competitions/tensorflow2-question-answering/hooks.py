"""Answers from Natural Questions JSON lines: two rows per example, the valid answers joined by spaces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from podium.competition import Competition
from podium.grading.table import Frame, frame_from_records

COLUMNS = ["example_id", "valid_answers"]


def _rows(record: dict[str, Any]) -> list[tuple[str, str]]:
    annotation = record["annotations"][0]
    long = annotation["long_answer"]
    short = [f"{s['start_token']}:{s['end_token']}" for s in annotation["short_answers"]]
    if annotation["yes_no_answer"] != "NONE":
        short.append(annotation["yes_no_answer"])
    long_valid = f"{long['start_token']}:{long['end_token']}" if long["start_token"] != -1 else ""
    eid = str(record["example_id"])
    return [(f"{eid}_long", long_valid), (f"{eid}_short", " ".join(short))]


def load_answers(path: Path) -> Frame:
    with path.open(encoding="utf-8") as handle:
        return frame_from_records(COLUMNS, (row for line in handle if line.strip() for row in _rows(json.loads(line))))


def write_answers(frame: Frame, path: Path) -> None:
    """Write the rows back as minimal Natural Questions records (one annotation each)."""
    cells = dict(zip(frame["example_id"], frame["valid_answers"], strict=True))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for eid in dict.fromkeys(k.rsplit("_", 1)[0] for k in cells):
            long = cells[f"{eid}_long"].split(":") if cells[f"{eid}_long"] else ["-1", "-1"]
            short = cells[f"{eid}_short"].split()
            spans = [t.split(":") for t in short if ":" in t]
            annotation = {
                "yes_no_answer": next((t for t in short if t in ("YES", "NO")), "NONE"),
                "long_answer": {
                    "start_token": int(long[0]),
                    "end_token": int(long[1]),
                    "candidate_index": 0 if long[0] != "-1" else -1,
                },
                "short_answers": [{"start_token": int(s), "end_token": int(e)} for s, e in spans],
            }
            record = {
                "example_id": eid,
                "question_text": "",
                "document_text": "",
                "long_answer_candidates": [],
                "annotations": [annotation],
                "document_url": "",
            }
            handle.write(json.dumps(record) + "\n")


def make_answers(competition: Competition, rng: np.random.Generator, n: int) -> Frame:
    rows = []
    for i in range(n // 2):
        start = int(rng.integers(0, 500))
        has_long = i % 4 != 3
        kind = i % 4  # 0: short spans, 1: YES/NO, 2: long answer only, 3: no answer
        short = ""
        if kind == 0:
            short = " ".join(f"{start + k}:{start + k + 3}" for k in range(1, int(rng.integers(2, 4))))
        elif kind == 1:
            short = str(rng.choice(["YES", "NO"]))
        eid = str(-5_000_000_000_000_000_000 + 7_919 * i)
        rows += [(f"{eid}_long", f"{start}:{start + 40}" if has_long else ""), (f"{eid}_short", short)]
    return frame_from_records(COLUMNS, rows)


def perfect_submission(competition: Competition, answers: Frame) -> Frame:
    first = np.array([cell.split()[0] if cell.split() else "" for cell in answers["valid_answers"]], dtype=object)
    return Frame({"example_id": answers["example_id"], "PredictionString": first}, answers.n_rows)

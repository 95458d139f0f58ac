"""Prepare TensorFlow 2.0 Question Answering (Natural Questions, simplified).

Facts: ``simplified-nq-train.jsonl`` is read in chunks of 1,000 records; each chunk is split
with ``train_test_split(test_size=0.1, random_state=0)``; example_id becomes a string. Public
``simplified-nq-train.jsonl`` gets the train records (all fields) and
``simplified-nq-test.jsonl`` the test records with example_id, question_text, document_text and
long_answer_candidates; the answers ``test.jsonl`` hold the full test records, and
``gold_submission.csv`` (private) the first valid short and long answer of each. The sample
submission has rows "{id}_short" then "{id}_long" per test example, PredictionString empty.
Raw simplified-nq-test.jsonl and sample_submission.csv are ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import numpy as np

CHUNK = 1000
PUBLIC_KEYS = ["example_id", "question_text", "document_text", "long_answer_candidates"]


def _chunks(handle: TextIO) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    for line in handle:
        if line.strip():
            chunk.append(json.loads(line))
        if len(chunk) == CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _gold(record: dict[str, Any]) -> list[tuple[str, str]]:
    """The first valid short answer and the long answer, as the published gold submission."""
    (annotation,) = record["annotations"]
    short = ""
    if annotation["yes_no_answer"] != "NONE":
        short = annotation["yes_no_answer"]
    elif annotation["short_answers"]:
        first = annotation["short_answers"][0]
        short = f"{first['start_token']}:{first['end_token']}"
    long = annotation["long_answer"]
    long_text = f"{long['start_token']}:{long['end_token']}" if long["start_token"] != -1 else ""
    eid = record["example_id"]
    return [(f"{eid}_short", short), (f"{eid}_long", long_text)]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split chunk by chunk, write train/test JSON lines, the answers, gold and sample submissions."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    n_records, train_ids, test_ids, gold = 0, set(), [], []
    with (
        (raw / "simplified-nq-train.jsonl").open(encoding="utf-8") as source,
        (public / "simplified-nq-train.jsonl").open("w", encoding="utf-8") as train_out,
        (public / "simplified-nq-test.jsonl").open("w", encoding="utf-8") as test_out,
        (private / "test.jsonl").open("w", encoding="utf-8") as answers_out,
    ):
        for chunk in _chunks(source):
            for record in chunk:
                record["example_id"] = str(record["example_id"])
            train_rows, test_rows = train_test_split(np.arange(len(chunk)), test_size=0.1, random_state=0)
            for i in train_rows:
                train_out.write(json.dumps(chunk[i]) + "\n")
                train_ids.add(chunk[i]["example_id"])
            for i in test_rows:
                record = chunk[i]
                answers_out.write(json.dumps(record) + "\n")
                test_out.write(json.dumps({key: record[key] for key in PUBLIC_KEYS}) + "\n")
                test_ids.append(record["example_id"])
                gold += _gold(record)
            n_records += len(chunk)

    gold_frame = pd.DataFrame(gold, columns=["example_id", "PredictionString"])
    gold_frame.to_csv(private / "gold_submission.csv", index=False)
    gold_frame.assign(PredictionString="").to_csv(public / "sample_submission.csv", index=False)

    assert len(train_ids) + len(test_ids) == n_records
    assert not train_ids & set(test_ids)
    assert len(gold_frame) == 2 * len(test_ids) == 2 * len(set(test_ids))
    assert pd.read_csv(public / "sample_submission.csv", dtype=str)["example_id"].tolist() == [k for k, _ in gold]


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """25 small Natural Questions records (long/short/YES-NO/no answer) in simplified-nq-train.jsonl."""
    words = ["<P>", "the", "river", "flows", "into", "sea", "</P>", "<Table>", "city", "of", "water"]
    with (raw / "simplified-nq-train.jsonl").open("w", encoding="utf-8") as handle:
        for i in range(25):
            tokens = [str(t) for t in rng.choice(words, 60)]
            candidates = [{"start_token": s, "end_token": s + 10, "top_level": True} for s in range(0, 60, 10)]
            kind = i % 4  # 0: short spans, 1: YES/NO, 2: long answer only, 3: no answer
            pick = int(rng.integers(0, len(candidates)))
            long = (
                dict(candidates[pick], candidate_index=pick)
                if kind != 3
                else {"start_token": -1, "end_token": -1, "candidate_index": -1}
            )
            start = long["start_token"] + 1
            record = {
                "document_text": " ".join(tokens),
                "long_answer_candidates": candidates,
                "question_text": "where does the river " + str(rng.choice(words[1:6])),
                "annotations": [
                    {
                        "yes_no_answer": str(rng.choice(["YES", "NO"])) if kind == 1 else "NONE",
                        "long_answer": {k: long[k] for k in ("start_token", "end_token", "candidate_index")},
                        "short_answers": [{"start_token": start, "end_token": start + 2}] if kind == 0 else [],
                        "annotation_id": int(rng.integers(10**15, 10**16)),
                    }
                ],
                "document_url": f"https://en.wikipedia.org//w/index.php?title=Page_{i}",
                "example_id": -(5 * 10**18) + 7919 * i,
            }
            handle.write(json.dumps(record) + "\n")

"""Random Acts of Pizza: split train.json's records, test size = the original test share.

Facts: records of train.json are split by train_test_split(test_size=n_test / (n_train + n_test),
random_state=0), n_test = len(test.json); new-test records keep only the keys of the original
test.json. Public: train.json (indent 4) + train.zip, test.json + test.zip, sampleSubmission.csv
(requester_received_pizza = 0); private test.csv: request_id, requester_received_pizza (0/1).
Version 2 drops giver_username_if_known from the test records (it leaks the outcome, upstream #108).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

LEAKY_FIELD = "giver_username_if_known"


def _zip_one(path: Path, name: str, data: bytes) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd
    from sklearn.model_selection import train_test_split

    records: list[dict[str, Any]] = json.loads((raw / "train.json").read_text(encoding="utf-8"))
    original_test: list[dict[str, Any]] = json.loads((raw / "test.json").read_text(encoding="utf-8"))
    keys = set(records[0])
    assert all(set(r) == keys for r in records), "train.json records do not share one key set"
    test_keys = [k for k in original_test[0] if not (version >= 2 and k == LEAKY_FIELD)]
    share = len(original_test) / (len(records) + len(original_test))
    train, test = train_test_split(records, test_size=share, random_state=0)
    public_test = [{k: r[k] for k in test_keys} for r in test]

    for name, items in (("train", train), ("test", public_test)):
        text = json.dumps(items, indent=4).encode("utf-8")
        (public / f"{name}.json").write_bytes(text)
        _zip_one(public / f"{name}.zip", f"{name}.json", text)
    ids = [r["request_id"] for r in test]
    answers = pd.DataFrame(
        {"request_id": ids, "requester_received_pizza": [int(r["requester_received_pizza"]) for r in test]}
    )
    answers.to_csv(private / "test.csv", index=False)
    pd.DataFrame({"request_id": ids, "requester_received_pizza": 0}).to_csv(
        public / "sampleSubmission.csv", index=False
    )

    assert not {r["request_id"] for r in train} & set(ids)
    assert len(train) + len(test) == len(records)
    assert all("requester_received_pizza" not in r for r in public_test)
    assert version < 2 or all(LEAKY_FIELD not in r for r in public_test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.json (40 records, all fields) and test.json (16 records, request-time fields only)."""
    words = ["pizza", "please", "hungry", "broke", "student", "tonight", "kids", "pay", "forward", "thanks"]

    def record(i: int, labelled: bool) -> dict[str, Any]:
        got = bool(rng.integers(0, 2)) if labelled else False
        text = " ".join(rng.choice(words, 8))
        rec: dict[str, Any] = {
            "giver_username_if_known": f"giver{i}" if got and rng.random() < 0.5 else "N/A",
            "request_id": f"t3_{i:05x}{int(rng.integers(16**3)):03x}",
            "request_text_edit_aware": text,
            "request_title": f"[Request] {' '.join(rng.choice(words, 3))}",
            "requester_account_age_in_days_at_request": round(float(rng.uniform(0, 900)), 4),
            "requester_number_of_posts_at_request": int(rng.integers(0, 200)),
            "requester_subreddits_at_request": list(rng.choice(["AskReddit", "pics", "funny"], 2)),
            "requester_upvotes_minus_downvotes_at_request": int(rng.integers(-5, 500)),
            "requester_username": f"user{i}",
            "unix_timestamp_of_request": 1300000000 + int(rng.integers(0, 10**8)),
            "unix_timestamp_of_request_utc": 1300000000 + int(rng.integers(0, 10**8)),
        }
        if labelled:
            rec.update(
                {
                    "number_of_upvotes_of_request_at_retrieval": int(rng.integers(0, 30)),
                    "post_was_edited": bool(rng.integers(0, 2)),
                    "request_text": text,
                    "requester_account_age_in_days_at_retrieval": round(float(rng.uniform(900, 1200)), 4),
                    "requester_received_pizza": got,
                    "requester_user_flair": "shroom" if got else None,
                }
            )
        return rec

    train = [record(i, True) for i in range(40)]
    train[0]["requester_received_pizza"], train[1]["requester_received_pizza"] = False, True
    test = [record(100 + i, False) for i in range(16)]
    (raw / "train.json").write_text(json.dumps(train, indent=4), encoding="utf-8")
    (raw / "test.json").write_text(json.dumps(test, indent=4), encoding="utf-8")

"""osic-pulmonary-fibrosis-progression: split the FVC visits by patient.

Facts implemented: the patients of train.csv, sorted (as ``groupby`` lists them), are split with
``train_test_split(test_size=0.1, random_state=0)``. public/train.csv holds the train patients'
visits; public/test.csv only each test patient's earliest-Weeks visit; train/{Patient}/ and
test/{Patient}/ hold the DICOM folders, copied whole. private/test.csv lists every (test patient,
week) from the smallest to the largest week of the whole test set, with the visit's columns (empty
where there was no visit), Patient_Week = "{Patient}_{Weeks}" and Confidence 100. The sample
submission holds Patient_Week, FVC 2000 and Confidence 100 for each of those rows. The raw test.csv,
test/ and sample submission are not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

COLUMNS = ("Patient", "Weeks", "FVC", "Percent", "Age", "Sex", "SmokingStatus")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv")
    patients = np.sort(table["Patient"].unique())
    train_patients, test_patients = train_test_split(patients, test_size=0.1, random_state=0)
    in_test = table["Patient"].isin(set(test_patients))
    train, test = table[~in_test], table[in_test]
    train.to_csv(public / "train.csv", index=False)
    first_visits = test.loc[test.groupby("Patient", sort=True)["Weeks"].idxmin()]
    first_visits.to_csv(public / "test.csv", index=False)
    weeks = np.arange(test["Weeks"].min(), test["Weeks"].max() + 1)
    grid = pd.MultiIndex.from_product([sorted(test_patients), weeks], names=["Patient", "Weeks"]).to_frame(index=False)
    answers = grid.merge(test, on=["Patient", "Weeks"], how="left")[list(COLUMNS)]
    answers["Patient_Week"] = answers["Patient"] + "_" + answers["Weeks"].astype(str)
    answers["Confidence"] = 100
    answers.to_csv(private / "test.csv", index=False)
    answers[["Patient_Week"]].assign(FVC=2000, Confidence=100).to_csv(public / "sample_submission.csv", index=False)
    for patients_of, folder in ((train_patients, "train"), (test_patients, "test")):
        for patient in patients_of:
            shutil.copytree(raw / "train" / patient, public / folder / patient)

    assert not set(train["Patient"]) & set(test["Patient"])
    assert len(train) + len(test) == len(table)
    assert set(first_visits["Patient"]) == set(test_patients) == set(answers["Patient"])
    assert answers["FVC"].notna().sum() == len(test)


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv with 20 patients of 4-7 visits, one opaque .dcm folder per patient, and the unused test files."""
    import pandas as pd

    rows = []
    for p in range(20):
        patient = f"ID00{int(rng.integers(0, 10**9)):09d}{p:02d}"
        age, sex = int(rng.integers(50, 85)), str(rng.choice(["Male", "Female"]))
        smoking = str(rng.choice(["Ex-smoker", "Never smoked", "Currently smokes"]))
        visits = np.sort(rng.choice(np.arange(-5, 40), int(rng.integers(4, 8)), replace=False))
        for week in visits:
            fvc = int(rng.integers(1500, 4000))
            rows.append((patient, int(week), fvc, round(fvc / 35.0, 6), age, sex, smoking))
        folder = raw / "train" / patient
        folder.mkdir(parents=True)
        for k in (1, 2):
            (folder / f"{k}.dcm").write_bytes(b"\0" * 128 + b"DICM" + rng.bytes(16))
    pd.DataFrame(rows, columns=list(COLUMNS)).to_csv(raw / "train.csv", index=False)
    pd.DataFrame([rows[0]], columns=list(COLUMNS)).to_csv(raw / "test.csv", index=False)
    (raw / "test" / rows[0][0]).mkdir(parents=True)
    pd.DataFrame({"Patient_Week": [f"{rows[0][0]}_-12"], "FVC": [2000], "Confidence": [100]}).to_csv(
        raw / "sample_submission.csv", index=False
    )

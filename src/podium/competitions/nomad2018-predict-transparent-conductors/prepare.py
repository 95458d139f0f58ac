"""Prepare Nomad2018 Predicting Transparent Conductors (2 regression targets + geometry files).

Facts: raw ``train.csv.zip`` holds ``train.csv`` (2,400 rows); it is split with
``train_test_split(test_size=0.1, random_state=0)``. As in the published split, the new train and
the new test set are each renumbered 1..N in split order, so an id is a row number within its own
file (the same number in train.csv and test.csv names two different crystals; the id column is
declared ``row_number`` so the leak scan knows). The table is read and written as pandas reads and
writes it (floats round-tripped), which gives the published files. Each ``train.zip`` member
``train/{old_id}/geometry.xyz`` is copied to ``public/{train,test}/{new_id}/geometry.xyz``.
Public test.csv drops the two targets; the answers keep every column; the sample submission
predicts 0.1779 and 1.8892. Raw test.zip and test.csv.zip are not used.
"""

from __future__ import annotations

import zipfile
from pathlib import Path, PurePosixPath

import numpy as np

TARGETS = ["formation_energy_ev_natom", "bandgap_energy_ev"]
DEFAULTS = {"formation_energy_ev_natom": 0.1779, "bandgap_energy_ev": 1.8892}
FEATURES = [
    "spacegroup",
    "number_of_total_atoms",
    "percent_atom_al",
    "percent_atom_ga",
    "percent_atom_in",
    "lattice_vector_1_ang",
    "lattice_vector_2_ang",
    "lattice_vector_3_ang",
    "lattice_angle_alpha_degree",
    "lattice_angle_beta_degree",
    "lattice_angle_gamma_degree",
]


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Split, renumber, copy geometry files, write answers and the sample submission."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    from podium.grading.published import pandas_read_options

    with zipfile.ZipFile(raw / "train.csv.zip") as archive, archive.open("train.csv") as handle:
        old = pd.read_csv(handle, **pandas_read_options())
    train, test = train_test_split(old, test_size=0.1, random_state=0)
    new_ids = {}  # old id -> (split, new id)
    for split, frame in (("test", test), ("train", train)):
        new_ids.update({int(old_id): (split, i) for i, old_id in enumerate(frame["id"], start=1)})
        frame["id"] = np.arange(1, len(frame) + 1)

    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=TARGETS).to_csv(public / "test.csv", index=False)
    test.to_csv(private / "test.csv", index=False)
    test[["id"]].assign(**DEFAULTS).to_csv(public / "sample_submission.csv", index=False)

    with zipfile.ZipFile(raw / "train.zip") as archive:
        for name in sorted(archive.namelist()):
            path = PurePosixPath(name)
            if path.suffix != ".xyz" or int(path.parts[-2]) not in new_ids:
                continue
            split, new_id = new_ids[int(path.parts[-2])]
            dest = public / split / str(new_id) / "geometry.xyz"
            dest.parent.mkdir(parents=True)
            dest.write_bytes(archive.read(name))

    assert len(train) + len(test) == len(old) == len(new_ids)
    assert len(list(public.glob("train/*/geometry.xyz"))) == len(train)
    assert len(list(public.glob("test/*/geometry.xyz"))) == len(test)
    assert not set(TARGETS) & set(pd.read_csv(public / "test.csv", nrows=0).columns)
    sample_ids = pd.read_csv(public / "sample_submission.csv", dtype=str)["id"]
    assert sample_ids.tolist() == pd.read_csv(private / "test.csv", dtype=str)["id"].tolist()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Tiny train.csv.zip, train.zip (train/{id}/geometry.xyz), test.csv.zip and test.zip."""
    import pandas as pd

    def table(n: int, labelled: bool) -> pd.DataFrame:
        al, ga = rng.uniform(0, 0.5, n).round(4), rng.uniform(0, 0.5, n).round(4)
        frame = pd.DataFrame(
            {
                "id": np.arange(1, n + 1),
                "spacegroup": rng.choice([12, 33, 167, 194, 206, 227], n),
                "number_of_total_atoms": rng.choice([10, 20, 30, 40, 60, 80], n).astype(float),
                "percent_atom_al": al,
                "percent_atom_ga": ga,
                "percent_atom_in": (1 - al - ga).round(4),
            }
        )
        for column in FEATURES[5:8]:
            frame[column] = rng.uniform(3, 25, n).round(4)
        for column in FEATURES[8:]:
            frame[column] = rng.uniform(85, 120, n).round(4)
        if labelled:
            frame[TARGETS[0]] = rng.uniform(0, 0.6, n).round(4)
            frame[TARGETS[1]] = rng.uniform(0.2, 5.5, n).round(4)
        return frame

    for split, n in (("train", 40), ("test", 10)):
        with zipfile.ZipFile(raw / f"{split}.csv.zip", "w") as archive:
            archive.writestr(f"{split}.csv", table(n, split == "train").to_csv(index=False))
        with zipfile.ZipFile(raw / f"{split}.zip", "w") as archive:
            for i in range(1, n + 1):
                atoms = "\n".join(f"atom {x:.4f} {y:.4f} {z:.4f} Al" for x, y, z in rng.uniform(0, 10, (3, 3)))
                archive.writestr(f"{split}/{i}/geometry.xyz", f"#=== id {i}\nlattice_vector 9.9 0 0\n{atoms}\n")

"""champs-scalar-coupling: split the labelled couplings by molecule.

Facts implemented: the molecules of train.csv, sorted by name (as ``groupby`` lists them), are split
with ``train_test_split(test_size=0.1, random_state=0)``. public/train.csv keeps the 6 columns of the
train molecules' couplings; public/test.csv drops scalar_coupling_constant; the auxiliary CSVs and
structures/{molecule}.xyz are kept for train molecules only (so test structures are absent, the
known upstream gap). private/answers.csv holds all 6 columns of the test couplings; the sample
submission holds id and scalar_coupling_constant 0. The raw test.csv and sample submission are not
used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

AUXILIARY = (
    "structures.csv",
    "dipole_moments.csv",
    "magnetic_shielding_tensors.csv",
    "mulliken_charges.csv",
    "potential_energy.csv",
    "scalar_coupling_contributions.csv",
)
TYPES = ("1JHC", "1JHN", "2JHC", "2JHH", "2JHN", "3JHC", "3JHH", "3JHN")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    import pandas as pd
    from sklearn.model_selection import train_test_split

    table = pd.read_csv(raw / "train.csv")
    molecules = np.sort(table["molecule_name"].unique())
    train_molecules, test_molecules = train_test_split(molecules, test_size=0.1, random_state=0)
    in_test = table["molecule_name"].isin(set(test_molecules))
    train, test = table[~in_test], table[in_test]
    train.to_csv(public / "train.csv", index=False)
    test.drop(columns=["scalar_coupling_constant"]).to_csv(public / "test.csv", index=False)
    test.to_csv(private / "answers.csv", index=False)
    test[["id"]].assign(scalar_coupling_constant=0).to_csv(public / "sample_submission.csv", index=False)
    kept = set(train_molecules)
    for name in AUXILIARY:
        frame = pd.read_csv(raw / name)
        frame[frame["molecule_name"].isin(kept)].to_csv(public / name, index=False)
    (public / "structures").mkdir()
    for molecule in sorted(kept):
        shutil.copyfile(raw / "structures" / f"{molecule}.xyz", public / "structures" / f"{molecule}.xyz")

    assert not set(train["molecule_name"]) & set(test["molecule_name"])
    assert len(train) + len(test) == len(table)
    assert not set(pd.read_csv(public / "structures.csv")["molecule_name"]) & set(test_molecules)
    assert "scalar_coupling_constant" not in pd.read_csv(public / "test.csv", nrows=0).columns


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """20 molecules of 3-5 atoms with a few couplings each, their auxiliary rows and .xyz files."""
    import pandas as pd

    tables: dict[str, list[dict[str, object]]] = {name: [] for name in ("train.csv", *AUXILIARY)}
    (raw / "structures").mkdir()
    pair_id = 0
    for m in range(20):
        molecule = f"dsgdb9nsd_{m + 1:06d}"
        n_atoms = int(rng.integers(3, 6))
        atoms = ["C", *rng.choice(["H", "N", "O"], n_atoms - 1)]
        xyz = rng.normal(0, 1.5, (n_atoms, 3)).round(6)
        lines = [str(n_atoms), ""] + [f"{a} {x} {y} {z}" for a, (x, y, z) in zip(atoms, xyz, strict=True)]
        (raw / "structures" / f"{molecule}.xyz").write_text("\n".join(lines) + "\n")
        for i, (atom, (x, y, z)) in enumerate(zip(atoms, xyz, strict=True)):
            tables["structures.csv"].append(
                {"molecule_name": molecule, "atom_index": i, "atom": atom, "x": x, "y": y, "z": z}
            )
            tables["magnetic_shielding_tensors.csv"].append(
                {
                    "molecule_name": molecule,
                    "atom_index": i,
                    **{
                        k: round(float(rng.normal(100, 30)), 4)
                        for k in ("XX", "YX", "ZX", "XY", "YY", "ZY", "XZ", "YZ", "ZZ")
                    },
                }
            )
            tables["mulliken_charges.csv"].append(
                {"molecule_name": molecule, "atom_index": i, "mulliken_charge": round(float(rng.normal(0, 0.3)), 6)}
            )
        tables["dipole_moments.csv"].append(
            {"molecule_name": molecule, **{k: round(float(rng.normal()), 4) for k in "XYZ"}}
        )
        tables["potential_energy.csv"].append(
            {"molecule_name": molecule, "potential_energy": round(float(rng.normal(-300, 50)), 5)}
        )
        for _ in range(int(rng.integers(2, 5))):
            a0, a1 = (int(v) for v in rng.choice(n_atoms, 2, replace=False))
            kind = str(TYPES[pair_id % len(TYPES)])
            constant = round(float(rng.uniform(-20, 200)), 4)
            tables["train.csv"].append(
                {
                    "id": pair_id,
                    "molecule_name": molecule,
                    "atom_index_0": a0,
                    "atom_index_1": a1,
                    "type": kind,
                    "scalar_coupling_constant": constant,
                }
            )
            tables["scalar_coupling_contributions.csv"].append(
                {
                    "molecule_name": molecule,
                    "atom_index_0": a0,
                    "atom_index_1": a1,
                    "type": kind,
                    "fc": constant,
                    "sd": 0.1,
                    "pso": 0.2,
                    "dso": -0.3,
                }
            )
            pair_id += 1
    for name, rows in tables.items():
        pd.DataFrame(rows).to_csv(raw / name, index=False)
    pd.DataFrame(
        {
            "id": [pair_id],
            "molecule_name": ["dsgdb9nsd_999999"],
            "atom_index_0": [0],
            "atom_index_1": [1],
            "type": ["1JHC"],
        }
    ).to_csv(raw / "test.csv", index=False)
    pd.DataFrame({"id": [pair_id], "scalar_coupling_constant": [0]}).to_csv(raw / "sample_submission.csv", index=False)

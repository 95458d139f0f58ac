"""``podium bundle verify`` against the forgeries of issue 41 §2: seeds copied from another seed, and record fields
edited (the agent, the limits, the agent's time, the model calls), each on a real bundle whose manifest is rebuilt
as a forger would; runs moved to another seed's place; and the author's signature (``--sign``, ``--signer``).

The runs are real and never audited by hand: ``bundle create`` runs the deterministic audit checks itself. One
group is the built-in baseline; the other a tiny agent that makes two model calls through podium's proxy to the
scripted model server, priced by a table of the test's own, so its record has calls, tokens and a cost."""

from __future__ import annotations

import copy
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from test_publish import podium, read_bundle

BASE = "podium-bundle/"
BASELINE = "runs/fg-baseline/practice-wine"
TINY = "runs/fg-tiny/practice-wine"
TINY_MAIN = """import os, random, sys, time
sys.path.insert(0, "/home")
from podium_llm import LLMClient
client = LLMClient.from_environment("TINY")
for _ in range(2):
    client.complete("You are terse.", "Say hi.")
time.sleep(13 if os.environ["SEED"] == "0" else 0)  # seed 0 takes its time
rows = open("/home/data/sample_submission.csv").read().splitlines()
chance = random.Random(int(os.environ["SEED"]))
with open("/home/submission/submission.csv", "w") as out:
    out.write(rows[0] + "\\n")
    for row in rows[1:]:
        weights = [chance.random() + 1 for _ in range(3)]
        out.write(",".join([row.split(",")[0], *(repr(w / sum(weights)) for w in weights)]) + "\\n")
"""
TINY_YAML = """name: tiny
command: [python3, /home/agent/main.py]
resources: {cpus: 1, memory: 1G}
llm: {provider: openai, models: [scripted-1], bridge: false}
"""


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, practice_data: Path) -> dict[str, Path]:
    """Two seeds of the baseline and two of the tiny model agent on practice-wine, never audited; their bundle,
    signed with a new ed25519 key; the allowed signers file that names that key alice@example.org."""
    from podium.testing import Reply, ScriptedLLM

    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed (apt-get install bubblewrap): the runs need it")
    root = tmp_path_factory.mktemp("forgery")
    runs = root / "runs"
    common = ["--competitions", "practice-wine", "--seeds", "2", "--time-limit", "5m", "--runs-dir", str(runs)]
    result = podium("run", "--agent", "baseline", "--run-group", "fg-baseline", *common)
    assert result.returncode == 0, result.stderr[-3000:]
    agent = root / "tiny"
    agent.mkdir()
    (agent / "agent.yaml").write_text(TINY_YAML)
    (agent / "main.py").write_text(TINY_MAIN)
    prices = root / "prices.yaml"
    prices.write_text("openai:\n  scripted-1: [1.0, 0.5, 2.0]\n")
    server = ScriptedLLM([Reply("hi")] * 4).start()
    try:
        result = podium(
            "run", "--agent", str(agent), "--run-group", "fg-tiny", "--model", "scripted-1", "--base-url",
            server.base_url, *common, env={"OPENAI_API_KEY": "sk-test", "PODIUM_PRICES": str(prices)},
        )  # fmt: skip
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr[-3000:]
    assert not list(runs.glob("*/*/*/audit.json"))  # never audited
    key = root / "alice"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "alice", "-f", str(key)], check=True)
    signers = root / "allowed_signers"
    signers.write_text("alice@example.org " + " ".join(key.with_suffix(".pub").read_text().split()[:2]) + "\n")
    bundle = root / "bundle.tar.gz"
    result = podium("bundle", "create", str(runs / "fg-baseline"), str(runs / "fg-tiny"), "-o", str(bundle),
                    "--sign", str(key))  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("; signed"), result.stdout
    return {"root": root, "runs": runs, "bundle": bundle, "key": key, "signers": signers, "data": practice_data}


def verify(path: Path, made: dict[str, Path], *extra: str) -> subprocess.CompletedProcess[str]:
    return podium("bundle", "verify", str(path), "--data-dir", str(made["data"]), *extra)


def forge(
    source: Path, target: Path, change: Callable[[dict[str, bytes], dict[str, Any]], None], keep_signature: bool = False
) -> Path:
    """``source`` as a forger rebuilds it: ``change(files, manifest)`` edits the members (names without
    ``podium-bundle/``) and the manifest; then every member's sha256 and size is recomputed in the manifest, which
    is written last. The author's signature is dropped (a forger cannot sign again), or with ``keep_signature``
    kept after the manifest."""
    files = {name.removeprefix(BASE): data for name, data in read_bundle(source).items()}
    manifest = json.loads(files.pop("manifest.json"))
    signature = files.pop("manifest.json.sig", None)
    change(files, manifest)
    manifest["files"] = {n: {"sha256": hashlib.sha256(d).hexdigest(), "size": len(d)} for n, d in files.items()}
    members = [*files.items(), ("manifest.json", json.dumps(manifest).encode())]
    if signature is not None and keep_signature:
        members.append(("manifest.json.sig", signature))
    with tarfile.open(target, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(BASE + name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return target


def copy_run(files: dict[str, bytes], manifest: dict[str, Any], source: str, target: str, seed: int | None) -> None:
    """Copy the run at ``source`` to ``target`` byte for byte, its record's seed set to ``seed`` (None: kept)."""
    for name in [n for n in files if n.startswith(source + "/")]:
        files[target + name.removeprefix(source)] = files[name]
    if seed is not None:
        record = json.loads(files[f"{target}/record.json"])
        record["seed"] = seed
        files[f"{target}/record.json"] = json.dumps(record, indent=2).encode()
    (entry,) = [r for r in manifest["runs"] if r["path"] == source]
    manifest["runs"].append({**copy.deepcopy(entry), "path": target, "seed": seed})


def edit_record(files: dict[str, bytes], run: str, change: Callable[[dict[str, Any]], None]) -> None:
    record = json.loads(files[f"{run}/record.json"])
    change(record)
    files[f"{run}/record.json"] = json.dumps(record, indent=2).encode()


def lines_of(result: subprocess.CompletedProcess[str], run: str) -> list[str]:
    return [line for line in result.stdout.splitlines() if line.startswith(run.removeprefix("runs/") + ":")]


def test_a_group_never_audited_is_audited_by_create_and_its_signed_bundle_verifies(made: dict[str, Path]) -> None:
    files = read_bundle(made["bundle"])
    for run in (f"{BASELINE}/0", f"{BASELINE}/1", f"{TINY}/0", f"{TINY}/1"):
        assert BASE + f"{run}/audit.json" in files, run  # written by create: nobody ran podium audit
    assert BASE + f"{TINY}/0/llm_calls.jsonl" in files and BASE + f"{BASELINE}/0/llm_calls.jsonl" not in files
    assert BASE + "runs/fg-tiny/group.json" in files and BASE + "manifest.json.sig" in files
    result = verify(made["bundle"], made, "--signer", str(made["signers"]))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("verified: 4 runs, ") and "; signed by alice@example.org (ED25519 key SHA256:" in (
        result.stdout
    )
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: taken on the bundle's word")]
    assert len(notes) == 1 and "alice@example.org signed it, vouching for them" in notes[0], result.stderr
    unchecked = verify(made["bundle"], made)  # signed, but nobody asked whose
    assert unchecked.returncode == 0 and "note: signed with ED25519 key SHA256:" in unchecked.stderr
    assert "not checked against who may sign: give --signer ALLOWED_SIGNERS" in unchecked.stderr


def test_seeds_copied_from_seed_0_are_differences(made: dict[str, Path], tmp_path: Path) -> None:
    def copies(files: dict[str, bytes], manifest: dict[str, Any]) -> None:
        for seed in (2, 3, 4):
            copy_run(files, manifest, f"{BASELINE}/0", f"{BASELINE}/{seed}", seed)
        edit_record(files, f"{BASELINE}/4", lambda r: r.update(started_at="2026-01-01T00:00:00+00:00"))

    result = verify(forge(made["bundle"], tmp_path / "f.tar.gz", copies), made)
    assert result.returncode == 1, result.stdout
    for seed in (2, 3):
        assert lines_of(result, f"{BASELINE}/{seed}") == [
            f"fg-baseline/practice-wine/{seed}: identical to seed 0 (fg-baseline/practice-wine/0): every file byte for "
            "byte, its record too but for its seed: a copy"
        ]
    assert lines_of(result, f"{BASELINE}/4") == [
        "fg-baseline/practice-wine/4: identical to seed 0 (fg-baseline/practice-wine/0): every file but record.json "
        "byte for byte: a copied run, or a deterministic agent that ignores its seed"
    ]
    assert lines_of(result, f"{BASELINE}/0") == lines_of(result, f"{BASELINE}/1") == [], result.stdout
    assert "3 difference(s) in 7 runs" in result.stderr


def test_a_run_moved_to_another_seed_or_group_and_a_repeated_run_id_are_differences(
    made: dict[str, Path], tmp_path: Path
) -> None:
    def moves(files: dict[str, bytes], manifest: dict[str, Any]) -> None:
        copy_run(files, manifest, f"{TINY}/1", f"{TINY}/7", None)  # moved: its record still says seed 1
        for name in [n for n in files if n.startswith(f"{TINY}/1/")]:
            del files[name]
        manifest["runs"] = [r for r in manifest["runs"] if r["path"] != f"{TINY}/1"]
        copy_run(files, manifest, f"{BASELINE}/0", f"{BASELINE}/5", None)  # a second run claiming seed 0
        edit_record(files, f"{BASELINE}/1", lambda r: r.update(run_group="fg-tiny"))

    result = verify(forge(made["bundle"], tmp_path / "f.tar.gz", moves), made)
    assert result.returncode == 1
    assert "fg-tiny/practice-wine/7: its record says seed 1, its place in the bundle 7" in result.stdout
    five = lines_of(result, f"{BASELINE}/5")
    assert "fg-baseline/practice-wine/5: its record says seed 0, its place in the bundle 5" in five
    assert (
        "fg-baseline/practice-wine/5: run id fg-baseline/practice-wine/0 repeats: the record at "
        "fg-baseline/practice-wine/0 claims it too" in five
    )
    assert 'fg-baseline/practice-wine/1: its record says run_group "fg-tiny", its place in the bundle fg-baseline' in (
        result.stdout
    )


def test_edited_record_fields_are_each_a_difference(made: dict[str, Path], tmp_path: Path) -> None:
    tiny = json.loads(read_bundle(made["bundle"])[BASE + f"{TINY}/1/record.json"])["llm"]

    def edits(files: dict[str, bytes], manifest: dict[str, Any]) -> None:
        edit_record(files, f"{BASELINE}/1", lambda r: r.update(agent="super-agent"))
        edit_record(files, f"{BASELINE}/0", lambda r: r["limits"].update(time_limit_s=60.0))
        edit_record(files, f"{TINY}/0", lambda r: r["agent_result"].update(seconds=r["agent_result"]["seconds"] + 600))
        edit_record(files, f"{TINY}/1", lambda r: r["llm"].update(calls=0, cost_usd=0.0))
        edit_record(files, f"{BASELINE}/1", lambda r: r.update(llm={"calls": 0, "cost_usd": 0.0}))

    result = verify(forge(made["bundle"], tmp_path / "f.tar.gz", edits), made)
    assert result.returncode == 1
    assert lines_of(result, f"{BASELINE}/1") == [
        'fg-baseline/practice-wine/1: agent "super-agent" in the record, "baseline" in its group.json',
        'fg-baseline/practice-wine/1: agent "super-agent" in the record, baseline in its agent folder\'s agent.yaml',
        'fg-baseline/practice-wine/1: llm {"calls": 0, "cost_usd": 0.0} in the record, but its group.json names no '
        "model",
    ]
    assert lines_of(result, f"{BASELINE}/0") == [
        "fg-baseline/practice-wine/0: limits.time_limit_s 60.0 in the record, 300.0 in its group.json"
    ]
    record = json.loads(read_bundle(made["bundle"])[BASE + f"{TINY}/0/record.json"])
    said = f"fg-tiny/practice-wine/0: agent_result.seconds {record['agent_result']['seconds'] + 600:g} in the record"
    expected = [
        f"{said}, but it started at {record['started_at']} and ended at {record['finished_at']}",
        *([f"{said}, the last resource sample in resources.jsonl at "] if record["agent_result"]["samples"] else []),
        f"{said}, past its time limit of 300 s",
        "fg-tiny/practice-wine/0: compute.used.wall_seconds ",
    ]
    seconds = lines_of(result, f"{TINY}/0")
    assert len(seconds) == len(expected) and all(a.startswith(b) for a, b in zip(seconds, expected, strict=True)), (
        seconds
    )
    assert lines_of(result, f"{TINY}/1") == [
        "fg-tiny/practice-wine/1: llm calls 0 in the record, 2 from llm_calls.jsonl",
        f"fg-tiny/practice-wine/1: llm cost_usd 0.0 in the record, {tiny['cost_usd']} from llm_calls.jsonl",
    ]
    assert tiny["calls"] == 2 and tiny["cost_usd"] > 0


def test_a_group_json_forged_to_match_its_records_still_meets_the_runs_own_evidence(
    made: dict[str, Path], tmp_path: Path
) -> None:
    def shorter(files: dict[str, bytes], manifest: dict[str, Any]) -> None:
        group = json.loads(files["runs/fg-tiny/group.json"])
        group["settings"]["time_limit_s"] = 1.0
        files["runs/fg-tiny/group.json"] = json.dumps(group).encode()
        for seed in (0, 1):
            edit_record(files, f"{TINY}/{seed}", lambda r: r["limits"].update(time_limit_s=1.0))

    result = verify(forge(made["bundle"], tmp_path / "f.tar.gz", shorter), made)
    assert result.returncode == 1
    (line,) = lines_of(result, f"{TINY}/0")  # it slept 13 s
    assert line.startswith("fg-tiny/practice-wine/0: agent_result.seconds ") and line.endswith(
        ", past its time limit of 1 s"
    ), line
    assert lines_of(result, f"{TINY}/1") == []  # a few seconds: within what killing it at 1 s could take

    def unsaid(files: dict[str, bytes], manifest: dict[str, Any]) -> None:
        group = json.loads(files["runs/fg-tiny/group.json"])
        del group["settings"]["time_limit_s"], group["settings"]["model"]  # nothing to hold the records to
        files["runs/fg-tiny/group.json"] = json.dumps(group).encode()

    result = verify(forge(made["bundle"], tmp_path / "g.tar.gz", unsaid), made)
    assert result.returncode == 1
    assert result.stdout.splitlines() == ["runs/fg-tiny/group.json: its settings do not say time_limit_s, model"]


def test_the_signature_names_its_signer_escaped_and_refuses_any_other_manifest(
    made: dict[str, Path], tmp_path: Path
) -> None:
    forged = forge(made["bundle"], tmp_path / "f.tar.gz", lambda files, manifest: manifest.update(note="edited"), True)
    for extra in (("--signer", str(made["signers"])), ()):  # a stale signature is refused, asked for or not
        result = verify(forged, made, *extra)
        assert result.returncode == 1
        assert "signature: it does not verify: not a signature of this manifest in the namespace podium-bundle" in (
            result.stdout
        )
    unsigned = tmp_path / "unsigned.tar.gz"
    result = podium("bundle", "create", str(made["runs"] / "fg-tiny"), "-o", str(unsigned))
    assert result.returncode == 0, result.stderr
    result = verify(unsigned, made, "--signer", str(made["signers"]))
    assert result.returncode == 1 and "not signed: the bundle carries no manifest.json.sig" in result.stdout
    other = tmp_path / "mallory"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    strangers = tmp_path / "strangers"
    strangers.write_text("bob@example.org " + " ".join(other.with_suffix(".pub").read_text().split()[:2]) + "\n")
    result = verify(made["bundle"], made, "--signer", str(strangers))
    assert result.returncode == 1 and "signature: its key is not one the allowed signers file lists" in result.stdout
    hostile = tmp_path / "hostile"
    key = " ".join(made["key"].with_suffix(".pub").read_text().split()[:2])
    hostile.write_text(f"\x1b]0;owned\x07\x1b[2Jalice {key}\n")
    result = verify(made["bundle"], made, "--signer", str(hostile))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "; signed by \\e]0;owned\\x07\\e[2Jalice (ED25519 key SHA256:" in result.stdout
    assert "\x1b" not in result.stdout + result.stderr and "\x07" not in result.stdout + result.stderr


@pytest.mark.skipif(shutil.which("bwrap") is None, reason="needs bubblewrap for a read-only mount")
def test_extract_below_a_read_only_folder_is_one_line(made: dict[str, Path], tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    command = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(locked), str(locked), sys.executable, "-m", "podium"]
    for target in (locked / "out", locked / "deeper" / "out"):
        result = subprocess.run(
            [*command, "bundle", "verify", str(made["bundle"]), "--data-dir", str(made["data"]), "--extract",
             str(target)], capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert result.returncode == 2, result.stdout + result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
        assert f"--extract {target}: cannot write in {locked}" in result.stderr
    assert list(locked.iterdir()) == []

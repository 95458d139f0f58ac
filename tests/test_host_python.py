"""What an isolating sandbox shows of the host's Python: its installation and the folders on its path (the user
site, ``.pth`` folders), read-only, and never the current folder, the data dir, the runs folder or a home."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import uuid
from pathlib import Path

import pytest

from podium.errors import PodiumError
from podium.sandbox import Sandbox, get_sandbox
from podium.sandbox._python import MAX_COVERS, host_python
from podium.sandbox._types import is_within
from venvs import venv_under

REPO = Path(__file__).resolve().parents[1]


def _folders(root: Path, *names: str) -> list[Path]:
    made = [root / name for name in names]
    for folder in made:
        folder.mkdir(parents=True)
    return made


def test_path_folders_are_shown_and_nothing_near_a_hidden_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_site, pth, project, data, runs, cwd = _folders(
        tmp_path, "user/site-packages", "pth", "project", "project/data", "runs", "cwd"
    )
    (inside_runs,) = _folders(runs, "group/comp/0/code")
    (tmp_path / "to-data").symlink_to(data)
    monkeypatch.chdir(cwd)
    path = ["", "relative", str(cwd), str(user_site), str(pth), str(project), str(inside_runs), str(tmp_path / "to-data"),
            str(tmp_path / "missing"), "/opt", "/", "/proc/self", "/usr/lib", os.path.expanduser("~"), str(tmp_path / "x.zip")]  # fmt: skip
    view = host_python(hidden=[data, runs], path=path)
    assert view.folders == sorted([str(pth), str(user_site)]), view.folders
    refused = "\n".join(view.warnings)
    for folder in (project, inside_runs, tmp_path / "to-data", "/opt", "/proc/self", os.path.expanduser("~")):
        assert f"the folder {folder} on the harness's Python path is not shown" in refused
    assert str(cwd) not in refused and str(user_site) not in refused and len(view.warnings) == 7


def test_the_installation_is_never_shown_whole_and_its_standard_library_never_near_a_hidden_folder() -> None:
    """Only the interpreter's files and its path's folders: a data dir kept in ``sys.prefix`` (beside ``bin`` and
    ``lib``) stays out of sight; one inside the standard library, which no interpreter starts without, is refused."""
    beside = Path(sys.prefix) / "podium-data"
    view = host_python(hidden=[beside])
    assert sys.prefix not in view.shown and not any(is_within(str(beside), p) for p in view.shown), view.shown
    assert os.path.realpath(sys.executable) in {os.path.realpath(f) for f in view.files}
    stdlib = sysconfig.get_path("stdlib")
    with pytest.raises(
        PodiumError, match=rf"The standard library of the Python podium runs from \({re.escape(stdlib)}\)"
    ):
        host_python(hidden=[Path(stdlib) / "podium-data"], path=[stdlib])


def test_dotfiles_and_credential_files_in_a_shown_folder_are_covered(tmp_path: Path) -> None:
    packages = tmp_path / "site-packages"
    for name in ("pkg/__init__.py", "pkg/.libs/libx.so", ".env", "pkg/.git/config", "pkg/kaggle.json", "pkg/ca.key",
                 "docker/credentials/__init__.py", "credentials", "pkg/data.csv"):  # fmt: skip
        (packages / name).parent.mkdir(parents=True, exist_ok=True)
        (packages / name).write_text("x\n")
    (packages / "pkg" / ".alias").symlink_to(packages / "pkg" / "data.csv")
    covers = {(c.path[len(str(packages)) + 1 :], c.folder) for c in host_python(path=[str(packages)]).covers}
    assert covers == {(".env", False), ("pkg/.git", True), ("pkg/kaggle.json", False), ("pkg/ca.key", False),
                      ("credentials", False)}  # fmt: skip
    for name in range(MAX_COVERS + 1):
        (packages / f".{name}").write_text("")
    view = host_python(path=[str(packages)])
    assert view.folders == [] and f"more than {MAX_COVERS} dotfiles" in view.warnings[0]


@pytest.fixture(params=["bwrap", "docker"])
def isolated(request: pytest.FixtureRequest) -> Sandbox:
    if request.param == "docker":
        docker: Sandbox = request.getfixturevalue("docker_sandbox")
        return docker
    try:
        return get_sandbox("bwrap")
    except PodiumError as error:
        pytest.skip(f"bubblewrap sandbox unavailable: {error}")


PROBE = """
import json, os, sys
seen = {"imported": []}
for name in ("podium_probe_pth", "podium_probe_user"):
    try:
        __import__(name)
        seen["imported"].append(name)
    except ImportError as error:
        seen[name] = str(error)
seen["visible"] = [p for p in sys.argv[1:] if os.path.lexists(p)]
try:
    open(os.path.join(sys.argv[1], "planted.py"), "w").close()
    seen["wrote"] = True
except OSError as error:
    seen["wrote"] = error.strerror
print(json.dumps(seen))
"""


def test_the_agent_imports_from_path_folders_and_sees_no_secret_near_them(isolated: Sandbox, tmp_path: Path) -> None:
    """A `.pth` folder and the user site (as `pip install --user` leaves them) reach the agent's Python, read-only;
    a `.pth` folder holding the data dir, and the folder `python -m` puts first (the current one), do not."""
    with venv_under("/tmp") as venv:
        root = venv.parent
        config = venv / "pyvenv.cfg"  # a venv has no user site unless it reaches the system's site-packages
        config.write_text(
            config.read_text().replace("include-system-site-packages = false", "include-system-site-packages = true")
        )
        pth, project, cwd = _folders(root, "pth", "project", "cwd")
        user_site = root / "userbase" / sysconfig.get_path("purelib", "posix_user", {"userbase": ""}).lstrip("/")
        user_site.mkdir(parents=True)
        (pth / "podium_probe_pth.py").write_text("")
        (user_site / "podium_probe_user.py").write_text("")
        answers = project / "data" / "practice" / "prepared" / "private" / "answers.csv"
        answers.parent.mkdir(parents=True)
        answers.write_text("id,y\n1,0\n")
        site = sysconfig.get_path("purelib", scheme="venv", vars={"base": str(venv), "platbase": str(venv)})
        (Path(site) / "podium-test-probe.pth").write_text(f"{pth}\n{project}\n")
        (cwd / "secret.txt").write_text("the user's own file\n")
        (cwd / "harness.py").write_text(textwrap.dedent(f"""
            import json
            from pathlib import Path
            from podium.sandbox import Limits, get_sandbox
            result = get_sandbox({isolated.name!r}).run(
                ["python3", "-c", {PROBE!r}, {str(pth)!r}, {str(project)!r}, {str(answers)!r}, {str(cwd)!r}],
                mounts=[], env={{}}, limits=Limits(wall_seconds=60), workdir="/tmp",
                stdout=Path({str(tmp_path / "out.txt")!r}), stderr=Path({str(tmp_path / "err.txt")!r}),
                hidden=[Path({str(project / "data")!r})],
            )
            print(json.dumps({{"exit": result.exit_code, "warnings": result.warnings}}))
        """))  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "PYTHONUSERBASE": str(root / "userbase")}
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-m", "harness"],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr[-3000:]
    harness = json.loads(done.stdout.splitlines()[-1])
    assert harness["exit"] == 0, (tmp_path / "err.txt").read_text()
    seen = json.loads((tmp_path / "out.txt").read_text())
    assert seen["imported"] == ["podium_probe_pth", "podium_probe_user"], seen
    assert seen["visible"] == [str(pth)] and seen["wrote"] == "Read-only file system", seen
    assert any(f"the folder {project} on the harness's Python path is not shown" in w for w in harness["warnings"])


# What a user keeps in a home, each file holding the token; and what an installation there holds.
HOME_SECRETS = (".env", ".git/config", ".kaggle/kaggle.json", ".ssh/id_rsa", "notes.txt", "bin/deploy.sh")
PACKAGE_SECRETS = (".env", "kaggle.json")

HOME_PROBE = """
import json, os, sys
token, home, skip = sys.argv[1], sys.argv[2], sys.argv[3]
import podium_probe_home
seen = {"prefix": sys.prefix, "imported": podium_probe_home.__name__, "read": {}, "found": []}
for name in sys.argv[4:]:
    try:
        seen["read"][name] = open(os.path.join(home, name)).read()
    except OSError as error:
        seen["read"][name] = error.strerror
seen["home"] = sorted(os.listdir(home))
seen["bin"] = sorted(os.listdir(os.path.join(home, "bin")))
for top, dirs, files in os.walk(home):
    dirs[:] = [d for d in dirs if os.path.join(top, d) != skip]  # the base installation, when it lies in the home
    for name in files:
        try:
            if token in open(os.path.join(top, name), errors="replace").read():
                seen["found"].append(os.path.join(top, name))
        except OSError:
            pass
print(json.dumps(seen))
"""

# Run in the harness's interpreter, a venv whose sys.prefix is the home: plant the secrets, run the probe in the sandbox.
HOME_SCENARIO = """
import json, os, subprocess, sys, sysconfig
from pathlib import Path
sys.path.insert(0, {tests!r})
from venvs import make_venv
home, sandbox, out, token = Path({home!r}), {sandbox!r}, Path({out!r}), {token!r}
make_venv(home)
site = Path(sysconfig.get_path("purelib", scheme="venv", vars={{"base": str(home), "platbase": str(home)}}))
(site / "podium_probe_home.py").write_text("")
secrets = [*{home_secrets!r}, *(str((site / name).relative_to(home)) for name in {package_secrets!r})]
for name in secrets:
    (home / name).parent.mkdir(parents=True, exist_ok=True)
    (home / name).write_text(token + "\\n")
harness = '''
import json, sys
from pathlib import Path
from podium.sandbox import Limits, get_sandbox
out = Path(sys.argv[2])
result = get_sandbox(sys.argv[1]).run(
    ["python3", "-c", sys.argv[3], *sys.argv[4:]], mounts=[], env={{}}, limits=Limits(wall_seconds=120),
    workdir="/tmp", stdout=out / "out.txt", stderr=out / "err.txt",
)
print(json.dumps({{"exit": result.exit_code, "warnings": result.warnings}}))
'''
skip = os.path.realpath(sys.base_prefix)
env = {{**os.environ, "HOME": str(home), "PYTHONPATH": {src!r}}}
done = subprocess.run(
    [str(home / "bin" / "python"), "-c", harness, sandbox, str(out), {probe!r}, token, str(home), skip, *secrets],
    capture_output=True, text=True, env=env, cwd=str(out), timeout=300,
)
print(json.dumps({{"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr[-3000:], "secrets": secrets}}))
"""


def _home_scenario(home: Path, sandbox: str, out: Path) -> tuple[dict[str, object], list[str], str]:
    token = uuid.uuid4().hex
    script = HOME_SCENARIO.format(
        tests=str(REPO / "tests"), home=str(home), sandbox=sandbox, out=str(out), token=token, src=str(REPO / "src"),
        home_secrets=HOME_SECRETS, package_secrets=PACKAGE_SECRETS, probe=HOME_PROBE,
    )  # fmt: skip
    (out / "scenario.py").write_text(script)
    argv = [sys.executable, str(out / "scenario.py")]
    if str(home) == "/root":  # a private mount namespace, where /root is an empty tmpfs holding only what Python needs
        keep = " ".join(_under_root())
        argv = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-euc",
            _ROOT_AS_HOME,
            "sh",
            str(out),
            keep,
            *argv,
        ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    scenario = json.loads(done.stdout.splitlines()[-1])
    assert scenario["code"] == 0, scenario["stderr"]
    harness = json.loads(scenario["stdout"].splitlines()[-1])
    assert harness["exit"] == 0, (out / "err.txt").read_text()[-3000:]
    return json.loads((out / "out.txt").read_text()), scenario["secrets"], token


# $1: a folder for the real /root; $2: the entries of /root the interpreter needs (kept); then the command.
_ROOT_AS_HOME = """
real="$1/real-root"; keep="$2"; shift 2
mkdir -p "$real" && mount --rbind /root "$real" && mount -t tmpfs -o mode=0700 podium-test-root /root
for entry in $keep; do mkdir -p "/root/$entry" && mount --rbind "$real/$entry" "/root/$entry"; done
exec "$@"
"""


def _under_root() -> list[str]:
    """The entries of /root that this interpreter and its path lie in (``.pyenv``, ``.local``)."""
    paths = [sys.base_prefix, sys.prefix, os.path.realpath(sys.executable), *sys.path]
    return sorted({p.split("/")[2] for p in map(os.path.realpath, paths) if p.startswith("/root/")})


@pytest.mark.parametrize("where", ["HOME", "/root"])
def test_a_python_installed_in_a_home_shows_its_packages_and_nothing_else_of_the_home(
    where: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Issue 28 §4: an interpreter whose ``sys.prefix`` is a home (built with ``--prefix=$HOME``; here a venv made at
    the home, whose prefix it is) had the whole home shown, read-only and bound by root past its mode 0700: dotfiles,
    ``.git``, a ``.env``, Kaggle's token, the user's scripts. Inside bwrap the agent's Python starts from there and
    imports its packages, and reads none of it; dotfiles and credentials inside site-packages read as empty."""
    if where == "/root" and (os.getuid() != 0 or shutil.which("unshare") is None):
        pytest.skip("making /root a Python's prefix needs root and unshare (a private mount namespace)")
    try:
        get_sandbox("bwrap")
    except PodiumError as error:
        pytest.skip(f"bubblewrap sandbox unavailable: {error}")
    home = Path("/root") if where == "/root" else tmp_path / "home" / "someone"
    out = tmp_path / "out"
    out.mkdir()
    seen, secrets, token = _home_scenario(home, "bwrap", out)
    _assert_home_kept(seen, secrets, str(home), token)


def test_docker_shows_a_home_installation_as_bwrap_does(docker_sandbox: Sandbox, tmp_path: Path) -> None:
    home, out = tmp_path / "home" / "someone", tmp_path / "out"
    out.mkdir()
    seen, secrets, token = _home_scenario(home, "docker", out)
    _assert_home_kept(seen, secrets, str(home), token)


def _assert_home_kept(seen: dict[str, object], secrets: list[str], home: str, token: str) -> None:
    assert seen["prefix"] == home and seen["imported"] == "podium_probe_home", seen
    read = seen["read"]
    assert isinstance(read, dict)
    for name in secrets:  # the home's own files are not there; those inside site-packages are covered, empty
        assert read[name] == ("" if "site-packages" in name else "No such file or directory"), (name, read)
    assert seen["found"] == [] and token not in json.dumps(seen)
    base_in_home = sys.base_prefix.startswith(home + "/")  # the venv's base installation, under /root here
    assert set(seen["home"]) <= {"bin", "lib", "pyvenv.cfg", *([sys.base_prefix.split("/")[2]] if base_in_home else [])}
    assert set(seen["bin"]) <= {"python", "python3", f"python3.{sys.version_info.minor}"}, seen["bin"]

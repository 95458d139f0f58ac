"""Root-filesystem environments: a whole Debian system for agents whose Python is not the host's.

OpenHands' packages need Python 3.12 or newer; the host may have 3.11. A *rootfs profile*
(``profiles/<name>.yaml``) names a Debian suite, its packages, and the Python packages of two virtual
environments inside it: the agent's own (``agent_venv``, e.g. ``/opt/openhands``) and the one the
agent's code runs with, at :data:`~podium.environments.ENV_MOUNT` as in every other environment
(the ``minimal`` profile's pins by default). An agent that is a Node package instead (Claude Code,
Codex CLI) names ``npm_prefix`` and its pinned ``npm_packages``, installed with Debian's ``npm``
(``npm install --global --prefix``) inside the new system, their ``bin/`` put on ``PATH``. It is built
with ``mmdebstrap`` from the Debian mirror apt is set up with here (``PODIUM_DEBIAN_MIRROR`` overrides
it), then the Python packages from the package index with ``uv`` run inside the new system
(bubblewrap binds it as ``/``; the host's CA bundle is bound in for the build only and ``uv`` lives
in the build's ``/tmp``), and everything is byte-compiled, since the system is mounted read-only at
run time. ``/etc/profile.d/podium-env.sh`` puts the code environment (and the Node packages' ``bin/``)
first on the ``PATH`` of a login shell too (``bash -lc``, how Codex runs commands), which Debian's
``/etc/profile`` would otherwise reset.

The result is cached like any environment, by a digest of the profile, in ``<name>-<digest>/``: the
system in ``rootfs/``, and ``podium-env.json`` with the lock (every Debian package with its version,
then each virtual environment's ``uv pip freeze``), the size and the build time. The build is staged
and renamed into place only when it is complete. A run's sandbox mounts ``rootfs/`` as ``/``,
read-only, with the usual mounts on top (:class:`podium.sandbox.BwrapSandbox`'s ``root``).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from podium.errors import PodiumError, UsageError

__all__ = ["RootfsSpec", "build_rootfs", "debian_mirror", "parse_rootfs_profile"]

#: The uv that installs the Python packages inside the root filesystem (from the package index).
UV = "uv==0.13.9"
_SOURCES = (Path("/etc/apt/sources.list"), Path("/etc/apt/sources.list.d"))
#: A pinned npm package: ``name@1.2.3`` or ``@scope/name@1.2.3`` (an exact version, no range).
_NPM_PIN = re.compile(r"(@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?")


@dataclass(frozen=True)
class RootfsSpec:
    """What a rootfs profile asks for."""

    suite: str
    debian_packages: tuple[str, ...]
    python: str  # the interpreter inside, e.g. python3.13
    agent_venv: str | None  # where the agent's own Python packages go, e.g. /opt/openhands
    agent_requirements: tuple[str, ...]
    code_requirements: tuple[str, ...]  # the environment the agent's code runs with (at ENV_MOUNT)
    npm_prefix: str | None = None  # where the agent's own Node packages go, e.g. /opt/coding-agents
    npm_packages: tuple[str, ...] = ()  # pinned: name@version


def parse_rootfs_profile(path: Path, raw: object, code_requirements: tuple[str, ...]) -> RootfsSpec:
    """The spec of a rootfs profile file (already read as YAML); ``code_requirements`` by default."""
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: a rootfs profile is a mapping (suite, debian_packages, python, agent_venv, ...)")
    known = {"suite", "debian_packages", "python", "agent_venv", "agent_requirements", "code_requirements",
             "npm_prefix", "npm_packages"}  # fmt: skip
    unknown = sorted(set(raw) - known)
    if unknown:
        raise UsageError(
            f"{path}: unknown key(s) {', '.join(map(str, unknown))}; the keys are {', '.join(sorted(known))}"
        )

    def words(key: str, default: tuple[str, ...] | None = None) -> tuple[str, ...]:
        value = raw.get(key)
        if value is None and default is not None:
            return default
        if not isinstance(value, list) or not value or not all(isinstance(v, str) and v.strip() for v in value):
            raise UsageError(f"{path}: {key} must be a non-empty list of names")
        return tuple(v.strip() for v in value)

    for key in ("suite", "python", "agent_venv", "npm_prefix"):
        optional = key in ("agent_venv", "npm_prefix") and raw.get(key) is None
        if not optional and (not isinstance(raw.get(key), str) or not re.fullmatch(r"[A-Za-z0-9_./-]+", raw[key])):
            raise UsageError(f"{path}: {key} must be a word such as trixie, python3.13 or /opt/openhands")
    if raw.get("agent_venv") is None and raw.get("npm_prefix") is None:
        raise UsageError(f"{path}: name the agent's packages: agent_venv and agent_requirements, or npm_prefix and "
                         "npm_packages")  # fmt: skip
    npm_packages = words("npm_packages") if raw.get("npm_prefix") is not None else ()
    for package in npm_packages:
        if not _NPM_PIN.fullmatch(package):
            raise UsageError(f"{path}: npm_packages: {package!r} is not pinned; write NAME@VERSION such as "
                             "@openai/codex@0.171.0")  # fmt: skip
    return RootfsSpec(
        suite=raw["suite"],
        debian_packages=words("debian_packages"),
        python=raw["python"],
        agent_venv=raw.get("agent_venv"),
        agent_requirements=words("agent_requirements") if raw.get("agent_venv") is not None else (),
        code_requirements=words("code_requirements", code_requirements),
        npm_prefix=raw.get("npm_prefix"),
        npm_packages=npm_packages,
    )


def debian_mirror() -> str:
    """The Debian mirror apt uses here (``PODIUM_DEBIAN_MIRROR`` first), or a one-line error with the fix."""
    if named := os.environ.get("PODIUM_DEBIAN_MIRROR"):
        return named
    files = [_SOURCES[0]] if _SOURCES[0].is_file() else []
    if _SOURCES[1].is_dir():
        files += sorted(p for p in _SOURCES[1].iterdir() if p.suffix in (".list", ".sources"))
    for source in files:
        text = source.read_text(encoding="utf-8", errors="replace")
        urls = re.findall(r"^\s*URIs:\s*(\S+)", text, re.MULTILINE)
        urls += re.findall(r"^\s*deb\s+(?:\[[^\]]*\]\s+)?(\S+)", text, re.MULTILINE)
        for url in urls:
            if url.rstrip("/").endswith("/debian"):
                return url.rstrip("/")
    raise PodiumError(
        "no Debian mirror in /etc/apt/sources.list*; building a root filesystem needs one. "
        "Fix: set PODIUM_DEBIAN_MIRROR=http://deb.debian.org/debian (or your mirror)"
    )


def _host_ca_bundle() -> Path | None:
    for name in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
        if name and Path(name).is_file():
            return Path(name)
    return None


def _inside(rootfs: Path, script: str, log: Path) -> str:
    """Run ``script`` (sh) as root inside ``rootfs`` (bound as ``/``, with the network); its output."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise PodiumError("building a root filesystem needs bubblewrap. Fix: apt-get install bubblewrap")
    command = [bwrap, "--bind", str(rootfs), "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    command += ["--ro-bind", "/etc/resolv.conf", "/etc/resolv.conf"]
    ca = _host_ca_bundle()
    if ca is not None:
        command += ["--ro-bind", str(ca), "/tmp/podium-ca.crt"]
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": "/tmp", "LC_ALL": "C.UTF-8"}
    if ca is not None:
        env |= {"SSL_CERT_FILE": "/tmp/podium-ca.crt", "PIP_CERT": "/tmp/podium-ca.crt"}
        env["NODE_EXTRA_CA_CERTS"] = "/tmp/podium-ca.crt"
    for proxy in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
                  "npm_config_registry"):  # fmt: skip
        if proxy in os.environ:
            env[proxy] = os.environ[proxy]
    return _logged([*command, "sh", "-euc", script], log, env=env)


def _logged(command: list[str], log: Path, env: dict[str, str] | None = None) -> str:
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    with open(log, "a", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n{result.stdout}{result.stderr}\n({time.monotonic() - started:.0f} s)\n")
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-10:])
        raise PodiumError(f"{Path(command[0]).name} failed ({result.returncode}) building the root filesystem:\n{tail}")
    return result.stdout


def build_rootfs(spec: RootfsSpec, staging: Path, env_mount: str) -> tuple[str, ...]:
    """Build the root filesystem into ``staging/rootfs``; the lock (Debian packages, then each venv's)."""
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise PodiumError("building a root filesystem needs mmdebstrap. Fix: apt-get install mmdebstrap")
    rootfs = staging / "rootfs"
    log = staging / "build.log"
    staging.mkdir(parents=True, exist_ok=True)
    mirror = debian_mirror()
    print(f"  [rootfs] Debian {spec.suite} from {mirror} ({len(spec.debian_packages)} packages) ...", file=sys.stderr)
    _logged([tool, "--variant=minbase", f"--include={','.join(spec.debian_packages)}", "--aptopt=Acquire::Retries=3",
             spec.suite, str(rootfs), mirror], log)  # fmt: skip
    venvs: tuple[tuple[str, tuple[str, ...]], ...] = (
        ((spec.agent_venv, spec.agent_requirements),) if spec.agent_venv else ()
    )
    venvs += ((env_mount, spec.code_requirements),)
    print(f"  [rootfs] {', '.join(v for v, _ in venvs)}: Python packages with uv ...", file=sys.stderr)
    script = f"""
        {spec.python} -m venv /tmp/uv-venv
        /tmp/uv-venv/bin/pip install -q --disable-pip-version-check --target /tmp/uv '{UV}'
        export PYTHONPATH=
    """
    for venv, requirements in venvs:
        listed = " ".join(f"'{r}'" for r in requirements)
        script += f"""
        {spec.python} -m venv --without-pip {venv}
        /tmp/uv/bin/uv pip install --python {venv}/bin/python --cache-dir /tmp/uv-cache --link-mode copy {listed}
        {venv}/bin/python -m compileall -q -j 0 {venv} > /dev/null || true
        """
    prefixes = [env_mount]
    if spec.npm_prefix:
        print(f"  [rootfs] {spec.npm_prefix}: {', '.join(spec.npm_packages)} with npm ...", file=sys.stderr)
        listed = " ".join(f"'{p}'" for p in spec.npm_packages)
        script += f"""
        npm install --global --prefix {spec.npm_prefix} --no-fund --no-audit --no-update-notifier \\
          --cache /tmp/npm-cache {listed} >&2
        """
        prefixes.insert(0, spec.npm_prefix)
    script += _profile_script(prefixes)
    for venv, _ in venvs:
        script += f"/tmp/uv/bin/uv pip freeze --python {venv}/bin/python | sed 's|^|{venv} |'\n"
    if spec.npm_prefix:  # every installed Node package, dependencies (the platform binaries) too
        # one line a package, `PATH:NAME@VERSION` (an aliased platform binary: `NAME@npm:REAL@VERSION`), the prefix's
        # own root (`PREFIX/lib:lib@`) left out
        script += (f"npm ls --global --prefix {spec.npm_prefix} --all --parseable --long 2>/dev/null "
                   f"| sed -n -e '\\|^{spec.npm_prefix}/lib:|d' -e 's|^[^:]*:\\(.*\\)$|{spec.npm_prefix} \\1|p'\n")  # fmt: skip
    script += "dpkg-query -W -f 'deb ${Package}=${Version}\\n'\n"
    out = _inside(rootfs, script, log)
    kept = ("deb ", *(f"{v} " for v, _ in venvs), *((f"{spec.npm_prefix} ",) if spec.npm_prefix else ()))
    lock = [line for line in out.splitlines() if line.startswith(kept)]
    shutil.rmtree(rootfs / "var" / "cache" / "apt" / "archives", ignore_errors=True)
    (rootfs / "var" / "cache" / "apt" / "archives" / "partial").mkdir(parents=True, exist_ok=True)
    return tuple(sorted(lock, key=lambda line: (not line.startswith("deb "), line)))


def _profile_script(prefixes: list[str]) -> str:
    """Shell lines writing ``/etc/profile.d/podium-env.sh``: a login shell (``bash -lc``) gets the code
    environment's ``bin/`` (and the Node packages') first on ``PATH``, as the agent's own process has it."""
    folders = " ".join(f"{p}/bin" for p in prefixes)  # each goes in front: the last first
    return f"""
        cat > /etc/profile.d/podium-env.sh <<'PODIUM'
# podium: the code environment first on PATH in login shells too (Debian's /etc/profile resets PATH)
for folder in {folders}; do
  case ":$PATH:" in *":$folder:"*) ;; *) PATH="$folder:$PATH" ;; esac
done
export PATH
PODIUM
        """

"""An author's signature on a bundle's manifest: ``bundle create --sign KEY`` and ``bundle verify --signer FILE``.

The manifest holds the sha256 of every other member, so signing it signs the bundle. The signature is OpenSSH's
(``ssh-keygen -Y sign``, on every machine with OpenSSH 8.2 or later) in podium's own namespace
(:data:`NAMESPACE`), so a signature made for git, or for anything else, never passes for a bundle's. It lies in
the bundle as :data:`SIGNATURE`, after the manifest.

``ssh-keygen`` runs as a child process, never through a shell, with a timeout: the manifest goes by standard
input; the signature and the verifier's allowed signers file are copied, bounded, into a private temporary
folder first (a FIFO or a file that grows cannot hold the check up). What it prints back (the signer's
identity, the key's fingerprint) is the bundle's or the file's text: :func:`podium.untrusted.printable` is the
caller's to apply.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from podium.errors import UsageError
from podium.untrusted import printable, read_bounded, regular_size

__all__ = ["MAX_SIGNATURE", "NAMESPACE", "SIGNATURE", "Signed", "check_signature", "read_signers", "sign_manifest"]

#: The namespace every bundle signature is made in (``ssh-keygen -n``).
NAMESPACE = "podium-bundle"
#: The signature's name in the bundle, beside the manifest.
SIGNATURE = "manifest.json.sig"
#: The largest signature read from a bundle (an RSA-16384 one is under 6 KiB).
MAX_SIGNATURE = 64 << 10
_MAX_SIGNERS = 4 << 20
_SIGN_TIMEOUT_S = 120  # time to type a key's passphrase
_VERIFY_TIMEOUT_S = 30
_GOOD = re.compile(r'^Good "[^"]*" signature (?:for .* )?with (?P<key>\S+ key \S+)\s*$')


@dataclass(frozen=True)
class Signed:
    """A signature checked: ``signer`` (the identity the allowed signers file gives the key; raw text) and ``key``
    (its type and fingerprint), or ``problem`` (why it does not verify) with both None."""

    signer: str | None = None
    key: str | None = None
    problem: str | None = None


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise UsageError("signing needs ssh-keygen (OpenSSH 8.2 or later): apt-get install openssh-client")
    return found


def sign_manifest(manifest: bytes, key: Path) -> bytes:
    """The signature of ``manifest`` with the private key at ``key`` (or the public key of one an agent holds)."""
    if not key.is_file():
        raise UsageError(f"--sign {key}: no such key file; give an SSH private key (ssh-keygen -t ed25519 makes one)")
    command = [_ssh_keygen(), "-q", "-Y", "sign", "-f", str(key), "-n", NAMESPACE]
    try:
        done = subprocess.run(command, input=manifest, capture_output=True, timeout=_SIGN_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError(f"--sign {key}: ssh-keygen did not sign within {_SIGN_TIMEOUT_S} s") from None
    if done.returncode != 0 or not done.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"--sign {key}: ssh-keygen could not sign ({said[-1] if said else done.returncode})")
    return done.stdout


def read_signers(path: Path) -> bytes:
    """The allowed signers file at ``path`` (a regular file, bounded), read once: a FIFO or a huge file is refused
    here, before the bundle is read, never handed to ``ssh-keygen``."""
    size = regular_size(path)
    signers = read_bounded(path, _MAX_SIGNERS + 1) if size is not None else None
    if signers is None or len(signers) > _MAX_SIGNERS:
        raise UsageError(
            f"--signer {printable(str(path))}: not a regular file of at most {_MAX_SIGNERS >> 20} MiB; give an "
            "allowed signers file (lines of IDENTITY KEYTYPE KEY, as ssh-keygen(1) describes)"
        )
    return signers


def check_signature(manifest: bytes, signature: bytes, signers: bytes | None) -> Signed:
    """Whether ``signature`` is a signature of exactly ``manifest`` in :data:`NAMESPACE` by a key that ``signers``
    (an allowed signers file's bytes, :func:`read_signers`) lists (``ssh-keygen -Y find-principals``, then
    ``-Y verify`` as each identity it names). Without ``signers``, only whether it is a signature of the manifest
    by some key (``-Y check-novalidate``): the key is named, nobody is."""
    program = _ssh_keygen()
    with tempfile.TemporaryDirectory(prefix="podium-signature-") as folder:
        signature_file, signers_file = Path(folder) / "signature", Path(folder) / "allowed_signers"
        signature_file.write_bytes(signature)
        if signers is None:
            done = _run([program, "-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(signature_file)], manifest)
            key = _key(done)
            return Signed(key=key) if key is not None else Signed(problem=_NOT_THIS)
        signers_file.write_bytes(signers)
        common = ["-f", str(signers_file), "-n", NAMESPACE, "-s", str(signature_file)]
        found = _run([program, "-Y", "find-principals", *common], b"")
        if found is None:
            return Signed(problem=f"ssh-keygen did not answer within {_VERIFY_TIMEOUT_S} s")
        principals = [p for p in found.stdout.decode("utf-8", "replace").splitlines() if p.strip()]
        if found.returncode != 0 or not principals:
            return Signed(problem="its key is not one the allowed signers file lists (or the signature is not one)")
        for principal in principals[:8]:
            key = _key(_run([program, "-Y", "verify", "-I", principal, *common], manifest))
            if key is not None:
                return Signed(signer=principal, key=key)
        return Signed(problem=f"{_NOT_THIS} by a key the allowed signers file lets sign it")


_NOT_THIS = f"it does not verify: not a signature of this manifest in the namespace {NAMESPACE}"


def _key(done: subprocess.CompletedProcess[bytes] | None) -> str | None:
    """The key (type and fingerprint) of a signature ``ssh-keygen`` found good; None when it did not."""
    if done is None or done.returncode != 0:
        return None
    said = done.stdout.decode("utf-8", "replace").strip().splitlines()
    good = _GOOD.match(said[-1]) if said else None
    return good.group("key") if good else "a key ssh-keygen did not name"


def _run(command: list[str], data: bytes) -> subprocess.CompletedProcess[bytes] | None:
    try:
        return subprocess.run(command, input=data, capture_output=True, timeout=_VERIFY_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None

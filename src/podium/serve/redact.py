"""What a page must never show: API keys and other secrets, and where the private answers lie.

Everything the dashboard prints passes through one :class:`Redactor` (the templates' ``finalize`` and
the JSON endpoints), so a key that an agent printed into its log, or a path to the answers that a
grade's error names, is replaced before it leaves the server.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["PRIVATE", "SECRET", "Redactor", "secret_env_values"]

#: What a secret is replaced by.
SECRET = "[redacted]"
#: What a path into a competition's private answers is replaced by.
PRIVATE = "[private answers]"

#: Names of environment variables whose values are secrets.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL", re.IGNORECASE)
#: Values shorter than this are not treated as secrets (``1``, ``yes``: replacing them would garble every page).
_SHORTEST_SECRET = 8
_PATTERNS = (
    # provider keys: OpenAI/Anthropic/OpenRouter (sk-...), GitHub, Hugging Face, Google, AWS, Slack
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{16,}"),
    re.compile(r"\bhf_[A-Za-z0-9]{16,}"),
    re.compile(r"\bAIza[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bAKIA[A-Z0-9]{16}\b"),
    re.compile(r"\bxox[abpors]-[A-Za-z0-9\-]{10,}"),
    # "Authorization: Bearer X", "x-api-key: X"
    re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/=\-]{8,}"),
)
#: ``NAME=value`` / ``"name": "value"`` where the name says it is a secret.
_ASSIGNED = re.compile(
    r"""(?ix)
    \b([A-Z0-9_\-]*(?:key|token|secret|password|credential)[A-Z0-9_\-]*)   # the name
    (["']?\s*[:=]\s*["']?)                                                 # = or :, maybe quoted
    (?![0-9.]+\b)([^\s"',;}{]{8,})                                          # the value (not a number)
    """
)
#: A path into a prepared competition's answers (``DIR/ID/prepared/private/...``), with or without the rest.
_PRIVATE_PATH = re.compile(r"""[^\s"'<>:,;()\[\]]*/prepared/private(?:/[^\s"'<>:,;()\[\]]*)?""")


def secret_env_values(environ: Mapping[str, str] | None = None) -> list[str]:
    """The values of the environment variables named like secrets (``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ...)."""
    environ = os.environ if environ is None else environ
    return [v for k, v in environ.items() if _SECRET_NAME.search(k) and len(v) >= _SHORTEST_SECRET]


class Redactor:
    """Replaces secrets and private paths in text, and in every string of a JSON value."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted({s for s in secrets if len(s) >= _SHORTEST_SECRET}, key=len, reverse=True)
        self._literal = re.compile("|".join(map(re.escape, values))) if values else None

    @classmethod
    def from_environment(cls, extra: Iterable[str] = ()) -> Redactor:
        """Secrets from this process's environment, plus ``extra`` (the dashboard's own token)."""
        return cls([*secret_env_values(), *extra])

    def text(self, value: str) -> str:
        if self._literal is not None:
            value = self._literal.sub(SECRET, value)
        for pattern in _PATTERNS:
            value = pattern.sub(SECRET, value)
        value = _ASSIGNED.sub(lambda m: m.group(1) + m.group(2) + SECRET, value)
        return _PRIVATE_PATH.sub(PRIVATE, value)

    def secret_in(self, value: str) -> str | None:
        """The first certain secret in ``value`` (a known secret's value, a provider's key, a bearer token), by kind
        and position; None when there is none. ``NAME=value`` guesses and private paths are left to :meth:`text`:
        they mark what a page hides, not what a file may not hold."""
        found = self._literal.search(value) if self._literal is not None else None
        if found is not None:
            return f"the value of a secret environment variable at offset {found.start()}"
        for pattern in _PATTERNS:
            found = pattern.search(value)
            if found is not None:
                return f"a key or token ({found.group(0)[:4]}...) at offset {found.start()}"
        return None

    def value(self, value: Any) -> Any:
        """``value`` (JSON: dicts, lists, strings, numbers) with every string redacted, keys included."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

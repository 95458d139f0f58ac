"""Where familiarity's token probabilities come from: a local GGUF model or a server that scores prompts.

A :class:`TokenScorer` turns a text into the probability the model gave each of its actual tokens
given the tokens before it (the first token, which has nothing before it, has none):

- :class:`LlamaCppScorer`: a GGUF file through llama-cpp-python's Python API, created with
  ``logits_all=True`` so that one evaluation keeps the logits of every position; row ``i``'s softmax
  at token ``i + 1`` is that token's probability. (llama-cpp-python's *server* answers ``echo`` with
  logprobs shifted by one position, so it is not used for this.) A text longer than the context
  (``context`` tokens) is scored in consecutive windows that overlap by one token: the model's
  context restarts at each window.
- :class:`ServerScorer`: an OpenAI-compatible ``/v1/completions`` endpoint that returns prompt
  logprobs with ``echo: true, logprobs: 1`` (vLLM does; its ``token_logprobs[i]`` is token ``i``'s log
  probability given the tokens before it, ``None`` for the first). The prompt's entries are the first
  ``usage.prompt_tokens`` ones.

Each scorer has an ``identity``: what the cache keys its results by (the GGUF file's SHA-256 and the
context; for a server, its address, the model's name and what the server says of the model, its
``/v1/models`` entry less the fields that change from one asking to the next).

A server gets a key only when it is asked for (``api_key_env``: the variable that holds it) or when
its address is a known provider's (:data:`podium.agents.llm.PROVIDERS`: then that provider's
variable, e.g. ``OPENAI_API_KEY`` for ``https://api.openai.com``); any other address gets none.
"""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit

import numpy as np

from podium.agents.llm import PROVIDERS
from podium.errors import UsageError
from podium.untrusted import UntrustedJSONError, loads

__all__ = [
    "DEFAULT_CONTEXT",
    "LlamaCppScorer",
    "ServerScorer",
    "TokenScorer",
    "file_sha256",
    "known_key_variable",
    "next_token_probabilities",
]

#: Tokens per window of a local model (llama-cpp-python keeps ``context x vocabulary`` float32 logits:
#: 400 MB for SmolLM2's 49,152 tokens, 1 GB for a 128k vocabulary).
DEFAULT_CONTEXT = 2048
_INSTALL = (
    "--model-file needs llama-cpp-python, which is not installed: pip install llama-cpp-python "
    "(or pip install 'podium[familiarity]'; scripts/local_model.sh builds it into a virtual environment of its own)"
)


class TokenScorer(Protocol):
    """Scores a text with a model: the probability of each actual next token."""

    identity: str
    description: dict[str, Any]

    def token_probabilities(self, text: str, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        """The probability (float64) of each token of ``text`` after the first, given the tokens before it;
        ``progress(done, total)`` is told the tokens scored so far."""
        ...


def next_token_probabilities(logits: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Row ``i``'s softmax at ``targets[i]``: the probability of each actual next token (float64)."""
    rows = np.asarray(logits, dtype=np.float64)
    top = rows.max(axis=1, keepdims=True)
    log_norm = np.log(np.exp(rows - top).sum(axis=1)) + top[:, 0]
    return np.exp(rows[np.arange(len(targets)), targets] - log_norm)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file, read in 4 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(4 << 20):
            digest.update(block)
    return digest.hexdigest()


class LlamaCppScorer:
    """A GGUF model through llama-cpp-python (``logits_all=True``), ``context`` tokens a window."""

    def __init__(self, model_file: Path, *, context: int = DEFAULT_CONTEXT, threads: int | None = None) -> None:
        if not model_file.is_file():
            raise UsageError(f"--model-file {model_file}: no such file; give the path of a GGUF model file")
        try:
            import llama_cpp
        except ImportError:
            raise UsageError(_INSTALL) from None
        if context < 2:
            raise UsageError(f"--context {context}: a window needs at least 2 tokens")
        self.context = context
        self._llm = llama_cpp.Llama(
            model_path=str(model_file), logits_all=True, n_ctx=context, n_threads=threads, verbose=False
        )
        sha = file_sha256(model_file)
        self.identity = f"gguf-{sha}-ctx{context}"
        self.description = {
            "kind": "gguf",
            "file": str(model_file),
            "sha256": sha,
            "context": context,
            "engine": f"llama-cpp-python {llama_cpp.__version__} (Python API, logits_all=True)",
        }

    def tokens(self, text: str) -> list[int]:
        """The text's tokens as the model sees them (with its beginning-of-text token where it uses one)."""
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=True, special=False))

    def token_probabilities(self, text: str, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        tokens = self.tokens(text)
        out: list[np.ndarray] = []
        start = 0
        while start < len(tokens) - 1:
            window = tokens[start : start + self.context]
            self._llm.reset()
            self._llm.eval(window)
            logits = np.asarray(self._llm.scores[: len(window) - 1])
            out.append(next_token_probabilities(logits, np.asarray(window[1:])))
            start += len(window) - 1
            if progress is not None:
                progress(start, len(tokens) - 1)
        return np.concatenate(out) if out else np.zeros(0)


def _api_url(base_url: str, path: str) -> str:
    base = base_url.rstrip("/")
    return base + (f"/{path}" if base.endswith("/v1") else f"/v1/{path}")


#: Fields of a ``/v1/models`` entry that change from one asking to the next (vLLM gives ``created`` as the
#: time of the answer and fresh permission ids), left out of the cache's key.
_VOLATILE_MODEL_FIELDS = ("created", "permission")
_MODELS_BYTES = 8 << 20
_ANSWER_BYTES = 256 << 20  # a scored prompt: every token with its logprob, for documents up to the context


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is answered as the error it is: the key goes to the address named and to no other."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_NO_REDIRECTS = urllib.request.build_opener(_RefuseRedirects)


def known_key_variable(url: str) -> str | None:
    """The key variable of the known provider at ``url``'s address (scheme, host and port), if it is one's."""
    where = urlsplit(url)
    for provider in PROVIDERS.values():
        home = urlsplit(provider.base_url)
        if provider.auth == "bearer" and (where.scheme, where.netloc) == (home.scheme, home.netloc):
            return provider.api_key_env
    return None


class ServerScorer:
    """A server's prompt logprobs (OpenAI-compatible completions with ``echo`` and ``logprobs``; vLLM)."""

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = None, timeout_s: float = 600.0) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise UsageError(f"--base-url {base_url}: give an http:// or https:// address, e.g. http://127.0.0.1:8000")
        self.url = _api_url(base_url, "completions")
        self.model = model
        self.timeout_s = timeout_s
        self.key_variable = api_key_env or known_key_variable(self.url)
        self._key = os.environ.get(self.key_variable, "") if self.key_variable else ""
        if api_key_env and not self._key:
            raise UsageError(f"--api-key-env {api_key_env}: the variable is not set. Fix: export {api_key_env}=KEY")
        entry = self._model_entry(_api_url(base_url, "models"))
        said = json.dumps(entry, sort_keys=True) if entry is not None else "no /v1/models entry"
        self.identity = "server-" + hashlib.sha256("\n".join([self.url, model, said]).encode()).hexdigest()[:32]
        self.description = {
            "kind": "server",
            "url": self.url,
            "model": model,
            "model_entry": entry,
            "key": f"from {self.key_variable}" if self._key else "none",
            "engine": "OpenAI-compatible completions, echo=true, logprobs=1 (prompt logprobs, as vLLM returns them)",
        }

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def _model_entry(self, url: str) -> dict[str, Any] | None:
        """What the server's ``/v1/models`` says of the model (its volatile fields left out), or None where it
        lists no such model or does not answer."""
        request = urllib.request.Request(url, headers=self._headers(), method="GET")
        try:
            with _NO_REDIRECTS.open(request, timeout=min(self.timeout_s, 30.0)) as response:
                listed = loads(response.read(_MODELS_BYTES + 1), max_bytes=_MODELS_BYTES, what="/v1/models")
        except (urllib.error.URLError, OSError, ValueError):
            return None
        entries = listed.get("data") if isinstance(listed, dict) else None
        for entry in entries if isinstance(entries, list) else []:
            if isinstance(entry, dict) and entry.get("id") == self.model:
                return {k: v for k, v in entry.items() if k not in _VOLATILE_MODEL_FIELDS}
        return None

    def _ask(self, text: str) -> Mapping[str, Any]:
        body = {"model": self.model, "prompt": text, "max_tokens": 1, "temperature": 0, "echo": True, "logprobs": 1}
        request = urllib.request.Request(
            self.url, data=json.dumps(body).encode(), headers=self._headers(), method="POST"
        )
        try:
            with _NO_REDIRECTS.open(request, timeout=self.timeout_s) as response:
                answer: Mapping[str, Any] = loads(response.read(_ANSWER_BYTES + 1), max_bytes=_ANSWER_BYTES)
                return answer
        except urllib.error.HTTPError as exc:
            detail = exc.read(500).decode("utf-8", "replace").strip()
            raise UsageError(
                f"--base-url {self.url} answered HTTP {exc.code} ({detail}); the server must score prompts "
                "(echo with logprobs, e.g. vLLM) and hold the whole document in its context"
            ) from None
        except (urllib.error.URLError, OSError, UntrustedJSONError) as exc:
            raise UsageError(f"--base-url {self.url}: no answer ({exc}); is the server running there?") from None

    def token_probabilities(self, text: str, progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        answer = self._ask(text)
        try:
            logprobs = answer["choices"][0]["logprobs"]["token_logprobs"]
            prompt_tokens = int(answer["usage"]["prompt_tokens"])
        except (KeyError, IndexError, TypeError, ValueError):
            raise UsageError(
                f"--base-url {self.url}: the answer has no prompt logprobs (choices[0].logprobs.token_logprobs and "
                "usage.prompt_tokens); use a server that returns them with echo, e.g. vLLM"
            ) from None
        if len(logprobs) < prompt_tokens:
            raise UsageError(
                f"--base-url {self.url}: {len(logprobs)} logprobs for a prompt of {prompt_tokens} tokens: "
                "the server does not echo the prompt's logprobs"
            )
        scored = [float(v) for v in logprobs[:prompt_tokens] if v is not None]
        if progress is not None:
            progress(len(scored), len(scored))
        return np.exp(np.asarray(scored, dtype=np.float64))

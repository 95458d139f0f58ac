"""The harness-controlled path from a sandboxed agent to its LLM provider: a proxy on a Unix socket.

A sandbox has no network. An LLM-driven agent (AIDE, OpenHands, MLAgentBench, Claude Code, Codex,
our own) still needs its model, so each run gets one :class:`LLMProxy`: an HTTP server on a Unix
socket mounted into the sandbox at ``/home/llm.sock``. It

* forwards only to the one configured provider (its base URL is podium's, whatever the request says),
  and only the API paths that provider's completions use (``POST /v1/chat/completions``,
  ``/v1/messages``, ``/v1/responses`` and so on);
* adds the API key from podium's own environment: the agent never holds a key, so it cannot use
  it elsewhere or leak it into its logs;
* speaks the three wire formats, plain and streamed, one module each: chat completions
  (:mod:`~podium.services.llm.chat`), Anthropic messages (:mod:`~podium.services.llm.messages`) and
  OpenAI's Responses API (:mod:`~podium.services.llm.responses`), which it translates to chat
  completions for a provider that speaks only those (:mod:`~podium.services.llm.translate`);
* refuses models outside the configured list, and every call once the run's token, cost or request
  budget is spent (HTTP 429, with a message the agent can read), and ends a stream that passes the
  budget with the error event its format has;
* counts tokens from each answer's ``usage`` (:mod:`~podium.services.llm.accounting`), logs every call
  (time, path, model, status, tokens, cost, seconds) to ``llm_calls.jsonl`` in the run's folder, and
  keeps the full transcript of the calls, secrets redacted, in ``llm_transcript.jsonl`` beside it
  (:mod:`~podium.services.llm.transcript`, interface I1).

The token budget holds for parallel calls too: before a call is forwarded it *reserves* what it
may use, its request's size in bytes (no text has more tokens than bytes) plus its answer's cap
(``max_tokens``, ``max_completion_tokens`` or ``max_output_tokens``, times ``n``; a call that names
none is reserved ``max_tokens_per_call``, and when less than that is left, the cap that is left is
added to its request). A call is forwarded only when its reservation fits in what the budget has
left after the tokens used and the reservations of the calls in flight; otherwise it waits for the
calls in flight to finish, and is refused (429) if it does not fit even then. When its answer
returns, the reservation is replaced by the usage the answer reports (by the whole reservation if
a successful answer reports none). The cost budget works the same way in USD.

A stream is also *metered* while it passes: its input and output as its usage events report them
(Anthropic's ``message_start`` and ``message_delta``, OpenAI's usage chunk and ``response.completed``),
its output at least a token per :data:`~podium.services.llm.accounting.BYTES_PER_TOKEN` bytes of the text
it has streamed. A stream that goes past its reservation by more than the budget has left beside the
other calls is ended there, with the error event the agent's client understands (Anthropic's
``event: error``, Responses' ``response.failed``, an error chunk for chat), and charged what it was
metered at. So parallel calls never overshoot the budget together; it is exceeded only by what a call
uses beyond its reservation that no meter sees: a JSON answer (not streamed) longer than
``max_tokens_per_call`` to a call that named no cap while the budget was far from spent, input the
provider counts beyond the request's bytes (an image, a file it fetches by URL) in an answer that is
not streamed, or tokens the provider bills but does not stream (hidden reasoning) beyond a stream's cap.

A refused request is read to its end before the answer (or, when its length is unknown or over
the cap, after it, for a bounded time), so a client still sending its body never meets a closed
socket. A run whose forwarded calls all failed for the harness's reasons (the provider unreachable,
its key refused, its server failing) is told by :func:`model_failure` from the summary.
"""

from __future__ import annotations

from podium.services.llm.proxy import BRIDGE_PORT, MAX_ANSWER_BYTES, MAX_REQUEST_BYTES, LLMProxy, model_failure

__all__ = ["BRIDGE_PORT", "MAX_ANSWER_BYTES", "MAX_REQUEST_BYTES", "LLMProxy", "model_failure"]

"""What a call may ask of the provider: completions with the agent's own tools, nothing that reaches past the run.

A provider can browse, fetch, run code and call remote MCP servers on a caller's behalf (Anthropic's server tools
``web_search`` / ``web_fetch`` / ``code_execution``, ``mcp_servers``; the Responses API's ``web_search``,
``file_search``, ``mcp`` with a ``server_url``, ``code_interpreter``), read images and documents from a URL, and
keep state between calls (``previous_response_id``, ``conversation``, stored prompts, ``store``, ``background``,
uploaded files). Through podium's proxy any of these would be the internet around the sandbox's "no network",
fees podium never costed, and state the run's transcript cannot show. So each wire format has an allowlist:

* tools: only the agent's own, executed by the agent (a function tool; Anthropic's custom tools, which carry no
  ``type`` or ``type: custom``; the Responses API's ``function`` and ``custom``, and its ``namespace``, a group of
  such tools under one name, each checked); any other tool type is refused;
* content: text, and images or documents given inline (base64, or a data: URL); a file id is refused, and so is a
  URL anywhere in the body, in any field, however it is spelt (:mod:`~podium.services.llm.walk`);
* a ``tool_choice`` naming a tool of another type is refused, and so is any model name the body carries (``model``,
  OpenRouter's ``models`` fallback list, a ``model`` key anywhere) with OpenRouter's ``:online`` suffix (a web
  search on every call) or naming a stored ``@preset/``;
* content: nested content is checked too (a tool's output given as parts, a document given as content blocks);
* state: ``previous_response_id``, ``conversation``, a stored ``prompt`` (an object), ``background``,
  ``mcp_servers``, ``container``, ``item_reference`` input items, OpenAI's ``web_search_options`` and OpenRouter's
  ``plugins`` (web search, files fetched from a URL) and ``preset`` are refused, and ``store`` is forced false;
* headers: only :data:`FORWARDED_HEADERS` reach the provider, and of ``anthropic-beta`` only the features that
  change nothing outside the call (:data:`LOCAL_BETAS`); the agent's ``OpenAI-Organization``,
  ``X-Forwarded-*``, ``Accept-Encoding`` (a compressed answer the proxy could not meter) and the rest are dropped.

The same checks hold for every path a provider serves, legacy completions and embeddings too (whose ``prompt`` and
``input`` are text). A refusal is HTTP 400 naming the field and the fix (:func:`check_request`); it happens before
the budget is touched. Every check reads the request as hostile JSON: any shape is possible, none raises past a
refusal.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from podium.services.llm.accounting import Refused
from podium.services.llm.walk import walk_request

__all__ = ["FORWARDED_HEADERS", "LOCAL_BETAS", "check_request", "forwarded_headers"]

#: The request headers forwarded to the provider (lower case); every other header the agent sent is dropped.
FORWARDED_HEADERS = frozenset({"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta"})
#: ``anthropic-beta`` values forwarded (by prefix): features that change how the one call is served, never what
#: it reaches (no web, fetch, MCP, code execution, files or skills).
LOCAL_BETAS = (
    "prompt-caching-", "extended-cache-ttl-", "interleaved-thinking-", "fine-grained-tool-streaming-",
    "token-efficient-tools-", "token-counting-", "output-128k-", "context-1m-", "context-management-",
    "claude-code-", "effort-",
)  # fmt: skip
#: Top-level fields that keep state at the provider or reach past the call (OpenRouter's ``plugins``: web search,
#: files fetched from a URL; its ``preset``: stored settings, plugins among them), refused in every format.
_STATEFUL = ("previous_response_id", "conversation", "background", "mcp_servers", "container", "web_search_options",
             "plugins", "preset")  # fmt: skip
#: ``tool_choice`` types that name the agent's own tools or none (a server tool's type would turn it on).
_CHOICES = ("auto", "any", "none", "required", "tool", "function", "custom", "allowed_tools")
#: A model name suffix that has the provider search the web for the call (OpenRouter's ``:online``).
_WEB_SUFFIX = ":online"
#: A model name prefix that names settings stored at the provider (OpenRouter's presets, plugins among them).
_PRESET = "@preset/"
_FUNCTION_TOOLS = {"chat": ("function", "custom"), "responses": ("function", "custom"), "messages": ("custom",)}
#: Tool types that group the agent's own tools under a name (the Responses API's ``namespace``: Codex's sub-agent
#: tools); the tools inside are checked as tools, one level deep.
_GROUPS = {"responses": ("namespace",)}
_INLINE_SOURCES = ("base64", "text", "content")
_BLOCK_DEPTH = 3  # content blocks inside content blocks (a document in a tool result) deeper than this are refused  # Anthropic's image and document sources given in the request


def check_request(api: str, payload: dict[str, Any]) -> list[tuple[str, str]]:
    """Refuse (:class:`Refused`, 400) what ``payload`` asks of the provider beyond a completion with the agent's
    own tools, and force ``store`` false; ``api`` is ``chat``, ``messages``, ``responses``, or ``other`` for the
    paths that take no tools or content parts (legacy completions, embeddings). Returns every model name the
    request carries, with where it is (``model``, ``models[1]``), for the run's allowlist."""
    for key in _STATEFUL:
        if key in payload and payload[key] not in (None, False, "", []):  # {} turns web search on
            raise Refused(400, f"{key} is not allowed through podium's proxy: it keeps state or reaches past the "
                          "run at the provider. Fix: leave it out and send the whole conversation in the request",
                          field=key)  # fmt: skip
    prompt = payload.get("prompt")  # a stored prompt (the Responses API's); a legacy completion's prompt is text
    if isinstance(prompt, dict) or (api == "responses" and prompt not in (None, False, "", [])):
        raise Refused(400, "prompt names a prompt stored at the provider. Fix: send its text in the request",
                      field="prompt")  # fmt: skip
    if api == "responses" or (api == "chat" and "store" in payload):  # the Responses API stores by default
        payload["store"] = False
    _check_tools(api, payload.get("tools"))
    choice = payload.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") not in _CHOICES:
        raise Refused(400, f"tool_choice is of type {str(choice.get('type'))[:60]!r}, a tool the provider would run; "
                      f"only the agent's own tools may be chosen: {', '.join(_CHOICES)}", field="tool_choice")  # fmt: skip
    for where, part in _parts(api, payload):
        _check_part(api, where, part)
    names = walk_request(payload, tool_use=api == "messages")
    for where, name in names:
        plain = "".join(name.split()).lower()
        if _WEB_SUFFIX in plain or plain.startswith(_PRESET):
            why = f"has the provider search the web for the call ({_WEB_SUFFIX})" if _WEB_SUFFIX in plain else (
                f"names settings stored at the provider ({_PRESET})")  # fmt: skip
            raise Refused(400, f"{where} names the model {name[:80]!a}, which {why}. Fix: name the model "
                          f"without {_WEB_SUFFIX if _WEB_SUFFIX in plain else _PRESET}", field=where)  # fmt: skip
    return names


def _check_tools(api: str, tools: Any, where: str = "tools", grouped: bool = True) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise Refused(400, f"{where} must be a list of the agent's own function tools")
    allowed = _FUNCTION_TOOLS.get(api, ("function",))
    groups = _GROUPS.get(api, ()) if grouped else ()
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise Refused(400, f"{where}[{index}] is not an object")
        kind = tool.get("type", "custom" if api == "messages" else None)
        if kind in groups:
            _check_tools(api, tool.get("tools"), f"{where}[{index}].tools", grouped=False)
            continue
        if kind not in allowed:
            function = tool.get("function")
            name = tool.get("name") or (function.get("name") if isinstance(function, dict) else None)
            shown = f"{str(kind)[:60]!r}" + (f" ({str(name)[:60]!r})" if name else "")
            raise Refused(400, f"{where}[{index}] is of type {shown}, a tool the provider would run (the web, files, "
                          f"code, MCP servers); only the agent's own tools are allowed: {', '.join(allowed + groups)}")  # fmt: skip


def _parts(api: str, payload: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    """Every content part of the request's messages (or input items), with where it is, for the checks."""
    if api == "responses":
        given = payload.get("input")
        items = given if isinstance(given, list) else []
        for i, item in enumerate(items):
            if isinstance(item, dict) and item.get("type") == "item_reference":
                raise Refused(400, f"input[{i}] is an item_reference to state kept at the provider; send the item")
            for key in ("content", "output"):  # a message's parts; a tool's output given as parts
                parts = item.get(key) if isinstance(item, dict) else None
                for j, part in enumerate(parts if isinstance(parts, list) else []):
                    yield f"input[{i}].{key}[{j}]", part
        return
    messages = payload.get("messages")
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        content = message.get("content") if isinstance(message, dict) else None
        yield from _blocks(f"messages[{i}].content", content, 0)


def _blocks(where: str, content: Any, depth: int) -> Iterator[tuple[str, Any]]:
    """A message's content blocks and the blocks inside them (a tool result's, a document's given as content)."""
    if not isinstance(content, list):
        return
    if depth > _BLOCK_DEPTH:
        raise Refused(400, f"{where} nests content blocks over {_BLOCK_DEPTH} deep")
    for j, part in enumerate(content):
        yield f"{where}[{j}]", part
        if not isinstance(part, dict):
            continue
        source = part.get("source")
        if part.get("type") == "tool_result":
            yield from _blocks(f"{where}[{j}].content", part.get("content"), depth + 1)
        elif isinstance(source, dict) and source.get("type") == "content":
            yield from _blocks(f"{where}[{j}].source.content", source.get("content"), depth + 1)


def _check_part(api: str, where: str, part: Any) -> None:
    if not isinstance(part, dict):
        return
    kind = part.get("type")
    if api == "messages":
        if kind in ("image", "document", "search_result", "container_upload"):
            source = part.get("source")
            source_type = source.get("type") if isinstance(source, dict) else None
            if kind in ("search_result", "container_upload") or source_type not in _INLINE_SOURCES:
                raise Refused(400, f"{where} is a {kind} from {str(source_type)[:40]!r}: the provider would fetch "
                              "it or read it from its own storage. Fix: give it inline (base64)")  # fmt: skip
        elif kind in ("server_tool_use", "mcp_tool_use", "web_search_tool_result", "web_fetch_tool_result"):
            raise Refused(400, f"{where} is a {kind} block of a tool the provider runs; only the agent's own tools")
        return
    if kind in ("input_image", "input_file") and part.get("file_id"):  # responses
        raise Refused(400, f"{where} names a file id kept at the provider. Fix: give the file inline")
    file = part.get("file") if kind == "file" else None  # chat
    if isinstance(file, dict) and file.get("file_id"):
        raise Refused(400, f"{where} names a file id kept at the provider. Fix: give the file inline")


def forwarded_headers(headers: Any) -> tuple[dict[str, str], list[str]]:
    """The agent's request headers that reach the provider (:data:`FORWARDED_HEADERS`, ``anthropic-beta`` cut to
    :data:`LOCAL_BETAS`), and the names (and betas) dropped, for the call's log."""
    kept: dict[str, str] = {}
    dropped: list[str] = []
    for key, value in headers.items():
        name = key.lower()
        if name not in FORWARDED_HEADERS:
            dropped.append(name)
            continue
        if name == "anthropic-beta":
            betas = [b.strip() for b in value.split(",") if b.strip()]
            local = [b for b in betas if b.startswith(LOCAL_BETAS)]
            dropped += [f"anthropic-beta:{b[:60]}" for b in betas if b not in local]
            if not local:
                continue
            value = ",".join(local)
        kept[key] = value
    return kept, dropped

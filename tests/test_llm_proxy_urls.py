"""The proxy lets no provider fetch or search the web for the agent (issue 41 §3): a URL is refused in any field of
any wire format however it is spelt, every model name a body carries is checked (OpenRouter's ``models`` fallback
list too), and legacy completions and embeddings go through the same policy; the agents' own traffic (text that
starts with a URL, a model's tool call holding one, a JSON schema's ``$schema``, audio and images inline) still
goes through, and the upstream receives exactly what was checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from podium.services import LLMProxy
from podium.testing import Fail, Reply, ScriptedLLM
from test_llm_proxy import KEY, _post, _scripted, _UnixConnection, short_dir  # noqa: F401  (fixture)

OTHER_PATHS = ("/v1/embeddings", "/v1/completions")
#: One URL, spelt as an attacker would spell it to get past a check that a URL parser or fetcher then undoes.
SPELLINGS = [
    "https://example.com/a.pdf", "HTTPS://EXAMPLE.COM/a.pdf", "  https://example.com/a", "\thttps://example.com/a",
    "ht\ttps://example.com/a", "h\nttp://example.com/a", "\x00https://example.com/a", "\u200bhttps://example.com/a",
    "\ufeffhttp://example.com/a", "\u00a0https://example.com/a", "\uff48\uff54\uff54\uff50\uff53://example.com/a",
    "//example.com/a.pdf", "\\\\example.com\\a.pdf", "http:example.com/a", "https:\\\\example.com\\a",
    "ftp://example.com/a", "ws://example.com/a", "wss://example.com/a", "file:///etc/passwd", "file:/etc/passwd",
    "gs://bucket/object", "s3://bucket/key", "hf://datasets/x", "git+https://example.com/r.git",
]  # fmt: skip


def _post_bytes(sock: Path, path: str, body: bytes) -> tuple[int, bytes]:
    connection = _UnixConnection(sock)
    connection.request("POST", path, body=body, headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, data


def _file_part(data: str) -> dict[str, Any]:
    return {"type": "file", "file": {"filename": "a.pdf", "file_data": data}}


def test_a_chat_file_whose_file_data_is_a_url_never_reaches_openrouter_however_it_is_spelt(short_dir):  # noqa: F811
    """The issue's first case: OpenRouter's PDF input fetches a URL given as ``file_data``."""
    with ScriptedLLM([Reply("never")]) as model:
        with LLMProxy(_scripted(model, "openrouter"), short_dir / "p.sock", short_dir / "p.jsonl", KEY) as proxy:
            answers = []
            for url in SPELLINGS:
                content = [{"type": "text", "text": "summarise this"}, _file_part(url)]
                ask = {"model": "scripted", "messages": [{"role": "user", "content": content}]}
                answers.append(_post(short_dir / "p.sock", "/v1/chat/completions", ask))
            summary = proxy.summary()
        assert model.requests == []
    for url, (status, body) in zip(SPELLINGS, answers, strict=True):
        assert status == 400, (url, body)
        error = json.loads(body)["error"]
        assert error["param"] == "messages[0].content[1].file.file_data", url
        assert "messages[0].content[1].file.file_data" in error["message"] and "\n" not in error["message"]
    assert summary["refused"] == len(SPELLINGS) and summary["calls"] == 0
    logged = [json.loads(line) for line in (short_dir / "p.jsonl").read_text().splitlines()]
    assert [line["status"] for line in logged] == [400] * len(SPELLINGS)


MODEL_NAMES = [
    # (the request's extra fields, what the refusal names)
    ({"models": ["scripted:online"]}, "models[0]"),  # the second case: a fallback list naming the web suffix
    ({"models": ["scripted", "openai/gpt-4o:ONLINE"]}, "models[1]"),
    ({"models": "scripted:online"}, "models"),
    ({"models": [["scripted:online"]]}, "models[0][0]"),
    ({"models": [{"id": "scripted:online"}]}, "models[0]"),
    ({"model": "scripted:online "}, ":online"),
    ({"model": "openai/gpt-4o:online:nitro"}, ":online"),
    ({"model": "@preset/my-web-search"}, "@preset/"),
    ({"preset": "my-web-search"}, "preset"),
    ({"provider": {"order": ["openai"]}, "route": "fallback", "x_route": {"model": "scripted:online"}}, "x_route.model"),
]  # fmt: skip


def test_a_fallback_list_names_only_allowed_models_and_its_aliases_are_rewritten(short_dir):  # noqa: F811
    with ScriptedLLM([Reply("one"), Reply("two")]) as model:
        config = _scripted(model, "openrouter", models=("cheap", "scripted"), aliases={"cheap": "vendor/cheap-1"})
        with LLMProxy(config, short_dir / "p.sock", short_dir / "p.jsonl", KEY) as proxy:
            base = {"model": "scripted", "messages": [{"role": "user", "content": "hi"}]}
            refused = _post(short_dir / "p.sock", "/v1/chat/completions", {**base, "models": ["cheap", "pricey"]})
            allowed = _post(short_dir / "p.sock", "/v1/chat/completions", {**base, "models": ["cheap", "scripted"]})
            odd = _post(short_dir / "p.sock", "/v1/chat/completions", {**base, "models": [["cheap"], 7, None]})
            summary = proxy.summary()
        assert [r["body"]["models"] for r in model.requests] == [["vendor/cheap-1", "scripted"], [["cheap"], 7, None]]
    assert refused[0] == 403 and "models[1]" in json.loads(refused[1])["error"]["message"], refused
    assert "'pricey'" in json.loads(refused[1])["error"]["message"]
    assert allowed[0] == 200 and odd[0] == 200 and summary["refused"] == 1  # odd shapes are the provider's to refuse


URL_PLACES = [
    # (path, the request's extra fields, what the refusal names)
    *[("/v1/chat/completions", extra, named) for extra, named in MODEL_NAMES],
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "file", "file": {"file_url": "https://example.com/a.pdf"}}]}]}, "messages[0].content[0].file.file_url"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "video_url", "video_url": {"url": "https://example.com/v.mp4"}}]}]}, "video_url.url"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "https://example.com/a.mp3", "format": "mp3"}}]}]},
     "input_audio.data"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "example.com/a.png"}}]}]}, "image_url.url"),
    ("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": "//example.com/a.png"}]}]}, "messages[0].content[0].image_url"),
    ("/v1/chat/completions", {"messages": [{"role": "assistant", "content": "ok", "annotations": [
        {"type": "url_citation", "url_citation": {"url": "https://example.com"}}]}]}, "url_citation.url"),
    ("/v1/chat/completions", {"x_vendor": {"deep": [{"where": ["https://example.com/x"]}]}},
     "x_vendor.deep[0].where[0]"),
    ("/v1/chat/completions", {"x_vendor": {"fileUri": "example.com/a.pdf"}}, "x_vendor.fileUri"),
    ("/v1/chat/completions", {"\x1b[2J\nsource": "https://example.com"}, "['\\x1b[2J\\nsource']"),
    ("/v1/chat/completions", {"tools": [{"type": "function", "function": {"name": "f", "parameters": {
        "$ref": "https://example.com/schema.json"}}}]}, "tools[0].function.parameters.$ref"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [
        {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}]}]},
     "messages[0].content[0]"),
    ("/v1/messages", {"messages": [{"role": "user", "content": [{"type": "text", "text": "see", "citations": [
        {"type": "web_search_result_location", "url": "https://example.com"}]}]}]}, "citations[0].url"),
    ("/v1/messages", {"metadata": {"user_id": "https://example.com/track"}}, "metadata.user_id"),
    ("/v1/responses", {"input": [{"role": "user", "content": [
        {"type": "input_file", "file_url": "https://example.com/a.pdf"}]}]}, "input[0].content[0].file_url"),
    ("/v1/responses", {"input": [{"role": "user", "content": [
        {"type": "input_file", "filename": "a.pdf", "file_data": "https://example.com/a.pdf"}]}]}, "file_data"),
    ("/v1/responses", {"input": [{"role": "user", "content": [
        {"type": "input_image", "image_url": "\\\\example.com\\a.png"}]}]}, "input[0].content[0].image_url"),
    ("/v1/responses", {"input": [{"type": "computer_call_output", "call_id": "c", "output": {
        "type": "computer_screenshot", "image_url": "https://example.com/s.png"}}]}, "input[0].output.image_url"),
    ("/v1/responses", {"text": {"format": {"type": "json_schema", "name": "x", "schema": {
        "type": "object", "$id": "https://example.com/s.json"}}}}, "text.format.schema.$id"),
    *[(path, extra, named) for path in OTHER_PATHS for extra, named in [
        ({"x_fetch": {"url": "https://example.com/a"}}, "x_fetch.url"),
        ({"plugins": [{"id": "web"}]}, "plugins"),
        ({"web_search_options": {}}, "web_search_options"),
        ({"models": ["m:online"]}, "models[0]"),
    ]],
]  # fmt: skip


_ASKS = {"/v1/chat/completions": {"messages": [{"role": "user", "content": "hi"}]}, "/v1/responses": {"input": "hi"},
         "/v1/messages": {"messages": [{"role": "user", "content": "hi"}]}, "/v1/embeddings": {"input": "hi"},
         "/v1/completions": {"prompt": "hi"}}  # fmt: skip


@pytest.mark.parametrize(
    ("path", "extra", "named"), URL_PLACES, ids=[f"{p.removeprefix('/v1/')}-{n}" for p, _, n in URL_PLACES]
)
def test_no_url_or_web_search_model_in_any_wire_format_reaches_the_provider(short_dir, path, extra, named):  # noqa: F811
    provider = {"/v1/messages": "anthropic", "/v1/chat/completions": "openrouter"}.get(path, "openai")
    base = {"model": "m", "max_tokens": 10, **_ASKS[path]}
    with ScriptedLLM([Fail(501, "never")], apis=tuple(_ASKS)) as model:
        with LLMProxy(_scripted(model, provider), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            status, body = _post(short_dir / "p.sock", path, {**base, **extra})
        assert model.requests == []
    assert status == 400, body
    answer = json.loads(body)
    message = answer["error"]["message"]
    assert named in message and "\n" not in message and "\x1b" not in message and message.isascii()
    assert answer.get("type") == ("error" if path == "/v1/messages" else None)  # each format's own error shape


@pytest.mark.parametrize("path", OTHER_PATHS)
def test_legacy_completions_and_embeddings_are_checked_and_still_served(short_dir, path):  # noqa: F811
    """Both were forwarded unchecked; an agent that embeds its texts (a URL among them) or completes a prompt that
    starts with one keeps working."""
    text = "https://www.kaggle.com/competitions/titanic is the page"
    ask = {"model": "m", "input": [text, "plain words"]} if path == "/v1/embeddings" else {"model": "m", "prompt": text}
    with ScriptedLLM([Fail(501, "scripted: no such answer")], apis=OTHER_PATHS) as model:
        config = _scripted(model, "openai", models=("m",))
        with LLMProxy(config, short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            refused = _post(short_dir / "p.sock", path, {**ask, "x": {"image_url": "https://example.com/a.png"}})
            other_model = _post(short_dir / "p.sock", path, {**ask, "models": ["m", "other"]})
            served = _post(short_dir / "p.sock", path, ask)
        assert [r["body"] for r in model.requests] == [{**ask, **({"max_tokens": 16384} if "prompt" in ask else {})}]
    assert refused[0] == 400 and "x.image_url" in json.loads(refused[1])["error"]["message"]
    assert other_model[0] == 403 and "models[1]" in json.loads(other_model[1])["error"]["message"]
    assert served[0] == 501  # the provider's own answer, passed on


def test_json_escapes_and_duplicate_keys_cannot_hide_a_field(short_dir):  # noqa: F811
    """The upstream gets the body as it was checked (parsed once, sent again), whatever the client spelt."""
    bodies = [
        rb'{"model": "scripted", "messages": [], "mo\u0064els": ["scripted:online"]}',
        rb'{"model": "scripted", "messages": [], "models": ["scripted"], "models": ["scripted:online"]}',
        rb'{"model": "scripted", "messages": [{"role": "user", "content": [{"type": "file", "file": '
        rb'{"file_data": "\u0068ttps://example.com/a.pdf"}}]}]}',
        rb'{"model": "scripted", "messages": [], "x": "\ud800https://example.com/\udcff"}',
    ]
    later = rb'{"model": "scripted", "messages": [], "models": ["scripted:online"], "models": ["scripted"]}'
    with ScriptedLLM([Reply("one")]) as model:
        with LLMProxy(_scripted(model, "openrouter"), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            statuses = [_post_bytes(short_dir / "p.sock", "/v1/chat/completions", body)[0] for body in bodies]
            kept = _post_bytes(short_dir / "p.sock", "/v1/chat/completions", later)
        assert [r["body"].get("models") for r in model.requests] == [["scripted"]]  # only the last key counts
    assert statuses == [400, 400, 400, 400] and kept[0] == 200
    logged = (short_dir / "p.jsonl").read_text().splitlines()
    assert len(logged) == 5 and all(json.loads(line) for line in logged)


def test_a_url_deep_in_a_body_at_the_caps_is_found(short_dir):  # noqa: F811
    deep: Any = "https://example.com/deep"
    for _ in range(48):  # 97 levels deep, within the 100 parsed
        deep = {"x": [deep]}
    wide = {"x": ["plain"] * 300_000 + ["//example.com/wide"]}
    with ScriptedLLM([Reply("never")]) as model:
        with LLMProxy(_scripted(model), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            nested = _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m", "messages": [], "d": deep})
            many = _post(short_dir / "p.sock", "/v1/chat/completions", {"model": "m", "messages": [], "w": wide})
        assert model.requests == []
    assert nested[0] == 400 and b"d.x[0].x[0]" in nested[1] and b"https://example.com/deep" in nested[1]
    assert many[0] == 400 and b"w.x[300000]" in many[1]


_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGBgAAAABQABpfZFQAAAAABJRU5ErkJggg=="
_MP3 = "//uQxAAAAAAAAAAAAAAAAAAAAAAASW5mbwAAAA8AAAACAAACcQCA"  # a raw MP3 frame's base64 starts with //
_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "additionalProperties": False,
           "properties": {"command": {"type": "string", "description": "e.g. curl https://example.com"},
                          "model": {"type": "string", "enum": ["xgboost", "lightgbm"]},
                          "mirror": {"type": "string", "default": "https://pypi.org/simple",  # examples, not fetched
                                     "examples": ["http://127.0.0.1:8080"], "enum": ["https://a.org", "//b"]}}}  # fmt: skip
#: Requests shaped as the agents send them (Claude Code's Messages, Codex's Responses, OpenHands' and AIDE's chat):
#: text and tool output that start with a URL, the model's own tool calls holding one, JSON schemas, inline media.
AGENTS_TRAFFIC = [
    ("anthropic", "/v1/messages", {
        "model": "m", "max_tokens": 100, "stream": False, "metadata": {"user_id": "user_abc_account__session_1"},
        "system": [{"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Bash", "description": "Run https://-free commands", "input_schema": _SCHEMA}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "https://www.kaggle.com/c/titanic: do it"}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "fetch it?", "signature": "EqQBCkYIBxgCKkD//+/x"},
                {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                 "input": {"command": "curl https://example.com", "url": "https://example.com", "model": "x"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "https://example.com: no network"},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [
                    {"type": "text", "text": "//example.com"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": _PNG}}]}]}]}),
    ("openai", "/v1/responses", {
        "model": "m", "instructions": "You are Codex.", "stream": False, "store": False, "tool_choice": "auto",
        "parallel_tool_calls": False, "reasoning": {"effort": "medium", "summary": "auto"},
        "include": ["reasoning.encrypted_content"], "prompt_cache_key": "0b7c7a3e-2a49-4c9f-9d8e-1f7d3c2b1a00",
        "tools": [{"type": "function", "name": "shell", "strict": False, "parameters": _SCHEMA},
                  {"type": "custom", "name": "apply_patch", "description": "patch",
                   "format": {"type": "grammar", "syntax": "lark", "definition": "// a comment\nstart: \"x\""}}],
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "https://x.org first"}]},
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "//"}], "encrypted_content": "gAAA//"},
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{\"url\": \"https://x\"}"},
            {"type": "function_call_output", "call_id": "c1", "output": "https://example.com/a: refused"},
            {"type": "custom_tool_call", "call_id": "c2", "name": "apply_patch", "input": "https://x"},
            {"type": "custom_tool_call_output", "call_id": "c2", "output": "done"},
            {"type": "message", "role": "user", "content": [
                {"type": "input_image", "image_url": f"data:image/png;base64,{_PNG}"}]}]}),
    ("openrouter", "/v1/chat/completions", {
        "model": "m", "max_tokens": 100, "temperature": 0, "stop": ["https://"],
        "tools": [{"type": "function", "function": {"name": "execute_bash", "description": "bash",
                                                    "parameters": _SCHEMA}}],
        "tool_choice": {"type": "function", "function": {"name": "execute_bash"}},
        "messages": [
            {"role": "system", "content": "https://docs.all-hands.dev says hi"},
            {"role": "user", "content": [{"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
                                         {"type": "image_url", "image_url": {"url": f"DATA:image/png;base64,{_PNG}"}},
                                         {"type": "input_audio", "input_audio": {"data": _MP3, "format": "mp3"}},
                                         _file_part(f"data:application/pdf;base64,{_PNG}"), _file_part(_PNG)]},
            {"role": "assistant", "content": None, "reasoning": "https://", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "execute_bash",
                                                              "arguments": "{\"command\": \"wget https://x\"}"}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "https://x: Temporary failure in name resolution"}]}),
]  # fmt: skip


@pytest.mark.parametrize(("provider", "path", "ask"), AGENTS_TRAFFIC, ids=[p for _, p, _ in AGENTS_TRAFFIC])
def test_the_agents_own_traffic_still_goes_through_as_it_was_sent(short_dir, provider, path, ask):  # noqa: F811
    with ScriptedLLM([Reply("fine")]) as model:
        with LLMProxy(_scripted(model, provider), short_dir / "p.sock", short_dir / "p.jsonl", KEY):
            status, body = _post(short_dir / "p.sock", path, ask)
        assert status == 200, body
        assert len(model.requests) == 1
        sent = model.requests[0]["body"]
    assert {k: v for k, v in sent.items() if k != "max_output_tokens"} == ask  # the cap the proxy adds aside

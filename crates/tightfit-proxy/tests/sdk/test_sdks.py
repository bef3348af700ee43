"""``tightfit serve`` as the real clients meet it: the pinned ``openai`` and ``anthropic`` SDKs
pointed at the proxy through ``base_url``, a fake upstream behind it (conftest.py).

The Rust tests check the proxy's wire behaviour with a Rust client; these check that what
people actually run against it -- the SDKs with their own headers, serialisation, stream
parsers and error classes -- sees an ordinary API: fitted requests still valid for the
provider, answers and streams unchanged to the byte, errors raised as the SDK's own
exceptions. Retries are off (``max_retries=0``) so every request is seen exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import httpx2
import openai
import pytest

# the model names the tests use are the corpus's; the SDK's notice of their retirement is noise
pytestmark = pytest.mark.filterwarnings("ignore:The model .* is deprecated:DeprecationWarning")

# the shared corpus: a sibling folder of the repository
CORPUS = Path(__file__).resolve().parents[5] / "shared"


def longest(file: str) -> dict:
    """The record of a corpus file (``data/...``, ``data2/...``) with the most messages."""
    path = CORPUS / file
    assert path.is_file(), f"the shared corpus is missing {path}"
    with open(path, encoding="utf-8") as f:
        records = [json.loads(line) for line in f if line.strip()]
    return max(records, key=lambda r: len(r["messages"]))


def nth(file: str, line: int) -> dict:
    """Record `line` (0-based) of a corpus file."""
    with open(CORPUS / file, encoding="utf-8") as f:
        for i, text in enumerate(f):
            if i == line:
                return json.loads(text)
    raise AssertionError(f"{file} has no line {line}")


def turns(messages: list[dict]) -> list[list[dict]]:
    """An agent loop's requests: one before each assistant message, holding all before it."""
    return [messages[:i] for i in range(1, len(messages)) if messages[i]["role"] == "assistant"]


def openai_client(proxy, transport=None) -> openai.OpenAI:
    http_client = httpx2.Client(transport=transport) if transport else None
    return openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0, http_client=http_client)


def anthropic_client(proxy, transport=None) -> anthropic.Anthropic:
    http_client = httpx2.Client(transport=transport) if transport else None
    return anthropic.Anthropic(base_url=proxy.url, api_key="sk-ant-test", max_retries=0, http_client=http_client)


def openai_pairing_problems(messages: list[dict]) -> list[str]:
    """Where a tool call is split from its result: a call without its tool message in the run
    of tool messages right after it, or a tool message that answers no call of the assistant
    message it follows. OpenAI rejects either."""
    problems, pending = [], set()
    for i, message in enumerate(messages):
        if message["role"] == "tool":
            if message.get("tool_call_id") not in pending:
                problems.append(f"messages[{i}]: a result for {message.get('tool_call_id')!r}, not called before")
            pending.discard(message.get("tool_call_id"))
            continue
        if pending:
            problems.append(f"messages[{i}]: the calls {sorted(pending)} got no result")
        calls = (message.get("tool_calls") or []) if message["role"] == "assistant" else []
        pending = {call["id"] for call in calls}
    if pending:
        problems.append(f"the end: the calls {sorted(pending)} got no result")
    return problems


def blocks(message: dict, kind: str) -> list[dict]:
    content = message["content"]
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def anthropic_pairing_problems(messages: list[dict]) -> list[str]:
    """Where a tool_use is split from its tool_result: a tool_use whose result is not in the
    next (user) message, or a tool_result whose tool_use is not in the message before it.
    Anthropic rejects either."""
    problems = []
    for i, message in enumerate(messages):
        uses = {b["id"] for b in blocks(message, "tool_use")}
        if uses:
            after = messages[i + 1] if i + 1 < len(messages) else None
            answered = {b["tool_use_id"] for b in blocks(after, "tool_result")} if after else set()
            if after is None or after["role"] != "user" or not uses <= answered:
                problems.append(f"messages[{i}]: the tool_use {sorted(uses - answered)} have no result next")
        results = {b["tool_use_id"] for b in blocks(message, "tool_result")}
        if results:
            before = messages[i - 1] if i else None
            called = {b["id"] for b in blocks(before, "tool_use")} if before else set()
            if message["role"] != "user" or not before or before["role"] != "assistant" or not results <= called:
                problems.append(f"messages[{i}]: the tool_result {sorted(results - called)} follow no tool_use")
    return problems


def prefix_reuse(forwarded: list[list[dict]]) -> float:
    """How stable the cut is: the share of each forwarded request's messages that the next one
    repeats as its prefix (what a provider's prompt cache can reuse), averaged over turns."""
    shares = []
    for earlier, later in zip(forwarded, forwarded[1:]):
        common = 0
        for a, b in zip(earlier, later):
            if a != b:
                break
            common += 1
        shares.append(common / len(earlier))
    return sum(shares) / len(shares)


def check_fitted(name: str, proxy, forwarded: list[list[dict]], headers: list, problems) -> None:
    """What every agent loop under a cap must show: each forwarded request valid (`problems`
    finds nothing) and within the cap, and at least one compaction, epochs never going back."""
    for i, (messages, h) in enumerate(zip(forwarded, headers)):
        assert problems(messages) == [], f"{name} turn {i}"
        after = int(h["x-tightfit-tokens-after"])
        assert after <= proxy.cap, f"{name} turn {i}: {after} tokens forwarded, cap {proxy.cap}"
    epochs = [int(h["x-tightfit-epoch"]) for h in headers]
    assert epochs[0] == 0 and epochs[-1] >= 1, f"{name}: no compaction under the cap: epochs {epochs}"
    assert epochs == sorted(epochs), f"{name}: epochs went back: {epochs}"


def check_stable(name: str, forwarded: list[list[dict]]) -> None:
    """A long loop's cut stays put between compactions: nearly every turn repeats the previous
    request as its prefix (so the provider's prompt cache keeps hitting)."""
    reuse = prefix_reuse(forwarded)
    assert reuse >= 0.9, f"{name}: prefix reuse {reuse:.3f} across {len(forwarded)} turns"


def test_an_openai_agent_loop_is_fitted_valid_within_the_cap_and_keeps_its_cut(start_proxy):
    """300 turns of a real SWE-agent loop (mini-swe-agent's DeepSeek trajectories back to back,
    250k tokens in all) through ``chat.completions``: the upstream gets valid JSON whose tool
    calls keep their results, within the cap, cut rarely and stably; the SDK gets the
    upstream's completion back to the byte."""
    proxy = start_proxy(cap=16_000)
    client = openai_client(proxy)
    record = nth("data/extreme_long.jsonl", 1)
    assert record["id"] == "concat/mini-swe-deepseek/250k"
    forwarded, headers = [], []
    for i, messages in enumerate(turns(record["messages"])[:300]):
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages)
        assert len(proxy.upstream.received) == i + 1, f"turn {i}: one request upstream per turn"
        body = proxy.upstream.last().json()
        assert body["model"] == "gpt-4o"
        sent = proxy.upstream.sent[-1]
        assert raw.http_response.content == sent, f"turn {i}: the completion changed on the way back"
        completion = raw.parse()
        assert completion.choices[0].message.content == json.loads(sent)["choices"][0]["message"]["content"]
        forwarded.append(body["messages"])
        headers.append(raw.headers)
    assert len(forwarded) == 300
    check_fitted("openai", proxy, forwarded, headers, openai_pairing_problems)
    check_stable("openai", forwarded)


def run_anthropic_loop(proxy, record: dict) -> tuple[list[list[dict]], list]:
    """Drives every turn of `record` through ``messages.create``; returns what the upstream
    received (messages per turn) and the response headers, checking each answer came back to
    the byte."""
    client = anthropic_client(proxy)
    system = {"system": record["system"]} if record.get("system") is not None else {}
    forwarded, headers = [], []
    for i, messages in enumerate(turns(record["messages"])):
        raw = client.messages.with_raw_response.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, **system
        )
        assert len(proxy.upstream.received) == i + 1, f"turn {i}: one request upstream per turn"
        body = proxy.upstream.last().json()
        assert (body["model"], body["max_tokens"]) == ("claude-sonnet-4-5", 1024)
        sent = proxy.upstream.sent[-1]
        assert raw.http_response.content == sent, f"turn {i}: the message changed on the way back"
        assert raw.parse().content[0].text == json.loads(sent)["content"][0]["text"]
        forwarded.append(body["messages"])
        headers.append(raw.headers)
    return forwarded, headers


def test_an_anthropic_agent_loop_keeps_every_tool_use_with_its_result(start_proxy):
    """A real Claude Code session through ``messages.create`` under a tight cap: each tool_use
    the upstream receives has its tool_result in the next user message, within the cap, with
    a stable cut."""
    proxy = start_proxy(cap=8_000)
    record = longest("data2/agent_claude_code_sessions_anthropic.jsonl")
    forwarded, headers = run_anthropic_loop(proxy, record)
    check_fitted("claude code", proxy, forwarded, headers, anthropic_pairing_problems)
    check_stable("claude code", forwarded)


def test_thinking_blocks_reach_the_upstream_byte_identical(start_proxy):
    """200 turns of tau2 airline runs by Claude 4.5 with signed thinking blocks (24 runs back
    to back), fitted under a cap: a thinking block is only valid with its signature over its
    exact text, so every one forwarded must be one of the input's, unchanged (compared as
    serialised JSON: same keys, order and values)."""
    # the newest turn alone (its tool turn's signed thinking kept whole) reaches 7k tokens
    proxy = start_proxy(cap=12_000)
    record = nth("data2/long_loop.jsonl", 3)
    assert record["id"] == "concat/tau2-airline-claude45-thinking/anthropic-400"
    forwarded, headers = run_anthropic_loop(proxy, record)
    check_fitted("tau2 thinking", proxy, forwarded, headers, anthropic_pairing_problems)
    given = {json.dumps(b) for m in record["messages"] for b in blocks(m, "thinking")}
    sent = [json.dumps(b) for messages in forwarded for m in messages for b in blocks(m, "thinking")]
    rewritten = [
        b for messages, h in zip(forwarded, headers) if h["x-tightfit-actions"] != "none"
        for m in messages for b in blocks(m, "thinking")
    ]
    assert rewritten, "thinking blocks went on in requests the proxy rewrote (else nothing was checked)"
    altered = [b for b in sent if b not in given]
    assert altered == [], f"{len(altered)} forwarded thinking blocks are not the input's: {altered[0][:300]}"


# recorded streams, split where the network split them: mid-event and mid-character too, so
# nothing on the way may depend on chunks ending at event or character boundaries
OPENAI_STREAM = [
    b'data: {"id":"chatcmpl-BHx1","object":"chat.completion.chunk","created":1743000000,"model":"gpt-4o-2024-08-06",'
    b'"service_tier":"default","system_fingerprint":"fp_6ec83003ad","choices":[{"index":0,"delta":{"role":"assistant",'
    b'"content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"q2"}\n\n',
    b'data: {"id":"chatcmpl-BHx1","object":"chat.completion.chunk","created":1743000000,"model":"gpt-4o-2024-08-06",'
    b'"service_tier":"default","system_fingerprint":"fp_6ec83003ad","choices":[{"index":0,"delta":{"content":"Hel"},'
    b'"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x"}\n\ndata: {"id":"chatcmpl-BHx1","obj',
    b'ect":"chat.completion.chunk","created":1743000000,"model":"gpt-4o-2024-08-06","service_tier":"default",'
    b'"system_fingerprint":"fp_6ec83003ad","choices":[{"index":0,"delta":{"content":"lo, caf\xc3\xa9!"},'
    b'"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"9Zk"}\n\n',
    b'data: {"id":"chatcmpl-BHx1","object":"chat.completion.chunk","created":1743000000,"model":"gpt-4o-2024-08-06",'
    b'"service_tier":"default","system_fingerprint":"fp_6ec83003ad","choices":[{"index":0,"delta":{},"logprobs":null,'
    b'"finish_reason":"stop"}],"usage":null,"obfuscation":"ab"}\n\n',
    b'data: {"id":"chatcmpl-BHx1","object":"chat.completion.chunk","created":1743000000,"model":"gpt-4o-2024-08-06",'
    b'"service_tier":"default","system_fingerprint":"fp_6ec83003ad","choices":[],"usage":{"prompt_tokens":1300,'
    b'"completion_tokens":4,"total_tokens":1304,"prompt_tokens_details":{"cached_tokens":1152,"audio_tokens":0},'
    b'"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,'
    b'"rejected_prediction_tokens":0}},"obfuscation":"wQ"}\n\n',
    b"data: [DONE]\n\n",
]

ANTHROPIC_STREAM = [
    b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929",'
    b'"id":"msg_01Ag7xkq","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,'
    b'"usage":{"input_tokens":12,"cache_creation_input_tokens":0,"cache_read_input_tokens":4000,"output_tokens":1,'
    b'"service_tier":"standard"}}}\n\n',
    b'event: ping\ndata: {"type": "ping"}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking",'
    b'"thinking":"","signature":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"thinking_delta","thinking":"The user greets me; "}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta",'
    b'"thinking":"answer briefly."}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","ind',
    b'ex":0,"delta":{"type":"signature_delta","signature":"EqQBCkYIBRgCKkBvY3Jz+0sHj8XHt1bE/9Q=="}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":{"type":"text",'
    b'"text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":'
    b'{"type":"text_delta","text":"Hello, "}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":1,"delta":{"type":"text_delta",'
    b'"text":"caf\xc3',  # the split falls inside a UTF-8 character
    b'\xa9!"}}\n\nevent: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},'
    b'"usage":{"output_tokens":30}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]

SSE = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]


def test_an_openai_stream_arrives_byte_identical_and_parses(start_proxy, raw_transport):
    """``create(stream=True, stream_options={"include_usage": True})``: the bytes the SDK's
    transport receives are the upstream's, and the SDK's parser reads the text and the usage
    chunk before ``[DONE]``."""
    proxy = start_proxy()
    proxy.upstream.then(200, SSE, OPENAI_STREAM, pause=0.01)
    stream = openai_client(proxy, raw_transport).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Say hello"}],
        stream=True, stream_options={"include_usage": True},
    )
    text, usage = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
        usage = chunk.usage or usage
    assert bytes(raw_transport.bodies[-1]) == b"".join(OPENAI_STREAM)
    assert stream.response.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert "x-tightfit-actions" in stream.response.headers
    assert text == "Hello, caf\u00e9!"
    assert (usage.prompt_tokens, usage.completion_tokens) == (1300, 4)
    assert usage.prompt_tokens_details.cached_tokens == 1152
    request = proxy.upstream.last().json()
    assert (request["stream"], request["stream_options"]) == (True, {"include_usage": True})


@pytest.mark.parametrize("way", ["messages.stream", "messages.create(stream=True)"])
def test_an_anthropic_stream_arrives_byte_identical_and_parses(start_proxy, raw_transport, way):
    """Both streaming APIs of the anthropic SDK: the bytes received are the upstream's (the
    thinking and signature deltas among them), and the SDK accumulates the thinking block with
    its signature, the text and the usage."""
    proxy = start_proxy()
    proxy.upstream.then(200, SSE, ANTHROPIC_STREAM, pause=0.01)
    client = anthropic_client(proxy, raw_transport)
    request = dict(model="claude-sonnet-4-5", max_tokens=1024, messages=[{"role": "user", "content": "Hi"}])
    if way == "messages.stream":
        with client.messages.stream(**request) as stream:
            text = "".join(stream.text_stream)
            message = stream.get_final_message()
        thinking = message.content[0]
        assert (thinking.type, thinking.thinking) == ("thinking", "The user greets me; answer briefly.")
        assert thinking.signature == "EqQBCkYIBRgCKkBvY3Jz+0sHj8XHt1bE/9Q=="
        assert message.content[1].text == text
        output_tokens, cache_read = message.usage.output_tokens, message.usage.cache_read_input_tokens
    else:
        events = list(client.messages.create(**request, stream=True))
        kinds = [e.type for e in events]
        assert kinds[0] == "message_start" and kinds[-1] == "message_stop", kinds
        deltas = [e.delta for e in events if e.type == "content_block_delta"]
        assert [d.type for d in deltas] == ["thinking_delta"] * 2 + ["signature_delta"] + ["text_delta"] * 2
        text = "".join(d.text for d in deltas if d.type == "text_delta")
        output_tokens = next(e for e in events if e.type == "message_delta").usage.output_tokens
        cache_read = events[0].message.usage.cache_read_input_tokens
    assert bytes(raw_transport.bodies[-1]) == b"".join(ANTHROPIC_STREAM)
    assert text == "Hello, caf\u00e9!"
    assert (output_tokens, cache_read) == (30, 4000)
    assert proxy.upstream.last().json()["stream"] is True


def test_a_message_alone_over_the_cap_is_each_sdks_context_overflow(start_proxy):
    """A single user message no fitting can bring under the cap never reaches the upstream:
    each SDK raises the error its users (and agents that compact on overflow) already catch."""
    proxy = start_proxy(cap=1_000)
    huge = "the same words again " * 1_000
    with pytest.raises(openai.BadRequestError) as raised:
        openai_client(proxy).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": huge}]
        )
    assert raised.value.code == "context_length_exceeded"
    with pytest.raises(anthropic.BadRequestError) as raised:
        anthropic_client(proxy).messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=[{"role": "user", "content": huge}]
        )
    assert raised.value.body["error"]["message"].startswith("prompt is too long"), raised.value.body
    assert proxy.upstream.received == []


def test_an_upstream_rate_limit_reaches_each_sdk_with_its_retry_after(start_proxy):
    """The upstream's 429 is the SDK's ``RateLimitError``, its ``retry-after`` header and body
    intact, so the caller's own backoff works through the proxy."""
    proxy = start_proxy()
    openai_429 = (
        b'{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","param":null,'
        b'"code":"rate_limit_exceeded"}}'
    )
    anthropic_429 = (
        b'{"type":"error","error":{"type":"rate_limit_error",'
        b'"message":"Number of requests has exceeded your rate limit"}}'
    )
    for error, body, call in [
        (openai.RateLimitError, openai_429, lambda: openai_client(proxy).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])),
        (anthropic.RateLimitError, anthropic_429, lambda: anthropic_client(proxy).messages.create(
            model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "Hi"}])),
    ]:
        proxy.upstream.then(429, [("content-type", "application/json"), ("retry-after", "7")], [body])
        with pytest.raises(error) as raised:
            call()
        assert raised.value.response.headers["retry-after"] == "7"
        assert raised.value.response.content == body
    assert len(proxy.upstream.received) == 2, "max_retries=0: each request went upstream once"

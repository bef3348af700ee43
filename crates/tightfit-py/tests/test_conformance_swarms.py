"""Conformance: ``tightfit.compat.swarms`` against the real swarms 16.0.3, on real histories of
the shared corpus (token and message limits, models, ``target_model``, the ``preserve_*``
settings, ``apply_transforms_to_messages`` with the defaults).

Each case runs swarms' transforms and ours on the same messages and settings. Ours must be

1. **equal**: swarms' own output (the same message objects, in the same order); else
2. **documented**: the output of swarms' algorithm with the README's deliberate differences
   applied. :class:`Reference` is that algorithm, step for step, with each difference a switch;
   with none switched on it must return exactly what the real swarms returns, on every case (so
   it cannot drift from the package), and every switch must be needed by some case; else
3. **over the limit**: where even that output is over the limit (counted exactly), which swarms
   returns as it is, ours raises ``tightfit.CannotFit`` (the system messages alone do not fit)
   or keeps only messages of it, their texts cut or not, within the limit.

Whatever the class, ours holds what the README promises: the caller's messages untouched and
returned as they are, in order; within the token limit and ``max_messages``; no violation the
input did not have (a tool call keeps its results); the result's counts exact.

swarms counts with litellm (``LITELLM_LOCAL_MODEL_COST_MAP`` is set in conftest: no download);
its ``count_tokens`` is memoized for the run (the same counts, without retokenizing a text for
every message swarms removes).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import logging
import os
import random
from collections import Counter
from typing import Any, NamedTuple, Optional, Sequence

import pytest

import tightfit
from conftest import LARGEST, records
from tightfit.compat import swarms as ours

Message = dict[str, Any]

#: The README's deliberate differences (and the rules the engine has no step for yet), as the
#: switches of :class:`Reference`.
DIFFERENCES = {
    "window": "the window from tightfit's registry, less the output reserve; no Claude 1,000-message limit",
    "count": "exact counts for the target model (swarms: each content, with litellm, for the config's model)",
    "units": "whole units: a tool call keeps its results",
    "sysflag": "preserve_system_messages=False lets system messages go",
    "odd": "an odd number of free places: one more from the start, not the middle message",
    "tie": "removing from the middle of an odd number: the older neighbour goes first",
    "fewslots": "max_messages no larger than the system messages: the last message is kept besides",
    "zero": "max_tokens=0: the model's window still holds",
}
ALL = frozenset(DIFFERENCES)
MARKER = "[... middle cut to fit the context window ...]"


# --- swarms, imported once ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """``swarms.structs.transforms``, with what its import does to the process kept out of the
    repository and the rest of the session."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    tiktoken_dir = os.environ.get("TIKTOKEN_CACHE_DIR")
    with pytest.MonkeyPatch.context() as patch:
        # `import swarms` makes a workspace (with an error log) in the current directory unless
        # WORKSPACE_DIR names one; telemetry is sent by agents only, off all the same
        patch.setenv("WORKSPACE_DIR", str(tmp_path_factory.mktemp("swarms-workspace")))
        patch.setenv("SWARMS_TELEMETRY_ON", "false")
        from loguru import logger

        import swarms.structs.transforms as transforms

        transforms.llm_backend.backend_module()  # litellm, now rather than at the first count
        # swarms replaces the root logger's handlers, litellm TIKTOKEN_CACHE_DIR: put them back
        root.handlers[:] = handlers
        root.setLevel(level)
        if tiktoken_dir is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = tiktoken_dir
        logger.disable("swarms")
        patch.setattr(transforms, "count_tokens", functools.lru_cache(maxsize=None)(transforms.count_tokens))
        yield transforms
        logger.enable("swarms")


# --- swarms' algorithm, with the documented differences as switches -------------------------------


@functools.lru_cache(maxsize=None)
def budget_of(model: str) -> int:
    """tightfit's token budget for ``model`` (its window less the output reserve)."""
    return tightfit.fit([{"role": "user", "content": "x"}], model).report.budget


class Reference:
    """swarms 16.0.3's ``MessageTransforms.transform_messages``, step for step (the window and
    message-limit tables and the per-message count are swarms' own methods), with the
    ``differences`` of :data:`DIFFERENCES` switched on. ``exact`` holds tightfit's count of each
    message (by ``id``) and the reply priming for the target model, or ``None`` when tightfit
    does not know the model."""

    def __init__(self, peer: Any, config: Any, target: Optional[str], differences: frozenset[str],
                 exact: Optional[dict[Any, int]]) -> None:
        self.swarms = peer.MessageTransforms(config)
        self.config = config
        self.target = target
        self.on = differences
        self.exact = exact
        self.keep_system = config.preserve_system_messages or "sysflag" not in differences

    def run(self, messages: list[Message]) -> Any:
        """The kept messages, or the name of the error ours raises."""
        config = self.config
        if not config.enabled or not messages:
            return list(messages)
        if self.exact is None and self.on & {"window", "count"}:
            return "UnknownModel"
        model = self.target or config.model_name
        if "window" in self.on:
            limit, max_messages = budget_of(model), None
        else:
            limit = self.swarms._get_model_context_limit(model)
            max_messages = self.swarms._get_model_message_limit(model)
        if config.max_tokens is not None and (config.max_tokens or "zero" not in self.on):
            limit = config.max_tokens
        if config.max_messages is not None:
            max_messages = config.max_messages
        kept = list(messages)
        self.first_is_system = kept[0].get("role") == "system"
        self.length = len(kept)  # the length swarms has here (with whole units, ours can be shorter)
        if max_messages and len(kept) > max_messages:
            kept = self.compress_count(kept, max_messages)
        if limit and self.tokens(kept) > limit:
            if len(kept) > 50:  # swarms' _compress_tokens halves a long history first
                kept = self.compress_count(kept, (self.length if "units" in self.on else len(kept)) // 2)
            if self.tokens(kept) > limit:
                kept = self.middle_out(kept, limit)
        return kept

    # counting

    def one(self, message: Message) -> int:
        if "count" in self.on:
            return self.exact[id(message)]
        return self.swarms._count_total_tokens([message])

    def tokens(self, messages: Sequence[Message]) -> int:
        total = sum(self.one(m) for m in messages)
        return total + self.exact["priming"] if "count" in self.on else total

    def is_system(self, message: Message) -> bool:
        return self.keep_system and message.get("role") == "system"

    def units(self, messages: Sequence[Message]) -> list[tuple[int, int]]:
        """Index ranges of what is kept or dropped together: single messages, or with "units" an
        assistant message with the tool results right after it."""
        if "units" not in self.on:
            return [(i, i + 1) for i in range(len(messages))]
        out, i = [], 0
        while i < len(messages):
            j = i + 1
            if messages[i].get("role") == "assistant" and messages[i].get("tool_calls"):
                while j < len(messages) and messages[j].get("role") == "tool":
                    j += 1
            out.append((i, j))
            i = j
        return out

    # swarms' _compress_message_count (and _middle_out_compress)

    def compress_count(self, messages: list[Message], limit: int) -> list[Message]:
        if len(messages) <= limit:
            return messages
        system = [m for m in messages if self.is_system(m)]
        others = [m for m in messages if not self.is_system(m)]
        free = limit - len(system)
        self.length = limit if free > 0 else len(system) + 1
        if free <= 0:
            if "fewslots" in self.on:
                return self.select(messages, system, head=0, tail=1)
            return system[:limit]
        n_recent = min(self.config.preserve_recent_messages, len(others))
        recent = others[-n_recent:] if n_recent > 0 else []
        places = free - len(recent)
        if places <= 0:
            if "units" in self.on:
                kept = self.select(messages, system, head=0, tail=n_recent)
                return self.select(kept, system, head=free, tail=0) if places < 0 else kept
            return (system + recent)[:limit]
        early = others[:-n_recent] if n_recent > 0 else others
        if len(early) <= places:
            return (system + early + recent)[:limit]
        half, odd = places // 2, places % 2
        if "units" in self.on:
            head = half + (odd if "odd" in self.on else 0)
            middle = early[len(early) // 2] if odd and "odd" not in self.on else None
            return self.select(messages, system, head=head, tail=half + n_recent, middle=middle)
        if "odd" in self.on:
            return system + early[: half + odd] + (early[len(early) - half :] if half else []) + recent
        # swarms' _middle_out_compress, its early[-0:] (the whole list) included
        picked = early[:half] + early[-half:]
        if odd and len(early) > half * 2:
            picked.insert(half, early[len(early) // 2])
        return system + picked[:places] + recent

    def select(self, messages: list[Message], system: list[Message], head: int, tail: int,
               middle: Optional[Message] = None) -> list[Message]:
        """The system messages, ``head`` messages from the start, the unit of ``middle`` and
        ``tail`` messages from the end, by units: a unit that does not fit is not taken."""
        units = self.units(messages)
        system_ids = {id(m) for m in system}
        is_system = [all(id(messages[j]) in system_ids for j in range(a, b)) for a, b in units]
        keep = list(is_system)
        if head + tail + (middle is not None) >= sum(b - a for (a, b), s in zip(units, is_system) if not s):
            return messages
        for i, (a, b) in enumerate(units):
            if any(messages[j] is middle for j in range(a, b)):
                keep[i] = True
        used = 0
        for i, (a, b) in enumerate(units):
            if keep[i]:
                continue
            if used + b - a > head:
                break
            used += b - a
            keep[i] = True
        used = 0
        for i in reversed(range(len(units))):
            a, b = units[i]
            if is_system[i]:
                continue
            if used + b - a > tail:
                break
            used += b - a
            keep[i] = True
        return [messages[j] for i, (a, b) in enumerate(units) if keep[i] for j in range(a, b)]

    # swarms' _middle_out_compress_tokens

    def middle_out(self, messages: list[Message], limit: int) -> list[Message]:
        units = self.units(messages)
        items = [messages[a:b] for a, b in units]
        total = self.tokens(messages)
        if not self.on & {"tie", "units", "sysflag"}:
            # swarms' loop: pop the middle message (or a non-system one near it) until it fits;
            # the total is kept running instead of recounted (the same sum)
            while total > limit and len(items) > 2:
                mid = len(items) // 2
                if self.is_system(items[mid][0]):
                    for offset in range(1, len(items) // 4 + 1):
                        if mid - offset >= 0 and not self.is_system(items[mid - offset][0]):
                            mid -= offset
                            break
                        if mid + offset < len(items) and not self.is_system(items[mid + offset][0]):
                            mid += offset
                            break
                total -= sum(self.one(m) for m in items.pop(mid))
            return [m for item in items for m in item]
        # the same order over the items that may go (not a system message, not the last, not the
        # first unless the history starts with a system message): from the middle outwards, the
        # newer neighbour first for an odd number (swarms) or the older one ("tie")
        protected = [self.is_system(item[0]) for item in items]
        if items:
            protected[-1] = True
            protected[0] = protected[0] or not self.first_is_system
        candidates = [i for i, p in enumerate(protected) if not p]
        mid = len(candidates) // 2
        older_first = "tie" in self.on or len(candidates) % 2 == 0
        order = [mid] if candidates else []
        for d in range(1, len(candidates) + 1):
            order += [x for x in ((mid - d, mid + d) if older_first else (mid + d, mid - d)) if 0 <= x < len(candidates)]
        dropped = set()
        for x in order:
            if total <= limit:
                break
            dropped.add(candidates[x])
            total -= sum(self.one(m) for m in items[candidates[x]])
        return [m for i, item in enumerate(items) if i not in dropped for m in item]


# --- the cases ------------------------------------------------------------------------------------


class Case(NamedTuple):
    file: str
    id: str
    config: tuple[tuple[str, Any], ...]  # TransformConfig's arguments
    target: Optional[str]
    via: str  # "apply": apply_transforms_to_messages(messages, None, model_name); "class": MessageTransforms

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.config)

    @property
    def model(self) -> str:
        return self.target or self.kwargs["model_name"]

    def __str__(self) -> str:
        settings = ",".join(f"{k}={v}" for k, v in self.config if k != "enabled")
        return f"{self.file.split('.')[0]}/{self.id}/{self.via}/{settings}/{self.target or '-'}"


MODELS = ("gpt-4", "gpt-4o", "gpt-4-turbo", "gpt-3.5-turbo", "claude-3-5-sonnet")
#: histories per file: the longest half, the other half at random
HISTORIES = {
    "agent_tau_bench_airline_gpt4o.jsonl": 12,
    "agent_mini_swe_deepseek.jsonl": 8,
    "agent_mini_swe_deepseek_reasoner.jsonl": 4,
    "agent_swe_agent_demos.jsonl": 6,
    "chat_aider_sessions.jsonl": 12,
    "chat_hh_rlhf_harmless_test.jsonl": 12,
}
SETTINGS_PER_HISTORY = 12


@functools.lru_cache(maxsize=None)
def history(file: str, record_id: str) -> list[Message]:
    return next(r for r in records(file) if r["id"] == record_id)["messages"]


def random_config(rng: random.Random, total: int) -> tuple[dict[str, Any], Optional[str]]:
    """Settings as a user might choose them for a history of ``total`` tokens, and a target."""
    kind = rng.choice(["tokens", "tokens", "messages", "messages", "both", "target", "edge"])
    config: dict[str, Any] = {
        "enabled": True,
        "model_name": rng.choice(MODELS),
        "preserve_recent_messages": rng.choice([0, 1, 2, 2, 3, 5]),
        "preserve_system_messages": rng.random() > 0.2,
    }
    if kind in ("tokens", "both", "target"):
        config["max_tokens"] = max(50, int(total * rng.choice([0.1, 0.2, 0.35, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95])))
    if kind in ("messages", "both"):
        config["max_messages"] = rng.choice([1, 2, 3, 4, 5, 6, 7, 10, 11, 20, 25, 51, 60, 101])
    if kind == "messages":
        config["model_name"] = rng.choice(["gpt-4o", "gpt-4-turbo"])
    if kind == "edge":
        config.update(rng.choice([
            {"max_tokens": 0},
            {"max_messages": 0},
            {"model_name": "local-llm-7b"},  # a model neither swarms' table nor tightfit knows
            {"enabled": False},
            {"model_name": "gpt-4o", "max_messages": 2, "preserve_recent_messages": 3},
        ]))
    return config, rng.choice(MODELS) if kind == "target" else None


def make_cases() -> list[Case]:
    rng = random.Random(1603)
    cases = []
    for file, n in HISTORIES.items():
        by_length = sorted(records(file), key=lambda r: -len(r["messages"]))
        chosen = by_length[: n // 2] + rng.sample(by_length[n // 2 :], n - n // 2)
        for record in chosen:
            messages = record["messages"]
            for model in ("gpt-4", "gpt-4o", "claude-3-5-sonnet"):
                cases.append(Case(file, record["id"], (("enabled", True), ("model_name", model)), None, "apply"))
            total = tightfit.count(messages, "gpt-4o").total
            for _ in range(SETTINGS_PER_HISTORY):
                config, target = random_config(rng, total)
                cases.append(Case(file, record["id"], tuple(config.items()), target, "class"))
    # the 1M-token agent history (4,857 messages): halved, then thousands of removals; with
    # max_tokens=0 swarms keeps it all
    for config in (
        {"enabled": True, "model_name": "gpt-4o"},
        {"enabled": True, "model_name": "gpt-4o", "max_tokens": 0},
        {"enabled": True, "model_name": "claude-3-5-sonnet", "max_tokens": 32_000, "preserve_recent_messages": 5},
        {"enabled": True, "model_name": "gpt-4o", "max_messages": 60},
    ):
        cases.append(Case("extreme_long.jsonl", LARGEST, tuple(config.items()), None, "class"))
    return cases


CASES = make_cases()


# --- running a case -------------------------------------------------------------------------------


def run(module: Any, case: Case, messages: list[Message]) -> Any:
    """``module``'s TransformResult for ``case``, or the name of the tightfit error it raised."""
    try:
        if case.via == "apply":
            return module.apply_transforms_to_messages(messages, None, case.kwargs["model_name"])
        return module.MessageTransforms(module.TransformConfig(**case.kwargs)).transform_messages(messages, case.target)
    except tightfit.Error as e:
        return type(e).__name__


@functools.lru_cache(maxsize=None)
def exact_counts(file: str, record_id: str, model: str) -> Optional[dict[Any, int]]:
    """tightfit's count of each message (by id) and the priming, or None for an unknown model."""
    messages = history(file, record_id)
    try:
        # swarms' messages are OpenAI-shaped whatever the model
        counted = tightfit.count(messages, model, format="openai")
    except tightfit.UnknownModel:
        return None
    exact: dict[Any, int] = {id(m): n for m, n in zip(messages, counted.per_message)}
    exact["priming"] = counted.priming
    exact["total"] = counted.total
    return exact


def positions(output: Any, messages: list[Message]) -> Any:
    """The input index of each output message (matched by identity; -1 for a new object), or
    the error name."""
    if isinstance(output, str):
        return output
    index = {id(m): i for i, m in enumerate(messages)}
    return [index.get(id(m), -1) for m in output]


class Outcome(NamedTuple):
    kind: str  # "equal", "documented", "over the limit"
    swarms: Any  # input positions swarms kept
    ours: Any  # input positions ours kept, or the error's name


@functools.lru_cache(maxsize=None)
def outcome(peer: Any, case: Case) -> Outcome:
    """Both runs of ``case``, checked, and the class of ours."""
    messages = history(case.file, case.id)
    pristine = json.dumps(messages)
    theirs = run(peer, case, messages)
    result = run(ours, case, messages)
    assert json.dumps(messages) == pristine, "the caller's messages are untouched"
    config = peer.TransformConfig(**case.kwargs)
    exact = exact_counts(case.file, case.id, case.model)

    def reference(differences: frozenset[str]) -> Any:
        return positions(Reference(peer, config, case.target, differences, exact).run(messages), messages)

    swarms_kept = positions(theirs.messages, messages)
    assert reference(frozenset()) == swarms_kept, "the reference is swarms' algorithm"
    ours_kept = positions(result if isinstance(result, str) else result.messages, messages)
    if not isinstance(result, str):
        check_promises(case, messages, result, exact)
    if ours_kept == swarms_kept:
        return Outcome("equal", swarms_kept, ours_kept)
    documented = reference(ALL)
    if ours_kept == documented:
        return Outcome("documented", swarms_kept, ours_kept)
    # what swarms' algorithm keeps, with the differences, is over the limit
    limit = case.kwargs.get("max_tokens") or budget_of(case.model)
    assert isinstance(documented, list) and exact is not None, (ours_kept, documented)
    assert sum(exact[id(messages[i])] for i in documented) + exact["priming"] > limit, (ours_kept, documented)
    if result == "CannotFit":
        system = [m for m in messages if m.get("role") == "system"]
        assert config.preserve_system_messages and tightfit.count(system, case.model, format="openai").total > limit
    else:
        # only messages the reference keeps, as they are or with their text cut
        for message in result.messages:
            assert any(message is messages[i] or cut_from(message, messages[i]) for i in documented), message
    return Outcome("over the limit", swarms_kept, ours_kept)


def cut_from(message: Message, original: Message) -> bool:
    """Whether ``message`` is ``original`` with its text cut in the middle."""
    content = message.get("content")
    return (
        isinstance(content, str)
        and MARKER in content
        and {k: v for k, v in message.items() if k != "content"} == {k: v for k, v in original.items() if k != "content"}
    )


def check_promises(case: Case, messages: list[Message], result: Any, exact: Optional[dict[Any, int]]) -> None:
    """What the README promises of every output of ours."""
    config = case.kwargs
    kept = result.messages
    if not config.get("enabled") or exact is None:
        assert kept is messages, "disabled transforms return the caller's list"
        return
    # the caller's dicts, in order; a new object only where a text was cut
    found = [i for i in positions(kept, messages) if i >= 0]
    assert found == sorted(set(found))
    assert all(MARKER in str(m.get("content")) for i, m in zip(positions(kept, messages), kept) if i < 0)
    # the limits
    counted = tightfit.count(kept, case.model, format="openai").total
    assert counted <= (config.get("max_tokens") or budget_of(case.model))
    if config.get("max_messages"):
        system = sum(m.get("role") == "system" for m in messages) if config.get("preserve_system_messages", True) else 0
        assert len(kept) <= max(config["max_messages"], system + 1)
    # valid where the input was: no kind of violation the input did not have
    rules = {v.rule for v in tightfit.validate(messages)}
    assert {v.rule for v in tightfit.validate(kept)} <= rules
    # exact counts
    assert (result.original_token_count, result.compressed_token_count) == (exact["total"], counted)
    assert (result.original_message_count, result.compressed_message_count) == (len(messages), len(kept))
    assert result.compression_ratio == pytest.approx(counted / exact["total"])
    assert result.was_compressed == (counted < exact["total"] or len(kept) < len(messages))


@pytest.mark.parametrize("case", CASES, ids=str)
def test_ours_is_swarms_output_or_differs_only_as_documented(peer: Any, case: Case) -> None:
    outcome(peer, case)


def test_the_cases_cover_every_class_and_every_difference(peer: Any) -> None:
    outcomes = {case: outcome(peer, case) for case in CASES}  # computed once by the test above
    kinds = Counter(o.kind for o in outcomes.values())
    assert kinds["equal"] > len(CASES) // 4 and kinds["documented"] > len(CASES) // 4 and kinds["over the limit"] > 0, kinds
    # each difference is needed: without it, the reference misses ours somewhere
    needed = set()
    for case, o in outcomes.items():
        if o.kind != "documented":
            continue
        messages = history(case.file, case.id)
        config = peer.TransformConfig(**case.kwargs)
        exact = exact_counts(case.file, case.id, case.model)
        for name in ALL - needed:
            if positions(Reference(peer, config, case.target, ALL - {name}, exact).run(messages), messages) != o.ours:
                needed.add(name)
        if needed == ALL:
            break
    assert needed == ALL, f"never needed: {sorted(ALL - needed)}"


# --- the API --------------------------------------------------------------------------------------


def test_the_dataclasses_and_signatures_are_swarms(peer: Any) -> None:
    for name in ("TransformConfig", "TransformResult"):
        theirs = [(f.name, f.default) for f in dataclasses.fields(getattr(peer, name))]
        assert [(f.name, f.default) for f in dataclasses.fields(getattr(ours, name))] == theirs
    for name in ("create_default_transforms", "apply_transforms_to_messages", "handle_transforms"):
        theirs = inspect.signature(getattr(peer, name)).parameters
        mine = inspect.signature(getattr(ours, name)).parameters
        assert [(p.name, p.default, p.kind) for p in mine.values()] == [(p.name, p.default, p.kind) for p in theirs.values()]
    assert list(inspect.signature(ours.MessageTransforms.transform_messages).parameters) == list(
        inspect.signature(peer.MessageTransforms.transform_messages).parameters
    )


def test_handle_transforms_on_a_swarms_conversation(peer: Any) -> None:
    from swarms.structs.conversation import Conversation

    record = max(records("chat_hh_rlhf_harmless_test.jsonl"), key=lambda r: len(r["messages"]))
    conversation = Conversation()
    for message in record["messages"]:
        conversation.add(message["role"], message["content"])
    prompts = set()
    # settings where no documented difference applies (an even number of free places)
    for model, max_messages in (("gpt-4o", None), ("gpt-4o", 6), ("gpt-4", 4)):
        config = dict(enabled=True, model_name=model, max_messages=max_messages)
        theirs = peer.handle_transforms(peer.MessageTransforms(peer.TransformConfig(**config)), conversation, model)
        assert ours.handle_transforms(ours.MessageTransforms(ours.TransformConfig(**config)), conversation, model) == theirs
        prompts.add(theirs)
    assert len(prompts) == 3

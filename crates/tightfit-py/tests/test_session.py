"""Sessions on real agent runs, grown turn by turn: every request within budget and valid, each
one extending the one before until a compaction; the same requests from a second session, a
second process and several threads; store and argument errors at the boundary."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import tightfit
from conftest import DATA, records

FILE = "agent_mini_swe_deepseek.jsonl"
MODEL = "gpt-4o"
#: The first run of the file holds 21k tokens: at this budget it compacts several times.
BUDGET = 6_000

Messages = list[dict[str, Any]]


def run(index: int) -> Messages:
    """The messages of run `index` of the file."""
    return records(FILE)[index]["messages"]


def request_points(messages: Messages) -> list[int]:
    """The prefix lengths an agent sends: after each message that is not the assistant's (from
    the task on), never between a tool call and its results."""
    first_user = next(i for i, m in enumerate(messages) if m["role"] == "user")
    return [
        end
        for end in range(first_user + 1, len(messages) + 1)
        if messages[end - 1]["role"] != "assistant" and (end == len(messages) or messages[end]["role"] != "tool")
    ]


@dataclass
class Turn:
    """One request as sent (each message as JSON text) and what the session said of it."""

    sent: list[str]
    epoch: int
    compacted: bool


def wire(messages: Messages) -> list[str]:
    return [json.dumps(m, sort_keys=True) for m in messages]


def agent_loop(session: tightfit.Session, messages: Messages, ends: list[int], *, key: str | None = None) -> list[Turn]:
    """Sends the prefixes of `messages` ending at `ends` through `session`, checking each request."""
    turns: list[Turn] = []
    previous: Messages | None = None
    for end in ends:
        request = messages[:end]
        before = wire(request)
        result = session.fit(request, key=key)
        assert wire(request) == before, "the input is not mutated"
        out = result.messages
        assert tightfit.count(out, MODEL).total == result.report.compressed_token_count <= session.budget
        assert tightfit.validate(out, "openai") == []
        info = result.report.session
        assert info is not None and info.policy == session.policy
        if key is not None:
            assert info.key == key
        if not info.compacted and previous is not None:
            assert out[: len(previous)] == previous, f"turn at {end} messages does not extend the previous request"
        # a message sent as it came is the caller's own dict
        for j, entry in enumerate(result.plan.output):
            if "message" not in entry:
                assert out[j] is request[entry["input"]]
        previous = out
        turns.append(Turn(wire(out), info.epoch, info.compacted))
    return turns


@pytest.fixture(scope="module")
def whole_run() -> list[Turn]:
    """Run 0 sent turn by turn through one session."""
    messages = run(0)
    return agent_loop(tightfit.Session(MODEL, budget=BUDGET), messages, request_points(messages))


def test_an_agent_loop_extends_each_request_until_a_compaction(whole_run: list[Turn]) -> None:
    compactions = [t for t in whole_run if t.compacted]
    assert len(compactions) >= 2, "the run compacts more than once at this budget"
    # a compaction cuts well below the budget, so most turns replay the epoch
    assert len(compactions) * 4 <= len(whole_run)
    assert [t.epoch for t in whole_run] == sorted(t.epoch for t in whole_run)
    assert whole_run[-1].epoch == len(compactions)


def test_more_agent_runs_stay_within_budget_and_extend() -> None:
    for index in (1, 2):
        messages = run(index)
        turns = agent_loop(tightfit.Session(MODEL, budget=8_000), messages, request_points(messages))
        assert any(t.compacted for t in turns)


def test_a_stateless_fit_moves_its_cut_where_a_session_does_not(whole_run: list[Turn]) -> None:
    messages = run(0)
    ends = request_points(messages)
    moved = 0
    previous: list[str] | None = None
    for end in ends:
        sent = wire(tightfit.fit(messages[:end], MODEL, budget=BUDGET).messages)
        if previous is not None and sent[: len(previous)] != previous:
            moved += 1
        previous = sent
    assert moved > sum(t.compacted for t in whole_run)
    assert tightfit.fit(messages, MODEL, budget=BUDGET).report.session is None


def test_a_second_session_on_the_same_memory_store_continues_the_loop(whole_run: list[Turn]) -> None:
    messages = run(0)
    ends = request_points(messages)
    half = len(ends) // 2
    store = tightfit.MemoryStore()
    first = agent_loop(tightfit.Session(MODEL, budget=BUDGET, store=store), messages, ends[:half])
    # one checkpoint and its version, and a blob per handle the compactions named
    handles = {h for t in first for m in t.sent for h in re.findall(r"tf-[0-9a-f]{16}", m)}
    assert any(t.compacted for t in first) and handles and len(store) == 2 + len(handles)
    # a new session holds nothing in memory: it reads the decision back from the store
    second = agent_loop(tightfit.Session(MODEL, budget=BUDGET, store=store), messages, ends[half:])
    assert first + second == whole_run


def test_a_file_store_carries_the_loop_to_another_session(tmp_path: Path, whole_run: list[Turn]) -> None:
    messages = run(0)
    ends = request_points(messages)
    half = len(ends) // 2
    path = tmp_path / "sessions.db"
    first = agent_loop(tightfit.Session(MODEL, budget=BUDGET, store=str(path)), messages, ends[:half])
    assert path.is_file()
    second_session = tightfit.Session(MODEL, budget=BUDGET, store=path)  # os.PathLike
    assert second_session.store == f"sqlite:{path}"
    second = agent_loop(second_session, messages, ends[half:])
    assert first + second == whole_run


CONTINUE = """
import json, sys
import tightfit
data, index, budget, store, start = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
with open(data, encoding="utf-8") as f:
    messages = [json.loads(line) for line in f if line.strip()][index]["messages"]
session = tightfit.Session("gpt-4o", budget=budget, store=store)
for end in json.loads(sys.stdin.read()):
    result = session.fit(messages[:end])
    info = result.report.session
    print(json.dumps({"sent": [json.dumps(m, sort_keys=True) for m in result.messages],
                      "epoch": info.epoch, "compacted": info.compacted}))
"""


def test_a_file_store_carries_the_loop_to_another_process(tmp_path: Path, whole_run: list[Turn]) -> None:
    messages = run(0)
    ends = request_points(messages)
    half = len(ends) // 2
    path = tmp_path / "sessions.db"
    first = agent_loop(tightfit.Session(MODEL, budget=BUDGET, store=path), messages, ends[:half])
    out = subprocess.run(
        [sys.executable, "-c", CONTINUE, str(DATA / FILE), "0", str(BUDGET), str(path), str(half)],
        input=json.dumps(ends[half:]),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    second = [Turn(**json.loads(line)) for line in out.splitlines()]
    assert len(second) == len(ends) - half
    assert first + second == whole_run


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A real redis-server on a free port of 127.0.0.1, keeping nothing on disk; killed after."""
    server = shutil.which("redis-server")
    assert server, "redis-server is not on PATH: install Debian's redis-server package (.ci/run does)"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    process = subprocess.Popen([*args, "--dir", str(tmp_path)], stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "redis-server did not start"
                time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize("kind", ["file", "redis"])
def test_two_sessions_taking_turns_on_one_shared_store_send_one_session_s_requests(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest, whole_run: list[Turn]
) -> None:
    # two workers (two processes, or two machines for Redis) serving one conversation in turn:
    # each reads the other's compactions back from the store
    store = str(tmp_path / "sessions.db") if kind == "file" else request.getfixturevalue("redis_url")
    workers = [tightfit.Session(MODEL, budget=BUDGET, store=store) for _ in range(2)]
    assert workers[0].store == (f"sqlite:{store}" if kind == "file" else store)
    messages = run(0)
    turns = [agent_loop(workers[i % 2], messages, [end])[0] for i, end in enumerate(request_points(messages))]
    assert turns == whole_run


def test_a_store_url_without_a_server_is_a_store_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(tightfit.StoreError) as caught:
        tightfit.Session(MODEL, budget=BUDGET, store=f"redis://:secret@127.0.0.1:{port}/0")
    assert caught.value.kind == "unavailable"
    assert "secret" not in str(caught.value)
    with pytest.raises(tightfit.StoreError, match="no store for mysql://"):
        tightfit.Session(MODEL, budget=BUDGET, store="mysql://db/app")


def test_threads_fitting_different_conversations_on_one_session_get_the_sequential_results() -> None:
    runs = [run(i) for i in range(4)]
    sequential = [agent_loop(tightfit.Session(MODEL, budget=BUDGET), m, request_points(m)) for m in runs]
    session = tightfit.Session(MODEL, budget=BUDGET)
    results: dict[int, list[Turn]] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(len(runs))

    def loop(i: int) -> None:
        try:
            start.wait()
            results[i] = agent_loop(session, runs[i], request_points(runs[i]))
        except BaseException as e:  # noqa: BLE001 - reported below, with the thread's index
            failures.append(e)

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(len(runs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert [results[i] for i in range(len(runs))] == sequential


def test_afit_gives_what_fit_gives(whole_run: list[Turn]) -> None:
    messages = run(0)
    ends = request_points(messages)
    session = tightfit.Session(MODEL, budget=BUDGET)

    async def main() -> list[Turn]:
        turns = []
        for end in ends:
            result = await session.afit(messages[:end])
            info = result.report.session
            turns.append(Turn(wire(result.messages), info.epoch, info.compacted))
        return turns

    assert asyncio.run(main()) == whole_run


def test_the_report_says_what_the_session_did() -> None:
    messages = run(0)
    session = tightfit.Session(MODEL, budget=BUDGET)
    result = session.fit(messages[:3])
    info = result.report.session
    assert isinstance(info, tightfit.SessionInfo)
    assert info == result.report.session
    assert info.key == tightfit.Session.key_of(messages) == tightfit.Session.key_of(messages[:3])
    assert info.to_dict() == {"key": info.key, "epoch": 0, "compacted": False, "policy": "cache"}
    assert result.report.to_dict()["session"] == info.to_dict()
    assert any(line.startswith("session ") for line in result.report.lines())
    # the whole history at once compacts
    info = session.fit(messages).report.session
    assert (info.epoch, info.compacted) == (1, True)


def test_keys_keep_conversations_apart_and_forget_starts_one_afresh() -> None:
    messages = run(0)
    ends = request_points(messages)
    store = tightfit.MemoryStore()
    # (offload=False: the store then holds checkpoints only, one per conversation, each with
    # its version)
    session = tightfit.Session(MODEL, budget=BUDGET, store=store, offload=False)
    a = agent_loop(session, messages, ends, key="a")
    b = agent_loop(session, messages, ends, key="b")
    assert a == b and len(store) == 4
    session.forget("a")
    assert len(store) == 2
    # forgotten, the whole history is decided afresh: one compaction, epoch 1
    last = messages[: ends[-1]]
    info = session.fit(last, key="a").report.session
    assert (info.key, info.epoch, info.compacted) == ("a", 1, True)
    info = session.fit(last, key="b").report.session
    assert (info.key, info.epoch, info.compacted) == ("b", a[-1].epoch, False)


def test_policies_are_presets_or_pipelines() -> None:
    messages = run(0)
    ends = request_points(messages)
    for policy, name in [
        ("middle-out", "middle-out"),
        (tightfit.Pipeline.preset("swarms"), "swarms"),
        ([tightfit.DropThinking(), tightfit.MiddleOut()], "custom"),
        (tightfit.Pipeline.from_yaml("steps:\n  - type: middle_out\n"), "custom"),
    ]:
        session = tightfit.Session(MODEL, budget=BUDGET, policy=policy)
        assert session.policy == name
        assert any(t.compacted for t in agent_loop(session, messages, ends))
    assert tightfit.Session("gpt-4o").policy == "cache"
    session = tightfit.Session(MODEL, budget=BUDGET, high_water=0.9, low_water=0.5)
    assert (session.high_water, session.low_water, session.budget) == (0.9, 0.5, BUDGET)


def test_a_missing_directory_is_a_store_error_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "missing" / "sessions.db"
    with pytest.raises(tightfit.StoreError) as caught:
        tightfit.Session(MODEL, store=path)
    assert caught.value.kind == "open"
    assert str(tmp_path / "missing") in str(caught.value)
    assert caught.value.store == f"sqlite:{path}"
    assert isinstance(caught.value, tightfit.Error)
    assert not path.parent.exists()


def test_a_corrupt_file_is_a_store_error_and_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    garbage = bytes(range(256)) * 64
    path.write_bytes(garbage)
    with pytest.raises(tightfit.StoreError) as caught:
        tightfit.Session(MODEL, store=path)
    assert caught.value.kind == "corrupt"
    assert str(path) in str(caught.value)
    assert path.read_bytes() == garbage


def test_an_unknown_policy_is_a_value_error_naming_it_and_the_known_ones() -> None:
    with pytest.raises(ValueError) as caught:
        tightfit.Session(MODEL, policy="cache-everything")
    message = str(caught.value)
    assert "cache-everything" in message
    assert all(name in message for name in tightfit.Pipeline.presets())


@pytest.mark.parametrize(
    ("marks", "key"),
    [
        ({"high_water": 1.5}, "high_water"),
        ({"high_water": 0.0}, "high_water"),
        ({"low_water": 0.0}, "low_water"),
        ({"low_water": 0.8, "high_water": 0.7}, "low_water"),
        ({"low_water": 1.0}, "low_water"),
        ({"max_conversations": 0}, "max_conversations"),
    ],
)
def test_bad_marks_are_value_errors(marks: dict[str, float], key: str, tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    with pytest.raises(ValueError) as caught:
        tightfit.Session(MODEL, store=path, **marks)
    assert isinstance(caught.value, tightfit.ConfigError) and caught.value.key == key
    assert not path.exists(), "nothing is opened for a session that cannot be made"


def test_wrong_types_are_type_errors() -> None:
    with pytest.raises(TypeError, match="store"):
        tightfit.Session(MODEL, store=42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="policy"):
        tightfit.Session(MODEL, policy=42)  # type: ignore[arg-type]
    with pytest.raises(tightfit.UnknownModel):
        tightfit.Session("gpt-4-turbo-ultra")
    with pytest.raises(TypeError, match="messages"):
        tightfit.Session(MODEL).fit("hello")  # type: ignore[arg-type]


def test_a_path_like_store_is_accepted(tmp_path: Path) -> None:
    class Where:
        def __fspath__(self) -> str:
            return str(tmp_path / "where.db")

    assert tightfit.Session(MODEL, store=Where()).store == f"sqlite:{tmp_path / 'where.db'}"


def test_cache_breakpoints_mark_anthropic_requests_only_when_asked() -> None:
    path = DATA.parent / "data2" / "agent_tau2_airline_claude45_thinking_anthropic.jsonl"
    record = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    messages = record["messages"]

    def marks(result: tightfit.FitResult) -> list[int]:
        return [
            i
            for i, m in enumerate(result.messages)
            if isinstance(m.get("content"), list) and any("cache_control" in b for b in m["content"])
        ]

    marked = tightfit.Session("claude-sonnet-4-5", budget=4_000, cache_breakpoints=True)
    plain = tightfit.Session("claude-sonnet-4-5", budget=4_000)
    assert (marked.cache_breakpoints, plain.cache_breakpoints) == (True, False)
    for end in (6, 12, len(messages)):
        turn = messages[:end]
        result = marked.fit(turn, format="anthropic")
        found = marks(result)
        assert 1 <= len(found) <= 3 and found[-1] == len(result.messages) - 1, found
        assert tightfit.validate(result.messages, provider="anthropic") == []
        assert marks(plain.fit(turn, format="anthropic")) == []
        assert "cache_control" not in json.dumps(turn), "the caller's dicts are not marked"


def test_reading_only_the_new_dicts_sends_what_reading_them_all_sends() -> None:
    """A session takes back the messages of its previous call where the caller's dicts hash
    alike (fresh copies included); a new session object each turn reads every dict. On an OpenAI
    agent run and an Anthropic one with thinking blocks, both send the same requests."""
    claude = DATA.parent / "data2" / "agent_tau2_airline_claude45_thinking_anthropic.jsonl"
    claude_runs = [json.loads(line)["messages"] for line in claude.read_text(encoding="utf-8").splitlines()]
    cases = [
        (MODEL, run(0), BUDGET),
        ("claude-sonnet-4-5", max(claude_runs, key=len), 3_000),
    ]
    for model, messages, budget in cases:
        remembering = tightfit.Session(model, budget=budget)
        store = tightfit.MemoryStore()
        compacted = 0
        for end in request_points(messages):
            fresh = json.loads(json.dumps(messages[:end]))  # new dicts, as a framework rebuilds them
            warm = remembering.fit(fresh)
            cold = tightfit.Session(model, budget=budget, store=store).fit(messages[:end])
            assert wire(warm.messages) == wire(cold.messages), f"{model}, turn at {end} messages"
            assert warm.report.compressed_token_count == cold.report.compressed_token_count
            assert warm.report.session.epoch == cold.report.session.epoch
            compacted += warm.report.session.compacted
        assert compacted >= 1, f"{model}: the run compacts at this budget"


def test_a_dict_changed_in_place_is_read_again() -> None:
    messages = json.loads(json.dumps(run(0)[:8]))
    session = tightfit.Session(MODEL, budget=100_000)
    before = session.fit(messages)
    messages[2]["content"] = "edited in place: " + "word " * 50
    after = session.fit(messages)
    assert after.messages[2]["content"].startswith("edited in place: ")
    fresh = tightfit.Session(MODEL, budget=100_000).fit(messages)
    assert after.report.compressed_token_count == fresh.report.compressed_token_count
    assert after.report.compressed_token_count != before.report.compressed_token_count


def test_identical_dicts_in_one_history_are_each_read() -> None:
    same = {"role": "user", "content": "again"}
    reply = {"role": "assistant", "content": "ok"}
    history = [{"role": "system", "content": "Be brief."}, same, reply, same, reply, same]
    session = tightfit.Session(MODEL, budget=100_000)
    for _ in range(2):
        result = session.fit(history)
        assert result.messages == history
        assert result.report.compressed_token_count == tightfit.count(history, MODEL).total


def test_a_format_given_after_detection_reads_the_history_in_that_format() -> None:
    history = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi"}, {"role": "user", "content": "Go on"}]
    session = tightfit.Session("claude-sonnet-4-5", budget=10_000)
    session.fit(history)
    as_anthropic = session.fit(history, format="anthropic")
    expected = tightfit.Session("claude-sonnet-4-5", budget=10_000).fit(history, format="anthropic")
    assert as_anthropic.report.compressed_token_count == expected.report.compressed_token_count
    assert as_anthropic.plan.format == expected.plan.format == "anthropic"


@pytest.mark.parametrize("value", [float("nan"), {1: "x"}, Decimal("NaN"), {"a", "b"}], ids=["nan", "int key", "decimal nan", "set"])
def test_a_bad_value_in_a_new_message_names_where_it_is(value: object) -> None:
    """Whether the dicts are read afresh (data that cannot be hashed) or only the new one is
    (data that can), the error is the one `fit` gives, at the same path."""
    history = json.loads(json.dumps(run(0)[:4]))
    session = tightfit.Session(MODEL, budget=100_000)
    session.fit(history)
    bad = [*history, {"role": "user", "content": [{"type": "text", "text": "hi", "extra": value}]}]
    with pytest.raises(tightfit.FormatError) as info:
        session.fit(bad)
    assert (info.value.index, info.value.path) == (4, "messages[4].content[0].extra")
    with pytest.raises(tightfit.FormatError, match=r"^messages\[4\]\.content: "):
        session.fit([*history, {"role": "user", "content": 7}])
    assert session.fit(history).messages == history


def test_between_the_marks_a_compaction_waits_while_it_would_cost_more_than_it_saves() -> None:
    """At Anthropic's prices a cached token costs a tenth of a miss, so past a lowered high-water
    mark a session that marks its requests for the cache keeps extending them (to the budget at
    most); told not to weigh the misses, or with nothing cached (no marks), it compacts at the
    mark."""
    messages = run(0)
    budget = 6_000

    def requests(session: tightfit.Session) -> tuple[list[int], int]:
        sizes, compactions = [], 0
        for end in request_points(messages):
            result = session.fit(messages[:end])
            sizes.append(result.report.compressed_token_count)
            compactions += result.report.session.compacted
        return sizes, compactions

    marks = {"budget": budget, "high_water": 0.7, "low_water": 0.5, "cache_breakpoints": True}
    weighed = tightfit.Session("claude-sonnet-4-5", **marks)
    at_mark = tightfit.Session("claude-sonnet-4-5", weigh_cache_misses=False, **marks)
    uncached = tightfit.Session("claude-sonnet-4-5", **{**marks, "cache_breakpoints": False})
    assert (weighed.weigh_cache_misses, at_mark.weigh_cache_misses) == (True, False)
    waited, waited_compactions = requests(weighed)
    marked, marked_compactions = requests(at_mark)
    assert max(marked) <= 0.7 * budget < max(waited) <= budget
    assert waited_compactions < marked_compactions
    assert requests(uncached) == (marked, marked_compactions)


def test_nesting_is_bounded_as_for_a_stateless_fit() -> None:
    """Reading only the new dicts keeps the nesting limit of reading the whole list."""

    def message(depth: int) -> dict[str, Any]:
        deep: object = "bottom"
        for _ in range(depth):
            deep = [deep]
        return {"role": "user", "content": "x", "extra": deep}

    def accepted(call: Any, depth: int) -> bool:
        try:
            call([message(depth)])
        except tightfit.FormatError as e:
            assert "nested deeper than" in str(e)
            return False
        return True

    limit = next(d for d in range(120, 140) if not accepted(lambda m: tightfit.count(m, MODEL), d))
    session = tightfit.Session(MODEL, budget=10_000)
    assert accepted(session.fit, limit - 1)
    assert not accepted(session.fit, limit)


def test_a_claude_session_replays_plain_chats_with_two_user_turns_in_a_row() -> None:
    """Plain messages are read in the model's format: for Claude, two user turns in a row are
    merged by the repair pass every turn, and the session still replays its decision instead of
    compacting each turn."""
    chats = [r["messages"] for r in records("chat_aider_sessions.jsonl")[:60]]
    stream: Messages = [m for chat in chats for m in chat if m["role"] != "system"]
    assert any(a["role"] == b["role"] == "user" for a, b in zip(stream, stream[1:])), "the stream has user turns in a row"
    session = tightfit.Session("claude-sonnet-4-5", budget=6_000)
    ends = [end for end in range(1, len(stream) + 1) if stream[end - 1]["role"] != "assistant"]
    compactions = 0
    for end in ends:
        result = session.fit(stream[:end])
        assert result.plan.format == "anthropic"
        assert result.report.compressed_token_count <= 6_000
        assert tightfit.validate(result.messages, provider="anthropic") == []
        compactions += result.report.session.compacted
    assert 0 < compactions * 5 <= len(ends), f"{compactions} compactions in {len(ends)} turns"

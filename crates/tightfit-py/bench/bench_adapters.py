"""tightfit's drop-in adapters alone, timed on the same inputs: for comparing two builds of
tightfit (a change against the commit before it), not tightfit against its peers.

Runs in a minute or two, where ``bench_all.py`` (which times the peers too) takes hours. Each
line is the best of several runs of one adapter operation on the first 1,000 or all 4,857
messages of the 1M-token agent history (``../shared/data/extreme_long.jsonl``), at 32k and
128k. Run it with each build installed and compare the columns::

    python crates/tightfit-py/bench/bench_adapters.py > after.txt

Needs the peers of ``crates/tightfit-py/requirements-test.txt`` installed (the adapters
subclass or return their types); tiktoken's vocabularies come from ``TIKTOKEN_CACHE_DIR``,
filled from ``../shared/tools/tiktoken_cache.py`` when unset (by ``bench_autogen_core``).
"""

from __future__ import annotations

from typing import Any, Callable

# the autogen helpers of the peer benchmark; importing it also points tiktoken at the local
# vocabularies before any tokenizer loads
from bench_autogen_core import autogen_messages, now
from autogen_ext.models.openai import OpenAIChatCompletionClient
from benchkit import agent_history, best, fmt
from langchain_core.messages import convert_to_messages

from tightfit.compat import ag2, autogen_core, langchain, swarms


def token_limited(client: Any, budget: int, messages: list[Any]) -> Callable[[], Any]:
    def run() -> Any:
        context = autogen_core.TokenLimitedChatCompletionContext(client, token_limit=budget)
        for m in messages:
            now(context.add_message(m))
        return now(context.get_messages())

    return run


def main() -> None:
    full = agent_history()
    client = OpenAIChatCompletionClient(model="gpt-4o", api_key="not-used")
    rows: list[tuple[str, int, float]] = []
    for n in [1_000, len(full)]:
        messages = full[:n]
        lc = convert_to_messages(messages)
        autogen = autogen_messages(messages)
        for budget in [32_000, 128_000]:
            k = f"{budget // 1000}k"
            limiter = dict(max_tokens=budget, max_tokens_per_message=2000, model="gpt-4o")
            rows.append((f"ag2 MessageTokenLimiter({k}) first call", n, best(lambda: ag2.MessageTokenLimiter(**limiter).apply_transform(messages))))
            rows.append((f"langchain trim_messages({k}, count_tokens)", n, best(lambda: langchain.trim_messages(lc, max_tokens=budget, token_counter=langchain.count_tokens))))
            rows.append((f"langchain trim_messages({k}, approximate)", n, best(lambda: langchain.trim_messages(lc, max_tokens=budget, token_counter="approximate"))))
            rows.append((f"autogen TokenLimited({k}) fill + get_messages", n, best(token_limited(client, budget, autogen))))
            config = swarms.TransformConfig(enabled=True, max_tokens=budget, model_name="gpt-4o")
            rows.append((f"swarms transform_messages(max_tokens={k})", n, best(lambda: swarms.MessageTransforms(config).transform_messages(messages))))
        rows.append(("ag2 MessageHistoryLimiter(10)", n, best(lambda: ag2.MessageHistoryLimiter(max_messages=10).apply_transform(messages))))
        rows.append(("ag2 TextMessageContentName()", n, best(lambda: ag2.TextMessageContentName().apply_transform(messages))))
        config = swarms.TransformConfig(enabled=True, max_messages=100, model_name="gpt-4o")
        rows.append(("swarms transform_messages(max_messages=100)", n, best(lambda: swarms.MessageTransforms(config).transform_messages(messages))))
    width = max(len(name) for name, _, _ in rows)
    for name, n, seconds in rows:
        print(f"{name:<{width}}  {n:>5}  {fmt(seconds)}")


if __name__ == "__main__":
    main()

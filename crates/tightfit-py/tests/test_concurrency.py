"""The engine runs without the GIL, and the async variants do not block the event loop."""

from __future__ import annotations

import asyncio
import threading
import time

import tightfit
from conftest import LARGEST, extreme


def test_other_threads_run_python_while_fit_works() -> None:
    messages = extreme(LARGEST)
    tightfit.count(messages)  # warm the tokenizer tables
    counter = 0
    stop = threading.Event()

    def spin() -> None:
        nonlocal counter
        while not stop.is_set():
            counter += 1

    thread = threading.Thread(target=spin)
    thread.start()
    try:
        time.sleep(0.05)
        before = counter
        started = time.perf_counter()
        tightfit.fit(messages, budget=128_000)
        elapsed = time.perf_counter() - started
        during = counter - before
    finally:
        stop.set()
        thread.join()
    # Holding the GIL for the whole call would leave the spinning thread a few switch
    # intervals at most; released, it runs for most of the call.
    assert elapsed > 0.05
    assert during > 2_000, f"{during} increments in {elapsed:.3f} s"


def test_afit_lets_other_coroutines_run() -> None:
    messages = extreme(LARGEST)

    async def main() -> tuple[int, float, tightfit.FitResult]:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        started = time.perf_counter()
        result = await tightfit.afit(messages, budget=128_000)
        elapsed = time.perf_counter() - started
        done.set()
        await task
        return ticks, elapsed, result

    ticks, elapsed, result = asyncio.run(main())
    assert result.report.compressed_token_count <= 128_000
    # one tick per millisecond at best; a blocked loop would tick once or twice
    assert ticks >= max(5, elapsed * 1000 / 20), f"{ticks} ticks in {elapsed:.3f} s"


def test_async_fits_run_concurrently() -> None:
    histories = [extreme("concat/mini-swe-deepseek/250k"), extreme("concat/tau-bench-airline/250k")]

    async def main() -> list[tightfit.FitResult]:
        return await asyncio.gather(*(tightfit.afit(h, budget=32_000) for h in histories))

    results = asyncio.run(main())
    for history, result in zip(histories, results, strict=True):
        assert result.report.original_message_count == len(history)
        assert result.report.compressed_token_count <= 32_000

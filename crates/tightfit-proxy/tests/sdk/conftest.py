"""What the SDK tests share: a fake upstream on loopback that records every request and
replays recorded responses byte for byte, the real ``tightfit serve`` binary in front of it
(found through ``TIGHTFIT_BIN``), and an HTTP transport that keeps the raw bytes a client
received.

Nothing here leaves 127.0.0.1; every process and server a test starts is stopped by the
fixture that started it.
"""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx2  # the HTTP client both pinned SDKs are built on (see requirements.txt)
import pytest


@dataclass
class Received:
    """A request as the fake upstream received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)


@dataclass
class Reply:
    """A recorded response: its status, headers and body in the chunks it is written in (more
    than one: sent with chunked transfer encoding, each chunk flushed on its own)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: list[bytes]
    pause: float = 0.0  # between two chunks, so a stream really arrives in pieces

    @property
    def body(self) -> bytes:
        return b"".join(self.chunks)


def recorded_completion(n: int) -> Reply:
    """An OpenAI chat completion as the API sends it (pretty-printed), numbered so every
    turn's answer differs."""
    body = (
        '{\n  "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG%d",\n  "object": "chat.completion",\n'
        '  "created": 1741570283,\n  "model": "gpt-4o-2024-08-06",\n  "choices": [\n    {\n'
        '      "index": 0,\n      "message": {\n        "role": "assistant",\n'
        '        "content": "Turn %d: I\'ll run the tests next.",\n        "refusal": null,\n'
        '        "annotations": []\n      },\n      "logprobs": null,\n      "finish_reason": "stop"\n'
        '    }\n  ],\n  "usage": {\n    "prompt_tokens": 1117,\n    "completion_tokens": 46,\n'
        '    "total_tokens": 1163,\n    "prompt_tokens_details": {\n      "cached_tokens": 1024,\n'
        '      "audio_tokens": 0\n    },\n    "completion_tokens_details": {\n'
        '      "reasoning_tokens": 0,\n      "audio_tokens": 0,\n      "accepted_prediction_tokens": 0,\n'
        '      "rejected_prediction_tokens": 0\n    }\n  },\n  "service_tier": "default",\n'
        '  "system_fingerprint": "fp_f9f4fb6dbf"\n}\n' % (n, n)
    )
    return Reply(200, [("content-type", "application/json"), ("openai-processing-ms", "412")], [body.encode()])


def recorded_message(n: int) -> Reply:
    """An Anthropic message as the API sends it (compact JSON), numbered like the above."""
    body = (
        '{"model":"claude-sonnet-4-5-20250929","id":"msg_01XFDUDYJgAACzvnptvVoYE%d","type":"message",'
        '"role":"assistant","content":[{"type":"text","text":"Turn %d: the \\u00e9diteur is fixed."}],'
        '"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2095,'
        '"cache_creation_input_tokens":0,"cache_read_input_tokens":1800,"output_tokens":503,'
        '"service_tier":"standard"}}' % (n, n)
    )
    return Reply(200, [("content-type", "application/json"), ("request-id", "req_%d" % n)], [body.encode()])


class FakeUpstream:
    """An upstream on 127.0.0.1 that records every request and answers with the next queued
    `Reply`, else a recorded answer of the route's shape. `sent` holds every body it wrote."""

    def __init__(self) -> None:
        self.received: list[Received] = []
        self.sent: list[bytes] = []
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._count = itertools.count(1)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def then(self, status: int, headers: list[tuple[str, str]], chunks: list[bytes], pause=0.0) -> None:
        """Queues the answer to a coming request: `chunks` written one by one (`pause` s apart)."""
        with self._lock:
            self._replies.append(Reply(status, headers, chunks, pause))

    def last(self) -> Received:
        assert self.received, "the upstream received no request"
        return self.received[-1]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _next_reply(self, path: str) -> Reply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        n = next(self._count)
        if path == "/v1/chat/completions":
            return recorded_completion(n)
        if path == "/v1/messages":
            return recorded_message(n)
        body = b'{"error":{"message":"no such route","type":"invalid_request_error","param":null,"code":null}}'
        return Reply(404, [("content-type", "application/json")], [body])

    def _handler(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as real APIs

            def do_GET(self):
                self._answer()

            def do_POST(self):
                self._answer()

            def _answer(self):
                length = int(self.headers.get("content-length", "0"))
                body = self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                with fake._lock:
                    fake.received.append(Received(self.command, self.path, headers, body))
                reply = fake._next_reply(self.path.split("?")[0])
                with fake._lock:
                    fake.sent.append(reply.body)
                self.send_response(reply.status)
                for name, value in reply.headers:
                    self.send_header(name, value)
                if len(reply.chunks) == 1:
                    self.send_header("content-length", str(len(reply.body)))
                    self.end_headers()
                    self.wfile.write(reply.body)
                    self.wfile.flush()
                    return
                self.send_header("transfer-encoding", "chunked")
                self.end_headers()
                for i, chunk in enumerate(reply.chunks):
                    if i and reply.pause:
                        time.sleep(reply.pause)
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def log_message(self, *args):  # quiet: pytest shows failures, not traffic
                pass

        return Handler


@dataclass
class Proxy:
    """A running ``tightfit serve``: its base URL, its upstream, its log file."""

    url: str
    upstream: FakeUpstream
    process: subprocess.Popen
    log: Path
    cap: int | None = None

    def log_text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture(scope="session")
def tightfit_bin() -> str:
    """The binary under test. Missing, the suite fails: it must never pass by not running."""
    path = os.environ.get("TIGHTFIT_BIN")
    if not path:
        pytest.fail("TIGHTFIT_BIN is not set: point it at the built binary (cargo build -p tightfit-cli)")
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.fail(f"TIGHTFIT_BIN={path!r} is not an executable file (cargo build -p tightfit-cli)")
    return path


@pytest.fixture
def start_proxy(tightfit_bin, tmp_path):
    """Starts a fake upstream and a proxy in front of it (both routes, state in memory, input
    capped at `cap` tokens if given); both are stopped at the test's end, the proxy by
    SIGTERM, which it must survive with exit status 0."""
    started: list[Proxy] = []

    def start(cap: int | None = None) -> Proxy:
        upstream = FakeUpstream()
        config = tmp_path / ("proxy-%d.toml" % len(started))
        config.write_text("[policy]\nmax_input_tokens = %d\n" % cap if cap else "")
        log = tmp_path / ("proxy-%d.log" % len(started))
        with open(log, "wb") as stderr:
            process = subprocess.Popen(
                [tightfit_bin, "serve", "--config", str(config), "--listen", "127.0.0.1:0",
                 "--store", "memory", "--upstream", "openai=" + upstream.url,
                 "--upstream", "anthropic=" + upstream.url],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
            )
        proxy = Proxy("", upstream, process, log, cap)
        started.append(proxy)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for line in proxy.log_text().splitlines():
                if "addr=" in line:
                    proxy.url = "http://" + line.split("addr=")[1].split()[0]
                    return proxy
            if process.poll() is not None:
                pytest.fail(f"tightfit serve exited with {process.returncode}:\n{proxy.log_text()}")
            time.sleep(0.02)
        pytest.fail(f"tightfit serve did not log its address within 30 s:\n{proxy.log_text()}")

    yield start
    failures = []
    for proxy in started:
        proxy.process.send_signal(signal.SIGTERM)
        try:
            status = proxy.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proxy.process.kill()
            proxy.process.wait()
            status = "none (killed after 15 s)"
        proxy.upstream.stop()
        if status != 0:
            failures.append(f"the proxy's exit status on SIGTERM: {status}\n{proxy.log_text()[-4000:]}")
    if failures:
        pytest.fail("\n".join(failures))


class _TeeStream(httpx2.SyncByteStream):
    def __init__(self, inner: httpx2.SyncByteStream, into: bytearray) -> None:
        self.inner, self.into = inner, into

    def __iter__(self):
        for chunk in self.inner:
            self.into.extend(chunk)
            yield chunk

    def close(self) -> None:
        self.inner.close()


class RawTransport(httpx2.HTTPTransport):
    """The SDKs' own transport, keeping each response body's bytes as they came off the wire
    (before the SDK decodes anything), so a test can compare them with what the upstream
    sent while the SDK parses the same response."""

    def __init__(self) -> None:
        super().__init__()
        self.bodies: list[bytearray] = []

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        response = super().handle_request(request)
        body = bytearray()
        self.bodies.append(body)
        return httpx2.Response(
            status_code=response.status_code,
            headers=response.headers,
            stream=_TeeStream(response.stream, body),
            extensions=response.extensions,
        )


@pytest.fixture
def raw_transport():
    transport = RawTransport()
    yield transport
    transport.close()

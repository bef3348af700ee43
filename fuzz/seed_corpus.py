#!/usr/bin/env python3
"""Seeds the fuzz corpora from the shared corpus beside the repository.

    python3 fuzz/seed_corpus.py [--shared DIR] [--per-file N] [--max-bytes B]

Writes one file per seed (named by its SHA-1, as libFuzzer names its own) into
fuzz/corpus/<target>/:

- parse_openai, parse_auto: conversations of shared/data/*.jsonl (whole records and their bare
  `messages` lists) and the `input` of the cases of shared/conformance/*.jsonl;
- parse_anthropic, parse_auto: the same conversations reshaped as Anthropic request bodies
  (system prompt on top, tool_use and tool_result blocks, thinking), and a few bodies with
  images, documents and redacted thinking;
- image_header: image headers (PNG, GIF, JPEG, WebP, BMP) as raw bytes and as data URIs.

Only conversations of at most --max-bytes bytes are taken, so that libFuzzer's input size
limit stays small and runs stay fast. The corpora are not committed (.gitignore).
"""

import argparse
import base64
import hashlib
import json
import struct
from pathlib import Path

FUZZ = Path(__file__).resolve().parent


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = FUZZ / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)


def compact(value):
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def text_of(content):
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def anthropic_body(messages, blocks_system):
    """An OpenAI message list reshaped as an Anthropic request body."""
    system, out = [], []
    for message in messages:
        role, content = message.get("role"), message.get("content")
        if role in ("system", "developer"):
            system.append(text_of(content))
        elif role == "tool":
            result = {"type": "tool_result", "tool_use_id": message.get("tool_call_id", ""), "content": text_of(content)}
            last = out[-1] if out else None
            if last and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        elif role == "assistant":
            blocks = []
            if message.get("reasoning_content"):
                blocks.append({"type": "thinking", "thinking": message["reasoning_content"], "signature": "c2lnbmF0dXJl"})
            if text_of(content):
                blocks.append({"type": "text", "text": text_of(content)})
            for call in message.get("tool_calls") or []:
                function = call.get("function", {})
                try:
                    arguments = json.loads(function.get("arguments", "{}"))
                except ValueError:
                    arguments = {"raw": function.get("arguments")}
                blocks.append({"type": "tool_use", "id": call.get("id", ""), "name": function.get("name", ""), "input": arguments})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": text_of(content)})
    body = {"model": "claude-sonnet-4-5", "max_tokens": 1024}
    if system:
        prompt = "\n".join(system)
        body["system"] = [{"type": "text", "text": prompt, "cache_control": {"type": "ephemeral"}}] if blocks_system else prompt
    body["messages"] = out
    return body


def png(width, height):
    return b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + struct.pack(">II", width, height) + b"\x08\x06\x00\x00\x00\x00\x00\x00\x00"


def gif(width, height):
    return b"GIF89a" + struct.pack("<HH", width, height) + b"\x00\x00\x00"


def jpeg(width, height):
    sof = b"\xff\xc0\x00\x11\x08" + struct.pack(">HH", height, width) + b"\x03\x01\x22\x00\x02\x11\x01\x03\x11\x01"
    return b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00" + sof


def webp(width, height):
    chunk = b"VP8X" + struct.pack("<I", 10) + b"\x00\x00\x00\x00" + (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return b"RIFF" + struct.pack("<I", 4 + len(chunk)) + b"WEBP" + chunk


def bmp(width, height):
    return b"BM" + b"\x00" * 12 + struct.pack("<IiiHH", 40, width, height, 1, 24)


def handmade_anthropic():
    image = base64.b64encode(png(800, 600)).decode()
    return [
        {
            "model": "claude-opus-4-1",
            "max_tokens": 2048,
            "system": [{"type": "text", "text": "Describe what you see.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": image}},
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "A short memo."}, "title": "memo", "citations": {"enabled": True}},
                    {"type": "text", "text": "What is in these?"},
                ]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Two images and a memo.", "signature": "EqQBCkYIBxgCKkA="},
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"},
                    {"type": "tool_use", "id": "toolu_01A", "name": "zoom", "input": {"factor": 2.5, "region": [0, 0, 10, 10]}},
                    {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "cat breeds"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_01A", "content": [{"type": "text", "text": "zoomed"}], "is_error": False},
                    {"type": "text", "text": "Go on."},
                ]},
            ],
            "tools": [
                {"name": "zoom", "description": "Zoom in", "input_schema": {"type": "object", "properties": {"factor": {"type": "number"}}, "required": ["factor"]}},
                {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
            ],
            "tool_choice": {"type": "auto"},
            "thinking": {"type": "enabled", "budget_tokens": 1024},
        },
        [
            {"role": "system", "content": "Bare lists may carry a system message."},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": True, "content": "boom"}]},
        ],
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=FUZZ.parent.parent / "shared")
    parser.add_argument("--per-file", type=int, default=40, help="conversations taken from each file")
    parser.add_argument("--max-bytes", type=int, default=12_000, help="largest conversation taken")
    args = parser.parse_args()

    openai = []
    for path in sorted((args.shared / "data").glob("*.jsonl")):
        taken = 0
        for line in path.read_text().splitlines():
            if taken < args.per_file and 0 < len(line.encode()) <= args.max_bytes:
                record = json.loads(line)
                openai += [record, record["messages"]]
                taken += 1
    for path in sorted((args.shared / "conformance").glob("*.jsonl")):
        taken = 0
        for line in path.read_text().splitlines():
            case = json.loads(line)
            seed = case.get("input")
            if taken < args.per_file and seed is not None and len(compact(seed).encode()) <= args.max_bytes:
                openai.append(seed)
                taken += 1

    anthropic = handmade_anthropic()
    for i, seed in enumerate(openai):
        messages = seed.get("messages") if isinstance(seed, dict) else seed
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            anthropic.append(anthropic_body(messages, blocks_system=i % 2 == 1))

    for seed in openai:
        write("parse_openai", compact(seed))
        write("parse_auto", compact(seed))
    for seed in anthropic:
        write("parse_anthropic", compact(seed))
        write("parse_auto", compact(seed))

    for width, height in [(1, 1), (800, 600), (4096, 2160), (65535, 1)]:
        for header in (png, gif, jpeg, webp, bmp):
            data = header(width, height)
            write("image_header", data)
            write("image_header", "data:image/png;base64," + base64.b64encode(data).decode())

    for target in ("parse_openai", "parse_anthropic", "parse_auto", "image_header"):
        print(f"{target}: {len(list((FUZZ / 'corpus' / target).iterdir()))} seeds")


if __name__ == "__main__":
    main()

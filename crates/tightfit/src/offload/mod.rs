//! Offload: what a fit removes or cuts goes to a [`Store`] under a stable handle, and the
//! history keeps a placeholder that names the handle, so nothing a user gave is lost.
//!
//! With a store lent to a run ([`Services::with_offload`](crate::fit::Services::with_offload),
//! `tightfit fit --store F`, `tightfit.fit(..., store=...)`, a session's compactions), every
//! input message the steps dropped or cut is written to the store as it came, and the output
//! says where it went:
//!
//! - a run of dropped messages leaves one user message where it was ("12 messages
//!   (3-14 of the conversation) were offloaded here ...; recall("tf-…") returns them", with a
//!   one-line gist: the first user words, the tools called, the sizes), or, where a step
//!   already left a trace there (a session's compaction), the handle is added to that trace;
//! - a message a step cut (a truncated or cleared tool result, thinking removed) keeps a note
//!   naming the handle of its original.
//!
//! A handle is content-addressed (`tf-` and 16 hex digits of the xxh3-128 of what it holds),
//! so the same removal gives the same handle and the same bytes turn after turn, which keeps a
//! provider's prompt cache. [`recall`] gives the messages back exactly as they came (their
//! wire JSON, paged for a model); [`recall_tool`] is the schema of a tool a caller can offer
//! the model, and [`answer_recall`] answers its calls. The report lists every handle with the
//! input messages it holds ([`Offloaded`]).
//!
//! Cost: one pass over the output after the steps; the notes make the request a little larger,
//! so when they push it past the budget the run is made again aiming that much lower (at most
//! [`MAX_ATTEMPTS`] runs; counts are cached, so a second run costs the steps, not the
//! tokenizer). Blobs are written to the store only when the run succeeds.

mod annotate;
mod gist;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use xxhash_rust::xxh3::xxh3_128;

pub(crate) use annotate::annotate;

use crate::format::{messages_to_value, parse_messages, Format};
use crate::message::Message;
use crate::store::{Store, StoreError, StoreErrorKind};

/// How a handle starts.
pub const HANDLE_PREFIX: &str = "tf-";

/// The store key of a handle's blob: offloaded content lives beside session checkpoints,
/// under keys no conversation key can take (those are 32 hex digits).
const KEY_PREFIX: &str = "offload/";

/// The version of the blob format this build writes and reads.
pub const BLOB_VERSION: u64 = 1;

/// The most runs a fit makes to fit the offload notes within the budget.
pub const MAX_ATTEMPTS: usize = 4;

/// The name of the recall tool.
pub const RECALL_TOOL: &str = "tightfit_recall";

/// What one handle holds, as the report lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offloaded {
    /// The handle (`tf-` and 16 hex digits).
    pub handle: String,
    /// The input indices of the messages it holds, in order.
    pub messages: Vec<usize>,
    /// `removed` (the messages are not sent) or `cut` (the message is sent shortened; the
    /// handle holds the whole of it).
    pub kind: OffloadKind,
    /// For a cut, what the steps did to the message ("content: kept chars 0..1000 and
    /// 9000..10000 of 10000"); for a removal, the steps that removed the messages.
    pub detail: String,
}

impl Offloaded {
    /// The log line: `offload tf-0123456789abcdef: messages 3-14 (removed by compact)`.
    pub fn line(&self) -> String {
        let which = match (self.messages.first(), self.messages.last()) {
            (Some(a), Some(b)) if a == b => crate::text::message_span(*a, *b),
            (Some(a), Some(b)) => format!("{} ({})", crate::text::message_span(*a, *b), self.messages.len()),
            _ => "nothing".to_string(),
        };
        let kind = match self.kind {
            OffloadKind::Removed => "",
            OffloadKind::Cut => "cut: ",
        };
        format!("offload {}: {which} ({kind}{})", self.handle, self.detail)
    }
}

/// Whether offloaded messages were removed or cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OffloadKind {
    /// Not sent at all.
    Removed,
    /// Sent shortened (truncated, replaced by a placeholder, parts removed).
    Cut,
}

/// A blob waiting to be written: its handle and bytes.
#[derive(Debug, Clone)]
pub(crate) struct Blob {
    pub(crate) handle: String,
    pub(crate) bytes: Vec<u8>,
}

/// Input messages per chunk of a long run's blobs (by index: chunk k holds the indices
/// `k·64..(k+1)·64`), so that a session's next compaction, whose run holds this one's again,
/// writes only the chunks that changed: storage grows with the history, not with its square.
pub(crate) const CHUNK: usize = 64;

impl Blob {
    /// The blobs holding `messages` (input index, message, indices ascending) in `format`'s
    /// wire shape, and the handle that recalls them all: one blob for a run within one chunk;
    /// else a blob per chunk and a manifest naming them in order (the handle is the manifest's).
    pub(crate) fn of_run(messages: &[(usize, &Message)], format: Format) -> (String, Vec<Blob>) {
        let same_chunk = |a: &(usize, &Message), b: &(usize, &Message)| a.0 / CHUNK == b.0 / CHUNK;
        if messages.chunk_by(same_chunk).nth(1).is_none() {
            let blob = Blob::of(messages, format);
            return (blob.handle.clone(), vec![blob]);
        }
        let mut blobs: Vec<Blob> = messages.chunk_by(same_chunk).map(|c| Blob::of(c, format)).collect();
        let manifest = json!({
            "tightfit_offload": BLOB_VERSION,
            "format": format.as_str(),
            "chunks": blobs.iter().map(|b| b.handle.as_str()).collect::<Vec<_>>(),
        });
        let manifest = Blob::of_bytes(serde_json::to_vec(&manifest).expect("a manifest is plain JSON"));
        let handle = manifest.handle.clone();
        blobs.push(manifest);
        (handle, blobs)
    }

    /// A blob of `bytes`, named by their hash.
    fn of_bytes(bytes: Vec<u8>) -> Blob {
        Blob { handle: format!("{HANDLE_PREFIX}{:016x}", (xxh3_128(&bytes) >> 64) as u64), bytes }
    }

    /// The blob holding `messages` (input index, message) in `format`'s wire shape.
    pub(crate) fn of(messages: &[(usize, &Message)], format: Format) -> Blob {
        let entries: Vec<Value> = messages
            .iter()
            .map(|(index, message)| json!({"index": index, "message": write_one(message, format)}))
            .collect();
        let document = json!({
            "tightfit_offload": BLOB_VERSION,
            "format": format.as_str(),
            "messages": entries,
        });
        Blob::of_bytes(serde_json::to_vec(&document).expect("a blob is plain JSON"))
    }
}

/// Writes the `blobs` not in `store` yet (a handle names its bytes: one there is the same).
pub(crate) fn write(store: &dyn Store, blobs: &[Blob]) -> Result<(), StoreError> {
    for blob in blobs {
        let key = format!("{KEY_PREFIX}{}", blob.handle);
        if store.load(&key)?.is_none() {
            store.save(&key, &blob.bytes)?;
        }
    }
    Ok(())
}

/// What a handle gives back.
#[derive(Debug, Clone, PartialEq)]
pub struct Recalled {
    /// The wire format the messages are in.
    pub format: Format,
    /// The messages as they came, with their input indices.
    pub messages: Vec<(usize, Message)>,
    /// The messages as a JSON array of `{"index", "message"}` (the input index, the message in
    /// the wire format): what a model reads through the recall tool.
    pub text: String,
}

impl Recalled {
    /// Up to `limit` characters of [`text`](Recalled::text) from character `offset` (all the
    /// rest when `None`).
    pub fn page(&self, offset: usize, limit: Option<usize>) -> Page {
        let total = self.text.chars().count();
        let start = offset.min(total);
        let end = limit.map_or(total, |l| start.saturating_add(l).min(total));
        let content: String = self.text.chars().skip(start).take(end - start).collect();
        Page { content, offset: start, total_chars: total, next_offset: (end < total).then_some(end) }
    }
}

/// A page of recalled content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Page {
    /// The characters of this page.
    pub content: String,
    /// Where it starts, in characters.
    pub offset: usize,
    /// The length of the whole content, in characters.
    pub total_chars: usize,
    /// Where the next page starts, if there is more.
    pub next_offset: Option<usize>,
}

/// Why a handle could not be recalled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecallError {
    /// The text is not a handle.
    #[error("{0:?} is not a tightfit handle (they look like \"tf-\" and 16 hex digits)")]
    NotAHandle(String),
    /// The store holds nothing under the handle.
    #[error("{store}: no offloaded content under {handle} (offloaded into another store, or forgotten)")]
    Unknown {
        /// The handle.
        handle: String,
        /// The store, as it describes itself.
        store: String,
    },
    /// The store failed, or what it holds under the handle is not a blob this build reads.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Whether `text` has the shape of a handle.
pub fn is_handle(text: &str) -> bool {
    text.strip_prefix(HANDLE_PREFIX).is_some_and(|hex| {
        hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    })
}

/// The messages offloaded under `handle` in `store`, exactly as they came.
pub fn recall(store: &dyn Store, handle: &str) -> Result<Recalled, RecallError> {
    recall_blob(store, handle, true)
}

/// [`recall`] of one blob: a manifest of chunks only where `manifest_allowed` (a chunk is
/// never a manifest).
fn recall_blob(store: &dyn Store, handle: &str, manifest_allowed: bool) -> Result<Recalled, RecallError> {
    let handle = handle.trim();
    if !is_handle(handle) {
        return Err(RecallError::NotAHandle(handle.to_string()));
    }
    let bytes = store
        .load(&format!("{KEY_PREFIX}{handle}"))?
        .ok_or_else(|| RecallError::Unknown { handle: handle.to_string(), store: store.describe() })?;
    let corrupt = |reason: String| {
        RecallError::Store(StoreError::new(
            StoreErrorKind::Corrupt,
            store.describe(),
            format!("{handle}: {reason}"),
        ))
    };
    let document: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    match document.get("tightfit_offload").and_then(Value::as_u64) {
        Some(BLOB_VERSION) => {}
        Some(version) => {
            return Err(RecallError::Store(StoreError::new(
                StoreErrorKind::Version,
                store.describe(),
                format!("{handle} was written in offload format {version}; this build reads {BLOB_VERSION}"),
            )))
        }
        None => return Err(corrupt("not offloaded content".into())),
    }
    let format: Format = document
        .get("format")
        .and_then(Value::as_str)
        .ok_or_else(|| corrupt("no format".into()))?
        .parse()
        .map_err(corrupt)?;
    if let Some(chunks) = document.get("chunks") {
        let chunks = chunks
            .as_array()
            .filter(|_| manifest_allowed)
            .ok_or_else(|| corrupt("a manifest inside a manifest".into()))?;
        let mut whole = Recalled { format, messages: Vec::new(), text: String::new() };
        let mut wire: Vec<Value> = Vec::new();
        for chunk in chunks {
            let chunk = chunk.as_str().ok_or_else(|| corrupt("chunks: not a handle".into()))?;
            let part = recall_blob(store, chunk, false)?;
            wire.extend(serde_json::from_str::<Vec<Value>>(&part.text).map_err(|e| corrupt(e.to_string()))?);
            whole.messages.extend(part.messages);
        }
        whole.text = serde_json::to_string(&wire).expect("plain JSON");
        return Ok(whole);
    }
    let entries =
        document.get("messages").and_then(Value::as_array).ok_or_else(|| corrupt("no messages".into()))?;
    let mut messages = Vec::with_capacity(entries.len());
    let mut wire = Vec::with_capacity(entries.len());
    for (at, entry) in entries.iter().enumerate() {
        let index = entry
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| corrupt(format!("messages[{at}]: no index")))?;
        let value =
            entry.get("message").cloned().ok_or_else(|| corrupt(format!("messages[{at}]: no message")))?;
        let message = parse_messages(Value::Array(vec![value.clone()]), format)
            .map_err(|e| corrupt(format!("messages[{at}]: {e}")))?
            .pop()
            .ok_or_else(|| corrupt(format!("messages[{at}]: no message")))?;
        messages.push((index as usize, message));
        wire.push(json!({"index": index, "message": value}));
    }
    let text = serde_json::to_string(&wire).expect("plain JSON");
    Ok(Recalled { format, messages, text })
}

/// The recall tool's schema, for a caller to offer the model beside its own tools: OpenAI
/// Chat Completions' `{"type": "function", "function": {...}}`, OpenAI Responses' flat
/// `{"type": "function", "name", ...}` or Anthropic's `{"name", "description",
/// "input_schema"}`.
pub fn recall_tool(format: Format) -> Value {
    let description = "Read back messages that were offloaded from this conversation to fit the context \
        window. Placeholders in the conversation name a handle (\"tf-\" and 16 hex digits); this returns \
        the original messages as JSON, a page at a time.";
    let parameters = json!({
        "type": "object",
        "properties": {
            "handle": {"type": "string", "description": "The handle named in the placeholder, e.g. tf-0123456789abcdef."},
            "offset": {"type": "integer", "minimum": 0, "description": "The first character to return (default 0)."},
            "limit": {"type": "integer", "minimum": 1, "description": "The most characters to return (default 20000)."}
        },
        "required": ["handle"],
        "additionalProperties": false
    });
    match format {
        Format::Anthropic => {
            json!({"name": RECALL_TOOL, "description": description, "input_schema": parameters})
        }
        Format::Responses => json!({
            "type": "function", "name": RECALL_TOOL, "description": description, "parameters": parameters
        }),
        _ => json!({
            "type": "function",
            "function": {"name": RECALL_TOOL, "description": description, "parameters": parameters}
        }),
    }
}

/// The characters a recall tool call returns when its `limit` is not given.
pub const DEFAULT_RECALL_LIMIT: usize = 20_000;

/// Answers a call of the recall tool: `arguments` as the model wrote them (a JSON object, or
/// its text). The answer is the text of the tool result: the page as JSON (`content`,
/// `offset`, `total_chars`, `next_offset`), or an error the model can read and act on. Only
/// the store failing is an `Err`.
pub fn answer_recall(store: &dyn Store, arguments: &Value) -> Result<String, StoreError> {
    let arguments = match arguments {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        other => other.clone(),
    };
    let Some(handle) = arguments.get("handle").and_then(Value::as_str) else {
        return Ok("error: the call needs a \"handle\" argument (the tf-... named in a placeholder)".into());
    };
    let number = |key: &str| arguments.get(key).and_then(Value::as_u64).map(|n| n as usize);
    let offset = number("offset").unwrap_or(0);
    let limit = number("limit").unwrap_or(DEFAULT_RECALL_LIMIT).max(1);
    match recall(store, handle) {
        Ok(recalled) => Ok(serde_json::to_string(&recalled.page(offset, Some(limit))).expect("plain JSON")),
        Err(RecallError::Store(e))
            if !matches!(e.kind, StoreErrorKind::Corrupt | StoreErrorKind::Version) =>
        {
            Err(e)
        }
        Err(e) => Ok(format!("error: {e}")),
    }
}

fn write_one(message: &Message, format: Format) -> Value {
    match messages_to_value(std::slice::from_ref(message), format) {
        Value::Array(mut items) => items.pop().unwrap_or(Value::Null),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use crate::store::MemoryStore;

    #[test]
    fn a_blob_is_recalled_as_it_came_and_paged() {
        let store = MemoryStore::new();
        let a = Message::text(Role::User, "Fix the failing test in src/app.py");
        let b = Message::text(Role::Assistant, "Looking at src/app.py now — ünïcode too");
        let blob = Blob::of(&[(3, &a), (4, &b)], Format::OpenAi);
        assert!(is_handle(&blob.handle), "{}", blob.handle);
        assert_eq!(Blob::of(&[(3, &a), (4, &b)], Format::OpenAi).handle, blob.handle, "content-addressed");
        assert_ne!(Blob::of(&[(3, &a)], Format::OpenAi).handle, blob.handle);
        write(&store, std::slice::from_ref(&blob)).unwrap();
        let recalled = recall(&store, &blob.handle).unwrap();
        assert_eq!(recalled.messages, vec![(3, a), (4, b)]);
        let whole = recalled.page(0, None);
        assert_eq!(whole.content, recalled.text);
        assert_eq!(whole.next_offset, None);
        // pages put together give the whole text back, multi-byte characters included
        let mut joined = String::new();
        let mut offset = Some(0);
        while let Some(at) = offset {
            let page = recalled.page(at, Some(7));
            joined.push_str(&page.content);
            offset = page.next_offset;
        }
        assert_eq!(joined, recalled.text);
    }

    #[test]
    fn a_long_run_is_stored_in_chunks_that_the_next_longer_run_shares() {
        let store = MemoryStore::new();
        let messages: Vec<Message> =
            (0..300).map(|i| Message::text(Role::User, format!("message {i}"))).collect();
        let run = |to: usize| -> Vec<(usize, &Message)> { (3..to).map(|i| (i, &messages[i])).collect() };
        let (first, blobs) = Blob::of_run(&run(200), Format::OpenAi);
        assert_eq!(blobs.len(), 4 + 1, "chunks at 0, 64, 128, 192, and the manifest");
        write(&store, &blobs).unwrap();
        let (second, more) = Blob::of_run(&run(300), Format::OpenAi);
        let new = more.iter().filter(|b| blobs.iter().all(|old| old.handle != b.handle)).count();
        assert_eq!(new, 3, "the chunk at 192 grew, the one at 256 is new, and the manifest");
        write(&store, &more).unwrap();
        let back = recall(&store, &second).unwrap();
        assert_eq!(back.messages.len(), 297);
        assert!(back.messages.iter().all(|(i, m)| *m == messages[*i]));
        assert_eq!(recall(&store, &first).unwrap().messages.len(), 197);
        let entries: Vec<Value> = serde_json::from_str(&back.text).unwrap();
        assert_eq!((entries.len(), entries[0]["index"].clone()), (297, json!(3)));
        // a short run is one blob, its own handle
        let (short, one) = Blob::of_run(&run(10), Format::OpenAi);
        assert_eq!((one.len(), one[0].handle.clone()), (1, short));
    }

    #[test]
    fn bad_handles_and_blobs_are_clear_errors() {
        let store = MemoryStore::new();
        assert!(matches!(recall(&store, "tf-xyz"), Err(RecallError::NotAHandle(_))));
        let unknown = recall(&store, "tf-0123456789abcdef").unwrap_err();
        assert!(unknown.to_string().contains("no offloaded content under tf-0123456789abcdef"), "{unknown}");
        store.save("offload/tf-0123456789abcdef", b"{\"tightfit_offload\": 9}").unwrap();
        let newer = recall(&store, "tf-0123456789abcdef").unwrap_err();
        assert!(newer.to_string().contains("offload format 9"), "{newer}");
        store.save("offload/tf-0123456789abcdef", b"not json").unwrap();
        assert!(
            matches!(recall(&store, "tf-0123456789abcdef"), Err(RecallError::Store(e)) if e.kind == StoreErrorKind::Corrupt)
        );
    }

    #[test]
    fn the_recall_tool_answers_with_a_page_or_an_error_the_model_can_read() {
        let store = MemoryStore::new();
        let a = Message::text(Role::Tool, "x".repeat(50));
        let blob = Blob::of(&[(7, &a)], Format::OpenAi);
        write(&store, std::slice::from_ref(&blob)).unwrap();
        let answer = answer_recall(&store, &json!({"handle": blob.handle, "limit": 10})).unwrap();
        let page: Value = serde_json::from_str(&answer).unwrap();
        assert_eq!(page["content"].as_str().unwrap().chars().count(), 10);
        assert_eq!(page["next_offset"], 10);
        let text_arguments = Value::String(format!("{{\"handle\": \"{}\", \"offset\": 10}}", blob.handle));
        let rest: Value = serde_json::from_str(&answer_recall(&store, &text_arguments).unwrap()).unwrap();
        assert_eq!(rest["offset"], 10);
        assert!(answer_recall(&store, &json!({})).unwrap().starts_with("error: the call needs"));
        assert!(answer_recall(&store, &json!({"handle": "tf-0000000000000000"}))
            .unwrap()
            .contains("no offloaded content"));
        assert_eq!(recall_tool(Format::OpenAi)["function"]["name"], RECALL_TOOL);
        assert_eq!(recall_tool(Format::Anthropic)["input_schema"]["required"][0], "handle");
    }
}

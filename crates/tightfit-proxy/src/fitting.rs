//! Fitting one request: reading its body, finding its model and its conversation's session,
//! and writing the body to forward. Everything here is the engine's (formats, registry,
//! sessions); this module only joins them to a request. A whole fit blocks (tokenizing,
//! compactions, the store): the server runs it on tokio's blocking pool. A warm turn that only
//! appends ([`Fitting::answer_appended`]) costs microseconds: the server answers it in place
//! when the store reads locally.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::http::HeaderMap;
use bytes::Bytes;
use tightfit::fit::{FitError, Target};
use tightfit::format::{self, Conversation, FormatHint};
use tightfit::models::Registry;
use tightfit::pricing::Pricing;
use tightfit::session::{Peeked, Policy, Session, SessionError, Settings};
use tightfit::store::{Store, StoreErrorKind};
use tightfit::tokens::message_fingerprint;
use tightfit::Format;

use crate::errors::{ApiError, Kind};
use crate::headers::KeyHasher;
use crate::parsed::{Parsed, ParsedRequests, HEAD_BYTES};

/// The most sessions (one per model, budget and policy) held at once; past it, one not in
/// use is dropped (its conversations' checkpoints stay in the store).
const MAX_SESSIONS: usize = 256;

/// The most conversations whose last request is remembered for the cache-reuse estimate;
/// past it the memory is cleared (each conversation's next turn then estimates nothing).
const MAX_REMEMBERED: usize = 65_536;

/// The most bytes a turn answered in place ([`Fitting::answer_appended`]) may have to read
/// besides the messages it shares with its conversation's previous request: the envelope
/// (model, tools, Anthropic's system prompt) and the new messages (a tool's output, a reply),
/// usually a few kilobytes. At the bound, parsing takes about 0.2 ms and tokenizing what is
/// new, when all of it is text, about 3 ms (o200k, about 24 MiB/s): the most a request
/// should hold an async worker for. A larger turn is fitted on the blocking pool.
pub const MAX_READ_IN_PLACE: usize = 64 * 1024;

/// How far a fit goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach<'p> {
    /// Every request answered: read whole if need be, replayed or compacted.
    Whole,
    /// Only a turn that appends to its conversation's previous one, answered from it; on a
    /// network store, from what was read of it beforehand (`None`: the store's `try_load`).
    Appended(Option<&'p Peeked>),
}

/// What fitting a request gave.
#[derive(Debug)]
pub struct Outcome {
    /// The body to forward; `None`: the request's own bytes, unchanged.
    pub body: Option<Bytes>,
    /// Tokens before and after, if the request was counted.
    pub tokens: Option<(usize, usize)>,
    /// The steps that changed something (`none` if none); or why nothing was tried.
    pub actions: String,
    /// The conversation's epoch (compactions so far), if a session fitted it.
    pub epoch: Option<u64>,
    /// `unchanged`, `replayed` or `compacted`: for the metrics; `skipped` when not fitted.
    pub outcome: &'static str,
    /// The tokens this request shares as a prefix with its conversation's previous request,
    /// as estimated: the previous request's tokens when both belong to one epoch (a session
    /// repeats its previous output byte for byte until it compacts), else 0. What a
    /// provider's prompt cache can reuse.
    pub prefix_tokens: usize,
    /// The messages taken from the conversation's previous request instead of read (see
    /// [`crate::parsed`]).
    pub reused: usize,
}

impl Outcome {
    fn skipped(why: String) -> Outcome {
        Outcome {
            body: None,
            tokens: None,
            actions: why,
            epoch: None,
            outcome: "skipped",
            prefix_tokens: 0,
            reused: 0,
        }
    }
}

/// A request body as read: its text, what was read from it, and its messages' fingerprints.
#[derive(Clone, Copy)]
struct Reading<'r> {
    text: &'r str,
    read: &'r format::ReadRequest,
    fingerprints: &'r [u128],
}

/// The fingerprints of the messages of `read` (one per message, in order), those of the
/// messages it took from the previous reading from `known` (that reading's, of its list).
fn fingerprints_of(read: &format::ReadRequest, known: &[u128]) -> Vec<u128> {
    let messages = &read.conversation.messages;
    let listed = read.layout.as_ref().map_or(0, |l| l.elements().len());
    // the messages read from outside the list (a system prompt, instructions) come first
    let first_listed = messages.len() - listed.min(messages.len());
    let reused = read.reused.min(known.len()).min(listed);
    let mut fingerprints = Vec::with_capacity(messages.len());
    fingerprints.extend(messages[..first_listed].iter().map(message_fingerprint));
    fingerprints.extend_from_slice(&known[..reused]);
    fingerprints.extend(messages[first_listed + reused..].iter().map(message_fingerprint));
    fingerprints
}

/// The shard of conversation `key` (hex digits of a hash) among `shards`.
fn shard_of(key: &str, shards: usize) -> usize {
    let head = key.get(..8).and_then(|h| usize::from_str_radix(h, 16).ok()).unwrap_or(0);
    head % shards.max(1)
}

/// What one session serves: a model, its budget (the request's reserved output decides it),
/// a policy, a provider.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct SessionSpec {
    model: String,
    budget: usize,
    policy: String,
    provider: Format,
    /// Conversations are spread over shards by key, each its own session: a session
    /// serializes its calls, shards run in parallel.
    shard: usize,
}

/// The sessions of the proxy, over one store.
#[derive(Debug)]
pub struct Fitting {
    registry: &'static Registry,
    store: Arc<dyn Store>,
    settings: Settings,
    max_input_tokens: Option<usize>,
    hasher: KeyHasher,
    sessions: Mutex<HashMap<SessionSpec, Arc<Session>>>,
    /// Per conversation key: the epoch and tokens of its last forwarded request.
    previous: Mutex<HashMap<String, (u64, usize)>>,
    /// Per conversation: its last request, read (the next one reads only what is new).
    parsed: ParsedRequests,
    /// How many sessions share a model, budget and policy (twice the cores).
    shards: usize,
}

impl Fitting {
    /// Sessions with `settings` over `store`, budgets capped at `max_input_tokens`,
    /// conversation keys hashed by `hasher`, at most `reuse_bytes` of request bodies held for
    /// reading their conversations' next turns.
    pub fn new(
        store: Arc<dyn Store>,
        settings: Settings,
        max_input_tokens: Option<usize>,
        hasher: KeyHasher,
        reuse_bytes: usize,
    ) -> Fitting {
        Fitting {
            registry: Registry::embedded(),
            store,
            settings,
            max_input_tokens,
            hasher,
            sessions: Mutex::default(),
            previous: Mutex::default(),
            parsed: ParsedRequests::new(reuse_bytes),
            shards: std::thread::available_parallelism().map_or(2, |n| n.get() * 2),
        }
    }

    /// Fits the request `body` for `api` under `policy` (a preset name), the conversation told
    /// apart by the request's credentials and `x-tightfit-session` (else its first messages).
    /// The body is read taking what it shares with the conversation's previous request from
    /// that one's reading, and the fitted body is the request's own bytes where the fit kept
    /// them (see [`crate::parsed`] and [`format::splice_request`]). It blocks (tokenizing,
    /// compactions, the store): run it on the blocking pool.
    pub fn fit(
        &self,
        api: Format,
        headers: &HeaderMap,
        policy: &str,
        body: &Bytes,
    ) -> Result<Outcome, ApiError> {
        let outcome = self.fit_reaching(Reach::Whole, api, headers, policy, body)?;
        Ok(outcome.expect("a whole fit answers every request"))
    }

    /// The turn of a warm agent loop, in a time bounded by what it adds: answered only when
    /// the body keeps every message of its conversation's previous request byte for byte and
    /// has at most [`MAX_READ_IN_PLACE`] bytes besides them ([`format::read_appended`]: nothing
    /// else is read), and the session answers it from its previous turn
    /// ([`Session::answer_appended`]); else `None`, and [`fit`](Fitting::fit) does the rest
    /// (what was read here is kept for it, so it reads nothing twice). Cheap enough to run in
    /// place on an async worker when the store reads locally: a hop to the blocking pool and
    /// back costs more than the turn (two thread wake-ups, and the tail of a busy machine's
    /// scheduling).
    ///
    /// On a store read over the network, `peeked` is what an async client read of it for
    /// the conversation (the one [`previous_key`](Fitting::previous_key) names): the turn is
    /// answered only if that is the conversation the body turns out to continue.
    pub fn answer_appended(
        &self,
        api: Format,
        headers: &HeaderMap,
        policy: &str,
        body: &Bytes,
        peeked: Option<&Peeked>,
    ) -> Result<Option<Outcome>, ApiError> {
        self.fit_reaching(Reach::Appended(peeked), api, headers, policy, body)
    }

    /// The session key of the conversation a body most likely continues: the key its slot's
    /// previous request was fitted under (`None`: none held). What an async caller reads the
    /// store for before [`answer_appended`](Fitting::answer_appended), from the body's first
    /// [`HEAD_BYTES`] bytes (all of it, if shorter) while the rest arrives (a character cut
    /// at their end is left out, as the whole body's slot leaves it); a few microseconds (the
    /// slot's keyed hash of the head).
    pub fn previous_key(&self, api: Format, headers: &HeaderMap, head: &[u8]) -> Option<String> {
        let text = match std::str::from_utf8(head) {
            Ok(text) => text,
            // a character cut at the end of the head (a bad byte before it: the body fails
            // to read anyway)
            Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).ok()?,
        };
        self.parsed.key_of(self.parsed_slot(api, headers, text))
    }

    /// [`fit`](Fitting::fit) or [`answer_appended`](Fitting::answer_appended), as `reach` says.
    fn fit_reaching(
        &self,
        reach: Reach<'_>,
        api: Format,
        headers: &HeaderMap,
        policy: &str,
        body: &Bytes,
    ) -> Result<Option<Outcome>, ApiError> {
        let text = std::str::from_utf8(body).map_err(|e| {
            ApiError::new(api, Kind::InvalidRequest, format!("the request body is not UTF-8: {e}"))
        })?;
        let slot = self.parsed_slot(api, headers, text);
        let mut last = self.parsed.take(slot);
        let known = last.as_mut().map(|last| std::mem::take(&mut last.fingerprints)).unwrap_or_default();
        let previous = last.as_mut().and_then(|last| {
            let listed = std::mem::take(&mut last.listed);
            let text = std::str::from_utf8(&last.body).ok()?;
            Some(format::Previous { text, layout: &last.layout, listed })
        });
        let mut read = match (reach, previous) {
            (Reach::Whole, previous) => match format::read_request(text, api, previous) {
                Ok(read) => read,
                Err(e) => return self.unread(api, text, e).map(Some),
            },
            (Reach::Appended(_), None) => return Ok(None),
            (Reach::Appended(_), Some(previous)) => {
                match format::read_appended(text, api, previous, MAX_READ_IN_PLACE) {
                    format::Appended::Read(read) => read,
                    // the whole fit reads it all, and answers what is wrong with it
                    format::Appended::Unread => return Ok(None),
                    format::Appended::NotAppended(previous) => {
                        // held again as it was, for the whole fit to read what it can from it
                        // (the listed messages moved out first: `previous` borrows `last`)
                        let listed = previous.listed;
                        if let Some(mut last) = last {
                            (last.listed, last.fingerprints) = (listed, known);
                            self.parsed.put(slot, last);
                        }
                        return Ok(None);
                    }
                }
            }
        };
        let Some(model_name) = read.conversation.request.as_ref().and_then(|r| r.model.clone()) else {
            // the upstream says what it thinks of a request without a model
            return Ok(Some(Outcome::skipped("none (no model)".into())));
        };
        let Ok(model) = self.registry.lookup(&model_name) else {
            return Ok(Some(Outcome::skipped(format!("none (unknown model {model_name:?})"))));
        };
        let mut fingerprints = fingerprints_of(&read, &known);
        let key = self.session_key(api, headers, &read.conversation)?;
        let reading = Reading { text, read: &read, fingerprints: &fingerprints };
        let outcome = self.fit_read(reach, api, policy, reading, model, &key)?;
        // held whether or not the turn was answered: a whole fit of the same body after an
        // appended one that was not reads it all from this reading
        let listed = read.take_listed();
        if let Some(layout) = read.layout {
            let fingerprints = fingerprints.split_off(fingerprints.len() - listed.len());
            self.parsed.put(slot, Parsed { body: body.clone(), layout, listed, fingerprints, key });
        }
        Ok(outcome)
    }

    /// The answer to a request body the engine could not read: forwarded as it is when it
    /// names no model tightfit knows (the upstream judges it), else the reader's error.
    fn unread(&self, api: Format, text: &str, error: format::FormatError) -> Result<Outcome, ApiError> {
        let value = format::read_json(text).map_err(|e| {
            ApiError::new(api, Kind::InvalidRequest, format!("the request body is not JSON: {e}"))
        })?;
        match value.get("model").and_then(|m| m.as_str()) {
            None => return Ok(Outcome::skipped("none (no model)".into())),
            Some(name) if self.registry.lookup(name).is_err() => {
                return Ok(Outcome::skipped(format!("none (unknown model {name:?})")))
            }
            Some(_) => {}
        }
        Err(match error {
            format::FormatError::Shape { path, reason } => {
                ApiError::new(api, Kind::InvalidRequest, format!("{path}: {reason}")).with_param(path)
            }
            e => ApiError::new(api, Kind::InvalidRequest, e.to_string()),
        })
    }

    /// Where the conversation of a request keeps its last request read: its
    /// `x-tightfit-session`, else the head of its body, within its credentials.
    fn parsed_slot(&self, api: Format, headers: &HeaderMap, text: &str) -> u128 {
        let identity = match headers.get("x-tightfit-session") {
            Some(id) => format!("parsed-session:{}", String::from_utf8_lossy(id.as_bytes())),
            None => {
                let head =
                    (0..=text.len().min(HEAD_BYTES)).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                format!("parsed-head:{}", &text[..head])
            }
        };
        let key = self.hasher.conversation_key(api.as_str(), headers, &identity);
        u128::from_str_radix(&key, 16).unwrap_or(0)
    }

    /// The session key of a conversation: its `x-tightfit-session`, else its first messages,
    /// within the route and the caller's credentials.
    fn session_key(
        &self,
        api: Format,
        headers: &HeaderMap,
        conversation: &Conversation,
    ) -> Result<String, ApiError> {
        let identity = match headers.get("x-tightfit-session").map(|v| v.to_str()) {
            Some(Ok(id)) if !id.is_empty() => format!("session:{id}"),
            Some(_) => {
                return Err(ApiError::new(
                    api,
                    Kind::InvalidRequest,
                    "x-tightfit-session: not a visible ASCII string",
                )
                .with_param("x-tightfit-session"))
            }
            None => format!("head:{}", Session::key_of(conversation)),
        };
        Ok(self.hasher.conversation_key(api.as_str(), headers, &identity))
    }

    /// Fits a request, read, for `model`, in the session of conversation `key` (`None`:
    /// `reach` is [`Reach::Appended`] and the session did not answer it so).
    fn fit_read(
        &self,
        reach: Reach<'_>,
        api: Format,
        policy: &str,
        request: Reading<'_>,
        model: &'static tightfit::models::ModelInfo,
        key: &str,
    ) -> Result<Option<Outcome>, ApiError> {
        let Reading { text, read, fingerprints } = request;
        let conversation = &read.conversation;
        let reserved = conversation.request.as_ref().and_then(|r| r.reserved_output());
        let mut target = Target::for_model(model, reserved).with_provider(api);
        if let Some(cap) = self.max_input_tokens.filter(|&cap| cap < target.budget) {
            target = target.with_budget(cap);
        }
        let key = key.to_string();
        let spec = SessionSpec {
            model: model.qualified_id(),
            budget: target.budget,
            policy: policy.to_string(),
            provider: api,
            shard: shard_of(&key, self.shards),
        };
        let session = self.session(spec, target, Pricing::of(model))?;
        let fitted = match reach {
            Reach::Whole => session.fit_fingerprinted(Some(&key), conversation, fingerprints.to_vec()),
            Reach::Appended(peeked) => match match peeked {
                Some(peeked) => session.answer_appended_peeked(&key, conversation, fingerprints, peeked),
                None => session.answer_appended(&key, conversation, fingerprints),
            } {
                Ok(Some(fitted)) => Ok(fitted),
                Ok(None) => return Ok(None),
                Err(e) => Err(e),
            },
        }
        .map_err(|e| fit_error(api, e))?;
        let report = &fitted.report;
        let session_info = report.session.as_ref();
        let unchanged = fitted.messages.len() == conversation.messages.len()
            && fitted.messages.iter().all(|m| matches!(m, Cow::Borrowed(_)));
        let actions = if report.steps.is_empty() && report.repairs.is_empty() {
            "none".to_string()
        } else {
            let mut names: Vec<&str> = report.steps.iter().map(|s| s.step.as_str()).collect();
            if !report.repairs.is_empty() {
                names.insert(0, "repair");
            }
            names.dedup();
            names.join(",")
        };
        let outcome = match session_info {
            Some(info) if info.compacted => "compacted",
            _ if unchanged => "unchanged",
            _ => "replayed",
        };
        let tokens = Some((report.original_token_count, report.compressed_token_count));
        let epoch = session_info.map(|s| s.epoch);
        let prefix_tokens = self.prefix_tokens(&key, epoch.unwrap_or(0), report.compressed_token_count);
        let body = if unchanged {
            None
        } else {
            // the request's own bytes for what the fit kept as it came; whole when the fitted
            // list does not map one to one onto the request's
            let spliced = read
                .layout
                .as_ref()
                .and_then(|layout| format::splice_request(text, layout, &fitted.messages, conversation));
            let body = spliced.unwrap_or_else(|| format::request_to_string(&fitted.messages, conversation));
            Some(Bytes::from(body))
        };
        Ok(Some(Outcome { body, tokens, actions, epoch, outcome, prefix_tokens, reused: read.reused }))
    }

    /// The estimate of [`Outcome::prefix_tokens`] for conversation `key`, whose request now
    /// belongs to `epoch` and holds `tokens`; remembers them for its next turn.
    fn prefix_tokens(&self, key: &str, epoch: u64, tokens: usize) -> usize {
        let mut previous = self.previous.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if previous.len() >= MAX_REMEMBERED && !previous.contains_key(key) {
            previous.clear();
        }
        match previous.insert(key.to_string(), (epoch, tokens)) {
            Some((last_epoch, last_tokens)) if last_epoch == epoch => last_tokens.min(tokens),
            _ => 0,
        }
    }

    /// The tokens of request `body` for `api` by its model, if the model is known and the body
    /// reads (for `count_tokens`'s header).
    pub fn count(&self, api: Format, body: &[u8]) -> Option<usize> {
        let conversation =
            format::parse_str(std::str::from_utf8(body).ok()?, FormatHint::Exactly(api)).ok()?;
        let model = conversation.request.as_ref()?.model.as_deref()?;
        let model = self.registry.lookup(model).ok()?;
        let counter = Target::for_model(model, None).counter;
        Some(counter.count(&conversation.messages, conversation.tools.as_deref()).total)
    }

    fn session(
        &self,
        spec: SessionSpec,
        target: Target,
        pricing: Option<Pricing>,
    ) -> Result<Arc<Session>, ApiError> {
        let mut sessions = self.sessions.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(session) = sessions.get(&spec) {
            return Ok(Arc::clone(session));
        }
        if sessions.len() >= MAX_SESSIONS {
            // drop one no request holds (its conversations reload from the store when they return)
            let idle = sessions.iter().find(|(_, s)| Arc::strong_count(s) == 1).map(|(k, _)| k.clone());
            if let Some(idle) = idle {
                sessions.remove(&idle);
            }
        }
        let policy = Policy::by_name(&spec.policy)
            .map_err(|e| ApiError::new(spec.provider, Kind::InvalidRequest, format!("policy: {e}")))?;
        let mut session = Session::new(target, policy, Arc::clone(&self.store))
            .with_settings(self.settings.clone())
            .map_err(|e| ApiError::new(spec.provider, Kind::Internal, format!("session settings: {e}")))?;
        if let Some(pricing) = pricing {
            session = session.with_pricing(pricing);
        }
        let session = Arc::new(session);
        sessions.insert(spec, Arc::clone(&session));
        Ok(session)
    }
}

fn fit_error(api: Format, error: SessionError) -> ApiError {
    match error {
        SessionError::Fit(FitError::CannotFit { needed, budget, .. }) => {
            ApiError::overflow(api, needed, budget)
        }
        SessionError::Fit(e @ FitError::Invalid { .. }) => {
            ApiError::new(api, Kind::InvalidRequest, e.to_string()).with_param("messages")
        }
        SessionError::Fit(e) => {
            ApiError::new(api, Kind::Internal, format!("tightfit could not fit the request: {e}"))
        }
        SessionError::Store(e) if e.kind == StoreErrorKind::Unavailable => ApiError::new(
            api,
            Kind::StoreUnavailable,
            format!("tightfit's session store is unavailable: {e}"),
        ),
        SessionError::Store(e) => {
            ApiError::new(api, Kind::Internal, format!("tightfit's session store failed: {e}"))
        }
        e => ApiError::new(api, Kind::Internal, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tightfit::store::MemoryStore;

    fn body(turns: usize) -> Bytes {
        let mut messages = vec![json!({"role": "system", "content": "You fix bugs."})];
        for t in 0..turns {
            messages.push(
                json!({"role": "user", "content": format!("step {t}: what next? {}", "x ".repeat(100))}),
            );
            messages.push(json!({"role": "assistant", "content": format!("doing step {t}")}));
        }
        Bytes::from(json!({"model": "gpt-4o", "messages": messages}).to_string())
    }

    #[test]
    fn the_fingerprints_kept_from_the_previous_turn_are_those_of_the_messages_taken_from_it() {
        let anthropic = |turns: usize| {
            let mut messages = Vec::new();
            for t in 0..turns {
                messages.push(json!({"role": "user", "content": format!("step {t}")}));
                messages.push(
                    json!({"role": "assistant", "content": [{"type": "text", "text": format!("did {t}")}]}),
                );
            }
            json!({"model": "claude-sonnet-4-5", "system": "You fix bugs.", "messages": messages}).to_string()
        };
        for (api, then, now) in [
            (Format::OpenAi, body(4), body(6)),
            (Format::Anthropic, Bytes::from(anthropic(4)), Bytes::from(anthropic(6))),
        ] {
            let then = std::str::from_utf8(&then).unwrap();
            let now = std::str::from_utf8(&now).unwrap();
            let mut first = format::read_request(then, api, None).unwrap();
            let layout = first.layout.clone().unwrap();
            let listed = first.take_listed();
            let known: Vec<u128> = listed.iter().map(message_fingerprint).collect();
            let previous = format::Previous { text: then, layout: &layout, listed };
            let read = format::read_request(now, api, Some(previous)).unwrap();
            assert!(read.reused > 0, "{api:?}: messages taken from the previous reading");
            let all: Vec<u128> = read.conversation.messages.iter().map(message_fingerprint).collect();
            assert_eq!(fingerprints_of(&read, &known), all, "{api:?}");
            // nothing known (a first turn, or a reading that was dropped): all hashed
            assert_eq!(fingerprints_of(&read, &[]), all, "{api:?}");
        }
    }

    #[test]
    fn a_conversation_s_next_turn_reads_only_its_new_messages() {
        let fitting = Fitting::new(
            Arc::new(MemoryStore::new()),
            Settings::default(),
            Some(600),
            KeyHasher::new(None),
            1 << 20,
        );
        let fit = |headers: &HeaderMap, turns: usize| {
            fitting.fit(Format::OpenAi, headers, "cache", &body(turns)).unwrap()
        };
        let mut session = HeaderMap::new();
        session.insert("x-tightfit-session", "run-1".parse().unwrap());
        assert_eq!(fit(&session, 5).reused, 0);
        // the next turns: every message of the previous one is taken from its reading
        assert_eq!(fit(&session, 6).reused, 11);
        let compacted = fit(&session, 20);
        assert_eq!(compacted.reused, 13);
        assert!(compacted.body.is_some(), "over 600 tokens: fitted");
        assert_eq!(fit(&session, 20).reused, 41);
        // another conversation has nothing to take; without a session header the body's head
        // finds the conversation
        let mut other = HeaderMap::new();
        other.insert("x-tightfit-session", "run-2".parse().unwrap());
        assert_eq!(fit(&other, 20).reused, 0);
        let none = HeaderMap::new();
        assert_eq!(fit(&none, 20).reused, 0);
        assert_eq!(fit(&none, 21).reused, 41);
        // a body shorter than the head it is known by is all head: no turn finds the last
        assert_eq!(fit(&none, 2).reused, 0);
        assert_eq!(fit(&none, 3).reused, 0);
        // `limits.reuse_bytes = 0`: every turn read whole
        let whole = Fitting::new(
            Arc::new(MemoryStore::new()),
            Settings::default(),
            Some(600),
            KeyHasher::new(None),
            0,
        );
        for turns in [5, 6] {
            assert_eq!(whole.fit(Format::OpenAi, &session, "cache", &body(turns)).unwrap().reused, 0);
        }
    }

    /// A network store's version is read for the key that the first bytes of a body name
    /// (its previous request's), before the rest arrives: the head names what the whole
    /// body does, a character cut at the head's end included, and nothing before a turn
    /// was fitted.
    #[test]
    fn the_head_of_a_body_names_the_key_its_previous_turn_was_fitted_under() {
        let fitting = Fitting::new(
            Arc::new(MemoryStore::new()),
            Settings::default(),
            None,
            KeyHasher::new(None),
            1 << 20,
        );
        let none = HeaderMap::new();
        // the conversation's first message puts a two-byte character across byte 4,096
        let body = |turns: usize| {
            let prefix = r#"{"model":"gpt-4o","messages":[{"role":"system","content":""#;
            let mut messages = vec![
                json!({"role": "system", "content": "x".repeat(HEAD_BYTES - prefix.len() - 1) + "é and more"}),
            ];
            for t in 0..turns {
                messages.push(json!({"role": "user", "content": format!("step {t}")}));
                messages.push(json!({"role": "assistant", "content": format!("did {t}")}));
            }
            let body = Bytes::from(json!({"model": "gpt-4o", "messages": messages}).to_string());
            assert!(
                body.starts_with(prefix.as_bytes())
                    && !std::str::from_utf8(&body).unwrap().is_char_boundary(HEAD_BYTES)
            );
            body
        };
        let first = body(2);
        assert_eq!(
            fitting.previous_key(Format::OpenAi, &none, &first[..HEAD_BYTES]),
            None,
            "nothing fitted yet"
        );
        fitting.fit(Format::OpenAi, &none, "cache", &first).unwrap();
        let next = body(3);
        let key = fitting.previous_key(Format::OpenAi, &none, &next).expect("the conversation's key");
        // the whole body's head ends before the character: 4,095 bytes; one cut inside the
        // character stops there too; a shorter one names nothing held
        for (cut, names) in
            [(HEAD_BYTES - 2, false), (HEAD_BYTES - 1, true), (HEAD_BYTES, true), (HEAD_BYTES + 1, true)]
        {
            let named = fitting.previous_key(Format::OpenAi, &none, &next[..cut]);
            assert_eq!(named.as_deref() == Some(key.as_str()), names, "a head of {cut} bytes");
        }
        // the key is the one the fit of the next turn is held under
        fitting.fit(Format::OpenAi, &none, "cache", &next).unwrap();
        assert_eq!(fitting.previous_key(Format::OpenAi, &none, &next[..HEAD_BYTES]), Some(key));
    }
}

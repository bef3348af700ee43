//! Sessions: fitting the same conversation turn after turn with a cut that stays put, so a
//! provider's prompt cache keeps serving the prefix.
//!
//! An agent loop sends its whole history every turn. A stateless [`fit`](crate::fit()) decides
//! afresh each time, so its cut moves every turn and the provider's cache misses from the cut
//! on. A [`Session`] decides once per **epoch**:
//!
//! - while the history, as the current epoch's decision leaves it, is under the **high-water
//!   mark** (a share of the budget), nothing more is removed: the messages sent before are sent
//!   again byte for byte, and new messages follow as they came;
//! - when it would cross the mark, the policy **compacts** once, down to the **low-water mark**
//!   (the `cache` policy: lossless steps, then one [`Compact`](crate::steps::Compact) cut that
//!   keeps a fixed head and the newest units from a grid point, with a trace between), and
//!   that decision is replayed until the next compaction. With the mark below the budget and
//!   the model's prices given, a turn past the mark may wait (up to the budget) while the
//!   compaction would cost more in cache misses than it saves ([`Settings::weigh_cache_misses`]).
//!
//! Messages are recognised by content hash, so a framework that rebuilds its message dicts
//! every turn is still recognised. A history that does not extend the previous one (an edit,
//! a retry, a branch) keeps the part of the decision that lies before the first difference,
//! or starts afresh. Decisions are checkpointed in a [`Store`] at each compaction, so a
//! session opened on the same store in another process makes the same decisions.
//!
//! ```
//! use std::sync::Arc;
//! use tightfit::format::{parse_str, FormatHint};
//! use tightfit::models::Registry;
//! use tightfit::session::{MemoryStore, Policy, Session};
//! use tightfit::Target;
//!
//! let model = Registry::embedded().lookup("gpt-4o")?;
//! let session = Session::new(Target::for_model(model, None), Policy::cache(), Arc::new(MemoryStore::new()));
//! let turn = parse_str(r#"[{"role": "user", "content": "Hi!"}]"#, FormatHint::Auto)?;
//! let fitted = session.fit(&turn)?;
//! assert_eq!(fitted.messages.len(), 1);
//! assert_eq!(fitted.report.session.as_ref().unwrap().epoch, 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod breakpoints;
mod decision;
mod extend;
mod replay;

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use xxhash_rust::xxh3::{xxh3_64, Xxh3};

pub use crate::store::{MemoryStore, Store, StoreError, StoreErrorKind};
pub use decision::CHECKPOINT_VERSION;
use decision::{CheckpointError, Decision};
use extend::PreviousTurn;
use replay::Replay;

use crate::fit::{FitError, Fitted, Fitter, RunOptions, Services, Target};
use crate::format::{Conversation, Format};
use crate::message::Role;
use crate::pipeline::Pipeline;
use crate::presets;
use crate::pricing::{CacheRule, Pricing};
use crate::report::SessionInfo;
use crate::steps::{ConfigError, SummaryTrace, Trace, DEFAULT_SUMMARY_TOKENS};
use crate::summary::Summarizer;
use crate::tokens::message_fingerprint;
use crate::units::{turn_ends, units, UnitKind};

/// The marks of a session's epochs, as shares of the budget.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// A compaction may happen once the output would pass this share of the budget, and
    /// must before the budget itself would be passed. Defaults to 1.0: only at the budget.
    /// Lower it to keep room (for counts that are estimates, for a reply); between the mark and
    /// the budget the session then compacts when the cost model says so (`weigh_cache_misses`).
    pub high_water: f64,
    /// A compaction cuts down to this share of the budget. Defaults to 0.6: on the shared
    /// agent and chat streams it keeps utilisation above 70% and prefix reuse above the
    /// hysteresis baseline's at 32k and 128k (`tightfit simulate`).
    pub low_water: f64,
    /// The most conversations held in memory; the least recently used one is forgotten
    /// (its checkpoint stays in the store). Defaults to 1,024.
    pub max_conversations: usize,
    /// For Anthropic requests, mark prompt-cache breakpoints (`cache_control`) on the last
    /// message, the end of the previous turn and the end of the compaction's head (see
    /// `breakpoints.rs`), unless the caller marked some. Defaults to false. The marks are the
    /// only bytes that then change between turns: the last message's mark moves on.
    pub cache_breakpoints: bool,
    /// Between the high-water mark and the budget, compact only once a compaction pays for
    /// the cache misses it causes, by the prices and caching rule the session was given
    /// ([`Session::with_pricing`]; [`Pricing::compaction_point`], with the conversation's own
    /// growth per turn since the last compaction). Defaults to true; false, or a session
    /// without prices, compacts at the mark. (A Rust `Session` has prices only when given
    /// them; Python's `tightfit.Session` takes the model's from the registry.)
    pub weigh_cache_misses: bool,
    /// Offload what a compaction removes or cuts into the session's store, and name its
    /// handle in the trace (see [`offload`](crate::offload)): a model given the recall tool
    /// can read it back. Defaults to true.
    pub offload: bool,
    /// Leave a summary of what a compaction removes (the extractive summarizer's structured
    /// hand-off: requests verbatim, the ledger of exact facts, commands, progress) instead of
    /// a line saying how many messages went, unless the session was given a trace of its own
    /// ([`Session::with_trace`]). Defaults to true.
    pub summarize: bool,
    /// Other processes write to the same store (proxy replicas behind a load balancer): every
    /// turn reads the version of the conversation's checkpoint back (a store read of 16
    /// bytes; the checkpoint itself is read, and parsed, only when another process wrote a
    /// newer one), so each process replays the latest compaction, whichever process made it,
    /// and all make the same decisions. A checkpoint without a version (from before versions
    /// were written) is read whole every turn; replicas on one store must all write versions
    /// (this build and later): a checkpoint an older build writes over a versioned one leaves
    /// the old version in place, and the replicas holding it would not see the new one.
    /// Defaults to false: the decision held in memory is trusted.
    pub shared_store: bool,
    /// The most conversations whose previous turn is held, to answer a turn that only
    /// appends to it without replaying the whole history (OpenAI Chat Completions and
    /// Anthropic; see `extend.rs` for when it applies): a warm turn then costs time in the new messages, not
    /// in the history. About 0.2 KB per message of each held turn. Defaults to 64; 0 replays
    /// every turn. The answer is the replay's, byte for byte, report and plan included.
    pub previous_turns: usize,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            high_water: 1.0,
            low_water: 0.6,
            max_conversations: 1024,
            cache_breakpoints: false,
            weigh_cache_misses: true,
            offload: true,
            summarize: true,
            shared_store: false,
            previous_turns: 64,
        }
    }
}

impl Settings {
    /// The same settings with other marks.
    pub fn with_marks(self, low_water: f64, high_water: f64) -> Settings {
        Settings { low_water, high_water, ..self }
    }

    /// The same settings, weighing cache misses between the marks or not.
    pub fn with_weigh_cache_misses(self, weigh_cache_misses: bool) -> Settings {
        Settings { weigh_cache_misses, ..self }
    }

    /// The same settings, summarizing what compactions remove or not.
    pub fn with_summarize(self, summarize: bool) -> Settings {
        Settings { summarize, ..self }
    }

    /// The same settings, offloading what compactions remove or not.
    pub fn with_offload(self, offload: bool) -> Settings {
        Settings { offload, ..self }
    }

    /// The same settings, placing Anthropic cache breakpoints or not.
    pub fn with_cache_breakpoints(self, cache_breakpoints: bool) -> Settings {
        Settings { cache_breakpoints, ..self }
    }

    /// The same settings, reading checkpoints back every turn when `shared_store`.
    pub fn with_shared_store(mut self, shared_store: bool) -> Settings {
        self.shared_store = shared_store;
        self
    }

    /// The same settings, holding the previous turns of at most `previous_turns`
    /// conversations.
    pub fn with_previous_turns(mut self, previous_turns: usize) -> Settings {
        self.previous_turns = previous_turns;
        self
    }

    /// Checks the marks: 0 < low_water < high_water ≤ 1, at least one conversation.
    pub fn check(&self) -> Result<(), ConfigError> {
        if !(self.high_water > 0.0 && self.high_water <= 1.0) {
            return Err(ConfigError::new("high_water", "must be above 0 and at most 1"));
        }
        if !(self.low_water > 0.0 && self.low_water < self.high_water) {
            return Err(ConfigError::new("low_water", "must be above 0 and below high_water"));
        }
        if self.max_conversations == 0 {
            return Err(ConfigError::new("max_conversations", "must be at least 1"));
        }
        Ok(())
    }
}

/// What a session runs when it compacts: a named pipeline.
#[derive(Debug)]
pub struct Policy {
    name: String,
    pipeline: Pipeline,
}

impl Policy {
    /// The `cache` policy, the sessions' default ([`presets::cache`]).
    pub fn cache() -> Policy {
        Policy { name: "cache".into(), pipeline: presets::cache() }
    }

    /// The preset called `name` as a session policy (`cache`, `middle-out`, `minimal`, ...).
    pub fn by_name(name: &str) -> Result<Policy, ConfigError> {
        Ok(Policy { name: name.to_string(), pipeline: presets::by_name(name)? })
    }

    /// A policy running `pipeline`, called `name` in reports.
    pub fn new(name: impl Into<String>, pipeline: Pipeline) -> Policy {
        Policy { name: name.into(), pipeline }
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Why a session could not fit a history.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The history could not be fitted (what must be kept is over the budget, a step
    /// failed).
    #[error(transparent)]
    Fit(#[from] FitError),
    /// The store failed, or holds a checkpoint this build cannot read.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Fits the turns of conversations so that each request extends the one before until a
/// compaction; see the [module documentation](self). `Send + Sync`: one session serves many
/// threads and many conversations (calls are serialized).
#[derive(Debug)]
pub struct Session {
    target: Target,
    policy: Policy,
    settings: Settings,
    store: Arc<dyn Store>,
    trace: Option<Arc<dyn Trace>>,
    summarizer: Option<Arc<dyn Summarizer>>,
    pricing: Option<Pricing>,
    state: Mutex<State>,
}

/// What a session holds in memory.
#[derive(Debug, Default)]
struct State {
    fitter: Fitter,
    /// Per conversation key: the current decision.
    conversations: HashMap<String, Held>,
    clock: u64,
}

impl Session {
    /// A session fitting to `target` with `policy`, its checkpoints in `store`, with the
    /// default [`Settings`].
    pub fn new(target: Target, policy: Policy, store: Arc<dyn Store>) -> Session {
        Session {
            target,
            policy,
            settings: Settings::default(),
            store,
            trace: None,
            summarizer: None,
            pricing: None,
            state: Mutex::default(),
        }
    }

    /// The same session with `settings` (checked).
    pub fn with_settings(mut self, settings: Settings) -> Result<Session, ConfigError> {
        settings.check()?;
        self.settings = settings;
        Ok(self)
    }

    /// The same session leaving `trace`'s message where a compaction removes messages
    /// (instead of the line saying how many went).
    pub fn with_trace(mut self, trace: Arc<dyn Trace>) -> Session {
        self.trace = Some(trace);
        self
    }

    /// The same session with `summarizer` writing its summaries: the one each compaction
    /// leaves (a summary of at most [`DEFAULT_SUMMARY_TOKENS`]) and those of a `summarize` step
    /// in its policy. The session's lock is held while it runs: a summarizer must not call the
    /// same session.
    pub fn with_summarizer(mut self, summarizer: Arc<dyn Summarizer>) -> Session {
        self.trace = Some(Arc::new(SummaryTrace::new(Arc::clone(&summarizer), DEFAULT_SUMMARY_TOKENS)));
        self.summarizer = Some(summarizer);
        self
    }

    /// The same session weighing the cache misses of a compaction by `pricing` (the model's
    /// prices and its provider's caching rule: [`Pricing::of`]).
    pub fn with_pricing(mut self, pricing: Pricing) -> Session {
        self.pricing = Some(pricing);
        self
    }

    /// The target it fits to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Its policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Its settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Fits `conversation`, the whole history of this turn, under the key derived from its
    /// first messages ([`Session::key_of`]).
    pub fn fit<'a>(&self, conversation: &'a Conversation) -> Result<Fitted<'a>, SessionError> {
        self.fit_keyed(None, conversation)
    }

    /// The key a conversation is known by when the caller gives none: a hash of its messages
    /// up to the first user message (the system prompt and the task), and its format.
    pub fn key_of(conversation: &Conversation) -> String {
        let first_user = conversation.messages.iter().position(|m| m.role == Role::User);
        let head = first_user.map_or(conversation.messages.len(), |i| i + 1);
        key_from(conversation.format, conversation.messages[..head].iter().map(message_fingerprint))
    }

    /// Fits `conversation` as the conversation `key` (derived when `None`).
    pub fn fit_keyed<'a>(
        &self,
        key: Option<&str>,
        conversation: &'a Conversation,
    ) -> Result<Fitted<'a>, SessionError> {
        let fingerprints: Vec<u128> = conversation.messages.iter().map(message_fingerprint).collect();
        self.fit_fingerprinted(key, conversation, fingerprints)
    }

    /// [`fit_keyed`](Session::fit_keyed), with the messages' fingerprints taken by the caller:
    /// one [`message_fingerprint`] per message, in order. Hashing every message is a third
    /// to two thirds of a warm turn (1,500 messages; more when they are cold in memory); a
    /// caller that kept the fingerprints of the messages it has seen before (the proxy, for the
    /// messages a request shares byte for byte with the previous one) hashes only the new ones. A list of another
    /// length is ignored and taken again; fingerprints of other messages are the caller's
    /// error (the session would take the history for the one they belong to, and its
    /// messages for what those held: their tokens and their shape, the kinds of content the
    /// steps look for).
    pub fn fit_fingerprinted<'a>(
        &self,
        key: Option<&str>,
        conversation: &'a Conversation,
        fingerprints: Vec<u128>,
    ) -> Result<Fitted<'a>, SessionError> {
        let fingerprints = if fingerprints.len() == conversation.messages.len() {
            fingerprints
        } else {
            conversation.messages.iter().map(message_fingerprint).collect()
        };
        let key = match key {
            Some(key) => key.to_string(),
            None => {
                let first_user = conversation.messages.iter().position(|m| m.role == Role::User);
                let head = first_user.map_or(fingerprints.len(), |i| i + 1);
                key_from(conversation.format, fingerprints[..head].iter().copied())
            }
        };
        let mut state = self.lock();
        let (decision, checkpoint) = self.decision_of(&mut state, &key)?;
        // a turn that only appends to the previous one is answered from it (see `extend.rs`)
        let provider = self.target.provider.unwrap_or(conversation.format);
        let extendable = self.extendable(provider);
        let tools = if extendable { tools_hash(conversation) } else { 0 };
        if extendable {
            let answered =
                self.answered_from_previous(&mut state, &key, &decision, tools, conversation, &fingerprints);
            if let Some(fitted) = answered {
                return Ok(fitted);
            }
        }
        let budget = self.target.budget;
        let high = self.high_water();
        let aim = (budget as f64 * self.settings.low_water) as usize;
        let mut options = RunOptions::fit(budget).with_window(self.target.window);
        options.provider = self.target.provider;
        let info = |epoch, compacted| SessionInfo {
            key: key.clone(),
            epoch,
            compacted,
            policy: self.policy.name.clone(),
        };
        let counter = &self.target.counter;
        // the turn as the current decision leaves it; a history the decision no longer
        // applies to (the caller edited or replaced what it changed: a framework that keeps
        // the fitted history as its own, an edit, a branch) as it comes, while under the mark
        let applying = decision.still_applying(&fingerprints).unwrap_or_else(|| {
            std::borrow::Cow::Owned(Decision { epoch: decision.epoch, ..Decision::initial() })
        });
        // the whole decision applies: the next turn may be answered from this one
        let whole = matches!(applying, std::borrow::Cow::Borrowed(_));
        {
            let applying = Arc::new(applying.into_owned());
            let replay = Pipeline::builder()
                .step(Replay { decision: Arc::clone(&applying) })
                .build()
                .expect("a replay has nothing to check");
            let services = Services::default().with_fingerprints(&fingerprints);
            if let Ok(mut fitted) =
                state.fitter.run_with(conversation, counter, Some(&replay), &options, services)
            {
                let tokens = fitted.report.compressed_token_count;
                if tokens <= high
                    || (tokens <= budget && self.worth_waiting(&applying, tokens, aim, conversation))
                {
                    fitted.report.session = Some(info(decision.epoch, false));
                    // kept before the breakpoints are marked: they belong to one request
                    let previous = (extendable && whole && tokens <= high)
                        .then(|| {
                            let decision = Arc::clone(&decision);
                            PreviousTurn::of(provider, decision, tools, conversation, &fingerprints, &fitted)
                        })
                        .flatten();
                    self.mark_breakpoints(&mut fitted, conversation);
                    // the whole decision is remembered, as the store holds it, not the part
                    // that applied to this turn: a process that reads it back from the store
                    // decides the next turns alike (a branch that grows back into the
                    // covered messages gets them as the compaction left them)
                    state.remember(key, decision, checkpoint, previous, &self.settings);
                    return Ok(fitted);
                }
            }
        }
        // a compaction: the policy cuts down to the low-water mark
        let mut services = Services::default().with_fingerprints(&fingerprints);
        let summary;
        if let Some(trace) = &self.trace {
            services = services.with_trace(trace.as_ref());
        } else if self.settings.summarize {
            summary = SummaryTrace::extractive();
            services = services.with_trace(&summary);
        }
        if self.settings.offload {
            services = services.with_offload(self.store.as_ref());
        }
        if let Some(summarizer) = &self.summarizer {
            services = services.with_summarizer(summarizer.as_ref());
        }
        let mut fitted = state
            .fitter
            .run_with(
                conversation,
                counter,
                Some(&self.policy.pipeline),
                &options.with_aim(Some(aim)),
                services,
            )
            .map_err(|e| match e {
                FitError::Store(e) => SessionError::Store(e),
                e => SessionError::Fit(e),
            })?;
        let epoch = decision.epoch + 1;
        let open_step = units(&conversation.messages)
            .last()
            .filter(|u| u.kind == UnitKind::AssistantStep && !u.unanswered_calls.is_empty())
            .map(|u| u.messages.start);
        let decided = Arc::new(Decision::of_compaction(epoch, fingerprints, &fitted, open_step));
        let provider = self.target.provider.unwrap_or(conversation.format);
        let checkpoint = decided.to_checkpoint(provider);
        let hash = xxh3_64(&checkpoint);
        // the version first: a replica that reads it before the checkpoint is written reads
        // the checkpoint (the old one, then the new one next turn), never misses the new one
        self.store.save(&version_key(&key), version_of(hash).as_bytes())?;
        self.store.save(&key, &checkpoint)?;
        fitted.report.session = Some(info(epoch, true));
        state.remember(key, decided, Some(hash), None, &self.settings);
        self.mark_breakpoints(&mut fitted, conversation);
        Ok(fitted)
    }

    /// Answers the turn of conversation `key` only if it merely appends to the conversation's
    /// previous turn and can be answered from it (see `extend.rs`): the same answer
    /// [`fit_fingerprinted`](Session::fit_fingerprinted) gives, or `Ok(None)` for a turn that
    /// needs it, and when the session or its store is busy with another call (it waits for
    /// neither: [`Store::try_load`]). It never compacts and never writes the store; it costs
    /// time in the new messages, not in the history (on a shared store, plus a read of the
    /// checkpoint's 16-byte version, and of the checkpoint's absence before the first). What
    /// a caller on an async runtime can run in place, keeping the blocking pool for the turns
    /// that need it (the proxy). `fingerprints`: one
    /// [`message_fingerprint`] per message, in order (another length answers `None`).
    pub fn answer_appended<'a>(
        &self,
        key: &str,
        conversation: &'a Conversation,
        fingerprints: &[u128],
    ) -> Result<Option<Fitted<'a>>, SessionError> {
        self.answer_in_place(key, conversation, fingerprints, None)
    }

    /// [`answer_appended`](Session::answer_appended) on a shared store whose reads wait on
    /// the network (Redis, PostgreSQL), for a caller that read what the session needs of it
    /// beforehand without blocking (an async client: [`Peeked`], at the keys
    /// [`store_keys`] names): the store is not read here. `peeked` read for another
    /// conversation answers `None`. On a store of this process alone, `peeked` is not needed
    /// and not read.
    pub fn answer_appended_peeked<'a>(
        &self,
        key: &str,
        conversation: &'a Conversation,
        fingerprints: &[u128],
        peeked: &Peeked,
    ) -> Result<Option<Fitted<'a>>, SessionError> {
        self.answer_in_place(key, conversation, fingerprints, Some(peeked))
    }

    /// [`answer_appended`](Session::answer_appended), reading the store's version of the
    /// checkpoint from `peeked` when given, else with [`Store::try_load`].
    fn answer_in_place<'a>(
        &self,
        key: &str,
        conversation: &'a Conversation,
        fingerprints: &[u128],
        peeked: Option<&Peeked>,
    ) -> Result<Option<Fitted<'a>>, SessionError> {
        if fingerprints.len() != conversation.messages.len() {
            return Ok(None);
        }
        let provider = self.target.provider.unwrap_or(conversation.format);
        if !self.extendable(provider) {
            return Ok(None);
        }
        // a session busy with another call (a compaction: milliseconds) is not waited for
        let mut state = match self.state.try_lock() {
            Ok(state) => state,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Ok(None),
        };
        let Some(decision) = self.held_decision_now(&state, key, peeked)? else {
            return Ok(None);
        };
        let tools = tools_hash(conversation);
        Ok(self.answered_from_previous(&mut state, key, &decision, tools, conversation, fingerprints))
    }

    /// The turn answered from conversation `key`'s previous turn under `decision` (the
    /// tool schemas hashing to `tools`), if it only appends to it (see
    /// [`PreviousTurn::answer`]); for a provider the session may extend turns of.
    fn answered_from_previous<'a>(
        &self,
        state: &mut State,
        key: &str,
        decision: &Arc<Decision>,
        tools: u64,
        conversation: &'a Conversation,
        fingerprints: &[u128],
    ) -> Option<Fitted<'a>> {
        let (high, counter) = (self.high_water(), &self.target.counter);
        let State { fitter, conversations, .. } = &mut *state;
        let previous = conversations.get_mut(key)?.previous.as_mut()?;
        let mut fitted = previous.answer(decision, tools, conversation, fingerprints, high, |i| {
            fitter.message_tokens(counter, &conversation.messages[i], fingerprints[i])
        })?;
        self.mark_breakpoints(&mut fitted, conversation);
        // the decision and checkpoint held are the ones answered under; the previous turn
        // was extended in place
        state.touch(key);
        Some(fitted)
    }

    /// Whether turns for `provider` may be answered from the previous one: the formats whose
    /// joins `extend.rs` knows, when the settings hold previous turns.
    fn extendable(&self, provider: Format) -> bool {
        matches!(provider, Format::OpenAi | Format::Anthropic) && self.settings.previous_turns > 0
    }

    /// The high-water mark, in tokens.
    fn high_water(&self) -> usize {
        (self.target.budget as f64 * self.settings.high_water) as usize
    }

    /// Whether a turn past the high-water mark (within the budget) should wait for its
    /// compaction, `decision` applying to it: the cost model's best compaction point lies
    /// beyond it. The growth per turn is measured on the history itself (tokens since the
    /// compaction over the turns since; a checkpoint of version 1 did not keep the
    /// compaction's tokens: the aim stands in), so that a session reopened in another process
    /// decides alike. Where caching needs marks (Anthropic), it weighs misses only when the
    /// session places marks or the caller's messages carry some: else nothing is cached, and
    /// there is nothing to lose.
    fn worth_waiting(
        &self,
        decision: &Decision,
        tokens: usize,
        aim: usize,
        conversation: &Conversation,
    ) -> bool {
        let Some(pricing) = self.pricing.as_ref().filter(|_| self.settings.weigh_cache_misses) else {
            return false;
        };
        if pricing.rule == CacheRule::Breakpoints
            && !self.settings.cache_breakpoints
            && !breakpoints::carries_marks(&conversation.messages)
        {
            return false;
        }
        let since = conversation.messages.get(decision.frozen()..).unwrap_or_default();
        let turns = turn_ends(since).len().max(1);
        let growth = tokens.saturating_sub(decision.tokens.unwrap_or(aim)) as f64 / turns as f64;
        (tokens as f64) < pricing.compaction_point(aim, growth)
    }

    /// Marks Anthropic cache breakpoints when the settings ask for them (after the decision
    /// is taken: marks belong to one request, not to the epoch).
    fn mark_breakpoints(&self, fitted: &mut Fitted<'_>, conversation: &Conversation) {
        let provider = self.target.provider.unwrap_or(conversation.format);
        if self.settings.cache_breakpoints && provider == Format::Anthropic {
            breakpoints::place(fitted, &conversation.messages);
        }
    }

    /// The messages a compaction of this session offloaded under `handle` (named in its
    /// trace), from the session's store.
    pub fn recall(&self, handle: &str) -> Result<crate::offload::Recalled, crate::offload::RecallError> {
        crate::offload::recall(self.store.as_ref(), handle)
    }

    /// The store the session keeps its checkpoints and offloaded content in.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Forgets conversation `key`, in memory and in the store (its checkpoint: offloaded
    /// content stays, as it may be shared with other conversations by content).
    pub fn forget(&self, key: &str) -> Result<(), StoreError> {
        self.lock().conversations.remove(key);
        self.store.remove(&version_key(key))?;
        self.store.remove(key).map(|_| ())
    }

    /// The number of conversations whose previous turn is held, to answer the next from it
    /// ([`Settings::previous_turns`]).
    pub fn previous_turns_held(&self) -> usize {
        self.lock().conversations.values().filter(|held| held.previous.is_some()).count()
    }

    /// The number of conversations held in memory.
    pub fn conversations_in_memory(&self) -> usize {
        self.lock().conversations.len()
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // a panic in another call leaves the state whole: decisions are replaced, not edited
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The decision [`decision_of`](Session::decision_of) would give for `key`, when it is the
    /// one held and that is known without waiting for the store, and the conversation holds a
    /// previous turn to answer from; else `None` (the caller takes the blocking path). A store
    /// of this process alone: the one held. A shared one: the checkpoint's version, read with
    /// [`Store::try_load`], is the held checkpoint's; or neither a version nor a checkpoint
    /// is there and none is held (the initial decision). `peeked`: what the caller read of
    /// the store for `key` beforehand, read instead of the store.
    fn held_decision_now(
        &self,
        state: &State,
        key: &str,
        peeked: Option<&Peeked>,
    ) -> Result<Option<Arc<Decision>>, StoreError> {
        let Some(held) = state.conversations.get(key).filter(|held| held.previous.is_some()) else {
            return Ok(None);
        };
        if !self.settings.shared_store {
            return Ok(Some(Arc::clone(&held.decision)));
        }
        let latest = match peeked {
            Some(peeked) => {
                peeked.key == key
                    && holds_latest(peeked.version.as_deref(), held.checkpoint, || {
                        Ok(Some(peeked.has_checkpoint))
                    })?
            }
            None => match self.store.try_load(&version_key(key)) {
                Some(version) => holds_latest(version?.as_deref(), held.checkpoint, || {
                    self.store.try_load(key).transpose().map(|checkpoint| checkpoint.map(|c| c.is_some()))
                })?,
                None => false,
            },
        };
        Ok(latest.then(|| Arc::clone(&held.decision)))
    }

    /// The current decision for `key`: in memory, else from the store, else the initial one.
    /// The decision that applies to conversation `key`, and the hash of the checkpoint it
    /// was read from or saved as (`None`: no checkpoint, the initial decision).
    fn decision_of(&self, state: &mut State, key: &str) -> Result<(Arc<Decision>, Option<u64>), StoreError> {
        let held = state.conversations.get(key);
        if let Some(held) = held.filter(|_| !self.settings.shared_store) {
            return Ok((Arc::clone(&held.decision), held.checkpoint));
        }
        // a shared store: the checkpoint's version says whether the one held is the latest, in
        // a read of 16 bytes instead of the whole checkpoint (tens of kilobytes at 1,500
        // messages); a checkpoint without a version (none yet, or written by an older build)
        // is read whole
        if let Some(held) = held {
            let version = self.store.load(&version_key(key))?;
            if let (Some(version), Some(hash)) = (version, held.checkpoint) {
                if version == version_of(hash).as_bytes() {
                    return Ok((Arc::clone(&held.decision), held.checkpoint));
                }
            }
        }
        let Some(bytes) = self.store.load(key)? else {
            // no checkpoint yet: the initial decision, the one held if it is (a turn answered
            // from the previous one needs the decision it was answered under)
            let initial =
                held.filter(|held| held.checkpoint.is_none()).map(|held| Arc::clone(&held.decision));
            return Ok((initial.unwrap_or_else(|| Arc::new(Decision::initial())), None));
        };
        let hash = xxh3_64(&bytes);
        if let Some(held) = held.filter(|held| held.checkpoint == Some(hash)) {
            // the checkpoint this process holds is still the latest
            return Ok((Arc::clone(&held.decision), held.checkpoint));
        }
        match Decision::from_checkpoint(&bytes) {
            Ok((decision, _)) => Ok((Arc::new(decision), Some(hash))),
            Err(CheckpointError::Corrupt(reason)) => Err(StoreError::new(
                StoreErrorKind::Corrupt,
                self.store.describe(),
                format!("the checkpoint of conversation {key} cannot be read: {reason}"),
            )),
            Err(CheckpointError::Version(version)) => Err(StoreError::new(
                StoreErrorKind::Version,
                self.store.describe(),
                format!(
                    "the checkpoint of conversation {key} has version {version}; this build reads versions 1 to {CHECKPOINT_VERSION}"
                ),
            )),
        }
    }
}

/// A conversation's decision as a session holds it.
#[derive(Debug)]
struct Held {
    decision: Arc<Decision>,
    /// The hash of the checkpoint it was read from or saved as; `None` for the initial one.
    checkpoint: Option<u64>,
    /// When it was last used (the state's clock).
    used: u64,
    /// Its previous turn, when the next may be answered from it.
    previous: Option<PreviousTurn>,
}

impl State {
    /// Marks conversation `key` used now.
    fn touch(&mut self, key: &str) {
        self.clock += 1;
        if let Some(held) = self.conversations.get_mut(key) {
            held.used = self.clock;
        }
    }

    /// Holds `decision` (and the turn just answered, `previous`) for conversation `key`;
    /// forgets the least recently used conversation past `settings.max_conversations`, and
    /// the least recently used previous turn past `settings.previous_turns`.
    fn remember(
        &mut self,
        key: String,
        decision: Arc<Decision>,
        checkpoint: Option<u64>,
        previous: Option<PreviousTurn>,
        settings: &Settings,
    ) {
        self.clock += 1;
        let holds_previous = previous.is_some();
        self.conversations.insert(key, Held { decision, checkpoint, used: self.clock, previous });
        if self.conversations.len() > settings.max_conversations {
            let oldest = self.conversations.iter().min_by_key(|(_, held)| held.used).map(|(k, _)| k.clone());
            if let Some(oldest) = oldest {
                self.conversations.remove(&oldest);
            }
        }
        if holds_previous {
            let held = self.conversations.values().filter(|h| h.previous.is_some());
            if held.count() > settings.previous_turns {
                let oldest =
                    self.conversations.values_mut().filter(|h| h.previous.is_some()).min_by_key(|h| h.used);
                if let Some(oldest) = oldest {
                    oldest.previous = None;
                }
            }
        }
    }
}

/// The store keys a session reads for conversation `key` to know whether the decision it
/// holds is the latest (see [`Session::answer_appended_peeked`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreKeys {
    /// The key of the conversation's checkpoint.
    pub checkpoint: String,
    /// The key of its version (16 bytes, written before the checkpoint).
    pub version: String,
}

/// The store keys of conversation `key`.
pub fn store_keys(key: &str) -> StoreKeys {
    StoreKeys { checkpoint: key.to_string(), version: version_key(key) }
}

/// What a caller read of a shared store for one conversation, at its [`StoreKeys`], before
/// asking [`Session::answer_appended_peeked`]: the bytes at the version key, and whether a
/// checkpoint is there (its bytes are not needed: a checkpoint without a version is one an
/// older build wrote, and the turn then takes the whole path).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Peeked {
    /// The conversation key the reads were for.
    pub key: String,
    /// The bytes at [`StoreKeys::version`], if any.
    pub version: Option<Vec<u8>>,
    /// Whether [`StoreKeys::checkpoint`] holds anything.
    pub has_checkpoint: bool,
}

/// Whether the checkpoint a session holds (its hash; `None`: none, the initial decision) is
/// the latest, given the version the store holds for it and, asked only when there is
/// neither, whether the store holds a checkpoint (one without a version: an older build's;
/// `Ok(None)`: not known at once, so not the latest).
fn holds_latest(
    version: Option<&[u8]>,
    held: Option<u64>,
    has_checkpoint: impl FnOnce() -> Result<Option<bool>, StoreError>,
) -> Result<bool, StoreError> {
    Ok(match (version, held) {
        (Some(version), Some(hash)) => version == version_of(hash).as_bytes(),
        (None, None) => has_checkpoint()? == Some(false),
        _ => false,
    })
}

/// The store key under which the version of conversation `key`'s checkpoint is kept.
fn version_key(key: &str) -> String {
    format!("tightfit-checkpoint-version:{key}")
}

/// The version of a checkpoint whose bytes hash to `hash`, as stored.
fn version_of(hash: u64) -> String {
    format!("{hash:016x}")
}

/// A hash of the tool schemas a conversation sends: a turn answered from the previous one
/// must send the same.
fn tools_hash(conversation: &Conversation) -> u64 {
    let mut hasher = Xxh3::new();
    conversation.tools.hash(&mut hasher);
    hasher.digest()
}

fn key_from(format: Format, fingerprints: impl Iterator<Item = u128>) -> String {
    let mut hasher = Xxh3::new();
    format.as_str().hash(&mut hasher);
    for f in fingerprints {
        f.hash(&mut hasher);
    }
    format!("{:032x}", hasher.digest128())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};

    /// On a shared store, a conversation that has not compacted yet keeps the decision it
    /// holds from turn to turn (its next turn may be answered from the previous one, which is
    /// tied to that decision); once another process saves a checkpoint, it is read.
    #[test]
    fn a_shared_store_without_a_checkpoint_keeps_the_held_initial_decision() {
        let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
        let session = Session::new(Target::bare_budget(10_000), Policy::cache(), Arc::clone(&store))
            .with_settings(Settings::default().with_shared_store(true))
            .unwrap();
        let turn = parse_str(r#"[{"role": "user", "content": "Hi!"}]"#, FormatHint::Auto).unwrap();
        let key = session.fit(&turn).unwrap().report.session.unwrap().key;
        let mut state = session.lock();
        let (first, _) = session.decision_of(&mut state, &key).unwrap();
        assert!(Arc::ptr_eq(&first, &state.conversations[&key].decision));
        let (again, _) = session.decision_of(&mut state, &key).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // another process compacts: its checkpoint is read
        let mut decided = Decision::initial();
        decided.epoch = 3;
        store.save(&key, &decided.to_checkpoint(Format::OpenAi)).unwrap();
        let (read, checkpoint) = session.decision_of(&mut state, &key).unwrap();
        assert!(checkpoint.is_some() && read.epoch == 3);
    }
}

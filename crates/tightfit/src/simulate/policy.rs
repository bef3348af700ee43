//! The policies a simulation compares: what each sends for a turn's history.
//!
//! - `session:<preset>` — a tightfit [`Session`] with that policy (`session:cache`, the
//!   sessions' default, `session:middle-out`, …);
//! - `fit` — stateless [`fit`](crate::fit()) with the default ladder, afresh each turn;
//! - `hysteresis[:<share>]` — the ten-line baseline: keep everything until the budget would
//!   be passed, then drop the oldest units (after the system prompt) down to `share` of it
//!   (default 0.5), and keep that cut until the next overflow;
//! - the peers, as the engine emulates them (feature `compat`): `ag2-token-limiter`,
//!   `ag2-history-limiter`, `langchain-trim`, `autogen-buffered`, `autogen-head-and-tail`,
//!   `autogen-token-limited`, `swarms`. Token limits are the budget; message counts (where a
//!   peer counts messages) are the number of messages of the stream's average size that fill
//!   the budget.

use std::borrow::Cow;
use std::sync::Arc;

use crate::fit::{FitError, Fitted, Fitter, RunOptions, Target};
use crate::format::Conversation;
use crate::message::{Message, Part};
use crate::pipeline::Pipeline;
use crate::pricing::Pricing;
use crate::session::{MemoryStore, Policy as SessionPolicy, Session};
use crate::steps::{ConfigError, TRACE_PREFIX};
use crate::tokens::CountCache;
use crate::units::{units, UnitKind};

/// A policy by name, before it is started.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PolicySpec {
    /// A tightfit session with this preset.
    Session(String),
    /// Stateless `fit` with the default ladder.
    Fit,
    /// Drop the oldest down to this share of the budget on overflow.
    Hysteresis(f64),
    /// A peer as the engine emulates it.
    Peer(Peer),
}

/// The peers a simulation can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Peer {
    /// AG2 `MessageTokenLimiter(max_tokens=budget, max_tokens_per_message=budget/16)` (without
    /// a per-message limit AG2 keeps only the newest message).
    Ag2TokenLimiter,
    /// AG2 `MessageHistoryLimiter(max_messages=M)`.
    Ag2HistoryLimiter,
    /// LangChain `trim_messages(max_tokens=budget, strategy="last", include_system=True,
    /// start_on="human", token_counter=the model's)`.
    LangchainTrim,
    /// autogen `BufferedChatCompletionContext(buffer_size=M)`.
    AutogenBuffered,
    /// autogen `HeadAndTailChatCompletionContext(head_size=2, tail_size=M-2)`.
    AutogenHeadAndTail,
    /// autogen `TokenLimitedChatCompletionContext(token_limit=budget)`.
    AutogenTokenLimited,
    /// swarms' middle-out to the budget.
    Swarms,
}

/// Every peer, in the order a table lists them.
pub const PEERS: &[(&str, Peer)] = &[
    ("ag2-token-limiter", Peer::Ag2TokenLimiter),
    ("ag2-history-limiter", Peer::Ag2HistoryLimiter),
    ("langchain-trim", Peer::LangchainTrim),
    ("autogen-buffered", Peer::AutogenBuffered),
    ("autogen-head-and-tail", Peer::AutogenHeadAndTail),
    ("autogen-token-limited", Peer::AutogenTokenLimited),
    ("swarms", Peer::Swarms),
];

impl PolicySpec {
    /// Reads a policy name (`session:cache`, `fit`, `hysteresis:0.5`, `langchain-trim`).
    pub fn parse(name: &str) -> Result<PolicySpec, ConfigError> {
        let unknown = || {
            let peers: Vec<&str> = PEERS.iter().map(|(n, _)| *n).collect();
            ConfigError::new(
                "policy",
                format!(
                    "unknown policy {name:?} (known: session:<preset>, fit, hysteresis[:<share>], {})",
                    peers.join(", ")
                ),
            )
        };
        if let Some(preset) =
            name.strip_prefix("session:").or(if name == "session" { Some("cache") } else { None })
        {
            crate::presets::by_name(preset).map_err(|e| e.within("policy"))?;
            return Ok(PolicySpec::Session(preset.to_string()));
        }
        if name == "fit" {
            return Ok(PolicySpec::Fit);
        }
        if let Some(rest) = name.strip_prefix("hysteresis") {
            let share = match rest.strip_prefix(':') {
                None if rest.is_empty() => 0.5,
                Some(share) => share.parse::<f64>().map_err(|_| unknown())?,
                None => return Err(unknown()),
            };
            if !(share > 0.0 && share < 1.0) {
                return Err(ConfigError::new("policy", format!("{name}: the share must be between 0 and 1")));
            }
            return Ok(PolicySpec::Hysteresis(share));
        }
        PEERS.iter().find(|(n, _)| *n == name).map(|(_, p)| PolicySpec::Peer(*p)).ok_or_else(unknown)
    }

    /// Every policy a table compares by default: the `cache` session, stateless `fit`, the
    /// hysteresis baseline, and every peer this build emulates.
    pub fn all() -> Vec<PolicySpec> {
        let mut all = vec![PolicySpec::Session("cache".into()), PolicySpec::Fit, PolicySpec::Hysteresis(0.5)];
        if cfg!(feature = "compat") {
            all.extend(PEERS.iter().map(|(_, p)| PolicySpec::Peer(*p)));
        }
        all
    }

    /// Its name in tables.
    pub fn name(&self) -> String {
        match self {
            PolicySpec::Session(preset) => format!("session:{preset}"),
            PolicySpec::Fit => "fit".into(),
            PolicySpec::Hysteresis(share) => format!("hysteresis:{share}"),
            PolicySpec::Peer(peer) => {
                PEERS.iter().find(|(_, p)| p == peer).map(|(n, _)| n.to_string()).unwrap_or_default()
            }
        }
    }

    /// Whether the policy promises to leave a trace of what it removes (tightfit's sessions).
    pub fn promises_traces(&self) -> bool {
        matches!(self, PolicySpec::Session(_))
    }

    /// Starts the policy for one stream. `average_message_tokens` sizes the peers that count
    /// messages; sessions weigh cache misses by `pricing`.
    pub(crate) fn start(
        &self,
        target: &Target,
        pricing: &Pricing,
        average_message_tokens: usize,
    ) -> Result<Running, ConfigError> {
        let budget = target.budget;
        let messages = (budget / average_message_tokens.max(1)).max(4);
        Ok(match self {
            PolicySpec::Session(preset) => Running::Session(Box::new(
                Session::new(target.clone(), SessionPolicy::by_name(preset)?, Arc::new(MemoryStore::new()))
                    .with_pricing(pricing.clone()),
            )),
            PolicySpec::Fit => Running::Fit(Fitter::new()),
            PolicySpec::Hysteresis(share) => Running::Hysteresis {
                share: *share,
                cut: 0,
                cache: CountCache::new(),
                target: target.clone(),
            },
            PolicySpec::Peer(peer) => {
                let step = match peer {
                    Peer::Ag2TokenLimiter => {
                        serde_json::json!({"type": "ag2_token_limiter", "max_tokens": budget,
                            "max_tokens_per_message": budget / 16, "model": "gpt-4o"})
                    }
                    Peer::Ag2HistoryLimiter => {
                        serde_json::json!({"type": "ag2_history_limiter", "max_messages": messages})
                    }
                    Peer::LangchainTrim => serde_json::json!({
                        "type": "langchain_trim", "max_tokens": budget, "strategy": "last",
                        "include_system": true, "start_on": "human", "counter": "model"}),
                    Peer::AutogenBuffered => {
                        serde_json::json!({"type": "autogen_buffered", "buffer_size": messages})
                    }
                    Peer::AutogenHeadAndTail => serde_json::json!({
                        "type": "autogen_head_and_tail", "head_size": 2, "tail_size": messages.saturating_sub(2).max(1)}),
                    Peer::AutogenTokenLimited => {
                        serde_json::json!({"type": "autogen_token_limited", "token_limit": budget})
                    }
                    Peer::Swarms => {
                        return Ok(Running::Peer(crate::presets::by_name("swarms")?, Fitter::new()))
                    }
                };
                Running::Peer(
                    crate::config::from_value(serde_json::json!({ "steps": [step] }))?,
                    Fitter::new(),
                )
            }
        })
    }
}

/// A policy under way: what it keeps between turns.
#[derive(Debug)]
pub(crate) enum Running {
    Session(Box<Session>),
    Fit(Fitter),
    Hysteresis { share: f64, cut: usize, cache: CountCache, target: Target },
    Peer(Pipeline, Fitter),
}

/// What a policy sends for one turn.
pub(crate) struct Request<'a> {
    pub(crate) messages: Vec<Cow<'a, Message>>,
    /// Input messages sent (changed or not).
    pub(crate) kept_inputs: usize,
    /// Messages the policy wrote (placeholders, traces, summaries).
    pub(crate) written: usize,
    /// Whether the policy says it compacted on this turn (sessions only).
    pub(crate) compacted: Option<bool>,
}

impl Running {
    /// The request for `turn`, the whole history so far.
    pub(crate) fn request<'a>(
        &mut self,
        turn: &'a Conversation,
        target: &Target,
    ) -> Result<Request<'a>, FitError> {
        let fitted = match self {
            Running::Session(session) => session.fit(turn).map_err(|e| match e {
                crate::session::SessionError::Fit(e) => e,
                other => FitError::Step(crate::steps::StepError::new("session", other.to_string())),
            })?,
            Running::Fit(fitter) => fitter.fit(turn, target, None)?,
            Running::Peer(pipeline, fitter) => {
                let mut options = RunOptions::transform().with_budget(Some(target.budget)).with_repair(None);
                options.validate = false;
                options.provider = target.provider;
                fitter.run(turn, &target.counter, Some(pipeline), &options)?
            }
            Running::Hysteresis { share, cut, cache, target } => {
                return Ok(hysteresis(turn, target, *share, cut, cache));
            }
        };
        let kept_inputs = fitted.plan.output.iter().filter(|e| e.input.is_some()).count();
        let mut written = fitted.plan.output.len() - kept_inputs;
        if written == 0 && carries_a_folded_trace(turn, &fitted) {
            written = 1;
        }
        let compacted = fitted.report.session.as_ref().map(|s| s.compacted);
        Ok(Request { messages: fitted.messages, kept_inputs, written, compacted })
    }
}

/// Whether one of tightfit's traces was folded into an input message it kept (Anthropic's
/// turns of one role are merged, so a trace next to a user turn becomes part of it): a
/// changed input message with a text part that starts with [`TRACE_PREFIX`] and that its
/// input did not have.
fn carries_a_folded_trace(turn: &Conversation, fitted: &Fitted<'_>) -> bool {
    let trace_texts = |m: &Message| -> Vec<String> {
        m.parts
            .iter()
            .filter_map(|p| match p {
                Part::Text(t) if t.text.starts_with(TRACE_PREFIX) => Some(t.text.clone()),
                _ => None,
            })
            .collect()
    };
    fitted.plan.output.iter().zip(&fitted.messages).any(|(entry, sent)| match (entry.input, &entry.message) {
        (Some(i), Some(_)) => {
            let had = trace_texts(&turn.messages[i]);
            trace_texts(sent).iter().any(|t| !had.contains(t))
        }
        _ => false,
    })
}

/// The baseline: the system messages, then everything from `cut` on; on overflow, `cut`
/// moves to the first unit boundary that brings the request down to `share` of the budget.
fn hysteresis<'a>(
    turn: &'a Conversation,
    target: &Target,
    share: f64,
    cut: &mut usize,
    cache: &mut CountCache,
) -> Request<'a> {
    let messages = &turn.messages;
    let counter = &target.counter;
    let tokens: Vec<usize> = messages.iter().map(|m| cache.message_tokens(counter, m)).collect();
    let fixed =
        turn.tools.as_deref().map_or(0, |t| cache.tools_tokens(counter, t)) + counter.priming_tokens();
    let grouped = units(messages);
    let is_system = |i: usize| messages[i].role.is_instruction();
    let system: usize = (0..messages.len()).filter(|&i| i < *cut && is_system(i)).map(|i| tokens[i]).sum();
    let total = |cut: usize| fixed + system + tokens[cut.min(messages.len())..].iter().sum::<usize>();
    *cut = (*cut).min(messages.len());
    if total(*cut) > target.budget {
        let aim = (target.budget as f64 * share) as usize;
        // the first unit start at or after the old cut that brings the request under `aim`,
        // leaving at least the last unit
        let starts: Vec<usize> =
            grouped.iter().filter(|u| u.kind != UnitKind::OrphanResults).map(|u| u.messages.start).collect();
        let last = starts.last().copied().unwrap_or(0);
        let mut new_cut = *cut;
        for &start in starts.iter().filter(|&&s| s >= *cut) {
            new_cut = start;
            let kept_system =
                system + (*cut..start).filter(|&i| is_system(i)).map(|i| tokens[i]).sum::<usize>();
            let sum = fixed + kept_system + tokens[start..].iter().sum::<usize>();
            if sum <= aim || start == last {
                break;
            }
        }
        *cut = new_cut;
    }
    let sent: Vec<Cow<'a, Message>> = (0..messages.len())
        .filter(|&i| i >= *cut || is_system(i))
        .map(|i| Cow::Borrowed(&messages[i]))
        .collect();
    let kept_inputs = sent.len();
    Request { messages: sent, kept_inputs, written: 0, compacted: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for spec in PolicySpec::all() {
            assert_eq!(PolicySpec::parse(&spec.name()).unwrap(), spec);
        }
        assert_eq!(PolicySpec::parse("hysteresis:0.7").unwrap(), PolicySpec::Hysteresis(0.7));
        let err = PolicySpec::parse("sliding").unwrap_err().to_string();
        assert!(err.contains("unknown policy \"sliding\""), "{err}");
        assert!(PolicySpec::parse("session:nope").unwrap_err().to_string().contains("nope"));
        assert!(PolicySpec::parse("hysteresis:2").is_err());
    }
}

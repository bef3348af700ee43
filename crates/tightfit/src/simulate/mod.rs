//! `simulate`: replays a conversation turn by turn through several policies and measures what
//! each would send and what the provider would bill.
//!
//! Each turn appends the next messages of the conversation (a tool call's results come with
//! it; see [`turn_ends`](crate::units::turn_ends)) and asks every policy for the request it
//! would send. Per policy the simulation measures, all in one run so the figures compare:
//! request tokens (exact, the model's counter), utilisation of the budget, **prefix reuse**
//! (the tokens a request shares as a prefix with the one before, over its tokens), the
//! tokens a provider's cache would serve and the dollars it would bill ([`bill`]), the turns
//! where the previous request stopped being a prefix ("cuts"), messages removed without a
//! trace, requests over budget or invalid for the provider, and the policy's own time.
//!
//! The engine part replays and prices; the command line (`tightfit simulate`) reads files,
//! draws the table and the SVG.

mod policy;

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

use serde::Serialize;

/// What a provider bills (the prices and caching rules also steer a session's compactions).
pub use crate::pricing as bill;
pub use crate::pricing::{Bill, CacheRule, Pricing, Shared};
pub use policy::{Peer, PolicySpec, PEERS};

use crate::fit::{FitError, Target};
use crate::format::{messages_to_value, Conversation, Format};
use crate::message::Message;
use crate::steps::ConfigError;
use crate::tokens::message_fingerprint;
use crate::validate::validate;

/// What one policy did over a whole stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct PolicyRow {
    /// The policy's name.
    pub policy: String,
    /// Requests sent.
    pub turns: usize,
    /// Mean request tokens.
    pub mean_tokens: f64,
    /// Largest request.
    pub max_tokens: usize,
    /// Mean request tokens over the budget.
    pub utilisation: f64,
    /// Tokens shared as a prefix with the previous request, over the tokens of every request
    /// but the first (which has no previous request).
    pub prefix_reuse: f64,
    /// Tokens the provider's cache serves, over all request tokens.
    pub cached_share: f64,
    /// Dollars for all requests' input.
    pub dollars: f64,
    /// Dollars per request.
    pub dollars_per_turn: f64,
    /// Turns where the previous request, all but its last message, was not a prefix of this
    /// one (a cut, a compaction; not a last message answered again).
    pub cuts: usize,
    /// Compactions the policy reported (sessions only).
    pub compactions: Option<usize>,
    /// The most input messages missing from a request that left no message in their place.
    pub removed_without_trace: usize,
    /// Requests over the budget.
    pub over_budget: usize,
    /// Requests the provider would reject (its history rules).
    pub invalid: usize,
    /// Turns the policy failed (the first error is in `error`).
    pub failed: usize,
    /// The first failure, if any.
    pub error: Option<String>,
    /// The policy's own mean time per turn, in microseconds.
    pub micros_per_turn: f64,
    /// Per turn: request tokens and dollars so far (for plots).
    pub per_turn: Vec<(usize, f64)>,
}

impl PolicyRow {
    /// The row of two streams replayed one after the other: counts add up, means are weighted
    /// by turns, maxima stay maxima.
    pub fn merge(self, other: PolicyRow) -> PolicyRow {
        let turns = self.turns + other.turns;
        let weighted = |a: f64, b: f64| {
            if turns == 0 {
                0.0
            } else {
                (a * self.turns as f64 + b * other.turns as f64) / turns as f64
            }
        };
        let tokens = |r: &PolicyRow| r.mean_tokens * r.turns as f64;
        let all_tokens = tokens(&self) + tokens(&other);
        let by_tokens = |a: f64, b: f64| {
            if all_tokens == 0.0 {
                0.0
            } else {
                (a * tokens(&self) + b * tokens(&other)) / all_tokens
            }
        };
        let dollars = self.dollars + other.dollars;
        let mut per_turn = self.per_turn.clone();
        per_turn.extend(other.per_turn.iter().map(|(t, d)| (*t, d + self.dollars)));
        let attempts = (self.turns + self.failed + other.turns + other.failed).max(1) as f64;
        PolicyRow {
            policy: self.policy.clone(),
            turns,
            mean_tokens: weighted(self.mean_tokens, other.mean_tokens),
            max_tokens: self.max_tokens.max(other.max_tokens),
            utilisation: weighted(self.utilisation, other.utilisation),
            prefix_reuse: by_tokens(self.prefix_reuse, other.prefix_reuse),
            cached_share: by_tokens(self.cached_share, other.cached_share),
            dollars,
            dollars_per_turn: if turns == 0 { 0.0 } else { dollars / turns as f64 },
            cuts: self.cuts + other.cuts,
            compactions: match (self.compactions, other.compactions) {
                (None, None) => None,
                (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
            },
            removed_without_trace: self.removed_without_trace.max(other.removed_without_trace),
            over_budget: self.over_budget + other.over_budget,
            invalid: self.invalid + other.invalid,
            failed: self.failed + other.failed,
            error: self.error.clone().or(other.error.clone()),
            micros_per_turn: (self.micros_per_turn * (self.turns + self.failed) as f64
                + other.micros_per_turn * (other.turns + other.failed) as f64)
                / attempts,
            per_turn,
        }
    }
}

/// A stream to replay: one conversation and the prefix lengths at which requests are sent.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The whole conversation.
    pub conversation: Conversation,
    /// The prefix lengths of the requests, increasing.
    pub ends: Vec<usize>,
}

/// Replays `stream` through `policy` for `target` and prices it with `pricing`; `progress` is
/// called after each turn.
pub fn run(
    stream: &Stream,
    policy: &PolicySpec,
    target: &Target,
    pricing: &Pricing,
    progress: &mut dyn FnMut(),
) -> Result<PolicyRow, ConfigError> {
    let conversation = &stream.conversation;
    let counter = &target.counter;
    let provider = target.provider.unwrap_or(conversation.format);
    // every input message's fingerprint and tokens, once
    let fingerprints: Vec<u128> = conversation.messages.iter().map(message_fingerprint).collect();
    let mut tokens_of: HashMap<u128, usize> = HashMap::new();
    for (message, fingerprint) in conversation.messages.iter().zip(&fingerprints) {
        tokens_of.entry(*fingerprint).or_insert_with(|| counter.message_tokens(message));
    }
    let total_input: usize = fingerprints.iter().map(|f| tokens_of[f]).sum();
    let average = total_input / conversation.messages.len().max(1);
    let fixed =
        conversation.tools.as_deref().map_or(0, |t| counter.tools_tokens(t)) + counter.priming_tokens();
    let tools = conversation.tools.as_deref().map_or(0, |t| counter.tools_tokens(t));
    let mut running = policy.start(target, pricing, average)?;

    let mut grown =
        Conversation { messages: Vec::with_capacity(conversation.messages.len()), ..conversation.clone() };
    let mut previous: Vec<u128> = Vec::new();
    let mut previous_tokens = 0;
    // Anthropic's cache entries (automatic caching: one at each request's end), by the chained
    // hash of the messages before it, with the tokens they cover. Turns are taken to come
    // within the entries' lifetime.
    let mut entries: HashMap<u128, usize> = HashMap::new();
    let mut previous_last: Option<Message> = None;
    let mut row = PolicyRow {
        policy: policy.name(),
        turns: 0,
        mean_tokens: 0.0,
        max_tokens: 0,
        utilisation: 0.0,
        prefix_reuse: 0.0,
        cached_share: 0.0,
        dollars: 0.0,
        dollars_per_turn: 0.0,
        cuts: 0,
        compactions: None,
        removed_without_trace: 0,
        over_budget: 0,
        invalid: 0,
        failed: 0,
        error: None,
        micros_per_turn: 0.0,
        per_turn: Vec::with_capacity(stream.ends.len()),
    };
    let (mut sum_tokens, mut sum_prefix, mut sum_followers, mut sum_read, mut micros) =
        (0usize, 0usize, 0usize, 0usize, 0f64);
    for &end in &stream.ends {
        grown.messages.extend_from_slice(&conversation.messages[grown.messages.len()..end]);
        let started = Instant::now();
        let outcome = running.request(&grown, target);
        micros += started.elapsed().as_secs_f64() * 1e6;
        progress();
        let request = match outcome {
            Ok(request) => request,
            Err(e) => {
                row.failed += 1;
                row.error.get_or_insert_with(|| describe(&e, end));
                continue;
            }
        };
        // fingerprints of what is sent: the input's for borrowed messages, hashed otherwise
        let base = grown.messages.as_ptr() as usize;
        let size = std::mem::size_of::<Message>().max(1);
        let sent: Vec<u128> = request
            .messages
            .iter()
            .map(|m| match m {
                Cow::Borrowed(b) => {
                    let at = (*b as *const Message as usize).wrapping_sub(base) / size;
                    if at < grown.messages.len() && std::ptr::eq(*b, &grown.messages[at]) {
                        fingerprints[at]
                    } else {
                        message_fingerprint(b)
                    }
                }
                Cow::Owned(o) => message_fingerprint(o),
            })
            .collect();
        for (f, m) in sent.iter().zip(&request.messages) {
            tokens_of.entry(*f).or_insert_with(|| counter.message_tokens(m));
        }
        let tokens = fixed + sent.iter().map(|f| tokens_of[f]).sum::<usize>();
        // the shared prefix: the tools, the leading messages sent alike, and the start of the
        // first message that differs
        let same = previous.iter().zip(&sent).take_while(|(a, b)| a == b).count();
        let mut prefix = if previous.is_empty() {
            0
        } else {
            tools + sent[..same].iter().map(|f| tokens_of[f]).sum::<usize>()
        };
        if same < previous.len() && same < sent.len() && same + 1 == previous.len() {
            if let Some(last) = &previous_last {
                prefix += partial_prefix_tokens(last, &request.messages[same], conversation.format, target);
            }
        }
        let system_end = request.messages.iter().take_while(|m| m.role.is_instruction()).count();
        let system = if same >= system_end {
            tools + sent[..system_end].iter().map(|f| tokens_of[f]).sum::<usize>()
        } else {
            0
        };
        let chained = chain_hashes(&sent);
        let entry = longest_entry(&entries, &chained, &request.messages);
        let bill = pricing.bill(&Shared { tokens, previous: previous_tokens, prefix, system, entry });
        // only the previous request's last message changed (a synthetic result for a call the
        // turn ended on, replaced by the real one): no cut, the prefix before it stays
        if !previous.is_empty() && same + 1 < previous.len() {
            row.cuts += 1;
        }
        if let Some(compacted) = request.compacted {
            *row.compactions.get_or_insert(0) += usize::from(compacted);
        }
        let removed = end - request.kept_inputs.min(end);
        if request.written == 0 {
            row.removed_without_trace = row.removed_without_trace.max(removed);
        }
        row.over_budget += usize::from(tokens > target.budget);
        row.invalid += usize::from(!validate(&request.messages, provider).is_empty());
        row.turns += 1;
        row.max_tokens = row.max_tokens.max(tokens);
        row.dollars += bill.dollars;
        row.per_turn.push((tokens, row.dollars));
        sum_tokens += tokens;
        if !previous.is_empty() {
            // reuse is measured against a previous request: the first has none
            sum_prefix += prefix.min(tokens);
            sum_followers += tokens;
        }
        sum_read += bill.read;
        previous_last = request.messages.get(sent.len().wrapping_sub(1)).map(|m| m.clone().into_owned());
        // only the last message can be cut partway in the next comparison
        previous = sent;
        // what a later request can share of this one: all but the reply priming, which ends a
        // request and is not part of its prefix (a breakpoint sits on the last message)
        previous_tokens = tokens.saturating_sub(counter.priming_tokens());
        if let Some(end) = chained.last() {
            entries.insert(*end, previous_tokens);
        }
    }
    if row.turns > 0 {
        let turns = row.turns as f64;
        row.mean_tokens = sum_tokens as f64 / turns;
        row.utilisation = row.mean_tokens / target.budget.max(1) as f64;
        row.prefix_reuse = sum_prefix as f64 / sum_followers.max(1) as f64;
        row.cached_share = sum_read as f64 / sum_tokens.max(1) as f64;
        row.dollars_per_turn = row.dollars / turns;
        row.micros_per_turn = micros / (row.turns + row.failed) as f64;
    }
    Ok(row)
}

/// Each prefix of a request by one hash: `chained[i]` stands for messages `0..=i`.
fn chain_hashes(sent: &[u128]) -> Vec<u128> {
    let mut chained = Vec::with_capacity(sent.len());
    let mut running = 0u128;
    for fingerprint in sent {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(&running.to_le_bytes());
        bytes[16..].copy_from_slice(&fingerprint.to_le_bytes());
        running = xxhash_rust::xxh3::xxh3_128(&bytes);
        chained.push(running);
    }
    chained
}

/// The tokens of the longest earlier request this one extends whole, its end found by looking
/// back from this request's end through at most [`bill::LOOKBACK_BLOCKS`] content blocks (a
/// message's parts; one for a message of plain text); 0 when none is.
fn longest_entry(entries: &HashMap<u128, usize>, chained: &[u128], messages: &[Cow<'_, Message>]) -> usize {
    let mut blocks = 0;
    for at in (0..chained.len()).rev() {
        if let Some(&tokens) = entries.get(&chained[at]) {
            return tokens;
        }
        blocks += messages.get(at).map_or(1, |m| m.parts.len().max(1));
        if blocks > bill::LOOKBACK_BLOCKS {
            break;
        }
    }
    0
}

/// The tokens of the longest common start of two messages' rendered text (the previous
/// request's last message and the one now in its place: usually a message that grew).
fn partial_prefix_tokens(a: &Message, b: &Message, format: Format, target: &Target) -> usize {
    let render = |m: &Message| messages_to_value(std::slice::from_ref(m), format).to_string();
    let (a, b) = (render(a), render(b));
    let mut common = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    while !a.is_char_boundary(common) {
        common -= 1;
    }
    target.counter.text_counter().count(&a[..common])
}

fn describe(error: &FitError, end: usize) -> String {
    format!("turn at {end} messages: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{parse_str, FormatHint};
    use crate::tokens::{ChatCounter, OpenAiEncoding};
    use crate::units::{message_ends, turn_ends};

    fn chat(n: usize) -> Conversation {
        let mut messages = vec![serde_json::json!({"role": "system", "content": "be brief"})];
        for i in 0..n {
            messages.push(serde_json::json!({"role": "user", "content": format!("question {i} {}", "word ".repeat(40))}));
            messages.push(serde_json::json!({"role": "assistant", "content": format!("answer {i} {}", "word ".repeat(40))}));
        }
        parse_str(&serde_json::Value::Array(messages).to_string(), FormatHint::Auto).unwrap()
    }

    fn pricing() -> Pricing {
        Pricing { rule: CacheRule::AutomaticPrefix, input: 2.5, cached_input: 1.25, cache_write: 0.0 }
    }

    #[test]
    fn under_anthropic_breakpoints_a_request_that_extends_the_previous_one_reads_it_whole() {
        let conversation = chat(120);
        let stream = Stream { ends: turn_ends(&conversation.messages), conversation };
        let target = Target::budget(3000, ChatCounter::openai(OpenAiEncoding::O200kBase));
        let breakpoints =
            Pricing { rule: CacheRule::Breakpoints, input: 3.0, cached_input: 0.3, cache_write: 3.75 };
        let session =
            run(&stream, &PolicySpec::Session("cache".into()), &target, &breakpoints, &mut || {}).unwrap();
        // every turn but the first and the compactions reads the previous request (the reply
        // priming that ends it is not part of what the next one shares)
        assert!(session.cached_share > 0.8, "{}", session.cached_share);
        assert!(session.cached_share <= session.prefix_reuse);
    }

    #[test]
    fn a_session_reuses_its_prefix_where_stateless_fit_does_not_and_both_stay_in_budget() {
        let conversation = chat(120);
        let stream = Stream { ends: turn_ends(&conversation.messages), conversation };
        let target = Target::budget(3000, ChatCounter::openai(OpenAiEncoding::O200kBase));
        let session =
            run(&stream, &PolicySpec::Session("cache".into()), &target, &pricing(), &mut || {}).unwrap();
        let baseline = run(&stream, &PolicySpec::Hysteresis(0.5), &target, &pricing(), &mut || {}).unwrap();
        for row in [&session, &baseline] {
            assert_eq!(row.turns, stream.ends.len());
            assert_eq!((row.over_budget, row.invalid, row.failed), (0, 0, 0), "{row:?}");
            assert!(row.max_tokens <= 3000);
        }
        assert_eq!(session.removed_without_trace, 0);
        assert!(baseline.removed_without_trace > 0, "the baseline drops without a trace");
        assert!(session.prefix_reuse > 0.9, "{}", session.prefix_reuse);
        assert_eq!(session.compactions, Some(session.cuts));
    }

    /// An Anthropic agent run: each step a `tool_use` and its `tool_result`.
    fn anthropic_agent(steps: usize) -> Conversation {
        let mut messages = vec![
            serde_json::json!({"role": "user", "content": format!("fix the bug {}", "word ".repeat(300))}),
        ];
        for i in 0..steps {
            messages.push(serde_json::json!({"role": "assistant", "content": [
                {"type": "text", "text": format!("looking at file {i}")},
                {"type": "tool_use", "id": format!("toolu_{i}"), "name": "bash", "input": {"command": format!("cat f{i}.py")}}]}));
            messages.push(serde_json::json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": format!("toolu_{i}"), "content": format!("line {i} {}", "code ".repeat(60))}]}));
        }
        parse_str(&serde_json::Value::Array(messages).to_string(), FormatHint::Auto).unwrap()
    }

    #[test]
    fn under_anthropic_breakpoints_a_request_reads_the_longest_earlier_one_it_extends() {
        // one message a turn: a turn ending on the call is sent with a synthetic result,
        // which the next turn replaces by the real one; that turn still extends the request
        // before, and reads it from the cache
        let conversation = anthropic_agent(60);
        assert_eq!(conversation.format, Format::Anthropic);
        let stream = Stream { ends: message_ends(&conversation.messages), conversation };
        let target = Target::budget(100_000, ChatCounter::openai(OpenAiEncoding::O200kBase));
        let breakpoints =
            Pricing { rule: CacheRule::Breakpoints, input: 3.0, cached_input: 0.3, cache_write: 3.75 };
        let session =
            run(&stream, &PolicySpec::Session("cache".into()), &target, &breakpoints, &mut || {}).unwrap();
        assert_eq!(session.turns, 121);
        assert_eq!((session.invalid, session.over_budget, session.failed), (0, 0, 0), "{session:?}");
        assert!(session.cached_share > 0.85, "{}", session.cached_share);
        // the whole prefix is not the rule's: a request the one before does not prefix whole
        // reads less than its shared prefix
        assert!(session.cached_share < session.prefix_reuse);
    }
}

//! swarms 16.0.3's `MessageTransforms` (`swarms.structs.transforms`): which messages its
//! message limit and its halving keep, as a pipeline of tightfit steps.
//!
//! swarms works on the history in three moves, and so does the pipeline [`pipeline_config`]
//! describes:
//!
//! 1. `max_messages` (when the history is longer): the system messages, then over the others
//!    half of the free places from the start and half plus the last
//!    `preserve_recent_messages` from the end; when the recent messages alone are too many,
//!    the oldest of them (swarms' `_compress_message_count`) — `head_and_tail`, or
//!    `keep_last` then `keep_first`, counted in messages;
//! 2. over the token limit with more than 50 messages: the same for half of the messages
//!    (swarms halves the history before it removes by tokens);
//! 3. `middle_out`: messages removed from the middle of the whole history until it fits, the
//!    first and the last message staying (swarms' `_middle_out_compress_tokens`).
//!
//! The arithmetic is Python's on Python ints (a negative `max_messages` is a limit below every
//! length, as in swarms), so the Python adapter only reads the roles of the caller's messages
//! and the configuration. Where the steps differ from swarms (whole units, exact counts) is
//! the Python package's README's business.

use serde_json::{json, Value};

/// swarms halves a history of more than this many messages before removing by tokens.
pub const HALVE_ABOVE: usize = 50;

/// The settings of swarms' `TransformConfig` that decide which messages go (the token limit
/// and the model are the budget's business).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwarmsLimits {
    /// `max_messages`; zero means no limit of its own, as in swarms.
    pub max_messages: i64,
    /// `preserve_system_messages`: system messages are kept outside the limit.
    pub preserve_system_messages: bool,
    /// `preserve_recent_messages`: how many of the newest messages the limit keeps.
    pub preserve_recent_messages: i64,
}

/// What the pipeline needs to know of the history: its length, how many of its messages are
/// system (or developer) messages, and whether the first one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwarmsHistory {
    /// The number of messages.
    pub length: usize,
    /// The number of system and developer messages.
    pub system: usize,
    /// Whether the first message is a system or developer message.
    pub first_is_system: bool,
}

/// The pipeline that makes swarms' choices for a history of this shape, as configuration
/// (`{"steps": [...]}`, for `config::from_value`, which checks it as it checks a file: a
/// negative limit is an error naming the key, as the Python adapter's steps raised).
pub fn pipeline_config(limits: &SwarmsLimits, history: &SwarmsHistory) -> Value {
    let keep_system = limits.preserve_system_messages;
    let system = if keep_system { history.system as i64 } else { 0 };
    let recent = limits.preserve_recent_messages;
    let mut steps = Vec::new();
    let mut length = history.length as i64;
    if limits.max_messages != 0 {
        let limit = limits.max_messages;
        let when = json!({ "messages_above": limit });
        let (more, left) = message_limit(limit, length, system, recent, keep_system, &when);
        steps.extend(more);
        length = left;
    }
    if length > HALVE_ABOVE as i64 {
        let when = json!({ "messages_above": HALVE_ABOVE, "over_budget": true });
        steps.extend(message_limit(length.div_euclid(2), length, system, recent, keep_system, &when).0);
    }
    steps.push(json!({
        "type": "middle_out",
        "keep_first": if history.first_is_system { 0 } else { 1 },
        "keep_recent": 1,
        "keep_system": keep_system,
        "keep_newest_user_turn": false,
    }));
    json!({ "steps": steps })
}

/// The steps of swarms' `_compress_message_count(messages, limit)` for a history of `length`
/// messages, `system` of them kept as system messages, and the length swarms leaves; the steps
/// run only under `when`.
fn message_limit(
    limit: i64,
    length: i64,
    system: i64,
    recent: i64,
    keep_system: bool,
    when: &Value,
) -> (Vec<Value>, i64) {
    if length <= limit {
        return (Vec::new(), length);
    }
    let step = |kind: &str, sizes: Value| {
        let mut step = json!({
            "type": kind,
            "measure": "messages",
            "keep_system": keep_system,
            "keep_newest_user_turn": false,
            "when": when,
        });
        step.as_object_mut().expect("a map").extend(sizes.as_object().expect("a map").clone());
        step
    };
    let free = limit - system;
    if free <= 0 {
        // swarms keeps the system messages alone; a step keeps at least one message
        return (vec![step("keep_last", json!({ "count": 1 }))], system + 1);
    }
    let recent = recent.max(0).min(length - system);
    let middle = free - recent;
    if middle <= 0 {
        // the recent messages, and of those only the oldest `free` when they are too many
        let mut steps = vec![step("keep_last", json!({ "count": recent }))];
        if middle < 0 {
            steps.push(step("keep_first", json!({ "count": free })));
        }
        return (steps, limit);
    }
    let half = middle / 2;
    (vec![step("head_and_tail", json!({ "head": half + middle % 2, "tail": half + recent }))], limit)
}

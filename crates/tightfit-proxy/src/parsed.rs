//! Each conversation's last request, read: an agent resends its whole history every turn, and
//! the engine reads the next request of a conversation taking the messages it shares with
//! the previous one byte for byte from the previous reading
//! ([`read_request`](tightfit::format::read_request)). A warm turn of a 1 MB history then
//! costs a comparison of two texts instead of reading 1 MB of JSON (1.8 ms), and the
//! session hashes only the messages it has not seen (the others' fingerprints are kept).
//!
//! What it costs: the body (shared with the request, not copied) and its messages as read,
//! about three times the body in all, for at most `limits.reuse_bytes` of bodies (64 MiB by
//! default) and [`MAX_CONVERSATIONS`] conversations; past either, the longest unused goes
//! (its next turn reads everything). Conversations taking turns in a cycle that holds more
//! than the bound (64 clients on 1.2 MB histories: 77 MB) all go before their next turn. A conversation's slot is its `x-tightfit-session` header, else the
//! first 4 KiB of its body (what starts the conversation: the system prompt and the task;
//! a shorter body is all head, so only the header finds its next turn, which costs little to
//! read anyway), within its credentials; two conversations on one slot only cost each other
//! the reuse, never a wrong reading (what is reused is checked byte for byte).

use std::collections::HashMap;
use std::sync::Mutex;

use bytes::Bytes;
use tightfit::format::RequestLayout;
use tightfit::Message;

/// The most conversations held.
pub const MAX_CONVERSATIONS: usize = 4096;

/// How much of a body tells its conversation apart when it has no session header.
pub const HEAD_BYTES: usize = 4096;

/// One conversation's last request, read.
#[derive(Debug)]
pub struct Parsed {
    /// The request's body (UTF-8: it was read).
    pub body: Bytes,
    /// Where its list and messages lie.
    pub layout: RequestLayout,
    /// The messages read from its list.
    pub listed: Vec<Message>,
    /// Their fingerprints ([`tightfit::tokens::message_fingerprint`]), for the session: the
    /// messages the next request takes from this reading are not hashed again.
    pub fingerprints: Vec<u128>,
    /// The session key it was fitted under.
    pub key: String,
}

/// The conversations' last requests, by slot.
#[derive(Debug)]
pub struct ParsedRequests {
    held: Mutex<Held>,
    /// The most bytes of bodies held.
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Held {
    by_slot: HashMap<u128, (Parsed, u64)>,
    bytes: usize,
    clock: u64,
}

impl ParsedRequests {
    /// Holding at most `max_bytes` of bodies.
    pub fn new(max_bytes: usize) -> ParsedRequests {
        ParsedRequests { held: Mutex::default(), max_bytes }
    }

    /// Takes the last request of the conversation in `slot` out (a request being read owns
    /// it; another request of the conversation meanwhile reads everything).
    pub fn take(&self, slot: u128) -> Option<Parsed> {
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (parsed, _) = held.by_slot.remove(&slot)?;
        held.bytes -= parsed.body.len();
        Some(parsed)
    }

    /// The session key the last request of the conversation in `slot` was fitted under.
    pub fn key_of(&self, slot: u128) -> Option<String> {
        let held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.by_slot.get(&slot).map(|(parsed, _)| parsed.key.clone())
    }

    /// Holds `parsed` as the last request of the conversation in `slot`, dropping the longest
    /// unused past the bounds.
    pub fn put(&self, slot: u128, parsed: Parsed) {
        if parsed.body.len() > self.max_bytes {
            return;
        }
        let mut held = self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.clock += 1;
        held.bytes += parsed.body.len();
        let stamp = held.clock;
        if let Some((old, _)) = held.by_slot.insert(slot, (parsed, stamp)) {
            held.bytes -= old.body.len();
        }
        while held.bytes > self.max_bytes || held.by_slot.len() > MAX_CONVERSATIONS {
            let Some(oldest) = held.by_slot.iter().min_by_key(|(_, (_, stamp))| *stamp).map(|(k, _)| *k)
            else {
                break;
            };
            if let Some((old, _)) = held.by_slot.remove(&oldest) {
                held.bytes -= old.body.len();
            }
        }
    }

    /// How many conversations are held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner).by_slot.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(bytes: usize) -> Parsed {
        let body = format!(r#"{{"messages":[],"pad":"{}"}}"#, "x".repeat(bytes.saturating_sub(24)));
        let layout = RequestLayout::find(&body, tightfit::Format::OpenAi).unwrap();
        Parsed {
            body: Bytes::from(body),
            layout,
            listed: Vec::new(),
            fingerprints: Vec::new(),
            key: String::new(),
        }
    }

    #[test]
    fn a_slot_is_taken_once_and_the_longest_unused_goes_past_the_bounds() {
        const MAX_BODY_BYTES: usize = 1 << 20;
        let held = ParsedRequests::new(MAX_BODY_BYTES);
        held.put(1, parsed(100));
        assert!(held.take(1).is_some());
        assert!(held.take(1).is_none(), "taken: another request of the conversation reads everything");
        // past the bytes: the oldest goes
        let big = MAX_BODY_BYTES / 3 + 1;
        for slot in 0..3 {
            held.put(slot, parsed(big));
        }
        assert_eq!(held.len(), 2);
        assert!(held.take(0).is_none() && held.take(2).is_some());
        // a body past the bound is not held at all
        held.put(9, parsed(MAX_BODY_BYTES + 1));
        assert!(held.take(9).is_none());
        // past the count
        for slot in 0..(MAX_CONVERSATIONS as u128 + 10) {
            held.put(100 + slot, parsed(10));
        }
        assert_eq!(held.len(), MAX_CONVERSATIONS);
        assert!(held.take(100).is_none() && held.take(100 + MAX_CONVERSATIONS as u128 + 9).is_some());
        // nothing held at a bound of 0
        let none = ParsedRequests::new(0);
        none.put(1, parsed(100));
        assert!(none.take(1).is_none());
    }
}

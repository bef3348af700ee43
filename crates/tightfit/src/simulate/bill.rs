//! What a provider bills for a request that follows another: the tokens it shares as a prefix
//! with the request before, the part of that a provider's prompt cache serves, and the price.
//!
//! Two caching rules, from the providers' documentation:
//!
//! - **automatic prefixes** (OpenAI, and by default DeepSeek, Gemini and other OpenAI-style
//!   providers): a request of 1,024 tokens or more reads from the cache the longest prefix it
//!   shares with an earlier request, in steps of 128 tokens past the first 1,024; writes are
//!   free;
//! - **breakpoints** (Anthropic, with the common "automatic" top-level `cache_control`: one
//!   breakpoint at the end of each request, and one after the system prompt): a request reads
//!   the previous request's whole length when it extends it, else the system prompt's when that
//!   is unchanged; everything past the read is written, at the cache-write price (1.25× input
//!   for the 5-minute TTL). Prompts under 1,024 tokens are not cached.
//!
//! Prices come from the model registry, in US dollars per million tokens. Only input is
//! priced: the output is the model's and the same whatever the policy.

use crate::models::{ModelInfo, Prices};

/// The smallest prompt a provider caches.
pub const MIN_CACHED: usize = 1024;
/// The step in which OpenAI's cached prefix grows.
pub const OPENAI_STEP: usize = 128;

/// How a provider caches prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheRule {
    /// The longest shared prefix, 1,024 tokens at least, in 128-token steps; no write fee.
    AutomaticPrefix,
    /// Anthropic's breakpoints: the previous request's end and the system prompt's end.
    Breakpoints,
}

impl CacheRule {
    /// The rule of `model`'s provider.
    pub fn of(model: &ModelInfo) -> CacheRule {
        if model.provider.contains("anthropic") || model.id.starts_with("claude") {
            CacheRule::Breakpoints
        } else {
            CacheRule::AutomaticPrefix
        }
    }
}

/// The prices of one model under its caching rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Pricing {
    /// How its provider caches.
    pub rule: CacheRule,
    /// Uncached input, per million tokens.
    pub input: f64,
    /// Cached input, per million tokens.
    pub cached_input: f64,
    /// Cache writes, per million tokens (0 where writes are free).
    pub cache_write: f64,
}

impl Pricing {
    /// The pricing of `model`; `None` if the registry has no input price for it. A missing
    /// cached price is the input price (no discount); a missing write price is 1.25× input
    /// under breakpoints, free otherwise.
    pub fn of(model: &ModelInfo) -> Option<Pricing> {
        let Prices { input, cached_input, cache_write, .. } = model.prices;
        let input = input?;
        let rule = CacheRule::of(model);
        let cache_write = cache_write.unwrap_or(match rule {
            CacheRule::Breakpoints => input * 1.25,
            CacheRule::AutomaticPrefix => 0.0,
        });
        Some(Pricing { rule, input, cached_input: cached_input.unwrap_or(input), cache_write })
    }

    /// What one request costs, and the tokens read from and written to the cache.
    pub fn bill(&self, request: &Shared) -> Bill {
        let (read, written) = match self.rule {
            CacheRule::AutomaticPrefix => {
                let read = if request.prefix >= MIN_CACHED && request.previous >= MIN_CACHED {
                    MIN_CACHED + (request.prefix - MIN_CACHED) / OPENAI_STEP * OPENAI_STEP
                } else {
                    0
                };
                (read, 0)
            }
            CacheRule::Breakpoints => {
                let read = if request.previous >= MIN_CACHED && request.prefix >= request.previous {
                    request.previous
                } else if request.system >= MIN_CACHED && request.prefix >= request.system {
                    request.system
                } else {
                    0
                };
                let written = if request.tokens >= MIN_CACHED { request.tokens - read } else { 0 };
                (read, written)
            }
        };
        let uncached = request.tokens - read;
        let dollars = (uncached as f64 * self.input
            + read as f64 * self.cached_input
            + written as f64 * (self.cache_write - self.input).max(0.0))
            / 1e6;
        Bill { read, written, dollars }
    }
}

/// What a request shares with the one before it, in tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shared {
    /// The request's tokens.
    pub tokens: usize,
    /// The tokens of the request before (0 for the first).
    pub previous: usize,
    /// The tokens of the longest prefix both share.
    pub prefix: usize,
    /// The tokens of the tools and system prompt, when both requests have them alike (the
    /// second breakpoint of the Anthropic rule).
    pub system: usize,
}

/// What one request costs.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Bill {
    /// Tokens read from the cache.
    pub read: usize,
    /// Tokens written to the cache (billed apart).
    pub written: usize,
    /// US dollars.
    pub dollars: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pricing(rule: CacheRule) -> Pricing {
        Pricing { rule, input: 3.0, cached_input: 0.3, cache_write: 3.75 }
    }

    #[test]
    fn openai_reads_the_shared_prefix_in_128_token_steps_past_1024() {
        let p = pricing(CacheRule::AutomaticPrefix);
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 4900, system: 0 });
        assert_eq!(bill.read, 1024 + 3840); // 4900 - 1024 = 3876 -> 30 steps of 128
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 1000, system: 0 });
        assert_eq!(bill.read, 0);
        assert!((bill.dollars - 5000.0 * 3.0 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn anthropic_reads_at_breakpoints_and_bills_writes() {
        let p = pricing(CacheRule::Breakpoints);
        // extends the previous request: reads it whole, writes the new part
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 4900, system: 2000 });
        assert_eq!((bill.read, bill.written), (4900, 100));
        let expected = (100.0 * 3.0 + 4900.0 * 0.3 + 100.0 * 0.75) / 1e6;
        assert!((bill.dollars - expected).abs() < 1e-12);
        // a cut in the middle: only the system prompt's breakpoint still matches
        let bill = p.bill(&Shared { tokens: 3000, previous: 4900, prefix: 2500, system: 2000 });
        assert_eq!((bill.read, bill.written), (2000, 1000));
        // too short to cache
        let bill = p.bill(&Shared { tokens: 900, previous: 800, prefix: 800, system: 100 });
        assert_eq!((bill.read, bill.written), (0, 0));
    }
}

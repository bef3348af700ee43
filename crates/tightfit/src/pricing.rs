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
//! priced: the output is the model's and the same whatever the policy. `simulate` bills with
//! them; a [`Session`](crate::session::Session) asks them when a compaction is worth its
//! cache misses ([`Pricing::compaction_point`]).

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
    /// Anthropic's breakpoints: each request's end (automatic caching: an entry written there,
    /// read by a later request that extends it) and the system prompt's end.
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

    /// What a token costs when a compaction makes the provider send it again uncached
    /// (and write it, where writes are billed) instead of reading it from the cache.
    pub fn miss_per_token(&self) -> f64 {
        let uncached = match self.rule {
            CacheRule::Breakpoints => self.cache_write.max(self.input),
            CacheRule::AutomaticPrefix => self.input,
        };
        (uncached - self.cached_input).max(0.0) / 1e6
    }

    /// The request size, in tokens, at which a conversation that grows by `growth` tokens a
    /// turn and compacts down to `aim` tokens costs the least per turn in the long run.
    ///
    /// A compaction sends the `aim` tokens it keeps again, uncached (the miss); between two
    /// compactions every request reads what it shares with the one before from the cache, so
    /// a turn costs the cached price of the request. Compacting at `T`, an epoch lasts
    /// `(T - aim) / growth` turns, and
    ///
    /// ```text
    /// $/turn(T) = miss * aim * growth / (T - aim) + cached * (aim + T) / 2 + (the new tokens)
    /// ```
    ///
    /// is lowest at `T* = aim + sqrt(2 * miss * aim * growth / cached)`. Infinite when cached
    /// tokens are free (wait as long as the budget allows); `aim` when a miss costs nothing
    /// (no discount to lose). It counts the whole `aim` as missed, where the head a compaction
    /// keeps stays cached: it errs toward compacting later.
    pub fn compaction_point(&self, aim: usize, growth: f64) -> f64 {
        let miss = self.miss_per_token();
        let cached = self.cached_input / 1e6;
        if miss <= 0.0 || growth <= 0.0 {
            return aim as f64;
        }
        if cached <= 0.0 {
            return f64::INFINITY;
        }
        aim as f64 + (2.0 * miss * aim as f64 * growth / cached).sqrt()
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
                let read = if request.entry >= MIN_CACHED {
                    request.entry
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
    /// Anthropic: the tokens of the longest earlier request this one extends whole — a cache
    /// entry written at that request's end, read when its end lies within the
    /// [`LOOKBACK_BLOCKS`] before this request's end (0 when none does).
    pub entry: usize,
}

/// How many content blocks before a breakpoint Anthropic looks for an earlier cache entry.
pub const LOOKBACK_BLOCKS: usize = 20;

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
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 4900, system: 0, entry: 0 });
        assert_eq!(bill.read, 1024 + 3840); // 4900 - 1024 = 3876 -> 30 steps of 128
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 1000, system: 0, entry: 0 });
        assert_eq!(bill.read, 0);
        assert!((bill.dollars - 5000.0 * 3.0 / 1e6).abs() < 1e-12);
    }

    #[test]
    fn a_compaction_waits_longer_where_cached_tokens_are_cheaper_than_misses() {
        let anthropic = pricing(CacheRule::Breakpoints);
        let openai =
            Pricing { rule: CacheRule::AutomaticPrefix, input: 2.5, cached_input: 1.25, cache_write: 0.0 };
        // T* = aim + sqrt(2 * miss * aim * growth / cached)
        let expected = 20_000.0 + (2.0 * 3.45 * 20_000.0 * 500.0 / 0.3f64).sqrt();
        assert!((anthropic.compaction_point(20_000, 500.0) - expected).abs() < 1e-6);
        assert!((openai.compaction_point(20_000, 500.0) - (20_000.0 + 20_000_000f64.sqrt())).abs() < 1e-6);
        // faster growth: compact later (an epoch would be short)
        assert!(openai.compaction_point(20_000, 2_000.0) > openai.compaction_point(20_000, 500.0));
        let free_cache = Pricing { cached_input: 0.0, ..openai.clone() };
        assert_eq!(free_cache.compaction_point(20_000, 500.0), f64::INFINITY);
        let no_discount = Pricing { cached_input: 2.5, ..openai };
        assert_eq!(no_discount.compaction_point(20_000, 500.0), 20_000.0);
    }

    #[test]
    fn anthropic_reads_at_breakpoints_and_bills_writes() {
        let p = pricing(CacheRule::Breakpoints);
        // extends an earlier request: reads its entry whole, writes the new part
        let bill = p.bill(&Shared { tokens: 5000, previous: 4900, prefix: 4900, system: 2000, entry: 4900 });
        assert_eq!((bill.read, bill.written), (4900, 100));
        let expected = (100.0 * 3.0 + 4900.0 * 0.3 + 100.0 * 0.75) / 1e6;
        assert!((bill.dollars - expected).abs() < 1e-12);
        // the previous request changed at its end (no entry ends where this one agrees), but
        // the one before it is extended: its entry is read
        let bill = p.bill(&Shared { tokens: 5000, previous: 4950, prefix: 4920, system: 2000, entry: 4400 });
        assert_eq!((bill.read, bill.written), (4400, 600));
        // a cut in the middle: only the system prompt's breakpoint still matches
        let bill = p.bill(&Shared { tokens: 3000, previous: 4900, prefix: 2500, system: 2000, entry: 0 });
        assert_eq!((bill.read, bill.written), (2000, 1000));
        // too short to cache
        let bill = p.bill(&Shared { tokens: 900, previous: 800, prefix: 800, system: 100, entry: 800 });
        assert_eq!((bill.read, bill.written), (0, 0));
    }
}

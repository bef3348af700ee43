//! Counting for models whose tokenizer is not public, and correcting that count from what
//! the provider reported.
//!
//! Anthropic publishes no tokenizer for Claude 3 and later. [`Estimate::claude`] counts with
//! o200k_base and scales by 1.25, rounding up: Claude's tokenizers produce more tokens than
//! o200k for the same text (by roughly 10–35% depending on the model generation and the text),
//! and for fitting an overestimate is the safe side: it keeps a request inside the window.
//! Where exactness matters, calibrate: after one request, [`Calibrated::from_usage`] takes the
//! `input_tokens` the provider returned and the estimate for that same request and scales all
//! later counts of that conversation by their ratio.

use std::sync::Arc;

use super::{OpenAiEncoding, TokenCounter, TokenizerError};

/// A count from another tokenizer, scaled by a factor and rounded up.
#[derive(Clone)]
pub struct Estimate {
    base: Arc<dyn TokenCounter>,
    factor: f64,
    name: String,
    reason: String,
}

impl std::fmt::Debug for Estimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Estimate").field("name", &self.name).finish()
    }
}

impl Estimate {
    /// The factor [`Estimate::claude`] applies to o200k_base counts.
    pub const CLAUDE_FACTOR: f64 = 1.25;

    /// The default estimate for Claude models: o200k_base × 1.25, rounded up.
    pub fn claude() -> Estimate {
        Estimate::new(Arc::new(OpenAiEncoding::O200kBase), Estimate::CLAUDE_FACTOR).with_reason(
            "Claude's tokenizer is not public: o200k_base × 1.25 (calibrate from a reply's usage)",
        )
    }

    /// The default estimate for models whose tokenizer tightfit does not have: o200k_base ×
    /// 1.1. On the shared transcripts Llama 3 counts 1.00–1.03× o200k, so this is the safe
    /// side for a Llama model whose vocabulary was not found; other vocabularies vary more
    /// (Mistral's tekken up to 1.18×, which is why it is counted exactly). Pass a
    /// `tokenizer.json` for exact counts.
    pub fn open_model() -> Estimate {
        Estimate::new(Arc::new(OpenAiEncoding::O200kBase), 1.1).with_reason(
            "no tokenizer for this model: o200k_base × 1.1 (pass a tokenizer file for exact counts)",
        )
    }

    /// `base` scaled by `factor` (which must be finite and positive).
    pub fn new(base: Arc<dyn TokenCounter>, factor: f64) -> Estimate {
        let factor = if factor.is_finite() && factor > 0.0 { factor } else { 1.0 };
        let name = format!("{}*{factor}", base.name());
        let reason = format!("{name}, an estimate");
        Estimate { base, factor, name, reason }
    }

    /// The same estimate, saying `reason` for why counts are estimated (see
    /// [`TokenCounter::estimate_reason`]).
    pub fn with_reason(mut self, reason: impl Into<String>) -> Estimate {
        self.reason = reason.into();
        self
    }

    /// The scale factor.
    pub fn factor(&self) -> f64 {
        self.factor
    }
}

impl TokenCounter for Estimate {
    fn name(&self) -> &str {
        &self.name
    }

    fn count(&self, text: &str) -> usize {
        scale(self.base.count(text), self.factor)
    }

    fn estimate_reason(&self) -> Option<&str> {
        Some(&self.reason)
    }
}

/// Scales a count up, exactly for factor 1.
fn scale(count: usize, factor: f64) -> usize {
    if factor == 1.0 {
        count
    } else {
        // the epsilon keeps 10 × 1.1 = 11.000000000000002 at 11
        (count as f64 * factor - 1e-9).ceil().max(0.0) as usize
    }
}

/// An estimate corrected by a provider's own count of an earlier request.
#[derive(Debug, Clone)]
pub struct Calibrated {
    inner: Estimate,
}

impl Calibrated {
    /// Calibrates `estimate` from one request: `estimated` is what the estimate counted for
    /// it (the whole request, framing included) and `reported` is the `input_tokens` (plus
    /// cache read and write tokens) the provider returned for it. Later counts are scaled by
    /// `reported / estimated`. Errors when either is zero.
    pub fn from_usage(
        estimate: Estimate,
        estimated: usize,
        reported: usize,
    ) -> Result<Calibrated, TokenizerError> {
        if estimated == 0 || reported == 0 {
            return Err(TokenizerError::Calibration(format!(
                "need non-zero counts, got estimated={estimated} reported={reported}"
            )));
        }
        let factor = estimate.factor * reported as f64 / estimated as f64;
        let reason = format!("calibrated from usage: {}*{factor}", estimate.base.name());
        Ok(Calibrated { inner: Estimate::new(estimate.base.clone(), factor).with_reason(reason) })
    }

    /// The factor now applied to the base tokenizer's counts.
    pub fn factor(&self) -> f64 {
        self.inner.factor
    }
}

impl TokenCounter for Calibrated {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn count(&self, text: &str) -> usize {
        self.inner.count(text)
    }

    fn estimate_reason(&self) -> Option<&str> {
        self.inner.estimate_reason()
    }
}

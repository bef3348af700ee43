//! `fit`: a history within budget, valid for its provider, with a report and a plan.
//!
//! ```
//! use tightfit::fit::{fit, Target};
//! use tightfit::format::{parse_str, FormatHint};
//! use tightfit::models::Registry;
//!
//! let conversation = parse_str(
//!     r#"[{"role": "system", "content": "Be brief."},
//!         {"role": "user", "content": "Hi!"},
//!         {"role": "assistant", "content": "Hello."},
//!         {"role": "user", "content": "What is 2 + 2?"}]"#,
//!     FormatHint::Auto,
//! )?;
//! let model = Registry::embedded().lookup("gpt-4o")?;
//! let target = Target::for_model(model, None).with_budget(30);
//! let fitted = fit(&conversation, &target, None)?;
//! assert!(fitted.report.compressed_token_count <= 30);
//! // the oldest exchange went; the system prompt and the newest user turn stay
//! assert_eq!(fitted.messages.len(), 3);
//! assert_eq!(fitted.messages[2].text_content(), "What is 2 + 2?");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::sync::Arc;

use crate::format::{Conversation, Format};
use crate::history::{History, Keep};
use crate::message::Message;
use crate::models::ModelInfo;
use crate::offload;
use crate::params::ConfigError;
use crate::pipeline::Pipeline;
use crate::plan::Plan;
use crate::presets;
use crate::repair::{repair, Repair};
use crate::report::Report;
use crate::steps::{Scorer, StepContext, StepError, Trace};
use crate::store::{Store, StoreError};
use crate::summary::Summarizer;
use crate::tokens::{ChatCounter, CountCache, TokenCounter};
use crate::validate::{validate, Violation};

/// The output tokens reserved when neither the request nor the caller says: the model's
/// maximum output, at most this many.
pub const DEFAULT_RESERVED_OUTPUT: u64 = 4096;

/// What a history is fitted to: a token budget, the counter that measures it, the model's
/// window (for conditions on a fraction of it) and the provider whose rules apply.
#[derive(Debug, Clone)]
pub struct Target {
    /// The counter.
    pub counter: ChatCounter,
    /// The most tokens the request may have (messages, tool schemas, priming).
    pub budget: usize,
    /// The model's context window, if known.
    pub window: Option<usize>,
    /// The provider whose rules the output must meet; the conversation's own format if
    /// `None`.
    pub provider: Option<Format>,
}

impl Target {
    /// The target for `model`: its counter, and a budget of its input limit minus the output
    /// tokens reserved (`reserve_output`, else the model's max output capped at
    /// [`DEFAULT_RESERVED_OUTPUT`]).
    pub fn for_model(model: &ModelInfo, reserve_output: Option<u64>) -> Target {
        let window = model.input_limit();
        // a model with its own input limit already leaves room for the output
        let reserve = match (reserve_output, model.max_input) {
            (Some(r), _) => r,
            (None, Some(_)) => 0,
            (None, None) => model.max_output.unwrap_or(DEFAULT_RESERVED_OUTPUT).min(DEFAULT_RESERVED_OUTPUT),
        };
        Target {
            counter: ChatCounter::for_family(model.tokenizer),
            budget: window.saturating_sub(reserve) as usize,
            window: Some(model.context_window as usize),
            provider: None,
        }
    }

    /// A bare budget counted with `counter`.
    pub fn budget(budget: usize, counter: ChatCounter) -> Target {
        Target { counter, budget, window: None, provider: None }
    }

    /// A budget given without a model (there is no default model): counted with
    /// `o200k_base`, OpenAI's current tokenizer, the same in every face (the CLI's `--budget`,
    /// Python's `budget=`), and the report's `counter` says so.
    pub fn bare_budget(budget: usize) -> Target {
        Target::budget(budget, ChatCounter::openai(crate::tokens::OpenAiEncoding::O200kBase))
    }

    /// Refuses a `budget` past `model`'s input limit, which the provider would reject (a
    /// history fitted to it is not fitted at all), unless the caller says it means it:
    /// `allow_over_window` (a model served with a larger window than the registry knows).
    pub fn check_budget(
        model: &ModelInfo,
        budget: usize,
        allow_over_window: bool,
    ) -> Result<(), ConfigError> {
        let limit = model.input_limit();
        if allow_over_window || budget as u64 <= limit {
            return Ok(());
        }
        Err(ConfigError::new(
            "budget",
            format!(
                "{budget} tokens is more than {}'s input limit of {limit} tokens: a request that \
                 large would be refused (allow_over_window, --allow-over-window if the model is served with a larger window)",
                model.qualified_id()
            ),
        ))
    }

    /// The same target with another budget.
    pub fn with_budget(mut self, budget: usize) -> Target {
        self.budget = budget;
        self
    }

    /// The same target for another provider's rules.
    pub fn with_provider(mut self, provider: Format) -> Target {
        self.provider = Some(provider);
        self
    }
}

/// Why a history could not be fitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FitError {
    /// What must be kept does not fit.
    #[error("{what} need {needed} tokens, {over} over the budget of {budget}")]
    CannotFit {
        /// What could not fit, for a person ("the system prompt (1,204 tokens) and the newest
        /// user turn (3,900 tokens)").
        what: String,
        /// The tokens it needs.
        needed: usize,
        /// The budget.
        budget: usize,
        /// By how much it is over.
        over: usize,
        /// The tokens no step may remove: the system prompt, the newest user turn, the tool
        /// schemas and the reply priming. When it is under the budget, a pipeline that
        /// removes more would fit.
        must_keep: usize,
    },
    /// A step failed.
    #[error(transparent)]
    Step(#[from] StepError),
    /// What was removed could not be offloaded: the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The output breaks the provider's rules (a step left it broken, or the input broke a
    /// rule the repair pass does not fix).
    #[error("the fitted history is not valid for {provider}: {first} ({count} violations)")]
    Invalid {
        /// The provider.
        provider: String,
        /// The first violation.
        first: String,
        /// How many there are.
        count: usize,
        /// All of them.
        violations: Vec<Violation>,
    },
}

/// A fitted history: the messages (unchanged ones borrowed from the input), the report and
/// the plan.
#[derive(Debug, Clone)]
pub struct Fitted<'a> {
    /// The messages to send.
    pub messages: Vec<Cow<'a, Message>>,
    /// What was done, in numbers and lines.
    pub report: Report,
    /// What happened to every input unit; replayable.
    pub plan: Plan,
}

impl Fitted<'_> {
    /// The messages as owned values.
    pub fn into_messages(self) -> Vec<Message> {
        self.messages.into_iter().map(Cow::into_owned).collect()
    }
}

/// Options of a [`Fitter`] beyond each call's target.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How a broken input is repaired.
    pub repair: Repair,
}

/// What a run does around its steps: the one place that decides whether a history is
/// counted, repaired, held to a budget and validated. [`fit`], [`Fitter::fit`], the peers'
/// transforms and the Python package all run pipelines through [`Fitter::run`] with one of
/// these.
///
/// Built from [`RunOptions::fit`] (everything on), [`RunOptions::transform`] (no budget) or
/// [`RunOptions::steps_only`] (the steps and nothing else), then the `with_*` setters.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RunOptions {
    /// The call's budget, as the steps see it (`None`: the steps' own limits decide).
    pub budget: Option<usize>,
    /// A lower budget the steps aim for, when it is not the one enforced (a session's
    /// low-water mark: the compaction cuts down to it, the output is held to `budget`).
    pub aim: Option<usize>,
    /// Whether the output must be within `budget`, or the run fails with
    /// [`FitError::CannotFit`].
    pub enforce_budget: bool,
    /// The model's context window, if known (for conditions on a fraction of it).
    pub window: Option<usize>,
    /// The provider whose rules apply; the conversation's own format if `None`.
    pub provider: Option<Format>,
    /// How a broken input is repaired before the steps; `None` leaves it as it came (a peer's
    /// transform passes its input's faults through).
    pub repair: Option<Repair>,
    /// Whether the output is checked against the provider's rules ([`FitError::Invalid`]).
    pub validate: bool,
    /// Whether messages are tokenized. Off, every text counts as 0 tokens (framing still
    /// counts), for steps that never read a count: the run then costs no tokenizer pass, and
    /// the report's token figures mean nothing.
    pub count: bool,
}

impl RunOptions {
    /// Everything `fit` does: `budget` held, a broken input repaired, the output validated.
    pub fn fit(budget: usize) -> RunOptions {
        RunOptions {
            budget: Some(budget),
            aim: None,
            enforce_budget: true,
            window: None,
            provider: None,
            repair: Some(Repair::default()),
            validate: true,
            count: true,
        }
    }

    /// The steps' own limits decide (AG2-style transforms); the input is still repaired and
    /// the output validated.
    pub fn transform() -> RunOptions {
        RunOptions { budget: None, enforce_budget: false, ..RunOptions::fit(0) }
    }

    /// The steps alone: no budget, no repair, no validation, no token counts.
    pub fn steps_only() -> RunOptions {
        RunOptions { repair: None, validate: false, count: false, ..RunOptions::transform() }
    }

    /// The same options with a budget the steps see, not enforced (see [`RunOptions::fit`]).
    pub fn with_budget(self, budget: Option<usize>) -> RunOptions {
        RunOptions { budget, ..self }
    }

    /// The same options with steps aiming for `aim` tokens while `budget` is enforced.
    pub fn with_aim(self, aim: Option<usize>) -> RunOptions {
        RunOptions { aim, ..self }
    }

    /// The same options with the model's window.
    pub fn with_window(self, window: Option<usize>) -> RunOptions {
        RunOptions { window, ..self }
    }

    /// The same options for `provider`'s rules.
    pub fn with_provider(self, provider: Format) -> RunOptions {
        RunOptions { provider: Some(provider), ..self }
    }

    /// The same options with another repair (`None`: none).
    pub fn with_repair(self, repair: Option<Repair>) -> RunOptions {
        RunOptions { repair, ..self }
    }
}

/// Fits `conversation` to `target` with `pipeline`, or with the default ladder
/// ([`presets::ladder`]) when `None`. See [`Fitter`] to keep counts across calls.
pub fn fit<'a>(
    conversation: &'a Conversation,
    target: &Target,
    pipeline: Option<&Pipeline>,
) -> Result<Fitted<'a>, FitError> {
    Fitter::new().fit(conversation, target, pipeline)
}

/// Fits histories and remembers their token counts, so fitting a history that grew by one
/// message tokenizes only that message.
#[derive(Debug, Default)]
pub struct Fitter {
    cache: CountCache,
    options: Options,
}

impl Fitter {
    /// A fitter with an empty cache and default options.
    pub fn new() -> Fitter {
        Fitter::default()
    }

    /// A fitter with `options`.
    pub fn with_options(options: Options) -> Fitter {
        Fitter { cache: CountCache::new(), options }
    }

    /// The tokens of `message`, whose fingerprint is `fingerprint`, from the cache or counted
    /// and remembered.
    pub(crate) fn message_tokens(
        &mut self,
        counter: &ChatCounter,
        message: &Message,
        fingerprint: u128,
    ) -> usize {
        self.cache.tokens_of_fingerprinted(counter, message, fingerprint).1
    }

    /// Fits `conversation` to `target` (see [`fit`]).
    pub fn fit<'a>(
        &mut self,
        conversation: &'a Conversation,
        target: &Target,
        pipeline: Option<&Pipeline>,
    ) -> Result<Fitted<'a>, FitError> {
        self.fit_with(conversation, target, pipeline, Services::default())
    }

    /// [`fit`](Fitter::fit) with `services` lent to the run (an offload store).
    pub fn fit_with<'a>(
        &mut self,
        conversation: &'a Conversation,
        target: &Target,
        pipeline: Option<&Pipeline>,
        services: Services<'_>,
    ) -> Result<Fitted<'a>, FitError> {
        let mut options = RunOptions::fit(target.budget)
            .with_window(target.window)
            .with_repair(Some(self.options.repair.clone()));
        options.provider = target.provider;
        self.run_with(conversation, &target.counter, pipeline, &options, services)
    }

    /// Runs `pipeline` (the default ladder when `None`) over `conversation`, counted with
    /// `counter`, doing around the steps what `options` says. Unchanged messages are borrowed
    /// from the input, which is never changed.
    pub fn run<'a>(
        &mut self,
        conversation: &'a Conversation,
        counter: &ChatCounter,
        pipeline: Option<&Pipeline>,
        options: &RunOptions,
    ) -> Result<Fitted<'a>, FitError> {
        self.run_with(conversation, counter, pipeline, options, Services::default())
    }

    /// [`run`](Fitter::run) with `services` lent to the steps (what a compaction leaves
    /// behind).
    pub fn run_with<'a>(
        &mut self,
        conversation: &'a Conversation,
        counter: &ChatCounter,
        pipeline: Option<&Pipeline>,
        options: &RunOptions,
        services: Services<'_>,
    ) -> Result<Fitted<'a>, FitError> {
        let provider = options.provider.unwrap_or(conversation.format);
        let input = conversation.messages.as_slice();
        let ladder;
        let pipeline = match pipeline {
            Some(p) => p,
            None => {
                ladder = presets::ladder();
                &ladder
            }
        };
        let uncounted;
        let counter = if options.count {
            counter
        } else {
            // counts of nothing are not worth remembering
            uncounted = ChatCounter::new(Arc::new(Uncounted), counter.framing());
            &uncounted
        };
        let fingerprints = services.fingerprints.filter(|_| options.count);
        let budget = options.budget.filter(|_| options.enforce_budget);
        // a run with offloading is made again, aiming lower, when its notes push it past the
        // budget (see `offload`)
        let mut aim = options.aim.or(options.budget);
        let mut attempt = 1;
        let (history, tokens_before, messages_before, repairs, result, offloaded, blobs) = loop {
            let mut cx = StepContext::new(provider).with_budget(aim).with_window(options.window);
            if let Some(trace) = services.trace {
                cx = cx.with_trace(trace);
            }
            if let Some(summarizer) = services.summarizer {
                cx = cx.with_summarizer(summarizer);
            }
            if let Some(scorer) = services.scorer {
                cx = cx.with_scorer(scorer);
            }
            let cache = if options.count { std::mem::take(&mut self.cache) } else { CountCache::new() };
            let mut history = History::fingerprinted(
                input,
                fingerprints,
                conversation.tools.as_deref(),
                counter,
                cache,
                provider,
            );
            let (tokens_before, messages_before) = (history.total_tokens(), history.len());
            let repairs = match &options.repair {
                Some(how) if !history.input_is_valid(input, provider) => repair(&mut history, how),
                _ => Vec::new(),
            };
            let result = pipeline.run(&mut history, &cx);
            let steps_left = history.total_tokens();
            let (offloaded, blobs) = match (services.offload, &result) {
                (Some(_), Ok(_)) => offload::annotate(&mut history, input),
                _ => (Vec::new(), Vec::new()),
            };
            let over = budget.map_or(0, |b| history.total_tokens().saturating_sub(b));
            // made again only when the notes pushed it over (the steps' own output fitted)
            let notes_to_blame = budget.is_some_and(|b| steps_left <= b);
            if over > 0 && notes_to_blame && !blobs.is_empty() && attempt < offload::MAX_ATTEMPTS {
                // the steps aim lower, leaving room for the notes and half as much again (the
                // notes change with what the steps do)
                let notes = history.total_tokens().saturating_sub(steps_left);
                let room = budget.unwrap_or(0).saturating_sub(notes + notes / 2);
                aim = aim.map(|a| a.saturating_sub(over).min(room));
                attempt += 1;
                if options.count {
                    self.cache = history.into_cache();
                }
                continue;
            }
            break (history, tokens_before, messages_before, repairs, result, offloaded, blobs);
        };
        let outcome = result.map_err(FitError::from).and_then(|steps| {
            if let Some(budget) = budget {
                check_within(&history, budget)?;
            }
            if options.validate {
                let violations = validate(history.messages(), provider);
                if let Some(first) = violations.first() {
                    return Err(FitError::Invalid {
                        provider: provider.as_str().to_string(),
                        first: first.to_string(),
                        count: violations.len(),
                        violations,
                    });
                }
            }
            Ok(steps)
        });
        let total = history.total_tokens();
        let (messages, plan, cache) = history.finish(input);
        if options.count {
            self.cache = cache;
        }
        let steps = outcome?;
        if let Some(store) = services.offload {
            offload::write(store, &blobs)?;
        }
        let report = Report {
            original_token_count: tokens_before,
            compressed_token_count: total,
            original_message_count: messages_before,
            compressed_message_count: messages.len(),
            compression_ratio: crate::report::compression_ratio(tokens_before, total),
            was_compressed: plan.changes_anything(),
            budget: options.budget,
            counter: counter.text_counter().name().to_string(),
            steps,
            repairs,
            session: None,
            offloaded,
        };
        Ok(Fitted { messages, report, plan })
    }
}

/// What a caller lends the steps of one run.
#[derive(Debug, Clone, Copy, Default)]
#[non_exhaustive]
pub struct Services<'a> {
    /// What a compaction leaves where it removed messages (default: a line saying what went).
    pub trace: Option<&'a dyn Trace>,
    /// The input messages' fingerprints, when the caller took them already (a session):
    /// counting then hashes nothing again. Ignored unless there is one per message.
    pub(crate) fingerprints: Option<&'a [u128]>,
    /// Where what the steps remove or cut is offloaded (see [`offload`]); `None`: nowhere.
    pub offload: Option<&'a dyn Store>,
    /// What writes the `summarize` step's summaries; `None`: the extractive summarizer.
    pub summarizer: Option<&'a dyn Summarizer>,
    /// What scores words for `compress_text`; `None`: the step's own scorer.
    pub scorer: Option<&'a dyn Scorer>,
}

impl<'a> Services<'a> {
    /// Lends `trace` to compactions.
    pub fn with_trace(self, trace: &'a dyn Trace) -> Services<'a> {
        Services { trace: Some(trace), ..self }
    }

    /// Lends `scorer` to the `compress_text` step.
    pub fn with_scorer(self, scorer: &'a dyn Scorer) -> Services<'a> {
        Services { scorer: Some(scorer), ..self }
    }

    /// Lends `summarizer` to the `summarize` step.
    pub fn with_summarizer(self, summarizer: &'a dyn Summarizer) -> Services<'a> {
        Services { summarizer: Some(summarizer), ..self }
    }

    /// Offloads what the steps remove or cut into `store`, leaving placeholders that name it.
    pub fn with_offload(self, store: &'a dyn Store) -> Services<'a> {
        Services { offload: Some(store), ..self }
    }

    /// Lends the input's fingerprints, taken by the caller.
    pub(crate) fn with_fingerprints(self, fingerprints: &'a [u128]) -> Services<'a> {
        Services { fingerprints: Some(fingerprints), ..self }
    }
}

/// The text counter of a run that does not count: every text is 0 tokens.
struct Uncounted;

impl TokenCounter for Uncounted {
    fn name(&self) -> &str {
        "uncounted"
    }

    fn count(&self, _text: &str) -> usize {
        0
    }
}

/// Fails with what could not fit when `history` is over `budget`.
fn check_within(history: &History<'_>, budget: usize) -> Result<(), FitError> {
    let total = history.total_tokens();
    if total <= budget {
        return Ok(());
    }
    let protected = history.protected_units(Keep::default());
    let mut system = 0;
    let mut newest = 0;
    for (unit, keep) in history.units().iter().zip(&protected) {
        if *keep {
            let tokens = history.tokens_of(unit.messages.clone());
            if history.message(unit.messages.start).role.is_instruction() {
                system += tokens;
            } else {
                newest += tokens;
            }
        }
    }
    let fixed = history.fixed_tokens();
    let needed = system + newest + fixed;
    let mut parts = Vec::new();
    if system > 0 {
        parts.push(format!("the system prompt ({system} tokens)"));
    }
    if newest > 0 {
        parts.push(format!("the newest user turn ({newest} tokens)"));
    }
    if fixed > 0 {
        parts.push(format!("the tool schemas and reply priming ({fixed} tokens)"));
    }
    if needed > budget {
        return Err(FitError::CannotFit {
            what: parts.join(", "),
            needed,
            budget,
            over: needed - budget,
            must_keep: needed,
        });
    }
    Err(FitError::CannotFit {
        what: format!(
            "the history the pipeline left (only {needed} tokens of it must be kept{}: a pipeline \
             that removes more fits it)",
            if parts.is_empty() { String::new() } else { format!(", {}", parts.join(", ")) }
        ),
        needed: total,
        budget,
        over: total - budget,
        must_keep: needed,
    })
}

//! `compress_text`: shorten long texts by dropping their least informative words
//! (LLMLingua-style; AG2 `TextMessageCompressor`).
//!
//! A long text part (longer than `min_chars` characters) of a user or assistant message, or of
//! a tool result, is split into words at whitespace. Each word a [`Scorer`] may drop gets a
//! score, its information; the lowest-scored go first, until the text keeps `rate` of those
//! words, or until it fits `target_tokens`. What is left is written back with its line
//! structure: the words kept side by side keep the space between them, a line emptied of words
//! goes, a paragraph break stays, and the `.`, `!`, `?` or `:` that ended a dropped word is
//! put back after the word before it so sentences still end.
//!
//! Only *prose words* may be dropped: a word of letters (an apostrophe or hyphen between
//! letters allowed), once the sentence punctuation after it and `*` emphasis are set aside.
//! Everything else is kept verbatim: numbers and any word with a digit, identifiers
//! (`snake_case`, `camelCase`, `a.b`, `a::b`), paths, URLs, punctuation, words with a bracket or
//! quote (dropping one would leave its pair alone), and whole spans of
//! - code: ```` ``` ```` and `~~~` fenced blocks (to the closing fence, or the end of the text)
//!   and inline `` `code` `` spans (within a line);
//! - with `keep_code_lines` (the default), every line that looks like code or data. Code, for
//!   a line of up to 200 bytes (a longer one is a paragraph), outside its inline code spans:
//!   it holds `=`, `{` or `}`, a call or index (`name(`, `name[`), `->`, `=>`, `::` or an
//!   XML-like tag, or ends in `;`; or starts with `#`, `//`, `@`, `>>>`, `$ `, a statement
//!   (`import`, `from x import`, `return`, `raise`, `def`, `class`, `fn`, `let`, `else`,
//!   `except`, ...), or a block opener ending in `:` (`if x:`). Data, for any line: fewer than
//!   half of its words are prose (a file listing, a table row, a log line);
//! - the exact facts of the summary ledger ([`facts_of_text`]): paths, URLs, identifiers,
//!   numbers with their unit, and an error's name with its message (`ValueError: day is out of
//!   range`), wherever each occurs;
//! - negations (`not`, `no`, `never`, `without`, words ending in `n't`, ...): dropping one
//!   turns a sentence around;
//! - the words of `keep_words` (case-insensitive; LLMLingua's `force_tokens`).
//!
//! So a fact of the ledger is in the compressed text verbatim, always. `rate` is the share of
//! the droppable words that is kept; the share of all words is higher where a text holds code
//! or facts. A text with nothing to drop, or already within `target_tokens`, is left alone.
//!
//! The built-in scorer, [`SelfInformation`], needs no model and no network: a word's prior
//! information is read from the ranks of the o200k_base vocabulary (a BPE merges frequent
//! pieces first, so a word that is one low-rank token is common), and a word seen earlier in the
//! same text is cheaper again (a cache model), so repeats go before first mentions. Other
//! scorers (a language model's surprisal, a Python callable) plug in through [`Scorer`].
//!
//! By default system messages and the newest user turn are kept whole; `roles` says which
//! messages' texts are compressed (`tool` for tool results, OpenAI `tool` messages and
//! Anthropic `tool_result` blocks alike), `filter_dict` restricts the step further. Thinking,
//! tool calls, media and refusals are never touched; nothing is removed, so the history stays
//! valid. The change is recorded as a truncation (an offload store keeps the original).
//! Deterministic: the same text and settings give the same bytes, whatever the budget. Cost:
//! O(text length) to split, protect and score; with `target_tokens`, a tokenization of the
//! text per step of a binary search over how many words go.

use super::shared::written::Written;
use std::collections::HashMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use regex::Regex;

use super::shared::filter::{read_filter, MessageFilter};
use super::shared::keep::{protected_messages, read_keep};
use super::{
    ConfigError, KeyDoc, KeyUnit, Step, StepContext, StepError, StepKind, EXCLUDE_FILTER, FILTER_DICT,
    KEEP_NEWEST_USER_TURN, KEEP_SYSTEM,
};
use crate::history::{History, Keep};
use crate::message::{Part, Role};
use crate::params::{FromParams, Params};
use crate::plan::ChangeKind;
use crate::summary::ledger::facts_of_text;
use crate::text::thousands;
use crate::tokens::{OpenAiEncoding, TokenCounter};

/// `compress_text` in configuration.
pub(crate) const KIND: StepKind = StepKind::of::<CompressText>("compress_text", &["text_message_compressor"])
    .documented(
        "Shorten long texts by dropping their least informative words (LLMLingua-style); numbers, names, paths and code are kept.",
        &[
            KeyDoc::new("rate", KeyUnit::Fraction, "the share of droppable words kept"),
            KeyDoc::new("target_tokens", KeyUnit::Tokens, "instead of `rate`: drop words until the text fits this"),
            KeyDoc::new("min_chars", KeyUnit::Characters, "only texts longer than this are compressed"),
            KeyDoc::new("roles", KeyUnit::Names, "the roles whose texts are compressed; `tool` stands for tool results"),
            KeyDoc::new("keep_code_lines", KeyUnit::Flag, "keep lines that look like code or data whole"),
            KeyDoc::new("keep_words", KeyUnit::Names, "words never dropped (compared without case)"),
            FILTER_DICT,
            EXCLUDE_FILTER,
            KEEP_SYSTEM,
            KEEP_NEWEST_USER_TURN,
        ],
    );

/// Scores the words of a text: how much each one tells. [`CompressText`] drops the
/// lowest-scored droppable words first.
///
/// `words` are one text's words in order, as split at whitespace, punctuation attached
/// (`"fox,"`); the answer has one score per word (higher: more informative; any scale, only
/// the order counts; ties go from the end of the text first). Scores of words the step may
/// not drop are read but unused. Closures `Fn(&[&str]) -> Vec<f64>` are scorers.
pub trait Scorer: Send + Sync {
    /// A name for reports and debugging output (`self_information`).
    fn name(&self) -> &str {
        "custom"
    }

    /// One score per word of `words`.
    fn score(&self, words: &[&str]) -> Vec<f64>;
}

impl fmt::Debug for dyn Scorer + '_ {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Scorer({})", self.name())
    }
}

impl<F> Scorer for F
where
    F: Fn(&[&str]) -> Vec<f64> + Send + Sync,
{
    fn score(&self, words: &[&str]) -> Vec<f64> {
        self(words)
    }
}

/// The built-in scorer: the self-information of each word, in bits, from a frequency prior and
/// the text itself.
///
/// - The prior, by Zipf's law (`p = 0.1 / rank`): the ranks come from the o200k_base vocabulary
///   embedded in the crate. A BPE vocabulary is built by merging the most frequent pairs first,
///   so the order of its single-token words (with their leading space, in any case) follows
///   their frequency: ` the` is the 11th, ` information` the 455th, ` museum` the 5,665th of
///   about 85,000. A word of several tokens is rarer than all of them: one bit more per extra
///   token. The table is read from the vocabulary once per process.
/// - The text: a word said again tells less, `log2(1 + n)` bits less after `n` earlier
///   mentions in the same text (a cache model), so repeats go before first mentions.
/// - A capitalised word that does not start a sentence (a name) gets 3 bits more.
///
/// Words that are not prose (numbers, identifiers, punctuation) get `f64::INFINITY`: the step
/// never drops them anyway. Deterministic; no I/O. Cost: a hash lookup per word, and an
/// encoding of the words that are not one token.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SelfInformation;

/// The information of the most frequent word, in bits (Zipf: p = 0.1 / rank).
const ZIPF_BITS: f64 = std::f64::consts::LOG2_10;

/// The bits a mid-sentence capitalised word (a name) gets on top of its prior.
const NAME_BITS: f64 = 3.0;

/// The single-token words of o200k_base, lower-cased, with their frequency rank among them
/// (0: the most frequent), and how many there are.
fn word_ranks() -> &'static HashMap<Box<str>, u32> {
    static TABLE: OnceLock<HashMap<Box<str>, u32>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let encoding = OpenAiEncoding::O200kBase;
        let mut table: HashMap<Box<str>, u32> = HashMap::new();
        // token ids are ranks: the first id of a word is its place
        for id in 0..encoding.vocabulary_len() as u32 {
            let Some(text) = encoding.decode(&[id]) else { continue };
            let Some(word) = text.strip_prefix(' ') else { continue };
            if word.is_empty() || !word.chars().all(char::is_alphabetic) {
                continue;
            }
            let next = table.len() as u32;
            table.entry(word.to_lowercase().into()).or_insert(next);
        }
        table
    })
}

/// The prior information of a prose word (its core, lower-cased), in bits.
fn prior_bits(lower: &str) -> f64 {
    let ranks = word_ranks();
    if let Some(&rank) = ranks.get(lower) {
        return ZIPF_BITS + (f64::from(rank) + 1.0).log2();
    }
    let tokens = OpenAiEncoding::O200kBase.encode(&format!(" {lower}")).len().max(2);
    ZIPF_BITS + (ranks.len() as f64 + 1.0).log2() + (tokens - 1) as f64
}

impl Scorer for SelfInformation {
    fn name(&self) -> &str {
        "self_information"
    }

    fn score(&self, words: &[&str]) -> Vec<f64> {
        // a word's prior and how often it was said so far
        let mut known: HashMap<String, (f64, usize)> = HashMap::new();
        let mut scores = Vec::with_capacity(words.len());
        let mut previous: Option<&str> = None;
        for &word in words {
            let Some(core) = prose_core(word) else {
                scores.push(f64::INFINITY);
                previous = Some(word);
                continue;
            };
            let lower = core.to_lowercase();
            let (prior, mentions) = match known.get_mut(&lower) {
                Some(entry) => entry,
                None => {
                    let prior = prior_bits(&lower);
                    known.entry(lower).or_insert((prior, 0))
                }
            };
            let mut bits = *prior - (1.0 + *mentions as f64).log2();
            *mentions += 1;
            let capitalised = core.chars().next().is_some_and(char::is_uppercase) && core.chars().count() > 1;
            let starts_sentence =
                previous.is_none_or(|w| w.ends_with(['.', '!', '?', ':']) || prose_core(w).is_none());
            if capitalised && !starts_sentence {
                bits += NAME_BITS;
            }
            scores.push(bits);
            previous = Some(word);
        }
        scores
    }
}

/// How much of a text's droppable words is kept.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CompressTo {
    /// This share of the droppable words, in `(0, 1]` (rounded up).
    Rate(f64),
    /// As few as needed for the text to fit this many tokens (all of them if it cannot).
    Tokens(usize),
}

/// Shortens long texts by dropping their least informative words.
#[derive(Clone)]
pub struct CompressText {
    /// How much is kept. Defaults to half the droppable words (`rate: 0.5`, LLMLingua's
    /// default).
    pub target: CompressTo,
    /// Only texts longer than this many characters are compressed. Defaults to 500.
    pub min_chars: usize,
    /// The roles whose texts are compressed; `tool` stands for tool results. Defaults to
    /// user, assistant and tool.
    pub roles: Vec<Role>,
    /// Whether lines that look like code are kept whole. Defaults to true.
    pub keep_code_lines: bool,
    /// Words never dropped (compared without case). Defaults to none.
    pub keep_words: Vec<String>,
    /// Which messages the step may touch. Defaults to all of them.
    pub filter: MessageFilter,
    /// Messages that are never compressed. Defaults to system messages and the newest user
    /// turn.
    pub protect: Keep,
    /// What scores the words. Defaults to [`SelfInformation`].
    pub scorer: Arc<dyn Scorer>,
}

impl Default for CompressText {
    fn default() -> CompressText {
        CompressText {
            target: CompressTo::Rate(0.5),
            min_chars: 500,
            roles: vec![Role::User, Role::Assistant, Role::Tool],
            keep_code_lines: true,
            keep_words: Vec::new(),
            filter: MessageFilter::default(),
            protect: Keep::default(),
            scorer: Arc::new(SelfInformation),
        }
    }
}

impl fmt::Debug for CompressText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompressText")
            .field("target", &self.target)
            .field("min_chars", &self.min_chars)
            .field("roles", &self.roles)
            .field("keep_code_lines", &self.keep_code_lines)
            .field("keep_words", &self.keep_words)
            .field("filter", &self.filter)
            .field("protect", &self.protect)
            .field("scorer", &self.scorer.name())
            .finish()
    }
}

/// A text [`CompressText::compress`] shortened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    /// The shortened text.
    pub text: String,
    /// The words of the original.
    pub words: usize,
    /// The words kept.
    pub kept: usize,
}

impl CompressText {
    /// Keeps `rate` of the droppable words of texts longer than 500 characters.
    pub fn rate(rate: f64) -> CompressText {
        CompressText { target: CompressTo::Rate(rate), ..CompressText::default() }
    }

    /// Drops words of texts longer than 500 characters until each fits `tokens`.
    pub fn tokens(tokens: usize) -> CompressText {
        CompressText { target: CompressTo::Tokens(tokens), ..CompressText::default() }
    }

    /// The same step with `scorer`.
    pub fn with_scorer(self, scorer: impl Scorer + 'static) -> CompressText {
        CompressText { scorer: Arc::new(scorer), ..self }
    }

    /// `text` compressed as the step compresses one text part (`counter` measures a token
    /// target); `None` when it is left as it is: no longer than `min_chars`, already within
    /// the target, or nothing in it may be dropped. Fails only when the scorer does not give
    /// one score per word.
    pub fn compress(&self, text: &str, counter: &dyn TokenCounter) -> Result<Option<Compressed>, StepError> {
        self.compress_with(text, counter, self.scorer.as_ref())
    }

    /// [`compress`](CompressText::compress) with another scorer (one lent to the run).
    fn compress_with(
        &self,
        text: &str,
        counter: &dyn TokenCounter,
        scorer: &dyn Scorer,
    ) -> Result<Option<Compressed>, StepError> {
        if text.len() <= self.min_chars || text.chars().count() <= self.min_chars {
            return Ok(None);
        }
        if let CompressTo::Tokens(limit) = self.target {
            if counter.count_till_limit(text, limit).is_some() {
                return Ok(None);
            }
        }
        let words = split_words(text);
        let kept = self.kept_words(text, &words);
        let droppable: Vec<usize> = (0..words.len()).filter(|&i| !kept[i]).collect();
        if droppable.is_empty() {
            return Ok(None);
        }
        let strs: Vec<&str> = words.iter().map(|w| &text[w.clone()]).collect();
        let scores = scorer.score(&strs);
        if scores.len() != words.len() {
            return Err(StepError::new(
                "compress_text",
                format!(
                    "the scorer {:?} gave {} scores for {} words",
                    scorer.name(),
                    scores.len(),
                    words.len()
                ),
            ));
        }
        // the order words go in: lowest score first, ties from the end of the text
        let mut order = droppable;
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]).then(b.cmp(&a)));
        let dropping = |k: usize| {
            let mut drop = vec![false; words.len()];
            for &i in &order[..k] {
                drop[i] = true;
            }
            drop
        };
        let k = match self.target {
            CompressTo::Rate(rate) => {
                // rounded up, but 0.3 × 10 is 3, not 3.0000000000000004
                let keep = (rate * order.len() as f64 - 1e-9).ceil() as usize;
                order.len() - keep.min(order.len())
            }
            CompressTo::Tokens(limit) => {
                // the fewest dropped words that fit (tokens shrink as words go)
                let fits =
                    |k: usize| counter.count_till_limit(&render(text, &words, &dropping(k)), limit).is_some();
                let (mut lo, mut hi) = (1, order.len());
                if !fits(hi) {
                    hi
                } else {
                    while lo < hi {
                        let mid = lo + (hi - lo) / 2;
                        if fits(mid) {
                            hi = mid;
                        } else {
                            lo = mid + 1;
                        }
                    }
                    lo
                }
            }
        };
        if k == 0 {
            return Ok(None);
        }
        let text = render(text, &words, &dropping(k));
        Ok(Some(Compressed { text, words: words.len(), kept: words.len() - k }))
    }

    /// For each word, whether it is kept whatever its score: not prose, or in a protected
    /// span, or one of `keep_words`.
    fn kept_words(&self, text: &str, words: &[Range<usize>]) -> Vec<bool> {
        let keep_words: Vec<String> = self.keep_words.iter().map(|k| k.to_lowercase()).collect();
        let mut kept: Vec<bool> = words
            .iter()
            .map(|w| match prose_core(&text[w.clone()]) {
                None => true,
                Some(core) => {
                    let lower = core.to_lowercase();
                    is_negation(&lower) || keep_words.contains(&lower)
                }
            })
            .collect();
        let mut protect = |span: Range<usize>| {
            let first = words.partition_point(|w| w.end <= span.start);
            for (i, w) in words.iter().enumerate().skip(first) {
                if w.start >= span.end {
                    break;
                }
                kept[i] = true;
            }
        };
        for span in code_spans(text, self.keep_code_lines) {
            protect(span);
        }
        for fact in facts_of_text(text) {
            // a fact of words that are not prose is kept anyway (a path, a URL, an identifier, a
            // number): only those with prose words are looked for (an error's message, a unit)
            if !fact.text.split_whitespace().any(|piece| prose_core(piece).is_some()) {
                continue;
            }
            let mut found = false;
            for (at, found_text) in text.match_indices(fact.text.as_str()) {
                protect(at..at + found_text.len());
                found = true;
            }
            if !found {
                // the ledger wrote it in its own form (`2.4 s` of `2.4\ns`): the runs of
                // words that hold its pieces in order
                let pieces: Vec<&str> = fact.text.split_whitespace().collect();
                if pieces.is_empty() {
                    continue;
                }
                for i in 0..words.len().saturating_sub(pieces.len() - 1) {
                    let run = i..i + pieces.len();
                    if run.clone().zip(&pieces).all(|(w, piece)| text[words[w].clone()].contains(piece)) {
                        protect(words[run.start].start..words[run.end - 1].end);
                    }
                }
            }
        }
        kept
    }

    /// The report's line for a message whose texts went from `words` to `kept` words.
    fn detail(&self, words: usize, kept: usize) -> String {
        let target = match self.target {
            CompressTo::Rate(rate) => format!("rate {rate}"),
            CompressTo::Tokens(tokens) => format!("target {} tokens", thousands(tokens as u64)),
        };
        format!("compressed {} -> {} words ({target})", thousands(words as u64), thousands(kept as u64))
    }
}

/// The byte ranges of the words of `text` (runs of non-whitespace).
fn split_words(text: &str) -> Vec<Range<usize>> {
    let mut words = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_whitespace(), start) {
            (true, Some(s)) => {
                words.push(s..i);
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push(s..text.len());
    }
    words
}

/// The prose core of a word: the word without the sentence punctuation and emphasis around
/// it, if what is left is letters (an apostrophe or hyphen between letters allowed) and not
/// `camelCase`. A word with a bracket or quote is not prose: dropping it would leave the other
/// bracket or quote alone.
fn prose_core(word: &str) -> Option<&str> {
    let core =
        word.trim_start_matches(['*', '¿', '¡']).trim_end_matches(['*', '.', ',', ';', ':', '!', '?', '…']);
    let mut previous: Option<char> = None;
    let mut chars = core.chars().peekable();
    while let Some(c) = chars.next() {
        let ok = if c.is_alphabetic() {
            // camelCase inside a word is an identifier
            !(c.is_uppercase() && previous.is_some_and(char::is_lowercase))
        } else if matches!(c, '\'' | '’' | '-') {
            previous.is_some_and(char::is_alphabetic) && chars.peek().is_some_and(|n| n.is_alphabetic())
        } else {
            false
        };
        if !ok {
            return None;
        }
        previous = Some(c);
    }
    previous.map(|_| core)
}

/// Words whose loss turns a sentence around: never dropped.
const NEGATIONS: &[&str] =
    &["not", "no", "never", "none", "nor", "neither", "nothing", "nobody", "nowhere", "cannot", "without"];

/// Whether a lower-cased prose word is a negation (`not`, `never`, `doesn't`, ...).
fn is_negation(lower: &str) -> bool {
    NEGATIONS.contains(&lower) || lower.ends_with("n't") || lower.ends_with("n’t")
}

/// The `.`, `!`, `?` or `:` that ends a word, if one does (after closing brackets or quotes).
fn sentence_end(word: &str) -> Option<char> {
    word.chars().rev().take_while(|c| !c.is_alphanumeric()).find(|c| matches!(c, '.' | '!' | '?' | ':'))
}

fn code_line() -> &'static Regex {
    static CODE: OnceLock<Regex> = OnceLock::new();
    CODE.get_or_init(|| {
        Regex::new(concat!(
            // symbols: assignment, statements, blocks, calls and indexing, arrows, paths, tags
            r"[={}]|;$|[\w\])][(\[]|->|=>|::|</?[A-Za-z][\w.-]*/?>",
            // comments, decorators, prompts
            r"|^\s*(?:#|//|@|>>>|\$\s)",
            // statements that open a line
            r"|^\s*(?:import|return|raise|yield|pass|break|continue|def|class|fn|pub|let|const|var|elif|else|try|except|finally)\b",
            r"|^\s*from\s+\S+\s+import\b",
            // block openers
            r"|^\s*(?:if|for|while|with|async|match|case)\b.*:$",
        ))
        .expect("valid")
    })
}

/// Lines longer than this are paragraphs: only the share of their prose words says whether
/// they are code or data.
const CODE_LINE_MAX: usize = 200;

/// Whether `line` (at byte `at` of the text, with the inline code spans `inline`) looks like
/// code or data. Code, for a line of up to [`CODE_LINE_MAX`] bytes: [`code_line`] matches it
/// outside its inline code spans. Data: fewer than half of its words are prose (a listing, a
/// table row, a log line).
fn is_code_or_data(line: &str, at: usize, inline: &[Range<usize>]) -> bool {
    let line = line.trim_end();
    if line.len() <= CODE_LINE_MAX {
        let mut bare = String::with_capacity(line.len());
        let mut from = 0;
        for span in inline {
            let (start, end) = ((span.start - at).min(line.len()), (span.end - at).min(line.len()));
            bare.push_str(&line[from..start]);
            bare.push(' ');
            from = end;
        }
        bare.push_str(&line[from..]);
        if code_line().is_match(&bare) {
            return true;
        }
    }
    let (mut words, mut prose) = (0, 0);
    for word in line.split_whitespace() {
        words += 1;
        prose += usize::from(prose_core(word).is_some());
    }
    prose * 2 < words
}

/// The byte ranges of `text` kept whole as code: fenced blocks, inline code spans, and (with
/// `code_lines`) lines that look like code.
fn code_spans(text: &str, code_lines: bool) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut fence: Option<(char, usize, usize)> = None; // (fence char, length, block start)
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let range = at..at + line.len();
        at += line.len();
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = line.trim_start_matches(' ');
        let run = |c: char| body.chars().take_while(|&x| x == c).count();
        let opener = ['`', '~'].into_iter().map(|c| (c, run(c))).find(|&(_, n)| n >= 3 && indent <= 3);
        match (fence, opener) {
            (Some((c, n, start)), Some((oc, on))) if oc == c && on >= n && body[on..].trim().is_empty() => {
                spans.push(start..range.end);
                fence = None;
            }
            (Some(_), _) => {}
            (None, Some((c, n))) => fence = Some((c, n, range.start)),
            (None, None) => {
                let first = spans.len();
                inline_code(line, range.start, &mut spans);
                if code_lines && is_code_or_data(line, range.start, &spans[first..]) {
                    spans.truncate(first);
                    spans.push(range);
                }
            }
        }
    }
    if let Some((_, _, start)) = fence {
        spans.push(start..text.len());
    }
    spans
}

/// The inline code spans of one line (a run of backticks to the next run of the same length),
/// offset by `at`.
fn inline_code(line: &str, at: usize, spans: &mut Vec<Range<usize>>) {
    let bytes = line.as_bytes();
    let run_at = |i: usize| bytes[i..].iter().take_while(|&&b| b == b'`').count();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                spans.push(at + i..at + end);
                i = end;
            }
            None => i += n,
        }
    }
}

/// `text` without the words `drop` marks: kept neighbours keep the space between them; where
/// words went, one space, or the line break (two for a paragraph break) and the next line's
/// indentation; the sentence end of a dropped word goes after the word kept before it.
fn render(text: &str, words: &[Range<usize>], drop: &[bool]) -> String {
    let sep =
        |i: usize| if i == 0 { &text[..words[0].start] } else { &text[words[i - 1].end..words[i].start] };
    let mut out = String::with_capacity(text.len());
    let mut last: Option<usize> = None;
    let mut pending: Option<char> = None;
    let ends_in_stop = |out: &str| out.ends_with(['.', '!', '?', ':', ';', ',']);
    for (i, word) in words.iter().enumerate() {
        if drop[i] {
            if let Some(c) = sentence_end(&text[word.clone()]) {
                pending = Some(c);
            }
            continue;
        }
        if let Some(c) = pending.take() {
            if last.is_some() && !ends_in_stop(&out) {
                out.push(c);
            }
        }
        let from = last.map_or(0, |k| k + 1);
        if from == i {
            out.push_str(sep(i));
        } else {
            let seps: Vec<&str> = (from..=i).map(sep).collect();
            match seps.iter().rposition(|s| s.contains('\n')) {
                None if last.is_none() => out.push_str(seps[0]),
                None => out.push(' '),
                Some(p) => {
                    let indent = &seps[p][seps[p].rfind('\n').map_or(0, |n| n + 1)..];
                    if last.is_some() {
                        let newline = if seps.iter().any(|s| s.contains("\r\n")) { "\r\n" } else { "\n" };
                        let paragraph = seps.iter().any(|s| s.matches('\n').count() >= 2);
                        out.push_str(newline);
                        if paragraph {
                            out.push_str(newline);
                        }
                    }
                    out.push_str(indent);
                }
            }
        }
        out.push_str(&text[word.clone()]);
        last = Some(i);
    }
    if let (Some(c), Some(_)) = (pending, last) {
        if !ends_in_stop(&out) {
            out.push(c);
        }
    }
    if let Some(end) = words.last().map(|w| w.end) {
        out.push_str(&text[end..]);
    }
    out
}

/// One planned change of a message: the text part at `part` (inside the `tool_result` block
/// `block`, if any) becomes `text`.
struct PartChange {
    block: Option<usize>,
    part: usize,
    text: String,
}

impl Step for CompressText {
    fn name(&self) -> &'static str {
        "compress_text"
    }

    fn to_config(&self) -> Option<serde_json::Map<String, serde_json::Value>> {
        let (rate, tokens) = match self.target {
            CompressTo::Rate(rate) => (Some(rate), None),
            CompressTo::Tokens(tokens) => (None, Some(tokens)),
        };
        Written::new("compress_text")
            .key("rate", rate)
            .key("target_tokens", tokens)
            .key("min_chars", self.min_chars)
            .roles("roles", &self.roles)
            .key("keep_code_lines", self.keep_code_lines)
            .key("keep_words", self.keep_words.clone())
            .filter(&self.filter)
            .keep(self.protect)
            .done()
    }

    fn check(&self) -> Result<(), ConfigError> {
        match self.target {
            CompressTo::Rate(rate) if !(rate > 0.0 && rate <= 1.0) => {
                return Err(ConfigError::new("rate", format!("must be above 0 and at most 1, found {rate}")));
            }
            CompressTo::Tokens(0) => return Err(ConfigError::new("target_tokens", "must be at least 1")),
            _ => {}
        }
        if self.roles.is_empty() {
            return Err(ConfigError::new("roles", "is empty: the step would compress nothing"));
        }
        Ok(())
    }

    fn apply(&self, history: &mut History<'_>, cx: &StepContext<'_>) -> Result<(), StepError> {
        // a scorer lent to the run (a Python callable) stands in for the step's own
        let scorer: &dyn Scorer = cx.scorer.unwrap_or(self.scorer.as_ref());
        let texts = self.roles.iter().any(|r| !matches!(r, Role::Tool | Role::Function));
        let results = self.roles.contains(&Role::Tool);
        let protected = protected_messages(history, self.protect);
        for (i, protected) in protected.into_iter().enumerate() {
            let message = history.message(i);
            let role = match message.role {
                Role::Function => Role::Tool,
                role => role,
            };
            if protected || !(texts || results) || !self.filter.applies_to(message) {
                continue;
            }
            let counter = history.counter().text_counter();
            let mut changes = Vec::new();
            let (mut words, mut kept) = (0, 0);
            let mut take = |block: Option<usize>, part: usize, text: &str| -> Result<(), StepError> {
                if let Some(c) = self.compress_with(text, counter, scorer)? {
                    words += c.words;
                    kept += c.kept;
                    changes.push(PartChange { block, part, text: c.text });
                }
                Ok(())
            };
            for (p, part) in message.parts.iter().enumerate() {
                match part {
                    Part::Text(t) if self.roles.contains(&role) => take(None, p, &t.text)?,
                    Part::ToolResult(r) if results => {
                        for (q, inner) in r.parts.iter().enumerate() {
                            if let Part::Text(t) = inner {
                                take(Some(p), q, &t.text)?;
                            }
                        }
                    }
                    _ => {}
                }
            }
            if changes.is_empty() {
                continue;
            }
            let detail = self.detail(words, kept);
            history.edit(i, ChangeKind::Truncated, detail, |m| {
                for c in changes {
                    let parts = match c.block {
                        Some(b) => match &mut m.parts[b] {
                            Part::ToolResult(r) => &mut r.parts,
                            _ => continue,
                        },
                        None => &mut m.parts,
                    };
                    if let Some(Part::Text(t)) = parts.get_mut(c.part) {
                        t.text = c.text;
                    }
                }
            });
        }
        Ok(())
    }
}

impl FromParams for CompressText {
    /// Keys: `rate` (the share of droppable words kept) or `target_tokens` (alias
    /// `target_token`, LLMLingua's; a negative value is no target, as there), `min_chars`,
    /// `roles` (role names; `tool` for tool results), `keep_code_lines`, `keep_words` (alias
    /// `force_tokens`), `filter_dict` (alias `filter`), `exclude_filter` (alias `exclude`),
    /// `keep_system` (alias `preserve_system_messages`), `keep_newest_user_turn`.
    fn from_params(p: &mut Params) -> Result<CompressText, ConfigError> {
        let mut step = CompressText::default();
        let rate = p.f64(&["rate"])?;
        let tokens = match p.take(&["target_tokens", "target_token"]) {
            None => None,
            Some((_, serde_json::Value::Number(n))) if n.as_i64().is_some_and(|v| v < 0) => None,
            Some((key, value)) => {
                let mut one = Params::new(serde_json::Map::from_iter([(key.to_string(), value)]));
                one.usize(&[key])?
            }
        };
        step.target = match (rate, tokens) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::new("target_tokens", "give a rate or target_tokens, not both"))
            }
            (Some(rate), None) => CompressTo::Rate(rate),
            (None, Some(tokens)) => CompressTo::Tokens(tokens),
            (None, None) => step.target,
        };
        if let CompressTo::Rate(rate) = CompressText::default().target {
            p.note_default("rate", rate);
        }
        step.min_chars = p.usize_or(&["min_chars"], step.min_chars)?;
        let default_roles: Vec<String> = step.roles.iter().map(|r| r.as_str().to_string()).collect();
        step.roles = p
            .strings_or(&["roles"], &default_roles)?
            .iter()
            .enumerate()
            .map(|(i, name)| match Role::from_wire(name) {
                Some(Role::Function) => Ok(Role::Tool),
                Some(Role::Other) | None => {
                    Err(ConfigError::new(format!("roles[{i}]"), format!("unknown role {name:?}")))
                }
                Some(role) => Ok(role),
            })
            .collect::<Result<_, _>>()?;
        step.keep_code_lines = p.bool_or(&["keep_code_lines"], step.keep_code_lines)?;
        step.keep_words = p.strings_or(&["keep_words", "force_tokens"], &step.keep_words)?;
        step.filter = read_filter(p)?;
        step.protect = read_keep(p, step.protect)?;
        Ok(step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Format;
    use crate::message::Message;
    use crate::steps::test_support::{anthropic, assert_valid, counter, openai, run, run_in};
    use crate::summary::ledger::facts_of_text;
    use crate::validate::validate;
    use serde_json::json;

    /// A paragraph of plain prose, about 120 words.
    const PROSE: &str = "The committee met on a rainy morning to discuss the future of the old harbour. \
        Several members argued that the warehouses should be restored and turned into a museum, \
        while others believed the land would be better used for affordable housing near the water. \
        After a long and sometimes heated debate, the chair proposed a compromise: the northern \
        warehouses would become a small museum about the fishing fleet, and the southern plots \
        would be offered to a cooperative that builds modest homes. Most of the members agreed \
        with the proposal, although two of them asked for a more detailed study of the costs \
        before the final vote, which was postponed until the spring meeting of the council.";

    fn step(rate: f64) -> CompressText {
        CompressText { min_chars: 0, ..CompressText::rate(rate) }
    }

    fn compress(step: &CompressText, text: &str) -> Option<Compressed> {
        step.compress(text, counter().text_counter()).expect("scores")
    }

    fn prose_words(text: &str) -> usize {
        split_words(text).into_iter().filter(|w| prose_core(&text[w.clone()]).is_some()).count()
    }

    #[test]
    fn keeps_the_rate_of_prose_words() {
        let words = prose_words(PROSE);
        for rate in [0.25, 0.5, 0.75] {
            let c = compress(&step(rate), PROSE).expect("compressed");
            assert_eq!(c.words, split_words(PROSE).len());
            let dropped = c.words - c.kept;
            assert_eq!(dropped, words - (rate * words as f64).ceil() as usize, "rate {rate}");
            assert_eq!(split_words(&c.text).len(), c.kept, "{}", c.text);
            assert!(counter().text_counter().count(&c.text) < counter().text_counter().count(PROSE));
        }
        // the words that are left are the original's, in order
        let c = compress(&step(0.5), PROSE).unwrap();
        let strip = |w: &str| w.trim_end_matches(['.', ':', '!', '?']).to_string();
        let mut original = split_words(PROSE).into_iter().map(|w| strip(&PROSE[w]));
        for kept in c.text.split_whitespace() {
            assert!(original.any(|w| w == strip(kept)), "{kept} in {}", c.text);
        }
    }

    #[test]
    fn common_words_go_first_and_names_stay() {
        let c = compress(&step(0.5), PROSE).unwrap();
        let kept: Vec<&str> = c.text.split_whitespace().collect();
        for word in ["warehouses", "museum", "harbour", "cooperative", "committee"] {
            assert!(kept.iter().any(|w| w.starts_with(word)), "{word} kept: {}", c.text);
        }
        for word in ["the", "of", "a", "and"] {
            assert!(!kept.contains(&word), "{word} dropped: {}", c.text);
        }
        let names = "We asked the team about it and then Margaret said that the plan was fine with her, \
                     but the team said that the plan was not fine with them at all.";
        let c = compress(&step(0.3), names).unwrap();
        assert!(c.text.contains("Margaret"), "{}", c.text);
    }

    #[test]
    fn facts_code_and_numbers_are_kept_verbatim() {
        let text = "To reproduce the problem, first open the file at src/modeling/separable.py and then \
            look at the function `separability_matrix(cm)` which is called for nested models. \
            It fails with ValueError: day is out of range for month when the date is 2024-02-30, \
            and the run took 128 ms on the small machine. See https://docs.example.com/a/b?c=1 for \
            the details of the report, issue 12907, and the helper call_00_abc in the module.\n\
            ```python\nfrom astropy.modeling import models as m\nprint(the and of a)\n```\n\
            After that the tests should pass again and the matrix should be diagonal as expected.";
        let c = compress(&step(0.3), text).unwrap();
        for fact in facts_of_text(text) {
            assert!(c.text.contains(&fact.text), "{:?} lost: {}", fact.text, c.text);
        }
        assert!(c.text.contains("`separability_matrix(cm)`"), "{}", c.text);
        // a fact the ledger writes in its own form keeps its words
        let spread = format!("{PROSE} It took 2.4\ns in all, and then {PROSE}");
        assert!(facts_of_text(&spread).iter().any(|f| f.text == "2.4 s"));
        let spread = compress(&step(0.1), &spread).unwrap();
        assert!(spread.text.contains("2.4\ns"), "{}", spread.text);
        assert!(
            c.text
                .contains("```python\nfrom astropy.modeling import models as m\nprint(the and of a)\n```\n"),
            "{}",
            c.text
        );
        assert!(c.kept < c.words, "{}", c.text);
    }

    #[test]
    fn code_lines_stay_whole_unless_asked() {
        let text = "Here is what the program prints when it is run from the shell:\n\
                    def area(width, height):\n    return width * height\nresult = area(3, 4)\n\
                    and that is all there is to it, nothing more and nothing less than that.";
        let c = compress(&step(0.2), text).unwrap();
        assert!(
            c.text.contains("def area(width, height):\n    return width * height\nresult = area(3, 4)\n"),
            "{}",
            c.text
        );
        // a paragraph is judged by its words; inline code does not make a line code
        let paragraph = format!("{PROSE} Call it again; then {PROSE}");
        assert!(compress(&step(0.5), &paragraph).is_some());
        let short = "Call `separability_matrix(cm)` on the nested model and look at the matrix it returns.";
        let c = compress(&step(0.5), short).expect("compressed");
        assert!(c.text.contains("`separability_matrix(cm)`"), "{}", c.text);
        let loose = CompressText { keep_code_lines: false, ..step(0.2) };
        let c = compress(&loose, text).unwrap();
        assert!(c.text.contains("area(width, height):"), "calls are never split: {}", c.text);
        assert!(!c.text.contains("return width"), "{}", c.text);
    }

    #[test]
    fn lines_and_paragraphs_keep_their_shape() {
        let text = "The first line of the text is here.\n  An indented second line of the text.\n\n\
                    A new paragraph begins with this line of words.";
        let c = compress(&step(0.4), text).unwrap();
        assert_eq!(c.text.matches("\n\n").count(), 1, "{:?}", c.text);
        assert_eq!(c.text.lines().count(), 4, "{:?}", c.text);
        assert!(c.text.lines().nth(1).unwrap().starts_with("  "), "{:?}", c.text);
        assert!(c.text.lines().next().unwrap().ends_with('.'), "a sentence still ends: {:?}", c.text);
        let crlf = text.replace('\n', "\r\n");
        let c = compress(&step(0.4), &crlf).unwrap();
        assert!(!c.text.replace("\r\n", "").contains('\n'), "{:?}", c.text);
    }

    #[test]
    fn is_deterministic() {
        let a = compress(&step(0.5), PROSE).unwrap();
        for _ in 0..3 {
            assert_eq!(compress(&step(0.5), PROSE).unwrap(), a);
        }
        let input = openai(&format!(
            r#"[{{"role": "user", "content": {p}}}, {{"role": "assistant", "content": {p}}},
                {{"role": "user", "content": "ok"}}]"#,
            p = serde_json::to_string(PROSE).unwrap()
        ));
        assert_eq!(run(&step(0.5), &input), run(&step(0.5), &input));
    }

    #[test]
    fn short_texts_and_texts_with_nothing_to_drop_are_untouched() {
        let default = CompressText::default();
        assert_eq!(compress(&default, "A short text of a few words."), None);
        assert!(PROSE.chars().count() > 500);
        assert!(compress(&default, PROSE).is_some());
        assert_eq!(compress(&step(0.5), "12 34 56 x_y a/b.py ()"), None);
        assert_eq!(compress(&step(1.0), PROSE), None, "rate 1 keeps everything");
        let input = openai(
            r#"[{"role": "user", "content": "short"}, {"role": "assistant", "content": "also short"},
                {"role": "user", "content": "ok"}]"#,
        );
        assert_eq!(run(&CompressText::default(), &input), input);
    }

    #[test]
    fn a_token_target() {
        let tokens = |t: &str| counter().text_counter().count(t);
        let before = tokens(PROSE);
        let target = CompressText { min_chars: 0, ..CompressText::tokens(before * 6 / 10) };
        let c = compress(&target, PROSE).unwrap();
        assert!(tokens(&c.text) <= before * 6 / 10, "{} > {}", tokens(&c.text), before * 6 / 10);
        // the fewest words dropped: one word more and it would not fit
        let lighter = compress(&CompressText { target: CompressTo::Rate(1.0), ..target.clone() }, PROSE);
        assert_eq!(lighter, None);
        assert!(tokens(&c.text) > before * 6 / 10 - 8, "not much below the target");
        assert_eq!(compress(&CompressText { min_chars: 0, ..CompressText::tokens(before) }, PROSE), None);
        // an unreachable target drops every droppable word
        let all = compress(&CompressText { min_chars: 0, ..CompressText::tokens(1) }, PROSE).unwrap();
        assert_eq!(all.kept, split_words(PROSE).len() - prose_words(PROSE));
    }

    #[test]
    fn the_step_compresses_texts_and_results_not_protected_messages() {
        let p = serde_json::to_string(PROSE).unwrap();
        let input = openai(&format!(
            r#"[{{"role": "system", "content": {p}}},
                {{"role": "user", "content": {p}}},
                {{"role": "assistant", "content": {p}, "tool_calls": [
                    {{"id": "a", "type": "function", "function": {{"name": "f", "arguments": "{{}}"}}}}]}},
                {{"role": "tool", "tool_call_id": "a", "content": {p}}},
                {{"role": "assistant", "content": {p}}},
                {{"role": "user", "content": {p}}}]"#
        ));
        let out = run(&CompressText::default(), &input);
        assert_eq!(out[0], input[0], "system kept");
        assert_eq!(out[5], input[5], "newest user turn kept");
        for (i, message) in out.iter().enumerate().take(5).skip(1) {
            assert!(message.text_content().len() < PROSE.len(), "message {i} compressed");
        }
        assert_eq!(out[2].tool_calls().count(), 1);
        assert_valid(&out);
        let only_results = CompressText { roles: vec![Role::Tool], ..CompressText::default() };
        let out = run(&only_results, &input);
        assert_eq!(out[1], input[1]);
        assert_eq!(out[2], input[2]);
        assert!(out[3].text_content().len() < PROSE.len());
        let everything = CompressText {
            roles: vec![Role::System, Role::User, Role::Assistant],
            protect: Keep { system: false, newest_user_turn: false },
            ..CompressText::default()
        };
        let out = run(&everything, &input);
        assert_ne!(out[0], input[0]);
        assert_ne!(out[5], input[5]);
        assert_eq!(out[3], input[3], "tool results not asked for");
    }

    #[test]
    fn records_a_truncation_with_the_words() {
        let p = serde_json::to_string(PROSE).unwrap();
        let input = openai(&format!(
            r#"[{{"role": "assistant", "content": {p}}}, {{"role": "user", "content": "ok"}}]"#
        ));
        let mut history =
            History::new(&input, None, &counter(), crate::tokens::CountCache::new(), Format::OpenAi);
        history.set_step("compress_text");
        CompressText::default().apply(&mut history, &StepContext::new(Format::OpenAi)).unwrap();
        let change = &history.changes(0)[0];
        assert_eq!(change.kind, ChangeKind::Truncated);
        let words = split_words(PROSE).len();
        let kept = words - (prose_words(PROSE) - (prose_words(PROSE) as f64 * 0.5).ceil() as usize);
        assert_eq!(
            change.detail.render(history.message(0)),
            format!("compressed {words} -> {kept} words (rate 0.5)")
        );
        assert_eq!(
            CompressText::tokens(1234).detail(1234, 610),
            "compressed 1,234 -> 610 words (target 1,234 tokens)"
        );
    }

    #[test]
    fn anthropic_results_text_and_thinking() {
        let p = serde_json::to_string(PROSE).unwrap();
        let input = anthropic(&format!(
            r#"[{{"role": "user", "content": "q"}},
                {{"role": "assistant", "content": [{{"type": "thinking", "thinking": {p}, "signature": "s"}},
                    {{"type": "text", "text": {p}}},
                    {{"type": "tool_use", "id": "t", "name": "f", "input": {{"q": {p}}}}}]}},
                {{"role": "user", "content": [{{"type": "tool_result", "tool_use_id": "t", "content": {p}}},
                    {{"type": "text", "text": {p}}}]}},
                {{"role": "assistant", "content": "done"}},
                {{"role": "user", "content": "thanks"}}]"#
        ));
        let cx = StepContext::new(Format::Anthropic);
        let out = run_in(&CompressText::default(), &input, cx);
        assert_eq!(out[1].parts[0], input[1].parts[0], "thinking stays");
        assert_eq!(out[1].parts[2], input[1].parts[2], "the call stays");
        assert!(out[1].text_content().len() < PROSE.len());
        let Part::ToolResult(r) = &out[2].parts[0] else { panic!("a result") };
        let Part::Text(t) = &r.parts[0] else { panic!("text") };
        assert!(t.text.len() < PROSE.len());
        assert!(out[2].text_content().len() < PROSE.len());
        assert_eq!(validate(&out, Format::Anthropic), vec![]);
        let no_results = CompressText { roles: vec![Role::User], ..CompressText::default() };
        let out = run_in(&no_results, &input, cx);
        assert_eq!(out[2].parts[0], input[2].parts[0], "results not asked for");
        assert_ne!(out[2].parts[1], input[2].parts[1]);
    }

    #[test]
    fn a_custom_scorer_and_keep_words() {
        // drops the longest words first
        let by_shortness = |words: &[&str]| words.iter().map(|w| -(w.len() as f64)).collect::<Vec<_>>();
        let c = compress(&step(0.5).with_scorer(by_shortness), PROSE).unwrap();
        assert!(!c.text.contains("warehouses") && c.text.contains(" the "), "{}", c.text);
        let keep = CompressText { keep_words: vec!["THE".into()], ..step(0.3) };
        let c = compress(&keep, PROSE).unwrap();
        let the = |t: &str| {
            t.split_whitespace()
                .filter(|w| prose_core(w).is_some_and(|c| c.eq_ignore_ascii_case("the")))
                .count()
        };
        assert_eq!(the(&c.text), the(PROSE), "{}", c.text);
        let wrong = step(0.5).with_scorer(|_: &[&str]| vec![1.0]);
        let err = wrong.compress(PROSE, counter().text_counter()).unwrap_err();
        assert!(err.reason.contains("1 scores for"), "{err}");
    }

    #[test]
    fn the_built_in_scorer_ranks_rare_over_common() {
        let scores = SelfInformation.score(&["the", "of", "harbour", "separability", "x_y", "12"]);
        assert!(scores[0] < scores[2] && scores[1] < scores[2] && scores[2] < scores[3], "{scores:?}");
        assert!(scores[4].is_infinite() && scores[5].is_infinite());
        // a word said again tells less
        let scores = SelfInformation.score(&["harbour", "and", "harbour", "and", "harbour"]);
        assert!(scores[2] < scores[0] && scores[4] < scores[2], "{scores:?}");
    }

    #[test]
    fn prose_words_and_code_spans() {
        for word in ["the", "don't", "well-known", "end.", "**bold**", "why?!"] {
            assert!(prose_core(word).is_some(), "{word}");
        }
        for word in [
            "x_y",
            "_private",
            "camelCase",
            "a.b",
            "42",
            "-",
            "foo(",
            "a/b",
            "v2",
            "--flag",
            "e.g.",
            "(see",
            "“quoted”",
            "it\")",
        ] {
            assert_eq!(prose_core(word), None, "{word}");
        }
        let text = "a `b c` d ``e ` f`` g `unclosed";
        let spans = code_spans(text, false);
        let spans: Vec<&str> = spans.iter().map(|s| &text[s.clone()]).collect();
        assert_eq!(spans, ["`b c`", "``e ` f``"]);
        let fenced = "x\n~~~\nthe a\n~~~\ny\n```\nunclosed of the";
        let spans: Vec<&str> = code_spans(fenced, false).into_iter().map(|s| &fenced[s]).collect();
        assert_eq!(spans, ["~~~\nthe a\n~~~\n", "```\nunclosed of the"]);
    }

    #[test]
    fn reads_params_and_checks_them() {
        let read = |v: serde_json::Value| {
            let mut p = Params::new(v.as_object().unwrap().clone());
            let step = CompressText::from_params(&mut p)?;
            p.finish()?;
            step.check()?;
            Ok::<_, ConfigError>(step)
        };
        let step = read(json!({"rate": 0.3, "min_chars": 10, "roles": ["user", "function"], "keep_code_lines": false,
                               "force_tokens": ["\n", "x"], "filter_dict": {"name": "bot"}, "keep_system": false}))
        .unwrap();
        assert_eq!(step.target, CompressTo::Rate(0.3));
        assert_eq!(
            (step.min_chars, step.roles.clone(), step.keep_code_lines),
            (10, vec![Role::User, Role::Tool], false)
        );
        assert_eq!(step.keep_words, ["\n", "x"]);
        assert!(!step.protect.system && step.protect.newest_user_turn);
        assert_eq!(read(json!({"target_token": 300})).unwrap().target, CompressTo::Tokens(300));
        assert_eq!(
            read(json!({"target_token": -1})).unwrap().target,
            CompressTo::Rate(0.5),
            "LLMLingua's no target"
        );
        for (bad, key) in [
            (json!({"rate": 0}), "rate"),
            (json!({"rate": 1.5}), "rate"),
            (json!({"rate": "half"}), "rate"),
            (json!({"target_tokens": 0}), "target_tokens"),
            (json!({"target_tokens": 2.5}), "target_tokens"),
            (json!({"rate": 0.5, "target_tokens": 10}), "target_tokens"),
            (json!({"min_chars": -1}), "min_chars"),
            (json!({"roles": []}), "roles"),
            (json!({"roles": ["user", "bot"]}), "roles[1]"),
            (json!({"keep_words": ["ok", 1]}), "keep_words[1]"),
            (json!({"keep_code_lines": "yes"}), "keep_code_lines"),
            (json!({"ratio": 0.5}), "ratio"),
        ] {
            assert_eq!(read(bad.clone()).unwrap_err().key, key, "{bad}");
        }
        let message: Message = openai(r#"[{"role": "user", "content": "x"}]"#).remove(0);
        assert!(step.filter.applies_to(&message));
    }
}

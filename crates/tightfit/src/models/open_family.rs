//! Which open models tightfit counts exactly, told from their ids.
//!
//! A family is claimed only where the model is known to use that vocabulary:
//!
//! - **Llama 3** (`llama-3…`, `llama3…`, `meta-llama-3_1…`): Llama 3, 3.1, 3.2, 3.3 and
//!   their fine-tunes named so (Hermes 3, Nemotron on Llama 3.3). Not Llama 2, 4 or Guard.
//! - **Qwen** (`qwen1.5`, `qwen2`, `qwen2.5`, `qwen3` in any spelling: `qwen-2.5`, `qwen2-5`;
//!   `qwq`; `qwen-turbo`, `qwen-plus`, `qwen-max`, which Alibaba's `dashscope` SDK counts
//!   with this vocabulary). Not Qwen 3.5/3.6 (`qwen3.5`, `qwen3-6`), a new vocabulary.
//! - **DeepSeek V3** (`deepseek-chat`, `deepseek-reasoner`, `deepseek-v3…`, `deepseek-v4…`,
//!   `deepseek-r1…`, `deepseek-3.2`): one vocabulary and pre-tokenizer from V3 to V4. Not the
//!   R1 distillations (Qwen's or Llama's vocabulary with DeepSeek's template), DeepSeek-VL2,
//!   -OCR, -Math or -Coder.
//! - **Mistral tekken**, the models mistral-common or their published `tekken.json` put on it:
//!   NeMo (`mistral-nemo`), Pixtral 12B, Ministral 8B, Mistral Small 2409 and 3.x (`2501`,
//!   `2503`, `2506`, `3`, `3.1`, `3.2`, `24b`), Magistral Small, Devstral Small (`2505`,
//!   `2507`). Mistral 7B, Mixtral, Codestral 22B, Large 2407/2411 and Pixtral Large use
//!   SentencePiece vocabularies; Medium, Codestral 25.x, Large 3, Ministral 3 and Devstral 2
//!   could not be checked: all of these stay estimates.
//!
//! Ids whose last `/` segment contains `distill` are never claimed.

use super::TokenizerFamily;

/// The open family of a model id's last segment (lower case), looking at its start and after
/// each separator (`starts`), or `None`.
pub(super) fn open_family(segment: &str, starts: &[usize]) -> Option<TokenizerFamily> {
    if segment.contains("distill") {
        return None;
    }
    let rules: [(TokenizerFamily, Rule); 4] = [
        (TokenizerFamily::Llama3, is_llama3),
        (TokenizerFamily::Qwen, is_qwen),
        (TokenizerFamily::DeepSeekV3, is_deepseek_v3),
        (TokenizerFamily::MistralTekken, is_tekken),
    ];
    rules.into_iter().find(|(_, rule)| starts.iter().any(|&s| rule(&segment[s..]))).map(|(family, _)| family)
}

/// Whether a model id, from some start on, names a family's model.
type Rule = fn(&str) -> bool;

const SEPARATORS: [char; 4] = ['-', '.', '_', ':'];

/// Whether `rest` is empty or starts with a separator (or a `@` of a snapshot).
fn ends_word(rest: &str) -> bool {
    rest.chars().next().is_none_or(|c| SEPARATORS.contains(&c) || c == '@')
}

/// `rest` without one leading separator.
fn skip_separator(rest: &str) -> &str {
    rest.strip_prefix(SEPARATORS).unwrap_or(rest)
}

fn is_llama3(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("llama") else { return false };
    skip_separator(rest).strip_prefix('3').is_some_and(ends_word)
}

fn is_qwen(text: &str) -> bool {
    if text.strip_prefix("qwq").is_some_and(ends_word) {
        return true;
    }
    let Some(rest) = text.strip_prefix("qwen") else { return false };
    if ["-turbo", "-plus", "-max"].iter().any(|api| rest.strip_prefix(api).is_some_and(ends_word)) {
        return true;
    }
    let rest = skip_separator(rest);
    if let Some(after) = rest.strip_prefix("1").and_then(|r| r.strip_prefix(SEPARATORS)) {
        return after.strip_prefix('5').is_some_and(ends_word);
    }
    let Some(after_major) = rest.strip_prefix(['2', '3']) else { return false };
    if !ends_word(after_major) {
        return false;
    }
    // a minor version is one digit after a separator and before a separator or the end, not
    // a size: `qwen2.5` and `qwen2-5-7b` are 2.5; `qwen3-8b`, `qwen3-235b` and `qwen3-1.7b`
    // are 3; `qwen3.5` is not ours
    let minor = after_major.get(1..2).filter(|d| d.chars().all(|c| c.is_ascii_digit()));
    let tail = after_major.get(2..).unwrap_or_default();
    let size = tail.starts_with('.') && tail[1..].starts_with(|c: char| c.is_ascii_digit());
    match minor {
        Some(digit) if ends_word(tail) && !size => rest.starts_with('2') && digit == "5",
        _ => true,
    }
}

fn is_deepseek_v3(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("deepseek").and_then(|r| r.strip_prefix(SEPARATORS)) else {
        return false;
    };
    ["chat", "reasoner", "v3", "v4", "r1", "3"]
        .iter()
        .any(|name| rest.strip_prefix(name).is_some_and(ends_word))
}

fn is_tekken(text: &str) -> bool {
    let word = |prefix: &str| text.strip_prefix(prefix).is_some_and(ends_word);
    if ["mistral-nemo", "pixtral-12b", "ministral-8b", "magistral-small"].into_iter().any(word) {
        return true;
    }
    if let Some(rest) = text.strip_prefix("mistral-small") {
        let version = skip_separator(rest);
        return ["2409", "2501", "2503", "2506", "3", "24b"]
            .iter()
            .any(|v| version.strip_prefix(v).is_some_and(ends_word));
    }
    if let Some(rest) = text.strip_prefix("devstral-small") {
        return rest.is_empty()
            || ["-2505", "-2507"].iter().any(|v| rest.strip_prefix(v).is_some_and(ends_word));
    }
    false
}

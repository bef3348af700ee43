//! How a model name given by a user becomes one model of the registry.
//!
//! The rules are documented on [`Registry::lookup`]; this file implements them.

use super::{MatchKind, ModelError, Registry, Resolution};

/// The provider that made a model, told from the start of the name's last `/` segment.
/// `word` means the prefix must not be followed by a letter or digit (`o1`, not `o1x`).
/// A maker that is not a provider of the registry has no effect.
const MAKERS: &[(&str, &str, bool)] = &[
    ("gpt-", "openai", false),
    ("chatgpt-", "openai", false),
    ("codex-", "openai", false),
    ("o1", "openai", true),
    ("o3", "openai", true),
    ("o4", "openai", true),
    ("claude", "anthropic", false),
    ("gemini", "google", false),
    ("gemma", "google", false),
    ("mistral", "mistral", false),
    ("open-mistral", "mistral", false),
    ("open-mixtral", "mistral", false),
    ("mixtral", "mistral", false),
    ("codestral", "mistral", false),
    ("devstral", "mistral", false),
    ("magistral", "mistral", false),
    ("ministral", "mistral", false),
    ("pixtral", "mistral", false),
    ("voxtral", "mistral", false),
    ("deepseek", "deepseek", false),
    ("grok", "xai", false),
    ("kimi", "moonshotai", false),
    ("moonshot", "moonshotai", false),
    ("glm", "zai", false),
    ("qwen", "alibaba", false),
    ("qwq", "alibaba", false),
    ("qvq", "alibaba", false),
    ("llama", "llama", false),
    ("command", "cohere", false),
    ("c4ai", "cohere", false),
    ("minimax", "minimax", false),
    ("mimo", "xiaomi", false),
    ("sonar", "perplexity", false),
];

/// The aggregator preferred when the maker's own provider does not have a model.
const PREFERRED_AGGREGATOR: &str = "openrouter";

/// The maker's provider id for a lower-case model name, if the name says.
pub(super) fn maker_of(name: &str) -> Option<&'static str> {
    let segment = name.rsplit('/').next().unwrap_or_default();
    MAKERS.iter().find_map(|&(prefix, provider, word)| {
        let rest = segment.strip_prefix(prefix)?;
        let ok = !word || !rest.starts_with(|c: char| c.is_ascii_alphanumeric());
        ok.then_some(provider)
    })
}

/// One way a name can match a model, before ranking.
#[derive(Debug, Clone, Copy)]
pub(super) struct NameEntry {
    pub(super) model: usize,
    pub(super) kind: MatchKind,
}

impl Registry {
    /// Resolves a lower-case, trimmed name; `None` when nothing matches.
    pub(super) fn resolve_lower(&self, name: &str) -> Option<Resolution<'_>> {
        if let Some((provider, rest)) = name.split_once('/') {
            if self.providers.contains(provider) {
                if let Some(found) = self.resolve_in(rest, Some(provider)) {
                    return Some(found);
                }
            }
        }
        self.resolve_in(name, None)
    }

    /// Resolves `name` among all models, or among those of `provider` (lower case).
    fn resolve_in(&self, name: &str, provider: Option<&str>) -> Option<Resolution<'_>> {
        let maker = maker_of(name);
        let direct = self.best(name, provider, maker);
        if direct.is_some_and(|e| self.is_preferred(e, maker)) {
            return direct.map(|e| self.resolution(e));
        }
        let snapshot = self.snapshot(name, provider, maker);
        let chosen = match (direct, snapshot) {
            (Some(d), Some(s)) => {
                if self.is_preferred(s, maker) {
                    s
                } else {
                    d
                }
            }
            (Some(d), None) => d,
            (None, Some(s)) => s,
            (None, None) => return None,
        };
        Some(self.resolution(chosen))
    }

    /// The longest prefix of `name`, cut at a `-` or `@`, that matches a model while what
    /// follows it is a date or version suffix.
    fn snapshot(&self, name: &str, provider: Option<&str>, maker: Option<&str>) -> Option<NameEntry> {
        name.rmatch_indices(['-', '@'])
            .map(|(cut, _)| cut)
            .filter(|&cut| cut > 0 && is_version_suffix(&name[cut..]))
            .find_map(|cut| self.best(&name[..cut], provider, maker))
            .map(|found| NameEntry { model: found.model, kind: MatchKind::Snapshot })
    }

    /// The best of the models whose id, alias or last segment is `name`.
    fn best(&self, name: &str, provider: Option<&str>, maker: Option<&str>) -> Option<NameEntry> {
        let entries = self.names.get(name)?;
        entries
            .iter()
            .copied()
            .filter(|e| provider.is_none_or(|p| self.models[e.model].provider.eq_ignore_ascii_case(p)))
            .min_by(|a, b| self.rank(*a, maker).cmp(&self.rank(*b, maker)))
    }

    /// Smaller is better: user overrides, then the maker's provider, then the preferred
    /// aggregator, then providers by id; within one provider an id beats an alias, which
    /// beats a last segment.
    fn rank(&self, entry: NameEntry, maker: Option<&str>) -> (bool, bool, bool, String, u8, &str) {
        let model = &self.models[entry.model];
        let provider = model.provider.to_lowercase();
        (
            !self.from_override[entry.model],
            maker != Some(provider.as_str()),
            provider != PREFERRED_AGGREGATOR,
            provider,
            entry.kind as u8,
            model.id.as_str(),
        )
    }

    fn is_preferred(&self, entry: NameEntry, maker: Option<&str>) -> bool {
        self.from_override[entry.model]
            || maker.is_some_and(|m| self.models[entry.model].provider.eq_ignore_ascii_case(m))
    }

    fn resolution(&self, entry: NameEntry) -> Resolution<'_> {
        Resolution { model: &self.models[entry.model], matched_by: entry.kind }
    }

    /// The error for a name that matched nothing, with up to three suggestions.
    pub(super) fn unknown(&self, name: &str) -> ModelError {
        let query = name.to_lowercase();
        let mut suggestions: Vec<String> = Vec::new();
        // A known model followed by something that is not a version: name that model first.
        let cut = query
            .rmatch_indices(['-', '@'])
            .map(|(i, _)| i)
            .find(|&i| i > 0 && self.resolve_lower(&query[..i]).is_some());
        if let Some(i) = cut {
            suggestions.push(name[..i].to_string());
        }
        let limit = (query.chars().count() / 2).max(2);
        let mut scored: Vec<(usize, &str)> = Vec::new();
        for model in &self.models {
            let id = model.id.as_str();
            let segment = id.rsplit('/').next().unwrap_or(id);
            let names = [id, segment].into_iter().chain(model.aliases.iter().map(String::as_str));
            for candidate in names {
                let distance = strsim::levenshtein(&query, &candidate.to_lowercase());
                if distance <= limit {
                    scored.push((distance, candidate));
                }
            }
        }
        scored.sort_by_cached_key(|&(distance, name)| (distance, name.len(), name.to_lowercase()));
        for (_, candidate) in scored {
            if suggestions.len() == 3 {
                break;
            }
            if !suggestions.iter().any(|s| s.eq_ignore_ascii_case(candidate)) {
                suggestions.push(candidate.to_string());
            }
        }
        ModelError::Unknown { name: name.to_string(), suggestions }
    }
}

/// Whether `rest` (starting at a `-` or `@`) is one or more date or version suffixes:
/// `-2024-08-06`, `-20241022`, `-0613` (month and day), `-2411` (year and month),
/// `-08-2024`, `-001`, `-latest`, `-v2`, `-v1:0`, `-v1.5`, `:0`, `@20241022`, `@latest`,
/// `@default`, `@001`, in any sequence.
pub(super) fn is_version_suffix(rest: &str) -> bool {
    !rest.is_empty() && suffixes(rest)
}

fn suffixes(rest: &str) -> bool {
    rest.is_empty() || token_lengths(rest).into_iter().any(|n| suffixes(&rest[n..]))
}

/// The lengths of the version tokens that `s` starts with.
fn token_lengths(s: &str) -> Vec<usize> {
    let b = s.as_bytes();
    let mut lengths = Vec::new();
    let Some((&sep, tail)) = b.split_first() else {
        return lengths;
    };
    if sep == b':' {
        let n = digits(tail);
        if n > 0 {
            lengths.push(1 + n);
        }
        return lengths;
    }
    if sep != b'-' && sep != b'@' {
        return lengths;
    }
    let run = digits(tail);
    // -YYYYMMDD
    if run == 8 && valid_date(number(&tail[0..4]), number(&tail[4..6]), number(&tail[6..8])) {
        lengths.push(9);
    }
    // -YYYY-MM-DD
    if run == 4
        && tail.len() >= 10
        && tail[4] == b'-'
        && tail[7] == b'-'
        && digits(&tail[5..7]) == 2
        && digits(&tail[8..10]) == 2
        && valid_date(number(&tail[0..4]), number(&tail[5..7]), number(&tail[8..10]))
    {
        lengths.push(11);
    }
    // -MMDD or -YYMM
    if run == 4 {
        let (first, second) = (number(&tail[0..2]), number(&tail[2..4]));
        let month_day = (1..=12).contains(&first) && (1..=31).contains(&second);
        let year_month = (20..=39).contains(&first) && (1..=12).contains(&second);
        if month_day || year_month {
            lengths.push(5);
        }
    }
    // -MM-YYYY
    if run == 2
        && tail.len() >= 7
        && tail[2] == b'-'
        && digits(&tail[3..7]) == 4
        && (1..=12).contains(&number(&tail[0..2]))
        && (2000..=2099).contains(&number(&tail[3..7]))
    {
        lengths.push(8);
    }
    // -0NN
    if run == 3 && tail[0] == b'0' {
        lengths.push(4);
    }
    for word in [&b"latest"[..], b"default"] {
        if tail.starts_with(word) {
            lengths.push(1 + word.len());
        }
    }
    // -vN, -vN.M, -vN:M
    if sep == b'-' && tail.first() == Some(&b'v') {
        let mut n = 1 + digits(&tail[1..]);
        if n > 1 {
            while tail.get(n) == Some(&b'.') && digits(&tail[n + 1..]) > 0 {
                n += 1 + digits(&tail[n + 1..]);
            }
            if tail.get(n) == Some(&b':') && digits(&tail[n + 1..]) > 0 {
                n += 1 + digits(&tail[n + 1..]);
            }
            lengths.push(1 + n);
        }
    }
    lengths
}

/// How many ASCII digits `b` starts with.
fn digits(b: &[u8]) -> usize {
    b.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The value of a short run of ASCII digits.
fn number(b: &[u8]) -> u32 {
    b.iter().fold(0, |n, c| n * 10 + u32::from(c - b'0'))
}

fn valid_date(year: u32, month: u32, day: u32) -> bool {
    (2000..=2099).contains(&year) && (1..=12).contains(&month) && (1..=31).contains(&day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_suffixes() {
        for ok in [
            "-2024-08-06",
            "-20241022",
            "-0613",
            "-2411",
            "-08-2024",
            "-002",
            "-latest",
            "-v2",
            "-v1:0",
            "-v1.5",
            "@20250929",
            "@default",
            "-20241022-v2:0",
            "-v2@20241022",
        ] {
            assert!(is_version_suffix(ok), "{ok} should be a version suffix");
        }
        for bad in [
            "",
            "-banana",
            "-mini",
            "-2024",
            "-1234",
            "-13-2024",
            "-20241322",
            "-preview",
            "-v",
            "-0613-preview",
            "-32k",
            "-turbo",
            "-1",
            "2024",
        ] {
            assert!(!is_version_suffix(bad), "{bad} should not be a version suffix");
        }
    }

    #[test]
    fn makers() {
        assert_eq!(maker_of("gpt-4o"), Some("openai"));
        assert_eq!(maker_of("o3-mini"), Some("openai"));
        assert_eq!(maker_of("o3x"), None);
        assert_eq!(maker_of("anthropic/claude-3.5-sonnet"), Some("anthropic"));
        assert_eq!(maker_of("gemini-2.5-pro"), Some("google"));
        assert_eq!(maker_of("grok-4"), Some("xai"));
        assert_eq!(maker_of("some-model"), None);
    }

    #[test]
    fn every_maker_is_a_provider_of_the_table() {
        let registry = Registry::embedded();
        for &(_, provider, _) in MAKERS {
            assert!(registry.providers.contains(provider), "maker {provider} is not a provider of the table");
        }
    }
}

//! How a model name given by a user becomes one model of the registry.
//!
//! The rules are documented on [`Registry::lookup`]; this file implements them.

use super::prefixes::{
    litellm_providers, ollama_names, strip_bedrock_route, without_bedrock_vendor, LOCAL_PREFIXES,
    OLLAMA_PROVIDER,
};
use super::{MatchKind, ModelError, ProviderChoice, Registry, Resolution};

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

/// Providers that run models on their own hardware under ids they coined (`groq`'s
/// `llama-3.3-70b-versatile`), in the order they are preferred when a name the maker does not
/// list is theirs and a reseller's alike. Resellers and gateways that pass requests on to
/// these are not listed: they rank after them.
pub(super) const HOSTS: &[&str] = &[
    "groq",
    "cerebras",
    "togetherai",
    "fireworks-ai",
    "deepinfra",
    "amazon-bedrock",
    "google-vertex",
    "google-vertex-anthropic",
    "azure",
    "nebius",
    "novita-ai",
    "baseten",
    "nvidia",
    "cloudflare-workers-ai",
    "friendli",
    "scaleway",
    "ovhcloud",
    "siliconflow",
    "chutes",
    "huggingface",
];

/// The aggregator preferred when neither the maker nor a host lists a model.
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

/// The base model of an OpenAI fine-tune's name, `ft:BASE:ORG:NAME:ID` (or
/// `ft:BASE:ORG::ID`).
fn fine_tune_base(name: &str) -> Option<&str> {
    let rest = name.strip_prefix("ft:")?;
    let base = rest.split(':').next()?;
    (!base.is_empty()).then_some(base)
}

/// One way a name can match a model, before ranking.
#[derive(Debug, Clone, Copy)]
pub(super) struct NameEntry {
    pub(super) model: usize,
    pub(super) kind: MatchKind,
}

/// A match and why its provider was chosen.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    entry: NameEntry,
    choice: ProviderChoice,
}

impl Registry {
    /// Resolves a lower-case, trimmed name; `None` when nothing matches.
    pub(super) fn resolve_lower(&self, name: &str) -> Option<Resolution<'_>> {
        if let Some(base) = fine_tune_base(name) {
            let found = self.resolve_lower(base)?;
            return Some(Resolution { matched_by: MatchKind::FineTune, ..found });
        }
        if let Some((prefix, rest)) = name.split_once('/') {
            if LOCAL_PREFIXES.contains(&prefix) {
                return self.resolve_local(rest);
            }
            let named: &[&str] = if self.providers.contains(prefix) {
                std::slice::from_ref(&prefix)
            } else {
                litellm_providers(prefix).unwrap_or_default()
            };
            if !named.is_empty() {
                let rest = if prefix == "bedrock" { strip_bedrock_route(rest) } else { rest };
                let found = named.iter().find_map(|p| self.resolve_in(rest, Some(p)));
                if let Some(found) = found {
                    return Some(self.resolution(Candidate { choice: ProviderChoice::Named, ..found }));
                }
                // The provider does not list it: the whole name may be an aggregator's id
                // (`openai/gpt-4-1106-preview`), else the same model elsewhere.
                let bare = without_bedrock_vendor(rest).filter(|_| named.contains(&"amazon-bedrock"));
                let found = self
                    .resolve_in(name, None)
                    .or_else(|| self.resolve_in(rest, None))
                    .or_else(|| bare.and_then(|bare| self.resolve_in(bare, None)));
                return found.map(|found| self.resolution(found));
            }
        }
        self.resolve_in(name, None).map(|found| self.resolution(found))
    }

    /// `ollama/TAG`: the model the tag names, by its maker's entry where the maker lists one,
    /// else Ollama's own listing of the tag, else the first of the tag's other names that
    /// resolves ([`ollama_names`]).
    fn resolve_local(&self, tag: &str) -> Option<Resolution<'_>> {
        let names = ollama_names(tag);
        let found: Vec<Candidate> = names.iter().filter_map(|n| self.resolve_in(n, None)).collect();
        let by_maker = found.iter().find(|c| c.choice == ProviderChoice::Maker);
        let listed = || self.resolve_in(tag, Some(OLLAMA_PROVIDER));
        let chosen = by_maker.copied().or_else(listed).or_else(|| found.first().copied())?;
        Some(self.resolution(Candidate { choice: ProviderChoice::Local, ..chosen }))
    }

    /// Resolves `name` among all models, or among those of `provider` (lower case).
    fn resolve_in(&self, name: &str, provider: Option<&str>) -> Option<Candidate> {
        let maker = maker_of(name);
        let direct = self.best(name, provider, maker);
        if direct.is_some_and(|c| self.is_preferred(c.entry, maker)) {
            return direct;
        }
        let snapshot = self.snapshot(name, provider, maker);
        if snapshot.is_some_and(|c| self.is_preferred(c.entry, maker)) {
            return snapshot;
        }
        if let Some(preview) = self.maker_preview(name, provider, maker) {
            return Some(preview);
        }
        direct.or(snapshot)
    }

    /// The maker's `NAME-preview`, when the maker lists the model only as a preview
    /// (`gemini-3-pro` is Google's `gemini-3-pro-preview`).
    fn maker_preview(&self, name: &str, provider: Option<&str>, maker: Option<&str>) -> Option<Candidate> {
        let maker = maker?;
        let found = self.best(&format!("{name}-preview"), provider, Some(maker))?;
        let model = &self.models[found.entry.model];
        model.provider.eq_ignore_ascii_case(maker).then_some(Candidate {
            entry: NameEntry { kind: MatchKind::Preview, ..found.entry },
            choice: ProviderChoice::Maker,
        })
    }

    /// The longest prefix of `name`, cut at a `-` or `@`, that matches a model while what
    /// follows it is a date or version suffix.
    fn snapshot(&self, name: &str, provider: Option<&str>, maker: Option<&str>) -> Option<Candidate> {
        name.rmatch_indices(['-', '@'])
            .map(|(cut, _)| cut)
            .filter(|&cut| cut > 0 && is_version_suffix(&name[cut..]))
            .find_map(|cut| self.best(&name[..cut], provider, maker))
            .map(|found| Candidate { entry: NameEntry { kind: MatchKind::Snapshot, ..found.entry }, ..found })
    }

    /// The best of the models whose id, alias or last segment is `name`, and why.
    fn best(&self, name: &str, provider: Option<&str>, maker: Option<&str>) -> Option<Candidate> {
        let entries = self.names.get(name)?;
        let mut matching = entries
            .iter()
            .copied()
            .filter(|e| provider.is_none_or(|p| self.models[e.model].provider.eq_ignore_ascii_case(p)));
        let first = matching.next()?;
        let mut best = first;
        let mut several_providers = false;
        for entry in matching {
            several_providers |= self.models[entry.model].provider != self.models[first.model].provider;
            if self.rank(entry, maker) < self.rank(best, maker) {
                best = entry;
            }
        }
        let choice = self.choice(best, maker, several_providers);
        Some(Candidate { entry: best, choice })
    }

    /// Why `entry` won over the other providers' matches (see [`rank`](Self::rank)).
    fn choice(&self, entry: NameEntry, maker: Option<&str>, several_providers: bool) -> ProviderChoice {
        let provider = self.models[entry.model].provider.to_lowercase();
        if self.from_override[entry.model] {
            ProviderChoice::Override
        } else if maker == Some(provider.as_str()) {
            ProviderChoice::Maker
        } else if !several_providers {
            ProviderChoice::Only
        } else if HOSTS.contains(&provider.as_str()) {
            ProviderChoice::Host
        } else if provider == PREFERRED_AGGREGATOR {
            ProviderChoice::Aggregator
        } else {
            ProviderChoice::FirstById
        }
    }

    /// Smaller is better: user overrides, then the maker's provider, then the hosts in the
    /// order of [`HOSTS`], then the preferred aggregator, then providers by id; within one
    /// provider an id beats an alias, which beats a last segment.
    fn rank(&self, entry: NameEntry, maker: Option<&str>) -> (bool, bool, usize, bool, String, u8, &str) {
        let model = &self.models[entry.model];
        let provider = model.provider.to_lowercase();
        let host = HOSTS.iter().position(|h| *h == provider).unwrap_or(HOSTS.len());
        (
            !self.from_override[entry.model],
            maker != Some(provider.as_str()),
            host,
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

    fn resolution(&self, found: Candidate) -> Resolution<'_> {
        Resolution {
            model: &self.models[found.entry.model],
            matched_by: found.entry.kind,
            chosen_by: found.choice,
        }
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

    #[test]
    fn every_host_and_prefix_target_is_a_provider_of_the_table() {
        let registry = Registry::embedded();
        for host in HOSTS {
            assert!(registry.providers.contains(*host), "host {host} is not a provider of the table");
        }
        for (prefix, providers) in super::super::prefixes::LITELLM_PREFIXES {
            assert!(!registry.providers.contains(*prefix), "{prefix} is a provider id: no mapping needed");
            for provider in *providers {
                assert!(registry.providers.contains(*provider), "{prefix}/ maps to unknown {provider}");
            }
        }
        assert!(registry.providers.contains(OLLAMA_PROVIDER));
    }
}

//! Which tokenizer counts a model's tokens, and how the family is told from a model id.

use std::fmt;

/// Which tokenizer counts a model's tokens.
///
/// The registry gives each model a family; a model added by an override file without a
/// `tokenizer` key gets [`TokenizerFamily::for_model_id`] of its id.
///
/// Serialized in snake case: `"o200k_base"`, `"cl100k_base"`, `"claude"`, `"llama3"`,
/// `"qwen"`, `"deepseek_v3"`, `"mistral_tekken"`, `"other"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TokenizerFamily {
    /// OpenAI's `o200k_base` encoding: GPT-4o, GPT-4.1, GPT-4.5, GPT-5, o1, o3, o4, gpt-oss.
    O200kBase,
    /// OpenAI's `cl100k_base` encoding: GPT-4, GPT-4 Turbo, GPT-3.5 Turbo.
    Cl100kBase,
    /// Anthropic's Claude models, whose tokenizer is not public: counted by an estimate.
    Claude,
    /// Llama 3.x: exact when the vocabulary is found on this machine (see
    /// `tokens::llama3`), else an estimate that says so.
    Llama3,
    /// Qwen 1.5–3 (embedded, exact).
    Qwen,
    /// DeepSeek V3, R1, V4 (embedded, exact).
    #[serde(rename = "deepseek_v3")]
    DeepSeekV3,
    /// Mistral's tekken (embedded, exact).
    MistralTekken,
    /// Any other model: counted by an estimate or a tokenizer file the user supplies.
    Other,
}

/// OpenAI model families and their encodings, tried in this order. The generator
/// (`scripts/gen_models.py`) applies the same rules; a test checks that both agree.
const OPENAI_RULES: &[(TokenizerFamily, &str, Tail)] = &[
    (TokenizerFamily::O200kBase, "gpt-4o", Tail::Word),
    (TokenizerFamily::O200kBase, "gpt-4.1", Tail::Word),
    (TokenizerFamily::O200kBase, "gpt-4.5", Tail::Word),
    (TokenizerFamily::O200kBase, "gpt-5", Tail::Any),
    (TokenizerFamily::O200kBase, "gpt-oss", Tail::Any),
    (TokenizerFamily::O200kBase, "chatgpt-4o", Tail::Word),
    (TokenizerFamily::O200kBase, "o1", Tail::Word),
    (TokenizerFamily::O200kBase, "o3", Tail::Word),
    (TokenizerFamily::O200kBase, "o4", Tail::Word),
    (TokenizerFamily::Cl100kBase, "gpt-4", Tail::WordNoDot),
    (TokenizerFamily::Cl100kBase, "gpt-3.5", Tail::Any),
    (TokenizerFamily::Cl100kBase, "gpt-35", Tail::Any),
];

/// What may follow a family name in a model id.
#[derive(Clone, Copy)]
enum Tail {
    /// Anything: `gpt-5` covers `gpt-5.1` and `gpt-52`.
    Any,
    /// The end of the id or a character that is not a letter or a digit.
    Word,
    /// As `Word`, and not a dot either: `gpt-4` is not `gpt-4.1`.
    WordNoDot,
}

impl Tail {
    fn allows(self, rest: &str) -> bool {
        let Some(next) = rest.chars().next() else {
            return true;
        };
        match self {
            Tail::Any => true,
            Tail::Word => !next.is_alphanumeric(),
            Tail::WordNoDot => !next.is_alphanumeric() && next != '.',
        }
    }
}

impl TokenizerFamily {
    /// The family of a model, told from its id alone.
    ///
    /// Looks at the id's last `/` segment, at its start and after every `-`, `.`, `_` or
    /// `:`, so that `openai/gpt-4o`, `azure-gpt-4o` and `openai.gpt-oss-120b-1:0` are all
    /// recognized: `claude…` is [`Claude`](Self::Claude); `gpt-4o`, `gpt-4.1`, `gpt-4.5`,
    /// `gpt-5…`, `gpt-oss…`, `chatgpt-4o`, `o1`, `o3` and `o4` are
    /// [`O200kBase`](Self::O200kBase); `gpt-4` (not followed by `o` or `.`), `gpt-3.5…`
    /// and `gpt-35…` are [`Cl100kBase`](Self::Cl100kBase); anything else is
    /// [`Other`](Self::Other) unless an open family's rule claims it (Llama 3, Qwen, DeepSeek
    /// V3, Mistral tekken: the rules and what they leave out are in `models/open_family.rs`).
    /// Case does not matter. Cost: linear in the id's length.
    ///
    /// ```
    /// use tightfit::models::TokenizerFamily;
    /// assert_eq!(TokenizerFamily::for_model_id("openai/gpt-4o-mini"), TokenizerFamily::O200kBase);
    /// assert_eq!(TokenizerFamily::for_model_id("gpt-4-0613"), TokenizerFamily::Cl100kBase);
    /// assert_eq!(TokenizerFamily::for_model_id("claude-sonnet-4-5"), TokenizerFamily::Claude);
    /// assert_eq!(TokenizerFamily::for_model_id("llama-3.3-70b"), TokenizerFamily::Llama3);
    /// assert_eq!(TokenizerFamily::for_model_id("qwen3.5-plus"), TokenizerFamily::Other);
    /// ```
    pub fn for_model_id(id: &str) -> TokenizerFamily {
        let lower = id.to_lowercase();
        let segment = lower.rsplit('/').next().unwrap_or_default();
        let starts: Vec<usize> = std::iter::once(0)
            .chain(
                segment
                    .char_indices()
                    .filter(|&(_, c)| matches!(c, '-' | '.' | '_' | ':'))
                    .map(|(i, c)| i + c.len_utf8()),
            )
            .collect();
        if starts.iter().any(|&s| segment[s..].starts_with("claude")) {
            return TokenizerFamily::Claude;
        }
        for &(family, name, tail) in OPENAI_RULES {
            let found =
                starts.iter().any(|&s| segment[s..].strip_prefix(name).is_some_and(|rest| tail.allows(rest)));
            if found {
                return family;
            }
        }
        super::open_family::open_family(segment, &starts).unwrap_or(TokenizerFamily::Other)
    }

    /// The family's name as written in the table and in override files: `o200k_base`,
    /// `cl100k_base`, `claude`, `llama3`, `qwen`, `deepseek_v3`, `mistral_tekken` or `other`.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenizerFamily::O200kBase => "o200k_base",
            TokenizerFamily::Cl100kBase => "cl100k_base",
            TokenizerFamily::Claude => "claude",
            TokenizerFamily::Llama3 => "llama3",
            TokenizerFamily::Qwen => "qwen",
            TokenizerFamily::DeepSeekV3 => "deepseek_v3",
            TokenizerFamily::MistralTekken => "mistral_tekken",
            TokenizerFamily::Other => "other",
        }
    }

    /// The family named `name` (as [`as_str`](Self::as_str) writes it; case does not
    /// matter), or `None`.
    pub fn from_name(name: &str) -> Option<TokenizerFamily> {
        Self::ALL.into_iter().find(|family| family.as_str().eq_ignore_ascii_case(name))
    }

    /// Every family, in declaration order.
    pub const ALL: [TokenizerFamily; 8] = [
        TokenizerFamily::O200kBase,
        TokenizerFamily::Cl100kBase,
        TokenizerFamily::Claude,
        TokenizerFamily::Llama3,
        TokenizerFamily::Qwen,
        TokenizerFamily::DeepSeekV3,
        TokenizerFamily::MistralTekken,
        TokenizerFamily::Other,
    ];
}

impl fmt::Display for TokenizerFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

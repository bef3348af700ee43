//! The provider prefixes people write before a model name that are not the table's provider
//! ids: LiteLLM's (`gemini/`, `vertex_ai/`, `bedrock/`, `together_ai/`, `ollama/`, …), and
//! how Bedrock and Ollama spell the models they serve.
//!
//! The rules that use these tables are documented on
//! [`Registry::lookup`](super::Registry::lookup).

/// LiteLLM's provider prefixes and the table's providers they stand for, tried in order.
/// A prefix that is itself a provider id of the table (`openai`, `anthropic`, `azure`,
/// `openrouter`, `deepseek`, `mistral`, `xai`, `groq`, `cohere`, `perplexity`, `deepinfra`,
/// `cerebras`, `huggingface`, …) needs no entry: it names that provider already.
pub(super) const LITELLM_PREFIXES: &[(&str, &[&str])] = &[
    ("gemini", &["google"]),
    ("vertex_ai", &["google-vertex", "google-vertex-anthropic"]),
    ("vertex_ai_beta", &["google-vertex", "google-vertex-anthropic"]),
    ("bedrock", &["amazon-bedrock"]),
    ("together_ai", &["togetherai"]),
    ("fireworks_ai", &["fireworks-ai"]),
    ("azure_ai", &["azure", "azure-cognitive-services"]),
    ("cohere_chat", &["cohere"]),
    ("dashscope", &["alibaba"]),
    ("moonshot", &["moonshotai"]),
    ("meta_llama", &["llama"]),
    ("nvidia_nim", &["nvidia"]),
    ("novita", &["novita-ai"]),
    ("friendliai", &["friendli"]),
    ("cloudflare", &["cloudflare-workers-ai"]),
    ("github", &["github-models"]),
    ("github_copilot", &["github-copilot"]),
    ("vercel_ai_gateway", &["vercel"]),
    ("lm_studio", &["lmstudio"]),
];

/// Prefixes of a model run on the caller's own machine: the name after them is the
/// runtime's tag of an open model (`ollama/llama3.1:8b`), whose window is the model's.
pub(super) const LOCAL_PREFIXES: &[&str] = &["ollama", "ollama_chat"];

/// Ollama's own listing in the table, whose ids are Ollama tags (`gpt-oss:20b`).
pub(super) const OLLAMA_PROVIDER: &str = "ollama-cloud";

/// The table's providers a LiteLLM prefix stands for (lower case), if it is one.
pub(super) fn litellm_providers(prefix: &str) -> Option<&'static [&'static str]> {
    LITELLM_PREFIXES.iter().find(|(p, _)| *p == prefix).map(|(_, providers)| *providers)
}

/// LiteLLM's Bedrock route words (`bedrock/converse/…`, `bedrock/invoke/…`), which say how
/// LiteLLM calls the model, not which model it is.
pub(super) fn strip_bedrock_route(rest: &str) -> &str {
    ["converse/", "invoke/"].iter().find_map(|route| rest.strip_prefix(route)).unwrap_or(rest)
}

/// A Bedrock model id without its region and vendor (`us.anthropic.claude-…-v1:0` →
/// `claude-…-v1:0`): the name the maker gives the model, for when Bedrock's own entry is
/// missing. `None` when the id has no such prefix.
pub(super) fn without_bedrock_vendor(id: &str) -> Option<&str> {
    let mut rest = id;
    while let Some((head, tail)) = rest.split_once('.') {
        if head.is_empty() || !head.bytes().all(|b| b.is_ascii_lowercase()) || tail.is_empty() {
            break;
        }
        rest = tail;
    }
    (rest.len() < id.len()).then_some(rest)
}

/// The names an Ollama tag may go by elsewhere, most specific first: `llama3.1:8b` gives
/// `llama3.1-8b`, `llama3.1-8b-instruct`, `llama-3.1-8b`, `llama-3.1-8b-instruct`. A tag
/// without a size (`mistral`, `qwen3:latest`) gives the family's names without one. The
/// variant words after a size (`:8b-instruct-q4_K_M`) are quantizations of the same model
/// and are ignored; a size is never dropped, since another size of a family is another
/// model (`deepseek-r1:7b` is a distilled Qwen, not DeepSeek-R1).
pub(super) fn ollama_names(tag: &str) -> Vec<String> {
    let (base, size) = match tag.split_once(':') {
        Some((base, variant)) => {
            let size = variant.split('-').next().unwrap_or_default();
            let is_size = size.ends_with(['b', 'm', 't']) && size[..size.len() - 1].parse::<f64>().is_ok();
            (base, is_size.then_some(size))
        }
        None => (tag, None),
    };
    let mut bases = vec![base.to_string()];
    let dashed = dash_before_version(base);
    if dashed != base {
        bases.push(dashed);
    }
    let mut names = Vec::new();
    for base in &bases {
        let name = match size {
            Some(size) => format!("{base}-{size}"),
            None => base.clone(),
        };
        names.push(format!("{name}-instruct"));
        names.insert(names.len() - 1, name);
    }
    names
}

/// `llama3.1` → `llama-3.1`, `qwen2.5-coder` → `qwen-2.5-coder`: a `-` between the family
/// word and its version, as most providers write it; the name unchanged when it has none.
fn dash_before_version(name: &str) -> String {
    let letters = name.bytes().take_while(u8::is_ascii_alphabetic).count();
    if letters == 0 || !name[letters..].starts_with(|c: char| c.is_ascii_digit()) {
        return name.to_string();
    }
    format!("{}-{}", &name[..letters], &name[letters..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bedrock_vendor_and_region_are_stripped() {
        assert_eq!(
            without_bedrock_vendor("us.anthropic.claude-3-5-sonnet-20240620-v1:0"),
            Some("claude-3-5-sonnet-20240620-v1:0")
        );
        assert_eq!(
            without_bedrock_vendor("meta.llama3-3-70b-instruct-v1:0"),
            Some("llama3-3-70b-instruct-v1:0")
        );
        assert_eq!(without_bedrock_vendor("claude-3-5-sonnet"), None);
        assert_eq!(without_bedrock_vendor("gpt-4.1"), None);
        assert_eq!(strip_bedrock_route("converse/us.anthropic.claude-x"), "us.anthropic.claude-x");
    }

    #[test]
    fn ollama_tags_become_the_names_providers_use() {
        assert_eq!(
            ollama_names("llama3.1:8b"),
            ["llama3.1-8b", "llama3.1-8b-instruct", "llama-3.1-8b", "llama-3.1-8b-instruct"]
        );
        assert_eq!(ollama_names("gpt-oss:20b-q4_K_M")[0], "gpt-oss-20b");
        assert_eq!(ollama_names("mistral"), ["mistral", "mistral-instruct"]);
        assert_eq!(ollama_names("qwen3:latest"), ["qwen3", "qwen3-instruct", "qwen-3", "qwen-3-instruct"]);
    }
}

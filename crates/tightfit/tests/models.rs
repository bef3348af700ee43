//! The model registry: the embedded table, the lookup rules, override files.

use std::path::PathBuf;

use tightfit::models::{MatchKind, ModelError, OverrideFormat, ProviderChoice, Registry, TokenizerFamily};

fn registry() -> &'static Registry {
    Registry::embedded()
}

/// `(provider, id, how)` of what `name` resolves to.
fn resolved(name: &str) -> (String, String, MatchKind) {
    let found = registry().resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    (found.model.provider.clone(), found.model.id.clone(), found.matched_by)
}

fn suggestions(err: ModelError) -> Vec<String> {
    match err {
        ModelError::Unknown { suggestions, .. } => suggestions,
        other => panic!("expected an unknown model, got {other}"),
    }
}

// ---- the table ----

#[test]
fn gpt_4o_has_a_128k_window_and_o200k() {
    let model = registry().lookup("gpt-4o").unwrap();
    assert_eq!(model.provider, "openai");
    assert_eq!(model.context_window, 128_000);
    assert_eq!(model.max_output, Some(16_384));
    assert_eq!(model.tokenizer, TokenizerFamily::O200kBase);
    assert_eq!(model.prices.input, Some(2.5));
    assert_eq!(model.prices.cached_input, Some(1.25));
    assert_eq!(model.prices.output, Some(10.0));
}

#[test]
fn claude_sonnet_models_have_200k_and_the_claude_tokenizer() {
    for name in ["claude-sonnet-4-5", "claude-3-5-sonnet-20241022"] {
        let model = registry().lookup(name).unwrap();
        assert_eq!(model.provider, "anthropic", "{name}");
        assert_eq!(model.id, name);
        assert_eq!(model.context_window, 200_000, "{name}");
        assert_eq!(model.tokenizer, TokenizerFamily::Claude, "{name}");
    }
}

#[test]
fn gpt_4_is_cl100k_with_an_8k_window() {
    let model = registry().lookup("gpt-4").unwrap();
    assert_eq!((model.provider.as_str(), model.context_window), ("openai", 8192));
    assert_eq!(model.tokenizer, TokenizerFamily::Cl100kBase);
}

#[test]
fn gpt_5_caps_its_prompt_below_the_window() {
    let model = registry().lookup("gpt-5").unwrap();
    assert_eq!(model.context_window, 400_000);
    assert_eq!(model.max_input, Some(272_000));
    assert_eq!(model.input_limit(), 272_000);
    let gpt_4o = registry().lookup("gpt-4o").unwrap();
    assert_eq!(gpt_4o.max_input, None);
    assert_eq!(gpt_4o.input_limit(), 128_000);
}

#[test]
fn the_table_is_sorted_and_holds_only_chat_models_with_a_window() {
    let models: Vec<_> = registry().iter().collect();
    assert!(models.len() > 1000, "only {} models", models.len());
    assert_eq!(models.len(), registry().len());
    assert!(models.windows(2).all(|w| (&w[0].provider, &w[0].id) < (&w[1].provider, &w[1].id)));
    for model in &models {
        assert!(model.context_window > 0, "{}", model.qualified_id());
        let id = model.id.to_lowercase();
        assert!(
            !id.contains("embedding") && !id.contains("whisper") && !id.contains("gpt-image"),
            "{} is not a chat model",
            model.qualified_id()
        );
    }
    assert!(!registry().snapshot_version().is_empty());
}

#[test]
fn every_tokenizer_in_the_table_follows_the_id_rules() {
    // The generator and `TokenizerFamily::for_model_id` implement the same rules.
    for model in registry().iter() {
        assert_eq!(model.tokenizer, TokenizerFamily::for_model_id(&model.id), "{}", model.qualified_id());
    }
}

#[test]
fn tokenizer_family_from_ids() {
    use TokenizerFamily::*;
    for (id, family) in [
        ("gpt-4o", O200kBase),
        ("GPT-4o-mini", O200kBase),
        ("openai/gpt-4.1-nano", O200kBase),
        ("gpt-5.1-codex", O200kBase),
        ("azure-o3-mini", O200kBase),
        ("o1", O200kBase),
        ("openai.gpt-oss-120b-1:0", O200kBase),
        ("chatgpt-4o-latest", O200kBase),
        ("gpt-4", Cl100kBase),
        ("gpt-4-turbo", Cl100kBase),
        ("gpt-4-0613", Cl100kBase),
        ("gpt-3.5-turbo", Cl100kBase),
        ("gpt-35-turbo", Cl100kBase),
        ("anthropic/claude-3.5-sonnet", Claude),
        ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", Claude),
        ("claude-opus-4@20250514", Claude),
        ("deepclaude", Other),
        ("o1x", Other),
        ("gpt-40", Other),
        ("llama-3.3-70b-instruct", Llama3),
        ("llama-4-maverick", Other),
        ("gemini-2.5-pro", Other),
    ] {
        assert_eq!(TokenizerFamily::for_model_id(id), family, "{id}");
    }
}

#[test]
fn tokenizer_family_names() {
    assert_eq!(serde_json::to_string(&TokenizerFamily::O200kBase).unwrap(), "\"o200k_base\"");
    assert_eq!(serde_json::to_string(&TokenizerFamily::Cl100kBase).unwrap(), "\"cl100k_base\"");
    for family in TokenizerFamily::ALL {
        let json = serde_json::to_string(&family).unwrap();
        assert_eq!(json, format!("\"{family}\""));
        assert_eq!(TokenizerFamily::from_name(family.as_str()), Some(family));
    }
    assert_eq!(TokenizerFamily::from_name("gpt2"), None);
}

// ---- lookup rules ----

#[test]
fn exact_ids_ignore_case_and_surrounding_space() {
    assert_eq!(resolved("GPT-4o"), ("openai".into(), "gpt-4o".into(), MatchKind::Id));
    assert_eq!(resolved("  gpt-4o\n"), ("openai".into(), "gpt-4o".into(), MatchKind::Id));
    assert_eq!(registry().get("OpenAI", "GPT-4O").map(|m| m.id.as_str()), Some("gpt-4o"));
    assert!(registry().get("openai", "gpt-4o-banana").is_none());
}

#[test]
fn a_bare_id_of_several_providers_is_the_makers() {
    for (name, maker) in [
        ("gpt-4o", "openai"),
        ("gpt-4.1", "openai"),
        ("o3-mini", "openai"),
        ("claude-sonnet-4-5", "anthropic"),
        ("gemini-2.5-pro", "google"),
        ("deepseek-chat", "deepseek"),
        ("mistral-large-latest", "mistral"),
    ] {
        let holders = registry().iter().filter(|m| m.id == name).count();
        assert!(holders > 1, "{name} is held by {holders} providers: the test proves nothing");
        assert_eq!(resolved(name).0, maker, "{name}");
    }
}

#[test]
fn aliases_resolve_to_the_makers_model() {
    assert_eq!(
        resolved("claude-3-5-sonnet"),
        ("anthropic".into(), "claude-3-5-sonnet-20241022".into(), MatchKind::Alias)
    );
    // github-copilot lists `claude-sonnet-4.5` with a 144k window; the alias of
    // Anthropic's own model wins.
    assert!(registry().get("github-copilot", "claude-sonnet-4.5").is_some());
    let (provider, id, how) = resolved("claude-sonnet-4.5");
    assert_eq!((provider.as_str(), id.as_str(), how), ("anthropic", "claude-sonnet-4-5", MatchKind::Alias));
    assert_eq!(registry().lookup("claude-sonnet-4.5").unwrap().context_window, 200_000);
}

#[test]
fn provider_prefixed_names() {
    assert_eq!(resolved("openai/gpt-4o"), ("openai".into(), "gpt-4o".into(), MatchKind::Id));
    assert_eq!(resolved("azure/gpt-4o"), ("azure".into(), "gpt-4o".into(), MatchKind::Id));
    assert_eq!(
        resolved("anthropic/claude-sonnet-4.5"),
        ("anthropic".into(), "claude-sonnet-4-5".into(), MatchKind::Alias)
    );
    // The provider's own id that contains a slash.
    assert_eq!(
        resolved("openrouter/openai/gpt-4o"),
        ("openrouter".into(), "openai/gpt-4o".into(), MatchKind::Id)
    );
    // An id only aggregators have, written as they write it.
    assert_eq!(
        resolved("openai/gpt-4-1106-preview"),
        ("openrouter".into(), "openai/gpt-4-1106-preview".into(), MatchKind::Id)
    );
    assert_eq!(
        resolved("openai/gpt-4o-2024-08-06"),
        ("openai".into(), "gpt-4o-2024-08-06".into(), MatchKind::Id)
    );
    assert_eq!(resolved("openai/gpt-4-0613"), ("openai".into(), "gpt-4".into(), MatchKind::Snapshot));
}

#[test]
fn the_last_segment_of_an_aggregator_id() {
    // No provider lists bare `gpt-4-1106-preview`; aggregators list `openai/gpt-4-1106-preview`.
    assert!(registry().iter().all(|m| m.id != "gpt-4-1106-preview"));
    let (provider, id, how) = resolved("gpt-4-1106-preview");
    assert_eq!(
        (provider.as_str(), id.as_str(), how),
        ("openrouter", "openai/gpt-4-1106-preview", MatchKind::LastSegment)
    );
    assert_eq!(registry().lookup("gpt-4-1106-preview").unwrap().context_window, 128_000);
}

#[test]
fn dated_snapshots_resolve_by_longest_prefix() {
    for (name, provider, id) in [
        ("gpt-4-0613", "openai", "gpt-4"),
        ("gpt-4-turbo-2024-04-09", "openai", "gpt-4-turbo"),
        ("gpt-3.5-turbo-0125", "openai", "gpt-3.5-turbo"),
        ("o3-mini-2025-01-31", "openai", "o3-mini"),
        // Longest prefix: gpt-4o-mini, not gpt-4o.
        ("gpt-4o-mini-2024-07-18", "openai", "gpt-4o-mini"),
        ("gpt-4o-latest", "openai", "gpt-4o"),
        ("claude-3-5-sonnet-latest", "anthropic", "claude-3-5-sonnet-20241022"),
        ("claude-3-5-sonnet-v2@20241022", "anthropic", "claude-3-5-sonnet-20241022"),
        ("claude-sonnet-4-5-20250929-v1:0", "anthropic", "claude-sonnet-4-5-20250929"),
        // Vertex's spelling: the maker's own model, through the `@` suffix.
        ("claude-sonnet-4-5@20250929", "anthropic", "claude-sonnet-4-5"),
        ("google-vertex/claude-sonnet-4-5@20250929", "google-vertex", "claude-sonnet-4-5@20250929"),
        ("gemini-2.5-flash-001", "google", "gemini-2.5-flash"),
    ] {
        let (p, i, _) = resolved(name);
        assert_eq!((p.as_str(), i.as_str()), (provider, id), "{name}");
    }
    assert_eq!(resolved("gpt-4-0613").2, MatchKind::Snapshot);
    let gpt_4 = registry().lookup("gpt-4-0613").unwrap();
    assert_eq!((gpt_4.context_window, gpt_4.tokenizer), (8192, TokenizerFamily::Cl100kBase));
    let sonnet = registry().lookup("claude-3-5-sonnet-20241022").unwrap();
    assert_eq!(resolved("claude-3-5-sonnet-20241022").2, MatchKind::Id);
    assert_eq!(sonnet.context_window, 200_000);
}

#[test]
fn the_makers_snapshot_beats_another_providers_exact_id() {
    // helicone lists the dated id itself; OpenAI lists only `gpt-4.1-mini`.
    assert!(registry().get("helicone", "gpt-4.1-mini-2025-04-14").is_some());
    assert!(registry().get("openai", "gpt-4.1-mini-2025-04-14").is_none());
    assert_eq!(
        resolved("gpt-4.1-mini-2025-04-14"),
        ("openai".into(), "gpt-4.1-mini".into(), MatchKind::Snapshot)
    );
    // Aggregators list `openai/gpt-4o-mini-2024-07-18`, whose last segment this is.
    assert!(registry().get("openrouter", "openai/gpt-4o-mini-2024-07-18").is_some());
    assert_eq!(
        resolved("gpt-4o-mini-2024-07-18"),
        ("openai".into(), "gpt-4o-mini".into(), MatchKind::Snapshot)
    );
    // Asked by provider, that provider's entry.
    assert_eq!(
        resolved("helicone/gpt-4.1-mini-2025-04-14"),
        ("helicone".into(), "gpt-4.1-mini-2025-04-14".into(), MatchKind::Id)
    );
}

#[test]
fn names_never_match_by_substring() {
    for name in [
        "gpt-4o-banana",
        "gpt-4o-mini-turbo",
        "gpt-4-1106-preview-x",
        "4o",
        "gpt",
        "claude",
        "claude-3-5-sonnet-2024",
        "gpt-4o-20241399",
        "openai/",
        "",
    ] {
        let err = registry().lookup(name).unwrap_err();
        assert!(matches!(err, ModelError::Unknown { .. }), "{name}: {err}");
    }
}

#[test]
fn unknown_models_suggest_close_names() {
    let err = registry().lookup("gpt-4oo").unwrap_err();
    let message = err.to_string();
    assert!(message.starts_with("unknown model \"gpt-4oo\" (did you mean gpt-4o, "), "{message}");
    assert!(message.ends_with("?)"), "{message}");
    let names = suggestions(err);
    assert!((1..=3).contains(&names.len()), "{names:?}");
    for name in &names {
        assert!(registry().lookup(name).is_ok(), "suggested {name} does not resolve");
    }

    let names = suggestions(registry().lookup("claude-sonet-4-5").unwrap_err());
    assert_eq!(names[0], "claude-sonnet-4-5");

    // A known model followed by something that is not a version is named first.
    let names = suggestions(registry().lookup("gpt-4o-banana").unwrap_err());
    assert_eq!(names[0], "gpt-4o");
    assert!(names.len() <= 3);
}

#[test]
fn an_unknown_model_with_nothing_close_has_no_suggestions() {
    let err = registry().lookup("zzzzzzzzzzzzzzzzzzzz").unwrap_err();
    assert_eq!(err.to_string(), "unknown model \"zzzzzzzzzzzzzzzzzzzz\"");
}

#[test]
fn search_is_a_case_insensitive_substring_over_id_name_and_provider() {
    let found = registry().search("GPT-4O-MINI");
    assert!(found.iter().any(|m| m.provider == "openai" && m.id == "gpt-4o-mini"));
    assert!(found.iter().all(|m| {
        let hay = format!("{} {} {} {}", m.id, m.name, m.provider, m.aliases.join(" ")).to_lowercase();
        hay.contains("gpt-4o-mini")
    }));
    let by_provider = registry().search("anthropic");
    assert!(by_provider.iter().any(|m| m.provider == "anthropic"));
    assert!(registry().search("no-such-model-anywhere").is_empty());
    assert_eq!(registry().search("").len(), registry().len());
}

// ---- names people use ----

/// `(provider, id, why)` of what `name` resolves to.
fn chosen(name: &str) -> (String, String, ProviderChoice) {
    let found = registry().resolve(name).unwrap_or_else(|e| panic!("{name}: {e}"));
    (found.model.provider.clone(), found.model.id.clone(), found.chosen_by)
}

#[test]
fn litellm_prefixes_name_providers() {
    use ProviderChoice::*;
    for (name, provider, id, why) in [
        ("gemini/gemini-2.5-pro", "google", "gemini-2.5-pro", Named),
        ("gemini/gemini-3-pro", "google", "gemini-3-pro-preview", Named),
        ("vertex_ai/gemini-2.5-pro", "google-vertex", "gemini-2.5-pro", Named),
        ("vertex_ai/claude-sonnet-4-5@20250929", "google-vertex", "claude-sonnet-4-5@20250929", Named),
        (
            "bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0",
            "amazon-bedrock",
            "anthropic.claude-sonnet-4-5-20250929-v1:0",
            Named,
        ),
        (
            "bedrock/converse/us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            "amazon-bedrock",
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            Named,
        ),
        (
            "together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "togetherai",
            "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            Named,
        ),
        (
            "fireworks_ai/accounts/fireworks/models/gpt-oss-120b",
            "fireworks-ai",
            "accounts/fireworks/models/gpt-oss-120b",
            Named,
        ),
        ("fireworks_ai/gpt-oss-120b", "fireworks-ai", "accounts/fireworks/models/gpt-oss-120b", Named),
        ("groq/llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile", Named),
        ("openai/gpt-4o", "openai", "gpt-4o", Named),
        ("anthropic/claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5", Named),
        ("azure/gpt-4o", "azure", "gpt-4o", Named),
        ("openrouter/anthropic/claude-sonnet-4.5", "openrouter", "anthropic/claude-sonnet-4.5", Named),
        ("deepseek/deepseek-chat", "deepseek", "deepseek-chat", Named),
        ("deepseek/deepseek-reasoner", "deepseek", "deepseek-reasoner", Named),
        ("mistral/mistral-large-latest", "mistral", "mistral-large-latest", Named),
        ("xai/grok-4.3", "xai", "grok-4.3", Named),
        ("dashscope/qwen-max", "alibaba", "qwen-max", Named),
        ("moonshot/kimi-k2.5", "moonshotai", "kimi-k2.5", Named),
        ("meta_llama/llama-3.3-70b-instruct", "llama", "llama-3.3-70b-instruct", Named),
    ] {
        assert_eq!(chosen(name), (provider.into(), id.into(), why), "{name}");
    }
}

#[test]
fn a_prefixed_name_the_provider_lacks_is_the_same_model_elsewhere() {
    // Bedrock's table lacks the June 2024 Sonnet: the maker's entry gives the window.
    assert!(registry().get("amazon-bedrock", "anthropic.claude-3-5-sonnet-20240620-v1:0").is_none());
    let (provider, id, _) = chosen("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0");
    assert_eq!((provider.as_str(), id.as_str()), ("anthropic", "claude-3-5-sonnet-20240620"));
    // xAI's own listing has no grok-3; an aggregator's `xai/grok-3` is that model.
    assert!(registry().get("xai", "grok-3").is_none());
    assert_eq!(chosen("xai/grok-3").1, "xai/grok-3");
}

#[test]
fn ollama_tags_resolve_to_the_models_entry() {
    use ProviderChoice::Local;
    for (name, provider, id) in [
        // the maker's entry, when the maker lists that size
        ("ollama/llama3.3:70b", "llama", "llama-3.3-70b-instruct"),
        ("ollama_chat/qwen3:8b", "alibaba", "qwen3-8b"),
        // else Ollama's own listing of the tag
        ("ollama/gpt-oss:20b", "ollama-cloud", "gpt-oss:20b"),
        // else a host's entry of the same name
        ("ollama/llama3.1:8b", "cerebras", "llama3.1-8b"),
    ] {
        assert_eq!(chosen(name), (provider.into(), id.into(), Local), "{name}");
    }
    // A size is never dropped: the 7b tag is a distilled model, not DeepSeek-R1.
    assert!(registry().lookup("ollama/deepseek-r1:7b").is_err());
}

#[test]
fn a_bare_name_is_the_makers_then_a_hosts_never_a_resellers_first() {
    use ProviderChoice::*;
    // Groq coined this id; abacus and helicone resell it.
    let holders: Vec<&str> = registry()
        .iter()
        .filter(|m| m.id == "llama-3.3-70b-versatile")
        .map(|m| m.provider.as_str())
        .collect();
    assert!(holders.contains(&"abacus") && holders.contains(&"groq"), "{holders:?}");
    assert_eq!(chosen("llama-3.3-70b-versatile"), ("groq".into(), "llama-3.3-70b-versatile".into(), Host));
    // Google lists Gemini 3 Pro only as a preview; a reseller lists `gemini-3-pro`.
    assert!(registry().get("opencode", "gemini-3-pro").is_some());
    assert_eq!(chosen("gemini-3-pro"), ("google".into(), "gemini-3-pro-preview".into(), Maker));
    assert_eq!(registry().resolve("gemini-3-pro").unwrap().matched_by, MatchKind::Preview);
    assert_eq!(chosen("gemini-3-flash").1, "gemini-3-flash-preview");
    for (name, provider) in [
        ("claude-sonnet-4-5", "anthropic"),
        ("claude-opus-4-6", "anthropic"),
        ("gemini-2.5-flash", "google"),
        ("deepseek-chat", "deepseek"),
        ("deepseek-reasoner", "deepseek"),
        ("llama-3.3-70b-instruct", "llama"),
        ("gpt-5.4", "openai"),
        ("grok-4.3", "xai"),
        ("kimi-k2.5", "moonshotai"),
        ("glm-4.6", "zai"),
    ] {
        assert_eq!(chosen(name).0, provider, "{name}");
        assert_eq!(chosen(name).2, Maker, "{name}");
    }
    // Neither the maker nor a host: the preferred aggregator, and it says so.
    assert_eq!(chosen("gpt-4-1106-preview").2, Aggregator);
    // A reseller only when asked.
    assert_eq!(
        chosen("abacus/llama-3.3-70b-versatile"),
        ("abacus".into(), "llama-3.3-70b-versatile".into(), Named)
    );
}

#[test]
fn fine_tunes_have_their_base_models_window() {
    let found = registry().resolve("ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm").unwrap();
    assert_eq!((found.model.provider.as_str(), found.model.id.as_str()), ("openai", "gpt-4.1"));
    assert_eq!(found.matched_by, MatchKind::FineTune);
    assert_eq!(chosen("ft:gpt-4o-mini-2024-07-18:org::abc123").1, "gpt-4o-mini");
}

/// The model names of the shared transcripts' `meta` (`model`, `agent_model`,
/// `user_simulator_model`), as their agents wrote them.
fn transcript_model_names() -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for file in crate::jsonl_files("data").into_iter().chain(crate::jsonl_files("data2")) {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let Some(meta) = record["meta"].as_object() else { continue };
            for (key, value) in meta {
                if key.contains("model") {
                    if let Some(name) = value.as_str() {
                        names.insert(name.to_string());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn the_model_names_of_the_shared_transcripts_resolve_to_their_makers() {
    let names = transcript_model_names();
    assert!(names.len() >= 15, "{names:?}");
    for name in &names {
        let expected: Option<(&str, &str)> = match name.as_str() {
            "claude-3-5-sonnet-20241022" => Some(("anthropic", "claude-3-5-sonnet-20241022")),
            "claude-sonnet-4-20250514" => Some(("anthropic", "claude-sonnet-4-20250514")),
            "claude-sonnet-4-5" => Some(("anthropic", "claude-sonnet-4-5")),
            "claude-opus-4-6" => Some(("anthropic", "claude-opus-4-6")),
            "deepseek/deepseek-chat" => Some(("deepseek", "deepseek-chat")),
            "deepseek/deepseek-reasoner" => Some(("deepseek", "deepseek-reasoner")),
            "gpt-4o" | "openai/gpt-4o" => Some(("openai", "gpt-4o")),
            "gpt-4o-2024-08-06" => Some(("openai", "gpt-4o-2024-08-06")),
            "gpt-4.1" | "gpt-4.1-2025-04-14" | "ft:gpt-4.1-2025-04-14:sierra:tau2-full-sft:BzrYdMNm" => {
                Some(("openai", "gpt-4.1"))
            }
            "gpt-4.1-mini-2025-04-14" => Some(("openai", "gpt-4.1-mini")),
            "gpt-5.4" => Some(("openai", "gpt-5.4")),
            "o3" => Some(("openai", "o3")),
            // OpenAI does not serve its open-weight model; a host does.
            "openai/gpt-oss-120b" => Some(("groq", "openai/gpt-oss-120b")),
            // xAI's own listing has no grok-3: the aggregator entry of that id.
            "xai/grok-3" => Some(("github-models", "xai/grok-3")),
            // A deployment name of OpenHands' own proxy, a typo'd model and a note, not
            // model names: errors that suggest close names.
            "openai/openrouter-llama-4-maverick"
            | "openai/gpt-5-ca"
            | "gpt-3.5-turbo-16k (ChatGPT function calling, per the repo README)" => None,
            other => panic!("a new model name in the transcripts: {other}; add what it should resolve to"),
        };
        match expected {
            Some((provider, id)) => {
                let (p, i, _) = chosen(name);
                assert_eq!((p.as_str(), i.as_str()), (provider, id), "{name}");
            }
            None => assert!(registry().lookup(name).is_err(), "{name} resolves"),
        }
    }
}

#[test]
fn browsing_folds_other_providers_under_the_makers_entry() {
    let rows = registry().browse("claude");
    let entries = registry().search("claude").len();
    assert!(rows.len() * 3 < entries, "{} rows of {entries} entries", rows.len());
    // The maker's rows come first, and claude-sonnet-4-5 is one row with the others folded.
    assert!(rows[0].first_party && rows[0].model.provider == "anthropic", "{:?}", rows[0].model);
    let first_others = rows.iter().position(|r| !r.first_party).unwrap_or(rows.len());
    assert!(rows[first_others..].iter().all(|r| !r.first_party));
    let sonnet: Vec<_> = rows.iter().filter(|r| r.model.id == "claude-sonnet-4-5").collect();
    assert_eq!(sonnet.len(), 1);
    let elsewhere: Vec<String> = sonnet[0].elsewhere.iter().map(|m| m.qualified_id()).collect();
    for folded in ["openrouter/anthropic/claude-sonnet-4.5", "google-vertex/claude-sonnet-4-5@20250929"] {
        assert!(elsewhere.iter().any(|e| e == folded), "{folded} not folded: {elsewhere:?}");
    }
    // Every entry is in exactly one row.
    let listed: usize = rows.iter().map(|r| 1 + r.elsewhere.len()).sum();
    assert_eq!(listed, entries);
    // Browsing a provider lists its own entries, not its models' makers.
    let openrouter = registry().browse("openrouter");
    assert!(openrouter.iter().all(|r| r.model.provider == "openrouter"));
}

// ---- refreshing the table from a models.dev snapshot ----

/// A small models.dev `api.json`: Anthropic with a new model, an embedding model and a
/// dated snapshot; a provider the table does not have.
const SNAPSHOT: &str = r#"{
  "anthropic": {"id": "anthropic", "name": "Anthropic", "models": {
    "claude-sonnet-9": {"id": "claude-sonnet-9", "name": "Claude Sonnet 9",
      "modalities": {"input": ["text", "image"], "output": ["text"]},
      "limit": {"context": 500000, "output": 64000},
      "cost": {"input": 3, "output": 15, "cache_read": 0.30000000000000004, "cache_write": 3.75}},
    "claude-haiku-9-20300101": {"id": "claude-haiku-9-20300101",
      "modalities": {"input": ["text"], "output": ["text"]},
      "limit": {"context": 200000, "input": 150000, "output": 8192}},
    "claude-embed-1": {"id": "claude-embed-1",
      "modalities": {"input": ["text"], "output": ["text"]}, "limit": {"context": 8192}}
  }},
  "acme": {"name": "Acme Cloud", "models": {
    "acme-1": {"id": "acme-1", "modalities": {"input": ["text"], "output": ["text"]},
      "limit": {"context": 32768}},
    "acme-voice": {"id": "acme-voice", "modalities": {"input": ["audio"], "output": ["audio"]},
      "limit": {"context": 4096}}
  }}
}"#;

#[test]
fn a_snapshot_refreshes_its_providers_and_keeps_the_others() {
    let base =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/models.json"))
            .unwrap();
    let refreshed = tightfit::models::refresh_table(&base, SNAPSHOT, Some("9.9.9")).unwrap();
    assert_eq!((refreshed.providers_from_snapshot, refreshed.providers_kept), (2, 131));
    // The licence notice and the layout stay.
    assert!(refreshed
        .text
        .contains(r#""license": "MIT, Copyright (c) 2025 Vladimir Klimontovich; see MODELS_LICENSE","#));
    assert!(refreshed.text.contains(r#""snapshot_version": "9.9.9","#));
    // The lines `scripts/gen_models.py` writes for the same snapshot.
    for line in [
        r#"    {"id":"acme","name":"Acme Cloud","models":["#,
        r#"      {"id":"acme-1","context":32768}"#,
        r#"    {"id":"anthropic","name":"Anthropic","models":["#,
        r#"      {"id":"claude-haiku-9-20300101","context":200000,"max_output":8192,"max_input":150000,"tokenizer":"claude","aliases":["claude-haiku-9"]},"#,
        r#"      {"id":"claude-sonnet-9","name":"Claude Sonnet 9","context":500000,"max_output":64000,"tokenizer":"claude","prices":[3,0.3,3.75,15]}"#,
    ] {
        assert!(refreshed.text.lines().any(|l| l == line), "missing line {line}");
    }

    let new = Registry::from_table_str(&refreshed.text).unwrap();
    assert_eq!(new.snapshot_version(), "9.9.9");
    assert_eq!(new.len(), refreshed.models);
    let sonnet = new.lookup("claude-sonnet-9").unwrap();
    assert_eq!((sonnet.provider.as_str(), sonnet.context_window), ("anthropic", 500_000));
    assert_eq!(sonnet.prices.cached_input, Some(0.3), "float noise is rounded away");
    assert_eq!(sonnet.tokenizer, TokenizerFamily::Claude);
    // Anthropic's dotted alias, and a dated snapshot's undated name.
    assert_eq!(new.lookup("claude-haiku-9").unwrap().id, "claude-haiku-9-20300101");
    assert_eq!(new.lookup("claude-haiku-9").unwrap().max_input, Some(150_000));
    // Anthropic's models the snapshot no longer lists are gone; other providers are kept.
    assert!(new.get("anthropic", "claude-sonnet-4-5").is_none());
    assert!(new.get("openai", "gpt-4o").is_some());
    // A new provider, its chat models only.
    assert_eq!(new.lookup("acme/acme-1").unwrap().context_window, 32_768);
    assert!(new.get("acme", "acme-voice").is_none());
    assert!(new.get("anthropic", "claude-embed-1").is_none());

    // Refreshing again by the same snapshot changes nothing.
    let again = tightfit::models::refresh_table(&refreshed.text, SNAPSHOT, Some("9.9.9")).unwrap();
    assert_eq!(again.text, refreshed.text);
}

#[test]
fn a_bad_snapshot_names_the_provider_and_model() {
    let base =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/models.json"))
            .unwrap();
    let err =
        tightfit::models::refresh_table(&base, r#"{"acme": {"models": {"m": {"name": "no id"}}}}"#, None)
            .unwrap_err();
    assert_eq!(err.to_string(), "invalid models.dev snapshot: acme.models.m: no `id`");
    let err = tightfit::models::refresh_table(&base, "[1]", None).unwrap_err();
    assert!(err.to_string().contains("expected an object of providers"), "{err}");
    let err = tightfit::models::refresh_table("{}", "{}", None).unwrap_err();
    assert_eq!(err.to_string(), "invalid model table: no `providers` list");
}

// ---- override files ----

/// A file in a fresh folder under the system temporary directory.
struct TempFile {
    dir: PathBuf,
    path: PathBuf,
}

impl TempFile {
    fn new(test: &str, file_name: &str, text: &str) -> TempFile {
        let dir = std::env::temp_dir().join(format!("tightfit-models-{}-{test}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(file_name);
        std::fs::write(&path, text).unwrap();
        TempFile { dir, path }
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

const TOML_OVERRIDE: &str = r#"
# Our own deployment, and a smaller window for gpt-4o.
[[model]]
provider = "local"
id = "llama-3.3-70b-q4"
name = "Llama 3.3 70B (q4)"
context_window = 32768
max_output = 4096
aliases = ["llama-local"]
prices = { input = 0.0, output = 0.0 }

[[model]]
provider = "openai"
id = "gpt-4o"
context_window = 64_000
"#;

#[test]
fn a_toml_override_adds_a_model_and_changes_a_window() {
    let file = TempFile::new("toml", "models.toml", TOML_OVERRIDE);
    let custom = registry().with_overrides(&file.path).unwrap();
    assert_eq!(custom.len(), registry().len() + 1);

    let llama = custom.lookup("llama-local").unwrap();
    assert_eq!(llama.qualified_id(), "local/llama-3.3-70b-q4");
    assert_eq!(llama.name, "Llama 3.3 70B (q4)");
    assert_eq!((llama.context_window, llama.max_output), (32_768, Some(4096)));
    assert_eq!(llama.tokenizer, TokenizerFamily::Llama3, "told from the id");
    assert_eq!((llama.prices.input, llama.prices.cached_input), (Some(0.0), None));
    assert_eq!(custom.lookup("local/llama-3.3-70b-q4").unwrap(), llama);

    let gpt_4o = custom.lookup("gpt-4o").unwrap();
    assert_eq!(gpt_4o.context_window, 64_000);
    // What the file does not give is kept.
    assert_eq!(gpt_4o.max_output, Some(16_384));
    assert_eq!(gpt_4o.prices.input, Some(2.5));
    assert_eq!(gpt_4o.name, "GPT-4o");
    // Snapshots follow their base; the embedded table is untouched.
    assert_eq!(custom.lookup("gpt-4o-latest").unwrap().context_window, 64_000);
    assert_eq!(registry().lookup("gpt-4o").unwrap().context_window, 128_000);
    assert!(registry().lookup("llama-local").is_err());
}

#[test]
fn a_json_override_adds_a_model_and_changes_a_window() {
    let text = r#"{"model": [
        {"provider": "local", "id": "gpt-4o-finetune-support", "context_window": 128000,
         "prices": {"input": 3.75, "cached_input": 1.875, "output": 15}},
        {"provider": "anthropic", "id": "claude-sonnet-4-5", "context_window": 1000000, "max_output": 32000}
    ]}"#;
    let file = TempFile::new("json", "models.json", text);
    let custom = registry().with_overrides(&file.path).unwrap();

    let tuned = custom.lookup("gpt-4o-finetune-support").unwrap();
    assert_eq!(tuned.provider, "local");
    // The tokenizer of a new model without one comes from its id.
    assert_eq!(tuned.tokenizer, TokenizerFamily::O200kBase);
    assert_eq!(tuned.prices.cached_input, Some(1.875));
    assert_eq!(tuned.prices.output, Some(15.0));

    let sonnet = custom.lookup("claude-sonnet-4.5").unwrap();
    assert_eq!(
        (sonnet.id.as_str(), sonnet.context_window, sonnet.max_output),
        ("claude-sonnet-4-5", 1_000_000, Some(32_000))
    );
    assert_eq!(sonnet.tokenizer, TokenizerFamily::Claude);
}

#[test]
fn override_format_is_guessed_without_a_known_extension() {
    let json = TempFile::new(
        "guess-json",
        "models.conf",
        r#"{"models": [{"provider": "openai", "id": "gpt-4", "context_window": 4096}]}"#,
    );
    let custom = registry().with_overrides(&json.path).unwrap();
    assert_eq!(custom.lookup("gpt-4").unwrap().context_window, 4096);
    let toml = TempFile::new(
        "guess-toml",
        "models",
        "[[model]]\nprovider = \"openai\"\nid = \"gpt-4\"\nmax_output = 1000\n",
    );
    let custom = registry().with_overrides(&toml.path).unwrap();
    assert_eq!(custom.lookup("gpt-4").unwrap().max_output, Some(1000));
}

#[test]
fn override_models_win_over_the_table() {
    let text = "[[model]]\nprovider = \"my-proxy\"\nid = \"gpt-4o\"\ncontext_window = 50000\n";
    let custom = registry().with_override_str(text, OverrideFormat::Toml).unwrap();
    let found = custom.lookup("gpt-4o").unwrap();
    assert_eq!((found.provider.as_str(), found.context_window), ("my-proxy", 50_000));
    // Other providers' entries are still reachable by prefix.
    assert_eq!(custom.lookup("openai/gpt-4o").unwrap().context_window, 128_000);
}

#[test]
fn an_empty_override_changes_nothing() {
    let custom = registry().with_override_str("", OverrideFormat::Toml).unwrap();
    assert_eq!(custom.len(), registry().len());
    assert_eq!(custom.lookup("gpt-4o").unwrap(), registry().lookup("gpt-4o").unwrap());
}

/// The reason of a rejected override text.
fn override_error(text: &str, format: OverrideFormat) -> String {
    match registry().with_override_str(text, format) {
        Err(ModelError::Override { reason }) => reason,
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("accepted:\n{text}"),
    }
}

#[test]
fn a_bad_override_names_the_key() {
    use OverrideFormat::{Json, Toml};
    let cases: &[(&str, OverrideFormat, &str)] = &[
        (
            "[[model]]\nprovider = \"openai\"\nid = \"gpt-4o\"\ncontext_window = \"big\"\n",
            Toml,
            "model[0].context_window: expected a positive integer, found \"big\"",
        ),
        (
            "[[model]]\nprovider = \"openai\"\nid = \"gpt-4o\"\ncontxt_window = 1000\n",
            Toml,
            "model[0].contxt_window: unknown key (did you mean context_window?)",
        ),
        (
            "[[model]]\nprovider = \"openai\"\nid = \"gpt-4o\"\n\n[[model]]\nprovider = \"local\"\nid = \"new\"\nmax_output = 10\n",
            Toml,
            "model[1].context_window: missing",
        ),
        (
            "[[model]]\nid = \"gpt-4o\"\ncontext_window = 1000\n",
            Toml,
            "model[0].provider: missing",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "prices": {"inpt": 1}}]}"#,
            Json,
            "model[0].prices.inpt: unknown key (did you mean input?)",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "prices": {"input": -1}}]}"#,
            Json,
            "model[0].prices.input: expected a price",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "tokenizer": "gpt2"}]}"#,
            Json,
            "model[0].tokenizer: expected one of o200k_base, cl100k_base, claude, llama3, qwen, deepseek_v3, mistral_tekken, other, found \"gpt2\"",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "context_window": 0}]}"#,
            Json,
            "model[0].context_window: expected a positive integer, found 0",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "max_input": 200000}]}"#,
            Json,
            "model[0].max_input: 200000 is larger than the context window (128000)",
        ),
        (
            r#"{"model": [{"provider": "a/b", "id": "x", "context_window": 1}]}"#,
            Json,
            "model[0].provider: must not contain",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "aliases": ["x", 3]}]}"#,
            Json,
            "model[0].aliases[1]: expected a string, found 3",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o", "aliases": ["gpt-4o-mini"]}]}"#,
            Json,
            "model[0].aliases[0]: \"gpt-4o-mini\" is already a name of openai/gpt-4o-mini",
        ),
        (
            r#"{"model": [{"provider": "local", "id": "a", "context_window": 1, "aliases": ["b"]},
                {"provider": "local", "id": "b", "context_window": 1}]}"#,
            Json,
            "model[1].id: \"b\" is already a name of local/a",
        ),
        (
            r#"{"model": [{"provider": "openai", "id": "gpt-4o"}, {"provider": "OpenAI", "id": "GPT-4o"}]}"#,
            Json,
            "model[1]: OpenAI/GPT-4o is already given by model[0]",
        ),
        (r#"{"model": {"provider": "openai"}}"#, Json, "model: expected a list of tables"),
        (r#"{"modle": []}"#, Json, "modle: unknown key (did you mean model?)"),
        (r#"[1, 2]"#, Json, "top level: expected a table"),
    ];
    for (text, format, expected) in cases {
        let reason = override_error(text, *format);
        assert!(reason.starts_with(expected), "got {reason:?}, expected {expected:?}");
    }
}

#[test]
fn a_bad_override_file_names_the_file_and_the_key() {
    let file = TempFile::new(
        "bad",
        "models.toml",
        "[[model]]\nprovider = \"openai\"\nid = \"gpt-4o\"\ncontext_window = \"big\"\n",
    );
    let err = registry().with_overrides(&file.path).unwrap_err();
    let ModelError::OverrideFile { path, reason } = &err else {
        panic!("unexpected error {err}");
    };
    assert_eq!(path, &file.path);
    assert!(reason.starts_with("model[0].context_window: "), "{reason}");
    assert_eq!(
        err.to_string(),
        format!(
            "model override file {}: model[0].context_window: expected a positive integer, found \"big\"",
            file.path.display()
        )
    );
}

#[test]
fn override_syntax_errors_say_where() {
    let reason = override_error("[[model]\nprovider = \"openai\"\n", OverrideFormat::Toml);
    assert!(reason.contains("line 1"), "{reason}");
    let reason = override_error("{\"model\": [}", OverrideFormat::Json);
    assert!(reason.contains("line 1 column"), "{reason}");
}

#[test]
fn a_missing_override_file_is_a_read_error() {
    let path = std::env::temp_dir().join(format!("tightfit-models-{}-missing.toml", std::process::id()));
    let err = registry().with_overrides(&path).unwrap_err();
    assert!(matches!(err, ModelError::ReadOverride { .. }), "{err}");
    assert!(err.to_string().starts_with("cannot read model override file "));
}

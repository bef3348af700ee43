//! User override files: models added to the table or changed in it.
//!
//! The text is read into a generic value first and checked key by key, so that every
//! error names the key that is wrong (`model[1].context_window`), whether the file is
//! TOML or JSON.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::{ModelInfo, OverrideFormat, Prices, Registry, TokenizerFamily};

/// The keys of one `[[model]]` entry, in the order the documentation gives them.
const MODEL_KEYS: &[&str] = &[
    "provider",
    "id",
    "name",
    "context_window",
    "max_output",
    "max_input",
    "tokenizer",
    "prices",
    "aliases",
];

/// The keys of a `prices` table.
const PRICE_KEYS: &[&str] = &["input", "cached_input", "cache_write", "output"];

/// One entry of an override file, checked.
#[derive(Debug, Default)]
struct Entry {
    provider: String,
    id: String,
    name: Option<String>,
    context_window: Option<u64>,
    max_output: Option<u64>,
    max_input: Option<u64>,
    tokenizer: Option<TokenizerFamily>,
    prices: [Option<f64>; 4],
    aliases: Vec<String>,
}

/// Reads override text and applies it to a copy of `base`'s models.
///
/// Returns the models with, for each, whether an override added or changed it.
pub(super) fn apply(
    base: &Registry,
    text: &str,
    format: OverrideFormat,
) -> Result<Vec<(ModelInfo, bool)>, String> {
    let value: Value = match format {
        OverrideFormat::Toml => toml::from_str(text).map_err(|e| e.to_string().trim().to_string())?,
        OverrideFormat::Json => serde_json::from_str(text).map_err(|e| e.to_string())?,
    };
    let entries = read_entries(&value)?;
    let mut models: Vec<(ModelInfo, bool)> =
        base.models.iter().cloned().zip(base.from_override.iter().copied()).collect();
    let mut names = Names::of(&models);
    let mut given: HashMap<(String, String), usize> = HashMap::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let key = key(&entry.provider, &entry.id);
        if let Some(first) = given.get(&key) {
            return Err(format!(
                "model[{index}]: {}/{} is already given by model[{first}]",
                entry.provider, entry.id
            ));
        }
        given.insert(key, index);
        merge(&mut models, &mut names, entry, index)?;
    }
    Ok(models)
}

/// A provider and a model name, compared without case.
fn key(provider: &str, name: &str) -> (String, String) {
    (provider.to_ascii_lowercase(), name.to_ascii_lowercase())
}

/// Where each model and each name is, so that merging n entries into the table costs n
/// lookups, not n scans of the table (a file of 32,000 entries took 10 s).
struct Names {
    /// (provider, id) → the model's position.
    models: HashMap<(String, String), usize>,
    /// (provider, id or alias) → the position of the model it names.
    names: HashMap<(String, String), usize>,
    /// A provider's spelling in the table, by its lowercase form.
    providers: HashMap<String, String>,
}

impl Names {
    fn of(models: &[(ModelInfo, bool)]) -> Names {
        let mut names = Names { models: HashMap::new(), names: HashMap::new(), providers: HashMap::new() };
        for (at, (model, _)) in models.iter().enumerate() {
            names.add(model, at);
        }
        names
    }

    fn add(&mut self, model: &ModelInfo, at: usize) {
        self.models.entry(key(&model.provider, &model.id)).or_insert(at);
        self.providers.entry(model.provider.to_ascii_lowercase()).or_insert_with(|| model.provider.clone());
        for name in std::iter::once(&model.id).chain(&model.aliases) {
            self.names.entry(key(&model.provider, name)).or_insert(at);
        }
    }
}

/// Adds `entry` to `models`, or changes the model it names.
fn merge(
    models: &mut Vec<(ModelInfo, bool)>,
    names: &mut Names,
    entry: Entry,
    index: usize,
) -> Result<(), String> {
    check_names(models, names, &entry, index)?;
    let existing = names.models.get(&key(&entry.provider, &entry.id)).copied();
    let at = existing.unwrap_or(models.len());
    let (model, from_override) = match existing {
        Some(i) => &mut models[i],
        None => {
            let Some(context_window) = entry.context_window else {
                return Err(format!(
                    "model[{index}].context_window: missing (required to add a model: {}/{} is not in the table)",
                    entry.provider, entry.id
                ));
            };
            // Keep the spelling of a provider the table already has.
            let provider = names
                .providers
                .get(&entry.provider.to_ascii_lowercase())
                .cloned()
                .unwrap_or_else(|| entry.provider.clone());
            models.push((
                ModelInfo {
                    tokenizer: TokenizerFamily::for_model_id(&entry.id),
                    name: entry.id.clone(),
                    id: entry.id.clone(),
                    provider,
                    context_window,
                    max_output: None,
                    max_input: None,
                    prices: Prices::default(),
                    aliases: Vec::new(),
                },
                true,
            ));
            let pushed = models.last_mut().expect("a model was just pushed");
            names.add(&pushed.0, at);
            pushed
        }
    };
    *from_override = true;
    if let Some(name) = entry.name {
        model.name = name;
    }
    if let Some(context_window) = entry.context_window {
        model.context_window = context_window;
    }
    if let Some(max_output) = entry.max_output {
        model.max_output = Some(max_output);
    }
    if let Some(max_input) = entry.max_input {
        if max_input > model.context_window {
            return Err(format!(
                "model[{index}].max_input: {max_input} is larger than the context window ({})",
                model.context_window
            ));
        }
        model.max_input = Some(max_input);
    }
    // A limit inherited from the table that the new window makes meaningless is dropped.
    if model.max_input.is_some_and(|m| m >= model.context_window) {
        model.max_input = None;
    }
    if let Some(tokenizer) = entry.tokenizer {
        model.tokenizer = tokenizer;
    }
    let [input, cached_input, cache_write, output] = entry.prices;
    let prices = &mut model.prices;
    for (slot, value) in [
        (&mut prices.input, input),
        (&mut prices.cached_input, cached_input),
        (&mut prices.cache_write, cache_write),
        (&mut prices.output, output),
    ] {
        if value.is_some() {
            *slot = value;
        }
    }
    for (a, alias) in entry.aliases.into_iter().enumerate() {
        if alias.eq_ignore_ascii_case(&model.id) {
            return Err(format!("model[{index}].aliases[{a}]: \"{alias}\" is the model's own id"));
        }
        if !model.aliases.iter().any(|x| x.eq_ignore_ascii_case(&alias)) {
            names.names.entry(key(&model.provider, &alias)).or_insert(at);
            model.aliases.push(alias);
        }
    }
    Ok(())
}

/// An id or alias given by an override must not be a name of another model of the
/// same provider. (The table itself has no such clashes.)
fn check_names(
    models: &[(ModelInfo, bool)],
    names: &Names,
    entry: &Entry,
    index: usize,
) -> Result<(), String> {
    let own = names.models.get(&key(&entry.provider, &entry.id)).copied();
    // the model another name of the provider belongs to, if not the entry's own
    let other = |name: &str| {
        names
            .names
            .get(&key(&entry.provider, name))
            .copied()
            .filter(|&at| Some(at) != own)
            .map(|at| &models[at].0)
    };
    if let Some(other) = other(&entry.id) {
        return Err(format!(
            "model[{index}].id: \"{}\" is already a name of {}/{}",
            entry.id, other.provider, other.id
        ));
    }
    for (a, alias) in entry.aliases.iter().enumerate() {
        if let Some(other) = other(alias) {
            return Err(format!(
                "model[{index}].aliases[{a}]: \"{alias}\" is already a name of {}/{}",
                other.provider, other.id
            ));
        }
    }
    Ok(())
}

fn read_entries(value: &Value) -> Result<Vec<Entry>, String> {
    let Value::Object(top) = value else {
        return Err(format!("top level: expected a table with a `model` list, found {}", describe(value)));
    };
    let mut list = None;
    for (key, item) in top {
        match key.as_str() {
            "model" | "models" if list.is_none() => list = Some((key, item)),
            "model" | "models" => return Err(format!("{key}: give either `model` or `models`, not both")),
            _ => return Err(unknown_key(key, &["model"])),
        }
    }
    let Some((key, list)) = list else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = list else {
        return Err(format!("{key}: expected a list of tables, found {}", describe(list)));
    };
    items.iter().enumerate().map(|(i, item)| read_entry(item, &format!("{key}[{i}]"))).collect()
}

fn read_entry(value: &Value, path: &str) -> Result<Entry, String> {
    let Value::Object(table) = value else {
        return Err(format!("{path}: expected a table, found {}", describe(value)));
    };
    let mut entry = Entry::default();
    for (key, item) in table {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "provider" => entry.provider = text(item, &at)?,
            "id" => entry.id = text(item, &at)?,
            "name" => entry.name = Some(text(item, &at)?),
            "context_window" => entry.context_window = Some(positive(item, &at)?),
            "max_output" => entry.max_output = Some(positive(item, &at)?),
            "max_input" => entry.max_input = Some(positive(item, &at)?),
            "tokenizer" => entry.tokenizer = Some(tokenizer(item, &at)?),
            "prices" => entry.prices = prices(item, &at)?,
            "aliases" => entry.aliases = aliases(item, &at)?,
            _ => return Err(unknown_key(&at, MODEL_KEYS)),
        }
    }
    for key in ["provider", "id"] {
        if !table.contains_key(key) {
            return Err(format!("{path}.{key}: missing"));
        }
    }
    if entry.provider.contains('/') {
        return Err(format!("{path}.provider: must not contain \"/\""));
    }
    Ok(entry)
}

fn text(value: &Value, at: &str) -> Result<String, String> {
    match value {
        Value::String(s) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Value::String(_) => Err(format!("{at}: must not be empty")),
        _ => Err(format!("{at}: expected a string, found {}", describe(value))),
    }
}

fn positive(value: &Value, at: &str) -> Result<u64, String> {
    match value.as_u64() {
        Some(n) if n > 0 => Ok(n),
        _ => Err(format!("{at}: expected a positive integer, found {}", describe(value))),
    }
}

fn tokenizer(value: &Value, at: &str) -> Result<TokenizerFamily, String> {
    let names = TokenizerFamily::ALL.map(TokenizerFamily::as_str).join(", ");
    value
        .as_str()
        .and_then(TokenizerFamily::from_name)
        .ok_or_else(|| format!("{at}: expected one of {names}, found {}", describe(value)))
}

fn prices(value: &Value, at: &str) -> Result<[Option<f64>; 4], String> {
    let Value::Object(table) = value else {
        return Err(format!("{at}: expected a table, found {}", describe(value)));
    };
    let mut prices = [None; 4];
    for (key, item) in table as &Map<String, Value> {
        let at = format!("{at}.{key}");
        let Some(slot) = PRICE_KEYS.iter().position(|k| k == key) else {
            return Err(unknown_key(&at, PRICE_KEYS));
        };
        match item.as_f64() {
            Some(price) if price >= 0.0 && price.is_finite() => prices[slot] = Some(price),
            _ => {
                let found = describe(item);
                return Err(format!(
                    "{at}: expected a price (USD per million tokens, 0 or more), found {found}"
                ));
            }
        }
    }
    Ok(prices)
}

fn aliases(value: &Value, at: &str) -> Result<Vec<String>, String> {
    let Value::Array(items) = value else {
        return Err(format!("{at}: expected a list of strings, found {}", describe(value)));
    };
    items.iter().enumerate().map(|(i, item)| text(item, &format!("{at}[{i}]"))).collect()
}

/// `path: unknown key`, with the closest known key or the list of them.
fn unknown_key(path: &str, known: &[&str]) -> String {
    let key = path.rsplit('.').next().unwrap_or(path);
    let closest = known.iter().map(|k| (strsim::levenshtein(key, k), *k)).min().filter(|&(d, _)| d <= 3);
    match closest {
        Some((_, k)) => format!("{path}: unknown key (did you mean {k}?)"),
        None => format!("{path}: unknown key (expected {})", known.join(", ")),
    }
}

/// A value as the error message shows it: short, in JSON syntax.
fn describe(value: &Value) -> String {
    let shown = match value {
        Value::Object(_) => return "a table".to_string(),
        Value::Array(_) => return "a list".to_string(),
        other => other.to_string(),
    };
    if shown.chars().count() > 40 {
        let cut: String = shown.chars().take(40).collect();
        format!("{cut}…")
    } else {
        shown
    }
}

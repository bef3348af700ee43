//! `tightfit models [QUERY]`: list the models of the registry; `tightfit models --refresh
//! SNAPSHOT`: write a table refreshed from a newer models.dev snapshot.

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;
use tightfit::models::{Listing, ModelInfo, Registry};

/// How rows are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One row per model: other providers' entries of it folded into the row of the entry
    /// its bare name resolves to, the maker's own rows first.
    Folded,
    /// One row per provider entry, in table order.
    Entries,
}

/// Writes the models matching `query` (all without one) to `out`: a table for people,
/// or with `json` one JSON object per line.
///
/// The query is a case-insensitive substring of the id, name, provider or an alias.
/// When nothing contains it, it is looked up as a model name (so a dated snapshot like
/// `gpt-4o-2024-08-06` shows the model it resolves to); when that fails too, the lookup
/// error, with its suggestions, is returned. Under the table, a line says which model
/// the query stands for when given as `--model`, and why that provider's entry.
pub fn run(
    registry: &Registry,
    query: Option<&str>,
    json: bool,
    layout: Layout,
    out: &mut impl Write,
) -> anyhow::Result<()> {
    let resolved = query.and_then(|q| registry.resolve(q).ok());
    let mut rows: Vec<Listing<'_>> = match layout {
        Layout::Folded => registry.browse(query.unwrap_or_default()),
        Layout::Entries => registry.search(query.unwrap_or_default()).into_iter().map(unfolded).collect(),
    };
    if rows.is_empty() {
        if let Some(query) = query {
            rows.push(unfolded(registry.lookup(query)?));
        }
    }
    if json {
        for row in &rows {
            let mut value = serde_json::to_value(row.model)?;
            if let (Value::Object(map), Layout::Folded) = (&mut value, layout) {
                map.insert("first_party".into(), row.first_party.into());
                let also: Vec<String> = row.elsewhere.iter().map(|m| m.qualified_id()).collect();
                map.insert("also_at".into(), also.into());
            }
            serde_json::to_writer(&mut *out, &value)?;
            out.write_all(b"\n")?;
        }
    } else {
        write_table(&rows, layout, out)?;
        if let (Some(query), Some(found)) = (query, resolved) {
            writeln!(
                out,
                "--model {} resolves to {} ({})",
                query.trim(),
                found.model.qualified_id(),
                found.chosen_by
            )?;
        }
    }
    out.flush()?;
    Ok(())
}

/// A row of one entry.
fn unfolded(model: &ModelInfo) -> Listing<'_> {
    Listing::single(model)
}

const HEADERS: [&str; 9] = [
    "PROVIDER",
    "ID",
    "CONTEXT",
    "MAX OUTPUT",
    "TOKENIZER",
    "INPUT $/M",
    "CACHED $/M",
    "OUTPUT $/M",
    "ALSO AT",
];

/// How many other providers the `ALSO AT` column names before `+N`.
const ALSO_AT_SHOWN: usize = 3;

/// Columns from `CONTEXT` to `OUTPUT $/M` hold numbers and are aligned right, except
/// `TOKENIZER`.
fn right_aligned(column: usize) -> bool {
    (2..=7).contains(&column) && column != 4
}

fn write_table(rows: &[Listing<'_>], layout: Layout, out: &mut impl Write) -> std::io::Result<()> {
    let columns = if layout == Layout::Folded { HEADERS.len() } else { HEADERS.len() - 1 };
    let cells: Vec<Vec<String>> = rows.iter().map(|r| row(r)[..columns].to_vec()).collect();
    let mut widths: Vec<usize> = HEADERS[..columns].iter().map(|h| h.len()).collect();
    for row in &cells {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = HEADERS[..columns].iter().map(|h| h.to_string()).collect();
    for row in std::iter::once(&header).chain(&cells) {
        let mut line = String::new();
        for (column, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if column > 0 {
                line.push_str("  ");
            }
            if right_aligned(column) {
                line.push_str(&format!("{cell:>width$}"));
            } else {
                line.push_str(&format!("{cell:<width$}"));
            }
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    let entries: usize = rows.iter().map(|r| 1 + r.elsewhere.len()).sum();
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    if layout == Layout::Folded && entries > rows.len() {
        writeln!(
            out,
            "{} model{} ({entries} provider entries; --all lists each); prices in USD per million tokens, - where unknown",
            rows.len(),
            plural(rows.len()),
        )
    } else {
        writeln!(
            out,
            "{} model{}; prices in USD per million tokens, - where unknown",
            rows.len(),
            plural(rows.len())
        )
    }
}

fn row(listing: &Listing<'_>) -> [String; 9] {
    let model = listing.model;
    let price = |p: Option<f64>| p.map_or_else(|| "-".to_string(), |p| p.to_string());
    let mut providers: Vec<&str> = Vec::new();
    for other in &listing.elsewhere {
        if !providers.contains(&other.provider.as_str()) {
            providers.push(&other.provider);
        }
    }
    let mut also = providers.iter().take(ALSO_AT_SHOWN).copied().collect::<Vec<_>>().join(", ");
    if providers.len() > ALSO_AT_SHOWN {
        also.push_str(&format!(" +{}", providers.len() - ALSO_AT_SHOWN));
    }
    [
        model.provider.clone(),
        model.id.clone(),
        model.context_window.to_string(),
        model.max_output.map_or_else(|| "-".to_string(), |n| n.to_string()),
        model.tokenizer.to_string(),
        price(model.prices.input),
        price(model.prices.cached_input),
        price(model.prices.output),
        also,
    ]
}

/// The text of `path` when it is a whole model table (as `--refresh` writes it) rather than
/// an override file.
pub fn table_file(path: &Path) -> anyhow::Result<Option<String>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(Registry::is_table_text(&text).then_some(text))
}

/// `tightfit models --refresh SNAPSHOT`: the table (`models_file` when it is a whole table,
/// else the embedded one) with the snapshot's providers rebuilt, to `output` or standard
/// output; a line on standard error says what changed.
pub fn refresh(
    models_file: Option<&Path>,
    snapshot: &Path,
    version: Option<&str>,
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let base = match models_file {
        Some(path) => table_file(path)?.with_context(|| {
            format!("{} is an override file, not a table: --refresh merges into a table", path.display())
        })?,
        None => tightfit::models::embedded_table().to_string(),
    };
    let text =
        std::fs::read_to_string(snapshot).with_context(|| format!("cannot read {}", snapshot.display()))?;
    let refreshed = tightfit::models::refresh_table(&base, &text, version)
        .with_context(|| format!("{}", snapshot.display()))?;
    match output {
        Some(path) => std::fs::write(path, &refreshed.text)
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(refreshed.text.as_bytes())?;
            out.flush()?;
        }
    }
    eprintln!(
        "{} models: {} providers from {}, {} kept",
        refreshed.models,
        refreshed.providers_from_snapshot,
        snapshot.display(),
        refreshed.providers_kept
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(query: Option<&str>, json: bool) -> String {
        let mut out = Vec::new();
        run(Registry::embedded(), query, json, Layout::Folded, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn table_has_a_header_aligned_columns_and_a_count() {
        let text = output(Some("claude-sonnet-4-5"), false);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("PROVIDER"), "{text}");
        assert!(lines[0].contains("CONTEXT") && lines[0].contains("CACHED $/M"));
        let anthropic = lines
            .iter()
            .find(|l| l.starts_with("anthropic ") && l.contains(" claude-sonnet-4-5 "))
            .expect("anthropic's claude-sonnet-4-5 is listed");
        assert!(anthropic.contains(" 200000 "), "{anthropic}");
        assert!(anthropic.contains(" claude "), "{anthropic}");
        // The context column ends at the same place on every line.
        let end = lines[0].find("CONTEXT").unwrap() + "CONTEXT".len();
        let widths: Vec<usize> =
            lines[1..lines.len() - 2].iter().map(|l| l[..end].trim_end().len()).collect();
        assert!(widths.iter().all(|&w| w == end), "{text}");
        let count = lines.len() - 3;
        assert!(lines[count + 1].starts_with(&format!("{count} models")), "{text}");
        assert_eq!(
            lines[count + 2],
            "--model claude-sonnet-4-5 resolves to anthropic/claude-sonnet-4-5 (the maker's own entry)"
        );
        // The maker's row comes first, with the other providers folded into it.
        assert!(lines[1].starts_with("anthropic ") && lines[1].contains(" claude-sonnet-4-5 "), "{text}");
        assert!(lines[1].contains("+"), "other providers are named in ALSO AT: {}", lines[1]);
        assert!(lines[count + 1].contains("provider entries; --all lists each"), "{text}");
    }

    #[test]
    fn all_lists_every_entry_and_folded_json_says_where_else() {
        let mut out = Vec::new();
        run(Registry::embedded(), Some("llama-3.3-70b-versatile"), false, Layout::Entries, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.lines().nth(1).unwrap().starts_with("abacus "), "table order: {text}");
        assert!(text.contains("3 models;"), "{text}");
        assert!(text.ends_with("resolves to groq/llama-3.3-70b-versatile (a host serving it under this name; the maker does not list it)\n"), "{text}");

        let json = output(Some("llama-3.3-70b-versatile"), true);
        let rows: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(rows.len(), 1, "{json}");
        assert_eq!(rows[0]["provider"], "groq");
        assert_eq!(rows[0]["first_party"], false);
        assert_eq!(
            rows[0]["also_at"],
            serde_json::json!(["abacus/llama-3.3-70b-versatile", "helicone/llama-3.3-70b-versatile"])
        );
    }

    #[test]
    fn json_lines_are_model_objects() {
        let text = output(Some("openai"), true);
        let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        for key in ["id", "provider", "context_window", "max_output", "tokenizer", "prices"] {
            assert!(first.get(key).is_some(), "{key} missing from {first}");
        }
        let gpt_4o = text
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .find(|v| v["provider"] == "openai" && v["id"] == "gpt-4o")
            .expect("openai/gpt-4o is listed");
        assert_eq!(gpt_4o["context_window"], 128000);
        assert_eq!(gpt_4o["tokenizer"], "o200k_base");
        assert_eq!(gpt_4o["prices"]["input"], 2.5);
    }

    #[test]
    fn a_dated_snapshot_shows_the_model_it_resolves_to() {
        let text = output(Some("gpt-4-0613"), false);
        assert!(text.lines().any(|l| l.starts_with("openai ") && l.contains(" gpt-4 ")), "{text}");
    }

    #[test]
    fn no_match_is_an_error_with_suggestions() {
        let mut out = Vec::new();
        let err = run(Registry::embedded(), Some("gpt-4oo"), false, Layout::Folded, &mut out).unwrap_err();
        assert!(err.to_string().contains("did you mean gpt-4o"), "{err}");
        assert!(out.is_empty());
    }
}

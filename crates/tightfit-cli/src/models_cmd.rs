//! `tightfit models [QUERY]`: list the models of the registry.

use std::io::Write;

use tightfit::models::{ModelInfo, Registry};

/// Writes the models matching `query` (all without one) to `out`: a table for people,
/// or with `json` one JSON object per line.
///
/// The query is a case-insensitive substring of the id, name, provider or an alias.
/// When nothing contains it, it is looked up as a model name (so a dated snapshot like
/// `gpt-4o-2024-08-06` shows the model it resolves to); when that fails too, the lookup
/// error, with its suggestions, is returned. Under the table, a line says which model
/// the query stands for when given as `--model`.
pub fn run(registry: &Registry, query: Option<&str>, json: bool, out: &mut impl Write) -> anyhow::Result<()> {
    let resolved = query.and_then(|q| registry.lookup(q).ok());
    let mut models = match query {
        Some(query) => registry.search(query),
        None => registry.iter().collect(),
    };
    if models.is_empty() {
        if let Some(query) = query {
            models.push(registry.lookup(query)?);
        }
    }
    if json {
        for model in models {
            serde_json::to_writer(&mut *out, model)?;
            out.write_all(b"\n")?;
        }
    } else {
        write_table(&models, out)?;
        if let (Some(query), Some(model)) = (query, resolved) {
            writeln!(out, "--model {} resolves to {}", query.trim(), model.qualified_id())?;
        }
    }
    out.flush()?;
    Ok(())
}

const HEADERS: [&str; 8] =
    ["PROVIDER", "ID", "CONTEXT", "MAX OUTPUT", "TOKENIZER", "INPUT $/M", "CACHED $/M", "OUTPUT $/M"];

/// Columns from `CONTEXT` on hold numbers and are aligned right, except `TOKENIZER`.
fn right_aligned(column: usize) -> bool {
    column >= 2 && column != 4
}

fn write_table(models: &[&ModelInfo], out: &mut impl Write) -> std::io::Result<()> {
    let rows: Vec<[String; 8]> = models.iter().map(|m| row(m)).collect();
    let mut widths = HEADERS.map(str::len);
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header = HEADERS.map(String::from);
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (column, (cell, width)) in row.iter().zip(widths).enumerate() {
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
    writeln!(
        out,
        "{} model{}; prices in USD per million tokens, - where unknown",
        rows.len(),
        if rows.len() == 1 { "" } else { "s" }
    )
}

fn row(model: &ModelInfo) -> [String; 8] {
    let price = |p: Option<f64>| p.map_or_else(|| "-".to_string(), |p| p.to_string());
    [
        model.provider.clone(),
        model.id.clone(),
        model.context_window.to_string(),
        model.max_output.map_or_else(|| "-".to_string(), |n| n.to_string()),
        model.tokenizer.to_string(),
        price(model.prices.input),
        price(model.prices.cached_input),
        price(model.prices.output),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(query: Option<&str>, json: bool) -> String {
        let mut out = Vec::new();
        run(Registry::embedded(), query, json, &mut out).unwrap();
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
        assert_eq!(lines[count + 2], "--model claude-sonnet-4-5 resolves to anthropic/claude-sonnet-4-5");
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
        let err = run(Registry::embedded(), Some("gpt-4oo"), false, &mut out).unwrap_err();
        assert!(err.to_string().contains("did you mean gpt-4o"), "{err}");
        assert!(out.is_empty());
    }
}

//! Writing inspections as HTML: every piece of conversation text is escaped on its way in
//! (`html-escape`), the style and the filter script are the page's own (`page.css`,
//! `page.js`), and nothing is loaded from anywhere.

use std::fmt::Write;

use html_escape::{encode_double_quoted_attribute as attr, encode_text as text};

use super::rows::{Inspection, Row, RowAction};
use crate::message::{Arguments, Message, Part};
use crate::text::thousands;

/// The page's style: every selector is under `.tf-inspect`, so a fragment in a notebook does
/// not restyle the notebook.
const CSS: &str = include_str!("page.css");

/// The filters (by role, by action). It runs once at the end of its root element, and marks
/// the root `data-ready="true"` when it has run to its end (the headless-browser test reads it).
/// The script element holds exactly this text: the document's policy allows it by its hash.
const JS: &str = include_str!("page.js");

/// The document's policy: nothing is loaded from anywhere (`default-src 'none'`), the only
/// script that runs is the page's own (by its hash: no inline handler, no injected script),
/// and styles are inline (the bars' widths). A page that tried anything else would be refused
/// by the browser and say so on its console, where the headless-browser test looks.
fn content_security_policy() -> String {
    use base64::Engine;
    use sha2::Digest;
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(JS.as_bytes()));
    format!("default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'")
}

/// One conversation of a page, written: its title, its figures for the index, its HTML.
#[derive(Debug, Clone)]
pub struct Section {
    title: String,
    /// `(tokens before, tokens after, budget)`, or the error for a conversation that failed.
    figures: Result<(usize, usize, Option<usize>), String>,
    roles: Vec<String>,
    html: String,
}

impl Section {
    /// The section of a fitted conversation, titled `title` (a line number, an id).
    pub fn fitted(title: &str, inspection: &Inspection<'_>) -> Section {
        let report = inspection.report;
        let mut roles: Vec<String> = Vec::new();
        for role in inspection.rows.iter().flat_map(|r| &r.roles) {
            if !roles.contains(role) {
                roles.push(role.clone());
            }
        }
        Section {
            title: title.to_string(),
            figures: Ok((report.original_token_count, report.compressed_token_count, report.budget)),
            roles,
            html: write_inspection(inspection),
        }
    }

    /// The section of a conversation that could not be fitted (or shown): `error` says why.
    pub fn failed(title: &str, error: &str) -> Section {
        let html = format!("<p class=\"tf-error\">could not be fitted: {}</p>\n", text(error));
        Section { title: title.to_string(), figures: Err(error.to_string()), roles: Vec::new(), html }
    }
}

/// A page of one or more conversations: one section each and, when there are several, an
/// index of them at the top.
#[derive(Debug, Clone)]
pub struct Page {
    title: String,
    sections: Vec<Section>,
}

impl Page {
    /// An empty page titled `title` (the input's name).
    pub fn new(title: &str) -> Page {
        Page { title: title.to_string(), sections: Vec::new() }
    }

    /// The page with `section` added at the end.
    pub fn with(mut self, section: Section) -> Page {
        self.push(section);
        self
    }

    /// Adds `section` at the end.
    pub fn push(&mut self, section: Section) {
        self.sections.push(section);
    }

    /// The page as a whole HTML document (what `tightfit inspect --html` writes).
    pub fn to_document(&self) -> String {
        let mut out =
            String::with_capacity(self.sections.iter().map(|s| s.html.len()).sum::<usize>() + 16_384);
        let _ = write!(
            out,
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>tightfit inspect: {}</title>\n</head>\n<body>\n",
            content_security_policy(),
            text(&self.title)
        );
        self.write_fragment(&mut out);
        out.push_str("</body>\n</html>\n");
        out
    }

    /// The page as an HTML fragment (its style and script inside one element), for a
    /// notebook cell (`FitResult._repr_html_`).
    pub fn to_fragment(&self) -> String {
        let mut out = String::new();
        self.write_fragment(&mut out);
        out
    }

    fn write_fragment(&self, out: &mut String) {
        out.push_str("<div class=\"tf-inspect\">\n<style>\n");
        out.push_str(CSS);
        out.push_str("</style>\n");
        let _ = writeln!(out, "<header><h1>tightfit inspect: {}</h1>", text(&self.title));
        self.write_filters(out);
        out.push_str("</header>\n");
        if self.sections.len() > 1 {
            self.write_index(out);
        }
        for (i, section) in self.sections.iter().enumerate() {
            let _ = writeln!(
                out,
                "<section class=\"tf-conversation\" id=\"tf-conv-{}\">\n<h2>{}</h2>",
                i + 1,
                text(&section.title)
            );
            out.push_str(&section.html);
            out.push_str("</section>\n");
        }
        out.push_str("<script>");
        out.push_str(JS);
        out.push_str("</script>\n</div>\n");
    }

    fn write_filters(&self, out: &mut String) {
        let mut roles: Vec<&str> = Vec::new();
        for role in self.sections.iter().flat_map(|s| &s.roles) {
            if !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
        out.push_str("<form class=\"tf-filters\"><fieldset><legend>role</legend>");
        for role in roles {
            let _ = write!(
                out,
                "<label><input type=\"checkbox\" data-filter=\"role\" value=\"{}\" checked> {}</label>",
                attr(&token(role)),
                text(role)
            );
        }
        out.push_str("</fieldset><fieldset><legend>action</legend>");
        for action in RowAction::ALL {
            let name = action.as_str();
            let _ = write!(
                out,
                "<label class=\"tf-a-{name}\"><input type=\"checkbox\" data-filter=\"action\" value=\"{name}\" checked> \
                 <span class=\"tf-swatch\"></span>{name}</label>"
            );
        }
        out.push_str("</fieldset><output class=\"tf-shown\"></output></form>\n");
    }

    fn write_index(&self, out: &mut String) {
        out.push_str(
            "<nav class=\"tf-index\"><table>\n<thead><tr><th>conversation</th><th>tokens before</th>\
             <th>tokens after</th><th>budget</th></tr></thead>\n<tbody>\n",
        );
        for (i, section) in self.sections.iter().enumerate() {
            let _ = write!(out, "<tr><td><a href=\"#tf-conv-{}\">{}</a></td>", i + 1, text(&section.title));
            match &section.figures {
                Ok((before, after, budget)) => {
                    let _ = writeln!(
                        out,
                        "<td>{}</td><td>{}</td><td>{}</td></tr>",
                        thousands(*before as u64),
                        thousands(*after as u64),
                        budget.map_or("none".to_string(), |b| thousands(b as u64))
                    );
                }
                Err(error) => {
                    let _ = writeln!(out, "<td colspan=\"3\" class=\"tf-error\">{}</td></tr>", text(error));
                }
            }
        }
        out.push_str("</tbody></table></nav>\n");
    }
}

/// A role as one word of a `data-roles` list.
fn token(role: &str) -> String {
    role.split_whitespace().collect::<Vec<_>>().join("_")
}

/// Percent of `of`, for a bar's width.
fn percent(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        (n as f64 * 100.0 / of as f64).min(100.0)
    }
}

fn write_inspection(inspection: &Inspection<'_>) -> String {
    let report = inspection.report;
    let mut out = String::new();
    let (before, after) = (report.original_token_count, report.compressed_token_count);
    // the totals, on one scale with the budget drawn as a line across them
    let scale = before.max(after).max(report.budget.unwrap_or(0)).max(1);
    let _ = writeln!(
        out,
        "<p class=\"tf-summary\">{} &rarr; {} tokens ({:.2}), {} &rarr; {} messages, budget {}, counted by {}</p>",
        thousands(before as u64),
        thousands(after as u64),
        report.compression_ratio,
        thousands(report.original_message_count as u64),
        thousands(report.compressed_message_count as u64),
        report.budget.map_or("none".to_string(), |b| thousands(b as u64)),
        text(&report.counter)
    );
    let bars = [(before, "tf-total-before"), (after, "tf-total-after")];
    out.push_str("<div class=\"tf-totals\"><div class=\"tf-labels\"><span>before</span><span>after</span></div><div class=\"tf-tracks\">");
    for (n, class) in bars {
        let _ = write!(
            out,
            "<span class=\"tf-track\"><span class=\"tf-bar {class}\" style=\"width:{:.3}%\"></span></span>",
            percent(n, scale)
        );
    }
    if let Some(budget) = report.budget {
        let _ = write!(
            out,
            "<div class=\"tf-budget\" style=\"left:{:.3}%\"><span>budget {}</span></div>",
            percent(budget, scale),
            thousands(budget as u64)
        );
    }
    out.push_str("</div><div class=\"tf-ns\">");
    for (n, _) in bars {
        let _ = write!(out, "<span>{}</span>", thousands(n as u64));
    }
    out.push_str("</div>");
    out.push_str("</div>\n");
    let lines = report.lines();
    if !lines.is_empty() {
        out.push_str("<ul class=\"tf-steps\">");
        for line in lines {
            let _ = write!(out, "<li>{}</li>", text(&line));
        }
        out.push_str("</ul>\n");
    }
    // the rows' bars, scaled to the largest unit
    let largest =
        inspection.rows.iter().map(|r| r.tokens_before.max(r.tokens_after)).max().unwrap_or(0).max(1);
    let _ = writeln!(
        out,
        "<div class=\"tf-rows\" data-rows=\"{}\">\n<div class=\"tf-head\"><span>messages</span><span>unit</span>\
         <span>before (tokens)</span><span>what happened</span><span>after (tokens)</span></div>",
        inspection.rows.len()
    );
    for row in &inspection.rows {
        write_row(&mut out, inspection, row, largest);
    }
    out.push_str("</div>\n");
    out
}

fn write_row(out: &mut String, inspection: &Inspection<'_>, row: &Row, largest: usize) {
    let action = row.action.as_str();
    let roles: Vec<String> = row.roles.iter().map(|r| token(r)).collect();
    let span = match (row.input.start, row.input.end) {
        (_, 0) => "written".to_string(),
        (a, b) if b == a + 1 => format!("{a}"),
        (a, b) => format!("{a}&ndash;{}", b - 1),
    };
    let by = if row.steps.is_empty() { String::new() } else { format!(" by {}", row.steps.join(", ")) };
    let _ = write!(
        out,
        "<details class=\"tf-row tf-a-{action}\" data-action=\"{action}\" data-roles=\"{}\">\
         <summary><span class=\"tf-span\">{span}</span><span class=\"tf-kind\">{} &middot; {}</span>",
        attr(&roles.join(" ")),
        text(&row.kind),
        text(&row.roles.join(", ")),
    );
    for (n, side) in [(row.tokens_before, "before"), (row.tokens_after, "after")] {
        if side == "after" {
            let label = format!("{action}{by}");
            let _ =
                write!(out, "<span class=\"tf-action\" title=\"{}\">{}</span>", attr(&label), text(&label));
        }
        let none = (side == "before" && row.unit.is_none()) || (side == "after" && row.output.is_empty());
        let shown = if none { "&ndash;".to_string() } else { thousands(n as u64) };
        let _ = write!(
            out,
            "<span class=\"tf-{side}\"><span class=\"tf-track\"><span class=\"tf-bar\" style=\"width:{:.3}%\"></span></span>\
             <span class=\"tf-n\">{shown}</span></span>",
            percent(n, largest)
        );
    }
    out.push_str("</summary>\n<div class=\"tf-body\">");
    if !row.details.is_empty() || !row.handles.is_empty() {
        out.push_str("<ul class=\"tf-details\">");
        for line in &row.details {
            let _ = write!(out, "<li>{}</li>", text(line));
        }
        for handle in &row.handles {
            let _ = write!(out, "<li>offloaded under <code>{}</code> (tightfit recall)</li>", text(handle));
        }
        out.push_str("</ul>");
    }
    out.push_str("<div class=\"tf-before-text\"><h3>before</h3>");
    if row.input.is_empty() {
        out.push_str("<p class=\"tf-none\">not in the input: written by a step</p>");
    }
    for i in row.input.clone() {
        write_message(out, i, &inspection.input[i]);
    }
    out.push_str("</div><div class=\"tf-after-text\"><h3>after</h3>");
    if row.output.is_empty() {
        out.push_str("<p class=\"tf-none\">not sent</p>");
    } else if row.action == RowAction::Kept {
        out.push_str("<p class=\"tf-none\">sent as it came</p>");
    } else {
        for &o in &row.output {
            write_message(out, o, &inspection.output[o]);
        }
    }
    out.push_str("</div></div></details>\n");
}

fn write_message(out: &mut String, index: usize, message: &Message) {
    let name = message.name.as_deref().map(|n| format!(" ({n})")).unwrap_or_default();
    let _ = write!(
        out,
        "<div class=\"tf-message\"><div class=\"tf-role\">[{index}] {}{}</div><pre>{}</pre></div>",
        text(message.role_name()),
        text(&name),
        text(&display_text(&message.parts))
    );
}

/// A message's content for a person: its text, its tool calls as `→ name(arguments)`, its
/// tool results' text, and a bracketed word for what is not text.
fn display_text(parts: &[Part]) -> String {
    let mut out = String::new();
    for part in parts {
        if !out.is_empty() {
            out.push('\n');
        }
        match part {
            Part::Text(t) => out.push_str(&t.text),
            Part::ToolCall(call) => {
                let arguments = match &call.arguments {
                    Arguments::Text(s) => s.clone(),
                    Arguments::Json(v) => v.to_string(),
                };
                let _ = write!(out, "\u{2192} {}({arguments})", call.name);
            }
            Part::ToolResult(result) => {
                let _ = write!(out, "[result of {}] {}", result.tool_use_id, display_text(&result.parts));
            }
            Part::Thinking(t) => {
                let _ = write!(out, "[thinking] {}", t.text);
            }
            Part::RedactedThinking(_) => out.push_str("[redacted thinking]"),
            Part::Refusal(r) => {
                let _ = write!(out, "[refusal] {}", r.refusal);
            }
            Part::Image(_) => out.push_str("[image]"),
            Part::Audio(_) => out.push_str("[audio]"),
            Part::File(f) => {
                let _ = write!(out, "[{}]", f.kind);
            }
            Part::Opaque(value) => out.push_str(&value.to_string()),
        }
    }
    out
}

//! A page that shows what a fit did, for people who would rather look than read the report.
//!
//! [`Inspection`] lays one fitted conversation out as rows, one per input unit (and one per
//! message a step wrote): its tokens before and after, what happened to it and which step did
//! it. [`Page`] writes inspections as one self-contained HTML document (inline CSS and a little
//! vanilla JavaScript for the filters; nothing loaded from the network), or as a fragment for
//! a notebook cell.
//!
//! Built from what a fit returns — the input, the [`Plan`](crate::Plan), the
//! [`Report`](crate::Report) — and the counter it fitted with; the output is rebuilt by
//! replaying the plan, so a plan for another input is refused, not drawn.
//!
//! ```
//! use tightfit::fit::{fit, Target};
//! use tightfit::format::{parse_str, FormatHint};
//! use tightfit::inspect::{Inspection, Page, Section};
//! use tightfit::models::Registry;
//!
//! let conversation = parse_str(
//!     r#"[{"role": "system", "content": "Be brief."},
//!         {"role": "user", "content": "Hi!"},
//!         {"role": "assistant", "content": "Hello."},
//!         {"role": "user", "content": "What is 2 + 2?"}]"#,
//!     FormatHint::Auto,
//! )?;
//! let target = Target::for_model(Registry::embedded().lookup("gpt-4o")?, None).with_budget(30);
//! let fitted = fit(&conversation, &target, None)?;
//! let inspection = Inspection::new(&conversation.messages, &fitted.plan, &fitted.report, &target.counter)?;
//! assert_eq!(inspection.rows.len(), 4); // system, user, assistant, user
//! let html = Page::new("example").with(Section::fitted("example", &inspection)).to_document();
//! assert!(html.starts_with("<!DOCTYPE html>"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Cost: one replay of the plan and one count of every message sent changed (the counter's
//! cache is not at hand); the page holds every message's text once, and the text of each
//! changed message a second time.

mod html;
mod rows;

pub use html::{Page, Section};
pub use rows::{Inspection, Row, RowAction};

//! The `tightfit` command line: count and fit LLM conversation histories.
//!
//! Arguments are parsed by clap into what the user typed ([`Cli`]); each subcommand then
//! builds what it needs from the engine. The engine knows no terminal: files, progress and
//! rendering live here.

use std::borrow::Cow;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use tightfit::models::Registry;

mod count_cmd;
mod input;
mod models_cmd;

/// Fit LLM conversation histories into a model's context window.
#[derive(Debug, Parser)]
#[command(name = "tightfit", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Count tokens per message, per role and in total, and as a share of the model's window.
    ///
    /// Input: a JSON array of messages, a request body ({"model", "messages", ...}), or JSON
    /// Lines of either (one conversation a line, counted on all cores).
    Count {
        /// The conversation file, or `-` for standard input.
        file: PathBuf,
        /// The model to count for (an id, alias, `provider/id`, or dated snapshot). Defaults
        /// to the request body's `model`.
        #[arg(long, short)]
        model: Option<String>,
        /// The input's wire format.
        #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
        format: FormatArg,
        /// Machine-readable output: one JSON object per conversation.
        #[arg(long)]
        json: bool,
        /// A TOML or JSON file that adds models to the registry or overrides them.
        #[arg(long, value_name = "FILE")]
        models_file: Option<PathBuf>,
        /// Count with this HuggingFace `tokenizer.json` (for open models) instead of the
        /// model's default counter; the model still gives the window. Needs a build with the
        /// `hf` feature.
        #[arg(long, value_name = "FILE")]
        tokenizer: Option<PathBuf>,
    },
    /// List the model registry, or the models matching QUERY.
    Models {
        /// A case-insensitive part of a model id, name or provider.
        query: Option<String>,
        /// One JSON object per model.
        #[arg(long)]
        json: bool,
        /// A TOML or JSON file that adds models to the registry or overrides them.
        #[arg(long, value_name = "FILE")]
        models_file: Option<PathBuf>,
    },
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// Decide from the input's shape.
    Auto,
    /// OpenAI Chat Completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

impl FormatArg {
    fn hint(self) -> tightfit::format::FormatHint {
        use tightfit::format::{Format, FormatHint};
        match self {
            FormatArg::Auto => FormatHint::Auto,
            FormatArg::Openai => FormatHint::Exactly(Format::OpenAi),
            FormatArg::Anthropic => FormatHint::Exactly(Format::Anthropic),
        }
    }
}

/// The embedded registry, or a copy of it with the user's overrides.
fn registry(models_file: Option<&PathBuf>) -> anyhow::Result<Cow<'static, Registry>> {
    let embedded = Registry::embedded();
    Ok(match models_file {
        Some(path) => Cow::Owned(embedded.with_overrides(path)?),
        None => Cow::Borrowed(embedded),
    })
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Count { file, model, format, json, models_file, tokenizer } => {
            registry(models_file.as_ref()).and_then(|registry| {
                let options = count_cmd::Options { model, hint: format.hint(), json, tokenizer };
                count_cmd::run(&registry, &file, &options)
            })
        }
        Command::Models { query, json, models_file } => registry(models_file.as_ref()).and_then(|registry| {
            let stdout = std::io::stdout();
            models_cmd::run(&registry, query.as_deref(), json, &mut stdout.lock()).map(|()| true)
        }),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("tightfit: {err:#}");
            ExitCode::from(2)
        }
    }
}

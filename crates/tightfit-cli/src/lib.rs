//! The `tightfit` command line: count and fit LLM conversation histories.
//!
//! Arguments are parsed by clap into what the user typed (`Cli`); each subcommand then
//! builds what it needs from the engine. The engine knows no terminal: files, progress and
//! rendering live here.
//!
//! The binary's `main` is [`run`] on the process's arguments; the Python package calls the
//! same [`run`] from its native module, so `pip install tightfit` gives the same command with
//! the same output and exit codes.

#![warn(missing_docs)]

use std::borrow::Cow;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Parser, Subcommand, ValueEnum};
use tightfit::models::Registry;

mod count_cmd;
mod fit_cmd;
mod input;
mod inspect_cmd;
mod models_cmd;
mod recall_cmd;
mod replay_cmd;
mod serve_cmd;
mod simulate_cmd;
mod simulate_svg;
mod validate_cmd;

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
        /// A TOML or JSON file that adds models to the registry or overrides them, or a whole
        /// table written by `tightfit models --refresh` that replaces it.
        #[arg(long, value_name = "FILE")]
        models_file: Option<PathBuf>,
        /// Count with this tokenizer file instead of the model's default counter; the model
        /// still gives the window. Llama 3's `tokenizer.model` (from the llama-models package)
        /// or `tokenizer.json` counts exactly with Llama's chat framing; any other HuggingFace
        /// `tokenizer.json` is read by the `tokenizers` backend (feature `hf`, on by default).
        #[arg(long, value_name = "FILE")]
        tokenizer: Option<PathBuf>,
    },
    /// Fit a history into a model's window (or a budget): the fitted history on standard
    /// output in the input's format, the report on standard error.
    ///
    /// Without --preset or --config it runs the default ladder: lossless steps first, each
    /// only while over budget, ending in middle_out. JSON Lines in, JSON Lines out, fitted on
    /// all cores, line for line: a line that cannot be fitted is reported and becomes an error
    /// record (or stays as it came, --on-error keep); a closing line sums the file up.
    Fit {
        /// The conversation file, or `-` for standard input.
        #[arg(required_unless_present = "print_config")]
        file: Option<PathBuf>,
        #[command(flatten)]
        fitting: FitArgs,
        /// Print the pipeline (--preset, --config or the default ladder) as the YAML
        /// configuration that builds it, each step's keys at their default left out, and fit
        /// nothing.
        #[arg(long)]
        print_config: bool,
        /// Write the fitted history here instead of standard output.
        #[arg(long, short, value_name = "OUT")]
        output: Option<PathBuf>,
        /// The report's form on standard error.
        #[arg(long, value_enum, default_value_t = ReportArg::Text)]
        report: ReportArg,
        /// Also write each conversation's plan (what happened to every unit; `tightfit replay`
        /// applies it again) to this file, one JSON object per line.
        #[arg(long, value_name = "FILE")]
        plan: Option<PathBuf>,
        /// What a JSON Lines line that cannot be fitted becomes in the output, which stays line
        /// for line with the input: an error record (`{"tightfit_error": {...}}`), or the line
        /// as it came (`keep`).
        #[arg(long, value_enum, default_value_t = OnErrorArg::Record)]
        on_error: OnErrorArg,
    },
    /// Fit a history as `fit` does and write a page that shows what the fit did: the history
    /// before and after side by side, a row per unit with its tokens as bars, what happened to
    /// it and which step did it, the budget, filters by role and by action.
    ///
    /// The page is one HTML file with nothing to load (no network): open it in any browser.
    /// JSON Lines give one section per conversation, with an index at the top.
    Inspect {
        /// The conversation file, or `-` for standard input.
        file: PathBuf,
        #[command(flatten)]
        fitting: FitArgs,
        /// Where the page goes.
        #[arg(long, value_name = "OUT")]
        html: PathBuf,
    },
    /// Apply saved plans (`fit --plan FILE`, or a Python `result.plan.to_json()`) to the same
    /// input again: the output is byte for byte the fit's, without fitting.
    ///
    /// JSON Lines: the plans are taken in order, one per conversation; a conversation that
    /// is not the one the next plan was made for (another number of messages, or other
    /// content) is reported with its line and becomes an error record, as a failed `fit` line
    /// does. Exit code 1 when some conversation had no plan or a plan was left over.
    Replay {
        /// The plans: one JSON object, or one per line.
        plan: PathBuf,
        /// The conversation file the plans were made for, or `-` for standard input.
        #[arg(long, value_name = "FILE")]
        input: PathBuf,
        /// Write the history here instead of standard output.
        #[arg(long, short, value_name = "OUT")]
        output: Option<PathBuf>,
    },
    /// Give back the messages a fit offloaded under HANDLE, as they came (a JSON array of the
    /// wire messages, each with its index in the input).
    Recall {
        /// The handle named in a placeholder (`tf-` and 16 hex digits).
        handle: String,
        /// The store the fit offloaded into (`fit --store STORE`): an SQLite file, redis://…
        /// or postgres://….
        #[arg(long, value_name = "STORE")]
        store: String,
        /// The first character to print.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// The most characters to print (all the rest if not given).
        #[arg(long)]
        limit: Option<usize>,
    },
    /// Run the proxy: every OpenAI- or Anthropic-style request fitted on its way upstream,
    /// with a session per conversation (the cut stays put, the prompt cache keeps hitting).
    ///
    /// Point OPENAI_BASE_URL or ANTHROPIC_BASE_URL at it. Routes: POST /v1/chat/completions,
    /// /v1/messages, /v1/messages/count_tokens; GET /healthz, /metrics; every other path is
    /// passed to the upstream. Stops on SIGINT/SIGTERM after the requests in flight.
    Serve {
        /// A TOML configuration (every key documented in the proxy's README); the flags
        /// below override it.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// The address to listen on (default 127.0.0.1:8787).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// An upstream: openai=URL or anthropic=URL (repeatable).
        #[arg(long, value_name = "API=URL")]
        upstream: Vec<String>,
        /// Where sessions' state lives: sqlite:FILE (default sqlite:tightfit-proxy.db), FILE or memory.
        #[arg(long, value_name = "STORE")]
        store: Option<String>,
    },
    /// Check a history against a provider's rules: each violation with its message index
    /// and reason; exit code 1 if there is any.
    Validate {
        /// The conversation file, or `-` for standard input.
        file: PathBuf,
        /// The provider whose rules apply. Defaults to the input's own format.
        #[arg(long, value_enum)]
        provider: Option<ProviderArg>,
        /// The input's wire format.
        #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
        format: FormatArg,
        /// One JSON object per violation.
        #[arg(long)]
        json: bool,
    },
    /// Replay conversations turn by turn through several policies (tightfit's sessions,
    /// stateless fit, a hysteresis baseline, the peers) and compare what each sends: tokens,
    /// prefix reuse, cached tokens and dollars under the model's prices, cuts, messages
    /// removed without a trace.
    ///
    /// Each turn appends the next message (a tool call's results come with it) and asks each
    /// policy for its request. Rows add up over the conversations of the files; with --concat
    /// they are replayed back to back as one stream. Exit code 1 when one of tightfit's
    /// sessions sent a request over budget or invalid, or removed messages without a trace.
    Simulate {
        /// Conversation files (JSON or JSON Lines), replayed in order.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The model whose counter, window and prices apply. Defaults to the first request
        /// body's `model`.
        #[arg(long, short)]
        model: Option<String>,
        /// The budget in tokens, instead of the model's window minus the output reserved.
        #[arg(long)]
        budget: Option<usize>,
        /// Allow a --budget past the model's input limit (a model served with a larger window
        /// than the registry knows); without it such a budget is an error.
        #[arg(long)]
        allow_over_window: bool,
        /// A policy to compare (repeat for several): session:<preset> (session:cache, ...),
        /// fit, hysteresis[:<share>], ag2-token-limiter, ag2-history-limiter,
        /// langchain-trim, autogen-buffered, autogen-head-and-tail, autogen-token-limited,
        /// swarms. Default: all of them.
        #[arg(long = "policy", value_name = "P")]
        policies: Vec<String>,
        /// Replay all conversations back to back as one stream.
        #[arg(long)]
        concat: bool,
        /// Only this line of each JSON Lines file (1-based).
        #[arg(long)]
        line: Option<usize>,
        /// The first request has at least this many messages (the history before it is
        /// there, but not requested turn by turn).
        #[arg(long, default_value_t = 0)]
        from: usize,
        /// The last request has at most this many messages.
        #[arg(long)]
        to: Option<usize>,
        /// Where turns end: `message` appends one message per turn (the results of one step
        /// together), the agent loop the sessions issue measures; `request` only where a
        /// caller asks the model (after the user's or the tools' messages).
        #[arg(long, value_enum, default_value_t = TurnsArg::Message)]
        turns: TurnsArg,
        /// One JSON object instead of the table.
        #[arg(long)]
        json: bool,
        /// Also draw request tokens per turn and cumulative dollars per policy into this SVG.
        #[arg(long, value_name = "OUT")]
        svg: Option<PathBuf>,
        /// The input's wire format.
        #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
        format: FormatArg,
        /// A TOML or JSON file that adds models to the registry or overrides them, or a whole
        /// table written by `tightfit models --refresh` that replaces it.
        #[arg(long, value_name = "FILE")]
        models_file: Option<PathBuf>,
    },
    /// List the model registry, or the models matching QUERY: one row per model, the maker's
    /// own entries first, other providers' entries of the same model folded into its row.
    ///
    /// With --refresh SNAPSHOT, writes a new table instead: the registry's (the embedded one,
    /// or the --models-file table) with the providers of a models.dev `api.json` snapshot
    /// rebuilt from it, as `scripts/gen_models.py` builds them. Use the result with
    /// --models-file. Nothing is downloaded.
    Models {
        /// A case-insensitive part of a model id, name or provider.
        query: Option<String>,
        /// One JSON object per model (per entry with --all).
        #[arg(long)]
        json: bool,
        /// One row per provider entry, in table order, nothing folded.
        #[arg(long)]
        all: bool,
        /// A models.dev `api.json` snapshot to merge into the table.
        #[arg(long, value_name = "SNAPSHOT", conflicts_with_all = ["query", "all", "json"])]
        refresh: Option<PathBuf>,
        /// With --refresh: where the new table goes (standard output if not given).
        #[arg(long, short, value_name = "FILE", requires = "refresh")]
        output: Option<PathBuf>,
        /// With --refresh: the snapshot's version for the table's header (default: the
        /// base table's, with `+refresh` after it).
        #[arg(long, value_name = "V", requires = "refresh")]
        snapshot_version: Option<String>,
        /// A TOML or JSON file that adds models to the registry or overrides them, or a whole
        /// table written by `tightfit models --refresh` that replaces it.
        #[arg(long, value_name = "FILE")]
        models_file: Option<PathBuf>,
    },
}

/// What `fit` and `inspect` share: what to fit for, and with what.
#[derive(Debug, clap::Args)]
struct FitArgs {
    /// The model to fit for. Defaults to the request body's `model`; with neither, a
    /// --budget is counted with o200k_base (there is no default model).
    #[arg(long, short)]
    model: Option<String>,
    /// The budget in tokens (the whole request), instead of the model's window minus the
    /// output reserved (the request's max_tokens, else up to 4,096).
    #[arg(long)]
    budget: Option<usize>,
    /// Allow a --budget past the model's input limit (a model served with a larger window
    /// than the registry knows); without it such a budget is an error.
    #[arg(long)]
    allow_over_window: bool,
    /// A named pipeline: middle-out (the default), cache, minimal, balanced, summarizing, swarms.
    #[arg(long, conflicts_with = "config")]
    preset: Option<String>,
    /// A pipeline configuration file (YAML, TOML or JSON; llmling's YAML loads as is).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The input's wire format.
    #[arg(long, value_enum, default_value_t = FormatArg::Auto)]
    format: FormatArg,
    /// A TOML or JSON file that adds models to the registry or overrides them, or a whole
    /// table written by `tightfit models --refresh` that replaces it.
    #[arg(long, value_name = "FILE")]
    models_file: Option<PathBuf>,
    /// Offload what the steps remove or cut into this store: an SQLite FILE (made if
    /// missing; or sqlite:FILE), redis://HOST[:PORT][/DB] or postgres://USER@HOST/DB. The
    /// output keeps a placeholder or note naming a handle for each, and `tightfit recall
    /// HANDLE --store STORE` gives the messages back as they came.
    #[arg(long, value_name = "STORE")]
    store: Option<String>,
    /// Have a model write the `summarize` step's summaries: the base URL of an
    /// OpenAI-compatible endpoint (up to `/chat/completions`, e.g. ending in `/v1`) or of
    /// Anthropic's API (see --summarizer-api). Without it, or when the model fails, the
    /// built-in extractive summarizer writes them.
    #[arg(long, value_name = "URL", requires = "summarizer_model")]
    summarizer_url: Option<String>,
    /// The model the summarizer endpoint runs.
    #[arg(long, value_name = "MODEL", requires = "summarizer_url")]
    summarizer_model: Option<String>,
    /// The API the summarizer endpoint speaks.
    #[arg(long, value_enum, default_value_t = SummarizerApiArg::Openai)]
    summarizer_api: SummarizerApiArg,
    /// The environment variable holding the summarizer endpoint's API key.
    #[arg(long, value_name = "VAR")]
    summarizer_key_env: Option<String>,
    /// How many times a failed summarizer request is tried again (1 s, then 2 s, ...).
    #[arg(long, value_name = "N", default_value_t = 2)]
    summarizer_retries: u32,
    /// Count with this tokenizer file instead of the model's counter (as for `count`); the
    /// model still gives the window.
    #[arg(long, value_name = "FILE")]
    tokenizer: Option<PathBuf>,
}

impl FitArgs {
    /// What the options name, built: the registry, the pipeline, and the fit's settings
    /// (the store opened, the summarizer made).
    fn build(self) -> anyhow::Result<(Cow<'static, Registry>, tightfit::Pipeline, fit_cmd::Fitting)> {
        let registry = registry(self.models_file.as_ref())?;
        let summarizer = self.summarizer_url.zip(self.summarizer_model).map(|(url, model)| {
            let api = match self.summarizer_api {
                SummarizerApiArg::Openai => tightfit_llm::Api::OpenAi,
                SummarizerApiArg::Anthropic => tightfit_llm::Api::Anthropic,
            };
            let mut summarizer = tightfit_llm::HttpSummarizer::new(api, url, model)
                .with_retries(self.summarizer_retries, std::time::Duration::from_secs(1));
            if let Some(var) = self.summarizer_key_env {
                summarizer = summarizer.with_api_key_env(var);
            }
            Arc::new(summarizer) as Arc<dyn tightfit::summary::Summarizer>
        });
        let pipeline = pipeline(self.preset.as_deref(), self.config.as_ref())?;
        let store = self.store.map(|spec| tightfit_store::StoreSpec::parse(&spec)?.open()).transpose()?;
        let counter = self.tokenizer.as_deref().map(count_cmd::file_counter).transpose()?;
        let fitting = fit_cmd::Fitting {
            model: self.model,
            budget: self.budget,
            counter,
            allow_over_window: self.allow_over_window,
            hint: self.format.hint(),
            store,
            summarizer,
        };
        Ok((registry, pipeline, fitting))
    }
}

/// `fit --on-error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OnErrorArg {
    /// An error record in the failed line's place.
    Record,
    /// The failed line as it came.
    Keep,
}

/// `--summarizer-api`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum SummarizerApiArg {
    /// OpenAI Chat Completions (OpenAI, vLLM, llama.cpp, Ollama, OpenRouter, ...).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// `simulate --turns`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TurnsArg {
    /// One message per turn (the results of one step together).
    Message,
    /// Only where a caller asks the model.
    Request,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum FormatArg {
    /// Decide from the input's shape.
    Auto,
    /// OpenAI Chat Completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI Responses API input items (`input`, `instructions`).
    Responses,
    /// Google Gemini `contents` (`parts`, `systemInstruction`).
    Gemini,
}

/// `--report`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ReportArg {
    /// A summary line per conversation (and the step lines for a single one).
    Text,
    /// One JSON object per conversation.
    Json,
}

/// `--provider`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProviderArg {
    /// OpenAI Chat Completions rules.
    Openai,
    /// Anthropic Messages rules.
    Anthropic,
    /// OpenAI Responses API rules.
    Responses,
    /// Gemini API rules.
    Gemini,
}

impl ProviderArg {
    fn format(self) -> tightfit::format::Format {
        match self {
            ProviderArg::Openai => tightfit::format::Format::OpenAi,
            ProviderArg::Anthropic => tightfit::format::Format::Anthropic,
            ProviderArg::Responses => tightfit::format::Format::Responses,
            ProviderArg::Gemini => tightfit::format::Format::Gemini,
        }
    }
}

/// The pipeline `--preset` or `--config` names; the default ladder otherwise.
fn pipeline(preset: Option<&str>, config: Option<&PathBuf>) -> anyhow::Result<tightfit::Pipeline> {
    Ok(match (preset, config) {
        (_, Some(path)) => {
            tightfit::config::from_path(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        (Some(name), None) => tightfit::presets::by_name(name)?,
        (None, None) => tightfit::presets::ladder(),
    })
}

impl FormatArg {
    fn hint(self) -> tightfit::format::FormatHint {
        use tightfit::format::{Format, FormatHint};
        match self {
            FormatArg::Auto => FormatHint::Auto,
            FormatArg::Openai => FormatHint::Exactly(Format::OpenAi),
            FormatArg::Anthropic => FormatHint::Exactly(Format::Anthropic),
            FormatArg::Responses => FormatHint::Exactly(Format::Responses),
            FormatArg::Gemini => FormatHint::Exactly(Format::Gemini),
        }
    }
}

/// The embedded registry, a copy of it with the user's overrides, or a whole table written by
/// `tightfit models --refresh`.
fn registry(models_file: Option<&PathBuf>) -> anyhow::Result<Cow<'static, Registry>> {
    let embedded = Registry::embedded();
    Ok(match models_file {
        Some(path) => match models_cmd::table_file(path)? {
            Some(text) => Cow::Owned(
                Registry::from_table_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            ),
            None => Cow::Owned(embedded.with_overrides(path)?),
        },
        None => Cow::Borrowed(embedded),
    })
}

/// Runs the command line on `args` (the program name first, as `std::env::args_os` gives
/// them) and returns the exit code: 0 on success, 1 when a check found something (`validate`,
/// `simulate`), 2 on an error (printed to standard error) or a usage error (clap's message).
/// Writes to the process's own standard output and error, and flushes them before returning.
pub fn run<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let code = match Cli::try_parse_from(args) {
        Ok(cli) => dispatch(cli),
        // --help and --version land here too, with exit code 0; clap prints each where it
        // belongs (help on standard output, usage errors on standard error)
        Err(err) => {
            let _ = err.print();
            u8::try_from(err.exit_code()).unwrap_or(2)
        }
    };
    // the binary's standard output is flushed when the process ends; a caller that goes on
    // (the Python module) must see everything written before it writes more
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    code
}

/// Runs the parsed subcommand; the exit code as [`run`] gives it.
fn dispatch(cli: Cli) -> u8 {
    let result = match cli.command {
        Command::Count { file, model, format, json, models_file, tokenizer } => {
            registry(models_file.as_ref()).and_then(|registry| {
                let options = count_cmd::Options { model, hint: format.hint(), json, tokenizer };
                count_cmd::run(&registry, &file, &options)
            })
        }
        Command::Fit { print_config: true, fitting, .. } => {
            pipeline(fitting.preset.as_deref(), fitting.config.as_ref()).and_then(|pipeline| {
                print!("{}", tightfit::config::to_string(&pipeline, tightfit::config::Syntax::Yaml)?);
                Ok(true)
            })
        }
        Command::Fit { file, fitting, output, report, plan, on_error, .. } => {
            let file = file.expect("clap requires FILE without --print-config");
            fitting.build().and_then(|(registry, pipeline, fitting)| {
                let options = fit_cmd::Options {
                    fitting,
                    output,
                    json_report: report == ReportArg::Json,
                    plan,
                    keep_failed: on_error == OnErrorArg::Keep,
                };
                fit_cmd::run(&registry, &pipeline, &file, &options)
            })
        }
        Command::Inspect { file, fitting, html } => {
            fitting.build().and_then(|(registry, pipeline, fitting)| {
                inspect_cmd::run(&registry, &pipeline, &file, &fitting, &html)
            })
        }
        Command::Replay { plan, input, output } => replay_cmd::run(&plan, &input, output.as_deref()),
        Command::Simulate {
            files,
            model,
            budget,
            allow_over_window,
            policies,
            concat,
            line,
            from,
            to,
            turns,
            json,
            svg,
            format,
            models_file,
        } => registry(models_file.as_ref()).and_then(|registry| {
            let options = simulate_cmd::Options {
                model,
                budget,
                allow_over_window,
                policies,
                concat,
                line,
                from,
                to,
                by_request: turns == TurnsArg::Request,
                json,
                svg,
                hint: format.hint(),
            };
            simulate_cmd::run(&registry, &files, &options)
        }),
        Command::Recall { handle, store, offset, limit } => recall_cmd::run(&handle, &store, offset, limit),
        Command::Serve { config, listen, upstream, store } => {
            serve_cmd::run(config.as_deref(), listen, &upstream, store)
        }
        Command::Validate { file, provider, format, json } => {
            validate_cmd::run(&file, provider.map(ProviderArg::format), format.hint(), json)
        }
        Command::Models { refresh: Some(snapshot), output, snapshot_version, models_file, .. } => {
            models_cmd::refresh(
                models_file.as_deref(),
                &snapshot,
                snapshot_version.as_deref(),
                output.as_deref(),
            )
            .map(|()| true)
        }
        Command::Models { query, json, all, models_file, .. } => {
            registry(models_file.as_ref()).and_then(|registry| {
                let stdout = std::io::stdout();
                let layout = if all { models_cmd::Layout::Entries } else { models_cmd::Layout::Folded };
                models_cmd::run(&registry, query.as_deref(), json, layout, &mut stdout.lock()).map(|()| true)
            })
        }
    };
    match result {
        Ok(true) => 0,
        Ok(false) => 1,
        // the reader went away (`| head`): nothing more to say, as any filter would
        Err(err) if closed_pipe(&err) => 0,
        Err(err) => {
            eprintln!("tightfit: {err:#}");
            2
        }
    }
}

/// Whether `err` comes from writing to a pipe whose reader closed it (directly, or through
/// the JSON writer).
fn closed_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        let kind = match cause.downcast_ref::<std::io::Error>() {
            Some(io) => Some(io.kind()),
            None => cause.downcast_ref::<serde_json::Error>().and_then(serde_json::Error::io_error_kind),
        };
        kind == Some(std::io::ErrorKind::BrokenPipe)
    })
}

//! Property tests of the steps: every step, alone and in `fit`'s ladder, on generated
//! histories in both wire formats (parallel and out-of-order tool calls, calls left
//! unanswered, thinking blocks, images, several system messages, unknown fields).
//!
//! For every step and every history:
//! 1. a history whose only faults the repair pass fixes comes out valid for its provider;
//! 2. system messages and the newest user turn are kept (their text is still sent);
//! 3. messages kept from the input stay in their order; the input is never mutated;
//! 4. the same input gives the same bytes and the same plan;
//! 5. `fit` is within budget by a fresh count, or fails saying the protected part is over.
//!
//! And cutting text never splits a grapheme, whatever the text, limit and side kept.

use proptest::prelude::*;
use serde_json::Value;
use tightfit::fit::{FitError, Fitted, Fitter, RunOptions, Target};
use tightfit::format::{self, Conversation, FormatHint};
use tightfit::message::{Message, Role};
use tightfit::pipeline::Pipeline;
use tightfit::steps::*;
use tightfit::text::{ceil_grapheme, cut, floor_grapheme, KeepPart, Length};
use tightfit::tokens::{ChatCounter, OpenAiEncoding};
use tightfit::validate::validate;

use crate::generate::{any_document, config};

fn counter() -> ChatCounter {
    ChatCounter::openai(OpenAiEncoding::O200kBase)
}

/// Every step of the catalogue, in the configurations that matter, each as a one-step
/// pipeline. Budget-driven steps take the budget of the run.
fn one(step: impl Step + 'static) -> Pipeline {
    Pipeline::builder().step(step).build().expect("valid step")
}

fn catalogue() -> Vec<(&'static str, Pipeline)> {
    // names ending in `!` turn protection off
    vec![
        ("drop_thinking", one(DropThinking::default())),
        ("drop_thinking all", one(DropThinking { keep_current_turn: false, ..DropThinking::default() })),
        ("drop_binary", one(DropBinary::default())),
        ("drop_binary placeholders", one(DropBinary::with_placeholders())),
        ("drop_retry_prompts", one(DropRetryPrompts::default())),
        (
            "drop_tool_calls",
            one(DropToolCalls { exclude_tools: vec!["a".into()], ..DropToolCalls::default() }),
        ),
        ("drop_empty", one(DropEmpty::default())),
        ("clear_tool_results", one(ClearToolResults::keeping(1))),
        ("dedupe", one(Dedupe { min_tokens: 1, ..Dedupe::default() })),
        ("truncate_tool_results", one(TruncateToolResults::chars(20))),
        (
            "truncate_tool_results tokens",
            one(TruncateToolResults {
                keep: tightfit::text::KeepPart::HeadAndTail,
                ..TruncateToolResults::tokens(8)
            }),
        ),
        ("truncate_text", one(TruncateText::chars(20))),
        ("truncate_text tokens", one(TruncateText::tokens(5))),
        ("compress_text", one(CompressText { min_chars: 0, ..CompressText::default() })),
        ("compress_text tokens", one(CompressText { min_chars: 0, ..CompressText::tokens(4) })),
        ("content_name", one(ContentName::default())),
        ("token_budget", one(TokenBudget::call_budget())),
        ("token_budget partial", one(TokenBudget { allow_partial: true, ..TokenBudget::call_budget() })),
        ("keep_last messages", one(KeepLast::messages(3))),
        ("keep_last pairs", one(KeepLast::pairs(1))),
        ("keep_last units", one(KeepLast::units(2))),
        ("keep_last first", one(KeepLast { keep_first_message: true, ..KeepLast::messages(2) })),
        ("keep_first", one(KeepFirst::default())),
        ("head_and_tail", one(HeadAndTail::default())),
        ("head_and_tail autogen!", one(HeadAndTail::autogen(2, 2))),
        ("task_truncation", one(TaskTruncation::default())),
        ("middle_out", one(MiddleOut::default())),
        (
            "middle_out placeholder",
            one(MiddleOut { placeholder: Some("[{skipped} omitted]".into()), ..MiddleOut::default() }),
        ),
        ("ladder", tightfit::presets::ladder()),
    ]
}

/// Runs `pipeline` with `budget` seen by the steps and not enforced: the steps' own limits
/// decide; the input is repaired and the output validated.
fn transform<'a>(
    conversation: &'a Conversation,
    pipeline: &Pipeline,
    budget: Option<usize>,
) -> Result<Fitted<'a>, FitError> {
    Fitter::new().run(conversation, &counter(), Some(pipeline), &RunOptions::transform().with_budget(budget))
}

/// Whether the repair pass makes the input valid (what a step must then keep valid).
fn repairable(conversation: &Conversation) -> bool {
    let nothing = Pipeline::builder().build().expect("an empty pipeline");
    !matches!(transform(conversation, &nothing, None), Err(FitError::Invalid { .. }))
}

/// A message's non-blank text parts, joined as `text_content` joins them (a step may drop
/// blank parts).
fn words(message: &Message) -> String {
    message
        .parts
        .iter()
        .filter_map(|p| match p {
            tightfit::Part::Text(t) if !t.text.trim().is_empty() => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The texts a step must keep: system messages at the head and the newest user turn's words.
fn protected_texts(messages: &[Message]) -> Vec<String> {
    let mut texts: Vec<String> = messages
        .iter()
        .take_while(|m| m.role.is_instruction())
        .map(words)
        .filter(|t| !t.trim().is_empty())
        .collect();
    // the newest user turn: the last user message that is not only tool results
    let newest = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && !(m.is_tool_result() && m.text_content().trim().is_empty()));
    if let Some(text) = newest.map(words).filter(|t| !t.trim().is_empty()) {
        texts.push(text);
    }
    texts
}

/// What is sent, in the same form as [`protected_texts`] (blank parts left out, as a step may
/// drop them).
fn sent_text(messages: &[std::borrow::Cow<'_, Message>]) -> String {
    messages.iter().map(|m| words(m)).collect::<Vec<_>>().join("\n")
}

fn check_step(
    name: &str,
    pipeline: &Pipeline,
    conversation: &Conversation,
    budget: usize,
) -> Result<(), TestCaseError> {
    let before = conversation.clone();
    let first = transform(conversation, pipeline, Some(budget));
    let second = transform(conversation, pipeline, Some(budget));
    prop_assert_eq!(conversation, &before, "{} mutated its input", name);
    let ok = repairable(conversation);
    let (a, b) = match (first, second) {
        (Ok(a), Ok(b)) => (a, b),
        // a step with protection off may cut the start of the current tool turn, leaving an
        // assistant message without its thinking; Anthropic rejects that, and tightfit reports
        // it instead of sending it
        (Err(FitError::Invalid { violations, .. }), _)
            if name.ends_with('!')
                && violations.iter().all(|v| v.rule == tightfit::validate::Rule::MissingCurrentThinking) =>
        {
            return Ok(())
        }
        (Err(FitError::Invalid { first, .. }), _) if ok => {
            return Err(TestCaseError::fail(format!(
                "{name} left a repairable history invalid: {first}\ninput: {}",
                format::to_value(conversation, conversation.format)
            )))
        }
        (Err(FitError::Invalid { .. }), _) => return Ok(()),
        (Err(e), _) => return Err(TestCaseError::fail(format!("{name} failed: {e}"))),
        (Ok(_), Err(e)) => return Err(TestCaseError::fail(format!("{name} failed the second time: {e}"))),
    };
    let format = conversation.format;
    let bytes = |m: &[std::borrow::Cow<'_, Message>]| {
        format::messages_to_value(&m.iter().map(|x| x.clone().into_owned()).collect::<Vec<_>>(), format)
            .to_string()
    };
    prop_assert_eq!(bytes(&a.messages), bytes(&b.messages), "{} is not deterministic", name);
    prop_assert_eq!(&a.plan, &b.plan);
    prop_assert_eq!(validate(&a.messages, format), vec![]);
    // kept input messages stay in order
    let origins: Vec<usize> = a.plan.output.iter().filter_map(|e| e.input).collect();
    prop_assert!(origins.windows(2).all(|w| w[0] < w[1]), "{} reordered messages: {:?}", name, origins);
    // protected texts are still sent (a cut by middle_out only happens to unprotected texts)
    let sent = sent_text(&a.messages);
    for text in protected_texts(&conversation.messages).into_iter().filter(|_| !name.ends_with('!')) {
        prop_assert!(
            sent.contains(text.trim()),
            "{} lost protected text {:?}\ninput: {}",
            name,
            text,
            format::to_value(conversation, conversation.format)
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_step_keeps_histories_valid_ordered_and_protected(
        (document, _format) in any_document(),
        budget in 20usize..3_000,
    ) {
        let conversation = format::parse_value(document, FormatHint::Auto).expect("generated documents parse");
        for (name, pipeline) in catalogue() {
            check_step(name, &pipeline, &conversation, budget)?;
        }
    }

    #[test]
    fn fit_is_within_budget_or_says_what_is_over(
        (document, _format) in any_document(),
        budget in 20usize..3_000,
    ) {
        let conversation = format::parse_value(document, FormatHint::Auto).expect("generated documents parse");
        let target = Target::budget(budget, counter());
        match Fitter::new().fit(&conversation, &target, None) {
            Ok(fitted) => {
                let owned: Vec<Message> = fitted.messages.iter().map(|m| m.clone().into_owned()).collect();
                let total = counter().count(&owned, conversation.tools.as_deref()).total;
                prop_assert!(total <= budget, "{} over {}", total, budget);
            }
            Err(FitError::CannotFit { needed, budget: b, .. }) => prop_assert!(needed > b),
            Err(FitError::Invalid { first, .. }) => prop_assert!(
                !repairable(&conversation),
                "{}\ninput: {}", first, format::to_value(&conversation, conversation.format)
            ),
            Err(e) => return Err(TestCaseError::fail(format!("fit failed: {e}"))),
        }
    }

    #[test]
    fn cuts_never_split_a_grapheme(
        text in "(a|é|e\u{301}|👍🏽|👨‍👩‍👧|字|\n| ){0,80}",
        limit in 0usize..60,
        tokens in any::<bool>(),
        keep in prop_oneof![Just(KeepPart::Head), Just(KeepPart::Tail), Just(KeepPart::HeadAndTail)],
    ) {
        let limit = if tokens { Length::Tokens(limit) } else { Length::Chars(limit) };
        if let Some(c) = cut(&text, limit, keep, "…", &OpenAiEncoding::O200kBase) {
            for range in &c.kept {
                prop_assert_eq!(floor_grapheme(&text, range.start), range.start);
                prop_assert_eq!(ceil_grapheme(&text, range.end), range.end);
            }
            let measured = match limit {
                Length::Chars(_) => c.text.chars().count(),
                Length::Tokens(_) => tightfit::tokens::TokenCounter::count(&OpenAiEncoding::O200kBase, &c.text),
            };
            // only the marker may go over a limit smaller than itself
            prop_assert!(measured <= limit.value().max(1), "{:?} {:?}: {:?}", limit, keep, c.text);
        }
    }
}

#[test]
fn the_catalogue_pipelines_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>(_: &T) {}
    for (_, pipeline) in catalogue() {
        assert_send_sync(&pipeline);
    }
    let _: Value = Value::Null;
}

//! Offload on every real conversation: what a fit sends, together with everything recallable
//! through the handles its placeholders name, is the input, message for message.

use std::collections::HashMap;
use std::path::PathBuf;

use tightfit::fit::{FitError, Fitter, RunOptions, Services};
use tightfit::format::{parse_str, Conversation, Format, FormatHint};
use tightfit::message::{Message, Part};
use tightfit::models::Registry;
use tightfit::offload::{self, OffloadKind};
use tightfit::session::MemoryStore;
use tightfit::Target;

use crate::{data_files, jsonl_files, lines, shared};

/// Every JSONL file of both corpora.
fn corpus() -> Vec<PathBuf> {
    let mut files = data_files();
    files.extend(jsonl_files("data2"));
    files
}

/// The handles named anywhere in `messages`' text.
fn handles_in(messages: &[std::borrow::Cow<'_, Message>]) -> Vec<String> {
    fn texts<'m>(parts: &'m [Part], out: &mut Vec<&'m str>) {
        for part in parts {
            match part {
                Part::Text(t) => out.push(&t.text),
                Part::ToolResult(r) => texts(&r.parts, out),
                _ => {}
            }
        }
    }
    let mut found = Vec::new();
    for message in messages {
        let mut all = Vec::new();
        texts(&message.parts, &mut all);
        for text in all {
            let mut rest = text;
            while let Some(at) = rest.find(offload::HANDLE_PREFIX) {
                let candidate: String = rest[at..].chars().take(offload::HANDLE_PREFIX.len() + 16).collect();
                if offload::is_handle(&candidate) {
                    found.push(candidate);
                }
                rest = &rest[at + offload::HANDLE_PREFIX.len()..];
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Fits `conversation` to `budget` with the default ladder, offloading into a fresh store, and
/// checks the guarantee. Returns (messages offloaded, handles), or `None` when what must be
/// kept does not fit.
fn fit_and_check(
    conversation: &Conversation,
    model: &str,
    budget: usize,
    what: &str,
) -> Option<(usize, usize)> {
    let target = Target::for_model(Registry::embedded().lookup(model).unwrap(), None).with_budget(budget);
    let store = MemoryStore::new();
    let options = RunOptions::fit(budget).with_window(target.window);
    let fitted = match Fitter::new().run_with(
        conversation,
        &target.counter,
        None,
        &options,
        Services::default().with_offload(&store),
    ) {
        Ok(fitted) => fitted,
        Err(FitError::CannotFit { must_keep, .. }) if must_keep > budget => return None,
        Err(e) => panic!("{what}: {e}"),
    };
    let report = &fitted.report;
    assert!(
        report.compressed_token_count <= budget,
        "{what}: {} over {budget}",
        report.compressed_token_count
    );
    // every handle the report lists is named in what is sent, and recalls what it says
    let named = handles_in(&fitted.messages);
    let mut recalled: HashMap<usize, Message> = HashMap::new();
    for entry in &report.offloaded {
        assert!(named.contains(&entry.handle), "{what}: {} is not named in the output", entry.handle);
        let back = offload::recall(&store, &entry.handle).unwrap();
        let indices: Vec<usize> = back.messages.iter().map(|(i, _)| *i).collect();
        assert_eq!(indices, entry.messages, "{what}: {}", entry.handle);
        if entry.kind == OffloadKind::Cut {
            assert_eq!(indices.len(), 1);
        }
        recalled.extend(back.messages);
    }
    // every input message is sent as it came, recallable as it came, merged into a turn that is
    // sent, or said nothing
    // (sent as it came, or with parts added around its own: a placeholder put into a turn)
    let sent_as_is: Vec<bool> = {
        let mut sent = vec![false; conversation.messages.len()];
        for (entry, message) in fitted.plan.output.iter().zip(&fitted.messages) {
            if let Some(i) = entry.input {
                let mut own = conversation.messages[i].parts.iter().peekable();
                for part in &message.parts {
                    own.next_if(|p| *p == part);
                }
                sent[i] = entry.message.is_none()
                    || (own.peek().is_none() && message.role == conversation.messages[i].role);
            }
        }
        sent
    };
    let merged: Vec<usize> = fitted
        .plan
        .units
        .iter()
        .flat_map(|u| u.details.iter())
        .filter(|d| d.contains("merged into the"))
        .filter_map(|d| d.strip_prefix("messages[")?.split(']').next()?.parse().ok())
        .collect();
    // (a merged message counts as sent when all its parts are in what is sent)
    let sent_parts: Vec<&Part> = fitted.messages.iter().flat_map(|m| m.parts.iter()).collect();
    for (i, message) in conversation.messages.iter().enumerate() {
        let merged_and_sent = merged.contains(&i) && message.parts.iter().all(|p| sent_parts.contains(&p));
        if sent_as_is[i] || merged_and_sent {
            continue;
        }
        match recalled.get(&i) {
            Some(back) => assert_eq!(back, message, "{what}: message {i} recalled as it came"),
            None => assert!(
                message.parts.iter().all(|p| matches!(p, Part::Text(t) if t.text.trim().is_empty())),
                "{what}: message {i} ({}) is neither sent as it came nor recallable: {:?}",
                message.role_name(),
                fitted.plan.units.iter().find(|u| u.messages[0] <= i && i < u.messages[1])
            ),
        }
    }
    Some((recalled.len(), report.offloaded.len()))
}

#[test]
fn what_is_sent_and_what_is_recallable_is_the_input_on_every_real_conversation() {
    let mut fitted = 0;
    let mut offloaded = 0;
    for file in corpus() {
        let name = file.file_name().unwrap().to_string_lossy().to_string();
        for (line, text) in lines(&file).iter().enumerate() {
            let conversation = parse_str(text, FormatHint::Auto).unwrap();
            let model = if conversation.format == Format::Anthropic { "claude-sonnet-4-5" } else { "gpt-4o" };
            for budget in [4_000, 32_000, 128_000] {
                let what = format!("{name}:{} at {budget}", line + 1);
                if let Some((messages, _)) = fit_and_check(&conversation, model, budget, &what) {
                    fitted += 1;
                    offloaded += messages;
                }
            }
        }
    }
    assert!(fitted > 3_000 && offloaded > 10_000, "{fitted} fits, {offloaded} messages offloaded");
}

#[test]
fn offloading_is_deterministic_and_the_notes_stay_within_budget() {
    let file = shared("data/agent_mini_swe_deepseek.jsonl");
    let conversation = parse_str(&lines(&file)[0], FormatHint::Auto).unwrap();
    let target = Target::for_model(Registry::embedded().lookup("gpt-4o").unwrap(), None).with_budget(6_000);
    let run = || {
        let store = MemoryStore::new();
        let fitted = Fitter::new()
            .run_with(
                &conversation,
                &target.counter,
                None,
                &RunOptions::fit(6_000),
                Services::default().with_offload(&store),
            )
            .unwrap();
        (fitted.clone().into_messages(), fitted.report, store.len())
    };
    let (first, report, stored) = run();
    let (second, _, _) = run();
    assert_eq!(first, second, "the same input gives the same bytes, handles included");
    assert!(report.compressed_token_count <= 6_000);
    // a blob per handle (a long run: a blob per chunk of 64 input messages and a manifest)
    assert!(stored >= report.offloaded.len());
    assert!(report.offloaded.iter().any(|o| o.kind == OffloadKind::Removed));
    assert!(report.offloaded.iter().any(|o| o.kind == OffloadKind::Cut));
    // the placeholder says what went and how to get it back
    let placeholder = first
        .iter()
        .map(Message::text_content)
        .find(|t| t.contains("offloaded here"))
        .expect("a placeholder");
    assert!(placeholder.contains("recall(\"tf-") && placeholder.contains("tool call"), "{placeholder}");
}

/// Runs `pipeline` over `conversation` with offloading into a fresh store; the output and the
/// store.
fn offloading(
    conversation: &Conversation,
    pipeline: &tightfit::Pipeline,
) -> (Vec<Message>, tightfit::Report, MemoryStore) {
    let store = MemoryStore::new();
    let counter = tightfit::tokens::ChatCounter::openai(tightfit::tokens::OpenAiEncoding::O200kBase);
    let fitted = Fitter::new()
        .run_with(
            conversation,
            &counter,
            Some(pipeline),
            &RunOptions::transform(),
            Services::default().with_offload(&store),
        )
        .unwrap();
    let report = fitted.report.clone();
    (fitted.into_messages(), report, store)
}

#[test]
fn a_placeholder_never_lands_between_the_results_of_one_step() {
    // the debug call of a parallel step goes with its result; the search result stays
    let conversation = parse_str(
        r#"[{"role": "user", "content": "find it"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "search", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "debug", "arguments": "{\"deep\": true}"}},
                {"id": "c", "type": "function", "function": {"name": "search", "arguments": "{\"q\": 2}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "found"},
            {"role": "tool", "tool_call_id": "b", "content": "a long debug trace"},
            {"role": "tool", "tool_call_id": "c", "content": "found again"},
            {"role": "user", "content": "thanks"}]"#,
        FormatHint::Auto,
    )
    .unwrap();
    let pipeline = tightfit::Pipeline::builder()
        .step(tightfit::steps::DropToolCalls::excluding(["debug"]))
        .build()
        .unwrap();
    let (out, report, store) = offloading(&conversation, &pipeline);
    assert_eq!(tightfit::validate(&out, Format::OpenAi), vec![], "{out:#?}");
    let placeholder =
        out.iter().position(|m| m.text_content().contains("offloaded here")).expect("a placeholder");
    assert_eq!(out[placeholder - 1].tool_call_id.as_deref(), Some("c"), "after the step's last result");
    let handle = &report.offloaded.iter().find(|o| o.kind == OffloadKind::Removed).unwrap().handle;
    let back = offload::recall(&store, handle).unwrap();
    assert_eq!(back.messages, vec![(3, conversation.messages[3].clone())]);
}

#[test]
fn a_turn_merged_into_a_turn_that_is_then_dropped_is_recallable() {
    // Anthropic: the two first user turns are merged, then keep_last drops the merged turn
    let conversation = parse_str(
        r#"[{"role": "user", "content": "first words, ticket 4711"},
            {"role": "user", "content": "second words, see src/app.py"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "now?"},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "thanks"}]"#,
        FormatHint::Exactly(Format::Anthropic),
    )
    .unwrap();
    let pipeline =
        tightfit::Pipeline::builder().step(tightfit::steps::KeepLast::messages(3)).build().unwrap();
    let (out, report, store) = offloading(&conversation, &pipeline);
    let recalled: Vec<usize> = report
        .offloaded
        .iter()
        .flat_map(|o| offload::recall(&store, &o.handle).unwrap().messages)
        .map(|(i, m)| {
            assert_eq!(m, conversation.messages[i]);
            i
        })
        .collect();
    let sent = out.iter().map(Message::text_content).collect::<Vec<_>>().join("\n");
    for (i, message) in conversation.messages.iter().enumerate() {
        let text = message.text_content();
        assert!(sent.contains(&text) || recalled.contains(&i), "message {i} ({text}) lost: {sent}");
    }
}

/// A request that ends on the assistant's prefill, after which the repair pass drops a turn
/// (results whose call is gone): the placeholder goes before the prefill, which stays last (a
/// note after it made the model answer a user turn, and its empty text block, allowed only in
/// a final assistant message, made the request invalid; found by the session property test).
#[test]
fn a_prefill_the_request_ends_on_stays_last() {
    let conversation = parse_str(
        r#"[{"role": "user", "content": "write a haiku about rust"},
            {"role": "assistant", "content": [
                {"type": "text", "text": "", "citations": [{"type": "char_location", "cited_text": "rust",
                    "document_index": 0, "start_char_index": 0, "end_char_index": 4}]},
                {"type": "text", "text": "Here is the haiku:"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_gone", "content": "old output"}]}]"#,
        FormatHint::Exactly(Format::Anthropic),
    )
    .unwrap();
    let store = MemoryStore::new();
    let counter = tightfit::tokens::ChatCounter::openai(tightfit::tokens::OpenAiEncoding::O200kBase);
    let fitted = Fitter::new()
        .run_with(
            &conversation,
            &counter,
            Some(&tightfit::presets::cache()),
            &RunOptions::fit(100_000),
            Services::default().with_offload(&store),
        )
        .expect("valid: the prefill is still the last message");
    let out = fitted.into_messages();
    assert_eq!(out.last(), conversation.messages.get(1), "the prefill stays last");
    let placeholder = out.iter().position(|m| m.text_content().contains("offloaded here")).expect("a trace");
    assert!(placeholder < out.len() - 1);
    assert_eq!(tightfit::validate(&out, Format::Anthropic), vec![]);
}

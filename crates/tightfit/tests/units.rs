//! Grouping a history into units.

use crate::{call, result};
use serde_json::{json, Value};
use tightfit::format::{self, Format, FormatHint};
use tightfit::{units, UnitKind};

fn kinds_and_ranges(messages: Value, format: Format) -> Vec<(UnitKind, std::ops::Range<usize>, Vec<String>)> {
    let messages = format::parse_messages(messages, format).unwrap();
    units(&messages).into_iter().map(|u| (u.kind, u.messages, u.unanswered_calls)).collect()
}

#[test]
fn parallel_calls_with_results_out_of_order_form_one_step() {
    let got = kinds_and_ranges(
        json!([
            {"role": "system", "content": "a"},
            {"role": "system", "content": "b"},
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2"), call("3")]},
            result("3"), result("1"), result("2"),
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "thanks"}
        ]),
        Format::OpenAi,
    );
    use UnitKind::*;
    assert_eq!(
        got,
        vec![
            (Instruction, 0..1, vec![]),
            (Instruction, 1..2, vec![]),
            (UserTurn, 2..3, vec![]),
            (AssistantStep, 3..7, vec![]),
            (AssistantStep, 7..8, vec![]),
            (UserTurn, 8..9, vec![]),
        ]
    );
}

#[test]
fn orphan_results_leading_tool_messages_and_unanswered_calls_are_marked() {
    let got = kinds_and_ranges(
        json!([
            result("x"),
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": null, "tool_calls": [call("1"), call("2")]},
            result("2"),
            result("9"),
            {"role": "user", "content": "again"},
            result("1")
        ]),
        Format::OpenAi,
    );
    use UnitKind::*;
    assert_eq!(
        got,
        vec![
            (OrphanResults, 0..1, vec![]),
            (UserTurn, 1..2, vec![]),
            (AssistantStep, 2..4, vec!["1".to_string()]),
            (OrphanResults, 4..5, vec![]),
            (UserTurn, 5..6, vec![]),
            (OrphanResults, 6..7, vec![]),
        ]
    );
}

#[test]
fn a_result_answered_twice_is_an_orphan_the_second_time() {
    let got = kinds_and_ranges(
        json!([{"role": "assistant", "content": null, "tool_calls": [call("1")]}, result("1"), result("1")]),
        Format::OpenAi,
    );
    assert_eq!(got[0].1, 0..2);
    assert_eq!(got[1].0, UnitKind::OrphanResults);
}

#[test]
fn anthropic_tool_results_in_the_next_user_message_join_the_step() {
    let body = json!({"system": "s", "messages": [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "a", "name": "f", "input": {}},
            {"type": "tool_use", "id": "b", "name": "f", "input": {}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "b", "content": "B"},
            {"type": "tool_result", "tool_use_id": "a", "content": "A"},
            {"type": "text", "text": "and now?"}]},
        {"role": "assistant", "content": "ok"}
    ]});
    let conversation = format::parse_value(body, FormatHint::Auto).unwrap();
    let groups = units(&conversation.messages);
    assert!(groups[2].has_user_text, "the results message also says \"and now?\"");
    assert!(!groups[3].has_user_text);
    let got: Vec<_> = groups.into_iter().map(|u| (u.kind, u.messages)).collect();
    use UnitKind::*;
    assert_eq!(
        got,
        vec![(Instruction, 0..1), (UserTurn, 1..2), (AssistantStep, 2..4), (AssistantStep, 4..5)]
    );
}

#[test]
fn legacy_function_calls_are_answered_by_name() {
    let got = kinds_and_ranges(
        json!([
            {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
            {"role": "function", "name": "f", "content": "42"},
            {"role": "assistant", "content": null, "function_call": {"name": "g", "arguments": "{}"}},
            {"role": "function", "name": "f", "content": "stray"}
        ]),
        Format::OpenAi,
    );
    use UnitKind::*;
    assert_eq!(
        got,
        vec![
            (AssistantStep, 0..2, vec![]),
            (AssistantStep, 2..3, vec!["g".to_string()]),
            (OrphanResults, 3..4, vec![]),
        ]
    );
}

#[test]
fn every_real_message_belongs_to_exactly_one_unit_and_real_steps_are_complete() {
    for file in crate::data_files() {
        for line in crate::lines(&file) {
            let conversation = format::parse_str(&line, FormatHint::Auto).unwrap();
            let groups = units(&conversation.messages);
            let mut next = 0;
            for unit in &groups {
                assert_eq!(unit.messages.start, next);
                assert!(!unit.is_empty());
                next = unit.messages.end;
                // the corpus converter guarantees every call is answered right after it
                assert!(unit.unanswered_calls.is_empty(), "{}: {:?}", file.display(), unit);
                assert_ne!(unit.kind, UnitKind::OrphanResults, "{}", file.display());
            }
            assert_eq!(next, conversation.messages.len());
        }
    }
}

//! What every parser target checks of an input the reader accepts.

use std::sync::LazyLock;

use serde_json::Value;
use tightfit::format::{self, Conversation, FormatHint};
use tightfit::models::TokenizerFamily;
use tightfit::tokens::{ChatCounter, OpenAiEncoding};

static OPENAI: LazyLock<ChatCounter> = LazyLock::new(|| ChatCounter::openai(OpenAiEncoding::O200kBase));
static CLAUDE: LazyLock<ChatCounter> = LazyLock::new(|| ChatCounter::for_family(TokenizerFamily::Claude));

/// Reads `data` as JSON text with `hint`. What is accepted must be written back as the same
/// JSON value, read back as the same conversation, group into units that cover every message
/// once, and count without panicking to totals that add up. Whatever is rejected must be
/// rejected with an error, not a panic.
pub fn check(data: &[u8], hint: FormatHint) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(conversation) = format::parse_str(text, hint) else { return };
    let input: Value = serde_json::from_str(text).expect("parse_str accepted text that is not JSON");

    let written = format::to_value(&conversation, conversation.format);
    assert!(written == input, "round trip differs\n in: {input}\nout: {written}");
    let reread = format::parse_value(written, FormatHint::Exactly(conversation.format))
        .expect("what was written cannot be read back");
    assert!(reread == conversation, "read back a different conversation");

    check_units(&conversation);
    check_counts(&OPENAI, &conversation);
    check_counts(&CLAUDE, &conversation);
}

fn check_units(conversation: &Conversation) {
    let mut next = 0;
    for unit in tightfit::units(&conversation.messages) {
        assert_eq!(unit.messages.start, next, "units leave a gap or overlap");
        assert!(!unit.is_empty(), "an empty unit");
        next = unit.messages.end;
    }
    assert_eq!(next, conversation.messages.len(), "units do not reach the last message");
}

fn check_counts(counter: &ChatCounter, conversation: &Conversation) {
    let count = counter.count(&conversation.messages, conversation.tools.as_deref());
    assert_eq!(count.per_message.len(), conversation.messages.len());
    assert_eq!(count.total, count.per_message.iter().sum::<usize>() + count.tools + count.priming);
}

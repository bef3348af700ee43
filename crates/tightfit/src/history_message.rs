//! How the working history holds a message: the input's, borrowed; a tool result whose whole
//! content a step replaced by a text, not yet written out; or one a step changed or wrote.
//! Below both the history, which holds them, and the plan, made from them.

use std::borrow::{Borrow, Cow};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use crate::message::{ContentForm, Message, Part, TextPart};

/// A message of a [`History`](crate::history::History): borrowed from the input until a step
/// changes it (copy on write), then boxed. It reads as a [`Message`] (`Deref`, `AsRef`,
/// `Borrow`), and compares by content, as the `Cow<Message>` it replaces did.
///
/// Why not a `Cow<Message>`: a `Cow` is as big as the message it may own (over a hundred
/// bytes), so a history of 100,000 messages would be a vector of 11 MB written when the
/// history is made and moved again each time a step drops messages. Two words a message keep
/// those vectors within the processor's caches, which is much of what keeps a warm fit's cost
/// per message from growing with the history.
#[derive(Debug, Clone)]
pub struct HistoryMessage<'a>(Holding<'a>);

#[derive(Debug, Clone)]
enum Holding<'a> {
    /// The input's message, as it came.
    Input(&'a Message),
    /// The input's tool result with its whole content replaced by one text.
    Replaced(Box<ReplacedResult<'a>>),
    /// A message a step changed (or wrote).
    Changed(Box<Message>),
}

/// An input message that is one tool result naming its call (a `tool` message with its
/// call's id, a `function` message) whose whole content a step replaced by `text` (a repeat's
/// reference to its first copy, a cleared result), written out as a [`Message`] only when
/// something reads it.
///
/// Why: a long agent history's old results are mostly replaced (`dedupe`, then
/// `clear_tool_results`) and then mostly dropped (`middle_out`). Written out at once, each
/// would copy the input message's role, ids, name and fields into a new message with a new
/// content: five allocations, and a read of the input message, which a long history no longer
/// has in the processor's caches. Held this way it costs one small allocation, the text is
/// shared by every result replaced by it, and the input message is read only for the few
/// that are sent, or that a step reads as a whole.
#[derive(Debug, Clone)]
struct ReplacedResult<'a> {
    input: &'a Message,
    text: Arc<str>,
    written: OnceLock<Message>,
}

impl ReplacedResult<'_> {
    /// The input message with its content `text`, as a step that changed it in place would
    /// have written it.
    fn write(&self) -> Message {
        self.input.with_content(vec![Part::Text(TextPart::new(&*self.text))], ContentForm::Text)
    }

    fn message(&self) -> &Message {
        self.written.get_or_init(|| self.write())
    }

    fn into_message(mut self) -> Message {
        self.written.take().unwrap_or_else(|| self.write())
    }
}

impl<'a> HistoryMessage<'a> {
    /// The input's `message`, as it came.
    pub(crate) fn input(message: &'a Message) -> HistoryMessage<'a> {
        HistoryMessage(Holding::Input(message))
    }

    /// The input's tool result `input` (one that names its call) with its whole content
    /// replaced by `text`, written out when read (see [`ReplacedResult`]).
    pub(crate) fn replaced(input: &'a Message, text: Arc<str>) -> HistoryMessage<'a> {
        HistoryMessage(Holding::Replaced(Box::new(ReplacedResult { input, text, written: OnceLock::new() })))
    }

    /// A message a step changed or wrote.
    pub(crate) fn changed(message: Message) -> HistoryMessage<'a> {
        HistoryMessage(Holding::Changed(Box::new(message)))
    }

    /// Whether this is the input's message as it came (no step changed it).
    pub fn is_input(&self) -> bool {
        matches!(self.0, Holding::Input(_))
    }

    /// The input's message, for as long as the input is borrowed, if no step changed it.
    pub(crate) fn as_input(&self) -> Option<&'a Message> {
        match self.0 {
            Holding::Input(message) => Some(message),
            Holding::Replaced(_) | Holding::Changed(_) => None,
        }
    }

    /// For the input's message as it came or a tool result replaced by a text: the input's
    /// message, whose role, name, ids and fields it has. Reading those there does not write a
    /// replaced result out.
    pub(crate) fn input_with_same_ids(&self) -> Option<&'a Message> {
        match &self.0 {
            Holding::Input(message) => Some(message),
            Holding::Replaced(replaced) => Some(replaced.input),
            Holding::Changed(_) => None,
        }
    }

    /// The text that replaced the whole content of a tool result not yet written out
    /// (`None` for any other message).
    pub(crate) fn replacing_text(&self) -> Option<&Arc<str>> {
        match &self.0 {
            Holding::Replaced(replaced) => Some(&replaced.text),
            _ => None,
        }
    }

    /// Puts `text` in place of the text that replaced this tool result's content, when it is
    /// such a result, not written out yet (its box is kept); returns whether it was.
    pub(crate) fn replace_text(&mut self, text: Arc<str>) -> bool {
        match &mut self.0 {
            Holding::Replaced(replaced) => {
                replaced.text = text;
                replaced.written = OnceLock::new();
                true
            }
            Holding::Input(_) | Holding::Changed(_) => false,
        }
    }

    /// The message, to change: the input's is copied first.
    pub(crate) fn to_mut(&mut self) -> &mut Message {
        match &mut self.0 {
            Holding::Input(message) => self.0 = Holding::Changed(Box::new((*message).clone())),
            Holding::Replaced(replaced) => {
                let message = replaced.written.take().unwrap_or_else(|| replaced.write());
                self.0 = Holding::Changed(Box::new(message));
            }
            Holding::Changed(_) => {}
        }
        match &mut self.0 {
            Holding::Changed(message) => message,
            Holding::Input(_) | Holding::Replaced(_) => unreachable!("copied just above"),
        }
    }

    /// As the `Cow` the output is made of.
    pub(crate) fn into_cow(self) -> Cow<'a, Message> {
        match self.0 {
            Holding::Input(message) => Cow::Borrowed(message),
            Holding::Replaced(replaced) => Cow::Owned(replaced.into_message()),
            Holding::Changed(message) => Cow::Owned(*message),
        }
    }
}

impl Deref for HistoryMessage<'_> {
    type Target = Message;

    fn deref(&self) -> &Message {
        match &self.0 {
            Holding::Input(message) => message,
            Holding::Replaced(replaced) => replaced.message(),
            Holding::Changed(message) => message,
        }
    }
}

impl PartialEq for HistoryMessage<'_> {
    fn eq(&self, other: &HistoryMessage<'_>) -> bool {
        **self == **other
    }
}

impl AsRef<Message> for HistoryMessage<'_> {
    fn as_ref(&self) -> &Message {
        self
    }
}

impl Borrow<Message> for HistoryMessage<'_> {
    fn borrow(&self) -> &Message {
        self
    }
}

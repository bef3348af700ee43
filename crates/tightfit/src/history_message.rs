//! How the working history holds a message: the input's, borrowed, or one a step changed or
//! wrote. Below both the history, which holds them, and the plan, made from them.

use std::borrow::{Borrow, Cow};
use std::ops::Deref;

use crate::message::Message;

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
    /// A message a step changed (or wrote).
    Changed(Box<Message>),
}

impl<'a> HistoryMessage<'a> {
    /// The input's `message`, as it came.
    pub(crate) fn input(message: &'a Message) -> HistoryMessage<'a> {
        HistoryMessage(Holding::Input(message))
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
            Holding::Changed(_) => None,
        }
    }

    /// The message, to change: the input's is copied first.
    pub(crate) fn to_mut(&mut self) -> &mut Message {
        if let Holding::Input(message) = self.0 {
            self.0 = Holding::Changed(Box::new(message.clone()));
        }
        match &mut self.0 {
            Holding::Changed(message) => message,
            Holding::Input(_) => unreachable!("copied just above"),
        }
    }

    /// As the `Cow` the output is made of.
    pub(crate) fn into_cow(self) -> Cow<'a, Message> {
        match self.0 {
            Holding::Input(message) => Cow::Borrowed(message),
            Holding::Changed(message) => Cow::Owned(*message),
        }
    }
}

impl Deref for HistoryMessage<'_> {
    type Target = Message;

    fn deref(&self) -> &Message {
        match &self.0 {
            Holding::Input(message) => message,
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

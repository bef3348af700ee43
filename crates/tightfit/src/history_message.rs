//! How the working history holds a message: the input's, borrowed, or one a step changed or
//! wrote. Below both the history, which holds them, and the plan, made from them.

use std::borrow::{Borrow, Cow};
use std::ops::Deref;

use crate::message::Message;

/// A message of a [`History`](crate::history::History): borrowed from the input until a step
/// changes it (copy on write), then boxed.
///
/// Why not a `Cow<Message>`: a `Cow` is as big as the message it may own (over a hundred
/// bytes), so a history of 100,000 messages would be a vector of 11 MB written when the
/// history is made and moved again each time a step drops messages. Two words a message keep
/// those vectors within the processor's caches, which is much of what keeps a warm fit's cost
/// per message flat as histories grow.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoryMessage<'a> {
    /// The input's message, as it came.
    Input(&'a Message),
    /// A message a step changed (or wrote).
    Changed(Box<Message>),
}

impl<'a> HistoryMessage<'a> {
    /// The message, to change: the input's is copied first.
    pub fn to_mut(&mut self) -> &mut Message {
        if let HistoryMessage::Input(message) = *self {
            *self = HistoryMessage::Changed(Box::new(message.clone()));
        }
        match self {
            HistoryMessage::Changed(message) => message,
            HistoryMessage::Input(_) => unreachable!("copied just above"),
        }
    }

    /// As the `Cow` the output is made of.
    pub fn into_cow(self) -> Cow<'a, Message> {
        match self {
            HistoryMessage::Input(message) => Cow::Borrowed(message),
            HistoryMessage::Changed(message) => Cow::Owned(*message),
        }
    }
}

impl Deref for HistoryMessage<'_> {
    type Target = Message;

    fn deref(&self) -> &Message {
        match self {
            HistoryMessage::Input(message) => message,
            HistoryMessage::Changed(message) => message,
        }
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

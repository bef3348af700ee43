//! What the AG2 selections share: the little they read of a message, and the repair that
//! keeps a selection from splitting a tool step.
//!
//! AG2's limiters pick messages one by one (the last N, or the newest that fit a token
//! count), so a cut can fall between a tool call and its results: the provider then rejects
//! the request (a result whose call is gone, a call without its result). The AG2 steps take
//! AG2's pick and then apply [`keep_steps_whole`]: a tool step that the input held whole is
//! kept whole or not at all, and a history that did not start with a tool result does not
//! start with one after the cut. What the input itself had broken is left as it came (AG2
//! passes it through, and so do we).
//!
//! The selections read messages through a [`Shapes`] accessor rather than a slice, so a caller
//! holding messages elsewhere (the Python package, which reads a caller's list lazily) pays
//! only for the messages the selection looks at: a window of 10 out of 5,000 reads about 10.

use std::collections::{HashMap, HashSet};

use crate::calls::{caller_of, results_of_call, CallSource, CallView};
use crate::message::{Message, Role};

/// What a selection reads of one message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Shape {
    /// The role as written on the wire (`tool`, `function`, or an unknown role's own name).
    pub role: String,
    /// The sender's `name`, if it is a string.
    pub name: Option<String>,
    /// The ids of the tool calls it makes. A legacy `function_call` has no id and is not
    /// counted: AG2's users' legacy function messages pass as they came.
    pub calls: Vec<String>,
    /// The ids of the calls it answers.
    pub answers: Vec<String>,
    /// Whether it carries tool results (a `tool` message, or tool result blocks).
    pub is_result: bool,
}

impl Shape {
    /// The shape of a parsed message.
    pub fn of(message: &Message) -> Shape {
        Shape {
            role: message.role_name().to_string(),
            name: message
                .name
                .clone()
                .or_else(|| message.extra.get("name").and_then(|n| n.as_str()).map(str::to_string)),
            calls: message.tool_calls().filter_map(|c| c.id.clone()).collect(),
            answers: message.answered_call_ids().map(str::to_string).collect(),
            is_result: message.role == Role::Tool
                || message.parts.iter().any(|p| matches!(p, crate::message::Part::ToolResult(_))),
        }
    }
}

impl CallView for Shape {
    fn call_ids(&self) -> impl Iterator<Item = &str> {
        self.calls.iter().map(String::as_str)
    }

    fn answered_ids(&self) -> impl Iterator<Item = &str> {
        self.answers.iter().map(String::as_str)
    }

    fn is_result(&self) -> bool {
        self.is_result
    }
}

/// Reads shapes by input index, each at most once.
pub struct Shapes<'f, E> {
    read: &'f mut dyn FnMut(usize) -> Result<Shape, E>,
    seen: HashMap<usize, Shape>,
    len: usize,
}

impl<'f, E> Shapes<'f, E> {
    /// Shapes of `len` messages read by `read`.
    pub fn new(len: usize, read: &'f mut dyn FnMut(usize) -> Result<Shape, E>) -> Shapes<'f, E> {
        Shapes { read, seen: HashMap::new(), len }
    }

    /// The number of messages.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The shape of message `index`.
    pub fn get(&mut self, index: usize) -> Result<&Shape, E> {
        if !self.seen.contains_key(&index) {
            let shape = (self.read)(index)?;
            self.seen.insert(index, shape);
        }
        Ok(&self.seen[&index])
    }
}

/// Which faults the whole input already has (the same words as the conformance corpus: a
/// result answering no call issued before it, a call no result answers).
#[derive(Debug, Clone, Copy, Default)]
struct Faults {
    orphan_results: bool,
    unanswered_calls: bool,
}

impl<E> CallSource for Shapes<'_, E> {
    type View = Shape;
    type Error = E;

    fn len(&self) -> usize {
        self.len
    }

    fn view(&mut self, i: usize) -> Result<&Shape, E> {
        self.get(i)
    }
}

/// The input's faults: one pass over every shape. Only asked for when a selection split a
/// step, so a clean cut never pays for it.
fn faults<E>(shapes: &mut Shapes<'_, E>) -> Result<Faults, E> {
    let mut issued = HashSet::new();
    let mut answered = HashSet::new();
    let mut faults = Faults::default();
    for i in 0..shapes.len() {
        let shape = shapes.get(i)?;
        if shape.is_result {
            for id in &shape.answers {
                faults.orphan_results |= !issued.contains(id);
                answered.insert(id.clone());
            }
        }
        issued.extend(shape.calls.iter().cloned());
    }
    faults.unanswered_calls = issued.iter().any(|id| !answered.contains(id));
    Ok(faults)
}

/// The kept messages a cut can have split a step at: a step's call and results are
/// consecutive in the input, so a split needs a gap in `kept` next to it. These are the
/// results right after a gap, and the call of the step right before one (reached back over
/// the kept results before the gap). Cost: O(gaps + the results beside them).
fn beside_gaps<E>(shapes: &mut Shapes<'_, E>, kept: &[usize]) -> Result<Vec<usize>, E> {
    let len = shapes.len();
    let mut suspects = Vec::new();
    for (j, &k) in kept.iter().enumerate() {
        let gap_before = if j == 0 { k > 0 } else { kept[j - 1] + 1 != k };
        let gap_after = if j + 1 == kept.len() { k + 1 < len } else { kept[j + 1] != k + 1 };
        if gap_before {
            let mut t = j;
            while t < kept.len() && (t == j || kept[t] == kept[t - 1] + 1) && shapes.get(kept[t])?.is_result {
                suspects.push(kept[t]);
                t += 1;
            }
        }
        if gap_after {
            let mut t = j;
            while t > 0 && kept[t - 1] + 1 == kept[t] && shapes.get(kept[t])?.is_result {
                t -= 1;
            }
            suspects.push(kept[t]);
        }
    }
    suspects.sort_unstable();
    suspects.dedup();
    Ok(suspects)
}

/// Removes from `kept` (input indexes, ascending) what would split a tool step: a kept call
/// whose results are not all kept goes with its kept results; a kept result whose call is not
/// kept goes. Then, unless the input itself starts with a tool result, results at the start of
/// the selection go (a history must not open with one). Returns whether anything went.
///
/// A fault the input already has is its own: when the input has unanswered calls (or orphan
/// results) somewhere, a split of that kind is left as AG2 leaves it, so that a history that
/// was already broken comes back exactly as AG2 returns it rather than half mended.
///
/// Cost: O(gaps in the selection + the results beside them); one pass over the whole input
/// when a split is found (to learn the input's faults).
pub fn keep_steps_whole<E>(shapes: &mut Shapes<'_, E>, kept: &mut Vec<usize>) -> Result<bool, E> {
    let before = kept.len();
    let suspects = beside_gaps(shapes, kept)?;
    let mut split_calls = Vec::new();
    let mut cut_results = Vec::new();
    for i in suspects {
        if !shapes.get(i)?.calls.is_empty() {
            let results = results_of_call(shapes, i)?;
            if results.iter().any(|r| kept.binary_search(r).is_err()) {
                split_calls.push(i);
                split_calls.extend(results.into_iter().filter(|r| kept.binary_search(r).is_ok()));
            }
        }
        if shapes.get(i)?.is_result {
            if let Some(call) = caller_of(shapes, i)? {
                if kept.binary_search(&call).is_err() {
                    cut_results.push(i);
                }
            }
        }
    }
    let mut drop = Vec::new();
    if !split_calls.is_empty() || !cut_results.is_empty() {
        let faults = faults(shapes)?;
        if !faults.unanswered_calls {
            drop.extend(split_calls);
        }
        if !faults.orphan_results {
            drop.extend(cut_results);
        }
    }
    if !drop.is_empty() {
        drop.sort_unstable();
        kept.retain(|i| drop.binary_search(i).is_err());
    }
    if !shapes.is_empty() && !shapes.get(0)?.is_result {
        let mut lead = 0;
        while lead < kept.len() && shapes.get(kept[lead])?.is_result {
            lead += 1;
        }
        kept.drain(..lead);
    }
    Ok(kept.len() != before)
}

/// Whether the shape is a message AG2 treats as a tool message (its `role` is `tool`).
pub(crate) fn is_tool_role(shape: &Shape) -> bool {
    shape.role == Role::Tool.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::test_support::openai;
    use std::convert::Infallible;

    fn whole(messages: &[Message], kept: &[usize]) -> Vec<usize> {
        let mut read = |i: usize| Ok::<_, Infallible>(Shape::of(&messages[i]));
        let mut shapes = Shapes::new(messages.len(), &mut read);
        let mut kept = kept.to_vec();
        let Ok(_) = keep_steps_whole(&mut shapes, &mut kept);
        kept
    }

    fn chat() -> Vec<Message> {
        openai(
            r#"[{"role": "user", "content": "q"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                {"role": "assistant", "content": "done"},
                {"role": "user", "content": "next"}]"#,
        )
    }

    #[test]
    fn results_without_their_call_go() {
        assert_eq!(whole(&chat(), &[3, 4, 5]), vec![4, 5]);
        assert_eq!(whole(&chat(), &[0, 2, 3, 4, 5]), vec![0, 4, 5]);
    }

    #[test]
    fn a_call_without_all_its_results_goes_with_them() {
        assert_eq!(whole(&chat(), &[0, 1, 2, 4, 5]), vec![0, 4, 5]);
        assert_eq!(whole(&chat(), &[0, 1, 2, 3, 4, 5]), vec![0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_split_of_a_kind_the_input_already_has_stays() {
        // the input ends with a call no result answers: AG2's split of another step stays
        let mut dangling = chat();
        dangling.extend(openai(
            r#"[{"role": "assistant", "content": null, "tool_calls": [
                    {"id": "z", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#,
        ));
        assert_eq!(whole(&dangling, &[0, 1, 2, 4, 5, 6]), vec![0, 1, 2, 4, 5, 6]);
        // an orphan result in the input: a cut result stays, but not at the start
        let mut orphan = chat();
        orphan.extend(openai(r#"[{"role": "tool", "tool_call_id": "x", "content": "lost"}]"#));
        assert_eq!(whole(&orphan, &[0, 2, 3, 4, 5, 6]), vec![0, 2, 3, 4, 5, 6]);
        assert_eq!(whole(&orphan, &[2, 3, 4, 5, 6]), vec![4, 5, 6]);
    }

    #[test]
    fn what_the_input_broke_stays() {
        // a result answering no call at all, and a call never answered
        let broken = openai(
            r#"[{"role": "tool", "tool_call_id": "x", "content": "lost"},
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}]"#,
        );
        assert_eq!(whole(&broken, &[0, 1, 2]), vec![0, 1, 2]);
        // but a history that did not start with a result does not start with one after a cut
        let mid = openai(
            r#"[{"role": "user", "content": "q"},
                {"role": "tool", "tool_call_id": "x", "content": "lost"},
                {"role": "assistant", "content": "a"}]"#,
        );
        assert_eq!(whole(&mid, &[1, 2]), vec![2]);
        assert_eq!(whole(&mid, &[0, 1, 2]), vec![0, 1, 2]);
    }

    #[test]
    fn legacy_function_messages_pass_as_they_came() {
        let legacy = openai(
            r#"[{"role": "user", "content": "q"},
                {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
                {"role": "function", "name": "f", "content": "r"},
                {"role": "assistant", "content": "a"}]"#,
        );
        assert_eq!(whole(&legacy, &[2, 3]), vec![2, 3]);
        assert_eq!(whole(&legacy, &[0, 1, 3]), vec![0, 1, 3]);
    }
}

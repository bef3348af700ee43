//! What each family's chat template adds around the text of messages, in tokens.
//!
//! Counted from the templates themselves (the jinja templates shipped with the models'
//! `tokenizer_config.json`, and mistral-common for Mistral) with each family's tokenizer; the
//! text inside is counted by the text counter, apart from this. What a template does that a
//! per-message count cannot know is resolved to the safe side (over), as noted per family.

use super::Framing;

/// The framing tokens of one family.
#[derive(Debug, Clone, Copy)]
pub(super) struct Template {
    /// Tokens around a message, by role: system, developer, user, assistant, tool, other
    /// (the role's name excluded). A tool message's include the wrapper its result gets.
    pub per_message: [usize; 6],
    /// Whether the role's name is written as text (and so counted).
    pub role_as_text: bool,
    /// Tokens for a message's `name` beyond the name itself, or `None` when the template does
    /// not write names.
    pub per_name: Option<usize>,
    /// Tokens around each tool call beyond its name and arguments.
    pub per_tool_call: usize,
    /// Tokens around each tool result part beyond its content (Anthropic's `tool_result`
    /// blocks, which sit in a user message).
    pub per_tool_result: usize,
    /// Tokens once per request: begin-of-text, reply priming, fixed preambles.
    pub priming: usize,
    /// Whether reasoning parts are counted (templates that give them back to the model).
    pub thinking: bool,
}

/// The template of a framing.
pub(super) fn template(framing: Framing) -> Template {
    match framing {
        // the cookbook formula: 3 per message + role, 1 + name, 3 per call, 3 to prime
        Framing::OpenAi => Template {
            per_message: [3; 6],
            role_as_text: true,
            per_name: Some(1),
            per_tool_call: 3,
            per_tool_result: 3,
            priming: 3,
            thinking: false,
        },
        Framing::Anthropic => Template { thinking: true, ..template(Framing::OpenAi) },
        // `<|start_header_id|>{role}<|end_header_id|>\n\n{content}<|eot_id|>`; a call is
        // `{"name": "…", "parameters": …}` (8 around name and arguments). Once per request:
        // `<|begin_of_text|>` (1), the system block Llama 3.1–3.3 always write (its header, 5,
        // counted even when the conversation has a system message of its own, the safe side)
        // with "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n" (20),
        // and the reply's header (4): 30. A tool message is written with the role `ipython`
        // (2 tokens, 1 more than `tool`).
        Framing::Llama3 => Template {
            per_message: [4, 4, 4, 4, 5, 4],
            role_as_text: true,
            per_name: None,
            per_tool_call: 8,
            per_tool_result: 0,
            priming: 30,
            thinking: false,
        },
        // ChatML (Qwen 2.5/3): `<|im_start|>{role}\n{content}<|im_end|>\n`; a call is
        // `\n<tool_call>\n{"name": "…", "arguments": …}\n</tool_call>` (12); a result is
        // `\n<tool_response>\n…\n</tool_response>` in a user turn (5); priming
        // `<|im_start|>assistant\n` (3). Reasoning is counted: Qwen3 gives back the reasoning
        // of the turn in progress (earlier turns' is counted too, the safe side).
        Framing::ChatMl => Template {
            per_message: [4, 4, 4, 4, 4 + 5, 4],
            role_as_text: true,
            per_name: None,
            per_tool_call: 12,
            per_tool_result: 5,
            priming: 3,
            thinking: true,
        },
        // DeepSeek V3/R1: the system prompt bare after `<｜begin▁of▁sentence｜>`, `<｜User｜>…`,
        // `<｜Assistant｜>…<｜end▁of▁sentence｜>`; a call is `<｜tool▁call▁begin｜>function
        // <｜tool▁sep｜>{name}\n```json\n{arguments}\n```<｜tool▁call▁end｜>` (9) inside
        // `<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>` (2, counted per call: the safe side);
        // a result `<｜tool▁output▁begin｜>…<｜tool▁output▁end｜>` inside the outputs pair (4).
        // Priming: begin-of-sentence, `<｜Assistant｜>` and R1's `<think>\n` (4). The template
        // drops earlier reasoning.
        Framing::DeepSeek => Template {
            per_message: [0, 0, 1, 2, 4, 1],
            role_as_text: false,
            per_name: None,
            per_tool_call: 11,
            per_tool_result: 4,
            priming: 4,
            thinking: false,
        },
        // Mistral (mistral-common, tekken): `[SYSTEM_PROMPT]…[/SYSTEM_PROMPT]`,
        // `[INST]…[/INST]`, an assistant turn ends with `</s>`; calls are `[TOOL_CALLS]` and
        // `[{"name": …, "arguments": …, "id": "…"}]` (21 per call), results
        // `[TOOL_RESULTS]{"content": …, "call_id": "…"}[/TOOL_RESULTS]` (18). Priming: `<s>`.
        // Reasoning (Magistral's `[THINK]`) is counted.
        Framing::Mistral => Template {
            per_message: [2, 2, 2, 1, 18, 2],
            role_as_text: false,
            per_name: None,
            per_tool_call: 21,
            per_tool_result: 18,
            priming: 1,
            thinking: true,
        },
    }
}

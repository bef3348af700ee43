//! Tokens of tool schemas.
//!
//! Providers render tool schemas into the prompt in a format they do not publish. For OpenAI
//! we render them the way the models have been observed to see them — a TypeScript-like
//! `namespace functions { type name = (_: { param: type, }) => any; }` block with
//! descriptions as `//` comments — count that text, and add 12 tokens of header (the
//! "# Tools" section and its framing). This is a documented heuristic: exact for simple
//! schemas in published measurements, within a few percent for nested ones. For Claude the
//! schemas are counted as their JSON text plus the 346-token tool-use system prompt Anthropic
//! documents for `tool_choice: auto`.

use serde_json::Value;

use super::TokenCounter;
use crate::message::Tool;

/// Header and framing tokens around OpenAI's rendered tool namespace.
pub(crate) const OPENAI_TOOLS_OVERHEAD: usize = 12;

/// Anthropic's documented tool-use system prompt (Claude 4 models, `tool_choice: auto`).
pub(crate) const ANTHROPIC_TOOLS_OVERHEAD: usize = 346;

/// The OpenAI rendering of tool schemas as prompt text.
pub(crate) fn render_openai(tools: &[Tool]) -> String {
    let mut out = String::from("# Tools\n\n## functions\n\nnamespace functions {\n\n");
    for tool in tools {
        if let Some(description) = &tool.description {
            for line in description.lines() {
                out.push_str("// ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push_str("type ");
        out.push_str(&tool.name);
        match tool.parameters.as_ref().and_then(|p| p.get("properties")).and_then(Value::as_object) {
            Some(properties) if !properties.is_empty() => {
                out.push_str(" = (_: {\n");
                let required = required_names(tool.parameters.as_ref());
                render_properties(properties, &required, 0, &mut out);
                out.push_str("}) => any;\n\n");
            }
            _ => out.push_str(" = () => any;\n\n"),
        }
    }
    out.push_str("} // namespace functions");
    out
}

/// Tokens of tool schemas for OpenAI models.
pub(crate) fn openai_tools_tokens(counter: &dyn TokenCounter, tools: &[Tool]) -> usize {
    if tools.is_empty() {
        return 0;
    }
    counter.count(&render_openai(tools)) + OPENAI_TOOLS_OVERHEAD
}

/// Tokens of tool schemas for Claude models.
pub(crate) fn anthropic_tools_tokens(counter: &dyn TokenCounter, tools: &[Tool]) -> usize {
    if tools.is_empty() {
        return 0;
    }
    let mut total = ANTHROPIC_TOOLS_OVERHEAD;
    for tool in tools {
        total += counter.count(&tool.name);
        if let Some(description) = &tool.description {
            total += counter.count(description);
        }
        match &tool.parameters {
            Some(schema) => total += counter.count(&schema.to_string()),
            None => total += counter.count(&Value::Object(tool.extra.clone()).to_string()),
        }
    }
    total
}

fn required_names(schema: Option<&Value>) -> Vec<&str> {
    schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

fn render_properties(
    properties: &serde_json::Map<String, Value>,
    required: &[&str],
    depth: usize,
    out: &mut String,
) {
    let indent = "  ".repeat(depth);
    for (name, schema) in properties {
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            for line in description.lines() {
                out.push_str(&indent);
                out.push_str("// ");
                out.push_str(line);
                out.push('\n');
            }
        }
        out.push_str(&indent);
        out.push_str(name);
        if !required.contains(&name.as_str()) {
            out.push('?');
        }
        out.push_str(": ");
        render_type(schema, depth, out);
        out.push_str(",\n");
    }
}

fn render_type(schema: &Value, depth: usize, out: &mut String) {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let rendered: Vec<String> = options.iter().map(Value::to_string).collect();
        out.push_str(&rendered.join(" | "));
        return;
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string") => out.push_str("string"),
        Some("integer" | "number") => out.push_str("number"),
        Some("boolean") => out.push_str("boolean"),
        Some("null") => out.push_str("null"),
        Some("array") => {
            match schema.get("items") {
                Some(items) => render_type(items, depth, out),
                None => out.push_str("any"),
            }
            out.push_str("[]");
        }
        Some("object") => match schema.get("properties").and_then(Value::as_object) {
            Some(properties) => {
                out.push_str("{\n");
                render_properties(properties, &required_names(Some(schema)), depth + 1, out);
                out.push_str(&"  ".repeat(depth));
                out.push('}');
            }
            None => out.push_str("object"),
        },
        _ => out.push_str("any"),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::{Extra, ToolStyle};

    #[test]
    fn renders_descriptions_optional_params_and_enums() {
        let tool = Tool {
            name: "get_weather".into(),
            description: Some("Current weather".into()),
            parameters: Some(json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "unit": {"type": "string", "enum": ["c", "f"]}
                },
                "required": ["city"]
            })),
            style: ToolStyle::OpenAi,
            extra: Extra::new(),
            inner_extra: Extra::new(),
        };
        let text = render_openai(&[tool]);
        assert!(text.contains("// Current weather\ntype get_weather = (_: {\n// City name\ncity: string,\nunit?: \"c\" | \"f\",\n}) => any;"), "{text}");
    }
}

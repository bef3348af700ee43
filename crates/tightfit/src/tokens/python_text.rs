//! The lengths, in code points, of what Python's `repr()` and `json.dumps()` write for JSON
//! data, without writing it.
//!
//! LangChain's `count_tokens_approximately` counts `len(repr(message.tool_calls))`, the
//! `repr()` of content blocks it does not know, and `len(json.dumps(tool))` for tool schemas;
//! matching its counts means matching those lengths exactly. Only the length is needed, so
//! nothing is allocated: one pass over the value.
//!
//! Python decides per character whether `repr()` escapes it (`str.isprintable()`, from its
//! Unicode database). This module knows the non-printable classes that occur in text
//! (controls, format characters, separators, private use, surrogates, noncharacters); a code
//! point that is unassigned in Python's Unicode version counts here as printable (one code
//! point), where Python writes an escape. Which points are unassigned changes with each Python
//! release, so no fixed table could match every interpreter.

use serde_json::{Number, Value};

/// `len(repr(value))` for the Python object JSON `value` reads as (`json.loads`): dicts,
/// lists, strings, ints, floats, `True`/`False`/`None`.
pub fn repr_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => str_repr_len(s),
        Value::Array(items) => {
            2 + items.iter().map(repr_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| str_repr_len(k) + 2 + repr_len(v)).sum::<usize>()
                + 2 * map.len().saturating_sub(1)
        }
    }
}

/// `len(json.dumps(value))` with `json.dumps`'s defaults: `ensure_ascii=True`, separators
/// `", "` and `": "`.
pub fn json_dumps_len(value: &Value) -> usize {
    match value {
        Value::Null => 4,
        Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => json_str_len(s),
        Value::Array(items) => {
            2 + items.iter().map(json_dumps_len).sum::<usize>() + 2 * items.len().saturating_sub(1)
        }
        Value::Object(map) => {
            2 + map.iter().map(|(k, v)| json_str_len(k) + 2 + json_dumps_len(v)).sum::<usize>()
                + 2 * map.len().saturating_sub(1)
        }
    }
}

fn number_len(n: &Number) -> usize {
    if let Some(i) = n.as_i64() {
        i.to_string().len()
    } else if let Some(u) = n.as_u64() {
        u.to_string().len()
    } else {
        float_repr(n.as_f64().unwrap_or(f64::NAN)).len()
    }
}

/// Python's `repr(float)`: the shortest digits that read back to the same value, written
/// plainly when the decimal exponent is in -4..16 (`0.0001`, `1e+16`, `1.5e-05`), with `.0`
/// on whole numbers.
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    // Rust's `{:e}` writes the shortest round-trip digits: "1.2345e-5", "-0e0"
    let sci = format!("{f:e}");
    let (mantissa, exponent) = sci.split_once('e').expect("{:e} writes an exponent");
    let exponent: i32 = exponent.parse().expect("{:e} writes an integer exponent");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1; // digits before the decimal point
        let body = if point <= 0 {
            format!("0.{}{digits}", "0".repeat((-point) as usize))
        } else if point as usize >= digits.len() {
            format!("{digits}{}.0", "0".repeat(point as usize - digits.len()))
        } else {
            let (int, frac) = digits.split_at(point as usize);
            format!("{int}.{frac}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let mantissa = if rest.is_empty() { first.to_string() } else { format!("{first}.{rest}") };
        let esign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{esign}{:02}", exponent.abs())
    }
}

/// `len(repr(s))`: the quotes (`'`, or `"` when `s` holds `'` and no `"`) and each character
/// as Python writes it.
pub fn str_repr_len(s: &str) -> usize {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    2 + s
        .chars()
        .map(|c| match c {
            '\\' | '\t' | '\n' | '\r' => 2,
            c if c == quote => 2,
            c if (c as u32) < 0x20 || c as u32 == 0x7f => 4,
            c if (c as u32) < 0x7f => 1,
            c if is_printable(c) => 1,
            c if (c as u32) < 0x100 => 4,
            c if (c as u32) < 0x10000 => 6,
            _ => 10,
        })
        .sum::<usize>()
}

/// The length of `s` as `json.dumps` writes it with `ensure_ascii=True`.
fn json_str_len(s: &str) -> usize {
    2 + s
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c if (c as u32) < 0x7f => 1,
            c if (c as u32) < 0x10000 => 6,
            _ => 12, // a surrogate pair
        })
        .sum::<usize>()
}

/// Python's `str.isprintable()` for one non-ASCII character: false for the general categories
/// Cc, Cf, Cs, Co, Zl, Zp, Zs and for noncharacters (Cn); see the module doc for other
/// unassigned code points.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    let not = matches!(u,
        // Cc
        0x80..=0x9f
        // Zs, Zl, Zp
        | 0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
        // Cf
        | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890 | 0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f | 0xfeff
        | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3
        | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        // Co
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd
        // Cn: noncharacters
        | 0xfdd0..=0xfdef
    ) || (u & 0xfffe) == 0xfffe;
    !not
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_read_as_python_writes_them() {
        let cases = [
            (1.0, "1.0"),
            (-0.0, "-0.0"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (0.0001, "0.0001"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (1234567890123456.0, "1234567890123456.0"),
            (2.5, "2.5"),
            (100.0, "100.0"),
            (1e-310, "1e-310"),
        ];
        for (f, python) in cases {
            assert_eq!(float_repr(f), python, "{f}");
        }
    }

    #[test]
    fn repr_lengths_match_python() {
        // each expected length is len(repr(json.loads(text))) in CPython 3.11
        let cases = [
            (json!({"a": 1, "b": [true, null, 2.5]}), "{'a': 1, 'b': [True, None, 2.5]}".len()),
            (json!("it's"), "\"it's\"".len()),
            (json!("both ' and \""), r#"'both \' and "'"#.len()),
            (json!("tab\tnew\nline\\"), r"'tab\tnew\nline\\'".len()),
            (json!("\u{1}\u{7f}"), r"'\x01\x7f'".len()),
            (json!("é日本👍"), 6),
            (json!("\u{a0}\u{200b}\u{feff}"), r"'\xa0\u200b\ufeff'".len()),
            (json!([]), 2),
            (json!({}), 2),
        ];
        for (value, python) in cases {
            assert_eq!(repr_len(&value), python, "{value}");
        }
    }

    #[test]
    fn json_dumps_lengths_match_python() {
        let value = json!({"name": "f", "description": "é \"q\"\n", "parameters": {"n": [1, 2.0]}});
        let python = r#"{"name": "f", "description": "\u00e9 \"q\"\n", "parameters": {"n": [1, 2.0]}}"#;
        assert_eq!(json_dumps_len(&value), python.len());
        assert_eq!(json_dumps_len(&json!("👍")), r#""\ud83d\udc4d""#.len());
    }
}

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

/// What `repr()` needs to know of a Python object, from whatever holds it: JSON data here,
/// live Python objects in the Python binding (which then measures a message's tool calls
/// without copying them).
#[derive(Debug)]
pub enum Shape<'a, N> {
    /// `None`.
    None,
    /// `True` / `False`.
    Bool(bool),
    /// An int that fits in 64 bits.
    Int(i64),
    /// A float.
    Float(f64),
    /// A str.
    Str(&'a str),
    /// A list.
    List(Vec<N>),
    /// A tuple.
    Tuple(Vec<N>),
    /// A dict whose keys are all strs, its items in order.
    StrDict(Vec<(&'a str, N)>),
    /// Any other dict, its items in order.
    Dict(Vec<(N, N)>),
    /// Anything else, by the length of its `repr()` as the holder worked it out.
    Opaque(usize),
}

/// A value whose `repr()` length [`node_repr_len`] can work out.
pub trait ReprNode: Sized {
    /// What reading the value can fail with.
    type Error;

    /// The value's shape.
    fn shape(&self) -> Result<Shape<'_, Self>, Self::Error>;
}

impl<'v> ReprNode for &'v Value {
    type Error = std::convert::Infallible;

    fn shape(&self) -> Result<Shape<'_, &'v Value>, Self::Error> {
        let value: &'v Value = self;
        Ok(match value {
            Value::Null => Shape::None,
            Value::Bool(b) => Shape::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Shape::Int(i),
                None => Shape::Opaque(number_len(n)),
            },
            Value::String(s) => Shape::Str(s),
            Value::Array(items) => Shape::List(items.iter().collect()),
            Value::Object(map) => Shape::StrDict(map.iter().map(|(k, v)| (k.as_str(), v)).collect()),
        })
    }
}

/// `len(repr(node))`: Python's `repr()` rules for `None`, bools, ints, floats, strs, lists,
/// tuples (`(a,)`) and dicts, over any [`ReprNode`]. Cost: one visit of every value, no copy.
pub fn node_repr_len<N: ReprNode>(node: &N) -> Result<usize, N::Error> {
    Ok(match node.shape()? {
        Shape::None => 4,
        Shape::Bool(true) => 4,
        Shape::Bool(false) => 5,
        Shape::Int(i) => i.to_string().len(),
        Shape::Float(f) => float_repr(f).len(),
        Shape::Str(s) => str_repr_len(s),
        Shape::Opaque(n) => n,
        Shape::List(items) => 2 + sum_lens(&items)? + 2 * items.len().saturating_sub(1),
        Shape::Tuple(items) => {
            2 + sum_lens(&items)? + 2 * items.len().saturating_sub(1) + usize::from(items.len() == 1)
        }
        Shape::StrDict(items) => {
            let mut n = 2 + 2 * items.len().saturating_sub(1);
            for (k, v) in &items {
                n += str_repr_len(k) + 2 + node_repr_len(v)?;
            }
            n
        }
        Shape::Dict(items) => {
            let mut n = 2 + 2 * items.len().saturating_sub(1);
            for (k, v) in &items {
                n += node_repr_len(k)? + 2 + node_repr_len(v)?;
            }
            n
        }
    })
}

fn sum_lens<N: ReprNode>(items: &[N]) -> Result<usize, N::Error> {
    let mut n = 0;
    for item in items {
        n += node_repr_len(item)?;
    }
    Ok(n)
}

/// `len(repr(value))` for the Python object JSON `value` reads as (`json.loads`): dicts,
/// lists, strings, ints, floats, `True`/`False`/`None`.
pub fn repr_len(value: &Value) -> usize {
    match node_repr_len(&value) {
        Ok(n) => n,
        Err(never) => match never {},
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

/// What `repr()` adds to each ASCII byte: 1 for `\\`, `\t`, `\n`, `\r` (written `\\x`), 3 for
/// other controls (written `\\xNN`), 0 otherwise (quotes are counted apart).
const ASCII_EXTRA: [u8; 128] = {
    let mut table = [0u8; 128];
    let mut b = 0;
    while b < 0x20 {
        table[b] = 3;
        b += 1;
    }
    table[0x7f] = 3;
    table[b'\t' as usize] = 1;
    table[b'\n' as usize] = 1;
    table[b'\r' as usize] = 1;
    table[b'\\' as usize] = 1;
    table
};

/// `len(repr(s))`: the quotes (`'`, or `"` when `s` holds `'` and no `"`) and each character
/// as Python writes it. ASCII text is measured with a table in one pass over its bytes.
pub fn str_repr_len(s: &str) -> usize {
    if s.is_ascii() {
        let (mut extra, mut single, mut double) = (0usize, 0usize, 0usize);
        for &b in s.as_bytes() {
            extra += usize::from(ASCII_EXTRA[usize::from(b)]);
            single += usize::from(b == b'\'');
            double += usize::from(b == b'"');
        }
        // the quote Python picks is escaped where it occurs; `"` is picked only when absent
        let quotes = if single > 0 && double == 0 { 0 } else { single };
        return 2 + s.len() + extra + quotes;
    }
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
            (json!("a'b\"c"), r#"'a\'b"c'"#.len()),
            (json!("é'"), "\"é'\"".chars().count()),
            (json!("é'\""), r#"'é\'"'"#.chars().count()),
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
    fn tuples_and_keys_that_are_not_strings() {
        #[derive(Clone)]
        enum T {
            Int(i64),
            Tuple(Vec<T>),
            Dict(Vec<(T, T)>),
            Opaque(usize),
        }
        impl ReprNode for T {
            type Error = std::convert::Infallible;
            fn shape(&self) -> Result<Shape<'_, T>, Self::Error> {
                Ok(match self {
                    T::Int(i) => Shape::Int(*i),
                    T::Tuple(items) => Shape::Tuple(items.clone()),
                    T::Dict(items) => Shape::Dict(items.clone()),
                    T::Opaque(n) => Shape::Opaque(*n),
                })
            }
        }
        let len = |t: T| match node_repr_len(&t) {
            Ok(n) => n,
            Err(never) => match never {},
        };
        assert_eq!(len(T::Tuple(vec![T::Int(1)])), "(1,)".len());
        assert_eq!(len(T::Tuple(vec![])), "()".len());
        assert_eq!(len(T::Tuple(vec![T::Int(1), T::Int(-20)])), "(1, -20)".len());
        let dict = T::Dict(vec![(T::Int(1), T::Tuple(vec![T::Int(2)])), (T::Opaque(3), T::Int(0))]);
        assert_eq!(len(dict), "{1: (2,), abc: 0}".len());
    }

    #[test]
    fn json_dumps_lengths_match_python() {
        let value = json!({"name": "f", "description": "é \"q\"\n", "parameters": {"n": [1, 2.0]}});
        let python = r#"{"name": "f", "description": "\u00e9 \"q\"\n", "parameters": {"n": [1, 2.0]}}"#;
        assert_eq!(json_dumps_len(&value), python.len());
        assert_eq!(json_dumps_len(&json!("👍")), r#""\ud83d\udc4d""#.len());
    }
}

//! Python data <-> `serde_json::Value`, walked directly.
//!
//! Why not `json.dumps` and `serde_json::from_str`: the walk skips building and re-parsing a
//! string, and it can say where a value that is not JSON sits
//! (`messages[3].content[0].text: expected JSON data ..., found datetime`), which `json.dumps`
//! cannot. Measured (release build) on the 1M-token history of `extreme_long.jsonl` (4,857
//! messages, 8 MB): the walk takes 10 ms; `json.dumps` 26 ms plus `serde_json::from_str` 14 ms
//! = 35 ms. Why not `pythonize`: its latest release (0.29) needs pyo3 0.29, and two pyo3
//! versions cannot link into one module.
//!
//! Pydantic models (the OpenAI and Anthropic SDKs' messages and blocks) are read through their
//! `model_dump(mode="json", exclude_none=True)`.
//!
//! Cost: one visit of every value, one `String` copy per string (Python keeps its UTF-8 form
//! cached, so `to_str` does not re-encode). The path of a bad value is only built on the way
//! out of an error, so a good input pays nothing for it.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::{Map, Number, Value};

/// How deep data may nest: the limit `serde_json` applies when it reads text, so a history
/// the command line can read is a history Python can pass, and no input can exhaust the stack.
pub(crate) const MAX_DEPTH: usize = 128;

enum Segment {
    Key(String),
    Index(usize),
}

/// A value that is not JSON data, and where it sits.
pub(crate) struct ConvertError {
    /// What is wrong.
    pub reason: String,
    /// The path from the bad value up to the root (built on the way out).
    reversed: Vec<Segment>,
}

impl ConvertError {
    fn new(reason: impl Into<String>) -> ConvertError {
        ConvertError { reason: reason.into(), reversed: Vec::new() }
    }

    fn at(mut self, segment: Segment) -> ConvertError {
        self.reversed.push(segment);
        self
    }

    /// The path of the bad value under `root`: `messages[3].content[0].text`.
    pub fn path(&self, root: &str) -> String {
        let mut path = root.to_string();
        for segment in self.reversed.iter().rev() {
            match segment {
                Segment::Index(i) => path.push_str(&format!("[{i}]")),
                Segment::Key(k) if path.is_empty() => path.push_str(k),
                Segment::Key(k) => {
                    path.push('.');
                    path.push_str(k);
                }
            }
        }
        path
    }
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "an unknown type".into())
}

fn string(s: &Bound<'_, PyString>) -> Result<String, ConvertError> {
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| ConvertError::new("a string that is not valid Unicode (a lone surrogate)"))
}

/// The items of a list or tuple as a JSON array.
fn array<'py>(
    items: impl Iterator<Item = Bound<'py, PyAny>>,
    len: usize,
    depth: usize,
) -> Result<Value, ConvertError> {
    let mut out = Vec::with_capacity(len);
    for (i, item) in items.enumerate() {
        out.push(walk(&item, depth + 1).map_err(|e| e.at(Segment::Index(i)))?);
    }
    Ok(Value::Array(out))
}

fn walk(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
    if depth > MAX_DEPTH {
        return Err(ConvertError::new(format!("nested deeper than {MAX_DEPTH} levels")));
    }
    // the common types first, exact checks before subclass checks
    if let Ok(s) = obj.cast_exact::<PyString>() {
        return string(s).map(Value::String);
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let Ok(key) = key.cast::<PyString>() else {
                return Err(ConvertError::new(format!(
                    "a key that is not a string ({}): JSON keys are strings",
                    type_name(&key)
                )));
            };
            let key = string(key)?;
            match walk(&value, depth + 1) {
                Ok(v) => {
                    map.insert(key, v);
                }
                Err(e) => return Err(e.at(Segment::Key(key))),
            }
        }
        return Ok(Value::Object(map));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return array(list.iter(), list.len(), depth);
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast_exact::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if let Ok(int) = obj.cast::<PyInt>() {
        if let Ok(i) = int.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = int.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return big_number(obj);
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        let f = float.value();
        return Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| ConvertError::new(format!("{f} is not a finite number, which JSON cannot hold")));
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return array(tuple.iter(), tuple.len(), depth);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return string(s).map(Value::String);
    }
    if is_decimal(obj) {
        return decimal(obj);
    }
    if let Some(dumped) = pydantic_json(obj) {
        return walk(&dumped?, depth);
    }
    Err(ConvertError::new(format!(
        "expected JSON data (dict, list, str, int, float, bool or None), found {}",
        type_name(obj)
    )))
}

/// An integer beyond 64 bits, kept exactly: its decimal text becomes the number's text
/// (`serde_json`'s `arbitrary_precision`), as the command line keeps one it reads.
fn big_number(int: &Bound<'_, PyAny>) -> Result<Value, ConvertError> {
    let text = int.str().map_err(|e| ConvertError::new(format!("an integer without a decimal form: {e}")))?;
    let text = string(&text)?;
    serde_json::from_str::<Number>(&text)
        .map(Value::Number)
        .map_err(|e| ConvertError::new(format!("an integer JSON cannot hold ({e})")))
}

/// `decimal.Decimal`, looked up once per interpreter.
fn decimal_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static DECIMAL: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    DECIMAL.import(py, "decimal", "Decimal")
}

/// Whether `obj` is a `decimal.Decimal`.
fn is_decimal(obj: &Bound<'_, PyAny>) -> bool {
    decimal_type(obj.py()).is_ok_and(|decimal| obj.is_instance(decimal.as_any()).unwrap_or(false))
}

/// A finite `decimal.Decimal`, kept exactly: its text (`str(d)`, which is JSON's number
/// grammar for finite values: `1.50`, `-2E+7`) becomes the number's text.
fn decimal(obj: &Bound<'_, PyAny>) -> Result<Value, ConvertError> {
    let finite =
        obj.call_method0(intern!(obj.py(), "is_finite")).and_then(|f| f.is_truthy()).unwrap_or(false);
    let text = obj.str().map_err(|e| ConvertError::new(format!("a Decimal without a text form: {e}")))?;
    let text = string(&text)?;
    if !finite {
        return Err(ConvertError::new(format!(
            "Decimal('{text}') is not a finite number, which JSON cannot hold"
        )));
    }
    serde_json::from_str::<Number>(&text)
        .map(Value::Number)
        .map_err(|e| ConvertError::new(format!("Decimal('{text}') is not a JSON number ({e})")))
}

/// The JSON form of a pydantic model (what the OpenAI and Anthropic SDKs return: a
/// `ChatCompletionMessage`, a `ToolUseBlock`), with its unset `None` fields left out, as the
/// wire has them; `None` for anything else.
fn pydantic_json<'py>(obj: &Bound<'py, PyAny>) -> Option<Result<Bound<'py, PyAny>, ConvertError>> {
    let py = obj.py();
    let dump = obj.getattr(intern!(py, "model_dump")).ok().filter(|d| d.is_callable())?;
    let kwargs = PyDict::new(py);
    let dumped = kwargs
        .set_item("mode", "json")
        .and_then(|_| kwargs.set_item("exclude_none", true))
        .and_then(|_| dump.call((), Some(&kwargs)));
    Some(dumped.map_err(|e| ConvertError::new(format!("{}.model_dump() failed: {e}", type_name(obj)))))
}

/// Reads Python data (dicts, lists, tuples, strings, numbers, booleans, `None`) as JSON.
pub(crate) fn to_value(obj: &Bound<'_, PyAny>) -> Result<Value, ConvertError> {
    walk(obj, 0)
}

/// [`to_value`] of a value that sits `depth` levels down (an item of a list is at depth 1),
/// so that the nesting limit is the one the whole would have.
pub(crate) fn to_value_at(obj: &Bound<'_, PyAny>, depth: usize) -> Result<Value, ConvertError> {
    walk(obj, depth)
}

/// A number beyond `i64`/`u64`, by its text (kept as it was read): an integer text becomes a
/// Python `int` of any size; a float that a Python `float` holds exactly (its shortest form has
/// the text's value: `0.1`, `1e5`) a `float`; any other (400 digits, `1e400`) a
/// `decimal.Decimal` of the text, so nothing is rounded on the way back.
fn number_to_python<'py>(py: Python<'py>, n: &Number) -> PyResult<Bound<'py, PyAny>> {
    let text = n.to_string();
    if is_integer_text(&text) {
        return py.get_type::<PyInt>().call1((text,));
    }
    match text.parse::<f64>() {
        Ok(f) if f.is_finite() && same_value(&text, &format!("{f:e}")) => Ok(f.into_pyobject(py)?.into_any()),
        _ => decimal_type(py)?.call1((text,)),
    }
}

fn is_integer_text(text: &str) -> bool {
    let digits = text.strip_prefix('-').unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Whether two decimal texts (JSON numbers, or Rust's `{:e}` of an `f64`) have the same value:
/// both brought to (sign, significant digits, exponent).
fn same_value(a: &str, b: &str) -> bool {
    match (decimal_parts(a), decimal_parts(b)) {
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

/// `-12.50e3` -> `(true, "125", 2)`: the sign, the digits without leading or trailing zeros,
/// and the power of ten of the last digit (zero is `(sign, "", 0)`). `None` for an exponent
/// beyond `i64`.
fn decimal_parts(text: &str) -> Option<(bool, String, i64)> {
    let (negative, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], text[at + 1..].trim_start_matches('+').parse::<i64>().ok()?),
        None => (text, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    let digits = digits.trim_start_matches('0');
    let trimmed = digits.trim_end_matches('0');
    if trimmed.is_empty() {
        return Some((negative, String::new(), 0));
    }
    let exponent = exponent
        .checked_sub(i64::try_from(fraction.len()).ok()?)?
        .checked_add(i64::try_from(digits.len() - trimmed.len()).ok()?)?;
    Some((negative, trimmed.to_string(), exponent))
}

/// Writes JSON as Python data: objects become dicts (key order kept), arrays lists.
pub(crate) fn to_python<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_pyobject(py)?.into_any()
            } else if let Some(u) = n.as_u64() {
                u.into_pyobject(py)?.into_any()
            } else {
                number_to_python(py, n)?
            }
        }
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_python(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, to_python(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

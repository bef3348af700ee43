//! `tightfit._native.compress_texts`: the engine's `compress_text` on bare texts, for
//! `tightfit.compat.ag2`'s default text compressor (AG2 hands a compressor one text at a time).

use pyo3::prelude::*;
use serde_json::Value;
use tightfit::config::{FromParams, Params};
use tightfit::steps::{CompressText, ConfigError, Step};
use tightfit::tokens::{OpenAiEncoding, TokenCounter};

use crate::convert::to_value;
use crate::errors::{guard, Failure};

/// The step a `compress_text` configuration map describes (its `type` ignored); `ConfigError`
/// names a bad key.
fn step(config: &Bound<'_, PyAny>) -> Result<CompressText, Failure> {
    let value = to_value(config).map_err(|e| Failure::Config(ConfigError::new(e.path(""), e.reason)))?;
    let Value::Object(mut map) = value else {
        return Err(Failure::Type("compress_texts: expected a configuration dict".into()));
    };
    map.remove("type");
    let mut params = Params::new(map);
    let step = CompressText::from_params(&mut params)?;
    params.finish()?;
    step.check()?;
    Ok(step)
}

/// One compressed text: (text, words, words kept, tokens before, tokens after).
type Answer = (String, usize, usize, usize, usize);

/// Each of `texts` compressed as the `compress_text` step configured by `config` compresses a
/// text part, with a token target and the counts in cl100k_base tokens (AG2's and LLMLingua's
/// encoding): `(text, words, words kept, tokens before, tokens after)` per text, the text as it
/// was when it is left alone. The work runs with the GIL released.
#[pyfunction]
pub(crate) fn compress_texts(
    py: Python<'_>,
    texts: Vec<String>,
    config: &Bound<'_, PyAny>,
) -> PyResult<Vec<Answer>> {
    let step = step(config)?;
    let out = py.detach(|| {
        guard(|| {
            let counter = OpenAiEncoding::Cl100kBase;
            texts
                .into_iter()
                .map(|text| {
                    let before = counter.count(&text);
                    match step.compress(&text, &counter).map_err(|e| Failure::Other(e.to_string()))? {
                        Some(c) => {
                            let after = counter.count(&c.text);
                            Ok((c.text, c.words, c.kept, before, after))
                        }
                        None => {
                            let words = text.split_whitespace().count();
                            Ok((text, words, words, before, before))
                        }
                    }
                })
                .collect::<Result<Vec<_>, Failure>>()
        })
    })?;
    Ok(out)
}

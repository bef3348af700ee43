//! Any bytes read as OpenAI Chat Completions: see `common::check`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tightfit::format::{Format, FormatHint};

mod common;

fuzz_target!(|data: &[u8]| common::check(data, FormatHint::Exactly(Format::OpenAi)));

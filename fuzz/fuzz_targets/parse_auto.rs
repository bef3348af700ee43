//! Any bytes read as the format detected from its shape: see `common::check`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tightfit::format::FormatHint;

mod common;

fuzz_target!(|data: &[u8]| common::check(data, FormatHint::Auto));

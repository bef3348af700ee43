//! Reading image sizes from base64 text and `data:` URIs: any text, and the base64 of any
//! bytes (so the header parsers see arbitrary image bytes). Never panics; a size read is
//! priced without panicking either.

#![no_main]

use base64::Engine;
use libfuzzer_sys::fuzz_target;
use tightfit::tokens::image::{self, Dimensions};

fn price(size: Option<Dimensions>) {
    if let Some(size) = size {
        image::openai_image_tokens(size, Some("high"));
        image::openai_image_tokens(size, Some("low"));
        image::claude_image_tokens(size);
    }
}

fuzz_target!(|data: &[u8]| {
    let encoded = base64::engine::general_purpose::STANDARD.encode(data);
    price(image::dimensions_from_base64(&encoded));
    if let Ok(text) = std::str::from_utf8(data) {
        price(image::dimensions_from_base64(text));
        price(image::dimensions_from_data_uri(text));
        price(image::dimensions_from_data_uri(&format!("data:image/png;base64,{text}")));
    }
});

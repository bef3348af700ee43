//! Image tokens from image dimensions.
//!
//! - OpenAI (GPT-4o family): `detail: low` costs 85 tokens. `high` (and `auto`, counted as
//!   high: the safe side) scales the image to fit in 2048×2048, then so that its short side is
//!   at most 768 px, and costs 85 + 170 per 512-px tile.
//! - Claude: the image is scaled down (aspect kept) until its long side is at most 1568 px and
//!   it is at most 1.2 megapixels (1,600 tokens), and costs ⌈w·h / 750⌉ tokens.
//!
//! Dimensions are read from the header of a `data:` URI or base64 payload (PNG, JPEG, GIF,
//! WebP, and the other formats the `imagesize` crate knows), decoding only as much base64 as
//! the header needs. An image known only by URL uses a configurable default size.

use base64::Engine;

/// The size of an image in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dimensions {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

/// The size assumed for an image whose dimensions cannot be read (a remote URL): 1024×1024,
/// which costs 765 tokens at OpenAI high detail and 1,399 for Claude.
pub const DEFAULT_DIMENSIONS: Dimensions = Dimensions { width: 1024, height: 1024 };

/// Reads the dimensions of a base64-encoded image from its header.
///
/// Decodes a growing prefix (4 KiB of base64, then 64 KiB, then all), so a PNG costs one
/// small decode and a JPEG with a large EXIF block a few. `None` when the data is not an
/// image format `imagesize` knows, or is not base64.
pub fn dimensions_from_base64(data: &str) -> Option<Dimensions> {
    let data = data.trim();
    for limit in [4096usize, 65536, usize::MAX] {
        let end = limit.min(data.len()) / 4 * 4;
        // a byte prefix: `end` need not fall on a char boundary of text that is not base64
        let prefix = if limit >= data.len() { data.as_bytes() } else { &data.as_bytes()[..end] };
        let engine = base64::engine::general_purpose::STANDARD;
        let bytes = match engine.decode(prefix) {
            Ok(bytes) => bytes,
            Err(_) if limit >= data.len() => {
                base64::engine::general_purpose::STANDARD_NO_PAD.decode(data.trim_end_matches('=')).ok()?
            }
            Err(_) => return None,
        };
        match imagesize::blob_size(&bytes) {
            Ok(size) => {
                return Some(Dimensions {
                    width: u32::try_from(size.width).ok()?,
                    height: u32::try_from(size.height).ok()?,
                })
            }
            Err(_) if limit >= data.len() => return None,
            Err(_) => continue,
        }
    }
    None
}

/// Reads the dimensions of the image in a `data:<type>;base64,<data>` URI.
pub fn dimensions_from_data_uri(uri: &str) -> Option<Dimensions> {
    let rest = uri.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    if !header.ends_with(";base64") {
        return None;
    }
    dimensions_from_base64(data)
}

/// OpenAI's token cost of an image at a `detail` level (`low`, `high`, `auto` or none).
pub fn openai_image_tokens(size: Dimensions, detail: Option<&str>) -> usize {
    if detail == Some("low") {
        return 85;
    }
    let (mut w, mut h) = (size.width.max(1) as f64, size.height.max(1) as f64);
    let fit = (2048.0 / w.max(h)).min(1.0);
    w *= fit;
    h *= fit;
    let short = (768.0 / w.min(h)).min(1.0);
    w *= short;
    h *= short;
    let tiles = (w / 512.0).ceil() as usize * (h / 512.0).ceil() as usize;
    85 + 170 * tiles
}

/// Claude's token cost of an image: ⌈w·h/750⌉ after Anthropic's downscaling (long side at
/// most 1568 px, area at most 1.2 MP, so at most 1,600 tokens).
pub fn claude_image_tokens(size: Dimensions) -> usize {
    let (mut w, mut h) = (size.width.max(1) as f64, size.height.max(1) as f64);
    let long = (1568.0 / w.max(h)).min(1.0);
    w *= long;
    h *= long;
    let max_area = 1_200_000.0;
    if w * h > max_area {
        let s = (max_area / (w * h)).sqrt();
        w *= s;
        h *= s;
    }
    ((w.floor() * h.floor()) / 750.0).ceil() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(width: u32, height: u32) -> Dimensions {
        Dimensions { width, height }
    }

    #[test]
    fn openai_tiles_follow_the_published_examples() {
        // OpenAI's own examples: 1024×1024 high = 765; 2048×4096 high = 1105; low = 85.
        assert_eq!(openai_image_tokens(dims(1024, 1024), Some("high")), 765);
        assert_eq!(openai_image_tokens(dims(2048, 4096), Some("high")), 1105);
        assert_eq!(openai_image_tokens(dims(4096, 8192), Some("low")), 85);
        assert_eq!(openai_image_tokens(dims(512, 512), None), 255);
    }

    #[test]
    fn claude_cost_is_area_over_750_and_capped() {
        // Anthropic's table: 1000×1000 ≈ 1334 tokens; 1092×1092 ≈ 1590.
        assert_eq!(claude_image_tokens(dims(1000, 1000)), 1334);
        assert!((1585..=1600).contains(&claude_image_tokens(dims(1092, 1092))));
        assert!(claude_image_tokens(dims(8000, 8000)) <= 1600);
        assert_eq!(claude_image_tokens(dims(200, 200)), 54);
    }

    #[test]
    fn reads_png_dimensions_from_a_data_uri() {
        // A 3×2 PNG header (signature, IHDR) is enough for the size.
        let mut png = vec![0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13];
        png.extend_from_slice(b"IHDR");
        png.extend_from_slice(&3u32.to_be_bytes());
        png.extend_from_slice(&2u32.to_be_bytes());
        png.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        let uri = format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(&png));
        assert_eq!(dimensions_from_data_uri(&uri), Some(dims(3, 2)));
        assert_eq!(dimensions_from_data_uri("data:image/png;base64,!!!"), None);
        assert_eq!(dimensions_from_data_uri("https://example.com/a.png"), None);
    }
}

//! Which headers go on, and what the proxy derives from the credentials in them.
//!
//! Every header is passed through (`anthropic-version`, `anthropic-beta`, `x-stainless-*`,
//! `openai-organization`, ...) but the hop-by-hop ones (RFC 9110 §7.6.1, and those the
//! `Connection` header names), `host` and `content-length` (the client library sets them for
//! the new connection and body) and the proxy's own `x-tightfit-*`. Credentials go to the
//! route's configured upstream only, and reach the rest of the proxy only through a keyed
//! hash: they are never logged or stored.

use axum::http::{HeaderMap, HeaderName};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// Headers that never cross the proxy, whatever the direction.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// The headers that carry a provider credential: OpenAI's and Anthropic's bearer token,
/// Anthropic's key, Azure OpenAI's and Gemini's keys.
const CREDENTIALS: &[&str] = &["authorization", "x-api-key", "api-key", "x-goog-api-key"];

/// The prefix of the proxy's own headers (read from requests, written on responses).
pub const OWN_PREFIX: &str = "x-tightfit-";

/// The headers of a client's request, as they go to the upstream.
pub fn request_headers(incoming: &HeaderMap) -> HeaderMap {
    let mut out = without_hop_by_hop(incoming);
    out.remove(axum::http::header::HOST);
    out.remove(axum::http::header::CONTENT_LENGTH);
    let own: Vec<HeaderName> =
        out.keys().filter(|name| name.as_str().starts_with(OWN_PREFIX)).cloned().collect();
    for name in own {
        out.remove(name);
    }
    out
}

/// The headers of an upstream's response, as they go to the client.
pub fn response_headers(upstream: &HeaderMap) -> HeaderMap {
    without_hop_by_hop(upstream)
}

fn without_hop_by_hop(headers: &HeaderMap) -> HeaderMap {
    // the Connection header may name more headers that are this hop's only
    let named: Vec<String> = headers
        .get_all(axum::http::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|name| name.trim().to_ascii_lowercase())
        .collect();
    let mut out = headers.clone();
    for name in HOP_BY_HOP.iter().copied().chain(named.iter().map(String::as_str)) {
        out.remove(name);
    }
    out
}

/// The API key a request carries (Anthropic's `x-api-key`, else the bearer token), for the
/// per-key policy table: its SHA-256 in hex, never the key.
pub fn api_key_digest(headers: &HeaderMap) -> Option<String> {
    let key = headers.get("x-api-key").and_then(|v| v.to_str().ok()).or_else(|| {
        let auth = headers.get(axum::http::header::AUTHORIZATION)?.to_str().ok()?;
        auth.strip_prefix("Bearer ").or_else(|| auth.strip_prefix("bearer "))
    })?;
    Some(hex(&Sha256::digest(key.trim().as_bytes())))
}

/// Derives conversation keys from a request's credentials and what identifies the
/// conversation, with HMAC-SHA-256 under the proxy's session secret: two tenants never share a
/// conversation, and the key reveals nothing of the credentials.
#[derive(Clone)]
pub struct KeyHasher {
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for KeyHasher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyHasher(..)")
    }
}

/// The key of conversation keys' hash when no secret is configured.
const DEFAULT_SECRET: &[u8] = b"tightfit-proxy session keys v1";

impl KeyHasher {
    /// A hasher keyed by `secret` (a fixed key if `None`).
    pub fn new(secret: Option<&[u8]>) -> KeyHasher {
        let mac = Hmac::<Sha256>::new_from_slice(secret.unwrap_or(DEFAULT_SECRET))
            .expect("HMAC takes any key length");
        KeyHasher { mac }
    }

    /// The key of a conversation: 32 hex digits (the length a session's checkpoint key has)
    /// of the hash of the route, every credential header, and `conversation` (the client's
    /// `x-tightfit-session`, or the head of the history).
    pub fn conversation_key(&self, route: &str, headers: &HeaderMap, conversation: &str) -> String {
        let mut mac = self.mac.clone();
        let mut field = |bytes: &[u8]| {
            // length-prefixed, so that no two field lists hash alike
            mac.update(&(bytes.len() as u64).to_le_bytes());
            mac.update(bytes);
        };
        field(route.as_bytes());
        for name in CREDENTIALS {
            for value in headers.get_all(*name) {
                field(name.as_bytes());
                field(value.as_bytes());
            }
        }
        field(conversation.as_bytes());
        hex(&mac.finalize().into_bytes()[..16])
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(HeaderName::from_bytes(k.as_bytes()).unwrap(), HeaderValue::from_str(v).unwrap());
        }
        map
    }

    #[test]
    fn hop_by_hop_and_own_headers_stay_here() {
        let incoming = headers(&[
            ("connection", "keep-alive, x-trace"),
            ("x-trace", "1"),
            ("keep-alive", "timeout=5"),
            ("host", "proxy:8787"),
            ("content-length", "12"),
            ("x-tightfit-policy", "off"),
            ("x-tightfit-key", "secret"),
            ("anthropic-version", "2023-06-01"),
            ("anthropic-beta", "a,b"),
            ("x-stainless-lang", "python"),
            ("authorization", "Bearer sk-1"),
        ]);
        let out = request_headers(&incoming);
        let mut names: Vec<&str> = out.keys().map(|k| k.as_str()).collect();
        names.sort();
        assert_eq!(names, ["anthropic-beta", "anthropic-version", "authorization", "x-stainless-lang"]);
    }

    #[test]
    fn tenants_never_share_a_conversation_key() {
        let hasher = KeyHasher::new(None);
        let a = hasher.conversation_key("openai", &headers(&[("authorization", "Bearer sk-a")]), "head");
        let b = hasher.conversation_key("openai", &headers(&[("authorization", "Bearer sk-b")]), "head");
        let a_again =
            hasher.conversation_key("openai", &headers(&[("authorization", "Bearer sk-a")]), "head");
        assert_ne!(a, b);
        assert_eq!(a, a_again);
        assert_eq!(a.len(), 32);
        assert!(!a.contains("sk-a"));
        let other_secret = KeyHasher::new(Some(b"another"));
        assert_ne!(
            a,
            other_secret.conversation_key("openai", &headers(&[("authorization", "Bearer sk-a")]), "head")
        );
    }

    #[test]
    fn the_key_digest_is_sha256_of_the_bare_key() {
        // printf %s sk-test | sha256sum
        let expected = "f3abf2a6cc4f00987743db5f544ba345b4899ae31f326d8ee9c4816de153c9e0";
        let digest = api_key_digest(&headers(&[("authorization", "Bearer sk-test")])).unwrap();
        assert_eq!(digest, expected);
        assert_eq!(digest, api_key_digest(&headers(&[("x-api-key", "sk-test")])).unwrap());
    }
}

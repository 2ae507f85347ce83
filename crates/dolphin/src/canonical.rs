//! Canonical JSON (RFC 8785) of the values this crate builds itself, and their digests, without
//! a failure case: configuration identities, checkpoint headers, schema declarations and the
//! backend identity hold only strings, booleans, null and integers well inside ±(2^53 − 1).
//!
//! It knows which values it is given; it does not know what they mean.

use flysim_types::Digest;
use serde_json::Value;

/// The canonical text of `value`.
///
/// Canonical JSON refuses only integers beyond ±(2^53 − 1), which no value of this crate holds
/// once validated; should one ever be given, its compact JSON (the same text up to key order
/// and number form) stands in rather than a panic.
pub(crate) fn text(value: &Value) -> String {
    flysim_types::json::to_canonical(value).unwrap_or_else(|_| value.to_string())
}

/// The value digest of `value`: SHA-256 of its [`text`], the same digest as
/// `flysim_types::digest::value_digest`.
pub(crate) fn digest(value: &Value) -> Digest {
    flysim_types::digest::sha256(text(value).as_bytes())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_text_and_digest_are_the_canonical_ones() {
        let value = json!({"z": [1, 2, 4_294_967_295_u32], "a": "\u{1}\"x", "m": null, "b": true});
        assert_eq!(
            text(&value),
            flysim_types::json::to_canonical(&value).unwrap()
        );
        assert_eq!(
            digest(&value),
            flysim_types::digest::value_digest(&value).unwrap()
        );
    }
}

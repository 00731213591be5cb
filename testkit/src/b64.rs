//! Standard base64 (RFC 4648 alphabet), as file inputs and x402 headers carry it.

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Decodes with or without padding, and with any trailing bits.
const LENIENT: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true),
);

/// Standard base64 with padding.
pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Standard base64, padding optional; `None` on any other character.
pub fn b64_decode(text: &str) -> Option<Vec<u8>> {
    LENIENT.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_both_ways() {
        for text in ["", "f", "fo", "foo", "foob", "fooba", "foobar"] {
            let encoded = b64(text.as_bytes());
            assert_eq!(b64_decode(&encoded).as_deref(), Some(text.as_bytes()), "{encoded}");
        }
        assert_eq!(b64(b"foobar"), "Zm9vYmFy");
        assert_eq!(b64(b"fo"), "Zm8=");
        assert_eq!(b64_decode("Zm8"), Some(b"fo".to_vec()));
        assert_eq!(b64_decode("Zm*="), None);
    }
}

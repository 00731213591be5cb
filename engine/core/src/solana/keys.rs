//! Base58 inputs: addresses (32 bytes: wallets, mints, token accounts, programs) and
//! transaction signatures (64 bytes). A string of the right alphabet and length that does
//! not decode to exactly that many bytes is refused with the field named; schemas carry a
//! `format` (`solana-address`, `solana-signature`) beside the pattern, which cannot state
//! the decoded length.

use std::borrow::Cow;

use serde::Deserialize;

use crate::rpc_http::clean_text;

/// The base58 alphabet (Bitcoin's), as a regular-expression class.
const ALPHABET_CLASS: &str = "[1-9A-HJ-NP-Za-km-z]";

/// The bytes of an address constant (a program id written in the code); all zeros were it
/// not valid base58 of 32 bytes, which the constants' tests rule out.
pub fn constant_bytes(text: &str) -> [u8; 32] {
    decode(text, 32).and_then(|bytes| bytes.try_into().ok()).unwrap_or([0; 32])
}

/// Whether `text` is base58 decoding to exactly `len` bytes.
pub fn is_base58(text: &str, len: usize) -> bool {
    decode(text, len).is_some()
}

fn decode(text: &str, len: usize) -> Option<Vec<u8>> {
    // Longest encoding of `len` bytes: len × log(256)/log(58), rounded up.
    if text.is_empty() || text.len() > len * 138 / 100 + 1 {
        return None;
    }
    bs58::decode(text).into_vec().ok().filter(|bytes| bytes.len() == len)
}

/// The shortest and longest base58 text of `len` bytes.
const fn text_lengths(len: usize) -> (usize, usize) {
    // len bytes of zeros are len '1's; 256^len - 1 needs ceil(len × 8 / log2(58)) digits.
    (len, (len * 8 * 1000).div_ceil(5858))
}

macro_rules! base58_key {
    ($name:ident, $len:expr, $format:literal, $what:literal, $example:literal) => {
        #[doc = concat!("A ", $what, " input: base58 of ", stringify!($len), " bytes, kept as sent.")]
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(String);

        impl $name {
            /// The base58 text.
            pub fn as_str(&self) -> &str {
                &self.0
            }

            /// The decoded bytes.
            pub fn bytes(&self) -> [u8; $len] {
                let decoded = decode(&self.0, $len).unwrap_or_default();
                decoded.try_into().unwrap_or([0; $len])
            }

            /// The key of these bytes.
            pub fn from_bytes(bytes: &[u8; $len]) -> $name {
                $name(bs58::encode(bytes).into_string())
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                if decode(text, $len).is_some() {
                    return Ok($name(text.to_string()));
                }
                let shown = clean_text(text, 100);
                Err(format!(
                    "`{shown}` is not a {}: expected base58 (no 0, O, I or l) of {} bytes, like {}",
                    $what, $len, $example
                ))
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let text = String::deserialize(deserializer)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let (shortest, longest) = text_lengths($len);
                schemars::json_schema!({
                    "type": "string",
                    "format": $format,
                    "pattern": format!("^{ALPHABET_CLASS}{{{shortest},{longest}}}$"),
                    "description": format!("A {}: base58 of exactly {} bytes.", $what, $len)
                })
            }
        }
    };
}

base58_key!(SolanaAddress, 32, "solana-address", "Solana address", "`EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v`");
base58_key!(SolanaSignature, 64, "solana-signature", "transaction signature", "a 87- or 88-character signature");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_decode_to_32_bytes_and_others_are_refused_with_a_reason() {
        let usdc: SolanaAddress = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v".parse().unwrap();
        assert_eq!(usdc.bytes().len(), 32);
        assert_eq!(SolanaAddress::from_bytes(&usdc.bytes()), usdc);
        let system: SolanaAddress = "11111111111111111111111111111111".parse().unwrap();
        assert_eq!(system.bytes(), [0; 32]);
        for bad in [
            "",
            "0x00",
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1vv",
            "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1O",
            "1111111111111111111111111111111",
            "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
        ] {
            let refused = bad.parse::<SolanaAddress>().unwrap_err();
            assert!(refused.contains("base58"), "{bad}: {refused}");
        }
    }

    #[test]
    fn the_pattern_takes_every_valid_key_length() {
        assert_eq!(text_lengths(32), (32, 44));
        assert_eq!(text_lengths(64), (64, 88));
        for bytes in [[0u8; 32], [255; 32], [1; 32]] {
            let text = bs58::encode(bytes).into_string();
            assert!((32..=44).contains(&text.len()));
        }
        let longest = bs58::encode([255u8; 64]).into_string();
        assert_eq!(longest.len(), 88);
        let schema = serde_json::to_value(schemars::schema_for!(SolanaAddress)).unwrap();
        assert_eq!(schema["pattern"], "^[1-9A-HJ-NP-Za-km-z]{32,44}$");
        assert_eq!(schema["format"], "solana-address");
    }
}

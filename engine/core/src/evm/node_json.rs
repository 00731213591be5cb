//! Reading members of a node's JSON answers leniently: an absent or null member is None,
//! a malformed one is an error naming the member (the caller turns it into a bad upstream
//! answer). Shared by the routes that read transactions, receipts, logs and blocks.

use alloy::primitives::U256;
use serde_json::{Map, Value};

use super::parse_quantity;

/// A quantity member: a 0x hex string (or, as some nodes send, a JSON integer); None when absent or null.
pub fn quantity(object: &Map<String, Value>, key: &str) -> Result<Option<U256>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => parse_quantity(text).map(Some).ok_or_else(|| format!("`{key}` is not a quantity")),
        Some(Value::Number(number)) => {
            number.as_u64().map(|n| Some(U256::from(n))).ok_or_else(|| format!("`{key}` is not a quantity"))
        }
        Some(_) => Err(format!("`{key}` is not a quantity")),
    }
}

/// A quantity member that must fit 64 bits.
pub fn small(object: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    quantity(object, key)?.map(|q| u64::try_from(q).map_err(|_| format!("`{key}` is out of range"))).transpose()
}

/// A 32-byte hash member, lower-case.
pub fn hash_member(object: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    hex_member(object, key, 64)
}

/// A 20-byte address member, lower-case.
pub fn address_member(object: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    hex_member(object, key, 40)
}

pub fn hex_member(object: &Map<String, Value>, key: &str, digits: usize) -> Result<Option<String>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text))
            if text.len() == digits + 2
                && text.starts_with("0x")
                && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit()) =>
        {
            Ok(Some(text.to_ascii_lowercase()))
        }
        Some(_) => Err(format!("`{key}` is not 0x and {digits} hex digits")),
    }
}

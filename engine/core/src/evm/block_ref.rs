//! A block as a caller names it: a number (JSON integer, decimal or 0x-hex string) or a
//! tag (`latest`, `pending`, `safe`, `finalized`, `earliest`). Shared by the routes that
//! read at a block or over a range of blocks.

use std::borrow::Cow;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

/// The tags every JSON-RPC node understands.
pub const TAGS: [&str; 5] = ["latest", "pending", "safe", "finalized", "earliest"];

/// A block named by number or tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockRef {
    /// A block number.
    Number(u64),
    /// One of [`TAGS`].
    Tag(&'static str),
}

impl BlockRef {
    /// The JSON-RPC parameter: `0x`-hex number or the tag.
    pub fn param(&self) -> String {
        match self {
            BlockRef::Number(n) => format!("{n:#x}"),
            BlockRef::Tag(tag) => (*tag).to_string(),
        }
    }

    /// The block's number on `chain`: the caller's number as is (no request), `latest`
    /// from `eth_blockNumber`, another tag from its block's header.
    pub async fn number_on(&self, chain: &super::EvmChain) -> Result<u64, crate::error::EngineError> {
        let bad = |what: String| {
            crate::error::EngineError::new(
                crate::error::ErrorKind::BadUpstream,
                "upstream_error",
                format!("the {} RPC answered {what}", chain.name()),
            )
        };
        let number: alloy::primitives::U256 = match self {
            BlockRef::Number(n) => return Ok(*n),
            BlockRef::Tag("latest") => chain.request("eth_blockNumber", ()).await?,
            BlockRef::Tag(tag) => {
                let header: Value = chain.request("eth_getBlockByNumber", (tag, false)).await?;
                let object = header.as_object().ok_or_else(|| bad(format!("no `{tag}` block")))?;
                super::node_json::quantity(object, "number")
                    .map_err(bad)?
                    .ok_or_else(|| bad("a block without a number".into()))?
            }
        };
        u64::try_from(number).map_err(|_| bad(format!("block {number}")))
    }

    /// The number, when the caller gave one.
    pub fn number(&self) -> Option<u64> {
        match self {
            BlockRef::Number(n) => Some(*n),
            BlockRef::Tag(_) => None,
        }
    }
}

/// A failed read at `blocks`, explained: when the node refused it and a block number among
/// them is past the chain's head, that block does not exist yet, which is 404 `not_found`
/// naming the head; any other error stays as it was. The head is asked only on failure.
pub async fn explain<T>(
    chain: &super::EvmChain,
    blocks: &[Option<BlockRef>],
    result: Result<T, crate::error::EngineError>,
) -> Result<T, crate::error::EngineError> {
    use crate::error::{EngineError, ErrorKind};
    let error = match result {
        Ok(value) => return Ok(value),
        Err(error) => error,
    };
    let highest = blocks.iter().flatten().filter_map(BlockRef::number).max();
    let Some(highest) = highest.filter(|_| error.kind == ErrorKind::BadUpstream) else { return Err(error) };
    match chain.request::<_, alloy::primitives::U256>("eth_blockNumber", ()).await {
        Ok(head) if alloy::primitives::U256::from(highest) > head => Err(EngineError::new(
            ErrorKind::NotFound,
            "not_found",
            format!("block {highest} is past the head of {} (block {head}): it does not exist yet", chain.name()),
        )),
        _ => Err(error),
    }
}

impl std::str::FromStr for BlockRef {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        if let Some(tag) = TAGS.iter().find(|t| t.eq_ignore_ascii_case(text)) {
            return Ok(BlockRef::Tag(tag));
        }
        let number = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            Some(hex) if !hex.is_empty() && hex.len() <= 16 => u64::from_str_radix(hex, 16).ok(),
            Some(_) => None,
            None if !text.is_empty() && text.len() <= 20 && text.bytes().all(|b| b.is_ascii_digit()) => {
                text.parse().ok()
            }
            None => None,
        };
        number.map(BlockRef::Number).ok_or_else(|| {
            format!(
                "`{}` is not a block: give a number (12345 or \"0x3039\") or one of {}",
                super::clean_text(text, 80),
                TAGS.join(", ")
            )
        })
    }
}

impl<'de> Deserialize<'de> for BlockRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(text) => text.parse().map_err(serde::de::Error::custom),
            Value::Number(n) => n.as_u64().map(BlockRef::Number).ok_or_else(|| {
                serde::de::Error::custom(format!("{n} is not a block number: a whole number from 0 is expected"))
            }),
            other => Err(serde::de::Error::custom(format!(
                "a block is a number or a string (a number, or one of {}), not {other}",
                TAGS.join(", ")
            ))),
        }
    }
}

impl JsonSchema for BlockRef {
    fn schema_name() -> Cow<'static, str> {
        "BlockRef".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A block: its number (an integer, or a decimal or 0x-hex string) or a tag: latest, pending, safe, finalized or earliest.",
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": 18446744073709551615u64},
                {"type": "string", "enum": TAGS},
                {"type": "string", "pattern": "^(0[xX][0-9a-fA-F]{1,16}|[0-9]{1,20})$"}
            ]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_read_as_numbers_or_tags() {
        assert_eq!("latest".parse::<BlockRef>(), Ok(BlockRef::Tag("latest")));
        assert_eq!("Finalized".parse::<BlockRef>(), Ok(BlockRef::Tag("finalized")));
        assert_eq!("0x10".parse::<BlockRef>(), Ok(BlockRef::Number(16)));
        assert_eq!("17".parse::<BlockRef>(), Ok(BlockRef::Number(17)));
        assert_eq!(serde_json::from_value::<BlockRef>(serde_json::json!(5)).unwrap(), BlockRef::Number(5));
        for bad in ["", "0x", "-1", "newest", "1.5", "99999999999999999999999"] {
            assert!(bad.parse::<BlockRef>().is_err(), "{bad}");
        }
        assert!(serde_json::from_value::<BlockRef>(serde_json::json!(-1)).is_err());
        assert_eq!(BlockRef::Number(255).param(), "0xff");
    }
}

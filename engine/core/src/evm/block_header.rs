//! The latest block's header, read leniently: what the block and gas routes read of a block.

use alloy::primitives::U256;
use serde_json::Value;

use crate::error::{EngineError, ErrorKind};
use crate::evm::{EvmChain, format_units, parse_quantity};

/// What the routes use of a block header; each member is None when the node leaves it out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockHeader {
    /// Block number.
    pub number: Option<u64>,
    /// Unix seconds.
    pub timestamp: Option<u64>,
    /// Lower-case 0x hex.
    pub hash: Option<String>,
    /// EIP-1559 base fee in wei.
    pub base_fee_per_gas: Option<U256>,
    /// Gas used.
    pub gas_used: Option<U256>,
    /// Gas limit.
    pub gas_limit: Option<U256>,
}

/// The latest block's header, read leniently: a missing member is None, a malformed one
/// (a number that is not a quantity) makes the answer unusable.
pub async fn read_latest_block(chain: &EvmChain) -> Result<BlockHeader, EngineError> {
    let block: Value = chain.request("eth_getBlockByNumber", ("latest", false)).await?;
    latest_header(chain, &block)
}

/// The header of `block`, `chain`'s answer to `eth_getBlockByNumber("latest", false)`, read
/// as [`read_latest_block`] reads it (for callers that batch the request with others).
pub fn latest_header(chain: &EvmChain, block: &Value) -> Result<BlockHeader, EngineError> {
    parse_header(block).map_err(|why| {
        EngineError::new(
            ErrorKind::BadUpstream,
            "upstream_error",
            format!("the {} RPC's latest block is not usable: {why}", chain.name()),
        )
    })
}

fn parse_header(block: &Value) -> Result<BlockHeader, String> {
    let object = block.as_object().ok_or("it is not a JSON object")?;
    let quantity = |key: &str| -> Result<Option<U256>, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => {
                parse_quantity(text).map(Some).ok_or_else(|| format!("`{key}` is not a quantity"))
            }
            Some(_) => Err(format!("`{key}` is not a quantity")),
        }
    };
    let small = |key: &str| -> Result<Option<u64>, String> {
        quantity(key)?.map(|q| u64::try_from(q).map_err(|_| format!("`{key}` is out of range"))).transpose()
    };
    let hash = match object.get("hash") {
        None | Some(Value::Null) => None,
        Some(Value::String(text))
            if text.len() == 66 && text.starts_with("0x") && text.bytes().skip(2).all(|b| b.is_ascii_hexdigit()) =>
        {
            Some(text.to_ascii_lowercase())
        }
        Some(_) => return Err("`hash` is not a 32-byte hash".into()),
    };
    Ok(BlockHeader {
        number: small("number")?,
        timestamp: small("timestamp")?,
        hash,
        base_fee_per_gas: quantity("baseFeePerGas")?,
        gas_used: quantity("gasUsed")?,
        gas_limit: quantity("gasLimit")?,
    })
}

/// Wei as an exact decimal number of gwei.
pub fn wei_to_gwei(wei: U256) -> String {
    format_units(wei, 9)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn missing_members_are_none_and_malformed_ones_refused() {
        let header = parse_header(&json!({"number": "0x10", "timestamp": "0x5", "gasLimit": "0x1c9c380"})).unwrap();
        assert_eq!(header.number, Some(16));
        assert_eq!(header.hash, None);
        assert_eq!(header.base_fee_per_gas, None);
        assert_eq!(header.gas_limit, Some(U256::from(30_000_000u64)));
        assert!(parse_header(&json!({"number": 16})).is_err());
        assert!(parse_header(&json!({"number": "0x"})).is_err());
        assert!(parse_header(&json!({"hash": "0x12"})).is_err());
        assert!(parse_header(&json!({"number": format!("0x{}", "f".repeat(20))})).is_err());
        assert!(parse_header(&json!(null)).is_err());
        assert!(parse_header(&json!("0x1")).is_err());
    }

    #[test]
    fn gwei_is_exact() {
        assert_eq!(wei_to_gwei(U256::from(1_234_567_891u64)), "1.234567891");
        assert_eq!(wei_to_gwei(U256::from(7u64)), "0.000000007");
    }
}

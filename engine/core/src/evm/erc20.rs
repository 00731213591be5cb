//! The ERC-20 views of a token (name, symbol, decimals, total supply) and a holder's
//! balance, read in one JSON-RPC batch: what the token, balance and address-check routes
//! read of a token.

use alloy::primitives::{Address, Bytes, U256};
use alloy::rpc::client::Waiter;
use alloy::transports::{RpcError, TransportResult};
use serde_json::json;

use crate::error::EngineError;
use crate::evm::EvmChain;

/// Longest token name or symbol returned, in characters; the rest is cut.
pub const MAX_TOKEN_TEXT: usize = 256;

/// Selectors of the ERC-20 views (checked against their signatures in the tests).
pub const NAME: [u8; 4] = [0x06, 0xfd, 0xde, 0x03];
pub const SYMBOL: [u8; 4] = [0x95, 0xd8, 0x9b, 0x41];
pub const DECIMALS: [u8; 4] = [0x31, 0x3c, 0xe5, 0x67];
pub const TOTAL_SUPPLY: [u8; 4] = [0x18, 0x16, 0x0d, 0xdd];
pub const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];

/// What an address answers to the ERC-20 views; None where it reverted or answered
/// something that does not decode.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Erc20Reads {
    /// The address holds code.
    pub has_code: bool,
    /// `name()`, decoded and capped.
    pub name: Option<String>,
    /// `symbol()`, decoded and capped.
    pub symbol: Option<String>,
    /// `decimals()`, when at most 255.
    pub decimals: Option<u8>,
    /// `totalSupply()`.
    pub total_supply: Option<U256>,
    /// `balanceOf(holder)`.
    pub balance: Option<U256>,
}

impl Erc20Reads {
    /// Code, and the two views every ERC-20 token has (name, symbol and decimals are optional in EIP-20).
    pub fn is_erc20(&self) -> bool {
        self.has_code && self.total_supply.is_some() && self.balance.is_some()
    }
}

/// The ERC-20 views of `token` and its balance of `holder`, in one JSON-RPC batch.
pub async fn read_erc20(chain: &EvmChain, token: Address, holder: Address) -> Result<Erc20Reads, EngineError> {
    let mut batch = chain.client().new_batch();
    let mut add_call = |data: Vec<u8>| {
        let call = json!({"to": token, "data": Bytes::from(data)});
        batch.add_call::<_, Bytes>("eth_call", &(call, "latest"))
    };
    let calls = [
        add_call(NAME.to_vec()),
        add_call(SYMBOL.to_vec()),
        add_call(DECIMALS.to_vec()),
        add_call(TOTAL_SUPPLY.to_vec()),
        add_call([&BALANCE_OF[..], &[0u8; 12], holder.as_slice()].concat()),
    ]
    .into_iter()
    .collect::<TransportResult<Vec<Waiter<Bytes>>>>()
    .map_err(|e| chain.error("eth_call", e))?;
    let code: Waiter<Bytes> =
        batch.add_call("eth_getCode", &(token, "latest")).map_err(|e| chain.error("eth_getCode", e))?;
    batch.send().await.map_err(|e| chain.error("eth_call", e))?;

    let code = code.await.map_err(|e| chain.error("eth_getCode", e))?;
    let mut answers = Vec::with_capacity(calls.len());
    for waiter in calls {
        answers.push(match waiter.await {
            Ok(data) => Some(data),
            // A revert (or any error the node gives for this one call) means "no such view".
            Err(RpcError::ErrorResp(_)) => None,
            Err(e) => return Err(chain.error("eth_call", e)),
        });
    }
    let [name, symbol, decimals, supply, balance] = <[Option<Bytes>; 5]>::try_from(answers)
        .map_err(|_| EngineError::internal("the ERC-20 batch lost an answer"))?;
    Ok(Erc20Reads {
        has_code: !code.is_empty(),
        name: name.as_deref().map(|b| &b[..]).and_then(decode_text),
        symbol: symbol.as_deref().map(|b| &b[..]).and_then(decode_text),
        decimals: decimals.as_deref().map(|b| &b[..]).and_then(decode_word).and_then(|d| u8::try_from(d).ok()),
        total_supply: supply.as_deref().map(|b| &b[..]).and_then(decode_word),
        balance: balance.as_deref().map(|b| &b[..]).and_then(decode_word),
    })
}

/// The first 32-byte word of a call's answer as a number.
fn decode_word(data: &[u8]) -> Option<U256> {
    data.get(..32).map(U256::from_be_slice)
}

/// A `string` answer, or a `bytes32` one (MKR-style) with its trailing zero bytes
/// trimmed; invalid UTF-8 is replaced and the text capped at [`MAX_TOKEN_TEXT`].
pub fn decode_text(data: &[u8]) -> Option<String> {
    let bytes = if data.len() == 32 {
        let end = data.iter().rposition(|b| *b != 0).map_or(0, |i| i + 1);
        data.get(..end)?
    } else {
        super::abi::dynamic_bytes(data)?
    };
    Some(String::from_utf8_lossy(bytes).chars().take(MAX_TOKEN_TEXT).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy::sol_types::SolValue;

    #[test]
    fn selectors_match_their_signatures() {
        let selector = |sig: &str| <[u8; 4]>::try_from(&alloy::primitives::keccak256(sig)[..4]).unwrap();
        assert_eq!(NAME, selector("name()"));
        assert_eq!(SYMBOL, selector("symbol()"));
        assert_eq!(DECIMALS, selector("decimals()"));
        assert_eq!(TOTAL_SUPPLY, selector("totalSupply()"));
        assert_eq!(BALANCE_OF, selector("balanceOf(address)"));
    }

    #[test]
    fn decodes_strings_and_bytes32() {
        assert_eq!(decode_text(&"Wrapped Ether".to_string().abi_encode()).as_deref(), Some("Wrapped Ether"));
        let mut mkr = [0u8; 32];
        mkr[..5].copy_from_slice(b"Maker");
        assert_eq!(decode_text(&mkr).as_deref(), Some("Maker"));
        assert_eq!(decode_text(&[0u8; 32]).as_deref(), Some(""));
        assert_eq!(decode_text(&String::new().abi_encode()).as_deref(), Some(""));
    }

    #[test]
    fn hostile_strings_are_capped_cleaned_or_refused() {
        let long = "x".repeat(10_000).abi_encode();
        assert_eq!(decode_text(&long).unwrap().chars().count(), MAX_TOKEN_TEXT);
        let bad_utf8 = alloy::primitives::Bytes::from(vec![0x41, 0xff, 0x42]).abi_encode();
        assert_eq!(decode_text(&bad_utf8).as_deref(), Some("A\u{fffd}B"));
        // Offsets and lengths pointing past the answer, or absurdly large, are refused.
        let mut lying = "abc".to_string().abi_encode();
        lying[63] = 0xff;
        assert_eq!(decode_text(&lying), None);
        let mut far = vec![0xffu8; 64];
        far[..24].fill(0);
        assert_eq!(decode_text(&far), None);
        assert_eq!(decode_text(&[]), None);
        assert_eq!(decode_text(&[1, 2, 3]), None);
    }

    #[test]
    fn erc20_needs_code_supply_and_balance() {
        let full = Erc20Reads {
            has_code: true,
            total_supply: Some(U256::from(1)),
            balance: Some(U256::ZERO),
            ..Default::default()
        };
        assert!(full.is_erc20());
        assert!(!Erc20Reads { has_code: false, ..full.clone() }.is_erc20());
        assert!(!Erc20Reads { balance: None, ..full }.is_erc20());
    }
}

//! Static scan of EVM runtime bytecode for the address check: which risky opcodes occur
//! as instructions (PUSH data skipped) and which known function selectors the dispatcher
//! pushes.
//!
//! The scan is heuristic. An opcode found may sit in unreachable code, and a selector
//! found may belong to a harmless function that shares its signature; a contract can also
//! hide a power behind a selector this table does not know.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use alloy::primitives::keccak256;

/// `SELFDESTRUCT`.
pub const OP_SELFDESTRUCT: u8 = 0xff;
/// `DELEGATECALL`.
pub const OP_DELEGATECALL: u8 = 0xf4;
const OP_PUSH1: u8 = 0x60;
const OP_PUSH32: u8 = 0x7f;

/// An owner power a function selector points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Power {
    /// Creates new tokens.
    Mint,
    /// Blocks chosen accounts from transferring.
    Blacklist,
    /// Sets a transfer fee or tax.
    FeeSetter,
    /// Stops every transfer.
    Pause,
}

/// The known selectors, by the signature whose keccak-256 gives them (computed once).
///
/// | power | signatures |
/// |---|---|
/// | mint | `mint(address,uint256)`, `mint(uint256)`, `mintTo(address,uint256)`, `issue(uint256)` |
/// | blacklist | `blacklist(address)`, `addToBlacklist(address)`, `setBlacklist(address,bool)`, `blacklistAddress(address,bool)`, `addBlackList(address)`, `blocklist(address)`, `addToBlocklist(address)`, `blockAccount(address)`, `setBots(address[],bool)`, `setBot(address,bool)` |
/// | fee setter | `setFee(uint256)`, `setFees(uint256,uint256)`, `setTaxFee(uint256)`, `setTax(uint256)`, `setBuyFee(uint256)`, `setSellFee(uint256)`, `setBuyTax(uint256)`, `setSellTax(uint256)`, `setTaxes(uint256,uint256)`, `updateFees(uint256,uint256)`, `setFeePercent(uint256)`, `setTransferFee(uint256)` |
/// | pause | `pause()`, `unpause()`, `setPaused(bool)` |
pub const KNOWN_SIGNATURES: &[(Power, &str)] = &[
    (Power::Mint, "mint(address,uint256)"),
    (Power::Mint, "mint(uint256)"),
    (Power::Mint, "mintTo(address,uint256)"),
    (Power::Mint, "issue(uint256)"),
    (Power::Blacklist, "blacklist(address)"),
    (Power::Blacklist, "addToBlacklist(address)"),
    (Power::Blacklist, "setBlacklist(address,bool)"),
    (Power::Blacklist, "blacklistAddress(address,bool)"),
    (Power::Blacklist, "addBlackList(address)"),
    (Power::Blacklist, "blocklist(address)"),
    (Power::Blacklist, "addToBlocklist(address)"),
    (Power::Blacklist, "blockAccount(address)"),
    (Power::Blacklist, "setBots(address[],bool)"),
    (Power::Blacklist, "setBot(address,bool)"),
    (Power::FeeSetter, "setFee(uint256)"),
    (Power::FeeSetter, "setFees(uint256,uint256)"),
    (Power::FeeSetter, "setTaxFee(uint256)"),
    (Power::FeeSetter, "setTax(uint256)"),
    (Power::FeeSetter, "setBuyFee(uint256)"),
    (Power::FeeSetter, "setSellFee(uint256)"),
    (Power::FeeSetter, "setBuyTax(uint256)"),
    (Power::FeeSetter, "setSellTax(uint256)"),
    (Power::FeeSetter, "setTaxes(uint256,uint256)"),
    (Power::FeeSetter, "updateFees(uint256,uint256)"),
    (Power::FeeSetter, "setFeePercent(uint256)"),
    (Power::FeeSetter, "setTransferFee(uint256)"),
    (Power::Pause, "pause()"),
    (Power::Pause, "unpause()"),
    (Power::Pause, "setPaused(bool)"),
];

/// [`KNOWN_SIGNATURES`] with their selectors.
static KNOWN_SELECTORS: LazyLock<Vec<(u32, Power, &'static str)>> = LazyLock::new(|| {
    KNOWN_SIGNATURES
        .iter()
        .map(|(power, signature)| {
            let hash = keccak256(signature.as_bytes());
            (u32::from_be_bytes([hash[0], hash[1], hash[2], hash[3]]), *power, *signature)
        })
        .collect()
});

/// A known selector found in the code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FoundSelector {
    /// The 4-byte selector.
    pub selector: u32,
    /// What it lets its caller do.
    pub power: Power,
    /// The signature it is known as.
    pub signature: &'static str,
}

/// What the scan found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// SELFDESTRUCT occurs as an instruction.
    pub selfdestruct: bool,
    /// DELEGATECALL occurs as an instruction.
    pub delegatecall: bool,
    /// Known selectors pushed by the code, in table order.
    pub selectors: Vec<FoundSelector>,
}

impl Scan {
    /// Whether a selector of `power` was found.
    pub fn has(&self, power: Power) -> bool {
        self.selectors.iter().any(|s| s.power == power)
    }
}

/// The code without solc's trailing CBOR metadata, whose bytes would otherwise read as
/// instructions (a metadata hash can hold 0xff or 0xf4).
pub fn strip_metadata(code: &[u8]) -> &[u8] {
    let [.., hi, lo] = code else { return code };
    let len = usize::from(u16::from_be_bytes([*hi, *lo]));
    // The metadata is a CBOR map (major type 5, 0xa1..=0xb7) of at most a few dozen entries.
    match code.len().checked_sub(len + 2) {
        Some(start) if len > 0 && matches!(code.get(start), Some(0xa1..=0xb7)) => code.get(..start).unwrap_or(code),
        _ => code,
    }
}

/// Walks `code` instruction by instruction (PUSH1..PUSH32 data skipped, a truncated PUSH
/// at the end ends the walk) and collects the findings.
pub fn scan(code: &[u8]) -> Scan {
    let code = strip_metadata(code);
    let mut result = Scan::default();
    let mut pushed = BTreeSet::new();
    let mut pc = 0usize;
    while let Some(&op) = code.get(pc) {
        pc += 1;
        match op {
            OP_SELFDESTRUCT => result.selfdestruct = true,
            OP_DELEGATECALL => result.delegatecall = true,
            OP_PUSH1..=OP_PUSH32 => {
                let n = usize::from(op - OP_PUSH1) + 1;
                let Some(data) = code.get(pc..pc + n) else { break };
                // Selectors with a leading zero byte are pushed with PUSH3.
                if n == 3 || n == 4 {
                    pushed.insert(data.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b)));
                }
                pc += n;
            }
            _ => {}
        }
    }
    result.selectors = KNOWN_SELECTORS
        .iter()
        .filter(|(selector, _, _)| pushed.contains(selector))
        .map(|&(selector, power, signature)| FoundSelector { selector, power, signature })
        .collect();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn selector_of(signature: &str) -> u32 {
        KNOWN_SELECTORS.iter().find(|(_, _, s)| *s == signature).unwrap().0
    }

    #[test]
    fn selectors_match_well_known_values() {
        assert_eq!(selector_of("mint(address,uint256)"), 0x40c1_0f19);
        assert_eq!(selector_of("pause()"), 0x8456_cb59);
        assert_eq!(selector_of("unpause()"), 0x3f4b_a83a);
        assert_eq!(selector_of("blacklist(address)"), 0xf9f9_2be4);
        assert_eq!(selector_of("setFee(uint256)"), 0x69fe_0e2d);
    }

    #[test]
    fn push_data_is_not_read_as_instructions() {
        // PUSH2 0xfff4: both bytes are data, not SELFDESTRUCT or DELEGATECALL.
        assert_eq!(scan(&[0x61, 0xff, 0xf4, 0x00]), Scan::default());
        let found = scan(&[0x60, 0x01, 0xf4, 0x00, 0xff]);
        assert!(found.selfdestruct && found.delegatecall);
        // A PUSH32 cut short by the end of the code ends the walk without a panic.
        assert_eq!(scan(&[0x7f, 0xff]), Scan::default());
        assert_eq!(scan(&[]), Scan::default());
    }

    #[test]
    fn finds_pushed_selectors() {
        let code = [0x63, 0x40, 0xc1, 0x0f, 0x19, 0x14, 0x63, 0x84, 0x56, 0xcb, 0x59, 0x14];
        let found = scan(&code);
        assert!(found.has(Power::Mint) && found.has(Power::Pause));
        assert!(!found.has(Power::Blacklist) && !found.has(Power::FeeSetter));
    }

    #[test]
    fn metadata_is_stripped() {
        // Code `00`, then a 3-byte "CBOR map" holding 0xff, then its length 0x0003.
        let code = [0x00, 0xa1, 0xff, 0xf4, 0x00, 0x03];
        assert_eq!(strip_metadata(&code), &[0x00]);
        assert!(!scan(&code).selfdestruct);
        // Lengths that do not fit are left alone.
        assert_eq!(strip_metadata(&[0xff, 0xff]), &[0xff, 0xff]);
        assert_eq!(strip_metadata(&[0xff]), &[0xff]);
    }
}

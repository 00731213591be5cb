//! Token accounts and mints as the node parses them (`encoding: jsonParsed`), for the Token
//! and Token-2022 programs: amounts, authorities and the Token-2022 extensions. Every value
//! read from the node is checked (addresses are base58 of 32 bytes, amounts whole numbers);
//! an answer that breaks these rules is a bad upstream, never passed on.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::keys::constant_bytes;
use super::{bad, keys, node_u64};
use crate::error::EngineError;
use crate::rpc_http::clean_text;

/// The classic SPL Token program.
pub const TOKEN_PROGRAM: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
/// The Token-2022 program (token extensions).
pub const TOKEN_2022_PROGRAM: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";

/// Which token program owns an account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTokenProgram")]
pub enum TokenProgram {
    /// `spl-token` (TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA).
    #[serde(rename = "spl-token")]
    Token,
    /// `spl-token-2022` (TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb).
    #[serde(rename = "spl-token-2022")]
    Token2022,
}

/// The associated token account of `owner` for `mint` under the token `program`: the
/// account wallets and payment facilitators expect a token to be held in.
pub fn associated_token_address(owner: &[u8; 32], mint: &[u8; 32], program: TokenProgram) -> Option<[u8; 32]> {
    let (program, ata_program) = (constant_bytes(program.id()), constant_bytes(ASSOCIATED_TOKEN_PROGRAM));
    super::metaplex::find_program_address(&[owner, &program, mint], &ata_program).map(|(address, _)| address)
}

/// The Associated Token Account program.
pub const ASSOCIATED_TOKEN_PROGRAM: &str = "ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL";

impl TokenProgram {
    /// Both programs.
    pub const ALL: [TokenProgram; 2] = [TokenProgram::Token, TokenProgram::Token2022];

    /// The program's address.
    pub fn id(self) -> &'static str {
        match self {
            TokenProgram::Token => TOKEN_PROGRAM,
            TokenProgram::Token2022 => TOKEN_2022_PROGRAM,
        }
    }

    /// The program owning an account, if it is a token program.
    pub fn of_owner(owner: &str) -> Option<TokenProgram> {
        TokenProgram::ALL.into_iter().find(|p| p.id() == owner)
    }
}

/// A string member, untrusted text cut to `max` characters.
pub fn text(value: &Value, key: &str, max: usize) -> Option<String> {
    value.get(key).and_then(Value::as_str).map(|s| clean_text(s, max))
}

/// An address member: absent or null is None; anything but base58 of 32 bytes is a bad answer.
pub fn address(value: &Value, key: &str) -> Result<Option<String>, EngineError> {
    match value.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if keys::is_base58(s, 32) => Ok(Some(s.clone())),
        Some(other) => {
            Err(bad(format!("the node's `{key}` is not an address: {}", clean_text(&other.to_string(), 60))))
        }
    }
}

/// An address member that must be there.
pub fn required_address(value: &Value, key: &str) -> Result<String, EngineError> {
    address(value, key)?.ok_or_else(|| bad(format!("the node's answer has no `{key}`")))
}

/// A whole-number member that must be there (a JSON number or a decimal string).
pub fn number(value: &Value, key: &str) -> Result<u64, EngineError> {
    node_u64(value.get(key).unwrap_or(&Value::Null), key)
}

/// The `parsed` object of a jsonParsed account of a token program, with its type
/// (`mint`, `account`, `multisig`); None when the account is not a token program's or the
/// node did not parse it.
pub fn parsed(account: &Value) -> Option<(TokenProgram, &str, &Value)> {
    let program = TokenProgram::of_owner(account.get("owner")?.as_str()?)?;
    let parsed = account.get("data")?.get("parsed")?;
    Some((program, parsed.get("type")?.as_str()?, parsed.get("info")?))
}

/// A token amount as the node gives it (`{amount, decimals, uiAmountString}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amount {
    /// Base units.
    pub raw: u64,
    /// The mint's decimals.
    pub decimals: u8,
    /// The node's UI amount: the raw amount with the decimals applied and, for Token-2022
    /// interest-bearing or scaled mints, the interest or multiplier at the node's time.
    pub ui: Option<String>,
}

impl Amount {
    /// Reads a `tokenAmount` / `uiTokenAmount` object.
    pub fn read(value: &Value) -> Result<Amount, EngineError> {
        let raw = number(value, "amount")?;
        let decimals = decimals(value)?;
        let ui = text(value, "uiAmountString", 80);
        Ok(Amount { raw, decimals, ui })
    }

    /// The raw amount with the decimals applied, exactly.
    pub fn formatted(&self) -> String {
        super::format_amount(u128::from(self.raw), self.decimals)
    }
}

/// The `decimals` member (0 to 255).
pub fn decimals(value: &Value) -> Result<u8, EngineError> {
    let n = number(value, "decimals")?;
    u8::try_from(n).map_err(|_| bad(format!("the node's decimals ({n}) are out of range")))
}

/// A mint as the node parses it.
#[derive(Debug)]
pub struct Mint {
    /// Its program.
    pub program: TokenProgram,
    /// Supply in base units.
    pub supply: u64,
    /// Decimals.
    pub decimals: u8,
    /// Who may mint; None when fixed.
    pub mint_authority: Option<String>,
    /// Who may freeze accounts; None when no one.
    pub freeze_authority: Option<String>,
    /// Whether it is initialized.
    pub initialized: bool,
    /// Its Token-2022 extensions, as the node lists them.
    pub extensions: Vec<Value>,
}

/// The mint in a jsonParsed account; None when the account is not a mint.
pub fn mint(account: &Value) -> Result<Option<Mint>, EngineError> {
    let Some((program, "mint", info)) = parsed(account) else { return Ok(None) };
    Ok(Some(Mint {
        program,
        supply: number(info, "supply")?,
        decimals: decimals(info)?,
        mint_authority: address(info, "mintAuthority")?,
        freeze_authority: address(info, "freezeAuthority")?,
        initialized: info.get("isInitialized").and_then(Value::as_bool).unwrap_or(false),
        extensions: extension_list(info),
    }))
}

fn extension_list(info: &Value) -> Vec<Value> {
    info.get("extensions").and_then(Value::as_array).cloned().unwrap_or_default()
}

/// The name of one listed extension (`transferFeeConfig`).
pub fn extension_name(extension: &Value) -> String {
    text(extension, "extension", 60).unwrap_or_else(|| "unknown".into())
}

/// The state of the extension called `name`, if the list has it.
pub fn extension<'a>(extensions: &'a [Value], name: &str) -> Option<&'a Value> {
    extensions.iter().find(|e| e.get("extension").and_then(Value::as_str) == Some(name)).map(|e| {
        // Extensions without state (`nonTransferable`) have none; their presence is the fact.
        e.get("state").unwrap_or(&Value::Null)
    })
}

/// A transfer fee in force from an epoch.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTransferFee")]
pub struct FeeRate {
    /// The epoch from which it applies.
    pub epoch: u64,
    /// Fee in basis points of the amount sent (1 = 0.01%).
    pub basis_points: u16,
    /// The most one transfer pays, in base units, decimal string.
    pub maximum_fee: String,
}

/// The transfer-fee extension.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTransferFeeConfig")]
pub struct TransferFeeConfig {
    /// Who may change the fee; null when no one.
    pub config_authority: Option<String>,
    /// Who may withdraw withheld fees; null when no one.
    pub withdraw_withheld_authority: Option<String>,
    /// Fees withheld in the mint itself, base units, decimal string.
    pub withheld_amount: String,
    /// The fee before `newer.epoch`.
    pub older: FeeRate,
    /// The fee from `newer.epoch` on (the one in force once that epoch is reached).
    pub newer: FeeRate,
}

/// The interest-bearing extension.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaInterestBearing")]
pub struct InterestBearing {
    /// Who may change the rate; null when no one.
    pub rate_authority: Option<String>,
    /// Current annual rate in basis points (may be negative).
    pub current_rate_bps: i16,
    /// Average rate before the last update, basis points.
    pub pre_update_average_rate_bps: i16,
    /// When interest started accruing, Unix seconds.
    pub initialization_timestamp: i64,
    /// When the rate last changed, Unix seconds.
    pub last_update_timestamp: i64,
}

/// An authority and the address it points at (metadata and group pointers).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaPointer")]
pub struct Pointer {
    /// Who may change it; null when no one.
    pub authority: Option<String>,
    /// The account pointed at; null when unset.
    pub address: Option<String>,
}

/// The transfer-hook extension.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTransferHook")]
pub struct TransferHook {
    /// Who may change the hook; null when no one.
    pub authority: Option<String>,
    /// The program every transfer calls; null when unset.
    pub program_id: Option<String>,
}

/// A mint's Token-2022 extensions: the ones users act on read out, and every name listed.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[schemars(rename = "SolanaMintExtensions")]
pub struct MintExtensions {
    /// Every extension the mint has, as the node names them (`transferFeeConfig`, …); empty for classic mints.
    pub names: Vec<String>,
    /// Transfer fees; null without the extension.
    pub transfer_fee: Option<TransferFeeConfig>,
    /// Interest; null without the extension.
    pub interest_bearing: Option<InterestBearing>,
    /// The permanent delegate, who may move or burn any holder's tokens; null without the extension.
    pub permanent_delegate: Option<String>,
    /// Whether tokens of this mint cannot be transferred.
    pub non_transferable: bool,
    /// Where the token's metadata lives; null without the extension.
    pub metadata_pointer: Option<Pointer>,
    /// Who may close the mint; null without the extension.
    pub mint_close_authority: Option<String>,
    /// A program every transfer calls; null without the extension.
    pub transfer_hook: Option<TransferHook>,
    /// The state new token accounts start in (`initialized` or `frozen`); null without the extension.
    pub default_account_state: Option<String>,
    /// Whether the mint can be paused by an authority (and is paused now: `paused`); null without the extension.
    pub pausable: Option<Pausable>,
}

/// The pausable extension.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaPausable")]
pub struct Pausable {
    /// Who may pause; null when no one.
    pub authority: Option<String>,
    /// Whether transfers, mints and burns are paused now.
    pub paused: bool,
}

impl MintExtensions {
    /// Reads the extensions a mint lists.
    pub fn read(extensions: &[Value]) -> Result<MintExtensions, EngineError> {
        let state = |name| extension(extensions, name);
        let transfer_fee = match state("transferFeeConfig") {
            Some(s) => Some(TransferFeeConfig {
                config_authority: address(s, "transferFeeConfigAuthority")?,
                withdraw_withheld_authority: address(s, "withdrawWithheldAuthority")?,
                withheld_amount: number(s, "withheldAmount")?.to_string(),
                older: fee_rate(s.get("olderTransferFee").unwrap_or(&Value::Null))?,
                newer: fee_rate(s.get("newerTransferFee").unwrap_or(&Value::Null))?,
            }),
            None => None,
        };
        let interest_bearing = match state("interestBearingConfig") {
            Some(s) => Some(InterestBearing {
                rate_authority: address(s, "rateAuthority")?,
                current_rate_bps: small_int(s, "currentRate")?,
                pre_update_average_rate_bps: small_int(s, "preUpdateAverageRate")?,
                initialization_timestamp: timestamp(s, "initializationTimestamp")?,
                last_update_timestamp: timestamp(s, "lastUpdateTimestamp")?,
            }),
            None => None,
        };
        let permanent_delegate = match state("permanentDelegate") {
            Some(s) => address(s, "delegate")?,
            None => None,
        };
        let metadata_pointer = match state("metadataPointer") {
            Some(s) => Some(Pointer { authority: address(s, "authority")?, address: address(s, "metadataAddress")? }),
            None => None,
        };
        let mint_close_authority = match state("mintCloseAuthority") {
            Some(s) => address(s, "closeAuthority")?,
            None => None,
        };
        let transfer_hook = match state("transferHook") {
            Some(s) => Some(TransferHook { authority: address(s, "authority")?, program_id: address(s, "programId")? }),
            None => None,
        };
        let pausable = match state("pausableConfig") {
            Some(s) => Some(Pausable {
                authority: address(s, "authority")?,
                paused: s.get("paused").and_then(Value::as_bool).unwrap_or(false),
            }),
            None => None,
        };
        Ok(MintExtensions {
            names: extensions.iter().map(extension_name).collect(),
            transfer_fee,
            interest_bearing,
            permanent_delegate,
            non_transferable: state("nonTransferable").is_some(),
            metadata_pointer,
            mint_close_authority,
            transfer_hook,
            default_account_state: state("defaultAccountState").and_then(|s| text(s, "accountState", 40)),
            pausable,
        })
    }
}

fn fee_rate(value: &Value) -> Result<FeeRate, EngineError> {
    let basis_points = number(value, "transferFeeBasisPoints")?;
    Ok(FeeRate {
        epoch: number(value, "epoch")?,
        basis_points: u16::try_from(basis_points)
            .map_err(|_| bad(format!("the node's transfer fee ({basis_points} basis points) is out of range")))?,
        maximum_fee: number(value, "maximumFee")?.to_string(),
    })
}

fn small_int(value: &Value, key: &str) -> Result<i16, EngineError> {
    value
        .get(key)
        .and_then(Value::as_i64)
        .and_then(|n| i16::try_from(n).ok())
        .ok_or_else(|| bad(format!("the node's `{key}` is not a rate in basis points")))
}

fn timestamp(value: &Value, key: &str) -> Result<i64, EngineError> {
    value.get(key).and_then(Value::as_i64).ok_or_else(|| bad(format!("the node's `{key}` is not a Unix time")))
}

/// A token account as the node parses it.
#[derive(Debug)]
pub struct TokenAccount {
    /// The account's address.
    pub address: String,
    /// Its program.
    pub program: TokenProgram,
    /// The mint of its tokens.
    pub mint: String,
    /// Who owns the tokens.
    pub owner: String,
    /// Balance.
    pub amount: Amount,
    /// `initialized` or `frozen`.
    pub state: String,
    /// Whether it holds wrapped SOL.
    pub native: bool,
    /// Who may spend from it, and how much.
    pub delegate: Option<(String, Amount)>,
    /// Who may close it; None when the owner.
    pub close_authority: Option<String>,
    /// Its Token-2022 extensions, by name.
    pub extensions: Vec<String>,
}

/// A `{pubkey, account}` item of getTokenAccountsByOwner, read; None when the node did not
/// parse it as a token account.
pub fn token_account(item: &Value) -> Result<Option<TokenAccount>, EngineError> {
    let pubkey = required_address(item, "pubkey")?;
    let Some(account) = item.get("account") else { return Err(bad("a token account item has no `account`".into())) };
    let Some((program, "account", info)) = parsed(account) else { return Ok(None) };
    let delegate = match address(info, "delegate")? {
        Some(delegate) => {
            let amount = match info.get("delegatedAmount") {
                Some(a) => Amount::read(a)?,
                None => {
                    Amount { raw: 0, decimals: decimals(info.get("tokenAmount").unwrap_or(&Value::Null))?, ui: None }
                }
            };
            Some((delegate, amount))
        }
        None => None,
    };
    Ok(Some(TokenAccount {
        address: pubkey,
        program,
        mint: required_address(info, "mint")?,
        owner: required_address(info, "owner")?,
        amount: Amount::read(info.get("tokenAmount").unwrap_or(&Value::Null))?,
        state: text(info, "state", 40).unwrap_or_else(|| "initialized".into()),
        native: info.get("isNative").and_then(Value::as_bool).unwrap_or(false),
        delegate,
        close_authority: address(info, "closeAuthority")?,
        extensions: extension_list(info).iter().map(extension_name).collect(),
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_a_token_2022_mint_and_its_extensions() {
        let account = json!({
            "owner": TOKEN_2022_PROGRAM,
            "data": { "program": "spl-token-2022", "parsed": { "type": "mint", "info": {
                "decimals": 6, "supply": "500000000", "isInitialized": true,
                "mintAuthority": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v", "freezeAuthority": null,
                "extensions": [
                    { "extension": "transferFeeConfig", "state": {
                        "transferFeeConfigAuthority": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
                        "withdrawWithheldAuthority": null, "withheldAmount": 0,
                        "olderTransferFee": { "epoch": 0, "maximumFee": 5000000, "transferFeeBasisPoints": 50 },
                        "newerTransferFee": { "epoch": 0, "maximumFee": 5000000, "transferFeeBasisPoints": 50 } } },
                    { "extension": "nonTransferable" },
                    { "extension": "interestBearingConfig", "state": { "rateAuthority": null,
                        "initializationTimestamp": 1700000000, "preUpdateAverageRate": 250,
                        "lastUpdateTimestamp": 1700000000, "currentRate": 250 } }
                ] } } }
        });
        let mint = mint(&account).unwrap().unwrap();
        assert_eq!((mint.program, mint.supply, mint.decimals), (TokenProgram::Token2022, 500_000_000, 6));
        assert_eq!(mint.freeze_authority, None);
        let extensions = MintExtensions::read(&mint.extensions).unwrap();
        assert_eq!(extensions.names, ["transferFeeConfig", "nonTransferable", "interestBearingConfig"]);
        assert!(extensions.non_transferable);
        let fee = extensions.transfer_fee.unwrap();
        assert_eq!((fee.newer.basis_points, fee.newer.maximum_fee.as_str()), (50, "5000000"));
        assert_eq!(extensions.interest_bearing.unwrap().current_rate_bps, 250);
        assert!(extensions.permanent_delegate.is_none());
    }

    #[test]
    fn a_node_answer_that_breaks_the_rules_is_a_bad_upstream() {
        let account = json!({
            "owner": TOKEN_PROGRAM,
            "data": { "parsed": { "type": "mint", "info": { "decimals": 300, "supply": "1" } } }
        });
        assert_eq!(mint(&account).unwrap_err().code, "upstream_error");
        let account = json!({
            "owner": TOKEN_PROGRAM,
            "data": { "parsed": { "type": "mint", "info": { "decimals": 6, "supply": "-1" } } }
        });
        assert_eq!(mint(&account).unwrap_err().code, "upstream_error");
        let account = json!({
            "owner": TOKEN_PROGRAM,
            "data": { "parsed": { "type": "mint", "info": { "decimals": 6, "supply": "1", "mintAuthority": "0xabc" } } }
        });
        assert_eq!(mint(&account).unwrap_err().code, "upstream_error");
        let not_a_token = json!({ "owner": "11111111111111111111111111111111", "data": ["", "base64"] });
        assert!(mint(&not_a_token).unwrap().is_none());
    }
}

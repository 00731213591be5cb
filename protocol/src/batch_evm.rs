//! x402's `batch-settlement` scheme on EVM chains: the payer deposits once into an escrow
//! channel for one receiver and one token, then pays each call with a signed cumulative
//! voucher ("the receiver may have claimed up to N in total"); the receiver claims the
//! latest vouchers of many channels in one transaction and refunds the unused rest.
//!
//! Both sides' halves of the messages: the channel config and its id, the voucher (signed by
//! the payer, checked by the service), the ERC-3009 deposit authorization to the escrow's
//! collector, the payloads as they travel, and the escrow's functions the service calls
//! (`docs/batch-settlement.md` describes the whole protocol).
//!
//! What this file must not do: read the chain or keep state. Channel balances and charged
//! totals are the caller's to keep.

use alloy::primitives::{Address, B256, Bytes, U256, address, keccak256};
use alloy::signers::Signature;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{Eip712Domain, SolStruct as _, SolValue as _};
use serde::{Deserialize, Serialize};

use crate::SignError;
use crate::eip3009::{sign, token_domain};
use crate::exact_evm::token_domain_of;
use crate::x402::{Offer, PaymentPayload, Requirements, ResourceInfo, SCHEME_BATCH, Version2, parse_amount};

/// The escrow (`x402BatchSettlement`), the same address on every chain.
pub const ESCROW: Address = address!("0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003");
/// The collector that takes deposits by ERC-3009 `receiveWithAuthorization`.
pub const ERC3009_COLLECTOR: Address = address!("0x4020806089470a89826cB9fB1f4059150b550004");
/// The collector that takes deposits through Permit2.
pub const PERMIT2_COLLECTOR: Address = address!("0x4020425FAf3B746C082C2f942b4E5159887B0005");
/// The shortest and longest withdraw delay the escrow takes, seconds.
pub const WITHDRAW_DELAY: std::ops::RangeInclusive<u64> = 900..=2_592_000;

alloy::sol! {
    /// A channel: who pays, who signs its vouchers, who is paid and who authorizes claims
    /// and refunds for them, in which token, how long a payer's withdrawal waits, and the
    /// payer's salt. Its EIP-712 hash under the escrow's domain is the channel id.
    #[derive(Debug, PartialEq, Eq)]
    struct ChannelConfig {
        address payer;
        address payerAuthorizer;
        address receiver;
        address receiverAuthorizer;
        address token;
        uint40 withdrawDelay;
        bytes32 salt;
    }

    /// "The receiver may have claimed up to `maxClaimableAmount` in total from this channel."
    #[derive(Debug, PartialEq, Eq)]
    struct Voucher {
        bytes32 channelId;
        uint128 maxClaimableAmount;
    }

    /// EIP-3009's transfer that only its `to` (the collector) may submit.
    #[derive(Debug, PartialEq, Eq)]
    struct ReceiveWithAuthorization {
        address from;
        address to;
        uint256 value;
        uint256 validAfter;
        uint256 validBefore;
        bytes32 nonce;
    }

    /// A voucher as the escrow reads it: the channel and the signed most.
    #[derive(Debug, PartialEq, Eq)]
    struct SignedVoucher {
        ChannelConfig channel;
        uint128 maxClaimableAmount;
    }

    /// One row of a claim: a voucher, its signature, and the channel's new claimed total.
    #[derive(Debug, PartialEq, Eq)]
    struct VoucherClaim {
        SignedVoucher voucher;
        bytes signature;
        uint128 totalClaimed;
    }

    function deposit(ChannelConfig config, uint128 amount, address collector, bytes collectorData) external;
    function claim(VoucherClaim[] voucherClaims) external;
    function settle(address receiver, address token) external;
    function refund(ChannelConfig config, uint128 amount) external;
    function multicall(bytes[] data) external returns (bytes[] results);
    function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
    function pendingWithdrawals(bytes32 channelId) external view returns (uint128 amount, uint40 initiatedAt);
    function receivers(address receiver, address token) external view returns (uint128 totalClaimed, uint128 totalSettled);
}

/// An x402 amount that fits the escrow's uint128 (decimal digits only).
pub fn read_units(text: &str) -> Option<u128> {
    parse_amount(text).and_then(|a| u128::try_from(a).ok())
}

/// The escrow's EIP-712 domain on `chain_id`.
pub fn escrow_domain(chain_id: u64) -> Eip712Domain {
    Eip712Domain::new(
        Some("x402 Batch Settlement".into()),
        Some("1".into()),
        Some(U256::from(chain_id)),
        Some(ESCROW),
        None,
    )
}

/// The id of the channel `config` on `chain_id`.
pub fn channel_id(config: &ChannelConfig, chain_id: u64) -> B256 {
    config.eip712_signing_hash(&escrow_domain(chain_id))
}

/// The payer's voucher for `max` on channel `id`, `0x` hex.
pub fn sign_voucher(signer: &PrivateKeySigner, chain_id: u64, id: B256, max: u128) -> Result<String, SignError> {
    sign(signer, &Voucher { channelId: id, maxClaimableAmount: max }, &escrow_domain(chain_id))
}

/// Who signed the voucher for `max` on channel `id`, when `signature` reads as a 65-byte
/// ECDSA signature.
pub fn voucher_signer(chain_id: u64, id: B256, max: u128, signature: &str) -> Option<Address> {
    let hash = Voucher { channelId: id, maxClaimableAmount: max }.eip712_signing_hash(&escrow_domain(chain_id));
    let bytes = alloy::primitives::hex::decode(signature.trim_start_matches("0x")).ok()?;
    let signature = Signature::try_from(bytes.as_slice()).ok()?;
    signature.recover_address_from_prehash(&hash).ok()
}

/// What a `batch-settlement` offer asks: read from its terms, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchTerms {
    /// The chain.
    pub chain_id: u64,
    /// The token.
    pub asset: Address,
    /// Who is paid (the channel's receiver).
    pub pay_to: Address,
    /// This call's price, atomic units.
    pub amount: u128,
    /// Who authorizes claims and refunds (`extra.receiverAuthorizer`).
    pub receiver_authorizer: Address,
    /// How long a payer's withdrawal waits (`extra.withdrawDelay`, 900 when absent).
    pub withdraw_delay: u64,
    /// The deposit the service suggests (`extra.minDeposit`), atomic units.
    pub min_deposit: Option<u128>,
    /// The token's EIP-712 name and version (`extra`), which an ERC-3009 deposit is signed under.
    pub token_domain: Option<(String, String)>,
    /// How long a deposit authorization stays valid.
    pub max_timeout_seconds: u64,
}

impl BatchTerms {
    /// The terms of `offer`, a `batch-settlement` offer on an EVM chain.
    pub fn of(offer: &Offer) -> Result<BatchTerms, SignError> {
        let terms = offer.terms.as_ref().map_err(|why| SignError::Malformed(format!("the requirement: {why}")))?;
        if terms.scheme != SCHEME_BATCH {
            return Err(SignError::Unsupported(format!("scheme `{}` is not `{SCHEME_BATCH}`", terms.scheme)));
        }
        BatchTerms::read(terms).map_err(SignError::Malformed)
    }

    /// The terms of `requirements`, naming the field that does not read.
    pub fn read(terms: &Requirements) -> Result<BatchTerms, String> {
        let network = &terms.network;
        let chain_id = network
            .strip_prefix("eip155:")
            .and_then(|id| id.parse::<u64>().ok())
            .ok_or_else(|| format!("network `{network}` is not an EVM chain (eip155:<id>)"))?;
        let address = |key: &str, text: Option<&str>| {
            text.and_then(|t| t.parse::<Address>().ok())
                .filter(|a| !a.is_zero())
                .ok_or_else(|| format!("the requirement's `{key}` is not a non-zero address"))
        };
        let amount = read_units(&terms.amount)
            .ok_or_else(|| "the requirement's `amount` is not a whole number of at most 128 bits".to_string())?;
        let extra = terms.extra.as_ref();
        let withdraw_delay = match extra.and_then(|e| e.get("withdrawDelay")) {
            None => *WITHDRAW_DELAY.start(),
            Some(delay) => delay
                .as_u64()
                .filter(|d| WITHDRAW_DELAY.contains(d))
                .ok_or_else(|| "the requirement's `extra.withdrawDelay` is not 900 to 2592000 seconds".to_string())?,
        };
        let min_deposit = match terms.extra_text("minDeposit") {
            None => None,
            Some(text) => Some(
                read_units(text)
                    .ok_or_else(|| "the requirement's `extra.minDeposit` is not a whole number".to_string())?,
            ),
        };
        Ok(BatchTerms {
            chain_id,
            asset: address("asset", Some(&terms.asset))?,
            pay_to: address("payTo", Some(&terms.pay_to))?,
            amount,
            receiver_authorizer: address("extra.receiverAuthorizer", terms.extra_text("receiverAuthorizer"))?,
            withdraw_delay,
            min_deposit,
            token_domain: token_domain_of(terms).map(|(n, v)| (n.to_string(), v.to_string())),
            max_timeout_seconds: terms.max_timeout_seconds,
        })
    }

    /// The channel `payer` pays these terms through: the payer signs its own vouchers, the
    /// salt is zero (one channel per payer, receiver, authorizer, token and delay).
    pub fn channel_for(&self, payer: Address) -> ChannelConfig {
        ChannelConfig {
            payer,
            payerAuthorizer: payer,
            receiver: self.pay_to,
            receiverAuthorizer: self.receiver_authorizer,
            token: self.asset,
            withdrawDelay: alloy::primitives::Uint::<40, 1>::from(self.withdraw_delay),
            salt: B256::ZERO,
        }
    }
}

/// What a `batch-settlement` payload asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BatchKind {
    /// A deposit (the channel's first, or a top-up) with this call's voucher.
    Deposit,
    /// This call's voucher only.
    Voucher,
    /// Close the channel: claim what was charged, refund the rest (the route does not run).
    Refund,
}

/// The payload of a `batch-settlement` EVM payment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BatchPayload {
    /// What it asks for.
    #[serde(rename = "type")]
    pub kind: BatchKind,
    /// The channel.
    pub channel_config: ChannelFields,
    /// The voucher: for a call, the charged total with this call's price; for a refund,
    /// the charged total.
    pub voucher: VoucherFields,
    /// The deposit, for [`BatchKind::Deposit`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deposit: Option<DepositFields>,
    /// For a refund, how much of the rest to return (all of it when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<String>,
}

/// [`ChannelConfig`] on the wire: addresses and the salt as `0x` hex.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelFields {
    /// The payer.
    pub payer: String,
    /// Who signs vouchers.
    pub payer_authorizer: String,
    /// Who is paid.
    pub receiver: String,
    /// Who authorizes claims and refunds.
    pub receiver_authorizer: String,
    /// The token.
    pub token: String,
    /// Seconds a payer's withdrawal waits.
    pub withdraw_delay: u64,
    /// The payer's salt.
    pub salt: String,
}

impl ChannelFields {
    /// The fields of `config`.
    pub fn of(config: &ChannelConfig) -> ChannelFields {
        ChannelFields {
            payer: config.payer.to_checksum(None),
            payer_authorizer: config.payerAuthorizer.to_checksum(None),
            receiver: config.receiver.to_checksum(None),
            receiver_authorizer: config.receiverAuthorizer.to_checksum(None),
            token: config.token.to_checksum(None),
            withdraw_delay: config.withdrawDelay.to::<u64>(),
            salt: config.salt.to_string(),
        }
    }

    /// The config, naming the field that does not read.
    pub fn config(&self) -> Result<ChannelConfig, String> {
        let address = |key: &str, text: &str| {
            text.parse::<Address>().map_err(|_| format!("`channelConfig.{key}` is not an address"))
        };
        if !WITHDRAW_DELAY.contains(&self.withdraw_delay) {
            return Err("`channelConfig.withdrawDelay` is not 900 to 2592000 seconds".into());
        }
        Ok(ChannelConfig {
            payer: address("payer", &self.payer)?,
            payerAuthorizer: address("payerAuthorizer", &self.payer_authorizer)?,
            receiver: address("receiver", &self.receiver)?,
            receiverAuthorizer: address("receiverAuthorizer", &self.receiver_authorizer)?,
            token: address("token", &self.token)?,
            withdrawDelay: alloy::primitives::Uint::<40, 1>::from(self.withdraw_delay),
            salt: self.salt.parse().map_err(|_| "`channelConfig.salt` is not 32 bytes of hex".to_string())?,
        })
    }
}

/// A signed voucher on the wire.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VoucherFields {
    /// The channel id, `0x` hex.
    pub channel_id: String,
    /// The cumulative most, atomic units in decimal.
    pub max_claimable_amount: String,
    /// The payer's (or its authorizer's) EIP-712 signature, `0x` hex.
    pub signature: String,
}

impl VoucherFields {
    /// The channel id and the amount, naming the field that does not read.
    pub fn read(&self) -> Result<(B256, u128), String> {
        let id =
            self.channel_id.parse::<B256>().map_err(|_| "`voucher.channelId` is not 32 bytes of hex".to_string())?;
        let max = read_units(&self.max_claimable_amount)
            .ok_or_else(|| "`voucher.maxClaimableAmount` is not a whole number of at most 128 bits".to_string())?;
        Ok((id, max))
    }
}

/// A deposit on the wire: the amount and the payer's ERC-3009 authorization to the collector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DepositFields {
    /// Atomic units, decimal.
    pub amount: String,
    /// How the tokens are moved.
    pub authorization: DepositAuthorization,
}

/// How a deposit's tokens are moved: only ERC-3009 is taken here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DepositAuthorization {
    /// A `ReceiveWithAuthorization` to [`ERC3009_COLLECTOR`] whose nonce binds the channel.
    pub erc3009_authorization: Erc3009Deposit,
}

/// The ERC-3009 part of a deposit.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Erc3009Deposit {
    /// Unix time from which it is valid, decimal.
    pub valid_after: String,
    /// Unix time until which it is valid, decimal.
    pub valid_before: String,
    /// The random salt; the nonce is `keccak256(abi.encode(channelId, salt))`.
    pub salt: String,
    /// The payer's signature under the token's domain, `0x` hex.
    pub signature: String,
}

impl Erc3009Deposit {
    /// The escrow's `collectorData` for this deposit: `abi.encode(validAfter, validBefore,
    /// salt, signature)`, naming the field that does not read.
    pub fn collector_data(&self) -> Result<Bytes, String> {
        let number = |key: &str, text: &str| {
            parse_amount(text)
                .ok_or_else(|| format!("`deposit.authorization.erc3009Authorization.{key}` is not a number"))
        };
        let salt = self
            .salt
            .parse::<B256>()
            .map_err(|_| "`deposit.authorization.erc3009Authorization.salt` is not 32 bytes of hex".to_string())?;
        let signature = alloy::primitives::hex::decode(self.signature.trim_start_matches("0x"))
            .map_err(|_| "`deposit.authorization.erc3009Authorization.signature` is not hex".to_string())?;
        let data = (
            number("validAfter", &self.valid_after)?,
            number("validBefore", &self.valid_before)?,
            U256::from_be_bytes(salt.0),
            Bytes::from(signature),
        )
            .abi_encode_params();
        Ok(Bytes::from(data))
    }
}

/// A channel's state as a service reports it (a paid answer's `extra.channelState`, and a
/// corrective 402's `accepts[].extra.channelState`): what is deposited, claimed on chain and
/// charged so far, atomic units in decimal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelState {
    /// The channel id.
    pub channel_id: String,
    /// Deposited less refunded and withdrawn.
    pub balance: String,
    /// Claimed for the receiver on chain.
    pub total_claimed: String,
    /// When the payer asked to withdraw (Unix seconds), 0 when not.
    pub withdraw_requested_at: u64,
    /// The escrow's refund nonce of the channel.
    pub refund_nonce: String,
    /// What the service has charged in total: the next voucher is this plus the next price.
    pub charged_cumulative_amount: String,
}

impl ChannelState {
    /// The charged total and the balance, when they read.
    pub fn amounts(&self) -> Option<(u128, u128)> {
        Some((read_units(&self.charged_cumulative_amount)?, read_units(&self.balance)?))
    }
}

/// The escrow's errors, as declared (`hosted/contracts/SandboxBatchEscrow.sol`).
const ESCROW_ERRORS: &[&str] = &[
    "WrongAddress()",
    "UnauthorizedCaller()",
    "ZeroAmount()",
    "EmptyBatch()",
    "InvalidChannelConfig()",
    "WithdrawDelayOutOfRange(uint40)",
    "UnknownCollector(address)",
    "DepositAmountMismatch(uint256,uint256)",
    "InvalidVoucherSignature()",
    "InvalidAuthorizerSignature()",
    "AuthorizerMismatch()",
    "ClaimExceedsVoucher(uint128,uint128)",
    "ClaimExceedsBalance(uint128,uint128)",
    "InvalidRefundNonce(uint256,uint256)",
    "NothingToWithdraw()",
    "WithdrawalPending()",
    "NoPendingWithdrawal()",
    "WithdrawDelayNotElapsed(uint40)",
    "TransferFailed()",
    "ReentrancyGuardReentrantCall()",
];

/// What a revert of the escrow (or of the token under it) says: the escrow error's name, or
/// the `Error(string)` text; `None` for data neither.
pub fn revert_reason(data: &[u8]) -> Option<String> {
    let selector = data.get(..4)?;
    if selector == [0x08, 0xc3, 0x79, 0xa0] {
        return <(String,)>::abi_decode_params(&data[4..]).ok().map(|(text,)| text);
    }
    ESCROW_ERRORS
        .iter()
        .find(|signature| keccak256(signature.as_bytes())[..4] == *selector)
        .map(|signature| signature.split('(').next().unwrap_or(signature).to_string())
}

/// The ERC-3009 nonce of a deposit into channel `id` with `salt`.
pub fn deposit_nonce(id: B256, salt: B256) -> B256 {
    keccak256((id, salt).abi_encode())
}

/// The terms of `offer`, the channel of `signer` for them, and its voucher for `max`.
fn channel_voucher(
    signer: &PrivateKeySigner,
    offer: &Offer,
    max: u128,
) -> Result<(BatchTerms, ChannelConfig, VoucherFields), SignError> {
    let terms = BatchTerms::of(offer)?;
    let config = terms.channel_for(signer.address());
    let id = channel_id(&config, terms.chain_id);
    let voucher = VoucherFields {
        channel_id: id.to_string(),
        max_claimable_amount: max.to_string(),
        signature: sign_voucher(signer, terms.chain_id, id, max)?,
    };
    Ok((terms, config, voucher))
}

/// The PaymentPayload that pays `offer` (a `batch-settlement` entry of a PaymentRequired's
/// `accepts`) over `config`'s channel with a voucher for `voucher_max` (the charged total
/// with this call's price) and, when `deposit` is given, a deposit of that many atomic
/// units valid from `now` for the offer's timeout.
pub fn sign_batch_payment(
    signer: &PrivateKeySigner,
    offer: &Offer,
    resource: Option<&ResourceInfo>,
    voucher_max: u128,
    deposit: Option<u128>,
    now: u64,
) -> Result<PaymentPayload<BatchPayload, serde_json::Value>, SignError> {
    let (terms, config, voucher) = channel_voucher(signer, offer, voucher_max)?;
    let id = channel_id(&config, terms.chain_id);
    let deposit = match deposit {
        None => None,
        Some(amount) => {
            let Some((name, version)) = &terms.token_domain else {
                return Err(SignError::Unsupported(
                    "the requirement's `extra` names no EIP-712 token domain (name, version), which an ERC-3009 \
                     deposit needs"
                        .into(),
                ));
            };
            let salt = B256::from(rand::random::<[u8; 32]>());
            let valid_before = now.saturating_add(terms.max_timeout_seconds);
            let message = ReceiveWithAuthorization {
                from: signer.address(),
                to: ERC3009_COLLECTOR,
                value: U256::from(amount),
                validAfter: U256::ZERO,
                validBefore: U256::from(valid_before),
                nonce: deposit_nonce(id, salt),
            };
            let signature = sign(signer, &message, &token_domain(name, version, terms.chain_id, terms.asset))?;
            Some(DepositFields {
                amount: amount.to_string(),
                authorization: DepositAuthorization {
                    erc3009_authorization: Erc3009Deposit {
                        valid_after: "0".into(),
                        valid_before: valid_before.to_string(),
                        salt: salt.to_string(),
                        signature,
                    },
                },
            })
        }
    };
    let kind = if deposit.is_some() { BatchKind::Deposit } else { BatchKind::Voucher };
    Ok(PaymentPayload {
        x402_version: Version2,
        accepted: offer.raw.clone(),
        resource: resource.cloned(),
        payload: BatchPayload { kind, channel_config: ChannelFields::of(&config), voucher, deposit, amount: None },
        extensions: Default::default(),
    })
}

/// The refund request that closes `offer`'s channel of `signer`: a voucher for exactly the
/// `charged` total.
pub fn sign_batch_refund(
    signer: &PrivateKeySigner,
    offer: &Offer,
    charged: u128,
) -> Result<PaymentPayload<BatchPayload, serde_json::Value>, SignError> {
    let (_, config, voucher) = channel_voucher(signer, offer, charged)?;
    Ok(PaymentPayload {
        x402_version: Version2,
        accepted: offer.raw.clone(),
        resource: None,
        payload: BatchPayload {
            kind: BatchKind::Refund,
            channel_config: ChannelFields::of(&config),
            voucher,
            deposit: None,
            amount: None,
        },
        extensions: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use alloy::sol_types::SolCall as _;
    use serde_json::json;

    use super::*;

    fn offer() -> Offer {
        serde_json::from_value(json!({
            "scheme": "batch-settlement", "network": "eip155:8453", "amount": "1000",
            "asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "payTo": "0x90F79bf6EB2c4f870365E785982E1f101E93b906", "maxTimeoutSeconds": 300,
            "extra": {"name": "USD Coin", "version": "2", "minDeposit": "150000",
                      "receiverAuthorizer": "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65", "withdrawDelay": 900},
        }))
        .unwrap()
    }

    #[test]
    fn type_hashes_are_the_escrows() {
        // docs/batch-settlement.md lists them as the escrow computes them.
        let hash = |t: &str| keccak256(t.as_bytes()).to_string();
        assert_eq!(
            hash(&ChannelConfig::eip712_encode_type()),
            "0x1c9a06ceab9b0ebbd3301dc56c9111bb6d9af421356dc9ccb3b7084c755db308"
        );
        assert_eq!(
            hash(&Voucher::eip712_encode_type()),
            "0x1e1bd6ff84c3e0d9029a292b212e039c0ca97ec497c55191a4a5874294609a69"
        );
        assert_eq!(
            escrow_domain(8453).separator().to_string(),
            "0xd8d982716899b0e20cf2c1e706a37b8a892c83fdd4ac9b540cfeec11f9c73a39"
        );
        assert_eq!(depositCall::SELECTOR, [0x14, 0x0f, 0x1e, 0x75]);
        assert_eq!(claimCall::SELECTOR, [0x29, 0x23, 0x7b, 0x0c]);
        assert_eq!(settleCall::SELECTOR, [0x9d, 0xb3, 0x2a, 0x8f]);
        assert_eq!(refundCall::SELECTOR, [0xdc, 0xe4, 0xbf, 0xae]);
        assert_eq!(multicallCall::SELECTOR, [0xac, 0x96, 0x50, 0xd8]);
        assert_eq!(channelsCall::SELECTOR, [0x7a, 0x7e, 0xbd, 0x7b]);
        let exceeds = [&keccak256("ClaimExceedsBalance(uint128,uint128)")[..4], &[0u8; 64][..]].concat();
        assert_eq!(revert_reason(&exceeds).as_deref(), Some("ClaimExceedsBalance"));
        let text = [&[0x08, 0xc3, 0x79, 0xa0][..], &("FiatTokenV2: invalid signature",).abi_encode_params()].concat();
        assert_eq!(revert_reason(&text).as_deref(), Some("FiatTokenV2: invalid signature"));
        assert_eq!(revert_reason(&[1, 2, 3, 4]), None);
    }

    #[test]
    fn the_wire_example_reads_and_its_channel_id_is_recomputed() {
        // The deposit config of docs/batch-settlement.md, whose id the official client computed.
        let fields: ChannelFields = serde_json::from_value(json!({
            "payer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
            "payerAuthorizer": "0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC",
            "receiver": "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
            "receiverAuthorizer": "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65",
            "token": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913",
            "withdrawDelay": 900,
            "salt": "0x0000000000000000000000000000000000000000000000000000000000000000"
        }))
        .unwrap();
        let config = fields.config().unwrap();
        assert_eq!(
            channel_id(&config, 8453).to_string(),
            "0x648e7b98b45efffaf05c435ce2f81d1029efc32b328968d38f97dbabbabd3ecd"
        );
        assert_eq!(ChannelFields::of(&config), fields);
        let mut short = fields.clone();
        short.withdraw_delay = 60;
        assert!(short.config().unwrap_err().contains("withdrawDelay"));
    }

    #[test]
    fn a_payment_carries_a_voucher_its_payer_signed_and_a_deposit_bound_to_the_channel() {
        let signer = PrivateKeySigner::random();
        let payment = sign_batch_payment(&signer, &offer(), None, 1000, Some(150_000), 1_000_000).unwrap();
        let payload = &payment.payload;
        assert_eq!(payload.kind, BatchKind::Deposit);
        let config = payload.channel_config.config().unwrap();
        assert_eq!((config.payer, config.payerAuthorizer), (signer.address(), signer.address()));
        let (id, max) = payload.voucher.read().unwrap();
        assert_eq!((id, max), (channel_id(&config, 8453), 1000));
        assert_eq!(voucher_signer(8453, id, max, &payload.voucher.signature), Some(signer.address()));
        assert_ne!(voucher_signer(8453, id, max + 1, &payload.voucher.signature), Some(signer.address()));
        let deposit = payload.deposit.as_ref().unwrap();
        assert_eq!(deposit.amount, "150000");
        let erc3009 = &deposit.authorization.erc3009_authorization;
        assert_eq!(erc3009.valid_before, "1000300");
        assert_eq!(erc3009.collector_data().unwrap().len(), 4 * 32 + 32 + 96);
        // The ERC-3009 authorization is to the collector, with the channel in its nonce.
        let message = ReceiveWithAuthorization {
            from: signer.address(),
            to: ERC3009_COLLECTOR,
            value: U256::from(150_000),
            validAfter: U256::ZERO,
            validBefore: U256::from(1_000_300),
            nonce: deposit_nonce(id, erc3009.salt.parse().unwrap()),
        };
        let hash = message.eip712_signing_hash(&token_domain("USD Coin", "2", 8453, config.token));
        let bytes = alloy::primitives::hex::decode(erc3009.signature.trim_start_matches("0x")).unwrap();
        let recovered = Signature::try_from(bytes.as_slice()).unwrap().recover_address_from_prehash(&hash).unwrap();
        assert_eq!(recovered, signer.address());
        // Without a deposit it is a voucher; as JSON it is the wire's shape.
        let voucher = sign_batch_payment(&signer, &offer(), None, 2000, None, 1_000_000).unwrap();
        let wire = serde_json::to_value(&voucher.payload).unwrap();
        assert_eq!(wire["type"], "voucher");
        assert_eq!(wire["voucher"]["maxClaimableAmount"], "2000");
        assert!(wire.get("deposit").is_none());
        let refund = sign_batch_refund(&signer, &offer(), 2000).unwrap();
        assert_eq!(serde_json::to_value(&refund.payload).unwrap()["type"], "refund");
    }

    #[test]
    fn terms_name_what_does_not_read() {
        let mut raw = offer().raw;
        raw["extra"]["receiverAuthorizer"] = json!("0x0000000000000000000000000000000000000000");
        let error = BatchTerms::of(&serde_json::from_value(raw).unwrap()).unwrap_err().to_string();
        assert!(error.contains("receiverAuthorizer"), "{error}");
        let mut raw = offer().raw;
        raw["extra"]["withdrawDelay"] = json!(10);
        let error = BatchTerms::of(&serde_json::from_value(raw).unwrap()).unwrap_err().to_string();
        assert!(error.contains("withdrawDelay"), "{error}");
        let terms = BatchTerms::of(&offer()).unwrap();
        assert_eq!((terms.amount, terms.min_deposit, terms.withdraw_delay), (1000, Some(150_000), 900));
    }
}

//! What the hosted store keeps and answers, as types: a payment's state and outcome in the
//! replay guard, claims and settlements, free-pool takes, the paywall's decisions (the
//! ledger rows) and the totals and counts read from them.
//!
//! What this file must not do: read or write the database (the store does, in its
//! module); no type here has a field for a secret or a request body.

use std::fmt;
use std::str::FromStr;

use time::OffsetDateTime;

use super::PaymentKey;

/// The life of a payment payload in the replay guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PaymentState {
    /// Being served: verified or about to be, not yet settled.
    Claimed,
    /// Given back before settlement (nothing delivered or settled): may be claimed again.
    Released,
    /// Settled on chain.
    Settled,
    /// Settlement was attempted and failed; permanent, since it may still have landed.
    SettleFailed,
    /// Left `claimed` by a crash; refused forever since it may have been settled.
    Abandoned,
}

impl PaymentState {
    /// Every state.
    pub const ALL: [PaymentState; 5] = [
        PaymentState::Claimed,
        PaymentState::Released,
        PaymentState::Settled,
        PaymentState::SettleFailed,
        PaymentState::Abandoned,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            PaymentState::Claimed => "claimed",
            PaymentState::Released => "released",
            PaymentState::Settled => "settled",
            PaymentState::SettleFailed => "settle_failed",
            PaymentState::Abandoned => "abandoned",
        }
    }

    /// The state named `name`.
    pub fn parse(name: &str) -> Option<PaymentState> {
        PaymentState::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl fmt::Display for PaymentState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The answer of [`Store::claim_payment`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Claim {
    /// This caller owns the payment now; it must end with `release_payment` or `finish_payment`.
    Claimed,
    /// Replay: the payload was seen before; refuse the call and serve nothing.
    AlreadyUsed {
        /// Where the earlier use stands.
        state: PaymentState,
    },
}

/// How a claimed payment ended after a settlement attempt; recorded for good.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PaymentOutcome {
    /// Settled; the transaction hash (or the MPP receipt reference).
    Settled {
        /// On-chain transaction hash.
        tx_hash: String,
    },
    /// Settlement failed (or its result is unknown).
    SettleFailed {
        /// A short reason: an error code or the facilitator's message, never the payload.
        reason: String,
    },
}

/// What a claimed payment pays for, kept with the claim (both optional: an MPP payment or
/// a payload without a valid payment id is never redelivered).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PaidRequest {
    /// The `payment-identifier` extension's `info.id`, when the payload carries a valid one.
    pub payment_id: Option<String>,
    /// The sha256 of the request body bytes.
    pub request_sha256: Option<[u8; 32]>,
    /// The operation paid for (the ledger row a recovered settlement becomes).
    pub operation: Option<String>,
    /// The client, as the paywall keys it.
    pub client: Option<String>,
    /// The quote, in atomic units.
    pub amount: Option<u64>,
    /// The EIP-3009 authorization the payment signs (x402's EVM `exact` scheme), or the
    /// payer, mint and memo of a Solana transfer, by which a claim left by a crash is looked
    /// up on chain.
    pub authorization: Option<Authorization>,
}

/// An EIP-3009 `transferWithAuthorization`: what identifies it on chain. Public once used;
/// the signature is never kept. A Solana payment keeps the same four things: the mint, the
/// payer, its transfer's memo (a random nonce) and when its blockhash is too old to land.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Authorization {
    /// The token contract.
    pub asset: String,
    /// `from`: who pays.
    pub authorizer: String,
    /// The 32-byte nonce, 0x and 64 hex digits (EIP-3009); for an `upto` payment,
    /// Permit2's unordered nonce in decimal digits; for Solana, the transfer's memo.
    pub nonce: String,
    /// `validBefore`, unix seconds: after it the authorization can never be used.
    pub valid_before: u64,
}

/// A claim whose process is gone before its settlement was recorded, with what is needed
/// to look it up on chain ([`Store::unresolved_claims`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnresolvedClaim {
    /// The replay-guard key.
    pub key: PaymentKey,
    /// Route path.
    pub route: String,
    /// Operation name, when recorded.
    pub operation: Option<String>,
    /// Network, CAIP-2.
    pub network: String,
    /// The client, when recorded.
    pub client: Option<String>,
    /// The quote, atomic units.
    pub amount: Option<u64>,
    /// The authorization.
    pub authorization: Authorization,
    /// When it was claimed, unix milliseconds.
    pub claimed_at_ms: i64,
}

/// How a payment a decision records ended, written with the decision in one transaction
/// ([`Decision::finish`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClosedPayment {
    /// The payment.
    pub key: PaymentKey,
    /// Settled or not.
    pub outcome: PaymentOutcome,
    /// The payer the settlement named.
    pub payer: Option<String>,
}

/// The recorded settlement of a payment, as [`Store::redeliver`] gives it back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSettlement {
    /// The settlement transaction.
    pub tx_hash: String,
    /// The network (CAIP-2) it was paid on.
    pub network: String,
    /// The payer the settlement named, if recorded.
    pub payer: Option<String>,
    /// What an `upto` payment was charged (atomic units).
    pub charged: Option<u64>,
}

/// The answer of [`Store::take_free`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeTake {
    /// One free call taken; `remaining` are left today.
    Taken {
        /// Free calls left in the pool for this client today.
        remaining: u32,
    },
    /// The pool is used up for this client today; nothing was consumed.
    Exhausted,
}

/// What the paywall decided for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Unpaid call answered with a 402.
    PaymentRequired,
    /// Payment for another amount than the quote: fresh 402, never settled.
    PriceMismatch,
    /// Input refused (422/413/415/404) with a payment attached; payment untouched.
    InvalidInput,
    /// The payment header could not be used (malformed, wrong network or requirements): fresh 402.
    InvalidPayment,
    /// Served from the free pool.
    Free,
    /// Free call asked for with the pool used up: 402 `free_pool_exhausted`.
    FreeExhausted,
    /// Paid with x402 and settled; the result was delivered.
    Paid,
    /// Paid with MPP; the result was delivered.
    MppPaid,
    /// The facilitator refused the payment at verification.
    VerifyFailed,
    /// The operation succeeded but settlement failed; nothing delivered.
    SettleFailed,
    /// The operation failed; nothing settled (paid) or the free call refunded.
    OperationFailed,
    /// The payload was used before.
    Replay,
    /// A settled payment resent with the same payment id for the same route and body: the
    /// operation ran again and its answer was delivered with the stored settlement; no
    /// money moved (the row's `tx_hash` is the original settlement's, and it is not counted
    /// in [`Totals`]).
    Redelivered,
    /// The facilitator could not be reached (503).
    FacilitatorUnavailable,
    /// A `batch-settlement` channel closed at its payer's request: what it charged claimed,
    /// the rest refunded (the row's `tx_hash`; no route ran).
    Refunded,
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 15] = [
        Outcome::PaymentRequired,
        Outcome::PriceMismatch,
        Outcome::InvalidInput,
        Outcome::InvalidPayment,
        Outcome::Free,
        Outcome::FreeExhausted,
        Outcome::Paid,
        Outcome::MppPaid,
        Outcome::VerifyFailed,
        Outcome::SettleFailed,
        Outcome::OperationFailed,
        Outcome::Replay,
        Outcome::Redelivered,
        Outcome::FacilitatorUnavailable,
        Outcome::Refunded,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::PaymentRequired => "payment_required",
            Outcome::PriceMismatch => "price_mismatch",
            Outcome::InvalidInput => "invalid_input",
            Outcome::InvalidPayment => "invalid_payment",
            Outcome::Free => "free",
            Outcome::FreeExhausted => "free_exhausted",
            Outcome::Paid => "paid",
            Outcome::MppPaid => "mpp_paid",
            Outcome::VerifyFailed => "verify_failed",
            Outcome::SettleFailed => "settle_failed",
            Outcome::OperationFailed => "operation_failed",
            Outcome::Replay => "replay",
            Outcome::Redelivered => "redelivered",
            Outcome::FacilitatorUnavailable => "facilitator_unavailable",
            Outcome::Refunded => "channel_refunded",
        }
    }

    /// The outcome named `name`.
    pub fn parse(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Whether money moved or may have moved (the row is committed with a full flush).
    pub fn moves_money(self) -> bool {
        matches!(self, Outcome::Paid | Outcome::MppPaid | Outcome::SettleFailed | Outcome::Refunded)
    }

    /// Whether money was collected (the quote counts in [`Totals`]).
    pub fn is_paid(self) -> bool {
        matches!(self, Outcome::Paid | Outcome::MppPaid)
    }

    /// Whether rows of this outcome are kept for good (retention never deletes them): money
    /// moved, may have moved, or an answer was delivered again on a settled payment.
    pub fn kept_for_good(self) -> bool {
        self.moves_money() || self == Outcome::Redelivered
    }
}

/// The outcomes [`Outcome::kept_for_good`] names, as retention's SQL lists them (a unit
/// test holds the two together).
#[cfg(test)]
pub(super) const KEPT_FOR_GOOD: [&str; 5] = ["paid", "mpp_paid", "settle_failed", "redelivered", "channel_refunded"];

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Outcome {
    type Err = String;

    fn from_str(name: &str) -> Result<Outcome, String> {
        Outcome::parse(name).ok_or_else(|| format!("unknown outcome `{name}`"))
    }
}

/// One ledger row: a paywall decision. Deliberately has no field for secrets or bodies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// When (kept to the millisecond; read back in UTC).
    pub at: OffsetDateTime,
    /// Route path, e.g. `/v1/pdf/rotate`.
    pub route: String,
    /// Operation name, e.g. `rotate_pdf`.
    pub operation: String,
    /// The quote in atomic units (6 decimals), if one was computed; for an `upto` payment,
    /// the most the payer authorized.
    pub quote: Option<u64>,
    /// What an `upto` payment settled, when it differs from the quote (atomic units).
    pub charged: Option<u64>,
    /// What was decided.
    pub outcome: Outcome,
    /// Payer address, if a payment named one.
    pub payer: Option<String>,
    /// Network (CAIP-2), if paid or attempted.
    pub network: Option<String>,
    /// Settlement transaction hash, if settled.
    pub tx_hash: Option<String>,
    /// Error code answered, if any.
    pub error_code: Option<String>,
    /// Client IP (as the paywall keys it), if known.
    pub client: Option<String>,
    /// The payment's replay-guard key, if a payment was attached.
    pub payment_key: Option<PaymentKey>,
    /// How the claimed payment ended, recorded with this row in one transaction: the row
    /// about money and the payment's end are never one without the other.
    pub finish: Option<ClosedPayment>,
    /// A `batch-settlement` call's voucher, committed with this row in one transaction.
    pub channel: Option<super::ChannelCommit>,
}

impl Decision {
    /// A decision made now, with every optional field empty.
    pub fn new(route: impl Into<String>, operation: impl Into<String>, outcome: Outcome) -> Decision {
        Decision {
            at: OffsetDateTime::now_utc(),
            route: route.into(),
            operation: operation.into(),
            quote: None,
            charged: None,
            outcome,
            payer: None,
            network: None,
            tx_hash: None,
            error_code: None,
            client: None,
            payment_key: None,
            finish: None,
            channel: None,
        }
    }
}

/// Money collected, from the ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Calls paid and delivered (x402 and MPP).
    pub paid_calls: u64,
    /// Sum of what they settled (the quote, or what an `upto` payment charged), atomic units.
    pub settled_amount: u64,
}

/// How many unpaid refusals one hour saw for one route, outcome and error code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnpaidCount {
    /// The start of the hour (UTC).
    pub hour: OffsetDateTime,
    /// Route path.
    pub route: String,
    /// The refusal.
    pub outcome: Outcome,
    /// The error code answered, if any.
    pub error_code: Option<String>,
    /// How many.
    pub count: u64,
}

/// What [`Store::prune`] deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Decisions that moved no money.
    pub decisions: u64,
    /// Hours of unpaid counts (one row per hour, route, outcome and error code).
    pub unpaid_counts: u64,
}

//! x402's `exact` scheme on Solana: the payer signs a transfer transaction whose fee payer
//! is the facilitator, who co-signs and sends it.
//!
//! - [`transaction`]: the transaction from plain bytes: built, signed, read.
//! - [`client`]: the paying client's half: what an offer asks ([`Terms`]) and the payload
//!   that pays it.
//! - [`server`]: the paid side's half: checks on a payload before any work is spent on it,
//!   and what identifies it.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

pub mod client;
pub mod server;
pub mod transaction;

pub use client::{Terms, payment};
pub use server::{check_signed, signed_message};
pub use transaction::*;

/// The payload of an `exact` Solana payment: the partly signed transaction, base64.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExactSvmPayload {
    /// The transaction's wire bytes, base64.
    pub transaction: String,
}

impl ExactSvmPayload {
    /// The payload carrying `wire`.
    pub fn of(wire: &[u8]) -> ExactSvmPayload {
        ExactSvmPayload { transaction: STANDARD.encode(wire) }
    }

    /// The transaction's wire bytes, when the text is base64 of at most a transaction's size.
    pub fn wire(&self) -> Option<Vec<u8>> {
        if self.transaction.len() > MAX_TRANSACTION_BYTES * 2 {
            return None;
        }
        STANDARD.decode(&self.transaction).ok()
    }

    /// The amount of the transaction's first `TransferChecked`, when it reads.
    pub fn transferred_amount(&self) -> Option<u64> {
        Transaction::parse(&self.wire()?)?.transferred_amount()
    }
}

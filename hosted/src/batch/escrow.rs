//! The service's side of the `batch-settlement` escrow on one EVM chain: it simulates and
//! submits a payer's deposit, reads a channel, and claims, sweeps and refunds, signing its
//! transactions with the receiver authorizer's key (the escrow takes `claim` and `refund`
//! from the authorizer itself, so no claim batch or refund needs a separate signature).
//!
//! One transaction at a time per key: the nonce is the key's to keep.

use std::time::Duration;

use alloy::network::{EthereumWallet, TransactionBuilder as _};
use alloy::primitives::{Address, B256, Bytes};
use alloy::providers::{DynProvider, Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall as _;
use paperchain_protocol::batch_evm::{
    self, ChannelConfig, ERC3009_COLLECTOR, ESCROW, VoucherClaim, channelsCall, claimCall, depositCall, multicallCall,
    pendingWithdrawalsCall, refundCall, settleCall,
};
use url::Url;

/// How long a sent transaction may take to be mined.
const RECEIPT_TIMEOUT: Duration = Duration::from_secs(60);

/// Why an escrow call failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EscrowError {
    /// The escrow refused it (a simulation or a mined transaction reverted).
    #[error("the escrow refused {what}: {detail}")]
    Refused {
        /// What was asked.
        what: &'static str,
        /// The node's words.
        detail: String,
    },
    /// The node did not answer, or a sent transaction's fate is unknown.
    #[error("{what}: the chain did not answer: {detail}")]
    Unavailable {
        /// What was asked.
        what: &'static str,
        /// The node's words.
        detail: String,
    },
}

/// What the escrow holds for a channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OnChain {
    /// Deposited less refunded and withdrawn.
    pub balance: u128,
    /// Claimed for the receiver.
    pub claimed: u128,
    /// The payer asked to withdraw.
    pub withdrawing: bool,
}

/// The escrow on one chain, driven by the receiver authorizer's key.
pub struct Escrow {
    provider: DynProvider,
    chain_id: u64,
    authorizer: Address,
    sending: tokio::sync::Mutex<()>,
}

impl Escrow {
    /// The escrow of the chain at `rpc` (chain `chain_id`), with `key` as receiver authorizer
    /// and sender of the service's transactions (it needs gas).
    pub fn new(rpc: Url, chain_id: u64, key: PrivateKeySigner) -> Escrow {
        let authorizer = key.address();
        let provider = ProviderBuilder::new().wallet(EthereumWallet::from(key)).connect_http(rpc).erased();
        Escrow { provider, chain_id, authorizer, sending: tokio::sync::Mutex::new(()) }
    }

    /// The chain.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// The receiver authorizer every channel of this service names.
    pub fn authorizer(&self) -> Address {
        self.authorizer
    }

    /// Whether `deposit` would succeed now (the payer's authorization and funds).
    pub async fn simulate_deposit(&self, config: &ChannelConfig, amount: u128, data: Bytes) -> Result<(), EscrowError> {
        let call = depositCall { config: config.clone(), amount, collector: ERC3009_COLLECTOR, collectorData: data };
        self.call("the deposit", call.abi_encode()).await.map(|_| ())
    }

    /// Submits the payer's deposit; its transaction.
    pub async fn deposit(&self, config: &ChannelConfig, amount: u128, data: Bytes) -> Result<B256, EscrowError> {
        let call = depositCall { config: config.clone(), amount, collector: ERC3009_COLLECTOR, collectorData: data };
        self.send("the deposit", call.abi_encode()).await
    }

    /// The channel `id` as the escrow holds it.
    pub async fn channel(&self, id: B256) -> Result<OnChain, EscrowError> {
        let answer = self.call("reading a channel", channelsCall { channelId: id }.abi_encode()).await?;
        let state = channelsCall::abi_decode_returns(&answer)
            .map_err(|e| EscrowError::Unavailable { what: "reading a channel", detail: e.to_string() })?;
        let answer = self.call("reading a withdrawal", pendingWithdrawalsCall { channelId: id }.abi_encode()).await?;
        let pending = pendingWithdrawalsCall::abi_decode_returns(&answer)
            .map_err(|e| EscrowError::Unavailable { what: "reading a withdrawal", detail: e.to_string() })?;
        Ok(OnChain {
            balance: state.balance,
            claimed: state.totalClaimed,
            withdrawing: pending.initiatedAt != alloy::primitives::Uint::<40, 1>::ZERO,
        })
    }

    /// Claims `rows` and sweeps what is claimed to `receiver`, in one transaction.
    pub async fn claim(&self, rows: Vec<VoucherClaim>, receiver: Address, token: Address) -> Result<B256, EscrowError> {
        let calls = vec![
            Bytes::from(claimCall { voucherClaims: rows }.abi_encode()),
            Bytes::from(settleCall { receiver, token }.abi_encode()),
        ];
        self.send("the claim", multicallCall { data: calls }.abi_encode()).await
    }

    /// Claims `row` (when something is unclaimed), refunds `amount` to the payer and sweeps
    /// what is claimed to the receiver, in one transaction.
    pub async fn refund(
        &self,
        config: &ChannelConfig,
        row: Option<VoucherClaim>,
        amount: u128,
    ) -> Result<B256, EscrowError> {
        let mut calls = Vec::new();
        if let Some(row) = row {
            calls.push(Bytes::from(claimCall { voucherClaims: vec![row] }.abi_encode()));
            calls.push(Bytes::from(settleCall { receiver: config.receiver, token: config.token }.abi_encode()));
        }
        if amount > 0 {
            calls.push(Bytes::from(refundCall { config: config.clone(), amount }.abi_encode()));
        }
        if calls.is_empty() {
            return Err(EscrowError::Refused { what: "the refund", detail: "nothing to claim or refund".into() });
        }
        self.send("the refund", multicallCall { data: calls }.abi_encode()).await
    }

    async fn call(&self, what: &'static str, data: Vec<u8>) -> Result<Bytes, EscrowError> {
        let request = TransactionRequest::default().with_from(self.authorizer).with_to(ESCROW).with_input(data);
        self.provider.call(request).await.map_err(|e| classify(what, e))
    }

    async fn send(&self, what: &'static str, data: Vec<u8>) -> Result<B256, EscrowError> {
        let _one = self.sending.lock().await;
        let request = TransactionRequest::default().with_from(self.authorizer).with_to(ESCROW).with_input(data);
        // Simulated first: a call the escrow refuses costs no gas and says why.
        self.provider.call(request.clone()).await.map_err(|e| classify(what, e))?;
        let pending = self.provider.send_transaction(request).await.map_err(|e| classify(what, e))?;
        let receipt = pending
            .with_timeout(Some(RECEIPT_TIMEOUT))
            .get_receipt()
            .await
            .map_err(|e| EscrowError::Unavailable { what, detail: e.to_string() })?;
        if !receipt.status() {
            return Err(EscrowError::Refused {
                what,
                detail: format!("transaction {} reverted", receipt.transaction_hash),
            });
        }
        Ok(receipt.transaction_hash)
    }
}

/// A refusal when the node answered with a revert, unavailable otherwise.
fn classify(what: &'static str, error: alloy::transports::TransportError) -> EscrowError {
    match error.as_error_resp() {
        Some(response) => {
            let reason = response
                .as_revert_data()
                .and_then(|data| batch_evm::revert_reason(&data))
                .unwrap_or_else(|| response.message.to_string());
            EscrowError::Refused { what, detail: reason }
        }
        None => EscrowError::Unavailable { what, detail: error.to_string() },
    }
}

/// The claim row of a voucher for `max` signed `signature`, claiming up to `total`.
pub fn claim_row(config: &ChannelConfig, max: u128, signature: &str, total: u128) -> Option<VoucherClaim> {
    let signature = alloy::primitives::hex::decode(signature.trim_start_matches("0x")).ok()?;
    Some(VoucherClaim {
        voucher: batch_evm::SignedVoucher { channel: config.clone(), maxClaimableAmount: max },
        signature: Bytes::from(signature),
        totalClaimed: total,
    })
}

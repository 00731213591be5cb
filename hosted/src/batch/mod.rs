//! The service's `batch-settlement` channels on one EVM network: what it offers (the
//! requirement's `extra`), the escrow it submits deposits, claims and refunds to
//! ([`escrow`]), and the sweep that claims what its channels charged ([`Channels::sweep`]).
//! The paywall's checks of each paid call are in `paywall/batch.rs`; the channel records
//! in the store (`store/channels.rs`).
//!
//! Idle channels: one without a call for [`Channels::refunding_after`] (a day unless
//! configured) has its unspent deposit returned to its payer by the same sweep.
//!
//! Claims: every [`Channels::claim_every`], all channels with more charged than claimed, up
//! to [`CLAIM_ROWS`] per transaction, each claimed with the payer's latest voucher and the
//! claimed tokens swept to the receiver in the same transaction. A channel whose payer
//! asked to withdraw is claimed by the same sweep, long before the escrow's shortest
//! withdraw delay (15 minutes) runs out; it takes no more vouchers.

use std::time::Duration;

use alloy::primitives::{Address, B256};
use paperchain_protocol::batch_evm::{ChannelConfig, ChannelFields, WITHDRAW_DELAY};
use serde_json::{Value, json};

use crate::store::{ChannelRow, ChannelTx, Store};

pub mod escrow;

use escrow::{Escrow, EscrowError, claim_row};

/// Most rows in one claim transaction.
pub const CLAIM_ROWS: u32 = 100;
/// How long the chain's word on a channel's balance is trusted before a voucher call reads
/// it again (the sweep reads every channel it claims).
pub const BALANCE_FRESH: Duration = Duration::from_secs(60);

/// The channels of one network.
pub struct Channels {
    escrow: Escrow,
    network: &'static str,
    withdraw_delay: u64,
    claim_every: Duration,
    idle: Duration,
}

impl Channels {
    /// Channels on `network` (CAIP-2) through `escrow`, with payers' withdrawals delayed
    /// `withdraw_delay` seconds, claimed every `claim_every`.
    pub fn new(escrow: Escrow, network: &'static str, withdraw_delay: u64, claim_every: Duration) -> Channels {
        let withdraw_delay = withdraw_delay.clamp(*WITHDRAW_DELAY.start(), *WITHDRAW_DELAY.end());
        Channels { escrow, network, withdraw_delay, claim_every, idle: Duration::from_secs(86_400) }
    }

    /// Refunds a channel's unspent deposit once it has gone `idle` without a call.
    pub fn refunding_after(mut self, idle: Duration) -> Channels {
        self.idle = idle;
        self
    }

    /// The network.
    pub fn network(&self) -> &'static str {
        self.network
    }

    /// The escrow.
    pub fn escrow(&self) -> &Escrow {
        &self.escrow
    }

    /// How often the sweep runs.
    pub fn claim_every(&self) -> Duration {
        self.claim_every
    }

    /// The withdraw delay every channel must name.
    pub fn withdraw_delay(&self) -> u64 {
        self.withdraw_delay
    }

    /// The `extra` of a `batch-settlement` requirement for a call of `amount` atomic units,
    /// given the token's EIP-712 `name` and `version`.
    pub fn extra(&self, name: &str, version: &str, amount: u64) -> Value {
        json!({
            "name": name,
            "version": version,
            "receiverAuthorizer": self.escrow.authorizer().to_checksum(None),
            "withdrawDelay": self.withdraw_delay,
            "minDeposit": amount.saturating_mul(10).to_string(),
        })
    }

    /// Why `config` is not a channel of this service paid to `pay_to` in `asset`, if it is not.
    pub fn refuse_config(&self, config: &ChannelConfig, pay_to: Address, asset: Address) -> Option<String> {
        if config.payer.is_zero() {
            return Some("`channelConfig.payer` is the zero address".into());
        }
        if config.receiver != pay_to {
            return Some(format!("`channelConfig.receiver` is not this service's payTo {pay_to}"));
        }
        if config.token != asset {
            return Some(format!("`channelConfig.token` is not the offered asset {asset}"));
        }
        if config.receiverAuthorizer != self.escrow.authorizer() {
            return Some(format!(
                "`channelConfig.receiverAuthorizer` is not this service's {}",
                self.escrow.authorizer()
            ));
        }
        if config.withdrawDelay.to::<u64>() != self.withdraw_delay {
            return Some(format!("`channelConfig.withdrawDelay` is not the offered {}", self.withdraw_delay));
        }
        None
    }

    /// Claims every channel with more charged than claimed, [`CLAIM_ROWS`] per transaction,
    /// sweeping the claimed tokens to the receiver; then reads back from the chain channels
    /// not read for [`BALANCE_FRESH`] (a payer's withdrawal shows there). What it claimed.
    pub async fn sweep(&self, store: &Store) -> Result<u128, String> {
        let mut total = 0;
        loop {
            let rows = store.channels_to_claim(CLAIM_ROWS).await.map_err(|e| e.to_string())?;
            let rows: Vec<ChannelRow> = rows.into_iter().filter(|row| row.network == self.network).collect();
            if rows.is_empty() {
                break;
            }
            // One transaction per receiver and token (a claim sweeps to one of each).
            let first = read_config(&rows[0])?;
            let (receiver, token) = (first.receiver, first.token);
            let mut claims = Vec::new();
            let mut recorded = Vec::new();
            let mut before = Vec::new();
            let mut amount = 0u128;
            for row in &rows {
                let config = read_config(row)?;
                if (config.receiver, config.token) != (receiver, token) {
                    continue;
                }
                let signature = row.voucher_signature.as_deref().unwrap_or_default();
                let claim = claim_row(&config, row.charged, signature, row.charged)
                    .ok_or_else(|| format!("channel {}: its voucher signature is not hex", row.id))?;
                claims.push(claim);
                recorded.push((row.id.clone(), row.charged, None));
                before.push(row.claimed);
                amount += row.charged - row.claimed;
            }
            let count = claims.len() as u32;
            match self.escrow.claim(claims.clone(), receiver, token).await {
                Ok(tx) => {
                    let tx = ChannelTx { kind: "claim".into(), tx_hash: tx.to_string(), channels: count, amount };
                    store.channels_settled(&tx, &recorded).await.map_err(|e| e.to_string())?;
                    tracing::info!(channels = count, amount = %amount, tx = %tx.tx_hash, "batch-settlement: claimed");
                    total += amount;
                }
                // One channel the escrow refuses (its payer withdrew what it had charged, say)
                // must not hold back the others: each is claimed alone, the refused one read
                // back from the chain and left out until its record changes.
                Err(EscrowError::Refused { detail, .. }) if count > 1 => {
                    tracing::warn!(detail = %detail, "a batch claim was refused; claiming its channels one by one");
                    for (claim, (claimed, (id, charged, _))) in claims.into_iter().zip(before.into_iter().zip(recorded))
                    {
                        let one = charged - claimed;
                        match self.escrow.claim(vec![claim], receiver, token).await {
                            Ok(tx) => {
                                let tx = ChannelTx {
                                    kind: "claim".into(),
                                    tx_hash: tx.to_string(),
                                    channels: 1,
                                    amount: one,
                                };
                                store.channels_settled(&tx, &[(id, charged, None)]).await.map_err(|e| e.to_string())?;
                                total += one;
                            }
                            Err(e) => {
                                tracing::error!(channel = %id, error = %e, "a channel's claim was refused");
                                if let Ok(channel) = id.parse::<B256>() {
                                    let _ = self.refresh(store, channel).await;
                                }
                            }
                        }
                    }
                    break;
                }
                Err(e) => return Err(e.to_string()),
            }
            if count < CLAIM_ROWS {
                break;
            }
        }
        self.check(store).await?;
        self.refund_idle(store).await?;
        Ok(total)
    }

    /// Returns the unspent deposit of every channel without a call for [`Channels::idle`]:
    /// what it charged is claimed and the rest refunded to its payer, in one transaction.
    /// The channel takes no voucher meanwhile; a later deposit opens it again.
    async fn refund_idle(&self, store: &Store) -> Result<(), String> {
        let before = crate::store::now_ms() - i64::try_from(self.idle.as_millis()).unwrap_or(i64::MAX);
        for row in store.take_idle_channels(before, CLAIM_ROWS).await.map_err(|e| e.to_string())? {
            let refunded = self.refund_one(store, &row).await;
            // Read back whatever happened: the record is the chain's again, and open.
            if let Ok(id) = row.id.parse::<B256>()
                && let Err(e) = self.refresh(store, id).await
            {
                tracing::warn!(channel = %row.id, error = %e, "reading an idle channel back failed");
            }
            if let Err(e) = refunded {
                tracing::warn!(channel = %row.id, error = %e, "refunding an idle channel failed; tried again later");
            }
        }
        Ok(())
    }

    async fn refund_one(&self, store: &Store, row: &ChannelRow) -> Result<(), String> {
        if row.network != self.network {
            return Ok(());
        }
        let config = read_config(row)?;
        let id = row.id.parse::<B256>().map_err(|e| e.to_string())?;
        let on_chain = self.escrow.channel(id).await.map_err(|e| e.to_string())?;
        let rest = on_chain.balance.saturating_sub(row.charged.max(on_chain.claimed));
        if rest == 0 {
            return Ok(());
        }
        let claim = (row.charged > on_chain.claimed)
            .then(|| claim_row(&config, row.charged, row.voucher_signature.as_deref().unwrap_or_default(), row.charged))
            .flatten();
        let tx = self.escrow.refund(&config, claim, rest).await.map_err(|e| e.to_string())?;
        let record = ChannelTx { kind: "refund".into(), tx_hash: tx.to_string(), channels: 1, amount: rest };
        let balance = on_chain.balance - rest;
        store
            .channels_settled(&record, &[(row.id.clone(), row.charged, Some(balance))])
            .await
            .map_err(|e| e.to_string())?;
        tracing::info!(channel = %row.id, refunded = %rest, tx = %record.tx_hash, "batch-settlement: an idle channel's rest refunded");
        Ok(())
    }

    /// Reads back from the chain the channels not read for [`BALANCE_FRESH`].
    async fn check(&self, store: &Store) -> Result<(), String> {
        let before = crate::store::now_ms() - i64::try_from(BALANCE_FRESH.as_millis()).unwrap_or(i64::MAX);
        for row in store.channels_to_check(before, 1000).await.map_err(|e| e.to_string())? {
            if row.network != self.network {
                continue;
            }
            let Ok(id) = row.id.parse::<B256>() else { continue };
            let on_chain = self.escrow.channel(id).await.map_err(|e| e.to_string())?;
            store
                .channel_checked(&row.id, on_chain.balance, on_chain.claimed, on_chain.withdrawing)
                .await
                .map_err(|e| e.to_string())?;
        }
        Ok(())
    }

    /// Reads channel `id` from the chain and records it; what the chain holds.
    pub async fn refresh(&self, store: &Store, id: B256) -> Result<escrow::OnChain, EscrowError> {
        let on_chain = self.escrow.channel(id).await?;
        if let Err(e) =
            store.channel_checked(&id.to_string(), on_chain.balance, on_chain.claimed, on_chain.withdrawing).await
        {
            tracing::warn!(error = %e, "recording a channel's state failed");
        }
        Ok(on_chain)
    }
}

/// The channel config a row keeps.
pub fn read_config(row: &ChannelRow) -> Result<ChannelConfig, String> {
    let fields: ChannelFields =
        serde_json::from_str(&row.config).map_err(|e| format!("channel {}: its config does not read: {e}", row.id))?;
    fields.config().map_err(|e| format!("channel {}: {e}", row.id))
}

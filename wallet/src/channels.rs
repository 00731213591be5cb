//! The payer's `batch-settlement` channels, kept in the ledger's file: per channel what was
//! deposited, refunded, charged (the last voucher signed) and claimed by the service, and
//! each deposit, voucher, claim (as the escrow shows it when the channel is read) and
//! refund as an event.
//!
//! A call over a channel signs a voucher for the charged total plus its price; when that is
//! over the channel's balance, a deposit goes with it, topping the unspent rest up to
//! `policy.channel_deposit` (never less than the call needs). The voucher is the call's
//! spend (the ledger's call row, counted by the caps); the deposit is not spend: it stays
//! the payer's in the escrow until claimed by vouchers or refunded
//! ([`PayingClient::close_channels`](crate::client::PayingClient::close_channels)).
//!
//! What a service may claim is never more than the highest voucher signed, so a voucher
//! the service refused costs nothing beyond it: the next voucher covers the same amount.

use alloy::primitives::B256;
use paperchain_engine_core::evm::Chains;
use paperchain_protocol::batch_evm::{self, ChannelState};
use paperchain_protocol::x402;
use serde::Serialize;
use serde_json::Value;
use sqlx::Row as _;

use crate::client::CallError;
use crate::ledger::{Ledger, LedgerError};
use crate::reconcile::Check;
use crate::x402_client;

/// The tables (created with the ledger's).
pub(crate) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS channels (
    id TEXT PRIMARY KEY NOT NULL,
    host TEXT NOT NULL,
    network TEXT NOT NULL,
    payer TEXT NOT NULL,
    offer TEXT NOT NULL,
    url TEXT NOT NULL,
    symbol TEXT NOT NULL,
    decimals INTEGER NOT NULL,
    deposited INTEGER NOT NULL DEFAULT 0,
    refunded INTEGER NOT NULL DEFAULT 0,
    charged INTEGER NOT NULL DEFAULT 0,
    claimed INTEGER NOT NULL DEFAULT 0,
    updated_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS channel_events (
    id INTEGER PRIMARY KEY,
    channel TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'voucher', 'claim', 'refund')),
    amount INTEGER NOT NULL,
    tx TEXT,
    call_id TEXT
);
CREATE INDEX IF NOT EXISTS channel_events_channel ON channel_events (channel, id);
";

/// A channel as the payer keeps it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Channel {
    /// The channel id.
    pub id: String,
    /// The hosted service.
    pub host: String,
    /// CAIP-2 network.
    pub network: String,
    /// The payer.
    pub payer: String,
    /// The `batch-settlement` offer last paid (what a refund request names).
    #[serde(skip)]
    pub offer: Value,
    /// The resource last paid (where a refund request goes).
    pub url: String,
    /// The asset's symbol.
    pub symbol: String,
    /// Its decimals.
    pub decimals: u8,
    /// Deposited in total, atomic units.
    pub deposited: u128,
    /// Refunded in total.
    pub refunded: u128,
    /// What the vouchers signed and accepted add up to.
    pub charged: u128,
    /// What the service has claimed of it, as the escrow showed when last read.
    pub claimed: u128,
}

impl Channel {
    /// Deposited less refunded.
    pub fn balance(&self) -> u128 {
        self.deposited.saturating_sub(self.refunded)
    }

    /// What is left to spend or refund.
    pub fn unspent(&self) -> u128 {
        self.balance().saturating_sub(self.charged)
    }
}

/// What the next call over a channel signs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Next {
    /// The voucher: the charged total plus the price.
    pub voucher: u128,
    /// The deposit that goes with it, when the balance is short.
    pub deposit: Option<u128>,
}

/// The next call of `price` over `channel` (none yet: a new one), with at most `cap`
/// unspent in the channel after a deposit.
pub(crate) fn next(channel: Option<&Channel>, price: u128, cap: u128) -> Result<Next, String> {
    let (balance, charged) = channel.map_or((0, 0), |c| (c.balance(), c.charged));
    let voucher = charged + price;
    if voucher <= balance {
        return Ok(Next { voucher, deposit: None });
    }
    if cap < price {
        return Err(format!(
            "a call of {price} units is more than policy.channel_deposit ({cap} units) lets a channel hold"
        ));
    }
    // Topped up to the cap of unspent money, at least what this call needs.
    let unspent = balance.saturating_sub(charged);
    Ok(Next { voucher, deposit: Some((cap - unspent.min(cap)).max(voucher - balance)) })
}

fn to_db(ledger: &Ledger, amount: u128) -> Result<i64, LedgerError> {
    i64::try_from(amount).map_err(|_| LedgerError::other(ledger.path(), format!("the amount {amount} is too large")))
}

fn channel_of(row: &sqlx::sqlite::SqliteRow) -> Result<Channel, sqlx::Error> {
    let amount =
        |column: &str| -> Result<u128, sqlx::Error> { Ok(u128::try_from(row.try_get::<i64, _>(column)?).unwrap_or(0)) };
    let offer: String = row.try_get("offer")?;
    Ok(Channel {
        id: row.try_get("id")?,
        host: row.try_get("host")?,
        network: row.try_get("network")?,
        payer: row.try_get("payer")?,
        offer: serde_json::from_str(&offer).unwrap_or(Value::Null),
        url: row.try_get("url")?,
        symbol: row.try_get("symbol")?,
        decimals: u8::try_from(row.try_get::<i64, _>("decimals")?).unwrap_or(6),
        deposited: amount("deposited")?,
        refunded: amount("refunded")?,
        charged: amount("charged")?,
        claimed: amount("claimed")?,
    })
}

/// The channel `id`, when the payer has one.
pub(crate) async fn get(ledger: &Ledger, id: &str) -> Result<Option<Channel>, LedgerError> {
    let row = sqlx::query("SELECT * FROM channels WHERE id = ?1")
        .bind(id)
        .fetch_optional(ledger.pool())
        .await
        .map_err(|e| ledger.sql_error(e))?;
    row.as_ref().map(channel_of).transpose().map_err(|e| ledger.sql_error(e))
}

/// Every channel, the newest first.
pub async fn list(ledger: &Ledger) -> Result<Vec<Channel>, LedgerError> {
    let rows = sqlx::query("SELECT * FROM channels ORDER BY updated_at_ms DESC")
        .fetch_all(ledger.pool())
        .await
        .map_err(|e| ledger.sql_error(e))?;
    rows.iter().map(channel_of).collect::<Result<_, _>>().map_err(|e| ledger.sql_error(e))
}

/// A call's voucher (and deposit) the service accepted: the channel's new totals, its
/// events and the call's row marked paid (`tx`: the deposit's; the settlement as the
/// service said it), in one transaction.
pub(crate) async fn paid(
    ledger: &Ledger,
    channel: &Channel,
    (voucher, deposit): (u128, Option<(u128, &str)>),
    call_id: &str,
    settlement: &Value,
) -> Result<(), LedgerError> {
    let error = |e| ledger.sql_error(e);
    let now = crate::ledger::now_ms();
    let mut tx = ledger.pool().begin().await.map_err(error)?;
    sqlx::query(
        "INSERT INTO channels (id, host, network, payer, offer, url, symbol, decimals, updated_at_ms)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
         ON CONFLICT (id) DO UPDATE SET offer = excluded.offer, url = excluded.url, updated_at_ms = excluded.updated_at_ms",
    )
    .bind(&channel.id)
    .bind(&channel.host)
    .bind(&channel.network)
    .bind(&channel.payer)
    .bind(channel.offer.to_string())
    .bind(&channel.url)
    .bind(&channel.symbol)
    .bind(i64::from(channel.decimals))
    .bind(now)
    .execute(&mut *tx)
    .await
    .map_err(error)?;
    let events = [deposit.map(|(amount, hash)| ("deposit", amount, Some(hash))), Some(("voucher", voucher, None))];
    for (kind, amount, hash) in events.into_iter().flatten() {
        event(ledger, &mut tx, &channel.id, (kind, amount, hash), Some(call_id)).await?;
    }
    sqlx::query("UPDATE channels SET charged = MAX(charged, ?2), deposited = deposited + ?3 WHERE id = ?1")
        .bind(&channel.id)
        .bind(to_db(ledger, voucher)?)
        .bind(to_db(ledger, deposit.map_or(0, |(amount, _)| amount))?)
        .execute(&mut *tx)
        .await
        .map_err(error)?;
    sqlx::query("UPDATE calls SET state = 'paid', tx = ?2, settlement = ?3 WHERE call_id = ?1")
        .bind(call_id)
        .bind(deposit.map(|(_, hash)| crate::clean(hash, 200)))
        .bind(crate::clean(&settlement.to_string(), 4000))
        .execute(&mut *tx)
        .await
        .map_err(error)?;
    tx.commit().await.map_err(error)
}

/// The service's word on channel `id` in a corrective 402: its charged total, believed only
/// when it holds this payer's own voucher for it (`voucher_state`: `signedMaxClaimable`
/// and `signature`: the payer signed that much, so the service can claim it whatever this
/// ledger says; a call whose answer was lost leaves the ledger short), or when it says
/// nothing was charged yet. What the channel's total became, when it changed.
pub(crate) async fn resync(
    ledger: &Ledger,
    id: &str,
    chain_id: u64,
    payer: alloy::primitives::Address,
    state: &ChannelState,
    voucher_state: Option<&Value>,
) -> Result<Option<u128>, LedgerError> {
    let Some((charged, _)) = state.amounts() else { return Ok(None) };
    let Ok(channel) = id.parse::<B256>() else { return Ok(None) };
    let signed = voucher_state.and_then(|v| {
        let max = v.get("signedMaxClaimable")?.as_str()?.parse::<u128>().ok()?;
        let signature = v.get("signature")?.as_str()?;
        (max == charged && batch_evm::voucher_signer(chain_id, channel, max, signature) == Some(payer)).then_some(max)
    });
    let ours = get(ledger, id).await?.map_or(0, |c| c.charged);
    let believed = match signed {
        Some(max) => max,
        // Nothing charged yet on the service's side: this payer signed nothing it holds.
        None if charged == 0 => 0,
        None => return Ok(None),
    };
    if believed == ours {
        return Ok(None);
    }
    sqlx::query("UPDATE channels SET charged = ?2, updated_at_ms = ?3 WHERE id = ?1")
        .bind(id)
        .bind(to_db(ledger, believed)?)
        .bind(crate::ledger::now_ms())
        .execute(ledger.pool())
        .await
        .map_err(|e| ledger.sql_error(e))?;
    Ok(Some(believed))
}

/// What the escrow holds for `channel` (`balance`, read from the chain), when it is less
/// than the ledger's deposited less refunded: the rest went back to the payer without this
/// ledger seeing it (the service refunded an idle channel, or a withdrawal made with
/// another tool). Recorded as a refund found on chain; how much.
pub(crate) async fn returned_on_chain(ledger: &Ledger, channel: &Channel, balance: u128) -> Result<u128, LedgerError> {
    let missed = channel.balance().saturating_sub(balance.max(channel.charged));
    if missed > 0 {
        refunded(ledger, &channel.id, missed, None).await?;
    }
    Ok(missed)
}

/// Reads `channel` from the escrow and records what went back to the payer unseen
/// ([`returned_on_chain`]); how much.
pub(crate) async fn sync(ledger: &Ledger, chains: &Chains, channel: &Channel) -> Result<u128, String> {
    let chain = crate::chain::chain_of(chains, &channel.network)?;
    let id = channel.id.parse::<B256>().map_err(|_| "the channel id is not 32 bytes of hex".to_string())?;
    let (balance, _) = crate::chain::escrow_channel(&chain, id).await?;
    returned_on_chain(ledger, channel, balance).await.map_err(|e| e.to_string())
}

/// What the escrow shows claimed of `channel` (`claimed`), when more than last recorded:
/// the service's claims since, recorded as one claim event; how much.
async fn claimed_on_chain(ledger: &Ledger, channel: &Channel, claimed: u128) -> Result<u128, LedgerError> {
    let new = claimed.saturating_sub(channel.claimed);
    if new == 0 {
        return Ok(0);
    }
    let error = |e| ledger.sql_error(e);
    let mut db = ledger.pool().begin().await.map_err(error)?;
    event(ledger, &mut db, &channel.id, ("claim", new, None), None).await?;
    sqlx::query("UPDATE channels SET claimed = ?2 WHERE id = ?1")
        .bind(&channel.id)
        .bind(to_db(ledger, claimed)?)
        .execute(&mut *db)
        .await
        .map_err(error)?;
    db.commit().await.map_err(error)?;
    Ok(new)
}

/// Adds event `kind` of `amount` (in transaction `tx`, for call `call_id`, when known) to
/// channel `id`'s events, inside `db`'s transaction.
async fn event(
    ledger: &Ledger,
    db: &mut sqlx::SqliteConnection,
    id: &str,
    (kind, amount, tx): (&str, u128, Option<&str>),
    call_id: Option<&str>,
) -> Result<(), LedgerError> {
    sqlx::query(
        "INSERT INTO channel_events (channel, at_ms, kind, amount, tx, call_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )
    .bind(id)
    .bind(crate::ledger::now_ms())
    .bind(kind)
    .bind(to_db(ledger, amount)?)
    .bind(tx.map(|tx| crate::clean(tx, 200)))
    .bind(call_id)
    .execute(db)
    .await
    .map_err(|e| ledger.sql_error(e))?;
    Ok(())
}

/// A refund of `amount` (in transaction `tx`, when known) on channel `id`.
pub(crate) async fn refunded(ledger: &Ledger, id: &str, amount: u128, tx: Option<&str>) -> Result<(), LedgerError> {
    let error = |e| ledger.sql_error(e);
    let now = crate::ledger::now_ms();
    let mut db = ledger.pool().begin().await.map_err(error)?;
    event(ledger, &mut db, id, ("refund", amount, tx), None).await?;
    sqlx::query("UPDATE channels SET refunded = refunded + ?2, updated_at_ms = ?3 WHERE id = ?1")
        .bind(id)
        .bind(to_db(ledger, amount)?)
        .bind(now)
        .execute(&mut *db)
        .await
        .map_err(error)?;
    db.commit().await.map_err(error)
}

/// Each channel against the escrow: its balance must be what was deposited less refunded,
/// and what the service claimed at most what the vouchers charged.
pub async fn reconcile(ledger: &Ledger, chains: &Chains) -> Result<Vec<Check>, LedgerError> {
    let mut checks = Vec::new();
    for channel in list(ledger).await? {
        let check = |verdict: &str, detail: String| Check {
            call_id: format!("channel {}", channel.id),
            was: "channel".into(),
            verdict: verdict.into(),
            tx: None,
            detail,
        };
        let chain = match crate::chain::chain_of(chains, &channel.network) {
            Ok(chain) => chain,
            Err(e) => {
                checks.push(check("unknown", e));
                continue;
            }
        };
        let Ok(id) = channel.id.parse::<B256>() else {
            checks.push(check("unknown", "the channel id is not 32 bytes of hex".into()));
            continue;
        };
        let (balance, claimed) = match crate::chain::escrow_channel(&chain, id).await {
            Ok(on_chain) => on_chain,
            Err(e) => {
                checks.push(check("unknown", e));
                continue;
            }
        };
        let missed = returned_on_chain(ledger, &channel, balance).await?;
        claimed_on_chain(ledger, &channel, claimed).await?;
        let channel = Channel { refunded: channel.refunded + missed, claimed, ..channel.clone() };
        let found = if missed > 0 {
            format!("; a return of {missed} to the payer found on chain was recorded")
        } else {
            String::new()
        };
        if balance != channel.balance() {
            checks.push(check(
                "mismatch",
                format!(
                    "the escrow holds {balance} for the channel; the ledger says {} deposited less {} refunded = {} \
                     (a withdrawal from another tool, or a deposit or refund this ledger missed)",
                    channel.deposited,
                    channel.refunded,
                    channel.balance()
                ),
            ));
        } else if claimed > channel.charged {
            checks.push(check(
                "mismatch",
                format!(
                    "the service claimed {claimed}, more than the {} this payer's vouchers charged",
                    channel.charged
                ),
            ));
        } else {
            checks.push(check(
                "ok",
                format!(
                    "balance {balance} = {} deposited − {} refunded; claimed {claimed} of {} charged{found}",
                    channel.deposited, channel.refunded, channel.charged
                ),
            ));
        }
    }
    Ok(checks)
}

/// A channel closed: what its service refunded, in which transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Closed {
    /// Atomic units refunded to the payer.
    pub refunded: u128,
    /// The transaction that claimed and refunded.
    pub tx: String,
}

impl crate::client::PayingClient {
    /// Closes every `batch-settlement` channel with something unspent: asks its service to
    /// claim what was charged and refund the rest, in one transaction, and records the
    /// refund. One closed channel, or why it is not, per channel.
    pub async fn close_channels(&self) -> Result<Vec<(Channel, Result<Closed, String>)>, CallError> {
        let _one = self.one_at_a_time("channels.lock").await?;
        let signer = self.signer().await.map_err(CallError::Keys)?;
        let mut out = Vec::new();
        for channel in list(self.ledger()).await? {
            if channel.unspent() == 0 || !channel.payer.eq_ignore_ascii_case(&signer.address().to_checksum(None)) {
                continue;
            }
            let closed = self.close_channel(&signer, &channel).await;
            out.push((channel, closed));
        }
        Ok(out)
    }

    async fn close_channel(
        &self,
        signer: &alloy::signers::local::PrivateKeySigner,
        channel: &Channel,
    ) -> Result<Closed, String> {
        let offer: x402::Offer = serde_json::from_value(channel.offer.clone()).map_err(|e| e.to_string())?;
        let request = paperchain_protocol::batch_evm::sign_batch_refund(signer, &offer, channel.charged)
            .map_err(|e| e.to_string())?;
        let header = x402::encode(&request);
        let received = self
            .send(&channel.url, &channel.host, &bytes::Bytes::from_static(b"{}"), Some(&header))
            .await
            .map_err(|e| e.to_string())?;
        let settlement = received.header(x402::PAYMENT_RESPONSE).map(x402_client::read_settlement);
        match (received.status, settlement) {
            (200, Some(Ok(settlement))) if settlement.success => {
                let amount = settlement.amount.as_deref().and_then(|a| a.parse::<u128>().ok()).unwrap_or(0);
                refunded(self.ledger(), &channel.id, amount, Some(&settlement.transaction))
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(Closed { refunded: amount, tx: settlement.transaction })
            }
            (status, _) => {
                let said = x402_client::read_payment_required(received.header(x402::PAYMENT_REQUIRED), &received.body)
                    .ok()
                    .and_then(|r| r.error)
                    .unwrap_or_else(|| String::from_utf8_lossy(&received.body).chars().take(300).collect());
                Err(format!("the service answered {status}: {}", crate::clean(&said, 300)))
            }
        }
    }
}

/// A call's payment over a channel, in flight: the channel (as it will be recorded) and
/// what was signed.
#[derive(Clone, Debug)]
pub(crate) struct Voucher {
    /// The channel, with this call's offer and URL.
    pub channel: Channel,
    /// The voucher and the deposit signed.
    pub next: Next,
    /// The chain.
    pub chain_id: u64,
}

/// Signs the call of `selected` (a `batch-settlement` offer) over the payer's channel for
/// it, on `host` at `url`: a voucher for the charged total plus the price, and a deposit
/// when the channel is short (the unspent rest topped up to `cap` atomic units).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn sign(
    ledger: &Ledger,
    signer: &alloy::signers::local::PrivateKeySigner,
    selected: &crate::policy::Selected,
    resource: Option<&x402::ResourceInfo>,
    host: &str,
    url: &str,
    cap: u128,
    now: u64,
) -> Result<(x402::PaymentPayload<batch_evm::BatchPayload, Value>, Voucher), x402_client::PayError> {
    let offer = &selected.requirement;
    let terms = batch_evm::BatchTerms::of(offer)?;
    let id = batch_evm::channel_id(&terms.channel_for(signer.address()), terms.chain_id).to_string();
    let known = get(ledger, &id).await.map_err(|e| x402_client::PayError::Chain(e.to_string()))?;
    let next = next(known.as_ref(), selected.atomic, cap).map_err(x402_client::PayError::Chain)?;
    let payload = batch_evm::sign_batch_payment(signer, offer, resource, next.voucher, next.deposit, now)?;
    let channel = Channel {
        id,
        host: host.to_string(),
        network: selected.network.clone(),
        payer: signer.address().to_checksum(None),
        offer: offer.raw.clone(),
        url: url.to_string(),
        symbol: selected.asset.symbol.clone(),
        decimals: selected.asset.decimals,
        ..known.unwrap_or_default()
    };
    Ok((payload, Voucher { channel, next, chain_id: terms.chain_id }))
}

/// The channel state and last voucher a corrective 402 (`accepts[].extra`) carries for
/// `voucher`'s channel.
pub(crate) fn corrective_state(
    required: &x402::PaymentRequired,
    voucher: &Voucher,
) -> Option<(ChannelState, Option<Value>)> {
    required.accepts.iter().find_map(|offer| {
        let extra = offer.raw.get("extra")?;
        let state: ChannelState = serde_json::from_value(extra.get("channelState")?.clone()).ok()?;
        (state.channel_id.eq_ignore_ascii_case(&voucher.channel.id))
            .then(|| (state, extra.get("voucherState").cloned()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(deposited: u128, refunded: u128, charged: u128) -> Channel {
        Channel {
            id: "0x01".into(),
            host: "h".into(),
            network: "eip155:8453".into(),
            payer: "p".into(),
            offer: Value::Null,
            url: "u".into(),
            symbol: "USDC".into(),
            decimals: 6,
            deposited,
            refunded,
            charged,
            claimed: 0,
        }
    }

    #[test]
    fn a_deposit_tops_the_unspent_rest_up_to_the_cap_and_covers_the_call() {
        // No channel yet: the cap is deposited.
        assert_eq!(next(None, 1_000, 100_000), Ok(Next { voucher: 1_000, deposit: Some(100_000) }));
        // Enough left: a voucher alone.
        assert_eq!(
            next(Some(&channel(100_000, 0, 99_000)), 1_000, 100_000),
            Ok(Next { voucher: 100_000, deposit: None })
        );
        // Short by 500: topped up so that 100,000 is unspent again.
        let short = channel(100_000, 0, 99_500);
        assert_eq!(next(Some(&short), 1_000, 100_000), Ok(Next { voucher: 100_500, deposit: Some(99_500) }));
        // After a refund the balance is what was charged: a new deposit of the cap.
        let closed = channel(100_000, 40_000, 60_000);
        assert_eq!(closed.unspent(), 0);
        assert_eq!(next(Some(&closed), 1_000, 50_000), Ok(Next { voucher: 61_000, deposit: Some(50_000) }));
        // A call dearer than the cap lets a channel hold is refused.
        assert!(next(None, 2_000, 1_000).unwrap_err().contains("policy.channel_deposit"));
    }
}

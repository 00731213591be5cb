//! The `batch-settlement` channels the service is paid through: what each payer deposited,
//! what the service charged (the payer's latest voucher), what it claimed on chain, and
//! the transactions it sent for them.
//!
//! One call per channel at a time: a call reserves the channel's next voucher amount
//! ([`Store::reserve_channel`], a guarded upsert on the charged total it read), and its
//! ledger row commits it ([`ChannelCommit`], in the row's transaction) or it is released.
//! Two calls with the same voucher, or a voucher signed from a stale total, cannot both be
//! charged. A voucher signature is kept: it is what the service claims with (only the
//! receiver or its authorizer may submit a claim, so a copy of it moves nothing).

use std::time::Duration;

use sqlx::Row;

use super::{MAX_TEXT, Store, StoreError, clip, now_ms};

/// A channel as the service knows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelRow {
    /// The channel id, `0x` and 64 hex digits.
    pub id: String,
    /// Its network (CAIP-2).
    pub network: String,
    /// The payer.
    pub payer: String,
    /// The channel config as it travels (JSON).
    pub config: String,
    /// Deposited less refunded and withdrawn, as last known.
    pub balance: u128,
    /// What the accepted vouchers add up to.
    pub charged: u128,
    /// What was claimed on chain.
    pub claimed: u128,
    /// The payer's voucher for `charged`.
    pub voucher_signature: Option<String>,
    /// A call's voucher amount while the call runs.
    pub pending: Option<u128>,
    /// The payer asked to withdraw: no more vouchers are taken.
    pub withdrawing: bool,
    /// When the balance was last read from the chain (Unix ms, 0: never).
    pub checked_at_ms: i64,
}

/// A channel a call reserves (created on its first deposit).
#[derive(Clone, Debug)]
pub struct NewChannel<'a> {
    /// The channel id.
    pub id: &'a str,
    /// Its network.
    pub network: &'a str,
    /// The payer.
    pub payer: &'a str,
    /// The config as it travels (JSON).
    pub config: &'a str,
}

/// What a paid call over a channel commits with its ledger row: the reserved voucher
/// becomes the charged total, and a deposit's new balance read from the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelCommit {
    /// The channel id.
    pub id: String,
    /// The reserved voucher amount (the new charged total).
    pub charged: u128,
    /// The channel's balance after this call's deposit, when it had one.
    pub balance: Option<u128>,
}

/// A transaction the service sent for channels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChannelTx {
    /// `deposit`, `claim` or `refund`.
    pub kind: String,
    /// Its hash.
    pub tx_hash: String,
    /// How many channels it touched.
    pub channels: u32,
    /// What it deposited, claimed or refunded in total, atomic units.
    pub amount: u128,
}

fn to_db(what: &'static str, amount: u128) -> Result<i64, StoreError> {
    i64::try_from(amount).map_err(|_| StoreError::OutOfRange { what, value: u64::try_from(amount).unwrap_or(u64::MAX) })
}

fn from_db(row: &sqlx::sqlite::SqliteRow, column: &str) -> Result<u128, StoreError> {
    let value: i64 = row.try_get(column)?;
    u128::try_from(value)
        .map_err(|_| StoreError::Corrupt { table: "channels", detail: format!("negative {column} {value}") })
}

fn channel_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ChannelRow, StoreError> {
    let pending: Option<i64> = row.try_get("pending")?;
    Ok(ChannelRow {
        id: row.try_get("id")?,
        network: row.try_get("network")?,
        payer: row.try_get("payer")?,
        config: row.try_get("config")?,
        balance: from_db(row, "balance")?,
        charged: from_db(row, "charged")?,
        claimed: from_db(row, "claimed")?,
        voucher_signature: row.try_get("voucher_sig")?,
        pending: pending.and_then(|p| u128::try_from(p).ok()),
        withdrawing: row.try_get::<i64, _>("withdrawing")? != 0,
        checked_at_ms: row.try_get("checked_at_ms")?,
    })
}

/// Commits `commit` inside the ledger row's transaction; whether the reservation was there.
pub(super) async fn commit_channel(
    tx: &mut sqlx::SqliteConnection,
    commit: &ChannelCommit,
) -> Result<bool, StoreError> {
    let balance = commit.balance.map(|b| to_db("balance", b)).transpose()?;
    let done = sqlx::query(
        "UPDATE channels SET charged = pending, voucher_sig = pending_sig, pending = NULL, pending_sig = NULL,
                pending_at_ms = NULL, balance = COALESCE(?3, balance),
                checked_at_ms = CASE WHEN ?3 IS NULL THEN checked_at_ms ELSE ?4 END, updated_at_ms = ?4
         WHERE id = ?1 AND pending = ?2",
    )
    .bind(&commit.id)
    .bind(to_db("charged", commit.charged)?)
    .bind(balance)
    .bind(now_ms())
    .execute(&mut *tx)
    .await?;
    Ok(done.rows_affected() == 1)
}

impl Store {
    /// The channel `id`, when the service has one.
    pub async fn channel(&self, id: &str) -> Result<Option<ChannelRow>, StoreError> {
        let row = sqlx::query("SELECT * FROM channels WHERE id = ?1").bind(id).fetch_optional(&self.inner.pool).await?;
        row.as_ref().map(channel_from_row).transpose()
    }

    /// Reserves `pending` (a voucher for the charged total `expected` plus this call's
    /// price, signed `signature`) on `channel`, creating it: refused (false) when the
    /// charged total is no longer `expected`, another call holds the channel, or the payer
    /// asked to withdraw.
    pub async fn reserve_channel(
        &self,
        channel: &NewChannel<'_>,
        expected: u128,
        pending: u128,
        signature: &str,
    ) -> Result<bool, StoreError> {
        let now = now_ms();
        let done = sqlx::query(
            "INSERT INTO channels (id, network, payer, config, balance, charged, claimed, pending, pending_sig,
                                   pending_at_ms, checked_at_ms, updated_at_ms)
             VALUES (?1, ?2, ?3, ?4, 0, 0, 0, ?6, ?7, ?8, 0, ?8)
             ON CONFLICT (id) DO UPDATE SET pending = excluded.pending, pending_sig = excluded.pending_sig,
                 pending_at_ms = excluded.pending_at_ms, updated_at_ms = excluded.updated_at_ms
             WHERE channels.charged = ?5 AND channels.pending IS NULL AND channels.withdrawing = 0",
        )
        .bind(clip(channel.id, MAX_TEXT))
        .bind(clip(channel.network, MAX_TEXT))
        .bind(clip(channel.payer, MAX_TEXT))
        .bind(clip(channel.config, 4 * MAX_TEXT))
        .bind(to_db("charged", expected)?)
        .bind(to_db("pending", pending)?)
        .bind(clip(signature, MAX_TEXT))
        .bind(now)
        .execute(&self.inner.pool)
        .await?;
        // A new channel is created only for a first voucher (nothing charged yet).
        if done.rows_affected() == 1 && expected != 0 {
            let row = self.channel(channel.id).await?;
            if row.is_some_and(|row| row.charged != expected) {
                self.release_channel(channel.id, pending).await?;
                return Ok(false);
            }
        }
        Ok(done.rows_affected() == 1)
    }

    /// Releases the reservation of `pending` on `id` (the call failed: nothing charged).
    pub async fn release_channel(&self, id: &str, pending: u128) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE channels SET pending = NULL, pending_sig = NULL, pending_at_ms = NULL, updated_at_ms = ?3
             WHERE id = ?1 AND pending = ?2",
        )
        .bind(id)
        .bind(to_db("pending", pending)?)
        .bind(now_ms())
        .execute(&self.inner.pool)
        .await?;
        Ok(())
    }

    /// Releases reservations older than `older_than` (their call died); how many.
    pub async fn release_stale_channels(&self, older_than: Duration) -> Result<u64, StoreError> {
        let cutoff = now_ms().saturating_sub(i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX));
        let done = sqlx::query(
            "UPDATE channels SET pending = NULL, pending_sig = NULL, pending_at_ms = NULL
             WHERE pending IS NOT NULL AND pending_at_ms <= ?1",
        )
        .bind(cutoff)
        .execute(&self.inner.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Up to `limit` channels with more charged than claimed, oldest activity first.
    pub async fn channels_to_claim(&self, limit: u32) -> Result<Vec<ChannelRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM channels WHERE charged > claimed AND voucher_sig IS NOT NULL
             ORDER BY updated_at_ms LIMIT ?1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter().map(channel_from_row).collect()
    }

    /// Channels whose balance was last read from the chain before `before_ms` (Unix ms) and
    /// that hold something unclaimed, up to `limit`.
    pub async fn channels_to_check(&self, before_ms: i64, limit: u32) -> Result<Vec<ChannelRow>, StoreError> {
        let rows = sqlx::query(
            "SELECT * FROM channels WHERE checked_at_ms < ?1 AND balance > claimed ORDER BY checked_at_ms LIMIT ?2",
        )
        .bind(before_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter().map(channel_from_row).collect()
    }

    /// Up to `limit` channels with an unspent deposit and no call since `before_ms` (Unix
    /// ms), none running; each is taken (it accepts no voucher) until
    /// [`Store::channel_checked`] records it again.
    pub async fn take_idle_channels(&self, before_ms: i64, limit: u32) -> Result<Vec<ChannelRow>, StoreError> {
        let rows = sqlx::query(
            "UPDATE channels SET withdrawing = 1
             WHERE id IN (SELECT id FROM channels WHERE balance > charged AND updated_at_ms < ?1 AND pending IS NULL
                          AND withdrawing = 0 ORDER BY updated_at_ms LIMIT ?2)
               AND pending IS NULL
             RETURNING *",
        )
        .bind(before_ms)
        .bind(i64::from(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter().map(channel_from_row).collect()
    }

    /// Records what the chain says of channel `id`: its balance, what is claimed, whether
    /// the payer asked to withdraw.
    pub async fn channel_checked(
        &self,
        id: &str,
        balance: u128,
        claimed: u128,
        withdrawing: bool,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE channels SET balance = ?2, claimed = MAX(claimed, ?3), withdrawing = ?4, checked_at_ms = ?5
             WHERE id = ?1",
        )
        .bind(id)
        .bind(to_db("balance", balance)?)
        .bind(to_db("claimed", claimed)?)
        .bind(i64::from(withdrawing))
        .bind(now_ms())
        .execute(&self.inner.pool)
        .await?;
        Ok(())
    }

    /// Records transaction `tx` and, in the same transaction, each channel's new claimed
    /// total and (for a refund) balance.
    pub async fn channels_settled(
        &self,
        tx: &ChannelTx,
        claims: &[(String, u128, Option<u128>)],
    ) -> Result<(), StoreError> {
        let mut db = self.inner.pool.begin().await?;
        for (id, claimed, balance) in claims {
            let balance = balance.map(|b| to_db("balance", b)).transpose()?;
            sqlx::query(
                "UPDATE channels SET claimed = MAX(claimed, ?2), balance = COALESCE(?3, balance), updated_at_ms = ?4
                 WHERE id = ?1",
            )
            .bind(id)
            .bind(to_db("claimed", *claimed)?)
            .bind(balance)
            .bind(now_ms())
            .execute(&mut *db)
            .await?;
        }
        sqlx::query("INSERT INTO channel_txs (at_ms, kind, tx_hash, channels, amount) VALUES (?1, ?2, ?3, ?4, ?5)")
            .bind(now_ms())
            .bind(&tx.kind)
            .bind(clip(&tx.tx_hash, MAX_TEXT))
            .bind(i64::from(tx.channels))
            .bind(to_db("amount", tx.amount)?)
            .execute(&mut *db)
            .await?;
        db.commit().await?;
        Ok(())
    }

    /// The transactions sent for channels, oldest first.
    pub async fn channel_txs(&self) -> Result<Vec<ChannelTx>, StoreError> {
        let rows = sqlx::query("SELECT kind, tx_hash, channels, amount FROM channel_txs ORDER BY id")
            .fetch_all(&self.inner.pool)
            .await?;
        rows.iter()
            .map(|row| {
                let channels: i64 = row.try_get("channels")?;
                Ok(ChannelTx {
                    kind: row.try_get("kind")?,
                    tx_hash: row.try_get("tx_hash")?,
                    channels: u32::try_from(channels).unwrap_or(0),
                    amount: from_db(row, "amount")?,
                })
            })
            .collect()
    }
}

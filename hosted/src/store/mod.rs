//! The hosted mode's persistent state, one SQLite file: the replay guard for payment
//! payloads, the free-pool counters and the ledger of paywall decisions.
//!
//! Durability: the file runs in WAL journal mode (readers never block the writer). In WAL
//! mode `synchronous=NORMAL` may lose the last committed transactions on power loss (not
//! on a process crash). Payment claims and the ledger rows of decisions that moved money
//! (paid, settle failed) are committed on `synchronous=FULL` connections: a lost commit
//! there is a lost claim or settlement record, worth one fsync of the WAL per commit. The
//! ledger rows of every other decision (402s, refusals) and the free-pool counters go
//! through `synchronous=NORMAL` connections: an unpaid caller must not be able to make the
//! server flush the disk on every request (measured with `cargo xtask bench paywall`:
//! one flush per 402 capped them near 1,400 a second on this machine's disk). A busy
//! timeout (5 s by default) makes concurrent writers wait for the lock instead of failing.
//!
//! Every mutation is a single SQL statement (an upsert or a guarded `UPDATE`), so each is
//! atomic without explicit transactions and no reader ever has to upgrade to a writer
//! (which, in WAL mode, fails with `SQLITE_BUSY` regardless of the busy timeout).
//!
//! What is stored, and what is not: no secrets and no request bodies. There is no column
//! for a payment signature or payload, a private key, a request body or a result.
//! Payments are identified by the sha256 of their canonical payload (computed by the
//! caller), which cannot be turned back into the signed authorization. A claim also keeps
//! the client's payment id (the `payment-identifier` extension) and the sha256 of the
//! request body, so that a settled payment resent for the very same request can have its
//! answer delivered again without paying twice ([`Store::redeliver`]). Text fields are
//! clipped (see [`MAX_TEXT`]) so that hostile header values cannot bloat the file.
//!
//! Refusals of calls that carried no payment (the 402 quote, a free pool used up, a body
//! too large) are not a row each: an unpaid caller could otherwise grow
//! the file without bound and make every refusal a write. They are counted in memory per
//! hour, route, outcome and error code, and the counts are added to `unpaid_counts` every
//! few seconds ([`Store::flush_counts`]; [`Store::close`] flushes too, so only a crash can
//! lose the last few seconds of counts, never a row about money).
//!
//! Retention ([`Store::prune`]): decisions that moved no money and unpaid counts older
//! than the retention period are deleted (free-pool days once they are past); rows about
//! money (paid, settle failed, redelivered) and the replay guard's claims are kept for good.
//!
//! The schema is created on open; migrations are plain SQL below (`MIGRATIONS`), applied
//! once each under `BEGIN IMMEDIATE` and recorded in `schema_version`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::Row;

use super::liveness::RunLock;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use time::{Date, OffsetDateTime};

mod channels;
mod records;
mod schema;

pub use channels::{ChannelCommit, ChannelRow, ChannelTx, NewChannel};
pub use records::*;
use schema::MIGRATIONS;

/// The sha256 of a payment's canonical payload: the replay guard's key.
pub type PaymentKey = [u8; 32];

/// Longest text kept in any column, in bytes (longer values are cut at a char boundary).
pub const MAX_TEXT: usize = 256;

/// Tuning of [`Store::open_with`].
#[derive(Clone, Debug)]
pub struct StoreOptions {
    /// On open, claims still `claimed` and older than this are marked `abandoned`.
    pub abandon_after: Duration,
    /// How long a statement waits for another connection's write lock.
    pub busy_timeout: Duration,
    /// Pool size for a file-backed store (an in-memory store always uses one).
    pub max_connections: u32,
}

impl Default for StoreOptions {
    fn default() -> StoreOptions {
        StoreOptions {
            abandon_after: Duration::from_secs(10 * 60),
            busy_timeout: Duration::from_secs(5),
            max_connections: 8,
        }
    }
}

/// Errors of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The file's directory does not exist (SQLite creates the file, not the directory).
    #[error("cannot open the store at {}: the directory {} does not exist", .path.display(), .dir.display())]
    MissingDirectory {
        /// The store file.
        path: PathBuf,
        /// Its missing parent directory.
        dir: PathBuf,
    },
    /// The path names a directory, not a file.
    #[error("cannot open the store at {}: it is a directory; give a file path", .path.display())]
    IsDirectory {
        /// The path given.
        path: PathBuf,
    },
    /// SQLite could not open the file or set it up (permissions, not a database, corrupt…).
    #[error("cannot open the store at {}: {source}", .path.display())]
    Open {
        /// The store file.
        path: PathBuf,
        /// SQLite's error.
        #[source]
        source: sqlx::Error,
    },
    /// The file was written by a newer Paperchain.
    #[error(
        "cannot open the store at {}: its schema version {found} is newer than this build supports ({supported}); upgrade Paperchain",
        .path.display()
    )]
    SchemaTooNew {
        /// The store file.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        supported: i64,
    },
    /// A query failed (lock timeout, disk full, I/O error…).
    #[error("store query failed: {0}")]
    Query(#[from] sqlx::Error),
    /// The lock file that tells other processes this run is alive could not be made.
    #[error("cannot open the store at {}: its run lock: {source}", .path.display())]
    RunLock {
        /// The store file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// A payment transition was asked for a key that is not in a state allowing it.
    #[error("payment {key} cannot be {action}: it is {}", .state.map_or("unknown", PaymentState::as_str))]
    BadTransition {
        /// Hex key.
        key: String,
        /// `released` or `finished`.
        action: &'static str,
        /// Its current state, `None` if never claimed.
        state: Option<PaymentState>,
    },
    /// A number does not fit SQLite's signed 64-bit integers.
    #[error("{what} is too large for the store: {value}")]
    OutOfRange {
        /// Which value.
        what: &'static str,
        /// The value.
        value: u64,
    },
    /// A stored row could not be read back (written by a newer build, or edited by hand).
    #[error("unreadable row in table {table}: {detail}")]
    Corrupt {
        /// The table.
        table: &'static str,
        /// What is wrong.
        detail: String,
    },
}

/// An unpaid refusal's bucket: unix hour, route, outcome, error code ("" for none).
type CountKey = (i64, String, Outcome, String);

/// Ends the claim `key` as `outcome` says, from `claimed` (or `abandoned`: a slow claim
/// another process marked so, or one found on chain); whether a claim was ended.
async fn end_claim<'e>(
    executor: impl sqlx::SqliteExecutor<'e>,
    key: &PaymentKey,
    outcome: &PaymentOutcome,
    payer: Option<&str>,
) -> Result<bool, StoreError> {
    let (state, tx_hash, reason) = match outcome {
        PaymentOutcome::Settled { tx_hash } => (PaymentState::Settled, Some(clip(tx_hash, MAX_TEXT)), None),
        PaymentOutcome::SettleFailed { reason } => (PaymentState::SettleFailed, None, Some(clip(reason, MAX_TEXT))),
    };
    let done = sqlx::query(
        "UPDATE payments SET state = ?2, tx_hash = ?3, reason = ?4, updated_at_ms = ?5, payer = ?6
         WHERE key = ?1 AND state IN ('claimed', 'abandoned')",
    )
    .bind(hex::encode(key))
    .bind(state.as_str())
    .bind(tx_hash)
    .bind(reason)
    .bind(now_ms())
    .bind(payer.map(|p| clip(p, MAX_TEXT)))
    .execute(executor)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The hosted state: cheap to clone (one shared pool inside).
#[derive(Clone, Debug)]
pub struct Store {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// `synchronous=FULL`: payment claims and money decisions survive a power loss.
    pool: SqlitePool,
    /// `synchronous=NORMAL` (WAL: durable across a crash, flushed at checkpoints): the
    /// ledger rows of decisions that move no money and the free-pool counters. Unpaid
    /// callers must not be able to make the server flush the disk on every request.
    relaxed: SqlitePool,
    path: Option<PathBuf>,
    /// Unpaid refusals counted since the last flush.
    counts: Mutex<HashMap<CountKey, u64>>,
    /// This run's lock: other processes sharing the file see it alive (liveness.rs).
    run: RunLock,
}

impl Store {
    /// Opens (creating if needed) the store file at `path` with default options.
    pub async fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        Store::open_with(path, &StoreOptions::default()).await
    }

    /// Opens (creating if needed) the store file at `path`, migrates it, and marks stale claims abandoned.
    pub async fn open_with(path: impl AsRef<Path>, options: &StoreOptions) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        if path.is_dir() {
            return Err(StoreError::IsDirectory { path });
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
            && !dir.is_dir()
        {
            return Err(StoreError::MissingDirectory { dir: dir.to_path_buf(), path });
        }
        // SQLite takes names starting with `file:` as URIs; an absolute path never does.
        let filename = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        let connect = SqliteConnectOptions::new()
            .filename(filename)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(options.busy_timeout);
        let open_error = |source| StoreError::Open { path: path.clone(), source };
        let pool = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .connect_with(connect.clone())
            .await
            .map_err(open_error)?;
        let run = RunLock::acquire(&path).map_err(|source| StoreError::RunLock { path: path.clone(), source })?;
        let store = Store::from_pools(pool.clone(), pool, Some(path.clone()), RunLock::in_memory());
        store.migrate(&path).await?;
        // Opened after migration, so it never races it on a new file.
        let relaxed = SqlitePoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .connect_with(connect.synchronous(SqliteSynchronous::Normal))
            .await
            .map_err(open_error)?;
        let store = Store::from_pools(store.inner.pool.clone(), relaxed, Some(path.clone()), run);
        let mode = sqlx::query_scalar::<_, String>("PRAGMA journal_mode")
            .fetch_one(&store.inner.pool)
            .await
            .map_err(open_error)?;
        if !mode.eq_ignore_ascii_case("wal") {
            // Still correct without WAL (e.g. a file system without shared memory), only less concurrent.
            tracing::warn!(path = %path.display(), mode, "store: WAL journal mode unavailable");
        }
        let abandoned = store.abandon_stale(options.abandon_after).await? + store.abandon_orphaned().await?;
        if abandoned > 0 {
            tracing::warn!(path = %path.display(), abandoned, "store: claims left by an earlier run marked abandoned");
        }
        Ok(store)
    }

    /// A private in-memory store for tests (one connection, so every task sees the same data).
    pub async fn open_in_memory() -> Result<Store, StoreError> {
        let connect = SqliteConnectOptions::new().in_memory(true).shared_cache(false);
        // The database lives as long as its only connection: never let the pool retire it.
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .idle_timeout(None)
            .max_lifetime(None)
            .connect_with(connect)
            .await?;
        let store = Store::from_pools(pool.clone(), pool, None, RunLock::in_memory());
        store.migrate(Path::new(":memory:")).await?;
        Ok(store)
    }

    fn from_pools(pool: SqlitePool, relaxed: SqlitePool, path: Option<PathBuf>, run: RunLock) -> Store {
        Store { inner: Arc::new(Inner { pool, relaxed, path, counts: Mutex::new(HashMap::new()), run }) }
    }

    /// The file behind the store (`None` in memory).
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// The journal mode SQLite reports (`wal` for a file-backed store).
    pub async fn journal_mode(&self) -> Result<String, StoreError> {
        Ok(sqlx::query_scalar::<_, String>("PRAGMA journal_mode").fetch_one(&self.inner.pool).await?)
    }

    /// The schema version of the open file.
    pub async fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar::<_, i64>("SELECT version FROM schema_version WHERE id = 1")
            .fetch_one(&self.inner.pool)
            .await?)
    }

    /// Adds the counts of the calls since the last flush, then closes every connection
    /// (checkpointing the WAL); clones of the store stop working.
    pub async fn close(&self) {
        if let Err(e) = self.flush_counts().await {
            tracing::error!(error = %e, "store: the last unpaid counts could not be written");
        }
        self.inner.relaxed.close().await;
        self.inner.pool.close().await;
    }

    async fn migrate(&self, path: &Path) -> Result<(), StoreError> {
        let open_error = |source| StoreError::Open { path: path.to_path_buf(), source };
        let supported = MIGRATIONS.len() as i64;
        // IMMEDIATE: two processes opening a new file at once must not both run migration 1.
        let mut tx = self.inner.pool.begin_with("BEGIN IMMEDIATE").await.map_err(open_error)?;
        sqlx::raw_sql(
            "CREATE TABLE IF NOT EXISTS schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL)",
        )
        .execute(&mut *tx)
        .await
        .map_err(open_error)?;
        let found = sqlx::query_scalar::<_, i64>("SELECT version FROM schema_version WHERE id = 1")
            .fetch_optional(&mut *tx)
            .await
            .map_err(open_error)?
            .unwrap_or(0);
        if found > supported {
            return Err(StoreError::SchemaTooNew { path: path.to_path_buf(), found, supported });
        }
        for sql in MIGRATIONS.iter().skip(usize::try_from(found).unwrap_or(0)) {
            sqlx::raw_sql(*sql).execute(&mut *tx).await.map_err(open_error)?;
        }
        sqlx::query(
            "INSERT INTO schema_version (id, version) VALUES (1, ?1)
             ON CONFLICT (id) DO UPDATE SET version = excluded.version",
        )
        .bind(supported)
        .execute(&mut *tx)
        .await
        .map_err(open_error)?;
        tx.commit().await.map_err(open_error)?;
        Ok(())
    }

    // ---- replay guard ----

    /// Claims a payment payload for one use. Atomic: of concurrent claims of one key, exactly one wins.
    ///
    /// A payload seen before is refused whatever became of it, except one explicitly
    /// [released](Store::release_payment), which can be claimed again.
    pub async fn claim_payment(&self, key: &PaymentKey, route: &str, network: &str) -> Result<Claim, StoreError> {
        self.claim_payment_for(key, route, network, &PaidRequest::default()).await
    }

    /// [`claim_payment`](Store::claim_payment), keeping what the payment is for (its
    /// payment id and request hash), which a later [`redeliver`](Store::redeliver) compares.
    pub async fn claim_payment_for(
        &self,
        key: &PaymentKey,
        route: &str,
        network: &str,
        request: &PaidRequest,
    ) -> Result<Claim, StoreError> {
        let key_hex = hex::encode(key);
        let payment_id = request.payment_id.as_deref().map(|id| clip(id, MAX_TEXT));
        let request_sha256 = request.request_sha256.map(hex::encode);
        let amount = request.amount.map(|a| i64::try_from(a).unwrap_or(i64::MAX));
        let auth = request.authorization.as_ref();
        let valid_before = auth.map(|a| i64::try_from(a.valid_before).unwrap_or(i64::MAX));
        let now = now_ms();
        // A claim can only be lost to a concurrent release between our two statements;
        // a few rounds settle it, and giving up still refuses (the safe side).
        for _ in 0..4 {
            let won = sqlx::query(
                "INSERT INTO payments (key, route, network, state, attempts, refused, claimed_at_ms, updated_at_ms,
                                       payment_id, request_sha256, owner, operation, client, amount, asset,
                                       authorizer, auth_nonce, valid_before)
                 VALUES (?1, ?2, ?3, 'claimed', 1, 0, ?4, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
                 ON CONFLICT (key) DO UPDATE SET
                     state = 'claimed', attempts = payments.attempts + 1, route = excluded.route,
                     network = excluded.network, claimed_at_ms = excluded.claimed_at_ms,
                     updated_at_ms = excluded.updated_at_ms, payment_id = excluded.payment_id,
                     request_sha256 = excluded.request_sha256, owner = excluded.owner,
                     operation = excluded.operation, client = excluded.client, amount = excluded.amount,
                     asset = excluded.asset, authorizer = excluded.authorizer, auth_nonce = excluded.auth_nonce,
                     valid_before = excluded.valid_before
                 WHERE payments.state = 'released'
                 RETURNING attempts",
            )
            .bind(&key_hex)
            .bind(clip(route, MAX_TEXT))
            .bind(clip(network, MAX_TEXT))
            .bind(now)
            .bind(payment_id)
            .bind(request_sha256.as_deref())
            .bind(self.inner.run.id())
            .bind(request.operation.as_deref().map(|o| clip(o, MAX_TEXT)))
            .bind(request.client.as_deref().map(|c| clip(c, MAX_TEXT)))
            .bind(amount)
            .bind(auth.map(|a| clip(&a.asset, MAX_TEXT)))
            .bind(auth.map(|a| clip(&a.authorizer, MAX_TEXT)))
            .bind(auth.map(|a| clip(&a.nonce, MAX_TEXT)))
            .bind(valid_before)
            .fetch_optional(&self.inner.pool)
            .await?;
            if won.is_some() {
                return Ok(Claim::Claimed);
            }
            let state = sqlx::query_scalar::<_, String>(
                "UPDATE payments SET refused = refused + 1 WHERE key = ?1 AND state <> 'released' RETURNING state",
            )
            .bind(&key_hex)
            .fetch_optional(&self.inner.pool)
            .await?;
            if let Some(state) = state {
                return Ok(Claim::AlreadyUsed { state: parse_state(&state)? });
            }
        }
        Ok(Claim::AlreadyUsed { state: PaymentState::Released })
    }

    /// Gives a claim back: the call failed before any settlement attempt (nothing delivered,
    /// nothing settled), so the same signed payload may be tried again.
    ///
    /// Only a claim in state `claimed` can be released. Never release after a settlement
    /// attempt, even a failed or timed-out one (it may have landed): use
    /// [`finish_payment`](Store::finish_payment) with [`PaymentOutcome::SettleFailed`].
    pub async fn release_payment(&self, key: &PaymentKey) -> Result<(), StoreError> {
        let key_hex = hex::encode(key);
        let done = sqlx::query(
            "UPDATE payments SET state = 'released', updated_at_ms = ?2 WHERE key = ?1 AND state = 'claimed'",
        )
        .bind(&key_hex)
        .bind(now_ms())
        .execute(&self.inner.pool)
        .await?;
        if done.rows_affected() == 1 {
            return Ok(());
        }
        Err(StoreError::BadTransition { action: "released", state: self.payment_state(key).await?, key: key_hex })
    }

    /// Records how a claimed payment ended; permanent (the key is refused for good).
    ///
    /// Accepted from `claimed`, and from `abandoned` too: another process opening the
    /// file may have marked a slow claim abandoned, and the settlement must still be recorded.
    pub async fn finish_payment(&self, key: &PaymentKey, outcome: &PaymentOutcome) -> Result<(), StoreError> {
        self.finish_payment_by(key, outcome, None).await
    }

    /// [`finish_payment`](Store::finish_payment), keeping the payer the settlement named
    /// (a redelivered answer reports it again).
    pub async fn finish_payment_by(
        &self,
        key: &PaymentKey,
        outcome: &PaymentOutcome,
        payer: Option<&str>,
    ) -> Result<(), StoreError> {
        if end_claim(&self.inner.pool, key, outcome, payer).await? {
            return Ok(());
        }
        let state = self.payment_state(key).await?;
        Err(StoreError::BadTransition { action: "finished", state, key: hex::encode(key) })
    }

    /// The settlement of `key` when its answer may be delivered again: the payment is
    /// `settled`, with a transaction, and was claimed with this very `route`, the same
    /// payment id (never absent) and the same request hash (never absent). Counts the
    /// redelivery. `None` for anything else: the caller then claims as usual, which refuses
    /// a used payment.
    ///
    /// `settled` is final, so a match cannot be undone by a concurrent call; nothing here
    /// claims, verifies or settles anything.
    pub async fn redeliver(
        &self,
        key: &PaymentKey,
        route: &str,
        request: &PaidRequest,
    ) -> Result<Option<StoredSettlement>, StoreError> {
        let (Some(payment_id), Some(request_sha256)) = (request.payment_id.as_deref(), request.request_sha256) else {
            return Ok(None);
        };
        let row = sqlx::query(
            "UPDATE payments SET redelivered = redelivered + 1, updated_at_ms = ?5
             WHERE key = ?1 AND state = 'settled' AND tx_hash IS NOT NULL
               AND route = ?2 AND payment_id = ?3 AND request_sha256 = ?4
             RETURNING tx_hash, network, payer,
                 (SELECT charged FROM decisions
                  WHERE payment_key = payments.key AND charged IS NOT NULL AND outcome = 'paid' LIMIT 1) AS charged",
        )
        .bind(hex::encode(key))
        .bind(clip(route, MAX_TEXT))
        .bind(clip(payment_id, MAX_TEXT))
        .bind(hex::encode(request_sha256))
        .bind(now_ms())
        .fetch_optional(&self.inner.pool)
        .await?;
        row.map(|row| {
            Ok(StoredSettlement {
                tx_hash: row.try_get("tx_hash")?,
                network: row.try_get("network")?,
                payer: row.try_get("payer")?,
                charged: row.try_get::<Option<i64>, _>("charged")?.and_then(|c| u64::try_from(c).ok()),
            })
        })
        .transpose()
    }

    /// Where a payment stands (`None` if never claimed).
    pub async fn payment_state(&self, key: &PaymentKey) -> Result<Option<PaymentState>, StoreError> {
        let state = sqlx::query_scalar::<_, String>("SELECT state FROM payments WHERE key = ?1")
            .bind(hex::encode(key))
            .fetch_optional(&self.inner.pool)
            .await?;
        state.as_deref().map(parse_state).transpose()
    }

    /// Marks claims still `claimed` after `older_than` as `abandoned` (done on open); returns how many.
    ///
    /// They stay refused: the process that held them may have settled the authorization
    /// before it died, so letting the payload in again could serve a payment twice.
    pub async fn abandon_stale(&self, older_than: Duration) -> Result<u64, StoreError> {
        let age = i64::try_from(older_than.as_millis()).unwrap_or(i64::MAX);
        let now = now_ms();
        let done = sqlx::query(
            "UPDATE payments SET state = 'abandoned', updated_at_ms = ?1
             WHERE state = 'claimed' AND claimed_at_ms <= ?2",
        )
        .bind(now)
        .bind(now.saturating_sub(age))
        .execute(&self.inner.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Marks `abandoned` the claims still `claimed` by a run that is gone (a process that
    /// died while holding them: liveness.rs), at once rather than after a timeout; returns
    /// how many. Done on open, and by the paywall's housekeeping.
    pub async fn abandon_orphaned(&self) -> Result<u64, StoreError> {
        let owners: Vec<String> =
            sqlx::query_scalar("SELECT DISTINCT owner FROM payments WHERE state = 'claimed' AND owner IS NOT NULL")
                .fetch_all(&self.inner.pool)
                .await?;
        let mut abandoned = 0;
        for owner in owners.iter().filter(|o| self.inner.run.is_gone(o)) {
            let done = sqlx::query(
                "UPDATE payments SET state = 'abandoned', updated_at_ms = ?1 WHERE state = 'claimed' AND owner = ?2",
            )
            .bind(now_ms())
            .bind(owner)
            .execute(&self.inner.pool)
            .await?;
            abandoned += done.rows_affected();
        }
        // Only once their claims are abandoned: the files of runs that are gone.
        self.inner.run.sweep();
        Ok(abandoned)
    }

    /// The abandoned claims with an EIP-3009 authorization not yet looked up on chain for
    /// good, oldest first (at most `limit`).
    pub async fn unresolved_claims(&self, limit: u32) -> Result<Vec<UnresolvedClaim>, StoreError> {
        let rows = sqlx::query(
            "SELECT key, route, operation, network, client, amount, asset, authorizer, auth_nonce, valid_before,
                    claimed_at_ms
             FROM payments
             WHERE state = 'abandoned' AND chain_checked = 0 AND authorizer IS NOT NULL AND asset IS NOT NULL
                   AND auth_nonce IS NOT NULL
             ORDER BY claimed_at_ms LIMIT ?1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        let mut claims = Vec::with_capacity(rows.len());
        for row in rows {
            let key_hex: String = row.try_get("key")?;
            let Some(key) = hex::decode(&key_hex).ok().and_then(|k| <[u8; 32]>::try_from(k).ok()) else { continue };
            claims.push(UnresolvedClaim {
                key,
                route: row.try_get("route")?,
                operation: row.try_get("operation")?,
                network: row.try_get("network")?,
                client: row.try_get("client")?,
                amount: row.try_get::<Option<i64>, _>("amount")?.and_then(|a| u64::try_from(a).ok()),
                authorization: Authorization {
                    asset: row.try_get("asset")?,
                    authorizer: row.try_get("authorizer")?,
                    nonce: row.try_get("auth_nonce")?,
                    valid_before: row.try_get::<Option<i64>, _>("valid_before")?.map_or(0, |v| v.max(0) as u64),
                },
                claimed_at_ms: row.try_get("claimed_at_ms")?,
            });
        }
        Ok(claims)
    }

    /// Notes that an abandoned claim was looked up on chain for good: its authorization was
    /// never used and can no longer be (past its validBefore). It stays refused.
    pub async fn mark_chain_checked(&self, key: &PaymentKey, reason: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE payments SET chain_checked = 1, reason = ?2, updated_at_ms = ?3
             WHERE key = ?1 AND state = 'abandoned'",
        )
        .bind(hex::encode(key))
        .bind(clip(reason, MAX_TEXT))
        .bind(now_ms())
        .execute(&self.inner.pool)
        .await?;
        Ok(())
    }

    // ---- free pools ----

    /// Takes one free call from `pool` for `client` on UTC `day`; never goes over `limit`,
    /// whatever the concurrency (one guarded upsert).
    pub async fn take_free(&self, pool: &str, client: &str, day: Date, limit: u32) -> Result<FreeTake, StoreError> {
        if limit == 0 {
            return Ok(FreeTake::Exhausted);
        }
        let used = sqlx::query_scalar::<_, i64>(
            "INSERT INTO free_use (pool, client, day, used) VALUES (?1, ?2, ?3, 1)
             ON CONFLICT (pool, client, day) DO UPDATE SET used = free_use.used + 1 WHERE free_use.used < ?4
             RETURNING used",
        )
        .bind(clip(pool, MAX_TEXT))
        .bind(clip(client, MAX_TEXT))
        .bind(day_key(day))
        .bind(i64::from(limit))
        .fetch_optional(&self.inner.relaxed)
        .await?;
        Ok(match used {
            Some(used) => FreeTake::Taken { remaining: remaining(limit, used) },
            None => FreeTake::Exhausted,
        })
    }

    /// Gives one free call back (the free call failed: no failure is charged). Never below
    /// zero; returns whether a call was given back.
    pub async fn refund_free(&self, pool: &str, client: &str, day: Date) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE free_use SET used = used - 1 WHERE pool = ?1 AND client = ?2 AND day = ?3 AND used > 0",
        )
        .bind(clip(pool, MAX_TEXT))
        .bind(clip(client, MAX_TEXT))
        .bind(day_key(day))
        .execute(&self.inner.relaxed)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Free calls left in `pool` for `client` on `day` under `limit`.
    pub async fn free_remaining(&self, pool: &str, client: &str, day: Date, limit: u32) -> Result<u32, StoreError> {
        let used =
            sqlx::query_scalar::<_, i64>("SELECT used FROM free_use WHERE pool = ?1 AND client = ?2 AND day = ?3")
                .bind(clip(pool, MAX_TEXT))
                .bind(clip(client, MAX_TEXT))
                .bind(day_key(day))
                .fetch_optional(&self.inner.relaxed)
                .await?;
        Ok(remaining(limit, used.unwrap_or(0)))
    }

    /// Deletes the counters of days before `day`; returns how many rows went.
    pub async fn prune_free_before(&self, day: Date) -> Result<u64, StoreError> {
        let done =
            sqlx::query("DELETE FROM free_use WHERE day < ?1").bind(day_key(day)).execute(&self.inner.pool).await?;
        Ok(done.rows_affected())
    }

    // ---- ledger ----

    /// Appends a decision to the ledger; returns its row id.
    pub async fn record(&self, decision: &Decision) -> Result<i64, StoreError> {
        let quote = decision
            .quote
            .map(|q| i64::try_from(q).map_err(|_| StoreError::OutOfRange { what: "quote", value: q }))
            .transpose()?;
        let charged = decision
            .charged
            .map(|c| i64::try_from(c).map_err(|_| StoreError::OutOfRange { what: "charged", value: c }))
            .transpose()?;
        let at = i64::try_from(decision.at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
        let insert = sqlx::query_scalar::<_, i64>(
            "INSERT INTO decisions
                 (at_ms, route, operation, quote, outcome, payer, network, tx_hash, error_code, client, payment_key,
                  charged)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)
             RETURNING id",
        )
        .bind(at)
        .bind(clip(&decision.route, MAX_TEXT))
        .bind(clip(&decision.operation, MAX_TEXT))
        .bind(quote)
        .bind(decision.outcome.as_str())
        .bind(clip_opt(&decision.payer))
        .bind(clip_opt(&decision.network))
        .bind(clip_opt(&decision.tx_hash))
        .bind(clip_opt(&decision.error_code))
        .bind(clip_opt(&decision.client))
        .bind(decision.payment_key.map(hex::encode))
        .bind(charged);
        if let Some(commit) = &decision.channel {
            // The voucher becomes the charged total with the row about it, in one transaction.
            let mut tx = self.inner.pool.begin().await?;
            if !channels::commit_channel(&mut tx, commit).await? {
                return Err(StoreError::Corrupt {
                    table: "channels",
                    detail: format!("channel {} no longer holds the reservation {}", commit.id, commit.charged),
                });
            }
            let id = insert.fetch_one(&mut *tx).await?;
            tx.commit().await?;
            return Ok(id);
        }
        let Some(finish) = &decision.finish else {
            let pool = if decision.outcome.moves_money() { &self.inner.pool } else { &self.inner.relaxed };
            return Ok(insert.fetch_one(pool).await?);
        };
        // The payment's end and the row about it, in one transaction (one commit, one
        // flush): a crash leaves both or neither, and a neither is found again on chain.
        let mut tx = self.inner.pool.begin().await?;
        if !end_claim(&mut *tx, &finish.key, &finish.outcome, finish.payer.as_deref()).await? {
            // Finished already (found on chain while this call was slow): that run wrote
            // the row about the money; a second one would count it twice.
            drop(tx);
            let state = self.payment_state(&finish.key).await?;
            return Err(StoreError::BadTransition { action: "finished", state, key: hex::encode(finish.key) });
        }
        let id = insert.fetch_one(&mut *tx).await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Counts an unpaid refusal (a call that carried no payment: see the module's
    /// documentation) in its hour, route, outcome and error code; in memory until the next
    /// [`flush_counts`](Store::flush_counts).
    pub fn count_unpaid(&self, decision: &Decision) {
        let key = (
            decision.at.unix_timestamp().div_euclid(3600),
            clip(&decision.route, MAX_TEXT).to_string(),
            decision.outcome,
            decision.error_code.as_deref().map(|c| clip(c, MAX_TEXT)).unwrap_or("").to_string(),
        );
        *self.inner.counts.lock().unwrap_or_else(|p| p.into_inner()).entry(key).or_insert(0) += 1;
    }

    /// Adds the unpaid refusals counted since the last flush to `unpaid_counts`, in one
    /// transaction; counts that could not be written are kept for the next flush.
    pub async fn flush_counts(&self) -> Result<(), StoreError> {
        let taken = std::mem::take(&mut *self.inner.counts.lock().unwrap_or_else(|p| p.into_inner()));
        if taken.is_empty() {
            return Ok(());
        }
        let written = async {
            let mut tx = self.inner.relaxed.begin().await?;
            for ((hour, route, outcome, error_code), count) in &taken {
                sqlx::query(
                    "INSERT INTO unpaid_counts (hour, route, outcome, error_code, count) VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (hour, route, outcome, error_code) DO UPDATE SET count = count + excluded.count",
                )
                .bind(hour)
                .bind(route)
                .bind(outcome.as_str())
                .bind(error_code)
                .bind(i64::try_from(*count).unwrap_or(i64::MAX))
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await
        }
        .await;
        if let Err(e) = written {
            let mut counts = self.inner.counts.lock().unwrap_or_else(|p| p.into_inner());
            for (key, count) in taken {
                *counts.entry(key).or_insert(0) += count;
            }
            return Err(e.into());
        }
        Ok(())
    }

    /// The unpaid refusals counted, oldest hour first (flushed first, so the latest count).
    pub async fn unpaid_counts(&self) -> Result<Vec<UnpaidCount>, StoreError> {
        self.flush_counts().await?;
        let rows = sqlx::query(
            "SELECT hour, route, outcome, error_code, count FROM unpaid_counts ORDER BY hour, route, outcome, error_code",
        )
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let hour: i64 = row.try_get(0)?;
                let outcome: String = row.try_get(2)?;
                let error_code: String = row.try_get(3)?;
                let count: i64 = row.try_get(4)?;
                let corrupt = |detail: String| StoreError::Corrupt { table: "unpaid_counts", detail };
                Ok(UnpaidCount {
                    hour: OffsetDateTime::from_unix_timestamp(hour.saturating_mul(3600))
                        .map_err(|_| corrupt(format!("hour {hour} is out of range")))?,
                    route: row.try_get(1)?,
                    outcome: Outcome::parse(&outcome).ok_or_else(|| corrupt(format!("unknown outcome `{outcome}`")))?,
                    error_code: Some(error_code).filter(|c| !c.is_empty()),
                    count: u64::try_from(count).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Deletes what is older than `before`: decisions that moved no money and unpaid
    /// counts (free-pool days go sooner: [`prune_free_before`](Store::prune_free_before)).
    /// Money rows and payment claims stay. Deleted in batches, so
    /// calls in between are never kept waiting long for the write lock.
    pub async fn prune(&self, before: OffsetDateTime) -> Result<Pruned, StoreError> {
        self.flush_counts().await?;
        let cutoff_ms = i64::try_from(before.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MIN);
        let cutoff_hour = before.unix_timestamp().div_euclid(3600);
        let mut pruned = Pruned::default();
        loop {
            let done = sqlx::query(
                "DELETE FROM decisions WHERE id IN (SELECT id FROM decisions WHERE at_ms < ?1
                     AND outcome NOT IN ('paid', 'mpp_paid', 'settle_failed', 'redelivered', 'channel_refunded')
                     LIMIT 5000)",
            )
            .bind(cutoff_ms)
            .execute(&self.inner.relaxed)
            .await?
            .rows_affected();
            pruned.decisions += done;
            if done < 5000 {
                break;
            }
        }
        pruned.unpaid_counts = sqlx::query("DELETE FROM unpaid_counts WHERE hour < ?1")
            .bind(cutoff_hour)
            .execute(&self.inner.relaxed)
            .await?
            .rows_affected();
        Ok(pruned)
    }

    /// The `limit` latest decisions, newest first.
    pub async fn recent(&self, limit: u32) -> Result<Vec<Decision>, StoreError> {
        let rows = sqlx::query(
            "SELECT at_ms, route, operation, quote, outcome, payer, network, tx_hash, error_code, client, payment_key,
                    charged
             FROM decisions ORDER BY id DESC LIMIT ?1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.inner.pool)
        .await?;
        rows.iter().map(decision_from_row).collect()
    }

    /// Paid calls and the sum of their settled amounts (an index-only scan).
    pub async fn totals(&self) -> Result<Totals, StoreError> {
        let row = sqlx::query(
            "SELECT COUNT(*), COALESCE(SUM(COALESCE(charged, quote)), 0) FROM decisions
             WHERE outcome IN ('paid', 'mpp_paid')",
        )
        .fetch_one(&self.inner.pool)
        .await?;
        let count: i64 = row.try_get(0)?;
        let sum: i64 = row.try_get(1)?;
        Ok(Totals { paid_calls: u64::try_from(count).unwrap_or(0), settled_amount: u64::try_from(sum).unwrap_or(0) })
    }
}

fn decision_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<Decision, StoreError> {
    let corrupt = |detail: String| StoreError::Corrupt { table: "decisions", detail };
    let at_ms: i64 = row.try_get("at_ms")?;
    let at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(at_ms) * 1_000_000)
        .map_err(|e| corrupt(format!("at_ms {at_ms}: {e}")))?;
    let outcome: String = row.try_get("outcome")?;
    let outcome = Outcome::parse(&outcome).ok_or_else(|| corrupt(format!("unknown outcome `{outcome}`")))?;
    let quote: Option<i64> = row.try_get("quote")?;
    let quote = quote.map(|q| u64::try_from(q).map_err(|_| corrupt(format!("negative quote {q}")))).transpose()?;
    let charged: Option<i64> = row.try_get("charged")?;
    let charged =
        charged.map(|c| u64::try_from(c).map_err(|_| corrupt(format!("negative charged {c}")))).transpose()?;
    let payment_key: Option<String> = row.try_get("payment_key")?;
    let payment_key = payment_key
        .map(|k| {
            let mut key = [0u8; 32];
            hex::decode_to_slice(&k, &mut key).map(|()| key).map_err(|e| corrupt(format!("payment_key `{k}`: {e}")))
        })
        .transpose()?;
    Ok(Decision {
        at,
        route: row.try_get("route")?,
        operation: row.try_get("operation")?,
        quote,
        charged,
        outcome,
        payer: row.try_get("payer")?,
        network: row.try_get("network")?,
        tx_hash: row.try_get("tx_hash")?,
        error_code: row.try_get("error_code")?,
        client: row.try_get("client")?,
        payment_key,
        finish: None,
        channel: None,
    })
}

fn parse_state(name: &str) -> Result<PaymentState, StoreError> {
    PaymentState::parse(name)
        .ok_or_else(|| StoreError::Corrupt { table: "payments", detail: format!("unknown state `{name}`") })
}

fn remaining(limit: u32, used: i64) -> u32 {
    // A limit lowered mid-day can leave `used` above it.
    u32::try_from(i64::from(limit).saturating_sub(used).max(0)).unwrap_or(0)
}

/// `YYYY-MM-DD`: sorts as the days do, so pruning is a plain comparison.
fn day_key(day: Date) -> String {
    format!("{:04}-{:02}-{:02}", day.year(), u8::from(day.month()), day.day())
}

/// Now, Unix milliseconds (UTC).
pub(crate) fn now_ms() -> i64 {
    i64::try_from(OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX)
}

fn clip(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn clip_opt(text: &Option<String>) -> Option<&str> {
    text.as_deref().map(|t| clip(t, MAX_TEXT))
}

#[cfg(test)]
mod tests;

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
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sqlx::Row;

use super::liveness::RunLock;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use time::{Date, OffsetDateTime};

/// The sha256 of a payment's canonical payload: the replay guard's key.
pub type PaymentKey = [u8; 32];

/// Longest text kept in any column, in bytes (longer values are cut at a char boundary).
pub const MAX_TEXT: usize = 256;

/// Schema migrations, in order; entry `i` brings the schema to version `i + 1`.
/// Never edit an entry that has shipped: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: the three tables.
    r#"
CREATE TABLE IF NOT EXISTS payments (
    key             TEXT PRIMARY KEY NOT NULL,   -- hex sha256 of the canonical payload
    route           TEXT NOT NULL,
    network         TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('claimed', 'released', 'settled', 'settle_failed', 'abandoned')),
    attempts        INTEGER NOT NULL DEFAULT 1,  -- claims granted (more than 1 after releases)
    refused         INTEGER NOT NULL DEFAULT 0,  -- replays refused
    claimed_at_ms   INTEGER NOT NULL,
    updated_at_ms   INTEGER NOT NULL,
    tx_hash         TEXT,
    reason          TEXT
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS payments_state_claimed ON payments (state, claimed_at_ms);

CREATE TABLE IF NOT EXISTS free_use (
    pool    TEXT NOT NULL,
    client  TEXT NOT NULL,
    day     TEXT NOT NULL,                        -- UTC day, YYYY-MM-DD
    used    INTEGER NOT NULL CHECK (used >= 0),
    PRIMARY KEY (pool, client, day)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS free_use_day ON free_use (day);

CREATE TABLE IF NOT EXISTS decisions (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms        INTEGER NOT NULL,                -- unix milliseconds, UTC
    route        TEXT NOT NULL,
    operation    TEXT NOT NULL,
    quote        INTEGER,                         -- atomic units (6 decimals)
    outcome      TEXT NOT NULL,
    payer        TEXT,
    network      TEXT,
    tx_hash      TEXT,
    error_code   TEXT,
    client       TEXT,
    payment_key  TEXT                             -- hex, joins payments.key
);
CREATE INDEX IF NOT EXISTS decisions_outcome_quote ON decisions (outcome, quote);
"#,
    // 2: what a settled payment's answer can be delivered again for (the spec's
    // `payment-identifier` extension): the client's payment id, the request it paid for,
    // who paid, and how often the answer was delivered again. Older rows keep NULLs, so
    // their payments are never redelivered.
    r#"
ALTER TABLE payments ADD COLUMN payment_id TEXT;      -- the payload's payment-identifier id, if valid
ALTER TABLE payments ADD COLUMN request_sha256 TEXT;  -- hex sha256 of the request body bytes
ALTER TABLE payments ADD COLUMN payer TEXT;           -- the payer the settlement named
ALTER TABLE payments ADD COLUMN redelivered INTEGER NOT NULL DEFAULT 0;
"#,
    // 3: unpaid refusals as counts per hour (no row each), and the index retention deletes by.
    r#"
CREATE TABLE IF NOT EXISTS unpaid_counts (
    hour        INTEGER NOT NULL,                 -- unix hours, UTC
    route       TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    error_code  TEXT NOT NULL DEFAULT '',
    count       INTEGER NOT NULL CHECK (count >= 0),
    PRIMARY KEY (hour, route, outcome, error_code)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS decisions_at ON decisions (at_ms);
"#,
    // 4: what a claim needs to be resolved on chain once the process holding it is gone: the
    // run that holds it (liveness.rs), what it pays for (the ledger row it becomes), and its
    // EIP-3009 authorization (public once used; never its signature).
    r#"
ALTER TABLE payments ADD COLUMN owner TEXT;           -- the run holding the claim
ALTER TABLE payments ADD COLUMN operation TEXT;
ALTER TABLE payments ADD COLUMN client TEXT;
ALTER TABLE payments ADD COLUMN amount INTEGER;       -- the quote, atomic units
ALTER TABLE payments ADD COLUMN asset TEXT;           -- the token the authorization moves
ALTER TABLE payments ADD COLUMN authorizer TEXT;      -- its `from`
ALTER TABLE payments ADD COLUMN auth_nonce TEXT;      -- its nonce, 0x and 64 hex digits
ALTER TABLE payments ADD COLUMN valid_before INTEGER; -- its validBefore, unix seconds
ALTER TABLE payments ADD COLUMN chain_checked INTEGER NOT NULL DEFAULT 0; -- 1: looked up for good
CREATE INDEX IF NOT EXISTS payments_state_owner ON payments (state, owner);
"#,
];

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
    /// The 32-byte nonce, 0x and 64 hex digits.
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
pub struct Finish {
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
}

impl Outcome {
    /// Every outcome.
    pub const ALL: [Outcome; 14] = [
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
        }
    }

    /// The outcome named `name`.
    pub fn parse(name: &str) -> Option<Outcome> {
        Outcome::ALL.into_iter().find(|o| o.as_str() == name)
    }

    /// Whether money moved or may have moved (the row is committed with a full flush).
    pub fn moves_money(self) -> bool {
        matches!(self, Outcome::Paid | Outcome::MppPaid | Outcome::SettleFailed)
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
const KEPT_FOR_GOOD: [&str; 4] = ["paid", "mpp_paid", "settle_failed", "redelivered"];

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
    /// The quote in atomic units (6 decimals), if one was computed.
    pub quote: Option<u64>,
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
    pub finish: Option<Finish>,
}

impl Decision {
    /// A decision made now, with every optional field empty.
    pub fn new(route: impl Into<String>, operation: impl Into<String>, outcome: Outcome) -> Decision {
        Decision {
            at: OffsetDateTime::now_utc(),
            route: route.into(),
            operation: operation.into(),
            quote: None,
            outcome,
            payer: None,
            network: None,
            tx_hash: None,
            error_code: None,
            client: None,
            payment_key: None,
            finish: None,
        }
    }
}

/// Money collected, from the ledger.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Calls paid and delivered (x402 and MPP).
    pub paid_calls: u64,
    /// Sum of their quotes (= the settled amounts), atomic units.
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
             RETURNING tx_hash, network, payer",
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
        let at = i64::try_from(decision.at.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MAX);
        let insert = sqlx::query_scalar::<_, i64>(
            "INSERT INTO decisions
                 (at_ms, route, operation, quote, outcome, payer, network, tx_hash, error_code, client, payment_key)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
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
        .bind(decision.payment_key.map(hex::encode));
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
                     AND outcome NOT IN ('paid', 'mpp_paid', 'settle_failed', 'redelivered') LIMIT 5000)",
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
            "SELECT at_ms, route, operation, quote, outcome, payer, network, tx_hash, error_code, client, payment_key
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
            "SELECT COUNT(*), COALESCE(SUM(quote), 0) FROM decisions WHERE outcome IN ('paid', 'mpp_paid')",
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
        outcome,
        payer: row.try_get("payer")?,
        network: row.try_get("network")?,
        tx_hash: row.try_get("tx_hash")?,
        error_code: row.try_get("error_code")?,
        client: row.try_get("client")?,
        payment_key,
        finish: None,
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

fn now_ms() -> i64 {
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
mod tests {
    use super::*;
    use time::macros::{date, datetime};

    fn key(n: u8) -> PaymentKey {
        [n; 32]
    }

    async fn file_store(dir: &tempfile::TempDir) -> Store {
        Store::open(dir.path().join("hosted.sqlite")).await.unwrap()
    }

    #[test]
    fn retention_keeps_exactly_the_outcomes_kept_for_good() {
        let kept: Vec<&str> = Outcome::ALL.iter().filter(|o| o.kept_for_good()).map(|o| o.as_str()).collect();
        assert_eq!(kept, KEPT_FOR_GOOD);
    }

    #[tokio::test]
    async fn unpaid_refusals_are_counts_per_hour_and_retention_keeps_the_money() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        let hour = |h: i64| datetime!(2026-03-14 10:00 UTC) + time::Duration::hours(h);
        let refusal = |h: i64, outcome: Outcome, error: Option<&str>| {
            let mut d = Decision::new("/v1/chain/gas", "get_gas_price", outcome);
            d.at = hour(h) + time::Duration::minutes(59);
            d.error_code = error.map(str::to_string);
            d
        };
        store.count_unpaid(&refusal(0, Outcome::PaymentRequired, None));
        store.count_unpaid(&refusal(0, Outcome::PaymentRequired, None));
        store.count_unpaid(&refusal(0, Outcome::FreeExhausted, Some("free_pool_exhausted")));
        store.count_unpaid(&refusal(1, Outcome::PaymentRequired, None));
        assert!(store.recent(10).await.unwrap().is_empty(), "no row for any of them");
        // Written when the store closes: a restarted server reads them back.
        store.close().await;
        let store = file_store(&dir).await;
        let count = |h: i64, outcome: Outcome, error: Option<&str>, count: u64| UnpaidCount {
            hour: hour(h),
            route: "/v1/chain/gas".into(),
            outcome,
            error_code: error.map(str::to_string),
            count,
        };
        assert_eq!(
            store.unpaid_counts().await.unwrap(),
            vec![
                count(0, Outcome::FreeExhausted, Some("free_pool_exhausted"), 1),
                count(0, Outcome::PaymentRequired, None, 2),
                count(1, Outcome::PaymentRequired, None, 1),
            ]
        );
        // The same hour adds up.
        store.count_unpaid(&refusal(1, Outcome::PaymentRequired, None));
        store.flush_counts().await.unwrap();
        assert_eq!(store.unpaid_counts().await.unwrap()[2].count, 2);

        // Rows of old money stay; an old free call and old counts go.
        for outcome in [Outcome::Paid, Outcome::SettleFailed, Outcome::Redelivered, Outcome::Free] {
            let mut d = Decision::new("/v1/chain/gas", "get_gas_price", outcome);
            d.at = hour(0);
            store.record(&d).await.unwrap();
        }
        let mut recent = Decision::new("/v1/chain/gas", "get_gas_price", Outcome::Free);
        recent.at = hour(48);
        store.record(&recent).await.unwrap();
        store.count_unpaid(&refusal(48, Outcome::PaymentRequired, None));

        let pruned = store.prune(hour(24)).await.unwrap();
        assert_eq!(pruned, Pruned { decisions: 1, unpaid_counts: 3 });
        let kept: Vec<Outcome> = store.recent(10).await.unwrap().iter().map(|d| d.outcome).collect();
        assert_eq!(kept, [Outcome::Free, Outcome::Redelivered, Outcome::SettleFailed, Outcome::Paid]);
        assert_eq!(store.unpaid_counts().await.unwrap(), vec![count(48, Outcome::PaymentRequired, None, 1)]);
        assert_eq!(store.prune(hour(24)).await.unwrap(), Pruned::default(), "nothing more to delete");
        store.close().await;
    }

    #[tokio::test]
    async fn claim_then_replay_is_refused() {
        let store = Store::open_in_memory().await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), None);
        assert_eq!(store.claim_payment(&key(1), "/v1/pdf/rotate", "eip155:8453").await.unwrap(), Claim::Claimed);
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
        assert_eq!(
            store.claim_payment(&key(1), "/v1/pdf/rotate", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Claimed }
        );
        // Another payload is independent.
        assert_eq!(store.claim_payment(&key(2), "/v1/pdf/rotate", "eip155:8453").await.unwrap(), Claim::Claimed);
    }

    #[tokio::test]
    async fn finish_is_permanent() {
        let store = Store::open_in_memory().await.unwrap();
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
        store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0xabc".into() }).await.unwrap();
        assert_eq!(
            store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Settled }
        );
        // Neither released nor finished twice.
        let err = store.release_payment(&key(1)).await.unwrap_err();
        assert!(matches!(err, StoreError::BadTransition { state: Some(PaymentState::Settled), .. }), "{err}");
        assert!(err.to_string().contains("settled"), "{err}");
        let err = store.finish_payment(&key(1), &PaymentOutcome::SettleFailed { reason: "x".into() }).await;
        assert!(matches!(err, Err(StoreError::BadTransition { .. })));

        store.claim_payment(&key(2), "/v1/a", "eip155:137").await.unwrap();
        store.finish_payment(&key(2), &PaymentOutcome::SettleFailed { reason: "timeout".into() }).await.unwrap();
        assert_eq!(
            store.claim_payment(&key(2), "/v1/a", "eip155:137").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::SettleFailed }
        );
        let row: (String, Option<String>, Option<String>, i64, i64) = {
            let r = sqlx::query("SELECT state, tx_hash, reason, attempts, refused FROM payments WHERE key = ?1")
                .bind(hex::encode(key(2)))
                .fetch_one(&store.inner.pool)
                .await
                .unwrap();
            (r.get(0), r.get(1), r.get(2), r.get(3), r.get(4))
        };
        assert_eq!(row, ("settle_failed".into(), None, Some("timeout".into()), 1, 1));
    }

    #[tokio::test]
    async fn release_lets_the_payload_in_again() {
        let store = Store::open_in_memory().await.unwrap();
        // Nothing to release before a claim.
        let err = store.release_payment(&key(7)).await.unwrap_err();
        assert!(matches!(err, StoreError::BadTransition { state: None, .. }), "{err}");

        store.claim_payment(&key(7), "/v1/a", "eip155:8453").await.unwrap();
        store.release_payment(&key(7)).await.unwrap();
        assert_eq!(store.payment_state(&key(7)).await.unwrap(), Some(PaymentState::Released));
        // Releasing twice is refused: only `claimed` can be released.
        assert!(matches!(
            store.release_payment(&key(7)).await,
            Err(StoreError::BadTransition { state: Some(PaymentState::Released), .. })
        ));
        assert_eq!(store.claim_payment(&key(7), "/v1/b", "eip155:137").await.unwrap(), Claim::Claimed);
        assert_eq!(
            store.claim_payment(&key(7), "/v1/b", "eip155:137").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Claimed }
        );
        store.finish_payment(&key(7), &PaymentOutcome::Settled { tx_hash: "0x1".into() }).await.unwrap();
        let r = sqlx::query("SELECT attempts, route, network, tx_hash FROM payments WHERE key = ?1")
            .bind(hex::encode(key(7)))
            .fetch_one(&store.inner.pool)
            .await
            .unwrap();
        assert_eq!(r.get::<i64, _>(0), 2);
        assert_eq!(r.get::<String, _>(1), "/v1/b");
        assert_eq!(r.get::<String, _>(2), "eip155:137");
        assert_eq!(r.get::<String, _>(3), "0x1");
    }

    async fn race_claims(store: &Store, n: usize) {
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.claim_payment(&key(9), "/v1/a", "eip155:8453").await.unwrap() })
            })
            .collect();
        let mut won = 0;
        for task in tasks {
            match task.await.unwrap() {
                Claim::Claimed => won += 1,
                Claim::AlreadyUsed { state } => assert_eq!(state, PaymentState::Claimed),
            }
        }
        assert_eq!(won, 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_claims_have_one_winner() {
        race_claims(&Store::open_in_memory().await.unwrap(), 20).await;
        let dir = tempfile::tempdir().unwrap();
        race_claims(&file_store(&dir).await, 20).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_claims_across_two_opens_of_one_file() {
        // Two processes (here two pools) on one file: still one winner.
        let dir = tempfile::tempdir().unwrap();
        let a = file_store(&dir).await;
        let b = file_store(&dir).await;
        let tasks: Vec<_> = (0..20)
            .map(|i| {
                let store = if i % 2 == 0 { a.clone() } else { b.clone() };
                tokio::spawn(async move { store.claim_payment(&key(3), "/v1/a", "eip155:8453").await.unwrap() })
            })
            .collect();
        let mut won = 0;
        for task in tasks {
            won += usize::from(task.await.unwrap() == Claim::Claimed);
        }
        assert_eq!(won, 1);
    }

    #[tokio::test]
    async fn stale_claims_are_abandoned_on_open() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosted.sqlite");
        let store = Store::open(&path).await.unwrap();
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
        store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap();
        store.finish_payment(&key(2), &PaymentOutcome::Settled { tx_hash: "0x2".into() }).await.unwrap();
        store.close().await;

        // A recent claim survives a reopen with the default 10 minutes.
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
        store.close().await;

        let options = StoreOptions { abandon_after: Duration::ZERO, ..StoreOptions::default() };
        let store = Store::open_with(&path, &options).await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Abandoned));
        assert_eq!(store.payment_state(&key(2)).await.unwrap(), Some(PaymentState::Settled));
        assert_eq!(
            store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Abandoned }
        );
        assert!(store.release_payment(&key(1)).await.is_err());
        // A late settlement is still recorded.
        store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0x1".into() }).await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Settled));
    }

    #[tokio::test]
    async fn state_persists_across_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosted.sqlite");
        let day = date!(2026 - 03 - 14);
        let store = Store::open(&path).await.unwrap();
        store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap();
        store.finish_payment(&key(1), &PaymentOutcome::Settled { tx_hash: "0xdead".into() }).await.unwrap();
        store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap();
        for _ in 0..3 {
            store.take_free("docs", "203.0.113.7", day, 10).await.unwrap();
        }
        let mut decision = Decision::new("/v1/pdf/rotate", "rotate_pdf", Outcome::Paid);
        decision.quote = Some(2000);
        decision.payment_key = Some(key(1));
        store.record(&decision).await.unwrap();
        drop(store); // no close: like a killed process

        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
        assert_eq!(
            store.claim_payment(&key(1), "/v1/a", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Settled }
        );
        // The run that claimed it is gone (its lock went with it): abandoned, still refused.
        assert_eq!(
            store.claim_payment(&key(2), "/v1/a", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Abandoned }
        );
        assert_eq!(store.free_remaining("docs", "203.0.113.7", day, 10).await.unwrap(), 7);
        assert_eq!(store.take_free("docs", "203.0.113.7", day, 10).await.unwrap(), FreeTake::Taken { remaining: 6 });
        let recent = store.recent(10).await.unwrap();
        assert_eq!(recent.len(), 1);
        assert_eq!(recent[0].route, "/v1/pdf/rotate");
        assert_eq!(recent[0].payment_key, Some(key(1)));
        assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 2000 });
    }

    async fn race_pool(store: &Store, tasks: usize, limit: u32) {
        let day = date!(2026 - 01 - 01);
        let handles: Vec<_> = (0..tasks)
            .map(|_| {
                let store = store.clone();
                tokio::spawn(async move { store.take_free("chain-reads", "198.51.100.1", day, limit).await.unwrap() })
            })
            .collect();
        let mut remaining = Vec::new();
        for handle in handles {
            if let FreeTake::Taken { remaining: r } = handle.await.unwrap() {
                remaining.push(r);
            }
        }
        remaining.sort_unstable();
        assert_eq!(remaining, (0..limit).collect::<Vec<_>>(), "each free call taken exactly once");
        assert_eq!(store.free_remaining("chain-reads", "198.51.100.1", day, limit).await.unwrap(), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn pool_limit_holds_under_concurrency() {
        race_pool(&Store::open_in_memory().await.unwrap(), 50, 10).await;
        let dir = tempfile::tempdir().unwrap();
        race_pool(&file_store(&dir).await, 50, 10).await;
    }

    #[tokio::test]
    async fn pools_are_per_pool_client_and_day() {
        let store = Store::open_in_memory().await.unwrap();
        let day = date!(2026 - 05 - 01);
        for left in (0..30).rev() {
            assert_eq!(
                store.take_free("address-check", "10.0.0.1", day, 30).await.unwrap(),
                FreeTake::Taken { remaining: left }
            );
        }
        assert_eq!(store.take_free("address-check", "10.0.0.1", day, 30).await.unwrap(), FreeTake::Exhausted);
        assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 30).await.unwrap(), 0);
        // Exhausting one pool touches neither another pool, another client, nor another day.
        assert_eq!(
            store.take_free("chain-reads", "10.0.0.1", day, 10).await.unwrap(),
            FreeTake::Taken { remaining: 9 }
        );
        assert_eq!(
            store.take_free("address-check", "10.0.0.2", day, 30).await.unwrap(),
            FreeTake::Taken { remaining: 29 }
        );
        let next = day.next_day().unwrap();
        assert_eq!(store.free_remaining("address-check", "10.0.0.1", next, 30).await.unwrap(), 30);
        assert_eq!(
            store.take_free("address-check", "10.0.0.1", next, 30).await.unwrap(),
            FreeTake::Taken { remaining: 29 }
        );
        // A zero limit never creates a row.
        assert_eq!(store.take_free("docs", "10.0.0.1", day, 0).await.unwrap(), FreeTake::Exhausted);
        assert_eq!(store.free_remaining("docs", "10.0.0.1", day, 10).await.unwrap(), 10);
        // A limit lowered below what is used reads as none left.
        assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 5).await.unwrap(), 0);
        assert_eq!(store.take_free("address-check", "10.0.0.1", day, 5).await.unwrap(), FreeTake::Exhausted);
        // Pruning drops earlier days only.
        assert_eq!(store.prune_free_before(next).await.unwrap(), 3);
        assert_eq!(store.free_remaining("address-check", "10.0.0.1", day, 30).await.unwrap(), 30);
        assert_eq!(store.free_remaining("address-check", "10.0.0.1", next, 30).await.unwrap(), 29);
    }

    #[tokio::test]
    async fn refund_gives_one_back_never_below_zero() {
        let store = Store::open_in_memory().await.unwrap();
        let day = date!(2026 - 02 - 28);
        assert!(!store.refund_free("docs", "::1", day).await.unwrap());
        for _ in 0..10 {
            store.take_free("docs", "::1", day, 10).await.unwrap();
        }
        assert_eq!(store.take_free("docs", "::1", day, 10).await.unwrap(), FreeTake::Exhausted);
        assert!(store.refund_free("docs", "::1", day).await.unwrap());
        assert_eq!(store.free_remaining("docs", "::1", day, 10).await.unwrap(), 1);
        assert_eq!(store.take_free("docs", "::1", day, 10).await.unwrap(), FreeTake::Taken { remaining: 0 });
        for _ in 0..10 {
            assert!(store.refund_free("docs", "::1", day).await.unwrap());
        }
        assert!(!store.refund_free("docs", "::1", day).await.unwrap());
        assert_eq!(store.free_remaining("docs", "::1", day, 10).await.unwrap(), 10);
    }

    #[tokio::test]
    async fn file_store_runs_in_wal_with_full_sync() {
        let dir = tempfile::tempdir().unwrap();
        let store = file_store(&dir).await;
        assert_eq!(store.journal_mode().await.unwrap(), "wal");
        // Every pooled connection carries the pragmas, not just the first.
        let mut conns = Vec::new();
        for _ in 0..3 {
            conns.push(store.inner.pool.acquire().await.unwrap());
        }
        for conn in &mut conns {
            let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut **conn).await.unwrap();
            assert_eq!(sync, 2, "synchronous=FULL");
            let busy: i64 = sqlx::query_scalar("PRAGMA busy_timeout").fetch_one(&mut **conn).await.unwrap();
            assert_eq!(busy, 5000);
        }
        drop(conns);
        // The relaxed pool (free counters, ledger rows that move no money) flushes at checkpoints.
        let mut relaxed = store.inner.relaxed.acquire().await.unwrap();
        let sync: i64 = sqlx::query_scalar("PRAGMA synchronous").fetch_one(&mut *relaxed).await.unwrap();
        assert_eq!(sync, 1, "synchronous=NORMAL");
        assert!(dir.path().join("hosted.sqlite-wal").exists());
        assert_eq!(store.path(), Some(dir.path().join("hosted.sqlite").as_path()));
    }

    #[tokio::test]
    async fn ledger_round_trips_and_totals() {
        let store = Store::open_in_memory().await.unwrap();
        assert_eq!(store.totals().await.unwrap(), Totals::default());
        let full = Decision {
            at: datetime!(2026-03-14 15:09:26.535 UTC),
            route: "/v1/chain/tx".into(),
            operation: "get_transaction".into(),
            quote: Some(2000),
            outcome: Outcome::Paid,
            payer: Some("0x1111111111111111111111111111111111111111".into()),
            network: Some("eip155:8453".into()),
            tx_hash: Some("0xfeed".into()),
            error_code: None,
            client: Some("2001:db8::/64".into()),
            payment_key: Some(key(5)),
            finish: None,
        };
        let first = store.record(&full).await.unwrap();
        let mut mpp = Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::MppPaid);
        mpp.quote = Some(5000);
        store.record(&mpp).await.unwrap();
        let mut mismatch = Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::PriceMismatch);
        mismatch.quote = Some(1);
        mismatch.error_code = Some("price_mismatch".into());
        mismatch.payer = Some("x".repeat(10_000));
        let last = store.record(&mismatch).await.unwrap();
        assert!(last > first);
        store.record(&Decision::new("/v1/pdf/merge", "merge_pdf", Outcome::PaymentRequired)).await.unwrap();

        let recent = store.recent(10).await.unwrap();
        assert_eq!(recent.len(), 4);
        assert_eq!(recent[0].outcome, Outcome::PaymentRequired);
        assert_eq!(recent[0].quote, None);
        assert_eq!(recent[1].payer.as_deref().map(str::len), Some(MAX_TEXT), "long text is clipped");
        assert_eq!(recent[3], full);
        assert_eq!(store.recent(1).await.unwrap().len(), 1);
        assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 2, settled_amount: 7000 });

        let mut huge = Decision::new("/v1/a", "a", Outcome::Paid);
        huge.quote = Some(u64::MAX);
        assert!(matches!(store.record(&huge).await, Err(StoreError::OutOfRange { what: "quote", .. })));
    }

    #[tokio::test]
    async fn open_errors_name_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope").join("hosted.sqlite");
        let err = Store::open(&missing).await.unwrap_err();
        assert!(matches!(err, StoreError::MissingDirectory { .. }), "{err}");
        assert!(err.to_string().contains(&missing.display().to_string()), "{err}");

        let err = Store::open(dir.path()).await.unwrap_err();
        assert!(matches!(err, StoreError::IsDirectory { .. }), "{err}");

        let junk = dir.path().join("junk.sqlite");
        std::fs::write(&junk, vec![0x42u8; 8192]).unwrap();
        let err = Store::open(&junk).await.unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        let message = err.to_string();
        assert!(message.contains(&junk.display().to_string()) && message.contains("not a database"), "{message}");
    }

    #[tokio::test]
    async fn migrations_are_idempotent_and_refuse_newer_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosted.sqlite");
        for _ in 0..3 {
            let store = Store::open(&path).await.unwrap();
            assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
            store.close().await;
        }
        let store = Store::open(&path).await.unwrap();
        sqlx::query("UPDATE schema_version SET version = 99").execute(&store.inner.pool).await.unwrap();
        store.close().await;
        let err = Store::open(&path).await.unwrap_err();
        assert!(matches!(err, StoreError::SchemaTooNew { found: 99, .. }), "{err}");
    }

    fn paid_request(id: Option<&str>, body: &[u8]) -> PaidRequest {
        use sha2::Digest as _;
        PaidRequest {
            payment_id: id.map(str::to_string),
            request_sha256: Some(sha2::Sha256::digest(body).into()),
            ..PaidRequest::default()
        }
    }

    #[tokio::test]
    async fn only_a_settled_payment_for_the_same_request_and_id_is_redelivered() {
        let store = Store::open_in_memory().await.unwrap();
        let id = Some("call_0123456789abcdef");
        let request = paid_request(id, b"{\"a\":1}");
        // Never claimed.
        assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), None);
        store.claim_payment_for(&key(1), "/v1/a", "eip155:8453", &request).await.unwrap();
        // Still claimed (the first call runs), then settle failed: never redelivered.
        assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), None);
        store.claim_payment_for(&key(2), "/v1/a", "eip155:8453", &request).await.unwrap();
        store.finish_payment(&key(2), &PaymentOutcome::SettleFailed { reason: "x".into() }).await.unwrap();
        assert_eq!(store.redeliver(&key(2), "/v1/a", &request).await.unwrap(), None);

        let settled = PaymentOutcome::Settled { tx_hash: "0xfeed".into() };
        store.finish_payment_by(&key(1), &settled, Some("0xPayer")).await.unwrap();
        let expected =
            StoredSettlement { tx_hash: "0xfeed".into(), network: "eip155:8453".into(), payer: Some("0xPayer".into()) };
        assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), Some(expected.clone()));
        assert_eq!(store.redeliver(&key(1), "/v1/a", &request).await.unwrap(), Some(expected));
        // Anything else is not the same request.
        assert_eq!(store.redeliver(&key(1), "/v1/b", &request).await.unwrap(), None, "another route");
        let other_body = paid_request(id, b"{\"a\":2}");
        assert_eq!(store.redeliver(&key(1), "/v1/a", &other_body).await.unwrap(), None, "another body");
        let other_id = paid_request(Some("call_ffffffffffffffff"), b"{\"a\":1}");
        assert_eq!(store.redeliver(&key(1), "/v1/a", &other_id).await.unwrap(), None, "another id");
        let no_id = paid_request(None, b"{\"a\":1}");
        assert_eq!(store.redeliver(&key(1), "/v1/a", &no_id).await.unwrap(), None, "no id");
        let no_hash = PaidRequest { request_sha256: None, ..request.clone() };
        assert_eq!(store.redeliver(&key(1), "/v1/a", &no_hash).await.unwrap(), None, "no body hash");
        // A claim without an id is never redelivered, even to a request without one.
        store.claim_payment(&key(3), "/v1/a", "eip155:8453").await.unwrap();
        store.finish_payment(&key(3), &settled).await.unwrap();
        assert_eq!(store.redeliver(&key(3), "/v1/a", &no_id).await.unwrap(), None);

        let r =
            sqlx::query("SELECT redelivered, refused, payment_id, request_sha256, payer FROM payments WHERE key = ?1")
                .bind(hex::encode(key(1)))
                .fetch_one(&store.inner.pool)
                .await
                .unwrap();
        assert_eq!(r.get::<i64, _>(0), 2);
        assert_eq!(r.get::<i64, _>(1), 0, "a redelivery is no refusal");
        assert_eq!(r.get::<String, _>(2), "call_0123456789abcdef");
        assert_eq!(r.get::<String, _>(3), hex::encode(request.request_sha256.unwrap()));
        assert_eq!(r.get::<String, _>(4), "0xPayer");
    }

    #[tokio::test]
    async fn a_reclaimed_payment_keeps_the_new_request() {
        let store = Store::open_in_memory().await.unwrap();
        let first = paid_request(Some("call_0123456789abcdef"), b"one");
        let second = paid_request(Some("call_ffffffffffffffff"), b"two");
        store.claim_payment_for(&key(4), "/v1/a", "eip155:8453", &first).await.unwrap();
        store.release_payment(&key(4)).await.unwrap();
        store.claim_payment_for(&key(4), "/v1/b", "eip155:8453", &second).await.unwrap();
        store.finish_payment(&key(4), &PaymentOutcome::Settled { tx_hash: "0x4".into() }).await.unwrap();
        assert_eq!(store.redeliver(&key(4), "/v1/a", &first).await.unwrap(), None);
        let again = store.redeliver(&key(4), "/v1/b", &second).await.unwrap().expect("the settled request");
        assert_eq!((again.tx_hash.as_str(), again.payer), ("0x4", None));
    }

    #[tokio::test]
    async fn a_version_1_file_is_migrated_and_its_payments_stay_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosted.sqlite");
        {
            // A file as the first release wrote it.
            let pool = SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(SqliteConnectOptions::new().filename(&path).create_if_missing(true))
                .await
                .unwrap();
            sqlx::raw_sql(MIGRATIONS[0]).execute(&pool).await.unwrap();
            sqlx::raw_sql(
                "CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1), version INTEGER NOT NULL);
                 INSERT INTO schema_version (id, version) VALUES (1, 1);",
            )
            .execute(&pool)
            .await
            .unwrap();
            sqlx::query(
                "INSERT INTO payments (key, route, network, state, claimed_at_ms, updated_at_ms, tx_hash)
                 VALUES (?1, '/v1/a', 'eip155:8453', 'settled', 1, 1, '0xold')",
            )
            .bind(hex::encode(key(8)))
            .execute(&pool)
            .await
            .unwrap();
            pool.close().await;
        }
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.schema_version().await.unwrap(), MIGRATIONS.len() as i64);
        // Version 3's counts work in the old file.
        store.count_unpaid(&Decision::new("/v1/a", "a", Outcome::PaymentRequired));
        assert_eq!(store.unpaid_counts().await.unwrap().len(), 1);
        assert_eq!(
            store.claim_payment(&key(8), "/v1/a", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Settled }
        );
        let request = paid_request(Some("call_0123456789abcdef"), b"{}");
        assert_eq!(store.redeliver(&key(8), "/v1/a", &request).await.unwrap(), None, "no id was kept");
        // New payments in the old file keep theirs.
        store.claim_payment_for(&key(9), "/v1/a", "eip155:8453", &request).await.unwrap();
        store.finish_payment(&key(9), &PaymentOutcome::Settled { tx_hash: "0x9".into() }).await.unwrap();
        assert!(store.redeliver(&key(9), "/v1/a", &request).await.unwrap().is_some());
    }

    #[test]
    fn names_round_trip() {
        for outcome in Outcome::ALL {
            assert_eq!(Outcome::parse(outcome.as_str()), Some(outcome));
            assert_eq!(outcome.as_str().parse::<Outcome>(), Ok(outcome));
        }
        for state in PaymentState::ALL {
            assert_eq!(PaymentState::parse(state.as_str()), Some(state));
        }
        assert_eq!(Outcome::parse("nope"), None);
        assert_eq!(day_key(date!(2026 - 01 - 05)), "2026-01-05");
        assert_eq!(clip("aé", 2), "a");
    }

    fn authorized(n: u8) -> PaidRequest {
        PaidRequest {
            operation: Some("get_gas_price".into()),
            client: Some("127.0.0.1".into()),
            amount: Some(1_000),
            authorization: Some(Authorization {
                asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913".into(),
                authorizer: "0x1111111111111111111111111111111111111111".into(),
                nonce: format!("0x{}", hex::encode([n; 32])),
                valid_before: 2_000_000_000,
            }),
            ..PaidRequest::default()
        }
    }

    fn paid_decision(n: u8, tx: &str) -> Decision {
        let mut decision = Decision::new("/v1/chain/gas", "get_gas_price", Outcome::Paid);
        decision.quote = Some(1_000);
        decision.payment_key = Some(key(n));
        decision.tx_hash = Some(tx.into());
        decision.finish =
            Some(Finish { key: key(n), outcome: PaymentOutcome::Settled { tx_hash: tx.into() }, payer: None });
        decision
    }

    #[tokio::test]
    async fn a_settlement_and_its_ledger_row_are_written_together_and_only_once() {
        let store = Store::open_in_memory().await.unwrap();
        store.claim_payment_for(&key(1), "/v1/chain/gas", "eip155:8453", &authorized(1)).await.unwrap();
        store.record(&paid_decision(1, "0xaa")).await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Settled));
        assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 1_000 });
        // Finished again (a slow call after the settlement was found on chain): refused, and
        // the money is not counted twice.
        let again = store.record(&paid_decision(1, "0xaa")).await;
        assert!(matches!(again, Err(StoreError::BadTransition { .. })), "{again:?}");
        assert_eq!(store.totals().await.unwrap(), Totals { paid_calls: 1, settled_amount: 1_000 });
    }

    #[tokio::test]
    async fn claims_of_a_run_that_is_gone_are_abandoned_at_once_and_listed_for_the_chain() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hosted.sqlite");
        {
            let first = Store::open(&path).await.unwrap();
            first.claim_payment_for(&key(1), "/v1/chain/gas", "eip155:8453", &authorized(1)).await.unwrap();
            // A second run sharing the file sees the first alive: its claim stays claimed.
            let second = Store::open(&path).await.unwrap();
            assert_eq!(second.abandon_orphaned().await.unwrap(), 0);
            assert_eq!(second.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Claimed));
            second.close().await;
            // The first run ends without finishing its claim (its lock goes with it).
            first.close().await;
        }
        let store = Store::open(&path).await.unwrap();
        assert_eq!(store.payment_state(&key(1)).await.unwrap(), Some(PaymentState::Abandoned));
        let unresolved = store.unresolved_claims(10).await.unwrap();
        assert_eq!(unresolved.len(), 1);
        let claim = &unresolved[0];
        assert_eq!((claim.key, claim.amount, claim.operation.as_deref()), (key(1), Some(1_000), Some("get_gas_price")));
        assert_eq!(claim.authorization, authorized(1).authorization.unwrap());
        // Found settled on chain: recorded from `abandoned`, and no longer listed.
        store.record(&paid_decision(1, "0xbb")).await.unwrap();
        assert!(store.unresolved_claims(10).await.unwrap().is_empty());
        // One that was never used and expired is noted, stays refused, and is not listed again.
        store.claim_payment_for(&key(2), "/v1/chain/gas", "eip155:8453", &authorized(2)).await.unwrap();
        sqlx::query("UPDATE payments SET state = 'abandoned' WHERE key = ?1")
            .bind(hex::encode(key(2)))
            .execute(&store.inner.pool)
            .await
            .unwrap();
        assert_eq!(store.unresolved_claims(10).await.unwrap().len(), 1);
        store.mark_chain_checked(&key(2), "never used").await.unwrap();
        assert!(store.unresolved_claims(10).await.unwrap().is_empty());
        assert_eq!(
            store.claim_payment(&key(2), "/v1/chain/gas", "eip155:8453").await.unwrap(),
            Claim::AlreadyUsed { state: PaymentState::Abandoned }
        );
    }
}

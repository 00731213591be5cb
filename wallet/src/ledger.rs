//! The ledger: one SQLite row per call through any front door, local or hosted, and the
//! money each paid call moved.
//!
//! A row holds when, which front door, which client, which route, where it ran, how long
//! it took, its status, the input's size, the output's SHA-256 and, for a paid call, the
//! quote, the amount, the network, the payer, the payee, the authorization's nonce, the
//! transaction and the settlement answer. Never a key, a signature or a body.
//!
//! An `upto` payment reserves, and counts while in flight, the most it may charge (its
//! `quote`); once paid, its `amount` is what the settlement says it charged.
//!
//! A paid call's row goes through `reserved` (the amount counts against the caps; no
//! signature yet), `signed` (the authorization's nonce and expiry are on disk before the
//! signature leaves the process), then `paid` (the settlement's transaction), `unsettled`
//! (the server did not say it settled; still counted until the chain says otherwise) or
//! `released` (nothing was signed). Every money step is committed with `synchronous=FULL`
//! before the call goes on, so a crash at any point leaves a row that the reconciliation
//! ([`crate::reconcile`]) can check against the chain. Rows of calls that move no money
//! are committed with `synchronous=NORMAL` (durable across a crash, not a power loss),
//! through one connection: concurrent calls queue in the pool, not in SQLite's busy
//! handler. A reservation checks the day, session, client and network caps in one
//! `BEGIN IMMEDIATE` transaction ([`Ledger::reserve`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row as _, SqliteConnection};

use crate::money::Dollars;
use crate::policy::Selected;

/// A ledger failure; names the file.
#[derive(Debug, thiserror::Error)]
#[error("the ledger {path}: {message}")]
pub struct LedgerError {
    path: String,
    message: String,
}

/// A statement with its values bound.
type Update<'q> = sqlx::query::Query<'q, sqlx::Sqlite, sqlx::sqlite::SqliteArguments>;

impl LedgerError {
    /// A failure beside the ledger's file at `path` (its lock, say), saying what failed.
    pub fn other(path: &Path, what: impl std::fmt::Display) -> LedgerError {
        LedgerError { path: path.display().to_string(), message: what.to_string() }
    }
}

/// States whose amount counts against the caps.
const COUNTED: &str = "('reserved', 'signed', 'paid', 'unsettled')";

/// One sum a cap compares against, each read through its own partial index (the `?1` is
/// the UTC day, `?2` the session, `?3` the client or the network).
#[derive(Clone, Copy, Debug)]
enum Sum {
    Day,
    Session,
    Client,
    Network,
}

impl Sum {
    /// Its `WHERE`.
    fn filter(self) -> String {
        let by = match self {
            Sum::Day => "day = ?1",
            Sum::Session => "session = ?2",
            Sum::Client => "day = ?1 AND client IS ?3",
            Sum::Network => "day = ?1 AND network = ?3",
        };
        format!("{by} AND state IN {COUNTED}")
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS calls (
    id INTEGER PRIMARY KEY,
    call_id TEXT NOT NULL UNIQUE,
    at_ms INTEGER NOT NULL,
    day TEXT NOT NULL,
    front_door TEXT NOT NULL,
    client TEXT,
    session TEXT NOT NULL,
    route TEXT NOT NULL,
    ran TEXT NOT NULL,
    service TEXT,
    duration_ms INTEGER,
    status INTEGER,
    input_bytes INTEGER NOT NULL,
    output_sha256 TEXT,
    state TEXT NOT NULL,
    quote TEXT,
    amount TEXT,
    micros INTEGER NOT NULL DEFAULT 0,
    asset TEXT,
    symbol TEXT,
    decimals INTEGER,
    network TEXT,
    payer TEXT,
    payee TEXT,
    nonce TEXT,
    valid_before INTEGER,
    tx TEXT,
    settlement TEXT,
    error TEXT
);
CREATE INDEX IF NOT EXISTS calls_state ON calls (state);
-- The caps' sums read these alone (covering: the amount is in the index), never the table.
-- They hold only the rows whose amount counts (the `WHERE` is COUNTED, which the sums
-- repeat, so SQLite uses them): a call that moves no money writes no page of them.
DROP INDEX IF EXISTS calls_day;
DROP INDEX IF EXISTS calls_day_spent;
DROP INDEX IF EXISTS calls_session_spent;
DROP INDEX IF EXISTS calls_client_spent;
DROP INDEX IF EXISTS calls_network_spent;
CREATE INDEX IF NOT EXISTS calls_day_counted ON calls (day, state, micros)
    WHERE state IN ('reserved', 'signed', 'paid', 'unsettled');
CREATE INDEX IF NOT EXISTS calls_session_counted ON calls (session, state, micros)
    WHERE state IN ('reserved', 'signed', 'paid', 'unsettled');
CREATE INDEX IF NOT EXISTS calls_client_counted ON calls (day, client, state, micros)
    WHERE state IN ('reserved', 'signed', 'paid', 'unsettled');
CREATE INDEX IF NOT EXISTS calls_network_counted ON calls (day, network, state, micros)
    WHERE state IN ('reserved', 'signed', 'paid', 'unsettled');
";

/// Columns the `calls` table gained after it was first made, with their definitions
/// (this file's constants): added where missing when the ledger opens.
const ADDED_COLUMNS: &[(&str, &str)] = &[
    // The x402 scheme paid with: `exact` (also when NULL, rows from before) or `upto`, whose
    // nonce is Permit2's.
    ("scheme", "TEXT"),
];

/// Who made a call and through which door.
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// `http`, `mcp`, `cli` or `app`.
    pub front_door: &'static str,
    /// The MCP client's name or the HTTP caller's user agent.
    pub client: Option<String>,
}

/// One call as the ledger starts it.
#[derive(Clone, Debug)]
pub struct NewCall<'a> {
    /// Who and through which door.
    pub caller: &'a Caller,
    /// The operation.
    pub route: &'a str,
    /// `local` or `hosted`.
    pub ran: &'a str,
    /// The hosted service's host, for a hosted call.
    pub service: Option<&'a str>,
    /// Size of the request body.
    pub input_bytes: usize,
}

/// How a call ended.
#[derive(Clone, Debug, Default)]
pub struct Finish {
    /// HTTP status of the answer (200, 400, 402…).
    pub status: u16,
    /// How long it took.
    pub duration: Duration,
    /// SHA-256 of the answer's body, hex.
    pub output_sha256: Option<String>,
    /// What went wrong, in words (no secrets).
    pub error: Option<String>,
    /// Why the call was stopped before it ended, if it was (a time-out, a caller who went
    /// away): a call that moved no money is then `timed_out` or `cancelled`.
    pub stopped: Option<paperchain_engine_core::cancel::Why>,
}

/// The caps a reservation must stay within, besides the per-call cap already checked.
#[derive(Clone, Debug, Default)]
pub struct Caps {
    /// All calls in a UTC day.
    pub per_day: Option<Dollars>,
    /// This process's calls.
    pub per_session: Option<Dollars>,
    /// This client's calls in a UTC day.
    pub per_client: Option<Dollars>,
    /// This network's calls in a UTC day.
    pub per_network: Option<Dollars>,
}

/// What the caps that add calls up have counted so far ([`Ledger::spent_so_far`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Spent {
    /// Today (UTC), every call.
    pub today: Dollars,
    /// This process's calls.
    pub session: Dollars,
    /// Today, the client asked about.
    pub client: Dollars,
    /// Today, per network asked about.
    pub networks: BTreeMap<String, Dollars>,
}

/// One ledger row, as listed.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub id: i64,
    pub call_id: String,
    pub at: String,
    pub front_door: String,
    pub client: Option<String>,
    pub route: String,
    pub ran: String,
    pub service: Option<String>,
    pub duration_ms: Option<i64>,
    pub status: Option<i64>,
    pub input_bytes: i64,
    pub output_sha256: Option<String>,
    pub state: String,
    pub quote: Option<String>,
    pub amount: Option<String>,
    pub micros: i64,
    pub asset: Option<String>,
    pub symbol: Option<String>,
    pub decimals: Option<i64>,
    pub network: Option<String>,
    pub payer: Option<String>,
    pub payee: Option<String>,
    pub nonce: Option<String>,
    /// `upto` for a payment of that scheme (its nonce is Permit2's); else `exact` or none.
    pub scheme: Option<String>,
    pub valid_before: Option<i64>,
    pub tx: Option<String>,
    pub settlement: Option<String>,
    pub error: Option<String>,
}

/// The ledger file.
#[derive(Clone, Debug)]
pub struct Ledger {
    /// `synchronous=FULL`: money steps.
    full: SqlitePool,
    /// `synchronous=NORMAL`: calls that move no money.
    normal: SqlitePool,
    path: PathBuf,
    session: String,
}

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    i64::try_from(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0),
    )
    .unwrap_or(i64::MAX)
}

/// Unix seconds now.
pub fn now_secs() -> u64 {
    u64::try_from(now_ms() / 1000).unwrap_or(0)
}

/// The UTC day (`2026-11-25`) of Unix milliseconds.
pub fn day_of(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let format = time::macros::format_description!("[year]-[month]-[day]");
    at.format(&format).unwrap_or_default()
}

/// `ms` (Unix milliseconds) as RFC 3339, to the second.
pub fn rfc3339(ms: i64) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    at.format(&time::format_description::well_known::Rfc3339).unwrap_or_default()
}

/// A random call id (`call_` and 32 hex digits); also the payment-identifier sent.
pub fn new_call_id() -> String {
    format!("call_{}", hex::encode(rand::random::<[u8; 16]>()))
}

impl Ledger {
    /// `ledger.sqlite` in `data_dir` (created with the folder when missing).
    pub async fn open_in(data_dir: &Path) -> Result<Ledger, LedgerError> {
        std::fs::create_dir_all(data_dir).map_err(|e| LedgerError {
            path: data_dir.display().to_string(),
            message: format!("creating the folder: {e}"),
        })?;
        Ledger::open(&data_dir.join("ledger.sqlite")).await
    }

    /// Opens (creating and migrating) the ledger at `path`.
    pub async fn open(path: &Path) -> Result<Ledger, LedgerError> {
        let filename = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let connect = SqliteConnectOptions::new()
            .filename(&filename)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(Duration::from_secs(30));
        let error = |e: sqlx::Error| LedgerError { path: filename.display().to_string(), message: e.to_string() };
        // A local file: no connection goes stale, so none is pinged before each use.
        let full = SqlitePoolOptions::new()
            .max_connections(4)
            .test_before_acquire(false)
            .connect_with(connect.clone())
            .await
            .map_err(error)?;
        let mut tx = full.begin_with("BEGIN IMMEDIATE").await.map_err(error)?;
        sqlx::raw_sql(SCHEMA).execute(&mut *tx).await.map_err(error)?;
        sqlx::raw_sql(crate::channels::SCHEMA).execute(&mut *tx).await.map_err(error)?;
        // Columns added since the table was first made, to a ledger made before them.
        let columns: Vec<String> = sqlx::query_scalar("SELECT name FROM pragma_table_info('calls')")
            .fetch_all(&mut *tx)
            .await
            .map_err(error)?;
        for (column, definition) in ADDED_COLUMNS {
            if !columns.iter().any(|c| c == column) {
                let alter = format!("ALTER TABLE calls ADD COLUMN {column} {definition}");
                sqlx::raw_sql(sqlx::AssertSqlSafe(alter)).execute(&mut *tx).await.map_err(error)?;
            }
        }
        tx.commit().await.map_err(error)?;
        // One connection: SQLite has one writer at a time, and writers on several connections
        // wait for its lock in the busy handler's sleeps (1 ms, 2 ms, 5 ms…), which at a few
        // hundred calls at once cost far more than waiting in the pool's queue.
        let normal = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(connect.synchronous(SqliteSynchronous::Normal))
            .await
            .map_err(error)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let _ = std::fs::set_permissions(&filename, std::fs::Permissions::from_mode(0o600));
        }
        let session = format!("session_{}", hex::encode(rand::random::<[u8; 8]>()));
        Ok(Ledger { full, normal, path: filename, session })
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// This process's session id (the per-session budget counts its rows).
    pub fn session(&self) -> &str {
        &self.session
    }

    /// Closes the connections.
    pub async fn close(&self) {
        self.normal.close().await;
        self.full.close().await;
    }

    /// Runs one UPDATE or INSERT on `pool` (FULL or NORMAL sync).
    async fn apply(&self, update: Update<'_>, pool: &SqlitePool) -> Result<(), LedgerError> {
        update.execute(pool).await.map_err(|e| self.error(e))?;
        Ok(())
    }

    /// The connections that flush every commit (what records money uses).
    pub(crate) fn pool(&self) -> &SqlitePool {
        &self.full
    }

    /// An SQL error, naming this ledger's file.
    pub(crate) fn sql_error(&self, e: sqlx::Error) -> LedgerError {
        self.error(e)
    }

    fn error(&self, e: sqlx::Error) -> LedgerError {
        LedgerError { path: self.path.display().to_string(), message: e.to_string() }
    }

    /// Starts a row for `call`; returns its call id.
    pub async fn start(&self, call: &NewCall<'_>) -> Result<String, LedgerError> {
        let call_id = new_call_id();
        let at = now_ms();
        let insert = sqlx::query(
            "INSERT INTO calls (call_id, at_ms, day, front_door, client, session, route, ran, service, input_bytes, state)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'started')",
        )
        .bind(&call_id)
        .bind(at)
        .bind(day_of(at))
        .bind(call.caller.front_door)
        .bind(call.caller.client.as_deref().map(|c| crate::clean(c, 200)))
        .bind(&self.session)
        .bind(call.route)
        .bind(call.ran)
        .bind(call.service)
        .bind(i64::try_from(call.input_bytes).unwrap_or(i64::MAX));
        self.apply(insert, &self.normal).await?;
        Ok(call_id)
    }

    /// Ends a call that moved no money (`done`; `failed` with an error; `timed_out` or
    /// `cancelled` when it was stopped), or records the answer of a paid one without
    /// touching its money state (its error then says it was stopped).
    pub async fn finish(&self, call_id: &str, finish: &Finish) -> Result<(), LedgerError> {
        let update = sqlx::query(
            "UPDATE calls SET status = ?2, duration_ms = ?3, output_sha256 = ?4, error = COALESCE(?5, error),
                 state = CASE WHEN state <> 'started' THEN state WHEN ?6 IS NOT NULL THEN ?6
                              WHEN ?5 IS NULL THEN 'done' ELSE 'failed' END
             WHERE call_id = ?1",
        )
        .bind(call_id)
        .bind(i64::from(finish.status))
        .bind(i64::try_from(finish.duration.as_millis()).unwrap_or(i64::MAX))
        .bind(finish.output_sha256.as_deref())
        .bind(finish.error.as_deref().map(|e| crate::clean(e, 1000)))
        .bind(finish.stopped.map(paperchain_engine_core::cancel::Why::as_str));
        // The money a call moved is already on disk (FULL) by now; this row's rest is not money.
        self.apply(update, &self.normal).await
    }

    /// Records the quote a 402 carried (atomic units of the chosen offer).
    pub async fn quote(&self, call_id: &str, quote: &str) -> Result<(), LedgerError> {
        let update = sqlx::query("UPDATE calls SET quote = ?2 WHERE call_id = ?1").bind(call_id).bind(quote);
        self.apply(update, &self.normal).await
    }

    /// Reserves `selected`'s amount for `call_id` if every cap in `caps` still holds with
    /// it, counting every reserved, signed, paid or unsettled row, in one `BEGIN IMMEDIATE`
    /// transaction: concurrent calls (in this process or another) cannot together pass a cap.
    pub async fn reserve(
        &self,
        call_id: &str,
        selected: &Selected,
        caps: &Caps,
        client: Option<&str>,
    ) -> Result<Result<(), String>, LedgerError> {
        // The name as `start` stored it.
        let client = client.map(|c| crate::clean(c, 200));
        let client = client.as_deref();
        let mut tx = self.full.begin_with("BEGIN IMMEDIATE").await.map_err(|e| self.error(e))?;
        let day = day_of(now_ms());
        let amount = selected.dollars;
        let checks: [(Option<Dollars>, Sum, String, Option<&str>); 4] = [
            (caps.per_day, Sum::Day, "the day's cap (policy.per_day)".into(), None),
            (caps.per_session, Sum::Session, "this session's budget (policy.per_session)".into(), None),
            (
                caps.per_client,
                Sum::Client,
                format!("the day's budget of client {} (policy.clients)", client.unwrap_or("(unnamed)")),
                client,
            ),
            (
                caps.per_network,
                Sum::Network,
                format!("the day's cap on {} (policy.networks)", selected.network),
                Some(selected.network.as_str()),
            ),
        ];
        for (cap, sum, name, third) in checks {
            let Some(cap) = cap else { continue };
            let spent = spent(&mut tx, sum, &day, &self.session, third).await.map_err(|e| self.error(e))?;
            if Dollars::from_micros(spent.saturating_add(amount.micros())) > cap {
                tx.rollback().await.map_err(|e| self.error(e))?;
                return Ok(Err(format!(
                    "{amount} would pass {name} of {cap}: {} already spent or reserved",
                    Dollars::from_micros(spent)
                )));
            }
        }
        sqlx::query(
            "UPDATE calls SET state = 'reserved', quote = ?2, amount = ?2, micros = ?3, asset = ?4, symbol = ?5,
                 decimals = ?6, network = ?7, payee = ?8, day = ?9, scheme = ?10
             WHERE call_id = ?1",
        )
        .bind(call_id)
        .bind(selected.atomic.to_string())
        .bind(i64::try_from(amount.micros()).unwrap_or(i64::MAX))
        .bind(&selected.asset.address)
        .bind(&selected.asset.symbol)
        .bind(i64::from(selected.asset.decimals))
        .bind(&selected.network)
        .bind(&selected.payee)
        .bind(&day)
        .bind(selected.scheme)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.error(e))?;
        tx.commit().await.map_err(|e| self.error(e))?;
        Ok(Ok(()))
    }

    /// What the caps that add calls up count so far (money paid, signed or held): today in
    /// all, in this session, today by `client`, and today on each of `networks`.
    pub async fn spent_so_far(&self, client: Option<&str>, networks: &[String]) -> Result<Spent, LedgerError> {
        let client = client.map(|c| crate::clean(c, 200));
        let mut conn = self.full.acquire().await.map_err(|e| self.error(e))?;
        let day = day_of(now_ms());
        let mut sum = async |sum: Sum, third: Option<&str>| {
            spent(&mut conn, sum, &day, &self.session, third).await.map(Dollars::from_micros).map_err(|e| self.error(e))
        };
        let today = sum(Sum::Day, None).await?;
        let session = sum(Sum::Session, None).await?;
        let by_client = sum(Sum::Client, client.as_deref()).await?;
        let mut on_networks = BTreeMap::new();
        for network in networks {
            on_networks.insert(network.clone(), sum(Sum::Network, Some(network.as_str())).await?);
        }
        Ok(Spent { today, session, client: by_client, networks: on_networks })
    }

    /// Records that an authorization is about to be signed and sent: who pays, its nonce
    /// and its expiry. Committed before the signature exists.
    pub async fn signing(&self, call_id: &str, payer: &str, nonce: &str, valid_before: u64) -> Result<(), LedgerError> {
        let update = sqlx::query(
            "UPDATE calls SET state = 'signed', payer = ?2, nonce = ?3, valid_before = ?4 WHERE call_id = ?1",
        )
        .bind(call_id)
        .bind(payer)
        .bind(nonce)
        .bind(i64::try_from(valid_before).unwrap_or(i64::MAX));
        self.apply(update, &self.full).await
    }

    /// A call whose payment the user denied (or left unanswered): nothing was reserved or
    /// signed.
    pub async fn deny(&self, call_id: &str, why: &str) -> Result<(), LedgerError> {
        let update =
            sqlx::query("UPDATE calls SET state = 'denied', error = ?2 WHERE call_id = ?1 AND state = 'started'")
                .bind(call_id)
                .bind(crate::clean(why, 1000));
        self.apply(update, &self.full).await
    }

    /// The reservation of a call that signed nothing is given back.
    pub async fn release(&self, call_id: &str, why: &str) -> Result<(), LedgerError> {
        let update = sqlx::query(
            "UPDATE calls SET state = 'released', error = ?2, micros = 0 WHERE call_id = ?1 AND state = 'reserved'",
        )
        .bind(call_id)
        .bind(crate::clean(why, 1000));
        self.apply(update, &self.full).await
    }

    /// The call was paid: the settlement's transaction and answer.
    /// `tx` is `None` when the chain shows the authorization used but its transaction was
    /// not found yet (the reconciliation looks again).
    pub async fn paid(&self, call_id: &str, tx: Option<&str>, settlement: &Value) -> Result<(), LedgerError> {
        let update = sqlx::query("UPDATE calls SET state = 'paid', tx = ?2, settlement = ?3 WHERE call_id = ?1")
            .bind(call_id)
            .bind(tx.map(|tx| crate::clean(tx, 200)))
            .bind(crate::clean(&settlement.to_string(), 4000));
        self.apply(update, &self.full).await
    }

    /// An `upto` call was paid `charged` atomic units (`dollars`), at most its quote: what
    /// it counts from now on, and what the reconciliation finds moved on chain.
    pub async fn paid_charged(
        &self,
        call_id: &str,
        tx: Option<&str>,
        settlement: &Value,
        (charged, dollars): (u128, Dollars),
    ) -> Result<(), LedgerError> {
        let update = sqlx::query(
            "UPDATE calls SET state = 'paid', tx = ?2, settlement = ?3, amount = ?4, micros = ?5 WHERE call_id = ?1",
        )
        .bind(call_id)
        .bind(tx.map(|tx| crate::clean(tx, 200)))
        .bind(crate::clean(&settlement.to_string(), 4000))
        .bind(charged.to_string())
        .bind(i64::try_from(dollars.micros()).unwrap_or(i64::MAX));
        self.apply(update, &self.full).await
    }

    /// A signed call whose settlement is not known: it counts until the chain says.
    pub async fn unsettled(&self, call_id: &str, why: &str) -> Result<(), LedgerError> {
        let update =
            sqlx::query("UPDATE calls SET state = 'unsettled', error = ?2 WHERE call_id = ?1 AND state = 'signed'")
                .bind(call_id)
                .bind(crate::clean(why, 1000));
        self.apply(update, &self.full).await
    }

    /// A signed authorization the chain shows unused past its expiry: it can never move
    /// money, so it no longer counts.
    pub async fn expired(&self, call_id: &str) -> Result<(), LedgerError> {
        let update = sqlx::query(
            "UPDATE calls SET state = 'expired', micros = 0 WHERE call_id = ?1 AND state IN ('signed', 'unsettled')",
        )
        .bind(call_id);
        self.apply(update, &self.full).await
    }

    /// The row of `call_id`.
    pub async fn get(&self, call_id: &str) -> Result<Option<Row>, LedgerError> {
        let row = sqlx::query("SELECT * FROM calls WHERE call_id = ?1")
            .bind(call_id)
            .fetch_optional(&self.full)
            .await
            .map_err(|e| self.error(e))?;
        Ok(row.as_ref().map(row_of))
    }

    /// Rows since Unix milliseconds `since_ms`, oldest first.
    pub async fn rows(&self, since_ms: i64) -> Result<Vec<Row>, LedgerError> {
        let rows = sqlx::query("SELECT * FROM calls WHERE at_ms >= ?1 ORDER BY id")
            .bind(since_ms)
            .fetch_all(&self.full)
            .await
            .map_err(|e| self.error(e))?;
        Ok(rows.iter().map(row_of).collect())
    }

    /// Gives back reservations older than `older_than_ms` (Unix ms) that never signed: the
    /// call stopped between reserving and signing (a crash, a closed client). Nothing left
    /// the process for them, so nothing can be paid.
    pub async fn release_stale(&self, older_than_ms: i64) -> Result<u64, LedgerError> {
        let done = sqlx::query(
            "UPDATE calls SET state = 'released', micros = 0, error = 'stopped before signing'
             WHERE state = 'reserved' AND nonce IS NULL AND at_ms < ?1",
        )
        .bind(older_than_ms)
        .execute(&self.full)
        .await
        .map_err(|e| self.error(e))?;
        Ok(done.rows_affected())
    }

    /// Rows whose money the chain can confirm: signed, unsettled or paid.
    pub async fn payments(&self) -> Result<Vec<Row>, LedgerError> {
        let rows = sqlx::query("SELECT * FROM calls WHERE state IN ('signed', 'unsettled', 'paid') ORDER BY id")
            .fetch_all(&self.full)
            .await
            .map_err(|e| self.error(e))?;
        Ok(rows.iter().map(row_of).collect())
    }
}

async fn spent(
    conn: &mut SqliteConnection,
    sum: Sum,
    day: &str,
    session: &str,
    third: Option<&str>,
) -> Result<u64, sqlx::Error> {
    let sql = format!("SELECT COALESCE(SUM(micros), 0) FROM calls WHERE {}", sum.filter());
    // The filters are this file's own constants; the values are bound.
    let total: i64 =
        sqlx::query_scalar(sqlx::AssertSqlSafe(sql)).bind(day).bind(session).bind(third).fetch_one(&mut *conn).await?;
    Ok(u64::try_from(total).unwrap_or(0))
}

fn row_of(row: &sqlx::sqlite::SqliteRow) -> Row {
    let at_ms: i64 = row.get("at_ms");
    Row {
        id: row.get("id"),
        call_id: row.get("call_id"),
        at: rfc3339(at_ms),
        front_door: row.get("front_door"),
        client: row.get("client"),
        route: row.get("route"),
        ran: row.get("ran"),
        service: row.get("service"),
        duration_ms: row.get("duration_ms"),
        status: row.get("status"),
        input_bytes: row.get("input_bytes"),
        output_sha256: row.get("output_sha256"),
        state: row.get("state"),
        quote: row.get("quote"),
        amount: row.get("amount"),
        micros: row.get("micros"),
        asset: row.get("asset"),
        symbol: row.get("symbol"),
        decimals: row.get("decimals"),
        network: row.get("network"),
        payer: row.get("payer"),
        payee: row.get("payee"),
        nonce: row.get("nonce"),
        scheme: row.get("scheme"),
        valid_before: row.get("valid_before"),
        tx: row.get("tx"),
        settlement: row.get("settlement"),
        error: row.get("error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::known_assets;

    fn selected(network: &str, micros: u64) -> Selected {
        let asset = known_assets().into_iter().find(|a| a.network == network).unwrap();
        Selected {
            requirement: serde_json::from_value(serde_json::json!({})).unwrap(),
            scheme: "exact",
            atomic: u128::from(micros),
            dollars: Dollars::from_micros(micros),
            asset,
            network: network.into(),
            payee: "0x1111111111111111111111111111111111111111".into(),
            needs_approval: false,
        }
    }

    async fn started(ledger: &Ledger, client: Option<&str>) -> String {
        let caller = Caller { front_door: "http", client: client.map(str::to_string) };
        let call = NewCall { caller: &caller, route: "get_gas_price", ran: "hosted", service: None, input_bytes: 2 };
        ledger.start(&call).await.unwrap()
    }

    #[test]
    fn the_partial_indexes_hold_exactly_the_counted_states() {
        let wheres = SCHEMA.matches(&format!("WHERE state IN {COUNTED}")).count();
        assert_eq!(wheres, 4, "each caps index is limited to COUNTED, as the sums filter");
    }

    #[tokio::test]
    async fn the_caps_sums_read_their_partial_index_alone() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open_in(dir.path()).await.unwrap();
        let filters = [
            (Sum::Day.filter(), "calls_day_counted"),
            (Sum::Session.filter(), "calls_session_counted"),
            (Sum::Client.filter(), "calls_client_counted"),
            (Sum::Network.filter(), "calls_network_counted"),
        ];
        for (filter, index) in filters {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "EXPLAIN QUERY PLAN SELECT COALESCE(SUM(micros), 0) FROM calls WHERE {filter}"
            )))
            .bind("2026-11-27")
            .bind("s")
            .bind("x")
            .fetch_all(&ledger.full)
            .await
            .unwrap();
            let detail: Vec<String> = rows.iter().map(|r| r.get::<String, _>("detail")).collect();
            assert!(
                detail.iter().any(|d| d.contains(&format!("USING COVERING INDEX {index}"))),
                "{filter}: {detail:?}"
            );
        }
        ledger.close().await;
    }

    #[tokio::test]
    async fn each_cap_counts_what_it_names_and_released_money_is_given_back() {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open_in(dir.path()).await.unwrap();
        let cap = |micros| Some(Dollars::from_micros(micros));
        let base = "eip155:8453";
        // Per client: agent A's budget does not limit agent B.
        let caps = Caps { per_client: cap(2_500), ..Caps::default() };
        for _ in 0..2 {
            let id = started(&ledger, Some("a")).await;
            ledger.reserve(&id, &selected(base, 1_000), &caps, Some("a")).await.unwrap().unwrap();
        }
        let id = started(&ledger, Some("a")).await;
        let refused = ledger.reserve(&id, &selected(base, 1_000), &caps, Some("a")).await.unwrap().unwrap_err();
        assert!(refused.contains("client a") && refused.contains("$0.002 already"), "{refused}");
        let id = started(&ledger, Some("b")).await;
        ledger.reserve(&id, &selected(base, 1_000), &caps, Some("b")).await.unwrap().unwrap();
        // Per network: Polygon's spending does not count on Base.
        let caps = Caps { per_network: cap(3_500), ..Caps::default() };
        let id = started(&ledger, None).await;
        let refused = ledger.reserve(&id, &selected(base, 1_000), &caps, None).await.unwrap().unwrap_err();
        assert!(refused.contains("eip155:8453"), "{refused}");
        ledger.reserve(&id, &selected("eip155:137", 1_000), &caps, None).await.unwrap().unwrap();
        // Per session: another process's ledger handle is another session.
        let caps = Caps { per_session: cap(4_500), ..Caps::default() };
        let id = started(&ledger, None).await;
        assert!(ledger.reserve(&id, &selected(base, 1_000), &caps, None).await.unwrap().is_err());
        let other = Ledger::open_in(dir.path()).await.unwrap();
        let id = started(&other, None).await;
        other.reserve(&id, &selected(base, 1_000), &caps, None).await.unwrap().unwrap();
        // A released reservation and an expired authorization no longer count.
        let caps = Caps { per_day: cap(5_500), ..Caps::default() };
        let id = started(&ledger, None).await;
        assert!(ledger.reserve(&id, &selected(base, 1_000), &caps, None).await.unwrap().is_err());
        let last = ledger.rows(0).await.unwrap().into_iter().rev().find(|r| r.state == "reserved").unwrap();
        ledger.release(&last.call_id, "the key could not be loaded").await.unwrap();
        ledger.reserve(&id, &selected(base, 1_000), &caps, None).await.unwrap().unwrap();
        ledger.signing(&id, "0x2222222222222222222222222222222222222222", "0x01", 1).await.unwrap();
        ledger.expired(&id).await.unwrap();
        let again = started(&ledger, None).await;
        ledger.reserve(&again, &selected(base, 1_000), &caps, None).await.unwrap().unwrap();
        let row = ledger.get(&id).await.unwrap().unwrap();
        assert_eq!((row.state.as_str(), row.micros), ("expired", 0));
    }
}

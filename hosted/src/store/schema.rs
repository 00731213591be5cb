//! The hosted store's schema: its migrations, plain SQL applied once each in order (see the
//! store's module doc). Never edit an entry that has shipped: append a new one.
//!
//! What this file must not do: hold anything but SQL; the store applies it.

/// Schema migrations, in order; entry `i` brings the schema to version `i + 1`.
/// Never edit an entry that has shipped: append a new one.
pub(super) const MIGRATIONS: &[&str] = &[
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
    // 5: what an `upto` payment settled, when less than its quote (the quote is then the
    // most the payer authorized); the totals' index covers it.
    r#"
ALTER TABLE decisions ADD COLUMN charged INTEGER;     -- atomic units settled, when not the quote
DROP INDEX IF EXISTS decisions_outcome_quote;
CREATE INDEX IF NOT EXISTS decisions_outcome_amounts ON decisions (outcome, quote, charged);
-- What a redelivered `upto` answer says it charged (rows with a charge only).
CREATE INDEX IF NOT EXISTS decisions_charged_by_payment ON decisions (payment_key) WHERE charged IS NOT NULL;
"#,
    // 6: `batch-settlement` channels (store/channels.rs) and the transactions sent for them.
    r#"
CREATE TABLE IF NOT EXISTS channels (
    id             TEXT PRIMARY KEY NOT NULL,     -- 0x and 64 hex digits
    network        TEXT NOT NULL,
    payer          TEXT NOT NULL,
    config         TEXT NOT NULL,                 -- the channel config as it travels (JSON)
    balance        INTEGER NOT NULL CHECK (balance >= 0),   -- deposited less refunded, as last known
    charged        INTEGER NOT NULL CHECK (charged >= 0),   -- what the accepted vouchers add up to
    claimed        INTEGER NOT NULL CHECK (claimed >= 0),   -- claimed on chain
    voucher_sig    TEXT,                          -- the payer's voucher for `charged`
    pending        INTEGER,                       -- a running call's voucher amount
    pending_sig    TEXT,
    pending_at_ms  INTEGER,
    withdrawing    INTEGER NOT NULL DEFAULT 0,    -- 1: the payer asked to withdraw
    checked_at_ms  INTEGER NOT NULL,              -- balance last read from the chain (0: never)
    updated_at_ms  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS channels_to_claim ON channels (updated_at_ms) WHERE charged > claimed;
CREATE TABLE IF NOT EXISTS channel_txs (
    id        INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms     INTEGER NOT NULL,
    kind      TEXT NOT NULL CHECK (kind IN ('deposit', 'claim', 'refund')),
    tx_hash   TEXT NOT NULL,
    channels  INTEGER NOT NULL,
    amount    INTEGER NOT NULL
);
"#,
];

//! The paying client: a wallet whose key stays in the OS keyring, the spend policy the
//! user sets, routing of calls between the local engine and a hosted service, and a
//! SQLite ledger of every call and every cent.
//!
//! - [`config`]: `config.toml` (XDG paths): the hosted service, routing, the policy.
//! - [`live`]: the configuration a running process follows, read again before each call.
//! - [`keys`]: the signing key in the OS keyring, or an encrypted V3 keystore file.
//! - [`policy`]: which requirement of a 402 may be paid (before any signature).
//! - [`ledger`]: the SQLite ledger; atomic reservations against the caps.
//! - [`client`]: the x402 v2 exchange, paid once.
//! - [`solana_pay`]: a Solana `exact` payment built from the chain and signed.
//! - [`chain`], [`reconcile`]: what the chain says of each payment.
//! - [`channels`]: `batch-settlement` channels: deposits, vouchers, refunds.
//! - [`x402_client`]: reading a 402 and a settlement.
//! - [`approvals`]: payments waiting for the user's answer in the app.
//! - [`config_edit`]: the user's changes to `config.toml`, one key at a time.
//! - [`money`]: dollar caps and signed amounts, rounded up, never down.
//!
//! It reads chains with the engine's core (`paperchain-engine-core`: the configured EVM
//! chains and Solana clusters) and speaks the wire format of `paperchain-protocol`;
//! nothing else of the product. Its tests check, from `cargo tree`, that it builds with
//! no server, no route and no document library.
//!
//! What this crate must not do: depend on the server (`paperchain-gateway`), log or return
//! a key or a signature, or let a call change the policy.

pub mod approvals;
pub mod chain;
pub mod channels;
pub mod client;
pub mod config;
pub mod config_edit;
pub mod confirmed;
pub mod keys;
pub mod ledger;
pub mod live;
pub mod money;
pub mod owner;
pub mod policy;
pub mod reconcile;
pub mod solana_pay;
pub mod x402_client;

/// `text` without control characters, at most `max` characters: what a server or caller
/// sent, made safe to store and print.
pub fn clean(text: &str, max: usize) -> String {
    text.chars().filter(|c| !c.is_control()).take(max).collect()
}

//! The ledger against the chain: every row that signed a payment is checked.
//!
//! A `paid` row's transaction must have succeeded and moved exactly the row's amount from
//! the payer to the payee in the row's asset. A `signed` or `unsettled` row (a crash, a
//! lost answer, a refused payment) is settled by the chain: its authorization used means
//! paid (the transaction is found by the token's `AuthorizationUsed` event), unused past
//! its expiry means it can never move money (`expired`), unused before it is still open.

use serde::Serialize;

use crate::chain;
use crate::ledger::{Ledger, LedgerError, Row};
use paperchain_engine_core::evm::Chains;
use paperchain_engine_core::solana::Clusters;

/// A reservation this old that never signed belongs to a call that stopped.
const STALE_RESERVATION_SECONDS: u64 = 600;

/// How far past its `validBefore` an unused authorization must be before it is taken as
/// expired: this machine's clock may run ahead of the chain's (the same slack the payer
/// gives `validAfter`).
const EXPIRY_SLACK_SECONDS: u64 = paperchain_protocol::exact_evm::VALID_AFTER_SLACK_SECONDS;

/// What the chain says of one row.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Check {
    /// The ledger's call id.
    pub call_id: String,
    /// The row's state before the check.
    pub was: String,
    /// `ok`, `now_paid`, `expired`, `open`, `mismatch` or `unknown`.
    pub verdict: String,
    /// The transaction, when known.
    pub tx: Option<String>,
    /// Details.
    pub detail: String,
}

/// Checks every paying row of `ledger` on `chains`, updating rows the chain settles.
pub async fn reconcile(
    ledger: &Ledger,
    chains: &Chains,
    clusters: &Clusters,
    now_secs: u64,
) -> Result<Vec<Check>, LedgerError> {
    check_rows(ledger, &Reads { chains, clusters }, now_secs, false).await
}

/// Checks only the rows whose payment is not known yet (signed or unsettled: a crash, a
/// lost answer, a refused payment), as a server does when it starts.
pub async fn settle_open(
    ledger: &Ledger,
    chains: &Chains,
    clusters: &Clusters,
    now_secs: u64,
) -> Result<Vec<Check>, LedgerError> {
    check_rows(ledger, &Reads { chains, clusters }, now_secs, true).await
}

/// Where the chains are read: the EVM chains and the Solana clusters.
struct Reads<'a> {
    chains: &'a Chains,
    clusters: &'a Clusters,
}

async fn check_rows(
    ledger: &Ledger,
    reads: &Reads<'_>,
    now_secs: u64,
    open_only: bool,
) -> Result<Vec<Check>, LedgerError> {
    let stale = i64::try_from(now_secs.saturating_sub(STALE_RESERVATION_SECONDS)).unwrap_or(0).saturating_mul(1000);
    let released = ledger.release_stale(stale).await?;
    if released > 0 {
        tracing::info!(released, "reservations of calls that stopped before signing were given back");
    }
    let mut checks = Vec::new();
    for row in ledger.payments().await?.into_iter().filter(|r| !open_only || r.state != "paid") {
        let check = check_row(ledger, reads, &row, now_secs).await?;
        checks.push(check);
    }
    if !open_only {
        checks.extend(crate::channels::reconcile(ledger, reads.chains).await?);
    }
    Ok(checks)
}

async fn check_row(ledger: &Ledger, reads: &Reads<'_>, row: &Row, now_secs: u64) -> Result<Check, LedgerError> {
    let verdict = |verdict: &str, tx: Option<String>, detail: String| Check {
        call_id: row.call_id.clone(),
        was: row.state.clone(),
        verdict: verdict.into(),
        tx,
        detail,
    };
    let (Some(network), Some(asset), Some(payer), Some(payee), Some(amount)) =
        (&row.network, &row.asset, &row.payer, &row.payee, &row.amount)
    else {
        return Ok(verdict("unknown", row.tx.clone(), "the row lacks the payment's details".into()));
    };
    if row.scheme.as_deref() == Some(paperchain_protocol::x402::SCHEME_BATCH) {
        // A voucher moves nothing by itself: its channel is checked as a whole (the rows
        // named `channel …`).
        if row.state == "paid" {
            let detail =
                format!("a voucher of {amount} over a payment channel; the channel is checked against the escrow");
            return Ok(verdict("ok", row.tx.clone(), detail));
        }
        // Refused or unanswered: the channel's cumulative total says what was charged, and
        // the next voucher covers the same amount; on its own it moves nothing.
        ledger.expired(&row.call_id).await?;
        let detail = "a voucher the service did not confirm: it moves nothing beyond the channel's total, checked \
                      against the escrow"
            .to_string();
        return Ok(verdict("expired", row.tx.clone(), detail));
    }
    if network.starts_with("solana:") {
        let payment = SolanaPayment { network, asset, payer, payee, amount };
        return check_solana_row(ledger, reads.clusters, row, &payment, now_secs, verdict).await;
    }
    let chain = match chain::chain_of(reads.chains, network) {
        Ok(chain) => chain,
        Err(e) => return Ok(verdict("unknown", row.tx.clone(), e)),
    };
    if row.state == "paid"
        && let Some(tx) = row.tx.as_deref().filter(|tx| tx.starts_with("0x"))
    {
        return Ok(match chain::check_transfer(&chain, tx, asset, payer, payee, amount).await {
            Ok(()) => verdict("ok", Some(tx.into()), format!("{amount} moved from {payer} to {payee}")),
            Err(e) => verdict("mismatch", Some(tx.into()), e),
        });
    }
    let Some(nonce) = row.nonce.as_deref() else {
        return Ok(verdict("unknown", None, "the row has no authorization nonce".into()));
    };
    if row.scheme.as_deref() == Some(paperchain_protocol::x402::SCHEME_UPTO) {
        // Permit2 records that a nonce was used, not in which transaction or for how much.
        return Ok(match chain::permit2_nonce_used(&chain, payer, nonce).await {
            Ok(true) => verdict(
                "unknown",
                None,
                "the `upto` authorization was used; Permit2 does not say in which transaction or for how much, so \
                 it keeps counting its most"
                    .into(),
            ),
            Ok(false) if past_expiry(row, now_secs) => {
                ledger.expired(&row.call_id).await?;
                verdict("expired", None, "never used and past its deadline: it can no longer move money".into())
            }
            Ok(false) => verdict("open", None, "not used yet; it can be until its deadline".into()),
            Err(e) => verdict("unknown", None, e),
        });
    }
    match chain::authorization_used(&chain, asset, payer, nonce).await {
        Ok(true) => match chain::authorization_tx(&chain, asset, payer, nonce, 200_000).await {
            Ok(Some(tx)) => {
                let tx = tx.to_string();
                ledger.paid(&row.call_id, Some(&tx), &serde_json::json!({"found_on_chain": true})).await?;
                Ok(verdict("now_paid", Some(tx), "the authorization was used: recorded as paid".into()))
            }
            Ok(None) => Ok(verdict("unknown", None, "the authorization was used, its transaction not found".into())),
            Err(e) => Ok(verdict("unknown", None, e)),
        },
        Ok(false) if past_expiry(row, now_secs) => {
            ledger.expired(&row.call_id).await?;
            Ok(verdict("expired", None, "never used and past its expiry: it can no longer move money".into()))
        }
        Ok(false) => Ok(verdict("open", None, "not used yet; it can be until its expiry".into())),
        Err(e) => Ok(verdict("unknown", None, e)),
    }
}

/// Whether `row`'s authorization is past its expiry (with the slack a chain's clock may lag).
fn past_expiry(row: &Row, now_secs: u64) -> bool {
    row.valid_before
        .is_some_and(|before| u64::try_from(before).unwrap_or(0).saturating_add(EXPIRY_SLACK_SECONDS) <= now_secs)
}

/// What a Solana row says was paid.
#[derive(Clone, Copy)]
struct SolanaPayment<'a> {
    network: &'a str,
    asset: &'a str,
    payer: &'a str,
    payee: &'a str,
    amount: &'a str,
}

/// [`check_row`] for a Solana payment: a `paid` row's transaction must have moved exactly
/// its amount; a `signed` or `unsettled` one is looked for by its memo (the ledger's nonce),
/// and past its expiry (its blockhash too old to land) it is `expired`.
async fn check_solana_row(
    ledger: &Ledger,
    clusters: &Clusters,
    row: &Row,
    payment: &SolanaPayment<'_>,
    now_secs: u64,
    verdict: impl Fn(&str, Option<String>, String) -> Check,
) -> Result<Check, LedgerError> {
    let SolanaPayment { network, asset, payer, payee, amount } = *payment;
    if row.state == "paid"
        && let Some(tx) = row.tx.as_deref().filter(|tx| !tx.is_empty())
    {
        return Ok(match chain::check_solana_transfer(clusters, network, tx, asset, payer, payee, amount).await {
            Ok(()) => verdict("ok", Some(tx.into()), format!("{amount} moved from {payer} to {payee}")),
            Err(e) => verdict("mismatch", Some(tx.into()), e),
        });
    }
    let Some(memo) = row.nonce.as_deref() else {
        return Ok(verdict("unknown", None, "the row has no memo".into()));
    };
    match chain::solana_payment(clusters, network, payer, memo).await {
        Ok(Some(tx)) => {
            ledger.paid(&row.call_id, Some(&tx), &serde_json::json!({"found_on_chain": true})).await?;
            Ok(verdict("now_paid", Some(tx), "the transaction landed: recorded as paid".into()))
        }
        Ok(None) if past_expiry(row, now_secs) => {
            ledger.expired(&row.call_id).await?;
            Ok(verdict(
                "expired",
                None,
                "never landed and its blockhash is too old: it can no longer move money".into(),
            ))
        }
        Ok(None) => Ok(verdict("open", None, "not landed yet; it can until its blockhash is too old".into())),
        Err(e) => Ok(verdict("unknown", None, e)),
    }
}

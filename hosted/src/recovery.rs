//! Settlements a crash left out of the ledger, found on chain.
//!
//! A paid call settles on chain first and records the settlement after (one transaction:
//! the payment's end and its ledger row). A process killed between the two leaves a claim
//! with no end: marked `abandoned` once its run is known to be gone (liveness.rs), it stays
//! refused, and here it is looked up. Its EIP-3009 authorization, kept with the claim,
//! says it all: `authorizationState(authorizer, nonce)` on the token is true once the
//! transfer happened, and the token's `AuthorizationUsed(authorizer, nonce)` log names the
//! transaction. A used one becomes `settled` with a `paid` ledger row for its quote, as if
//! the call had recorded it; one never used and past its `validBefore` can never move money
//! and is noted as checked; one still valid is looked at again on the next pass.
//!
//! An `upto` claim keeps the payer, the token and Permit2's nonce (decimal): Permit2's nonce
//! bitmap says whether it was used; the transaction is the one among the token's transfers
//! from the payer to the service's address whose input carries that nonce, and its transfer
//! is what was charged.
//!
//! A Solana claim keeps the payer, the mint and its transfer's memo (a random nonce): the
//! payer's recent transactions are searched for a successful one with that memo. None
//! found once the transaction's blockhash is too old: it can never land.
//!
//! The chain is read through the engine's configured chains (`PAPERCHAIN_RPC_BASE`…), found
//! by the network's chain id, and Solana through its clusters.

use std::time::Duration;

use alloy::primitives::{Address, B256, U256};
use alloy::sol;
use alloy::sol_types::{SolCall, SolEvent};
use paperchain_engine::evm::{Chains, EvmChain};
use paperchain_engine::solana::{Clusters, transaction_with_memo};
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::store::{ClosedPayment, Decision, Outcome, PaymentOutcome, Store, UnresolvedClaim};

sol! {
    function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
    event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
    function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);
    event Transfer(address indexed from, address indexed to, uint256 value);
}

/// Claims looked at in one pass.
const PER_PASS: u32 = 200;
/// Blocks one log query covers (public RPCs refuse wider ranges).
const LOG_CHUNK: u64 = 5_000;
/// Blocks searched before the claim's time, for clocks that differ.
const MARGIN_BLOCKS: u64 = 600;

/// What one pass found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recovered {
    /// Settled on chain: now `settled`, with a `paid` ledger row.
    pub settled: u32,
    /// Never used and expired: no money moved, and none can.
    pub never_used: u32,
    /// Not decided yet (still valid, or the chain could not be read).
    pub pending: u32,
}

/// A settlement found on chain: its transaction (`unknown` when the authorization is used
/// and its transaction was not found), and what it charged when that differs from the quote
/// (`upto`).
type Found = (String, Option<u64>);

/// Looks up the abandoned claims on chain and records what happened to them; `pay_to` names
/// the service's address per network (where an `upto` payment's transfer went).
pub async fn recover(
    store: &Store,
    chains: &Chains,
    clusters: &Clusters,
    pay_to: &[(String, String)],
) -> Result<Recovered, String> {
    let claims = store.unresolved_claims(PER_PASS).await.map_err(|e| e.to_string())?;
    let mut found = Recovered::default();
    let now = OffsetDateTime::now_utc().unix_timestamp().max(0) as u64;
    for claim in claims {
        let looked_up = if claim.network.starts_with("solana:") {
            look_up_solana(clusters, &claim).await.map(|tx| tx.map(|tx| (tx, None)))
        } else {
            let chain = claim
                .network
                .strip_prefix("eip155:")
                .and_then(|id| id.parse::<u64>().ok())
                .and_then(|id| chains.by_chain_id(id));
            let Some(chain) = chain else {
                tracing::warn!(network = claim.network, "no chain configured to look up an abandoned payment on");
                found.pending += 1;
                continue;
            };
            if is_permit2_nonce(&claim.authorization.nonce) {
                let payee = pay_to.iter().find(|(network, _)| *network == claim.network).map(|(_, to)| to.as_str());
                look_up_upto(chain, &claim, payee).await
            } else {
                look_up(chain, &claim).await.map(|tx| tx.map(|tx| (tx, None)))
            }
        };
        match looked_up {
            Ok(Some((tx_hash, charged))) => {
                let mut decision =
                    Decision::new(claim.route.clone(), claim.operation.clone().unwrap_or_default(), Outcome::Paid);
                decision.at = OffsetDateTime::from_unix_timestamp_nanos(i128::from(claim.claimed_at_ms) * 1_000_000)
                    .unwrap_or(decision.at);
                decision.quote = claim.amount;
                decision.charged = charged;
                decision.payer = Some(claim.authorization.authorizer.clone());
                decision.network = Some(claim.network.clone());
                decision.tx_hash = Some(tx_hash.clone());
                decision.client = claim.client.clone();
                decision.payment_key = Some(claim.key);
                decision.finish = Some(ClosedPayment {
                    key: claim.key,
                    outcome: PaymentOutcome::Settled { tx_hash: tx_hash.clone() },
                    payer: Some(claim.authorization.authorizer.clone()),
                });
                match store.record(&decision).await {
                    Ok(_) => {
                        tracing::warn!(
                            tx = tx_hash,
                            route = claim.route,
                            "a settlement left out by a crash was found on chain and recorded"
                        );
                        found.settled += 1;
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "recording a settlement found on chain failed");
                        found.pending += 1;
                    }
                }
            }
            Ok(None) if claim.authorization.valid_before <= now => {
                let reason = "checked on chain: the authorization was never used and has expired";
                if let Err(e) = store.mark_chain_checked(&claim.key, reason).await {
                    tracing::error!(error = %e, "noting an abandoned payment as checked failed");
                }
                found.never_used += 1;
            }
            Ok(None) => found.pending += 1,
            Err(e) => {
                tracing::warn!(error = %e, network = claim.network, "looking up an abandoned payment failed; tried again later");
                found.pending += 1;
            }
        }
    }
    Ok(found)
}

/// Whether a claim's nonce is Permit2's (decimal digits) rather than EIP-3009's (0x hex).
fn is_permit2_nonce(nonce: &str) -> bool {
    !nonce.is_empty() && nonce.bytes().all(|b| b.is_ascii_digit())
}

/// The `upto` settlement of the claim: `None` while Permit2's nonce is unused; else the
/// transaction among the token's transfers from the payer to `pay_to` (newest first, since
/// the claim) whose input carries the nonce, and the amount it moved. Used but not found
/// (or no `pay_to` known): `unknown`, charge unknown.
async fn look_up_upto(
    chain: &EvmChain,
    claim: &UnresolvedClaim,
    pay_to: Option<&str>,
) -> Result<Option<Found>, String> {
    let auth = &claim.authorization;
    let authorizer: Address =
        auth.authorizer.parse().map_err(|_| format!("authorizer `{}` is not an address", auth.authorizer))?;
    let nonce = U256::from_str_radix(&auth.nonce, 10).map_err(|_| format!("nonce `{}` is not a number", auth.nonce))?;
    let (word, bit) = paperchain_protocol::upto_evm::nonce_bit(nonce);
    let data = nonceBitmapCall { owner: authorizer, wordPos: word }.abi_encode();
    let permit2 = paperchain_protocol::upto_evm::PERMIT2;
    let answer: String = chain
        .request("eth_call", (json!({ "to": permit2, "data": alloy::hex::encode_prefixed(data) }), "latest"))
        .await
        .map_err(|e| e.message)?;
    let bytes = alloy::hex::decode(&answer).map_err(|_| format!("nonceBitmap answered `{answer}`"))?;
    let bitmap = nonceBitmapCall::abi_decode_returns(&bytes).map_err(|e| format!("nonceBitmap: {e}"))?;
    if !bitmap.bit(bit) {
        return Ok(None);
    }
    let unknown = Ok(Some(("unknown".to_string(), None)));
    let Some(pay_to) = pay_to.and_then(|p| p.parse::<Address>().ok()) else { return unknown };
    let asset: Address = auth.asset.parse().map_err(|_| format!("asset `{}` is not an address", auth.asset))?;
    let topics = json!([Transfer::SIGNATURE_HASH, authorizer.into_word(), pay_to.into_word()]);
    let nonce_word = alloy::hex::encode(B256::from(nonce));
    for log in logs_since_claim(chain, claim, asset, topics).await? {
        let Some(hash) = log["transactionHash"].as_str() else { continue };
        let tx: Value = chain.request("eth_getTransactionByHash", [hash]).await.map_err(|e| e.message)?;
        if !tx["input"].as_str().unwrap_or_default().to_ascii_lowercase().contains(&nonce_word) {
            continue;
        }
        let value = log["data"].as_str().and_then(|d| U256::from_str_radix(d.trim_start_matches("0x"), 16).ok());
        return Ok(Some((hash.to_ascii_lowercase(), value.and_then(|v| u64::try_from(v).ok()))));
    }
    unknown
}

/// `asset`'s logs matching `topics`, newest first, from the latest block back to the claim's
/// time less a margin (a few: a nonce's own, or one payer's transfers to the service since).
async fn logs_since_claim(
    chain: &EvmChain,
    claim: &UnresolvedClaim,
    asset: Address,
    topics: Value,
) -> Result<Vec<Value>, String> {
    let latest: alloy::primitives::U64 = chain.request("eth_blockNumber", ()).await.map_err(|e| e.message)?;
    let latest = latest.to::<u64>();
    // The claim's block at the latest: one block a second is more than any chain paid on makes.
    let age = Duration::from_millis(
        u64::try_from(OffsetDateTime::now_utc().unix_timestamp() * 1000 - claim.claimed_at_ms).unwrap_or(0),
    );
    let earliest = latest.saturating_sub(age.as_secs() + MARGIN_BLOCKS);
    let mut found = Vec::new();
    let mut to = latest;
    loop {
        let from = to.saturating_sub(LOG_CHUNK - 1).max(earliest);
        let filter = json!({
            "address": asset, "topics": topics,
            "fromBlock": format!("{from:#x}"), "toBlock": format!("{to:#x}"),
        });
        let logs: Vec<Value> = chain.request("eth_getLogs", [filter]).await.map_err(|e| e.message)?;
        found.extend(logs.into_iter().rev());
        if from <= earliest {
            return Ok(found);
        }
        to = from - 1;
    }
}

/// The Solana transaction of the claim: the payer's successful transaction whose memo is the
/// claim's; `None` while there is none.
async fn look_up_solana(clusters: &Clusters, claim: &UnresolvedClaim) -> Result<Option<String>, String> {
    let cluster = clusters.of_caip2(&claim.network)?;
    let auth = &claim.authorization;
    transaction_with_memo(&cluster, &auth.authorizer, &auth.nonce).await.map_err(|e| e.message)
}

/// The transaction that used the claim's authorization; `None` while it is unused. A used
/// authorization whose log is not in the searched blocks is recorded as `unknown`.
async fn look_up(chain: &EvmChain, claim: &UnresolvedClaim) -> Result<Option<String>, String> {
    let auth = &claim.authorization;
    let asset: Address = auth.asset.parse().map_err(|_| format!("asset `{}` is not an address", auth.asset))?;
    let authorizer: Address =
        auth.authorizer.parse().map_err(|_| format!("authorizer `{}` is not an address", auth.authorizer))?;
    let nonce: B256 = auth.nonce.parse().map_err(|_| format!("nonce `{}` is not 32 bytes", auth.nonce))?;
    let data = authorizationStateCall { authorizer, nonce }.abi_encode();
    let answer: String = chain
        .request("eth_call", (json!({ "to": asset, "data": alloy::hex::encode_prefixed(data) }), "latest"))
        .await
        .map_err(|e| e.message)?;
    let bytes = alloy::hex::decode(&answer).map_err(|_| format!("authorizationState answered `{answer}`"))?;
    let used = authorizationStateCall::abi_decode_returns(&bytes).map_err(|e| format!("authorizationState: {e}"))?;
    if !used {
        return Ok(None);
    }
    let topics = json!([AuthorizationUsed::SIGNATURE_HASH, authorizer.into_word(), nonce]);
    let logs = logs_since_claim(chain, claim, asset, topics).await?;
    let hash = logs.iter().find_map(|log| log["transactionHash"].as_str());
    Ok(Some(hash.map_or_else(|| "unknown".into(), str::to_ascii_lowercase)))
}

//! Paying an x402 `exact` requirement on Solana: the payer's transfer, built from what the
//! chain says (the mint's program and decimals, a recent blockhash) and signed with the
//! wallet's Solana key; the facilitator named in the requirement adds the fee payer's
//! signature and sends it. Read through the engine's Solana clusters (their configured RPC
//! endpoints and genesis checks), so nothing here speaks to a node by itself.
//!
//! The transfer's memo is a random nonce, and the ledger keeps it as the payment's nonce:
//! when an answer is lost, it finds the transaction on chain
//! ([`crate::chain::solana_payment`]).

use paperchain_engine_core::solana::token::{self, associated_token_address};
use paperchain_engine_core::solana::{Cluster, Clusters};
use paperchain_protocol::SignError;
use paperchain_protocol::exact_svm::{self, ExactSvmPayload, SigningKey, Transfer};
use paperchain_protocol::x402::{Offer, PaymentPayload, ResourceInfo};
use serde_json::{Value, json};

/// Compute units the transfer may use: a `TransferChecked` and a memo use under 10,000.
/// The same limit and unit price as the reference x402 client (`@x402/svm`), so facilitators
/// see what they expect.
pub const COMPUTE_UNIT_LIMIT: u32 = 20_000;

/// Micro-lamports per compute unit: the smallest priority fee there is.
pub const COMPUTE_UNIT_PRICE: u64 = 1;

pub use paperchain_protocol::exact_svm::BLOCKHASH_LIFETIME_SECONDS;

/// A signed Solana payment, with what the ledger keeps of it.
#[derive(Clone, Debug)]
pub struct SignedPayment {
    /// The PaymentPayload.
    pub payload: PaymentPayload<ExactSvmPayload, Value>,
    /// The payer's address.
    pub payer: String,
    /// The memo's nonce: finds the transaction on chain.
    pub memo: String,
    /// The payer's token account the amount leaves from.
    pub source: String,
    /// The last block height at which the transaction can land; after it, never.
    pub last_valid_block_height: u64,
}

/// Signs the payment of `requirement` (one entry of a 402's `accepts`) with `key`.
pub async fn sign(
    clusters: &Clusters,
    key: &SigningKey,
    requirement: &Offer,
    resource: Option<&ResourceInfo>,
) -> Result<SignedPayment, SignError> {
    let asked = exact_svm::Terms::read(requirement)?;
    let cluster = clusters.of_caip2(&asked.network).map_err(SignError::Unsupported)?;
    let owner = exact_svm::address_of(key);
    if owner == asked.fee_payer {
        return Err(SignError::Unsupported("the facilitator's fee payer is this wallet: it would pay itself".into()));
    }
    let (program, decimals) = mint(&cluster, &asked.asset).await?;
    let ata = |holder: &exact_svm::Address, what: &str| {
        associated_token_address(holder, &asked.asset, program)
            .ok_or_else(|| SignError::Malformed(format!("{what} has no associated token account address")))
    };
    let source = ata(&owner, "the payer")?;
    let destination = ata(&asked.pay_to, "the requirement's `payTo`")?;
    let (blockhash, last_valid_block_height) = latest_blockhash(&cluster).await?;
    let memo = exact_svm::random_memo();
    let transfer = Transfer {
        fee_payer: asked.fee_payer,
        source,
        destination,
        mint: asked.asset,
        token_program: exact_svm::program(program.id()),
        amount: asked.amount,
        decimals,
        recent_blockhash: blockhash,
        compute_unit_limit: COMPUTE_UNIT_LIMIT,
        compute_unit_price: COMPUTE_UNIT_PRICE,
        memo: memo.clone(),
    };
    let wire = exact_svm::sign_transfer(key, &transfer)?;
    Ok(SignedPayment {
        payload: exact_svm::payment(requirement, resource, &wire),
        payer: exact_svm::to_base58(&owner),
        memo,
        source: exact_svm::to_base58(&source),
        last_valid_block_height,
    })
}

/// The mint's program and decimals, read from the chain.
async fn mint(cluster: &Cluster, mint: &exact_svm::Address) -> Result<(token::TokenProgram, u8), SignError> {
    let address = exact_svm::to_base58(mint);
    let chain = |e: paperchain_engine_core::EngineError| {
        SignError::Unsupported(format!("reading the mint {address}: {}", e.message))
    };
    let (account, _) = cluster.deadline(cluster.account(&address, "jsonParsed")).await.map_err(chain)?;
    let account =
        account.ok_or_else(|| SignError::Unsupported(format!("the requirement's `asset` {address} does not exist")))?;
    let mint = token::mint(&account)
        .map_err(chain)?
        .ok_or_else(|| SignError::Unsupported(format!("the requirement's `asset` {address} is not a token mint")))?;
    Ok((mint.program, mint.decimals))
}

/// A recent blockhash and the last block height at which it is valid.
async fn latest_blockhash(cluster: &Cluster) -> Result<([u8; 32], u64), SignError> {
    let answer = cluster
        .deadline(cluster.raw_request("getLatestBlockhash", json!([{"commitment": "confirmed"}])))
        .await
        .map_err(|e| SignError::Unsupported(format!("asking for a recent blockhash: {}", e.message)))?;
    let value = &answer["value"];
    let blockhash = value["blockhash"]
        .as_str()
        .and_then(|text| exact_svm::address(text, "blockhash").ok())
        .ok_or_else(|| SignError::Malformed(format!("the node's blockhash is not 32 bytes of base58: {value}")))?;
    let height = value["lastValidBlockHeight"]
        .as_u64()
        .ok_or_else(|| SignError::Malformed(format!("the node's answer has no lastValidBlockHeight: {value}")))?;
    Ok((blockhash, height))
}

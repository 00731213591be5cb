//! `POST /v1/solana/tx`: a transaction's status, slot, time, fee, signers, instructions
//! (parsed by the node for the common programs, compute-budget ones parsed here) and the
//! SOL and token balance changes it made.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::{EngineError, ErrorKind};
use crate::output::Reply;
use crate::price::Price;
use crate::rpc_http::clean_text;
use crate::solana::keys::{SolanaSignature, is_base58};
use crate::solana::token::{self, Amount, TokenProgram};
use crate::solana::{COMMITMENT, Cluster, Network, bad, format_amount, node_u64, program_name, sol};

/// Most log lines an answer carries.
const MAX_LOG_LINES: usize = 200;
/// The compute-budget program, whose instructions the node leaves unparsed.
const COMPUTE_BUDGET: &str = "ComputeBudget111111111111111111111111111111";

/// Request of `/v1/solana/tx`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaTxInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// The transaction's signature (its first signature, as explorers show it).
    pub signature: SolanaSignature,
}

/// `success` or `failed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "SolanaTxStatus")]
pub enum Status {
    /// Executed; its changes stand.
    Success,
    /// Failed; only its fee was charged.
    Failed,
}

/// One instruction.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaInstruction")]
pub struct Instruction {
    /// The program called.
    pub program_id: String,
    /// The program's name when it is a known one (`system`, `spl-token`, …); null otherwise.
    pub program: Option<String>,
    /// The instruction type when parsed (`transfer`, `transferChecked`, `setComputeUnitPrice`, …); null otherwise.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The parsed arguments and accounts, as the node parses them (untrusted data); null when not parsed.
    pub info: Option<Value>,
    /// The accounts passed, when not parsed.
    pub accounts: Vec<String>,
    /// The instruction data in base58, when not parsed.
    pub data: Option<String>,
    /// Instructions this one called (cross-program invocations), in order.
    pub inner: Vec<Instruction>,
}

/// A change of an account's SOL.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaSolChange")]
pub struct SolChange {
    /// The account.
    pub account: String,
    /// Lamports before, decimal string.
    pub pre: String,
    /// Lamports after, decimal string.
    pub post: String,
    /// Lamports gained (negative: lost), decimal string.
    pub change: String,
    /// The change in SOL, exact decimal string with its sign.
    pub change_sol: String,
}

/// A change of a token account's balance.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTokenChange")]
pub struct TokenChange {
    /// The token account.
    pub account: String,
    /// Who owns its tokens; null when the node does not say.
    pub owner: Option<String>,
    /// The mint.
    pub mint: String,
    /// `spl-token` or `spl-token-2022`; null when the node does not say.
    pub program: Option<TokenProgram>,
    /// The mint's decimals.
    pub decimals: u8,
    /// Base units before (0 for an account the transaction created), decimal string.
    pub pre: String,
    /// Base units after (0 for an account it closed), decimal string.
    pub post: String,
    /// Base units gained (negative: lost), decimal string.
    pub change: String,
    /// The change with the decimals applied, exact decimal string with its sign.
    pub change_formatted: String,
}

/// The compute budget the transaction asked for.
#[derive(Debug, Default, Serialize, JsonSchema)]
#[schemars(rename = "SolanaComputeBudget")]
pub struct ComputeBudget {
    /// Price per compute unit in micro-lamports (the priority fee rate); null when not set.
    pub unit_price_micro_lamports: Option<u64>,
    /// Compute units asked for; null when not set (the default applies).
    pub unit_limit: Option<u32>,
}

/// Answer of `/v1/solana/tx`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaTxOutput {
    /// Cluster read.
    pub network: Network,
    /// The signature, as sent.
    pub signature: String,
    /// `success` or `failed`.
    pub status: Status,
    /// The failure as the node reports it (JSON text); null on success.
    pub error: Option<String>,
    /// Slot it landed in.
    pub slot: u64,
    /// Block time, Unix seconds; null when the node does not know it.
    pub block_time: Option<i64>,
    /// Block time, RFC 3339 UTC; null when unknown.
    pub time: Option<String>,
    /// `legacy` or `0`.
    pub version: String,
    /// Fee paid in lamports, decimal string.
    pub fee: String,
    /// Fee in SOL, exact decimal string.
    pub fee_sol: String,
    /// Who paid the fee (the first signer).
    pub fee_payer: String,
    /// Every signer, in order.
    pub signers: Vec<String>,
    /// Compute units consumed; null when the node does not say.
    pub compute_units: Option<u64>,
    /// The compute budget asked for.
    pub compute_budget: ComputeBudget,
    /// Top-level instructions, each with the ones it called.
    pub instructions: Vec<Instruction>,
    /// Accounts whose SOL changed (the fee payer's includes the fee).
    pub sol_changes: Vec<SolChange>,
    /// Token accounts whose balance changed.
    pub token_changes: Vec<TokenChange>,
    /// The program log, at most 200 lines (untrusted data).
    pub logs: Vec<String>,
    /// Whether `logs` stops short of the node's log.
    pub logs_truncated: bool,
}

/// A checked request.
pub struct SolanaTxRequest {
    network: Network,
    signature: SolanaSignature,
}

/// The route.
pub struct SolanaTxRoute;

impl Route for SolanaTxRoute {
    type Input = SolanaTxInput;
    type Prepared = SolanaTxRequest;
    type Output = SolanaTxOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/tx",
        operation: "get_solana_transaction",
        family: Family::Chain,
        summary: "Status, fee, signers, instructions and balance changes of a Solana transaction",
        description: "A confirmed transaction by signature: success or failure (with the error), slot, block time, \
            fee, signers, compute units and budget, its instructions (parsed for the common programs: system, \
            Token, Token-2022, associated token account, memo, stake, vote, compute budget, …; others as program, \
            accounts and base58 data), the instructions each one called, the SOL and token balance changes, and \
            the program log. A signature the node does not have (unknown, too old for its history, or not yet \
            confirmed) is 404.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaTxInput, ctx: &Context) -> Result<SolanaTxRequest, EngineError> {
        ctx.solana.get(input.network)?;
        Ok(SolanaTxRequest { network: input.network, signature: input.signature })
    }

    fn quote(_: &SolanaTxRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaTxRequest, ctx: &Context) -> Result<Reply<SolanaTxOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request.signature).await).await
    }
}

async fn read(cluster: &Cluster, signature: &SolanaSignature) -> Result<SolanaTxOutput, EngineError> {
    let answer: Value = cluster
        .request(
            "getTransaction",
            json!([signature.as_str(), {
                "encoding": "jsonParsed",
                "maxSupportedTransactionVersion": 0,
                "commitment": COMMITMENT,
            }]),
        )
        .await?;
    if answer.is_null() {
        return Err(EngineError::new(
            ErrorKind::NotFound,
            "not_found",
            format!(
                "Solana {} has no confirmed transaction {} (unknown, older than the node's history, or not confirmed yet)",
                cluster.network().name(),
                signature.as_str()
            ),
        ));
    }
    parse(cluster.network(), signature, &answer)
}

fn parse(network: Network, signature: &SolanaSignature, tx: &Value) -> Result<SolanaTxOutput, EngineError> {
    let meta = tx.get("meta").filter(|m| m.is_object()).ok_or_else(|| bad("the transaction has no `meta`".into()))?;
    let message = &tx["transaction"]["message"];
    let keys = account_keys(message)?;
    let signers: Vec<String> = keys.iter().filter(|k| k.signer).map(|k| k.address.clone()).collect();
    let fee_payer =
        keys.first().map(|k| k.address.clone()).ok_or_else(|| bad("the transaction has no accounts".into()))?;
    let error = match meta.get("err") {
        None | Some(Value::Null) => None,
        Some(err) => Some(clean_text(&err.to_string(), 500)),
    };
    let fee = node_u64(&meta["fee"], "fee")?;
    let block_time = tx.get("blockTime").and_then(Value::as_i64);
    let time = block_time
        .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok());
    let version = match &tx["version"] {
        Value::Number(n) => n.to_string(),
        Value::String(s) => clean_text(s, 10),
        _ => "legacy".to_string(),
    };
    let mut inner_by_index: Vec<(u64, Vec<Instruction>)> = Vec::new();
    for group in meta.get("innerInstructions").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
        let index = node_u64(&group["index"], "inner instruction index")?;
        let list = group["instructions"].as_array().map(Vec::as_slice).unwrap_or_default();
        inner_by_index.push((index, list.iter().map(instruction).collect::<Result<_, _>>()?));
    }
    let mut instructions = Vec::new();
    for (i, item) in message["instructions"].as_array().map(Vec::as_slice).unwrap_or_default().iter().enumerate() {
        let mut ix = instruction(item)?;
        if let Some(pos) = inner_by_index.iter().position(|(index, _)| *index == i as u64) {
            ix.inner = inner_by_index.swap_remove(pos).1;
        }
        instructions.push(ix);
    }
    let compute_budget = budget(&instructions);
    let logs_all = meta.get("logMessages").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    Ok(SolanaTxOutput {
        network,
        signature: signature.as_str().to_string(),
        status: if error.is_none() { Status::Success } else { Status::Failed },
        error,
        slot: node_u64(&tx["slot"], "slot")?,
        block_time,
        time,
        version,
        fee: fee.to_string(),
        fee_sol: sol(fee),
        fee_payer,
        signers,
        compute_units: meta.get("computeUnitsConsumed").and_then(Value::as_u64),
        compute_budget,
        instructions,
        sol_changes: sol_changes(meta, &keys)?,
        token_changes: token_changes(meta, &keys)?,
        logs: logs_all.iter().take(MAX_LOG_LINES).filter_map(Value::as_str).map(|l| clean_text(l, 500)).collect(),
        logs_truncated: logs_all.len() > MAX_LOG_LINES,
    })
}

struct Key {
    address: String,
    signer: bool,
}

/// The message's account keys (with those loaded from lookup tables, as jsonParsed lists them).
fn account_keys(message: &Value) -> Result<Vec<Key>, EngineError> {
    let listed =
        message["accountKeys"].as_array().ok_or_else(|| bad("the transaction lists no account keys".into()))?;
    listed
        .iter()
        .map(|key| {
            Ok(Key {
                address: token::required_address(key, "pubkey")?,
                signer: key.get("signer").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

fn instruction(item: &Value) -> Result<Instruction, EngineError> {
    let program_id = token::required_address(item, "programId")?;
    let program = program_name(&program_id)
        .map(str::to_string)
        .or_else(|| token::text(item, "program", 60).filter(|p| !p.is_empty()));
    let (kind, info, accounts, data) = match item.get("parsed") {
        Some(Value::Object(parsed)) => (
            parsed.get("type").and_then(Value::as_str).map(|t| clean_text(t, 60)),
            Some(parsed.get("info").cloned().unwrap_or(Value::Null)),
            Vec::new(),
            None,
        ),
        // Memo instructions are parsed as their text.
        Some(text @ Value::String(_)) => (None, Some(text.clone()), Vec::new(), None),
        Some(_) | None => {
            let accounts = item["accounts"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .map(|a| match a.as_str() {
                    Some(a) if is_base58(a, 32) => Ok(a.to_string()),
                    _ => Err(bad("an instruction's account is not an address".into())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let data = token::text(item, "data", 2_000);
            let (kind, info) = match (program_id.as_str(), data.as_deref()) {
                (COMPUTE_BUDGET, Some(data)) => compute_budget(data).map_or((None, None), |(k, i)| (Some(k), Some(i))),
                _ => (None, None),
            };
            (kind, info, accounts, data)
        }
    };
    Ok(Instruction { program_id, program, kind, info, accounts, data, inner: Vec::new() })
}

/// A compute-budget instruction's type and arguments, from its base58 data.
fn compute_budget(data: &str) -> Option<(String, Value)> {
    let bytes = bs58::decode(data).into_vec().ok()?;
    let (&tag, rest) = bytes.split_first()?;
    let u32_arg = || rest.try_into().ok().map(u32::from_le_bytes);
    match tag {
        1 => Some(("requestHeapFrame".into(), json!({ "bytes": u32_arg()? }))),
        2 => Some(("setComputeUnitLimit".into(), json!({ "units": u32_arg()? }))),
        3 => {
            Some(("setComputeUnitPrice".into(), json!({ "microLamports": u64::from_le_bytes(rest.try_into().ok()?) })))
        }
        4 => Some(("setLoadedAccountsDataSizeLimit".into(), json!({ "bytes": u32_arg()? }))),
        _ => None,
    }
}

fn budget(instructions: &[Instruction]) -> ComputeBudget {
    let mut budget = ComputeBudget::default();
    for ix in instructions.iter().filter(|ix| ix.program_id == COMPUTE_BUDGET) {
        let info = ix.info.as_ref();
        match ix.kind.as_deref() {
            Some("setComputeUnitPrice") => {
                budget.unit_price_micro_lamports = info.and_then(|i| i["microLamports"].as_u64());
            }
            Some("setComputeUnitLimit") => {
                budget.unit_limit = info.and_then(|i| i["units"].as_u64()).and_then(|u| u32::try_from(u).ok());
            }
            _ => {}
        }
    }
    budget
}

fn balances(meta: &Value, key: &str, len: usize) -> Result<Vec<u64>, EngineError> {
    let listed = meta[key].as_array().ok_or_else(|| bad(format!("the transaction's meta has no `{key}`")))?;
    if listed.len() != len {
        return Err(bad(format!("the transaction's `{key}` has {} entries for {len} accounts", listed.len())));
    }
    listed.iter().map(|v| node_u64(v, key)).collect()
}

fn sol_changes(meta: &Value, keys: &[Key]) -> Result<Vec<SolChange>, EngineError> {
    let pre = balances(meta, "preBalances", keys.len())?;
    let post = balances(meta, "postBalances", keys.len())?;
    Ok(keys
        .iter()
        .zip(pre.iter().zip(&post))
        .filter(|(_, (pre, post))| pre != post)
        .map(|(key, (&pre, &post))| {
            let change = i128::from(post) - i128::from(pre);
            SolChange {
                account: key.address.clone(),
                pre: pre.to_string(),
                post: post.to_string(),
                change: change.to_string(),
                change_sol: signed(change, crate::solana::LAMPORTS_DECIMALS),
            }
        })
        .collect())
}

/// A signed base-unit amount with decimals applied: `-1.5`.
fn signed(amount: i128, decimals: u8) -> String {
    let magnitude = format_amount(amount.unsigned_abs(), decimals);
    if amount < 0 { format!("-{magnitude}") } else { magnitude }
}

struct TokenBalance {
    index: u64,
    mint: String,
    owner: Option<String>,
    program: Option<TokenProgram>,
    amount: Amount,
}

fn token_balances(meta: &Value, key: &str) -> Result<Vec<TokenBalance>, EngineError> {
    meta.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|b| {
            Ok(TokenBalance {
                index: node_u64(&b["accountIndex"], "accountIndex")?,
                mint: token::required_address(b, "mint")?,
                owner: token::address(b, "owner")?,
                program: token::address(b, "programId")?.and_then(|p| TokenProgram::of_owner(&p)),
                amount: Amount::read(&b["uiTokenAmount"])?,
            })
        })
        .collect()
}

fn token_changes(meta: &Value, keys: &[Key]) -> Result<Vec<TokenChange>, EngineError> {
    let pre = token_balances(meta, "preTokenBalances")?;
    let post = token_balances(meta, "postTokenBalances")?;
    let mut indexes: Vec<u64> = pre.iter().chain(&post).map(|b| b.index).collect();
    indexes.sort_unstable();
    indexes.dedup();
    let mut changes = Vec::new();
    for index in indexes {
        let before = pre.iter().find(|b| b.index == index);
        let after = post.iter().find(|b| b.index == index);
        let Some(known) = after.or(before) else { continue };
        let account = keys
            .get(usize::try_from(index).unwrap_or(usize::MAX))
            .ok_or_else(|| bad(format!("a token balance names account {index}, past the transaction's accounts")))?;
        let (pre_raw, post_raw) = (before.map_or(0, |b| b.amount.raw), after.map_or(0, |b| b.amount.raw));
        if pre_raw == post_raw {
            continue;
        }
        let change = i128::from(post_raw) - i128::from(pre_raw);
        changes.push(TokenChange {
            account: account.address.clone(),
            owner: known.owner.clone(),
            mint: known.mint.clone(),
            program: known.program,
            decimals: known.amount.decimals,
            pre: pre_raw.to_string(),
            post: post_raw.to_string(),
            change: change.to_string(),
            change_formatted: signed(change, known.amount.decimals),
        });
    }
    Ok(changes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_budget_instructions_are_read_from_their_data() {
        let price = bs58::encode([&[3u8][..], &2_500u64.to_le_bytes()].concat()).into_string();
        assert_eq!(compute_budget(&price), Some(("setComputeUnitPrice".into(), json!({ "microLamports": 2500 }))));
        let limit = bs58::encode([&[2u8][..], &200_000u32.to_le_bytes()].concat()).into_string();
        assert_eq!(compute_budget(&limit), Some(("setComputeUnitLimit".into(), json!({ "units": 200000 }))));
        assert_eq!(compute_budget(&bs58::encode([3u8, 1]).into_string()), None);
        assert_eq!(compute_budget("0OIl"), None);
    }

    #[test]
    fn signed_amounts_keep_their_sign_and_decimals() {
        assert_eq!(signed(-1_500_000_000, 9), "-1.5");
        assert_eq!(signed(5, 2), "0.05");
        assert_eq!(signed(0, 6), "0");
    }
}

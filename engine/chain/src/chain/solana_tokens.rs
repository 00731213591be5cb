//! `POST /v1/solana/tokens`: every token account an owner has under the Token and
//! Token-2022 programs, with decimals and amounts.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;
use crate::price::Price;
use crate::solana::keys::SolanaAddress;
use crate::solana::token::{self, TokenAccount, TokenProgram};
use crate::solana::{COMMITMENT, Cluster, Network, node_u64};

/// Most accounts one answer lists; an owner with more gets the first ones by program, mint
/// and address, and `truncated`.
pub const MAX_ACCOUNTS: usize = 1_000;

/// Request of `/v1/solana/tokens`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaTokensInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// The owner (a wallet, or any account that owns token accounts).
    pub owner: SolanaAddress,
    /// Also list accounts holding nothing (default false).
    #[serde(default)]
    pub include_empty: bool,
}

/// Who may spend from a token account.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTokenDelegate")]
pub struct Delegate {
    /// The delegate.
    pub address: String,
    /// How much it may still move, base units, decimal string.
    pub raw: String,
}

/// One token account.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTokenAccount")]
pub struct TokenAccountOutput {
    /// The token account's address.
    pub account: String,
    /// The mint of its tokens.
    pub mint: String,
    /// `spl-token` or `spl-token-2022`.
    pub program: TokenProgram,
    /// The mint's decimals.
    pub decimals: u8,
    /// Balance in base units, decimal string.
    pub raw: String,
    /// Balance with the decimals applied, exact decimal string.
    pub formatted: String,
    /// The node's UI amount: for Token-2022 interest-bearing or scaled mints it includes the interest or multiplier; null when the node gives none.
    pub ui_amount: Option<String>,
    /// `initialized` or `frozen`.
    pub state: String,
    /// Whether it holds wrapped SOL.
    pub native: bool,
    /// Who may spend from it; null when no one.
    pub delegate: Option<Delegate>,
    /// Who may close it, when not the owner; null otherwise.
    pub close_authority: Option<String>,
    /// Its Token-2022 account extensions by name (`transferFeeAmount`, `immutableOwner`, …).
    pub extensions: Vec<String>,
}

impl From<TokenAccount> for TokenAccountOutput {
    fn from(account: TokenAccount) -> Self {
        TokenAccountOutput {
            formatted: account.amount.formatted(),
            raw: account.amount.raw.to_string(),
            decimals: account.amount.decimals,
            ui_amount: account.amount.ui,
            account: account.address,
            mint: account.mint,
            program: account.program,
            state: account.state,
            native: account.native,
            delegate: account.delegate.map(|(address, amount)| Delegate { address, raw: amount.raw.to_string() }),
            close_authority: account.close_authority,
            extensions: account.extensions,
        }
    }
}

/// Answer of `/v1/solana/tokens`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaTokensOutput {
    /// Cluster read.
    pub network: Network,
    /// The owner, as sent.
    pub owner: String,
    /// The accounts, by program, then mint, then address.
    pub accounts: Vec<TokenAccountOutput>,
    /// How many accounts the owner has (empty ones counted only with `include_empty`).
    pub total: u32,
    /// Whether `accounts` stops at 1,000 of them.
    pub truncated: bool,
    /// The slot the accounts were read at (the later of the two programs' reads).
    pub slot: u64,
}

/// A checked request.
pub struct SolanaTokensRequest {
    network: Network,
    owner: SolanaAddress,
    include_empty: bool,
}

/// The route.
pub struct SolanaTokensRoute;

impl Route for SolanaTokensRoute {
    type Input = SolanaTokensInput;
    type Prepared = SolanaTokensRequest;
    type Output = SolanaTokensOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/tokens",
        operation: "get_solana_token_accounts",
        family: Family::Chain,
        summary: "Every token account of a Solana owner (Token and Token-2022)",
        description: "Every token account the owner has under the classic Token and the Token-2022 programs: mint, \
            decimals, balance in base units and with decimals applied, the node's UI amount (which includes \
            Token-2022 interest), state, delegate and account extensions. Empty accounts are left out unless \
            `include_empty`. At most 1,000 accounts are listed, sorted by program, mint and address; `total` and \
            `truncated` say when there are more.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaTokensInput, ctx: &Context) -> Result<SolanaTokensRequest, EngineError> {
        ctx.solana.get(input.network)?;
        Ok(SolanaTokensRequest { network: input.network, owner: input.owner, include_empty: input.include_empty })
    }

    fn quote(_: &SolanaTokensRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaTokensRequest, ctx: &Context) -> Result<Reply<SolanaTokensOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request).await).await
    }
}

async fn read(cluster: &Cluster, request: &SolanaTokensRequest) -> Result<SolanaTokensOutput, EngineError> {
    let owner = request.owner.as_str();
    let ask = |program: TokenProgram| {
        cluster.request::<Value>(
            "getTokenAccountsByOwner",
            json!([owner, { "programId": program.id() }, { "encoding": "jsonParsed", "commitment": COMMITMENT }]),
        )
    };
    let (classic, extended) = tokio::try_join!(ask(TokenProgram::Token), ask(TokenProgram::Token2022))?;
    let mut accounts = Vec::new();
    let mut slot = 0;
    for (program, answer) in [(TokenProgram::Token, &classic), (TokenProgram::Token2022, &extended)] {
        slot = slot.max(node_u64(&answer["context"]["slot"], "slot")?);
        for item in answer["value"].as_array().map(Vec::as_slice).unwrap_or_default() {
            let Some(account) = token::token_account(item)? else { continue };
            if account.program != program || account.owner != owner {
                return Err(crate::solana::bad(format!(
                    "the node listed token account {} of another program or owner",
                    account.address
                )));
            }
            if account.amount.raw > 0 || request.include_empty {
                accounts.push(TokenAccountOutput::from(account));
            }
        }
    }
    accounts.sort_by(|a, b| (a.program, &a.mint, &a.account).cmp(&(b.program, &b.mint, &b.account)));
    let total = u32::try_from(accounts.len()).unwrap_or(u32::MAX);
    let truncated = accounts.len() > MAX_ACCOUNTS;
    accounts.truncate(MAX_ACCOUNTS);
    Ok(SolanaTokensOutput { network: cluster.network(), owner: owner.to_string(), accounts, total, truncated, slot })
}

//! `POST /v1/solana/balance`: an address's SOL balance, or its balance of one SPL token
//! (Token or Token-2022) summed over every token account it owns for that mint.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;
use crate::price::Price;
use crate::solana::keys::SolanaAddress;
use crate::solana::token::{self, TokenProgram};
use crate::solana::{COMMITMENT, Cluster, Network, format_amount, node_u64, sol};

/// Request of `/v1/solana/balance`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaBalanceInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// The wallet (or any owner account) whose balance is read.
    pub address: SolanaAddress,
    /// An SPL token mint (Token or Token-2022); omit (or null) for the SOL balance.
    #[serde(default)]
    pub mint: Option<SolanaAddress>,
}

/// `sol` or `spl`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(rename = "SolanaBalanceAsset")]
pub enum Asset {
    /// Lamports of the account itself.
    Sol,
    /// Tokens of one mint in the owner's token accounts.
    Spl,
}

/// Answer of `/v1/solana/balance`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaBalanceOutput {
    /// Cluster read.
    pub network: Network,
    /// The address, as sent.
    pub address: String,
    /// `sol` or `spl`.
    pub asset: Asset,
    /// The mint (spl only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mint: Option<String>,
    /// The mint's program (spl only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub program: Option<TokenProgram>,
    /// Decimals: 9 for SOL, the mint's for a token.
    pub decimals: u8,
    /// Balance in base units (lamports for SOL), decimal string.
    pub raw: String,
    /// Balance with the decimals applied, exact decimal string.
    pub formatted: String,
    /// How many token accounts of this mint the address owns (spl only; 0 is a zero balance).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub accounts: Option<u32>,
    /// The slot the balance was read at.
    pub slot: u64,
}

/// A checked balance request.
pub struct SolanaBalanceRequest {
    network: Network,
    address: SolanaAddress,
    mint: Option<SolanaAddress>,
}

/// The route.
pub struct SolanaBalanceRoute;

impl Route for SolanaBalanceRoute {
    type Input = SolanaBalanceInput;
    type Prepared = SolanaBalanceRequest;
    type Output = SolanaBalanceOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/balance",
        operation: "get_solana_balance",
        family: Family::Chain,
        summary: "SOL or one SPL token balance of a Solana address",
        description: "The SOL balance of an address in lamports and in SOL, or, with `mint`, its balance of that SPL \
            token (classic Token or Token-2022) summed over every token account the address owns for the mint, in \
            base units and with the mint's decimals applied. Amounts are exact decimal strings, read at confirmed \
            commitment. A `mint` that is not a token mint is an input error.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaBalanceInput, ctx: &Context) -> Result<SolanaBalanceRequest, EngineError> {
        ctx.solana.get(input.network)?;
        Ok(SolanaBalanceRequest { network: input.network, address: input.address, mint: input.mint })
    }

    fn quote(_: &SolanaBalanceRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaBalanceRequest, ctx: &Context) -> Result<Reply<SolanaBalanceOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request).await).await
    }
}

async fn read(cluster: &Cluster, request: &SolanaBalanceRequest) -> Result<SolanaBalanceOutput, EngineError> {
    let address = request.address.as_str();
    let Some(mint) = &request.mint else {
        let answer: Value = cluster.request("getBalance", json!([address, { "commitment": COMMITMENT }])).await?;
        let lamports = node_u64(&answer["value"], "balance")?;
        return Ok(SolanaBalanceOutput {
            network: cluster.network(),
            address: address.to_string(),
            asset: Asset::Sol,
            mint: None,
            program: None,
            decimals: crate::solana::LAMPORTS_DECIMALS,
            raw: lamports.to_string(),
            formatted: sol(lamports),
            accounts: None,
            slot: node_u64(&answer["context"]["slot"], "slot")?,
        });
    };
    let (mint_info, accounts) = tokio::try_join!(
        async { crate::solana::read_mint(cluster, mint, "/mint").await.map(|(m, _, _)| m) },
        cluster.request::<Value>(
            "getTokenAccountsByOwner",
            json!([address, { "mint": mint.as_str() }, { "encoding": "jsonParsed", "commitment": COMMITMENT }]),
        )
    )?;
    let mut raw: u128 = 0;
    let mut count: u32 = 0;
    for item in accounts["value"].as_array().map(Vec::as_slice).unwrap_or_default() {
        let Some(account) = token::token_account(item)? else { continue };
        if account.mint != mint.as_str() || account.owner != address {
            return Err(crate::solana::bad(format!(
                "the node listed token account {} of another mint or owner",
                account.address
            )));
        }
        raw += u128::from(account.amount.raw);
        count += 1;
    }
    Ok(SolanaBalanceOutput {
        network: cluster.network(),
        address: address.to_string(),
        asset: Asset::Spl,
        mint: Some(mint.as_str().to_string()),
        program: Some(mint_info.program),
        decimals: mint_info.decimals,
        raw: raw.to_string(),
        formatted: format_amount(raw, mint_info.decimals),
        accounts: Some(count),
        slot: node_u64(&accounts["context"]["slot"], "slot")?,
    })
}

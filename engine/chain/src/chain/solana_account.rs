//! `POST /v1/solana/account`: an account's owner program, lamports, whether it is
//! executable, its data size and whether it holds the rent-exempt minimum for that size.

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
use crate::solana::{COMMITMENT, Cluster, Network, bad, node_u64, program_name, sol};

/// Request of `/v1/solana/account`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaAccountInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// The account.
    pub address: SolanaAddress,
}

/// What the account is, as far as its owner and size tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "SolanaAccountKind")]
pub enum Kind {
    /// It does not exist (no lamports, no data).
    Missing,
    /// A system account without data: a wallet.
    Wallet,
    /// An executable account: a program.
    Program,
    /// A token mint (Token or Token-2022).
    Mint,
    /// A token account (Token or Token-2022).
    TokenAccount,
    /// Any other data account.
    Data,
}

/// Answer of `/v1/solana/account`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaAccountOutput {
    /// Cluster read.
    pub network: Network,
    /// The account, as sent.
    pub address: String,
    /// Whether it exists.
    pub exists: bool,
    /// What it is.
    pub kind: Kind,
    /// The program that owns it; null when it does not exist.
    pub owner: Option<String>,
    /// The owner program's name when it is a known one (`system`, `spl-token`, …); null otherwise.
    pub owner_name: Option<String>,
    /// Balance in lamports, decimal string.
    pub lamports: String,
    /// Balance in SOL, exact decimal string.
    pub sol: String,
    /// Whether it is a program.
    pub executable: bool,
    /// Size of its data in bytes.
    pub data_size: u64,
    /// Lamports an account of this size must hold to be exempt from rent, decimal string.
    pub rent_exempt_minimum: String,
    /// Whether it holds at least that (false for a missing account).
    pub rent_exempt: bool,
    /// The token program, for mints and token accounts; null otherwise.
    pub token_program: Option<TokenProgram>,
    /// The slot it was read at.
    pub slot: u64,
}

/// A checked request.
pub struct SolanaAccountRequest {
    network: Network,
    address: SolanaAddress,
}

/// The route.
pub struct SolanaAccountRoute;

impl Route for SolanaAccountRoute {
    type Input = SolanaAccountInput;
    type Prepared = SolanaAccountRequest;
    type Output = SolanaAccountOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/account",
        operation: "get_solana_account",
        family: Family::Chain,
        summary: "Owner program, lamports, executable, data size and rent exemption of a Solana account",
        description: "An account's owner program (named when known), balance in lamports and SOL, whether it is \
            executable, its data size, the rent-exempt minimum for that size and whether it holds it, and what it \
            is (wallet, program, mint, token account, other data). An account that does not exist is answered \
            with `exists: false`, not an error.",
        base_price: Price::micros(1_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaAccountInput, ctx: &Context) -> Result<SolanaAccountRequest, EngineError> {
        ctx.solana.get(input.network)?;
        Ok(SolanaAccountRequest { network: input.network, address: input.address })
    }

    fn quote(_: &SolanaAccountRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaAccountRequest, ctx: &Context) -> Result<Reply<SolanaAccountOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request.address).await).await
    }
}

async fn read(cluster: &Cluster, address: &SolanaAddress) -> Result<SolanaAccountOutput, EngineError> {
    // The data itself is not needed, only its size: a zero-length slice keeps a 10 MiB
    // program account from crossing the wire. Nodes give the size as `space`.
    let answer: Value = cluster
        .request(
            "getAccountInfo",
            json!([address.as_str(), {
                "encoding": "base64",
                "dataSlice": { "offset": 0, "length": 0 },
                "commitment": COMMITMENT,
            }]),
        )
        .await?;
    let slot = node_u64(&answer["context"]["slot"], "slot")?;
    let value = &answer["value"];
    let (exists, owner, lamports, executable, data_size) = match value {
        Value::Null => (false, None, 0, false, 0),
        Value::Object(_) => {
            let space =
                value.get("space").ok_or_else(|| bad("the node's account has no `space` (data size)".into()))?;
            (
                true,
                Some(token::required_address(value, "owner")?),
                node_u64(&value["lamports"], "lamports")?,
                value.get("executable").and_then(Value::as_bool).unwrap_or(false),
                node_u64(space, "space")?,
            )
        }
        other => return Err(bad(format!("the node's account is not an object: {other}"))),
    };
    let minimum: Value =
        cluster.request("getMinimumBalanceForRentExemption", json!([data_size, { "commitment": COMMITMENT }])).await?;
    let minimum = node_u64(&minimum, "rent-exempt minimum")?;
    let token_program = owner.as_deref().and_then(TokenProgram::of_owner);
    let kind = match (&owner, executable) {
        (None, _) => Kind::Missing,
        (_, true) => Kind::Program,
        (Some(owner), false) if owner == "11111111111111111111111111111111" && data_size == 0 => Kind::Wallet,
        (Some(_), false) => match token_program {
            // Mints are 82 bytes; token accounts 165 (Token-2022 adds its extensions after
            // an account-type byte at 165 for both).
            Some(_) if data_size == 82 => Kind::Mint,
            Some(_) if data_size == 165 => Kind::TokenAccount,
            Some(_) if data_size > 165 => token_2022_kind(cluster, address).await?,
            _ => Kind::Data,
        },
    };
    Ok(SolanaAccountOutput {
        network: cluster.network(),
        address: address.as_str().to_string(),
        exists,
        kind,
        owner_name: owner.as_deref().and_then(program_name).map(str::to_string),
        owner,
        lamports: lamports.to_string(),
        sol: sol(lamports),
        executable,
        data_size,
        rent_exempt_minimum: minimum.to_string(),
        rent_exempt: exists && lamports >= minimum,
        token_program,
        slot,
    })
}

/// A Token-2022 account with extensions: the node's parse says whether it is a mint.
async fn token_2022_kind(cluster: &Cluster, address: &SolanaAddress) -> Result<Kind, EngineError> {
    let (account, _) = cluster.account(address.as_str(), "jsonParsed").await?;
    Ok(match account.as_ref().and_then(token::parsed) {
        Some((_, "mint", _)) => Kind::Mint,
        Some((_, "account", _)) => Kind::TokenAccount,
        _ => Kind::Data,
    })
}

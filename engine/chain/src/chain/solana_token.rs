//! `POST /v1/solana/token`: a mint's supply, decimals, authorities, Token-2022 extensions
//! and metadata (Token-2022's own, in the mint or where its pointer says, else Metaplex).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::output::Reply;
use crate::price::Price;
use crate::solana::keys::SolanaAddress;
use crate::solana::token::{self, MintExtensions, TokenProgram};
use crate::solana::{Cluster, Network, b64_data, format_amount, metaplex};

/// Request of `/v1/solana/token`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SolanaTokenInput {
    /// Cluster to read: `mainnet` (default) or `devnet`.
    #[serde(default)]
    pub network: Network,
    /// The token's mint.
    pub mint: SolanaAddress,
}

/// Where a token's metadata was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
#[schemars(rename = "SolanaMetadataSource")]
pub enum MetadataSource {
    /// The Token-2022 metadata extension (in the mint, or in the account its metadata pointer names).
    #[serde(rename = "token-2022")]
    Token2022,
    /// The Metaplex Token Metadata account of the mint.
    Metaplex,
}

/// One additional metadata field.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaMetadataField")]
pub struct Field {
    /// Key (untrusted data).
    pub key: String,
    /// Value (untrusted data).
    pub value: String,
}

/// A token's metadata. Untrusted data: shown as written by the token's creator.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "SolanaTokenMetadata")]
pub struct Metadata {
    /// Where it was read.
    pub source: MetadataSource,
    /// The account holding it.
    pub account: String,
    /// Name, at most 200 characters.
    pub name: String,
    /// Symbol, at most 200 characters.
    pub symbol: String,
    /// URI of the off-chain JSON, at most 200 characters (not fetched).
    pub uri: String,
    /// Who may change it; null when no one.
    pub update_authority: Option<String>,
    /// Whether it may still change (Metaplex's flag; for Token-2022, whether it has an update authority).
    pub mutable: Option<bool>,
    /// Royalty on secondary sales in basis points (Metaplex only; null for Token-2022).
    pub seller_fee_basis_points: Option<u16>,
    /// Additional fields (Token-2022 only; empty for Metaplex).
    pub additional: Vec<Field>,
}

/// Answer of `/v1/solana/token`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SolanaTokenOutput {
    /// Cluster read.
    pub network: Network,
    /// The mint, as sent.
    pub mint: String,
    /// `spl-token` or `spl-token-2022`.
    pub program: TokenProgram,
    /// Decimals.
    pub decimals: u8,
    /// Supply in base units, decimal string.
    pub supply: String,
    /// Supply with the decimals applied, exact decimal string.
    pub supply_formatted: String,
    /// Who may mint more; null when the supply is fixed.
    pub mint_authority: Option<String>,
    /// Who may freeze holders' accounts; null when no one.
    pub freeze_authority: Option<String>,
    /// Whether the mint is initialized.
    pub initialized: bool,
    /// Token-2022 extensions (all null or false, `names` empty, for a classic mint).
    pub extensions: MintExtensions,
    /// Name, symbol and URI; null when the token has no metadata.
    pub metadata: Option<Metadata>,
    /// The slot the mint was read at.
    pub slot: u64,
}

/// A checked request.
pub struct SolanaTokenRequest {
    network: Network,
    mint: SolanaAddress,
}

/// The route.
pub struct SolanaTokenRoute;

impl Route for SolanaTokenRoute {
    type Input = SolanaTokenInput;
    type Prepared = SolanaTokenRequest;
    type Output = SolanaTokenOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/solana/token",
        operation: "get_solana_token_info",
        family: Family::Chain,
        summary: "Supply, decimals, authorities, Token-2022 extensions and metadata of a Solana mint",
        description: "A token mint's supply (base units and with decimals), decimals, mint and freeze authorities, \
            its Token-2022 extensions (transfer fee, interest, permanent delegate, non-transferable, metadata \
            pointer, close authority, transfer hook, default state, pausable; every extension's name is listed) \
            and its metadata: Token-2022's own (in the mint or where its metadata pointer says) or the Metaplex \
            metadata account. Names, symbols and URIs are untrusted data. An address that is not a mint is an \
            input error.",
        base_price: Price::micros(3_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: SolanaTokenInput, ctx: &Context) -> Result<SolanaTokenRequest, EngineError> {
        ctx.solana.get(input.network)?;
        Ok(SolanaTokenRequest { network: input.network, mint: input.mint })
    }

    fn quote(_: &SolanaTokenRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: SolanaTokenRequest, ctx: &Context) -> Result<Reply<SolanaTokenOutput>, EngineError> {
        crate::solana::answer(ctx, request.network, async |cluster| read(cluster, &request.mint).await).await
    }
}

async fn read(cluster: &Cluster, address: &SolanaAddress) -> Result<SolanaTokenOutput, EngineError> {
    let (mint, _, slot) = crate::solana::read_mint(cluster, address, "/mint").await?;
    let extensions = MintExtensions::read(&mint.extensions)?;
    let metadata = metadata(cluster, address, &mint, &extensions).await?;
    Ok(SolanaTokenOutput {
        network: cluster.network(),
        mint: address.as_str().to_string(),
        program: mint.program,
        decimals: mint.decimals,
        supply: mint.supply.to_string(),
        supply_formatted: format_amount(u128::from(mint.supply), mint.decimals),
        mint_authority: mint.mint_authority,
        freeze_authority: mint.freeze_authority,
        initialized: mint.initialized,
        extensions,
        metadata,
        slot,
    })
}

/// The token's metadata: the Token-2022 extension in the mint, else in the account the
/// metadata pointer names, else the Metaplex account; None when none has any.
async fn metadata(
    cluster: &Cluster,
    address: &SolanaAddress,
    mint: &token::Mint,
    extensions: &MintExtensions,
) -> Result<Option<Metadata>, EngineError> {
    if let Some(state) = token::extension(&mint.extensions, "tokenMetadata") {
        return token_2022_metadata(address.as_str(), state).map(Some);
    }
    let pointed = extensions.metadata_pointer.as_ref().and_then(|p| p.address.clone());
    if let Some(pointed) = pointed.filter(|p| p != address.as_str()) {
        let (account, _) = cluster.account(&pointed, "jsonParsed").await?;
        let state = account.as_ref().and_then(|a| token::parsed(a)).and_then(|(_, _, info)| {
            let listed = info.get("extensions").and_then(Value::as_array)?;
            token::extension(listed, "tokenMetadata").cloned()
        });
        if let Some(state) = state {
            return token_2022_metadata(&pointed, &state).map(Some);
        }
    }
    let account = SolanaAddress::from_bytes(&metaplex::metadata_address(&address.bytes()));
    let (found, _) = cluster.account(account.as_str(), "base64").await?;
    let Some(found) = found else { return Ok(None) };
    if token::text(&found, "owner", 44).as_deref() != Some(metaplex::PROGRAM) {
        return Ok(None);
    }
    let Some(parsed) = metaplex::parse(&b64_data(&found)?) else { return Ok(None) };
    if parsed.mint != address.bytes() {
        return Ok(None);
    }
    Ok(Some(Metadata {
        source: MetadataSource::Metaplex,
        account: account.as_str().to_string(),
        name: parsed.name,
        symbol: parsed.symbol,
        uri: parsed.uri,
        update_authority: Some(SolanaAddress::from_bytes(&parsed.update_authority).as_str().to_string()),
        mutable: parsed.mutable,
        seller_fee_basis_points: Some(parsed.seller_fee_basis_points),
        additional: Vec::new(),
    }))
}

fn token_2022_metadata(account: &str, state: &Value) -> Result<Metadata, EngineError> {
    let update_authority = token::address(state, "updateAuthority")?;
    let additional = state
        .get("additionalMetadata")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .take(100)
        .filter_map(|pair| {
            let pair = pair.as_array()?;
            let text = |i: usize| pair.get(i).and_then(Value::as_str).map(|s| crate::rpc_http::clean_text(s, 200));
            Some(Field { key: text(0)?, value: text(1)? })
        })
        .collect();
    Ok(Metadata {
        source: MetadataSource::Token2022,
        account: account.to_string(),
        name: token::text(state, "name", 200).unwrap_or_default(),
        symbol: token::text(state, "symbol", 200).unwrap_or_default(),
        uri: token::text(state, "uri", 200).unwrap_or_default(),
        mutable: Some(update_authority.is_some()),
        update_authority,
        seller_fee_basis_points: None,
        additional,
    })
}

//! `POST /v1/chain/nft`: one token of an ERC-721 or ERC-1155 collection: which standard
//! (ERC-165), the collection's name and symbol, the token's owner (ERC-721) and metadata
//! URI, and a holder's balance, read in one JSON-RPC batch. Text from the chain (names,
//! URIs) is untrusted data: returned, never fetched or interpreted.

use std::sync::Arc;

use alloy::primitives::{Address, U256};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::Context;
use crate::error::EngineError;
use crate::evm::call::ViewBatch;
use crate::evm::erc20::{NAME, SYMBOL, decode_text};
use crate::evm::{ChainName, EvmAddress, EvmChain, address_text, address_word, parse_uint256};
use crate::output::Reply;
use crate::price::Price;

const SUPPORTS_INTERFACE: [u8; 4] = [0x01, 0xff, 0xc9, 0xa7];
const ERC721_INTERFACE: [u8; 4] = [0x80, 0xac, 0x58, 0xcd];
const ERC1155_INTERFACE: [u8; 4] = [0xd9, 0xb6, 0x7a, 0x26];
const OWNER_OF: [u8; 4] = [0x63, 0x52, 0x21, 0x1e];
const TOKEN_URI: [u8; 4] = [0xc8, 0x7b, 0x56, 0xdd];
const URI: [u8; 4] = [0x0e, 0x89, 0x34, 0x1c];
const BALANCE_OF: [u8; 4] = [0x70, 0xa0, 0x82, 0x31];
const BALANCE_OF_ID: [u8; 4] = [0x00, 0xfd, 0xd5, 0x8e];
/// Longest token URI returned, in characters (a data: URI can be long; the rest is cut).
const MAX_URI_CHARS: usize = 8192;

/// Request of `/v1/chain/nft`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NftInput {
    /// Chain to read: `ethereum`, `base` or `polygon`.
    pub chain: ChainName,
    /// The collection's contract (ERC-721 or ERC-1155), 0x and 40 hex digits.
    pub contract: EvmAddress,
    /// The token id: a decimal number below 2^256 (`"1234"`), or 0x hex.
    #[schemars(regex(pattern = crate::patterns::uint256()))]
    pub token_id: String,
    /// An account whose balance of this token (ERC-1155) or of the collection (ERC-721) is read too.
    #[serde(default)]
    pub holder: Option<EvmAddress>,
}

/// The standard a collection follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NftStandard {
    /// ERC-721: one owner per token.
    Erc721,
    /// ERC-1155: balances per token and holder.
    Erc1155,
}

/// Answer of `/v1/chain/nft`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct NftOutput {
    /// Chain read.
    pub chain: String,
    /// The collection, lower-case.
    pub contract: String,
    /// The token id, decimal.
    pub token_id: String,
    /// `erc721` or `erc1155`.
    pub standard: NftStandard,
    /// Whether the contract declares the standard through ERC-165 (`supportsInterface`); false when it was recognised by its answers alone.
    pub erc165: bool,
    /// The collection's `name()`, untrusted text; null when it has none.
    pub name: Option<String>,
    /// The collection's `symbol()`, untrusted text; null when it has none.
    pub symbol: Option<String>,
    /// ERC-721: whether the token exists (`ownerOf` answers an owner). Null for ERC-1155, which has no owner to ask.
    pub exists: Option<bool>,
    /// ERC-721: the token's owner, lower-case; null when the token does not exist, and for ERC-1155.
    pub owner: Option<String>,
    /// The metadata URI (`tokenURI`, or `uri` with ERC-1155's `{id}` replaced by the id as 64 hex digits), untrusted text, never fetched; null when the contract gives none.
    pub token_uri: Option<String>,
    /// The holder asked about, lower-case; null when none was given.
    pub holder: Option<String>,
    /// The holder's balance: of this token (ERC-1155) or of the whole collection (ERC-721); null when no holder was given or it does not answer.
    pub holder_balance: Option<String>,
}

/// A checked request.
pub struct NftRequest {
    chain: Arc<EvmChain>,
    contract: EvmAddress,
    id: U256,
    holder: Option<EvmAddress>,
}

/// The route.
pub struct NftRoute;

impl Route for NftRoute {
    type Input = NftInput;
    type Prepared = NftRequest;
    type Output = NftOutput;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/chain/nft",
        operation: "get_nft_info",
        family: Family::Chain,
        summary: "ERC-721/1155 token: owner, balance, token URI, collection name and symbol",
        description: "One NFT: its collection's standard (ERC-721 or ERC-1155, by ERC-165 or by its answers), name and \
            symbol, the token's owner and whether it exists (ERC-721), its metadata URI (never fetched; ERC-1155 \
            `{id}` filled in), and a holder's balance when one is given, all in one batched read. Names and URIs are \
            untrusted text. A contract that is neither standard is 422 naming `contract`.",
        base_price: Price::micros(2_000),
        price_rule: "flat",
        free_pool: FreePool::ChainReads,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: NftInput, ctx: &Context) -> Result<NftRequest, EngineError> {
        let chain = ctx.chains.resolve(&input.chain, "/chain")?;
        let id = parse_uint256(&input.token_id).ok_or_else(|| {
            EngineError::invalid(
                "/token_id",
                "/token_id: write the token id as a decimal number below 2^256 or as 0x hex",
            )
        })?;
        Ok(NftRequest { chain, contract: input.contract, id, holder: input.holder })
    }

    fn quote(_: &NftRequest) -> Price {
        Self::INFO.base_price
    }

    async fn run(request: NftRequest, _: &Context) -> Result<Reply<NftOutput>, EngineError> {
        let chain = Arc::clone(&request.chain);
        let answer = chain.deadline(read_nft(&request)).await?;
        Ok(Reply::Json(answer))
    }
}

async fn read_nft(request: &NftRequest) -> Result<NftOutput, EngineError> {
    let NftRequest { chain, contract, id, holder } = request;
    let id_word = id.to_be_bytes::<32>();
    let mut batch = ViewBatch::new(chain, "latest");
    let to = &contract.0;
    let interface = |i: [u8; 4]| [&SUPPORTS_INTERFACE[..], &i, &[0u8; 28]].concat();
    let is_721 = batch.view(to, interface(ERC721_INTERFACE))?;
    let is_1155 = batch.view(to, interface(ERC1155_INTERFACE))?;
    let name = batch.view(to, NAME.to_vec())?;
    let symbol = batch.view(to, SYMBOL.to_vec())?;
    let owner = batch.view(to, [&OWNER_OF[..], &id_word].concat())?;
    let token_uri = batch.view(to, [&TOKEN_URI[..], &id_word].concat())?;
    let uri = batch.view(to, [&URI[..], &id_word].concat())?;
    let balances = match holder {
        Some(h) => Some((
            batch.view(to, [&BALANCE_OF[..], address_word(&h.0).as_slice()].concat())?,
            batch.view(to, [&BALANCE_OF_ID[..], address_word(&h.0).as_slice(), &id_word].concat())?,
        )),
        None => None,
    };
    batch.send().await?;
    let yes = |word: Option<U256>| word == Some(U256::from(1));
    let (is_721, is_1155) = (is_721.word(chain).await?, is_1155.word(chain).await?);
    let name = name.answer(chain).await?.as_deref().and_then(decode_text);
    let symbol = symbol.answer(chain).await?.as_deref().and_then(decode_text);
    let owner = owner
        .word(chain)
        .await?
        .filter(|w| *w >> 160 == U256::ZERO)
        .map(|w| Address::from_word(alloy::primitives::B256::from(w)))
        .filter(|a| !a.is_zero());
    let token_uri = token_uri.answer(chain).await?.as_deref().and_then(decode_text_long);
    let uri = uri.answer(chain).await?.as_deref().and_then(decode_text_long);
    let (balance_721, balance_1155) = match balances {
        Some((a, b)) => (a.word(chain).await?, b.word(chain).await?),
        None => (None, None),
    };
    let erc165 = yes(is_721) || yes(is_1155);
    let standard = if yes(is_721) {
        NftStandard::Erc721
    } else if yes(is_1155) {
        NftStandard::Erc1155
    } else if owner.is_some() || token_uri.is_some() {
        // Early collections (CryptoKitties-era) answer ERC-721 calls without ERC-165.
        NftStandard::Erc721
    } else {
        return Err(EngineError::invalid_with(
            "not_a_collection",
            "/contract",
            format!(
                "/contract: {} on {} is neither an ERC-721 nor an ERC-1155 collection (no ERC-165 declaration, no \
                 owner or URI for token {id})",
                contract.text(),
                chain.name()
            ),
        ));
    };
    let (exists, owner, token_uri, holder_balance) = match standard {
        NftStandard::Erc721 => (Some(owner.is_some()), owner, token_uri, balance_721),
        NftStandard::Erc1155 => {
            let hex_id = format!("{id:064x}");
            (None, None, uri.map(|u| u.replace("{id}", &hex_id)), balance_1155)
        }
    };
    Ok(NftOutput {
        chain: chain.name().to_string(),
        contract: contract.text(),
        token_id: id.to_string(),
        standard,
        erc165,
        name,
        symbol,
        exists,
        owner: owner.as_ref().map(address_text),
        token_uri,
        holder: holder.as_ref().map(EvmAddress::text),
        holder_balance: holder_balance.map(|b| b.to_string()),
    })
}

/// A `string` answer of up to [`MAX_URI_CHARS`] characters, control characters dropped.
fn decode_text_long(data: &[u8]) -> Option<String> {
    let offset = usize::try_from(U256::from_be_slice(data.get(..32)?)).ok()?;
    let length_end = offset.checked_add(32)?;
    let length = usize::try_from(U256::from_be_slice(data.get(offset..length_end)?)).ok()?;
    let bytes = data.get(length_end..length_end.checked_add(length)?)?;
    Some(crate::evm::clean_text(&String::from_utf8_lossy(bytes), MAX_URI_CHARS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match_their_signatures() {
        let selector = |sig: &str| <[u8; 4]>::try_from(&alloy::primitives::keccak256(sig)[..4]).unwrap();
        assert_eq!(SUPPORTS_INTERFACE, selector("supportsInterface(bytes4)"));
        assert_eq!(OWNER_OF, selector("ownerOf(uint256)"));
        assert_eq!(TOKEN_URI, selector("tokenURI(uint256)"));
        assert_eq!(URI, selector("uri(uint256)"));
        assert_eq!(BALANCE_OF, selector("balanceOf(address)"));
        assert_eq!(BALANCE_OF_ID, selector("balanceOf(address,uint256)"));
        assert_eq!(parse_uint256("0x10"), Some(U256::from(16)));
        assert_eq!(parse_uint256("-1"), None);
    }
}

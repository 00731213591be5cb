//! What the chain says about a payment: whether an EIP-3009 authorization was used, in
//! which transaction, and whether that transaction moved the amount the ledger holds.
//! Read through the engine's own chain code (its configured RPC endpoints).

use alloy::primitives::{Address, B256, U256};
use alloy::providers::Provider as _;
use alloy::rpc::types::Filter;
use alloy::sol_types::SolEvent as _;
use paperchain_engine_core::evm::{Chains, EvmChain};
use std::sync::Arc;

alloy::sol! {
    #[sol(rpc)]
    interface Eip3009Token {
        function authorizationState(address authorizer, bytes32 nonce) external view returns (bool);
        event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce);
        event Transfer(address indexed from, address indexed to, uint256 value);
        function balanceOf(address holder) external view returns (uint256);
    }
}

alloy::sol! {
    #[sol(rpc)]
    interface Permit2Nonces {
        function nonceBitmap(address owner, uint256 wordPos) external view returns (uint256);
    }

    #[sol(rpc)]
    interface BatchEscrow {
        function channels(bytes32 channelId) external view returns (uint128 balance, uint128 totalClaimed);
    }

    #[sol(rpc)]
    interface PermitToken {
        function allowance(address owner, address spender) external view returns (uint256);
        function nonces(address owner) external view returns (uint256);
    }
}

/// Whether Permit2 has used `payer`'s unordered `nonce` (decimal, as an `upto` payment
/// carries it): its bit in the payer's nonce bitmap.
pub async fn permit2_nonce_used(chain: &EvmChain, payer: &str, nonce: &str) -> Result<bool, String> {
    let nonce =
        U256::from_str_radix(nonce, 10).map_err(|_| format!("the ledger's Permit2 nonce `{nonce}` cannot be read"))?;
    let (word, bit) = paperchain_protocol::upto_evm::nonce_bit(nonce);
    let permit2 = Permit2Nonces::new(paperchain_protocol::upto_evm::PERMIT2, chain.provider());
    let bitmap = permit2
        .nonceBitmap(parse(payer, "payer")?, word)
        .call()
        .await
        .map_err(|e| format!("Permit2 nonceBitmap on chain {}: {e}", chain.chain_id()))?;
    Ok(bitmap.bit(bit))
}

/// What the `batch-settlement` escrow holds for channel `id`: its balance (deposited less
/// refunded and withdrawn) and what the receiver claimed of it.
pub async fn escrow_channel(chain: &EvmChain, id: B256) -> Result<(u128, u128), String> {
    let escrow = BatchEscrow::new(paperchain_protocol::batch_evm::ESCROW, chain.provider());
    let state = escrow.channels(id).call().await;
    let state = state.map_err(|e| format!("the escrow's channel {id} on chain {}: {e}", chain.chain_id()))?;
    Ok((state.balance, state.totalClaimed))
}

/// What an `upto` payer has given Permit2 to move of `asset`.
pub async fn permit2_allowance(chain: &EvmChain, asset: &str, payer: Address) -> Result<U256, String> {
    let token = PermitToken::new(parse::<Address>(asset, "asset")?, chain.provider());
    let allowance = token.allowance(payer, paperchain_protocol::upto_evm::PERMIT2).call().await;
    allowance.map_err(|e| format!("allowance of Permit2 on {asset} on chain {}: {e}", chain.chain_id()))
}

/// The payer's EIP-2612 nonce on `asset`: what its next permit is signed with.
pub async fn permit_nonce(chain: &EvmChain, asset: &str, payer: Address) -> Result<U256, String> {
    let token = PermitToken::new(parse::<Address>(asset, "asset")?, chain.provider());
    let nonce = token.nonces(payer).call().await;
    nonce.map_err(|e| format!("the EIP-2612 nonce on {asset} on chain {}: {e}", chain.chain_id()))
}

/// `holder`'s balance of the chain's native coin and of `asset`, in atomic units.
pub async fn balances(chain: &EvmChain, asset: &str, holder: Address) -> Result<(U256, U256), String> {
    let provider = chain.provider();
    let native =
        provider.get_balance(holder).await.map_err(|e| format!("eth_getBalance on chain {}: {e}", chain.chain_id()))?;
    let token = Eip3009Token::new(parse::<Address>(asset, "asset")?, provider);
    let held = token
        .balanceOf(holder)
        .call()
        .await
        .map_err(|e| format!("balanceOf {asset} on chain {}: {e}", chain.chain_id()))?;
    Ok((native, held))
}

/// The chain of a CAIP-2 EVM network among the configured ones.
pub fn chain_of(chains: &Chains, network: &str) -> Result<Arc<EvmChain>, String> {
    let id: u64 = network
        .strip_prefix("eip155:")
        .and_then(|id| id.parse().ok())
        .ok_or_else(|| format!("{network} is not an EVM network"))?;
    chains
        .names()
        .into_iter()
        .filter_map(|name| chains.get(name))
        .find(|chain| chain.chain_id() == id)
        .cloned()
        .ok_or_else(|| format!("no RPC endpoint is configured for chain {id} ({network}); see PAPERCHAIN_CHAINS"))
}

fn parse<T: std::str::FromStr>(text: &str, what: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("the ledger's {what} `{text}` cannot be read"))
}

/// Whether `payer`'s authorization `nonce` on `asset` has been used.
pub async fn authorization_used(chain: &EvmChain, asset: &str, payer: &str, nonce: &str) -> Result<bool, String> {
    let token = Eip3009Token::new(parse::<Address>(asset, "asset")?, chain.provider());
    token
        .authorizationState(parse(payer, "payer")?, parse::<B256>(nonce, "nonce")?)
        .call()
        .await
        .map_err(|e| format!("authorizationState on chain {}: {e}", chain.chain_id()))
}

/// The transaction that used `payer`'s authorization `nonce` on `asset`, searched in the
/// last `depth` blocks (newest first, 5,000 at a time).
pub async fn authorization_tx(
    chain: &EvmChain,
    asset: &str,
    payer: &str,
    nonce: &str,
    depth: u64,
) -> Result<Option<B256>, String> {
    let provider = chain.provider();
    let latest = provider.get_block_number().await.map_err(|e| format!("eth_blockNumber: {e}"))?;
    let payer: Address = parse(payer, "payer")?;
    let nonce: B256 = parse(nonce, "nonce")?;
    let floor = latest.saturating_sub(depth);
    let mut to = latest;
    loop {
        let from = to.saturating_sub(4_999).max(floor);
        let filter = Filter::new()
            .address(parse::<Address>(asset, "asset")?)
            .event_signature(Eip3009Token::AuthorizationUsed::SIGNATURE_HASH)
            .topic1(payer.into_word())
            .topic2(nonce)
            .from_block(from)
            .to_block(to);
        let logs = provider.get_logs(&filter).await.map_err(|e| format!("eth_getLogs: {e}"))?;
        if let Some(hash) = logs.iter().find_map(|log| log.transaction_hash) {
            return Ok(Some(hash));
        }
        if from <= floor {
            return Ok(None);
        }
        to = from - 1;
    }
}

/// Whether transaction `tx` succeeded and moved exactly `amount` of `asset` from `payer`
/// to `payee`; the error says what differs.
pub async fn check_transfer(
    chain: &EvmChain,
    tx: &str,
    asset: &str,
    payer: &str,
    payee: &str,
    amount: &str,
) -> Result<(), String> {
    let hash: B256 = parse(tx, "transaction")?;
    let receipt = chain
        .provider()
        .get_transaction_receipt(hash)
        .await
        .map_err(|e| format!("eth_getTransactionReceipt: {e}"))?
        .ok_or_else(|| format!("transaction {tx} is not on chain {}", chain.chain_id()))?;
    if !receipt.status() {
        return Err(format!("transaction {tx} reverted"));
    }
    let (asset, payer, payee): (Address, Address, Address) =
        (parse(asset, "asset")?, parse(payer, "payer")?, parse(payee, "payee")?);
    let amount: U256 = parse(amount, "amount")?;
    let moved = receipt.inner.logs().iter().any(|log| {
        log.address() == asset
            && Eip3009Token::Transfer::decode_log_data(log.data())
                .is_ok_and(|t| t.from == payer && t.to == payee && t.value == amount)
    });
    if moved {
        Ok(())
    } else {
        Err(format!("transaction {tx} has no transfer of {amount} from {payer} to {payee} on {asset}"))
    }
}

/// The wallet's holdings on one network it pays on.
#[derive(Clone, Debug, serde::Serialize)]
pub struct NetworkBalance {
    /// `eip155:<chain id>`.
    pub network: String,
    /// The chain's name in the engine.
    pub chain: String,
    /// The asset's contract.
    pub asset: String,
    /// Its symbol.
    pub symbol: String,
    /// The balance of the asset, formatted ("12.5").
    pub balance: Option<String>,
    /// The gas balance, formatted in the native coin.
    pub gas: Option<String>,
    /// Why it could not be read.
    pub error: Option<String>,
}

/// What `holder` has on every network the configuration pays on whose chain has an RPC
/// endpoint (networks without one are left out).
pub async fn wallet_balances(
    config: &crate::config::ClientConfig,
    chains: &Chains,
    holder: Address,
) -> Vec<NetworkBalance> {
    let mut lines = Vec::new();
    for asset in config.assets() {
        let Ok(chain) = chain_of(chains, &asset.network) else { continue };
        let mut line = NetworkBalance {
            network: asset.network.clone(),
            chain: chain.name().to_string(),
            asset: asset.address.clone(),
            symbol: asset.symbol.clone(),
            balance: None,
            gas: None,
            error: None,
        };
        match balances(&chain, &asset.address, holder).await {
            Ok((native, held)) => {
                line.balance = Some(crate::money::format_atomic(held.try_into().unwrap_or(u128::MAX), asset.decimals));
                line.gas = Some(paperchain_engine_core::evm::format_units(native, 18));
            }
            Err(e) => line.error = Some(e),
        }
        lines.push(line);
    }
    lines
}

/// The Solana transaction of a payment by `payer` whose memo carries `memo` (the wallet's
/// random nonce); `None` when there is none, or only failed ones (a failed transfer moved
/// nothing).
pub async fn solana_payment(
    clusters: &paperchain_engine_core::solana::Clusters,
    network: &str,
    payer: &str,
    memo: &str,
) -> Result<Option<String>, String> {
    let cluster = clusters.of_caip2(network)?;
    paperchain_engine_core::solana::transaction_with_memo(&cluster, payer, memo)
        .await
        .map_err(|e| format!("looking for the payment on Solana {}: {}", cluster.network().name(), e.message))
}

/// Checks that Solana transaction `signature` succeeded and moved exactly `amount` of the
/// token `mint` from `payer`'s holdings to `payee`'s (its token balances before and after,
/// by owner).
pub async fn check_solana_transfer(
    clusters: &paperchain_engine_core::solana::Clusters,
    network: &str,
    signature: &str,
    mint: &str,
    payer: &str,
    payee: &str,
    amount: &str,
) -> Result<(), String> {
    let cluster = clusters.of_caip2(network)?;
    let network = cluster.network();
    let params = serde_json::json!([signature, {"encoding": "jsonParsed", "commitment": "confirmed", "maxSupportedTransactionVersion": 0}]);
    let tx = cluster
        .deadline(cluster.raw_request("getTransaction", params))
        .await
        .map_err(|e| format!("getTransaction on Solana {}: {}", network.name(), e.message))?;
    if tx.is_null() {
        return Err(format!("transaction {signature} is not on Solana {}", network.name()));
    }
    if !tx["meta"]["err"].is_null() {
        return Err(format!("transaction {signature} failed: {}", tx["meta"]["err"]));
    }
    let amount: i128 = amount.parse().map_err(|_| format!("the ledger's amount `{amount}` cannot be read"))?;
    let held = |key: &str, owner: &str| -> i128 {
        tx["meta"][key]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|b| b["mint"] == mint && b["owner"] == owner)
            .filter_map(|b| b["uiTokenAmount"]["amount"].as_str().and_then(|a| a.parse::<i128>().ok()))
            .sum()
    };
    let paid = held("preTokenBalances", payer) - held("postTokenBalances", payer);
    let got = held("postTokenBalances", payee) - held("preTokenBalances", payee);
    if paid == amount && got == amount {
        Ok(())
    } else {
        Err(format!("transaction {signature} moved {paid} from {payer} and {got} to {payee} of {mint}, not {amount}"))
    }
}

//! A small Uniswap V2 (factory, router, WETH) at a chain's real addresses on anvil, and
//! taxed or trapped fixture tokens with pools, for the checks' trade simulation.

use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::{Address, U256};
use alloy::sol_types::{SolCall, SolValue};
use paperchain_engine::Context;
use paperchain_engine::evm::{ChainConfig, ChainTimeouts, Chains};
use paperchain_testkit::anvil::{Anvil, Artifact};
use serde_json::{Value, json};

alloy::sol! {
    function approve(address spender, uint256 amount) returns (bool);
    function addLiquidityETH(
        address token,
        uint256 amountTokenDesired,
        uint256 amountTokenMin,
        uint256 amountETHMin,
        address to,
        uint256 deadline
    ) payable returns (uint256 amountToken, uint256 amountETH, uint256 liquidity);
    function setPair(address pair);
    function getPair(address tokenA, address tokenB) returns (address pair);
    function createPair(address tokenA, address tokenB) returns (address pair);
}

pub const ETHER: u128 = 1_000_000_000_000_000_000;
/// Tokens (18 decimals) every taxed token puts in its pool.
pub const POOL_TOKENS: u128 = 1_000_000 * ETHER;

/// The real Uniswap V2 addresses of a chain (as the route knows them), lower-case.
pub struct DexAddresses {
    pub router: &'static str,
    pub factory: &'static str,
    pub weth: &'static str,
}

pub fn dex_addresses(chain: &str) -> DexAddresses {
    match chain {
        "ethereum" => DexAddresses {
            router: "0x7a250d5630b4cf539739df2c5dacb4c659f2488d",
            factory: "0x5c69bee701ef814a2b6a3edd4b1652cb9cc5aa6f",
            weth: "0xc02aaa39b223fe8d0a0e5c4f27ead9083c756cc2",
        },
        _ => DexAddresses {
            router: "0x4752ba5dbc23f44d87826276bf6fd6b1c372ad24",
            factory: "0x8909dc15e40173ff4699343b6eb8132c65e18ec6",
            weth: "0x4200000000000000000000000000000000000006",
        },
    }
}

/// How much liquidity a test token gets.
pub enum Pool {
    /// No pair at all.
    None,
    /// A pair without reserves.
    Empty,
    /// A pair with this much ETH (wei) against [`POOL_TOKENS`].
    Eth(u128),
}

/// An anvil with the fixture Uniswap V2 at the chain's real addresses.
pub struct Market {
    pub anvil: Anvil,
    pub ctx: Context,
    pub chain: &'static str,
    pub dex: DexAddresses,
    pub owner: String,
}

impl Market {
    pub async fn new(chain: &'static str) -> Market {
        let chain_id = if chain == "ethereum" { 1 } else { 8453 };
        let anvil = Anvil::start(chain_id).await;
        let dex = dex_addresses(chain);
        // setCode runs no constructor: WETH and the factory need none; the router's
        // immutables (factory, WETH) are filled in by deploying it first, then copying its code.
        anvil.set_code(dex.weth, &Artifact::load("MockWeth").deployed_bytecode).await;
        anvil.set_code(dex.factory, &Artifact::load("MockUniswapV2Factory").deployed_bytecode).await;
        let args = (dex.factory.parse::<Address>().unwrap(), dex.weth.parse::<Address>().unwrap()).abi_encode_params();
        let deployed = anvil.deploy(&Artifact::load("MockUniswapV2Router").init_code(&args)).await;
        let code = anvil.rpc("eth_getCode", json!([deployed, "latest"])).await;
        anvil.set_code(dex.router, code.as_str().unwrap()).await;
        let mut ctx = Context::new();
        ctx.chains = Arc::new(Chains::new(
            vec![ChainConfig::new(chain, chain_id, vec![anvil.url.parse().unwrap()])],
            ChainTimeouts::default(),
        ));
        let owner = anvil.accounts().await.remove(0).to_ascii_lowercase();
        Market { anvil, ctx, chain, dex, owner }
    }

    /// Deploys a TaxToken (taxes in basis points, `trap` for a honeypot) and gives it `pool`.
    pub async fn token(&self, symbol: &str, buy_bps: u64, sell_bps: u64, trap: bool, pool: Pool) -> String {
        let args = (
            format!("{symbol} Token"),
            symbol.to_string(),
            U256::from(10 * POOL_TOKENS),
            U256::from(buy_bps),
            U256::from(sell_bps),
            trap,
        )
            .abi_encode_params();
        let token = self.anvil.deploy(&Artifact::load("TaxToken").init_code(&args)).await;
        let token_address: Address = token.parse().unwrap();
        let weth: Address = self.dex.weth.parse().unwrap();
        match pool {
            Pool::None => return token,
            Pool::Empty => {
                self.send(self.dex.factory, createPairCall { tokenA: token_address, tokenB: weth }.abi_encode(), 0)
                    .await;
            }
            Pool::Eth(wei) => {
                let router: Address = self.dex.router.parse().unwrap();
                self.send(&token, approveCall { spender: router, amount: U256::MAX }.abi_encode(), 0).await;
                let add = addLiquidityETHCall {
                    token: token_address,
                    amountTokenDesired: U256::from(POOL_TOKENS),
                    amountTokenMin: U256::ZERO,
                    amountETHMin: U256::ZERO,
                    to: self.owner.parse().unwrap(),
                    deadline: U256::MAX,
                };
                self.send(self.dex.router, add.abi_encode(), wei).await;
            }
        }
        let data = getPairCall { tokenA: token_address, tokenB: weth }.abi_encode();
        let call = json!({"to": self.dex.factory, "data": format!("0x{}", hex::encode(data))});
        let answer = self.anvil.rpc("eth_call", json!([call, "latest"])).await;
        let pair = Address::from_slice(&hex::decode(&answer.as_str().unwrap()[2..]).unwrap()[12..32]);
        assert_ne!(pair, Address::ZERO);
        self.send(&token, setPairCall { pair }.abi_encode(), 0).await;
        token
    }

    /// A transaction from the first dev account carrying `value` wei; panics when it fails.
    pub async fn send(&self, to: &str, data: Vec<u8>, value: u128) {
        let tx = json!({
            "from": self.owner, "to": to, "data": format!("0x{}", hex::encode(data)),
            "value": format!("{value:#x}"), "gas": "0x1c9c380"
        });
        let hash = self.anvil.rpc("eth_sendTransaction", json!([tx])).await;
        // anvil mines at once, but the receipt can lag the hash by a moment.
        let mut receipt = Value::Null;
        for _ in 0..100 {
            receipt = self.anvil.rpc("eth_getTransactionReceipt", json!([hash])).await;
            if !receipt.is_null() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(receipt["status"], json!("0x1"), "{tx}: {receipt}");
    }
}

//! `/v1/chain/dex-price` against anvil serving chain id 1: two fixture ERC-20 tokens and a
//! Uniswap-v3-style pool placed (`anvil_setCode`) at the address Uniswap's mainnet factory
//! would deploy each fee tier's pool at, as `cast compute-address` computes it; the pool's
//! slot0 and liquidity compared with what `cast call` reads, the price with an independent
//! floating-point computation and with exact cases. Every answer is checked against the
//! route's published output schema.

use crate::common;

use alloy::primitives::{Address, U256, keccak256};
use alloy::sol_types::SolValue;
use common::chain::{cast, cast_offline, ethereum};
use paperchain_engine::chain::dex_price::{FACTORIES, POOL_INIT_CODE_HASH};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::anvil::{Anvil, Artifact};
use serde_json::{Value, json};

const PATH: &str = "/v1/chain/dex-price";

async fn call(ctx: &Context, body: Value) -> Result<Value, EngineError> {
    common::route::call(ctx, PATH, body).await
}

async fn ok(ctx: &Context, body: Value) -> Value {
    call(ctx, body.clone()).await.unwrap_or_else(|e| panic!("{body}: {e:?}"))
}

struct Pair {
    anvil: Anvil,
    ctx: Context,
}

impl Pair {
    async fn new() -> Pair {
        let anvil = Anvil::start(1).await;
        let ctx = ethereum(&anvil.url);
        Pair { anvil, ctx }
    }

    async fn token(&self, name: &str, symbol: &str, decimals: u8) -> String {
        let args = (name.to_string(), symbol.to_string(), U256::from(decimals), U256::from(1u64)).abi_encode_params();
        self.anvil.deploy(&Artifact::load("FixtureToken").init_code(&args)).await
    }

    /// The pool of `a`/`b` at `fee`, where cast says Uniswap's factory puts it, with its state set.
    async fn pool(&self, a: &str, b: &str, fee: u32, sqrt_price: U256, tick: i32, liquidity: u128) -> String {
        let (a, b): (Address, Address) = (a.parse().unwrap(), b.parse().unwrap());
        let (t0, t1) = if a < b { (a, b) } else { (b, a) };
        let salt = keccak256((t0, t1, alloy::primitives::aliases::U24::from(fee)).abi_encode());
        let factory = format!("{:#x}", FACTORIES[0].1);
        let out = cast_offline(&[
            "compute-address",
            &factory,
            "--salt",
            &salt.to_string(),
            "--init-code-hash",
            &POOL_INIT_CODE_HASH.to_string(),
        ]);
        let pool = out.rsplit(' ').next().unwrap().to_ascii_lowercase();
        self.anvil.set_code(&pool, &Artifact::load("MockUniswapV3Pool").deployed_bytecode).await;
        let args =
            (sqrt_price, alloy::primitives::aliases::I24::try_from(tick).unwrap(), liquidity, true).abi_encode_params();
        let data =
            format!("0x{}{}", hex::encode(&keccak256("setState(uint160,int24,uint128,bool)")[..4]), hex::encode(args));
        self.anvil.send(Some(&pool), &data).await;
        pool
    }
}

/// Quote per base from sqrtPriceX96, in floating point (the independent check).
fn float_price(sqrt_price: U256, base_is_token0: bool, base_decimals: i32, quote_decimals: i32) -> f64 {
    let ratio = sqrt_price.to_string().parse::<f64>().unwrap() / 2f64.powi(96);
    let (d0, d1) = if base_is_token0 { (base_decimals, quote_decimals) } else { (quote_decimals, base_decimals) };
    let token0_in_token1 = ratio * ratio * 10f64.powi(d0 - d1);
    if base_is_token0 { token0_in_token1 } else { 1.0 / token0_in_token1 }
}

fn close(answer: &Value, field: &str, expected: f64) {
    let got: f64 = answer[field].as_str().unwrap().parse().unwrap();
    assert!(((got - expected) / expected).abs() < 1e-12, "{field}: {got} vs {expected}");
}

#[tokio::test]
async fn prices_the_deepest_pool_as_cast_reads_it() {
    let p = Pair::new().await;
    let weth = p.token("Wrapped Ether", "WETH", 18).await;
    let usdc = p.token("USD Coin", "USDC", 6).await;
    // The USDC/WETH pools' real state at one moment (about 3,400 USDC per ETH), in both
    // orders: which token is token0 depends on the fixture addresses.
    let weth_is_token0 = weth.parse::<Address>().unwrap() < usdc.parse::<Address>().unwrap();
    let sqrt_price: U256 = if weth_is_token0 {
        "4613095136440036487052345".parse().unwrap()
    } else {
        "1360765585986427011022380412403305".parse().unwrap()
    };
    let deep = p.pool(&weth, &usdc, 500, sqrt_price, 195_000, 6_000_000_000_000_000_000).await;
    let shallow = p.pool(&weth, &usdc, 3000, sqrt_price + U256::from(1u64 << 60), 195_001, 1_000_000_000_000_000).await;

    let answer = ok(&p.ctx, json!({"chain": "ethereum", "base": weth, "quote": usdc})).await;
    assert_eq!(answer["pool"], json!(deep));
    assert_eq!((answer["fee"].clone(), answer["fee_percent"].clone()), (json!(500), json!("0.05")));
    assert_eq!(answer["dex"], "uniswap-v3");
    assert_eq!(answer["base"], json!({"address": weth, "symbol": "WETH", "decimals": 18}));
    assert_eq!(answer["quote"], json!({"address": usdc, "symbol": "USDC", "decimals": 6}));
    assert_eq!(answer["warnings"], json!([]));
    let expected = float_price(sqrt_price, weth_is_token0, 18, 6);
    assert!((3_000.0..4_000.0).contains(&expected), "{expected}");
    close(&answer, "price", expected);
    close(&answer, "inverse_price", 1.0 / expected);
    let pools = answer["pools"].as_array().unwrap();
    assert_eq!(pools.iter().map(|t| t["fee"].as_u64().unwrap()).collect::<Vec<_>>(), [100, 500, 3000, 10000]);
    assert_eq!(pools.iter().map(|t| t["exists"].as_bool().unwrap()).collect::<Vec<_>>(), [false, true, true, false]);
    assert_eq!(pools[2]["pool"], json!(shallow));
    assert_eq!(pools[0]["liquidity"], Value::Null);

    // cast reads the same pool state.
    let rpc = p.anvil.url.clone();
    let slot0 = cast(&rpc, &["call", &deep, "slot0()(uint160,int24,uint16,uint16,uint16,uint8,bool)"]);
    let mut lines = slot0.lines();
    assert_eq!(lines.next().unwrap().split(' ').next().unwrap(), answer["sqrt_price_x96"].as_str().unwrap());
    assert_eq!(lines.next().unwrap().split(' ').next().unwrap(), answer["tick"].to_string());
    let liquidity = cast(&rpc, &["call", &deep, "liquidity()(uint128)"]);
    assert_eq!(liquidity.split(' ').next().unwrap(), answer["liquidity"].as_str().unwrap());

    // The other way round, and a named tier.
    let inverse = ok(&p.ctx, json!({"chain": "ethereum", "base": usdc, "quote": weth, "fee": 3000})).await;
    assert_eq!(inverse["pool"], json!(shallow));
    close(&inverse, "price", 1.0 / float_price(sqrt_price + U256::from(1u64 << 60), weth_is_token0, 18, 6));
    assert_eq!(inverse["warnings"], json!([]));

    // At an earlier block, before the pools existed: 404.
    let e = call(&p.ctx, json!({"chain": "ethereum", "base": weth, "quote": usdc, "block": 2})).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e:?}");
    assert!(e.to_string().contains("WETH/USDC"), "{e}");
}

#[tokio::test]
async fn exact_prices_and_warnings() {
    let p = Pair::new().await;
    let a = p.token("Alpha", "A", 18).await;
    let b = p.token("Beta", "B", 18).await;
    let a_is_token0 = a.parse::<Address>().unwrap() < b.parse::<Address>().unwrap();
    // sqrtPriceX96 = 2 × 2^96: token0 costs exactly 4 token1.
    p.pool(&a, &b, 100, U256::from(2u8) << 96, 13_863, 5).await;
    let answer = ok(&p.ctx, json!({"chain": "ethereum", "base": a, "quote": b})).await;
    let (price, inverse) = if a_is_token0 { ("4", "0.25") } else { ("0.25", "4") };
    assert_eq!((answer["price"].as_str(), answer["inverse_price"].as_str()), (Some(price), Some(inverse)));
    assert_eq!(answer["warnings"].as_array().unwrap().len(), 1);
    assert!(answer["warnings"][0].as_str().unwrap().starts_with("shallow_pool"), "{answer}");

    // A pool without liquidity still answers its price, flagged.
    p.pool(&a, &b, 100, U256::from(2u8) << 96, 13_863, 0).await;
    let answer = ok(&p.ctx, json!({"chain": "ethereum", "base": a, "quote": b})).await;
    assert!(answer["warnings"][0].as_str().unwrap().starts_with("no_liquidity"), "{answer}");

    // No pool at all: 404 naming the pair.
    let c = p.token("Gamma", "C", 18).await;
    let e = call(&p.ctx, json!({"chain": "ethereum", "base": a, "quote": c})).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e:?}");
    assert!(e.to_string().contains("A/C"), "{e}");

    // A pool created but never initialised (sqrtPriceX96 zero) has no price either.
    p.pool(&a, &c, 500, U256::ZERO, 0, 0).await;
    let e = call(&p.ctx, json!({"chain": "ethereum", "base": c, "quote": a})).await.unwrap_err();
    assert_eq!(e.kind, ErrorKind::NotFound, "{e:?}");
    assert!(e.to_string().contains("no initialised Uniswap v3 pool of C/A"), "{e}");

    // A base that is not a token: 422 on /base.
    let e =
        call(&p.ctx, json!({"chain": "ethereum", "base": "0x000000000000000000000000000000000000dead", "quote": b}))
            .await
            .unwrap_err();
    assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some("/base")), "{e:?}");
}

#[tokio::test]
async fn input_errors_name_their_field() {
    let ctx = ethereum("http://127.0.0.1:9");
    let t = "0x00000000000000000000000000000000000000aa";
    let u = "0x00000000000000000000000000000000000000bb";
    for (body, field) in [
        (json!({"chain": "polygon", "base": t, "quote": u}), "/chain"),
        (json!({"chain": "ethereum", "base": t, "quote": t}), "/quote"),
        (json!({"chain": "ethereum", "base": "0x12", "quote": u}), "/base"),
        (json!({"chain": "ethereum", "base": t}), "/quote"),
        (json!({"chain": "ethereum", "base": t, "quote": u, "fee": 2500}), "/fee"),
        (json!({"chain": "ethereum", "base": t, "quote": u, "block": "soon"}), "/block"),
    ] {
        let e = call(&ctx, body.clone()).await.expect_err(&body.to_string());
        assert_eq!((e.kind, e.field.as_deref()), (ErrorKind::InvalidInput, Some(field)), "{body}: {e:?}");
    }
}

//! The six Solana routes against a real local validator (`paperchain-surfnet`: surfpool's
//! core with accounts, mints and transactions it made by real signed transactions), every
//! answer checked field by field against what the validator's own RPC reports; then the
//! cluster access layer against loopback nodes failing in each way a node can, and the
//! inputs a caller can get wrong.
//!
//! Every answer is checked against the route's published output schema.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::route::{err, ok};
use paperchain_engine::evm::ChainTimeouts;
use paperchain_engine::solana::token::{TokenProgram, associated_token_address};
use paperchain_engine::solana::{ClusterConfig, Clusters, Network};
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::fake_node::{FakeNode, Reply as Answer, rpc_result};
use paperchain_testkit::loopback::{closed_port_url, silent_server};
use paperchain_testkit::surfnet::Surfnet;
use serde_json::{Value, json};

const TOKEN: &str = "TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA";
const TOKEN_2022: &str = "TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb";
const MAINNET_GENESIS: &str = "5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d";
/// An address nothing on the validator uses (32 bytes of 7).
const NOBODY: &str = "US517G5965aydkZ46HS38QLi7UQiSojurfbQfKCELFx";

/// A context whose Solana mainnet is at `urls`, expecting `genesis`.
fn context(urls: &[&str], genesis: &str, timeouts: ChainTimeouts) -> Context {
    let urls = urls.iter().map(|u| u.parse().unwrap()).collect();
    let mut ctx = Context::new();
    ctx.solana =
        Arc::new(Clusters::new(vec![ClusterConfig::new(Network::Mainnet, urls).with_genesis(genesis)], timeouts));
    ctx
}

fn short_timeouts() -> ChainTimeouts {
    ChainTimeouts { total: Duration::from_secs(3), attempt: Duration::from_secs(1) }
}

/// The validator's own view of an owner's token accounts under `program`, jsonParsed.
async fn rpc_token_accounts(net: &Surfnet, owner: &str, program: &str) -> Vec<Value> {
    let answer = net
        .rpc(
            "getTokenAccountsByOwner",
            json!([owner, { "programId": program }, { "encoding": "jsonParsed", "commitment": "confirmed" }]),
        )
        .await;
    answer["value"].as_array().cloned().unwrap_or_default()
}

async fn rpc_parsed(net: &Surfnet, address: &str) -> Value {
    let answer =
        net.rpc("getAccountInfo", json!([address, { "encoding": "jsonParsed", "commitment": "confirmed" }])).await;
    answer["value"].clone()
}

async fn rpc_tx(net: &Surfnet, signature: &str) -> Value {
    net.rpc(
        "getTransaction",
        json!([signature, { "encoding": "jsonParsed", "maxSupportedTransactionVersion": 0, "commitment": "confirmed" }]),
    )
    .await
}

#[tokio::test]
async fn the_six_routes_answer_what_the_validator_reports() {
    let net = Surfnet::start().await;
    let genesis = net.genesis_hash().await;
    let ctx = context(&[&net.url], &genesis, ChainTimeouts::default());
    let f = |key: &str| net.fixture(key).to_string();
    let (owner, recipient, payer) = (f("owner"), f("recipient"), f("payer"));

    // Associated token accounts are where the validator's own crates put them.
    let bytes = |key: &str| -> [u8; 32] { bs58::decode(f(key)).into_vec().unwrap().try_into().unwrap() };
    for (holder, mint, program, ata) in [
        ("owner", "usdc_mint", TokenProgram::Token, "owner_usdc_ata"),
        ("recipient", "usdc_mint", TokenProgram::Token, "recipient_usdc_ata"),
        ("owner", "t22_mint", TokenProgram::Token2022, "owner_t22_ata"),
    ] {
        let derived = associated_token_address(&bytes(holder), &bytes(mint), program).unwrap();
        assert_eq!(bs58::encode(derived).into_string(), f(ata), "{ata}");
    }

    // --- balance ---------------------------------------------------------------------
    let sol = ok(&ctx, "/v1/solana/balance", json!({ "address": owner })).await;
    let lamports =
        net.rpc("getBalance", json!([owner, { "commitment": "confirmed" }])).await["value"].as_u64().unwrap();
    assert_eq!(sol["network"], "mainnet");
    assert_eq!((sol["asset"].as_str(), sol["decimals"].as_u64()), (Some("sol"), Some(9)));
    assert_eq!(sol["raw"], lamports.to_string());
    assert_eq!(sol["formatted"], format_units(u128::from(lamports), 9));

    let usdc = ok(&ctx, "/v1/solana/balance", json!({ "address": owner, "mint": f("usdc_mint") })).await;
    let rpc_sum: u64 = rpc_token_accounts(&net, &owner, TOKEN)
        .await
        .iter()
        .filter(|a| a["account"]["data"]["parsed"]["info"]["mint"] == f("usdc_mint"))
        .map(|a| {
            a["account"]["data"]["parsed"]["info"]["tokenAmount"]["amount"].as_str().unwrap().parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(usdc["raw"], rpc_sum.to_string());
    // 1,234,567,890 minted, 100,500,000 sent to the recipient.
    assert_eq!(usdc["raw"], "1134067890");
    assert_eq!(usdc["formatted"], "1134.06789");
    assert_eq!((usdc["asset"].as_str(), usdc["program"].as_str()), (Some("spl"), Some("spl-token")));
    assert_eq!((usdc["decimals"].as_u64(), usdc["accounts"].as_u64()), (Some(6), Some(1)));

    let none = ok(&ctx, "/v1/solana/balance", json!({ "address": NOBODY, "mint": f("usdc_mint") })).await;
    assert_eq!((none["raw"].as_str(), none["accounts"].as_u64()), (Some("0"), Some(0)));

    let e = err(&ctx, "/v1/solana/balance", json!({ "address": owner, "mint": owner })).await;
    assert_eq!((e.kind, e.code.as_ref(), e.field.as_deref()), (ErrorKind::InvalidInput, "not_a_token", Some("/mint")));
    assert!(e.message.contains("not a token mint") && e.message.contains("system"), "{}", e.message);
    let e = err(&ctx, "/v1/solana/balance", json!({ "address": owner, "mint": NOBODY })).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_token", Some("/mint")));
    assert!(e.message.contains("does not exist"), "{}", e.message);

    // --- tokens ----------------------------------------------------------------------
    let tokens = ok(&ctx, "/v1/solana/tokens", json!({ "owner": owner })).await;
    let mut expected = Vec::new();
    for program in [TOKEN, TOKEN_2022] {
        for item in rpc_token_accounts(&net, &owner, program).await {
            let info = &item["account"]["data"]["parsed"]["info"];
            expected.push((
                item["pubkey"].as_str().unwrap().to_string(),
                info["mint"].as_str().unwrap().to_string(),
                info["tokenAmount"]["amount"].as_str().unwrap().to_string(),
                info["tokenAmount"]["decimals"].as_u64().unwrap(),
                info["tokenAmount"]["uiAmountString"].clone(),
                info["state"].as_str().unwrap().to_string(),
            ));
        }
    }
    let listed: Vec<_> = tokens["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["account"].as_str().unwrap().to_string(),
                a["mint"].as_str().unwrap().to_string(),
                a["raw"].as_str().unwrap().to_string(),
                a["decimals"].as_u64().unwrap(),
                a["ui_amount"].clone(),
                a["state"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(listed.len(), 3, "usdc, t22 and nt accounts: {tokens:#}");
    for entry in &expected {
        assert!(listed.contains(entry), "{entry:?} missing from {listed:#?}");
    }
    assert_eq!((tokens["total"].as_u64(), tokens["truncated"].as_bool()), (Some(3), Some(false)));
    let programs: Vec<&str> =
        tokens["accounts"].as_array().unwrap().iter().map(|a| a["program"].as_str().unwrap()).collect();
    assert_eq!(programs, ["spl-token", "spl-token-2022", "spl-token-2022"], "sorted by program first");
    let t22_account = tokens["accounts"].as_array().unwrap().iter().find(|a| a["mint"] == f("t22_mint")).unwrap();
    assert_eq!(t22_account["account"], f("owner_t22_ata"));
    assert!(
        t22_account["extensions"].as_array().unwrap().iter().any(|e| e == "transferFeeAmount"),
        "a transfer-fee mint's accounts carry transferFeeAmount: {t22_account:#}"
    );
    let empty = ok(&ctx, "/v1/solana/tokens", json!({ "owner": NOBODY, "include_empty": true })).await;
    assert_eq!((empty["total"].as_u64(), empty["accounts"].as_array().map(Vec::len)), (Some(0), Some(0)));

    // --- token -----------------------------------------------------------------------
    let classic = ok(&ctx, "/v1/solana/token", json!({ "mint": f("usdc_mint") })).await;
    let info = rpc_parsed(&net, &f("usdc_mint")).await["data"]["parsed"]["info"].clone();
    assert_eq!(classic["supply"], info["supply"]);
    assert_eq!(classic["decimals"], info["decimals"]);
    assert_eq!(classic["mint_authority"], info["mintAuthority"]);
    assert_eq!(classic["freeze_authority"], info["freezeAuthority"]);
    assert_eq!(
        (classic["mint_authority"].as_str(), classic["freeze_authority"].as_str()),
        (Some(&*payer), Some(&*payer))
    );
    assert_eq!(classic["supply_formatted"], "1234.56789");
    assert_eq!(classic["program"], "spl-token");
    assert_eq!(classic["extensions"]["names"], json!([]));
    let metadata = &classic["metadata"];
    assert_eq!(metadata["source"], "metaplex");
    assert_eq!(metadata["account"], f("usdc_metadata"), "the metadata address is the program-derived one");
    assert_eq!((metadata["name"].as_str(), metadata["symbol"].as_str()), (Some("USD Coin"), Some("USDC")));
    assert_eq!(metadata["uri"], "https://example.com/usdc.json");
    assert_eq!((metadata["mutable"].as_bool(), metadata["seller_fee_basis_points"].as_u64()), (Some(true), Some(0)));

    let t22 = ok(&ctx, "/v1/solana/token", json!({ "mint": f("t22_mint") })).await;
    let info = rpc_parsed(&net, &f("t22_mint")).await["data"]["parsed"]["info"].clone();
    assert_eq!(t22["program"], "spl-token-2022");
    assert_eq!(t22["supply"], info["supply"]);
    assert_eq!(t22["freeze_authority"], Value::Null);
    let names: Vec<&str> =
        info["extensions"].as_array().unwrap().iter().map(|e| e["extension"].as_str().unwrap()).collect();
    assert_eq!(t22["extensions"]["names"], json!(names));
    let x = &t22["extensions"];
    assert_eq!(x["transfer_fee"]["newer"]["basis_points"], 50);
    assert_eq!(x["transfer_fee"]["newer"]["maximum_fee"], "5000000");
    assert_eq!(x["transfer_fee"]["config_authority"], payer);
    assert_eq!(x["interest_bearing"]["current_rate_bps"], 250);
    assert_eq!(x["interest_bearing"]["rate_authority"], payer);
    assert_eq!(x["permanent_delegate"], payer);
    assert_eq!(x["metadata_pointer"]["address"], f("t22_mint"));
    assert_eq!(x["non_transferable"], false);
    let metadata = &t22["metadata"];
    assert_eq!(
        (metadata["source"].as_str(), metadata["account"].as_str()),
        (Some("token-2022"), Some(&*f("t22_mint")))
    );
    assert_eq!((metadata["name"].as_str(), metadata["symbol"].as_str()), (Some("Paper Dollar"), Some("PUSD")));
    assert_eq!(metadata["additional"], json!([{ "key": "website", "value": "https://paperchain.example" }]));
    assert_eq!(metadata["update_authority"], payer);

    let nt = ok(&ctx, "/v1/solana/token", json!({ "mint": f("nt_mint") })).await;
    assert_eq!((nt["extensions"]["non_transferable"].as_bool(), nt["decimals"].as_u64()), (Some(true), Some(0)));
    assert_eq!(nt["metadata"], Value::Null);
    let e = err(&ctx, "/v1/solana/token", json!({ "mint": f("owner_usdc_ata") })).await;
    assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_token", Some("/mint")));

    // --- tx --------------------------------------------------------------------------
    let tx = ok(&ctx, "/v1/solana/tx", json!({ "signature": f("tx_sol") })).await;
    let raw = rpc_tx(&net, &f("tx_sol")).await;
    let fee = raw["meta"]["fee"].as_u64().unwrap();
    assert_eq!((tx["status"].as_str(), tx["error"].as_str()), (Some("success"), None));
    assert_eq!(tx["slot"], raw["slot"]);
    assert_eq!(tx["block_time"], raw["blockTime"]);
    assert_eq!(tx["fee"], fee.to_string());
    assert_eq!((tx["fee_payer"].as_str(), tx["signers"].clone()), (Some(&*owner), json!([owner])));
    assert_eq!(tx["compute_budget"]["unit_price_micro_lamports"], 1_000);
    let kinds: Vec<(&str, &str)> = tx["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["program"].as_str().unwrap_or("?"), i["type"].as_str().unwrap_or("?")))
        .collect();
    assert_eq!(kinds, [("compute-budget", "setComputeUnitPrice"), ("system", "transfer")]);
    assert_eq!(tx["instructions"][1]["info"]["lamports"], 250_000_000);
    assert_eq!(tx["instructions"][1]["info"]["destination"], recipient);
    let change = |changes: &Value, account: &str| {
        changes
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["account"] == account)
            .map(|c| c["change"].as_str().unwrap().to_string())
    };
    assert_eq!(change(&tx["sol_changes"], &recipient).as_deref(), Some("250000000"));
    assert_eq!(change(&tx["sol_changes"], &owner), Some(format!("-{}", 250_000_000 + fee)));
    if let Some(consumed) = raw["meta"]["computeUnitsConsumed"].as_u64() {
        assert_eq!(tx["compute_units"], consumed);
    }

    let tx = ok(&ctx, "/v1/solana/tx", json!({ "signature": f("tx_token") })).await;
    assert_eq!(tx["status"], "success");
    assert_eq!(change(&tx["token_changes"], &f("owner_usdc_ata")).as_deref(), Some("-100500000"));
    assert_eq!(change(&tx["token_changes"], &f("recipient_usdc_ata")).as_deref(), Some("100500000"));
    let received =
        tx["token_changes"].as_array().unwrap().iter().find(|c| c["account"] == f("recipient_usdc_ata")).unwrap();
    assert_eq!((received["pre"].as_str(), received["change_formatted"].as_str()), (Some("0"), Some("100.5")));
    assert_eq!((received["owner"].as_str(), received["mint"].as_str()), (Some(&*recipient), Some(&*f("usdc_mint"))));
    let raw = rpc_tx(&net, &f("tx_token")).await;
    assert_eq!(tx["logs"], raw["meta"]["logMessages"]);

    // Token-2022 with a 0.5% transfer fee: the recipient gets 9,950,000 of 10,000,000.
    let tx = ok(&ctx, "/v1/solana/tx", json!({ "signature": f("tx_t22") })).await;
    assert_eq!(change(&tx["token_changes"], &f("owner_t22_ata")).as_deref(), Some("-10000000"));
    assert_eq!(change(&tx["token_changes"], &f("recipient_t22_ata")).as_deref(), Some("9950000"));
    assert!(tx["token_changes"].as_array().unwrap().iter().all(|c| c["program"] == "spl-token-2022"), "{tx:#}");

    // A transfer of more than the owner holds, sent without preflight: it lands, failed.
    let tx = ok(&ctx, "/v1/solana/tx", json!({ "signature": f("tx_failed") })).await;
    let raw = rpc_tx(&net, &f("tx_failed")).await;
    assert_eq!(tx["status"], "failed");
    assert_eq!(tx["error"], raw["meta"]["err"].to_string());
    assert_eq!(tx["token_changes"], json!([]), "a failed transfer moves no tokens");
    let fee = raw["meta"]["fee"].as_u64().unwrap();
    assert_eq!(
        tx["sol_changes"],
        json!([{
            "account": owner, "pre": raw["meta"]["preBalances"][0].as_u64().unwrap().to_string(),
            "post": raw["meta"]["postBalances"][0].as_u64().unwrap().to_string(),
            "change": format!("-{fee}"), "change_sol": format!("-{}", format_units(u128::from(fee), 9)),
        }]),
        "only the fee is charged"
    );
    let unknown = bs58_of(&[9u8; 64]);
    let e = err(&ctx, "/v1/solana/tx", json!({ "signature": unknown })).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::NotFound, "not_found"), "{e:?}");

    // --- account ---------------------------------------------------------------------
    let wallet = ok(&ctx, "/v1/solana/account", json!({ "address": owner })).await;
    let balance = net.rpc("getBalance", json!([owner, { "commitment": "confirmed" }])).await["value"].as_u64().unwrap();
    let minimum = net.rpc("getMinimumBalanceForRentExemption", json!([0])).await.as_u64().unwrap();
    assert_eq!((wallet["kind"].as_str(), wallet["owner_name"].as_str()), (Some("wallet"), Some("system")));
    assert_eq!(wallet["lamports"], balance.to_string());
    assert_eq!(
        (wallet["data_size"].as_u64(), wallet["rent_exempt_minimum"].clone()),
        (Some(0), json!(minimum.to_string()))
    );
    assert_eq!(wallet["rent_exempt"], true);
    for (address, kind, size) in [
        (f("usdc_mint"), "mint", Some(82)),
        (f("owner_usdc_ata"), "token_account", Some(165)),
        (f("t22_mint"), "mint", None),
        (f("owner_t22_ata"), "token_account", None),
        (f("usdc_metadata"), "data", None),
    ] {
        let answer = ok(&ctx, "/v1/solana/account", json!({ "address": address })).await;
        let raw = rpc_parsed(&net, &address).await;
        assert_eq!(answer["kind"], kind, "{address}: {answer:#}");
        assert_eq!(answer["owner"], raw["owner"]);
        assert_eq!(answer["lamports"], raw["lamports"].as_u64().unwrap().to_string());
        assert_eq!(answer["data_size"], raw["space"]);
        if let Some(size) = size {
            assert_eq!(answer["data_size"], size);
        }
        let minimum = net.rpc("getMinimumBalanceForRentExemption", json!([raw["space"]])).await;
        assert_eq!(answer["rent_exempt_minimum"], minimum.as_u64().unwrap().to_string());
    }
    let program = ok(&ctx, "/v1/solana/account", json!({ "address": TOKEN })).await;
    assert_eq!((program["kind"].as_str(), program["executable"].as_bool()), (Some("program"), Some(true)));
    let missing = ok(&ctx, "/v1/solana/account", json!({ "address": NOBODY })).await;
    assert_eq!((missing["exists"].as_bool(), missing["kind"].as_str()), (Some(false), Some("missing")));
    assert_eq!((missing["owner"].clone(), missing["rent_exempt"].as_bool()), (Value::Null, Some(false)));

    // --- status ----------------------------------------------------------------------
    let before = net.rpc("getEpochInfo", json!([{ "commitment": "confirmed" }])).await;
    let status = ok(&ctx, "/v1/solana/status", json!({})).await;
    let after = net.rpc("getEpochInfo", json!([{ "commitment": "confirmed" }])).await;
    assert_eq!(status["genesis_hash"], genesis);
    let slot = status["slot"].as_u64().unwrap();
    assert!(before["absoluteSlot"].as_u64().unwrap() <= slot && slot <= after["absoluteSlot"].as_u64().unwrap());
    assert_eq!(status["epoch"], after["epoch"]);
    assert_eq!(status["slots_in_epoch"], after["slotsInEpoch"]);
    let height = status["block_height"].as_u64().unwrap();
    assert!(height <= net.rpc("getBlockHeight", json!([{ "commitment": "confirmed" }])).await.as_u64().unwrap());
    // The four fixture transactions paid 1,000 to 4,000 micro-lamports a unit, one a slot.
    let fees = net.rpc("getRecentPrioritizationFees", json!([[owner]])).await;
    let mut reported: Vec<u64> =
        fees.as_array().unwrap().iter().map(|f| f["prioritizationFee"].as_u64().unwrap()).collect();
    reported.sort_unstable();
    assert_eq!(reported, [1_000, 2_000, 3_000, 4_000], "{fees}");
    let own = ok(&ctx, "/v1/solana/status", json!({ "accounts": [owner] })).await;
    let p = &own["priority_fees"];
    assert_eq!((p["slots"].as_u64(), p["nonzero_slots"].as_u64()), (Some(4), Some(4)), "{own:#}");
    let ranks: Vec<u64> =
        ["min", "p25", "p50", "p75", "p90", "p95", "max"].iter().map(|k| p[k].as_u64().unwrap()).collect();
    assert_eq!(ranks, [1_000, 1_000, 2_000, 3_000, 4_000, 4_000, 4_000], "nearest-rank percentiles");
    let nobody = ok(&ctx, "/v1/solana/status", json!({ "accounts": [NOBODY] })).await;
    let theirs = net.rpc("getRecentPrioritizationFees", json!([[NOBODY]])).await;
    assert_eq!(nobody["priority_fees"]["slots"].as_u64().unwrap_or(0), theirs.as_array().unwrap().len() as u64);

    // --- a node of another cluster -----------------------------------------------------
    let wrong = context(&[&net.url], MAINNET_GENESIS, short_timeouts());
    let e = err(&wrong, "/v1/solana/status", json!({})).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{e:?}");
    assert!(e.message.contains(&genesis) && e.message.contains("PAPERCHAIN_RPC_SOLANA"), "{}", e.message);
}

fn bs58_of(bytes: &[u8]) -> String {
    paperchain_engine::solana::keys::SolanaSignature::from_bytes(bytes.try_into().unwrap()).as_str().to_string()
}

fn format_units(raw: u128, decimals: u8) -> String {
    paperchain_engine::solana::format_amount(raw, decimals)
}

// --- Failing nodes -----------------------------------------------------------------

/// A node of Solana mainnet (by its genesis hash) that gives `rest` for anything else.
async fn mainnet_node(rest: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> FakeNode {
    FakeNode::start(move |request| {
        if request["method"] == "getGenesisHash" { rpc_result(request, json!(MAINNET_GENESIS)) } else { rest(request) }
    })
    .await
}

async fn balance_error(urls: &[&str]) -> EngineError {
    let ctx = context(urls, MAINNET_GENESIS, short_timeouts());
    err(&ctx, "/v1/solana/balance", json!({ "address": NOBODY })).await
}

fn balance_answer(request: &Value) -> Answer {
    rpc_result(request, json!({ "context": { "slot": 7 }, "value": 1_500_000_000u64 }))
}

#[tokio::test]
async fn nodes_that_fail_answer_the_kind_of_failure() {
    let closed = closed_port_url().await;
    let e = balance_error(&[&closed]).await;
    assert_eq!((e.code.as_ref(), matches!(e.kind, ErrorKind::Unavailable { .. })), ("unavailable", true), "{e:?}");

    let (silent, task) = silent_server().await;
    let e = balance_error(&[&silent]).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::Timeout, "timeout"), "{e:?}");
    task.abort();

    let limited = FakeNode::start(|_| (429, vec![("Retry-After", "7".into())], "slow down".into())).await;
    let e = balance_error(&[&limited.url]).await;
    assert_eq!(e.kind, ErrorKind::RateLimited { retry_after: Duration::from_secs(7) }, "{e:?}");

    let html = FakeNode::start(|_| (200, vec![("Content-Type", "text/html".into())], "<html>hi</html>".into())).await;
    let e = balance_error(&[&html.url]).await;
    assert_eq!((e.kind, e.code.as_ref()), (ErrorKind::BadUpstream, "upstream_error"), "{e:?}");

    let garbage = mainnet_node(|r| rpc_result(r, json!({ "context": { "slot": 1 }, "value": "lots" }))).await;
    let e = balance_error(&[&garbage.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
    assert!(e.message.contains("balance"), "{}", e.message);

    let behind = mainnet_node(|r| {
        let error = json!({ "jsonrpc": "2.0", "id": r["id"], "error": { "code": -32005, "message": "Node is behind by 42 slots" } });
        (200, vec![], error.to_string())
    })
    .await;
    let e = balance_error(&[&behind.url]).await;
    assert!(matches!(e.kind, ErrorKind::Unavailable { .. }), "{e:?}");
    assert!(e.message.contains("behind"), "{}", e.message);

    let refused = mainnet_node(|r| {
        let error = json!({ "jsonrpc": "2.0", "id": r["id"], "error": { "code": -32602, "message": "Invalid param" } });
        (200, vec![], error.to_string())
    })
    .await;
    let e = balance_error(&[&refused.url]).await;
    assert_eq!(e.kind, ErrorKind::BadUpstream, "{e:?}");
}

#[tokio::test]
async fn urls_are_tried_in_order_and_each_is_asked_its_genesis_once() {
    let devnet = FakeNode::start(|r| match r["method"].as_str() {
        Some("getGenesisHash") => rpc_result(r, json!("EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG")),
        _ => balance_answer(r),
    })
    .await;
    let good = mainnet_node(balance_answer).await;
    let closed = closed_port_url().await;
    let ctx = context(&[&closed, &devnet.url, &good.url], MAINNET_GENESIS, short_timeouts());
    for _ in 0..3 {
        let answer = ok(&ctx, "/v1/solana/balance", json!({ "address": NOBODY })).await;
        assert_eq!(
            (answer["raw"].as_str(), answer["formatted"].as_str(), answer["slot"].as_u64()),
            (Some("1500000000"), Some("1.5"), Some(7))
        );
    }
    assert_eq!(devnet.count("getGenesisHash"), 1, "a node of another cluster is asked once");
    assert_eq!(devnet.count("getBalance"), 0, "and never read");
    assert_eq!((good.count("getGenesisHash"), good.count("getBalance")), (1, 3));

    // The node's URL may hold a key: messages name its host only.
    let keyed = format!("{}secret-key-123/", closed);
    let e = balance_error(&[&keyed]).await;
    assert!(!e.message.contains("secret-key-123"), "{}", e.message);
}

#[tokio::test]
async fn inputs_a_caller_can_get_wrong_are_refused_with_the_field_named() {
    let node = mainnet_node(balance_answer).await;
    let ctx = context(&[&node.url], MAINNET_GENESIS, short_timeouts());
    let signature = bs58_of(&[3u8; 64]);
    let cases = [
        ("/v1/solana/balance", json!({ "address": "0xd8da6bf26964af9d7eed9e03e53415d37aa96045" }), "/address"),
        ("/v1/solana/balance", json!({ "address": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1O" }), "/address"),
        ("/v1/solana/balance", json!({ "address": NOBODY, "mint": "" }), "/mint"),
        ("/v1/solana/balance", json!({ "address": NOBODY, "network": "testnet" }), "/network"),
        ("/v1/solana/balance", json!({ "address": NOBODY, "chain": "solana" }), ""),
        ("/v1/solana/balance", json!({}), ""),
        ("/v1/solana/tokens", json!({ "owner": NOBODY, "include_empty": "yes" }), "/include_empty"),
        ("/v1/solana/token", json!({ "mint": 42 }), "/mint"),
        ("/v1/solana/tx", json!({ "signature": NOBODY }), "/signature"),
        ("/v1/solana/tx", json!({ "signature": format!("0{}", &signature[1..]) }), "/signature"),
        ("/v1/solana/tx", json!({ "signature": format!("{signature}zz") }), "/signature"),
        ("/v1/solana/account", json!({ "address": "11111111111111111111111111111111 " }), "/address"),
        ("/v1/solana/status", json!({ "accounts": [NOBODY, NOBODY] }), "/accounts/1"),
        ("/v1/solana/status", json!({ "accounts": vec![NOBODY; 129] }), "/accounts"),
        ("/v1/solana/status", json!({ "accounts": ["nope"] }), "/accounts/0"),
    ];
    for (path, body, field) in cases {
        let e = err(&ctx, path, body.clone()).await;
        assert_eq!(e.kind, ErrorKind::InvalidInput, "{path} {body}: {e:?}");
        assert!(
            e.field.as_deref().unwrap_or("").starts_with(field),
            "{path} {body}: field {:?}: {}",
            e.field,
            e.message
        );
        assert!(!e.message.is_empty());
    }
    assert_eq!(node.count("getBalance"), 0, "nothing invalid reaches the node");
    // The defaults: mainnet, and a null mint is the SOL balance.
    let answer = ok(&ctx, "/v1/solana/balance", json!({ "address": NOBODY, "mint": null, "network": "mainnet" })).await;
    assert_eq!(answer["asset"], "sol");
}

#[test]
fn clusters_come_from_the_environment() {
    let vars = |key: &str| match key {
        "PAPERCHAIN_RPC_SOLANA" => Some("http://127.0.0.1:8899, ftp://nope, https://rpc.example/key".to_string()),
        "PAPERCHAIN_GENESIS_SOLANA" => Some(" 4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY ".to_string()),
        _ => None,
    };
    let clusters = Clusters::from_vars(vars);
    let mainnet = clusters.get(Network::Mainnet).unwrap();
    assert_eq!(mainnet.genesis_hash(), "4uhcVJyU9pJkvQyS88uRDiswHXSCkY3zQawwpjk2NsNY");
    let devnet = clusters.get(Network::Devnet).unwrap();
    assert_eq!(devnet.genesis_hash(), "EtWTRABZaYq6iMfeYKouRu166VU2xqa1wcaWoxPkrZBG");
    assert_eq!(Network::Devnet.rpc_env_var(), "PAPERCHAIN_RPC_SOLANA_DEVNET");
    assert_eq!(Network::Mainnet.genesis_env_var(), "PAPERCHAIN_GENESIS_SOLANA");
}

//! Interop: the official x402 TypeScript client (`@x402/fetch` with `@x402/evm` and viem, from
//! npm, as `cargo xtask setup` installs them) pays the hosted sandbox for a chain route and a
//! document route. Node runs tests/interop/x402-fetch-pay.mjs, which may fetch loopback
//! addresses only; the test checks the PAYMENT-RESPONSE the client decoded, the transaction
//! on the sandbox chain, and that the token balances moved by exactly the quote of the 402.

use std::path::Path;
use std::time::Duration;

use alloy::primitives::U256;
use paperchain_testkit::b64;
use paperchain_testkit::corpus::corpus_file;
use paperchain_testkit::node::{NodeRun, interop_script};
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

/// The npm packages the script loads, each checked before node runs.
const PACKAGES: [&str; 3] = ["@x402/fetch", "@x402/evm", "viem"];

/// Longest one paid call through node may take (node start-up, two requests, settlement).
const NODE_TIMEOUT: Duration = Duration::from_secs(120);

/// The quote of an unpaid call: the 402's `accepts[0].amount`.
async fn quote(server: &HostedServer, path: &str, body: &Value) -> U256 {
    let response = server.client.post(format!("{}{path}", server.base)).json(body).send().await.unwrap();
    assert_eq!(response.status(), 402, "{path}: an unpaid call is asked to pay");
    let required: Value = response.json().await.unwrap();
    assert!(required.get("error").is_none(), "{path}: a valid input is quoted without an error: {required}");
    let amount = required["accepts"][0]["amount"].as_str().unwrap_or_else(|| panic!("no amount in {required}"));
    U256::from_str_radix(amount, 10).unwrap()
}

/// How the script gets the request body.
#[derive(Clone, Copy)]
enum Body {
    Argument,
    /// Documents outgrow a command-line argument.
    Stdin,
}

/// Runs the TypeScript client once: POST `body` to `path` with the payer's key; its JSON line.
async fn pay_with_node(server: &HostedServer, tools: &Path, path: &str, body: &Value, via: Body) -> Value {
    let text = body.to_string();
    NodeRun {
        script: interop_script("x402-fetch-pay.mjs"),
        args: vec![
            &server.base,
            path,
            match via {
                Body::Argument => text.as_str(),
                Body::Stdin => "-",
            },
        ],
        stdin: match via {
            Body::Argument => None,
            Body::Stdin => Some(text.as_bytes()),
        },
        // The key by environment, not argv, where any process list would show it.
        env: vec![("PAPERCHAIN_PAYER_KEY", server.chain.payer_private_key())],
        timeout: NODE_TIMEOUT,
        label: path,
    }
    .last_json_line(tools)
    .await
}

/// A file input of corpus file `relative`, named `in.pdf`.
fn corpus_file_input(relative: &str) -> Value {
    json!({ "data": b64(&corpus_file(relative)), "filename": "in.pdf" })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_pays_a_chain_route_and_a_document_route() {
    let tools = tools_dir();
    require_node_packages(&tools, "the x402 TypeScript client", &PACKAGES);
    let server = sandbox::start(Setup::default()).await;
    let payer = server.chain.payer().to_string().to_lowercase();

    let calls = [
        ("/v1/chain/gas", json!({"chain": "base"}), Body::Argument),
        (
            "/v1/pdf/rotate",
            json!({"file": corpus_file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90, "output": "base64"}),
            Body::Stdin,
        ),
    ];
    let mut total = U256::ZERO;
    for (path, body, via) in calls {
        let price = quote(&server, path, &body).await;
        assert!(price > U256::ZERO, "{path}: a paid route has a price");
        let (payer_before, payee_before) = server.balances().await;

        let answer = pay_with_node(&server, &tools, path, &body, via).await;

        assert_eq!(answer["status"], 200, "{path}: {answer}");
        let settled = &answer["paymentResponse"];
        assert_eq!(settled["success"], true, "{path}: {answer}");
        assert_eq!(settled["network"], "eip155:8453", "{path}: {settled}");
        assert_eq!(settled["payer"].as_str().map(str::to_lowercase).as_deref(), Some(payer.as_str()), "{settled}");
        let tx = settled["transaction"].as_str().unwrap_or_else(|| panic!("{path}: no transaction in {settled}"));
        assert!(tx.len() == 66 && tx.starts_with("0x"), "{path}: `{tx}` is no transaction hash");
        assert_eq!(server.tx_succeeded(tx).await, Some(true), "{path}: the settlement {tx} is mined and succeeded");
        assert!(answer["body"].is_object(), "{path}: the route's answer: {answer}");
        assert!(answer["body"].get("error").is_none(), "{path}: {answer}");

        let (payer_after, payee_after) = server.balances().await;
        assert_eq!(payer_before - payer_after, price, "{path}: the payer paid exactly the quote");
        assert_eq!(payee_after - payee_before, price, "{path}: the payee got exactly the quote");
        println!(
            "{path}: quote {price}; payer {payer_before} -> {payer_after}; payee {payee_before} -> {payee_after}; tx {tx}"
        );
        total += price;
    }
    let totals = server.paywall.store().totals().await.unwrap();
    assert_eq!(totals.paid_calls, 2, "the ledger has both paid calls");
    assert_eq!(U256::from(totals.settled_amount), total, "the ledger's settled sum is the sum of the quotes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_pays_on_solana() {
    const SOLANA: &str = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp";
    let tools = tools_dir();
    require_node_packages(&tools, "the x402 TypeScript Solana client", &["@x402/fetch", "@x402/svm", "@solana/kit"]);
    let server = sandbox::start(Setup { solana: true, ..Setup::default() }).await;
    let solana = server.solana.as_ref().expect("the sandbox's Solana side");
    let path = "/v1/solana/status";
    let response = server.client.post(format!("{}{path}", server.base)).json(&json!({})).send().await.unwrap();
    let required: Value = response.json().await.unwrap();
    let offer = required["accepts"].as_array().unwrap().iter().find(|r| r["network"] == SOLANA).cloned();
    let price: u64 = offer.expect("a Solana offer")["amount"].as_str().unwrap().parse().unwrap();
    let balances = async || {
        (solana.balance_of(&solana.payer()).await.unwrap(), solana.balance_of(&solana.pay_to()).await.unwrap())
    };
    let before = balances().await;

    let rpc = solana.rpc_url().to_string();
    let answer = NodeRun {
        script: interop_script("x402-svm-pay.mjs"),
        args: vec![&server.base, path, "{}"],
        stdin: None,
        env: vec![("PAPERCHAIN_SOLANA_PAYER_KEY", solana.payer_secret_key()), ("PAPERCHAIN_SOLANA_RPC", rpc)],
        timeout: NODE_TIMEOUT,
        label: path,
    }
    .last_json_line(&tools)
    .await;

    assert_eq!(answer["status"], 200, "{answer}");
    let settled = &answer["paymentResponse"];
    assert_eq!((settled["success"].as_bool(), settled["network"].as_str()), (Some(true), Some(SOLANA)), "{settled}");
    assert_eq!(settled["payer"], solana.payer(), "{settled}");
    assert_eq!(answer["body"]["genesis_hash"], solana.genesis(), "the route read the sandbox validator: {answer}");
    let after = balances().await;
    assert_eq!(before.0 - after.0, price, "the payer paid exactly the quote");
    assert_eq!(after.1 - before.1, price, "the payee got exactly the quote");
    let row = server.paywall.store().recent(1).await.unwrap().pop().unwrap();
    assert_eq!(row.tx_hash.as_deref(), settled["transaction"].as_str(), "the hosted ledger has the settlement");
    println!("{path} on Solana: quote {price}; payer {} -> {}; tx {}", before.0, after.0, settled["transaction"]);
}

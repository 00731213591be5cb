//! Routed calls end to end, every front door as a user runs it: a wallet imported with
//! `paperchain wallet import` (the keystore file here; the keyring has its own tests), the
//! policy set with `paperchain config`, then `paperchain serve`, `paperchain mcp --stdio`
//! and `paperchain call --route hosted` sending calls to the hosted sandbox (anvil, the
//! test USDC, the facilitator settling real EIP-3009 transfers) and paying exactly its
//! quote; the ledger and its reconciliation agree with the chain, also after the local
//! server is killed with SIGKILL in the middle of a paid call (started again, it settles
//! the open payment from the chain).

use crate::common::Home;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::primitives::U256;
use base64::Engine as _;
use paperchain_testkit::corpus::corpus_file;
use paperchain_testkit::pdf::qpdf_pages;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::server::{loopback_listener, spawn_router};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().timeout(Duration::from_secs(120)).build().unwrap()
}

fn rotate_body() -> Value {
    let data = base64::engine::general_purpose::STANDARD.encode(corpus_file("sample-files/pdflatex-4-pages.pdf"));
    json!({"file": {"data": data, "filename": "four.pdf"}, "degrees": 90})
}

fn balance_body() -> Value {
    json!({"chain": "base", "address": "0x000000000000000000000000000000000000dEaD"})
}

/// The sandbox's quote for `path` with `body`.
async fn quote(hosted: &HostedServer, path: &str, body: &Value) -> U256 {
    let response = hosted.post(path, body, &[]).await;
    assert_eq!(response.status(), 402);
    let required: Value = response.json().await.unwrap();
    U256::from_str_radix(required["accepts"][0]["amount"].as_str().unwrap(), 10).unwrap()
}

fn free_pools() -> Setup {
    Setup {
        env: vec![("PAPERCHAIN_FREE_DOCS", "20".into()), ("PAPERCHAIN_FREE_CHAIN_READS", "20".into())],
        ..Setup::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_front_door_routed_to_the_sandbox_pays_the_quote_once_and_the_ledger_agrees() {
    let hosted = sandbox::start(free_pools()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.rotate_pdf_pages", "hosted"], "");
    let server = home.serve();
    let http = client();
    let payer = hosted.chain.payer();

    // The HTTP API: rotate routed by the configuration, balance by the call's header.
    let calls = [("/v1/pdf/rotate", rotate_body(), None), ("/v1/chain/balance", balance_body(), Some("hosted"))];
    for (path, body, header) in calls {
        let price = quote(&hosted, path, &body).await;
        let before = hosted.balance(payer).await;
        let mut request = http.post(format!("{}{path}", server.base)).json(&body);
        if let Some(mode) = header {
            request = request.header("paperchain-route", mode);
        }
        let routed = request.send().await.unwrap();
        assert_eq!(routed.status(), 200, "{path}");
        assert_eq!(routed.headers()["paperchain-ran"], "hosted", "{path}");
        assert!(routed.headers().contains_key("payment-response"), "{path}: the service's settlement is passed on");
        let paid = routed.headers()["paperchain-paid"].to_str().unwrap().to_string();
        let content_type = routed.headers()["content-type"].clone();
        let routed_body = routed.bytes().await.unwrap();
        assert_eq!(hosted.balance(payer).await, before - price, "{path}: the payer paid exactly the quote");
        assert!(paid.ends_with(" USDC"), "{paid}");
        // What the hosted service itself answers (a free call from its pool).
        let direct = hosted.post(path, &body, &[("X-Svc-Free", "1")]).await;
        assert_eq!(direct.status(), 200, "{path}");
        assert_eq!(direct.headers()["content-type"], content_type, "{path}");
        let direct_body = direct.bytes().await.unwrap();
        if path.ends_with("rotate") {
            assert_eq!(qpdf_pages(&routed_body), 4);
            assert_eq!(routed_body, direct_body, "the routed answer is the hosted service's, byte for byte");
        } else {
            assert_eq!(
                serde_json::from_slice::<Value>(&routed_body).unwrap(),
                serde_json::from_slice::<Value>(&direct_body).unwrap()
            );
        }
    }
    // A local call stays local and free.
    let local = http.post(format!("{}/v1/pdf/rotate", server.base)).header("paperchain-route", "local");
    let local = local.json(&rotate_body()).send().await.unwrap();
    assert_eq!((local.status().as_u16(), local.headers()["paperchain-ran"].to_str().unwrap()), (200, "local"));
    // A file by path, routed: read here and sent as bytes; the paid result is saved here.
    let docs = home.dir.path().join("docs");
    std::fs::create_dir(&docs).unwrap();
    std::fs::write(docs.join("four.pdf"), corpus_file("sample-files/pdflatex-4-pages.pdf")).unwrap();
    home.run(&["config", "add", "files.folders", docs.to_str().unwrap()], "");
    let price = quote(&hosted, "/v1/pdf/rotate", &rotate_body()).await;
    let before = hosted.balance(payer).await;
    let by_path = json!({"file": {"path": docs.join("four.pdf")}, "degrees": 90});
    let routed = http
        .post(format!("{}/v1/pdf/rotate", server.base))
        .header("paperchain-save-to", docs.join("rotated.pdf").to_str().unwrap())
        .json(&by_path)
        .send()
        .await
        .unwrap();
    assert_eq!(routed.status(), 200);
    assert_eq!(routed.headers()["paperchain-ran"], "hosted");
    assert!(routed.headers().contains_key("paperchain-paid"));
    let saved: Value = routed.json().await.unwrap();
    assert_eq!(saved["files"][0]["uri"], format!("file://{}", docs.join("rotated.pdf").display()), "{saved}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid the quote of the bytes sent, once");
    let direct = hosted.post("/v1/pdf/rotate", &rotate_body(), &[("X-Svc-Free", "1")]).await;
    let direct = direct.bytes().await.unwrap();
    assert_eq!(std::fs::read(docs.join("rotated.pdf")).unwrap(), direct, "the service's file, saved as it came");
    // A quote only: nothing paid.
    let before = hosted.balance(payer).await;
    let quoted = http
        .post(format!("{}/v1/chain/balance", server.base))
        .header("paperchain-route", "hosted")
        .header("paperchain-quote", "only")
        .json(&balance_body())
        .send()
        .await
        .unwrap();
    let quoted: Value = quoted.json().await.unwrap();
    assert_eq!(quoted["policy_allows"], true, "{quoted}");
    assert_eq!(quoted["would_pay"]["amount"], "2000", "{quoted}");
    assert_eq!(hosted.balance(payer).await, before);
    drop(server);

    // `paperchain call --route hosted`.
    let input = home.dir.path().join("rotate.json");
    std::fs::write(&input, json!({"degrees": 180}).to_string()).unwrap();
    let file = corpus_file("sample-files/pdflatex-4-pages.pdf");
    let pdf = home.dir.path().join("in.pdf");
    std::fs::write(&pdf, &file).unwrap();
    let out = home.dir.path().join("rotated.pdf");
    let price = quote(&hosted, "/v1/pdf/rotate", &rotate_body()).await;
    let before = hosted.balance(payer).await;
    let called = home.run(
        &[
            "call",
            "rotate_pdf_pages",
            "--route",
            "hosted",
            "--input",
            input.to_str().unwrap(),
            "-f",
            &format!("file={}", pdf.display()),
            "-o",
            out.to_str().unwrap(),
        ],
        "",
    );
    assert!(
        String::from_utf8_lossy(&called.stderr).contains("paid 0.0"),
        "{}",
        String::from_utf8_lossy(&called.stderr)
    );
    assert_eq!(qpdf_pages(&std::fs::read(&out).unwrap()), 4);
    assert_eq!(hosted.balance(payer).await, before - price);

    // `paperchain mcp --stdio`, routed by the configuration: sending a route to the hosted
    // service loosens the policy, followed once the person confirms it.
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    home.confirm();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["mcp", "--stdio", "--tools", "full"]);
    home.apply(command.as_std_mut());
    let mcp = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    let before = hosted.balance(payer).await;
    let params =
        CallToolRequestParams::new("get_wallet_balance").with_arguments(balance_body().as_object().cloned().unwrap());
    let result = mcp.call_tool(params).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{result:?}");
    let meta = result.meta.clone().expect("the result says where it ran");
    assert_eq!(meta.0["paperchain/ran"], "hosted");
    assert_eq!(meta.0["x402/payment-response"]["success"], true);
    assert_eq!(result.structured_content.as_ref().unwrap()["chain"], "base");
    assert_eq!(hosted.balance(payer).await, before - price);
    mcp.cancel().await.unwrap();

    // The ledger: every call, five paid ones, each transaction on chain for its amount.
    let rows = home.json(&["ledger", "--json"]);
    let rows = rows.as_array().unwrap();
    let paid: Vec<&Value> = rows.iter().filter(|r| r["state"] == "paid").collect();
    assert_eq!(paid.len(), 5, "{rows:#?}");
    let doors: Vec<&str> = paid.iter().map(|r| r["front_door"].as_str().unwrap()).collect();
    assert_eq!(doors, ["http", "http", "http", "cli", "mcp"]);
    for row in &paid {
        assert_eq!(hosted.tx_succeeded(row["tx"].as_str().unwrap()).await, Some(true));
        assert_eq!(row["payer"], payer.to_checksum(None));
        assert!(row["output_sha256"].as_str().is_some_and(|s| s.len() == 64));
    }
    assert!(
        rows.iter().any(|r| r["ran"] == "local" && r["route"] == "rotate_pdf_pages"),
        "local calls are recorded too"
    );
    let checks = home.json(&["ledger", "reconcile", "--json"]);
    let verdicts: Vec<&str> = checks.as_array().unwrap().iter().map(|c| c["verdict"].as_str().unwrap()).collect();
    assert_eq!(verdicts, ["ok", "ok", "ok", "ok", "ok"], "{checks:#}");
    // The wallet's balance, read through the engine's chain code, is the chain's.
    let balance = home.json(&["wallet", "balance", "--json"]);
    assert_eq!(balance["address"], payer.to_checksum(None));
    let base_usdc = balance["balances"].as_array().unwrap().iter().find(|b| b["network"] == "eip155:8453").unwrap();
    let held = hosted.balance(payer).await;
    let shown = base_usdc["balance"].as_str().unwrap();
    let (whole, fraction) = shown.split_once('.').unwrap_or((shown, ""));
    let atomic = U256::from_str_radix(&format!("{whole}{fraction:0<6}"), 10).unwrap();
    assert_eq!(atomic, held, "{balance:#}");
    assert!(base_usdc["gas"].as_str().is_some(), "{balance:#}");
    let spend = home.json(&["spend", "--json", "--by", "network"]);
    assert_eq!(spend["network"][0]["key"], "eip155:8453");
    assert_eq!(spend["network"][0]["paid_calls"], 5);
    // No key in the ledger, the server's debug log or any other file (the keystore holds it
    // encrypted).
    let logs: Vec<PathBuf> =
        walk(home.dir.path()).into_iter().filter(|p| p.extension().is_some_and(|e| e == "log")).collect();
    assert!(!logs.is_empty() && logs.iter().all(|l| std::fs::metadata(l).unwrap().len() > 0), "{logs:?}");
    assert_no_key(home.dir.path(), &hosted.chain.payer_private_key());
}

/// `key` (hex, with or without 0x, either case) appears in no file under `dir`.
fn assert_no_key(dir: &Path, key: &str) {
    let bare = key.trim_start_matches("0x").to_ascii_lowercase();
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
        assert!(!text.contains(&bare), "{} holds the key in clear", entry.display());
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// A proxy in front of the sandbox that, once the sandbox has answered (and settled) the
/// first paid call, tells the test and never answers.
async fn stalling_proxy(hosted: &HostedServer) -> (String, Arc<tokio::sync::Notify>) {
    let settled = Arc::new(tokio::sync::Notify::new());
    let (upstream, http, notify) = (hosted.base.clone(), hosted.client.clone(), settled.clone());
    let router = axum::Router::new().fallback(move |request: axum::extract::Request| {
        let (upstream, http, notify) = (upstream.clone(), http.clone(), notify.clone());
        async move {
            let path = request.uri().path().to_string();
            let payment = request.headers().get("payment-signature").cloned();
            let body = axum::body::to_bytes(request.into_body(), usize::MAX).await.unwrap();
            let mut forward =
                http.post(format!("{upstream}{path}")).header("content-type", "application/json").body(body);
            if let Some(payment) = &payment {
                forward = forward.header("payment-signature", payment.clone());
            }
            let answer = forward.send().await.unwrap();
            let status = answer.status();
            let headers = answer.headers().clone();
            let bytes = answer.bytes().await.unwrap();
            if payment.is_some() {
                notify.notify_one();
                std::future::pending::<()>().await;
            }
            let mut response = axum::response::Response::new(axum::body::Body::from(bytes));
            *response.status_mut() = status;
            for (name, value) in &headers {
                if name != "content-length" && name != "transfer-encoding" {
                    response.headers_mut().insert(name, value.clone());
                }
            }
            response
        }
    });
    let (listener, _, base) = loopback_listener().await;
    spawn_router(listener, router);
    (base, settled)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_during_a_paid_call_keeps_the_payment_in_its_ledger() {
    let hosted = sandbox::start(Setup::default()).await;
    let (proxy, settled) = stalling_proxy(&hosted).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &proxy);
    let mut server = home.serve();
    let payer = hosted.chain.payer();
    let before = hosted.balance(payer).await;
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    let base = server.base.clone();
    let call = tokio::spawn(async move {
        client()
            .post(format!("{base}/v1/chain/balance"))
            .header("paperchain-route", "hosted")
            .json(&balance_body())
            .send()
            .await
    });
    tokio::time::timeout(Duration::from_secs(60), settled.notified()).await.expect("the sandbox settled the call");
    // SIGKILL: no shutdown, no flush beyond what was committed.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(call.await.unwrap().is_err(), "the caller got no answer");
    assert_eq!(hosted.balance(payer).await, before - price, "the payment settled");

    let hosted_row = |home: &Home| {
        let rows = home.json(&["ledger", "--json"]);
        rows.as_array().unwrap().iter().find(|r| r["ran"] == "hosted").cloned().expect("the call's row")
    };
    let row = hosted_row(&home);
    assert_eq!(row["state"], "signed", "on disk before the signature left: {row:#}");
    // Started again on the same ledger, the server settles the open payment from the chain.
    let server = home.serve();
    let deadline = Instant::now() + Duration::from_secs(60);
    let row = loop {
        let row = hosted_row(&home);
        if row["state"] != "signed" || Instant::now() > deadline {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(row["state"], "paid", "{row:#}");
    let tx = row["tx"].as_str().unwrap().to_string();
    assert_eq!(hosted.tx_succeeded(&tx).await, Some(true));
    assert_eq!(row["amount"], price.to_string());
    // The reconciliation finds the transaction moved exactly that amount.
    let checks = home.json(&["ledger", "reconcile", "--json"]);
    assert_eq!(checks[0]["verdict"], "ok", "{checks:#}");
    assert_eq!(checks[0]["tx"], tx.as_str());
    // And the restarted server serves.
    let local = client().post(format!("{}/v1/pdf/rotate", server.base)).json(&rotate_body()).send().await.unwrap();
    assert_eq!(local.status(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_goes_to_the_service_only_when_the_engine_cannot_run_the_call_here() {
    let hosted = sandbox::start(Setup::default()).await;
    let mut home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.default", "auto"], "");
    // This machine cannot reach Base: nothing listens on the RPC port it is given.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    home.rpc = format!("http://{dead}");
    let server = home.serve();
    let payer = hosted.chain.payer();
    let before = hosted.balance(payer).await;
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    let http = client();
    let read = http.post(format!("{}/v1/chain/balance", server.base)).json(&balance_body()).send().await.unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(read.headers()["paperchain-ran"], "hosted", "the engine could not reach Base");
    assert_eq!(hosted.balance(payer).await, before - price);
    let rotated = http.post(format!("{}/v1/pdf/rotate", server.base)).json(&rotate_body()).send().await.unwrap();
    assert_eq!(rotated.status(), 200);
    assert_eq!(rotated.headers()["paperchain-ran"], "local", "the engine can rotate here");
    assert_eq!(hosted.balance(payer).await, before - price, "a local call is free");
    drop(server);
    let rows = home.json(&["ledger", "--json"]);
    let rows: Vec<(&str, &str, &str)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["route"].as_str().unwrap(), r["ran"].as_str().unwrap(), r["state"].as_str().unwrap()))
        .collect();
    assert_eq!(
        rows,
        [
            ("get_wallet_balance", "local", "failed"),
            ("get_wallet_balance", "hosted", "paid"),
            ("rotate_pdf_pages", "local", "done")
        ]
    );
}

/// The app's settings as the page at `/app/` reads them, with the token it carries.
async fn app_settings(base: &str) -> Value {
    let token = crate::common::app_token(base).await;
    let settings = client().get(format!("{base}/app/api/settings")).header("x-paperchain-token", token);
    settings.send().await.unwrap().json().await.unwrap()
}

/// A wallet balance read through the local server at `base` (routed as `route` says, else
/// as configured): its status and answer.
async fn balance_call(base: &str, route: Option<&str>) -> (u16, Value) {
    let mut request = client().post(format!("{base}/v1/chain/balance")).json(&balance_body());
    if let Some(route) = route {
        request = request.header("paperchain-route", route);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.json::<Value>().await.unwrap())
}

/// Asserts the spend policy refused a call, naming `key`.
fn refused((status, body): (u16, Value), key: &str) {
    assert_eq!((status, body["error"]["code"].as_str()), (402, Some("refused_by_policy")), "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains(key), "names {key}: {message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limit_lowered_while_the_server_runs_holds_from_its_next_call() {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    let server = home.serve();
    let payer = hosted.chain.payer();
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    assert_eq!(price, U256::from(2000), "$0.002 a read");
    let call = || balance_call(&server.base, None);
    let mut paid = hosted.balance(payer).await;
    assert_eq!(call().await.0, 200);
    assert_eq!(hosted.balance(payer).await, paid - price);
    paid -= price;

    // Lowered with the CLI below the price: the running server refuses the next call.
    home.run(&["config", "set", "policy.per_call", "0.0015"], "");
    refused(call().await, "policy.per_call");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid");
    // Raised again: nothing is paid until the person confirms it at a terminal with the
    // wallet's password; then the running server pays, and `paperchain call` through it
    // prints the transaction.
    let raised = home.run(&["config", "set", "policy.per_call", "0.05"], "");
    let said = String::from_utf8_lossy(&raised.stdout).to_string();
    assert!(
        said.contains("Not followed until you confirm it") && said.contains("policy.per_call: $0.0015 → $0.05"),
        "{said}"
    );
    assert!(said.contains("paperchain config confirm"), "says where to confirm: {said}");
    refused(call().await, "policy.per_call");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid before the person confirms");
    let (confirmed, text) = home.on_a_terminal(&["config", "confirm"], "not the password\n");
    assert!(!confirmed && text.contains("not the wallet's password"), "{text}");
    // Taken back, the file is as confirmed; raised again, it waits again.
    let discarded = String::from_utf8_lossy(&home.run(&["config", "discard"], "").stdout).to_string();
    assert!(discarded.contains("Taken back: policy.per_call: $0.0015 → $0.05"), "{discarded}");
    let file = std::fs::read_to_string(home.dir.path().join("config/paperchain/config.toml")).unwrap();
    assert!(file.contains("per_call = \"0.0015\""), "{file}");
    home.run(&["config", "set", "policy.per_call", "0.05"], "");
    let unconfirmed = home.command(&["config", "confirm"]).stdin(Stdio::null()).output().unwrap();
    let text = String::from_utf8_lossy(&unconfirmed.stderr);
    assert!(!unconfirmed.status.success() && text.contains("needs you at a terminal"), "{text}");
    refused(call().await, "policy.per_call");
    let text = home.confirm();
    assert!(text.contains("policy.per_call: $0.0015 → $0.05"), "the change is shown before the password: {text}");
    let input = home.dir.path().join("balance.json");
    std::fs::write(&input, balance_body().to_string()).unwrap();
    let called = home.run(&["call", "get_wallet_balance", "--input", input.to_str().unwrap()], "");
    let said = String::from_utf8_lossy(&called.stderr).to_string();
    assert_eq!(hosted.balance(payer).await, paid - price, "{said}");
    paid -= price;
    let rows = home.json(&["ledger", "--json"]);
    let tx = rows.as_array().unwrap().iter().rev().find(|r| r["state"] == "paid").unwrap()["tx"].as_str().unwrap();
    assert!(tx.starts_with("0x") && said.contains(&format!("transaction {tx}")), "{said}");

    // Edited by hand, in place, as an editor does: a day cap under what was spent today.
    let file = home.dir.path().join("config/paperchain/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("[policy]\n", "[policy]\nper_day = \"0.005\"\n")).unwrap();
    refused(call().await, "policy.per_day");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid");
    assert_eq!(app_settings(&server.base).await["policy"]["per_day"], "0.005");

    // A file that does not parse changes nothing: the lowered cap holds, and both the
    // wallet's status and the app say the file is not followed.
    std::fs::write(&file, format!("{}\n[policy\n", std::fs::read_to_string(&file).unwrap())).unwrap();
    refused(call().await, "policy.per_day");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid");
    let status = String::from_utf8_lossy(&home.run(&["wallet", "status"], "").stdout).to_string();
    assert!(status.contains("policy:   NOT FOLLOWED") && status.contains("last valid configuration"), "{status}");
    let settings = app_settings(&server.base).await;
    assert!(settings["problem"].as_str().is_some_and(|p| p.contains("config.toml")), "{settings:#}");
    assert_eq!(settings["policy"]["per_day"], "0.005", "the last valid settings are shown");

    drop(server);
    let rows = home.json(&["ledger", "--json"]);
    let states: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states.iter().filter(|s| **s == "paid").count(), 2, "{states:?}");
    assert!(
        rows.as_array().unwrap().iter().all(|r| r["state"] == "paid" || r["payer"].is_null()),
        "a refused call signed nothing: {rows:#}"
    );
}

/// An agent with a shell raises its day cap by editing `config.toml`, then forges the
/// confirmed record beside it: the next call over the confirmed cap is refused and nothing
/// is paid; `wallet status` and the app show the change waiting; the person confirms it in
/// the app with the wallet's password, and the next call pays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_with_a_shell_cannot_raise_its_own_limits() {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    home.run(&["config", "set", "policy.per_day", "0.003"], "");
    // The first process that pays confirms the file as it is then.
    let server = home.serve();
    let payer = hosted.chain.payer();
    let call = || balance_call(&server.base, None);
    let before = hosted.balance(payer).await;
    assert_eq!(call().await.0, 200);
    let paid = hosted.balance(payer).await;
    assert_eq!(before - paid, U256::from(2000));
    refused(call().await, "policy.per_day");

    // The agent raises the cap by hand: the running server keeps to the confirmed one.
    let file = home.dir.path().join("config/paperchain/config.toml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("per_day = \"0.003\""), "{text}");
    std::fs::write(&file, text.replace("per_day = \"0.003\"", "per_day = \"1000\"")).unwrap();
    refused(call().await, "policy.per_day");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid over the confirmed cap");
    let status = String::from_utf8_lossy(&home.run(&["wallet", "status"], "").stdout).to_string();
    assert!(
        status.contains("followed as far as you confirmed it") && status.contains("policy.per_day: $0.003 → $1000.00"),
        "{status}"
    );
    let settings = app_settings(&server.base).await;
    assert_eq!(settings["unconfirmed"]["changes"], json!(["policy.per_day: $0.003 → $1000.00"]), "{settings:#}");
    assert_eq!(settings["unconfirmed"]["confirm_with"], "password");
    assert_eq!(settings["policy"]["per_day"], "0.003", "the app shows the cap followed");
    // Nor can it confirm without the person: no terminal, no password.
    let confirm = home.command(&["config", "confirm"]).stdin(Stdio::null()).output().unwrap();
    assert!(!confirm.status.success(), "{confirm:?}");

    // It forges the record: a record that does not match its seal confirms nothing at all.
    let record = home.dir.path().join("config/paperchain/config.confirmed.toml");
    let sealed = std::fs::read_to_string(&record).unwrap();
    std::fs::write(&record, sealed.replace("per_day = \"0.003\"", "per_day = \"1000\"")).unwrap();
    // Nothing confirmed: routes run here, and one sent to the service is refused, saying
    // where to confirm.
    let (status, body) = call().await;
    assert_eq!((status, body["address"].as_str()), (200, Some("0x000000000000000000000000000000000000dead")), "{body}");
    let hosted_call = || balance_call(&server.base, Some("hosted"));
    refused(hosted_call().await, "paperchain config confirm");
    assert_eq!(hosted.balance(payer).await, paid, "nothing paid");
    let settings = app_settings(&server.base).await;
    let reason = settings["unconfirmed"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("changed since it was sealed"), "{settings:#}");

    // The person confirms in the app: the wrong password confirms nothing, the right one
    // confirms the changes shown, and the next call pays.
    let token = crate::common::app_token(&server.base).await;
    let confirm = |password: &str, changes: &Value| {
        let body = json!({"changes": changes, "password": password});
        let request = client().post(format!("{}/app/api/settings/confirm", server.base)).json(&body);
        request.header("x-paperchain-token", token.clone()).send()
    };
    let shown = settings["unconfirmed"]["changes"].clone();
    let wrong = confirm("guess", &shown).await.unwrap();
    assert_eq!(wrong.status(), 403);
    let said: Value = wrong.json().await.unwrap();
    assert!(said["error"]["message"].as_str().unwrap().contains("not the wallet's password"), "{said}");
    let stale = confirm(crate::common::PASSWORD, &json!(["something else"])).await.unwrap();
    assert_eq!(stale.status(), 409, "only the changes as they are now are confirmed");
    refused(hosted_call().await, "changed since it was sealed");
    let confirmed = confirm(crate::common::PASSWORD, &shown).await.unwrap();
    assert_eq!(confirmed.status(), 200);
    let settings: Value = confirmed.json().await.unwrap();
    assert_eq!(
        (&settings["unconfirmed"], &settings["policy"]["per_day"]),
        (&Value::Null, &json!("1000.00")),
        "{settings:#}"
    );
    assert_eq!(call().await.0, 200);
    assert_eq!(paid - hosted.balance(payer).await, U256::from(2000), "paid once the person confirmed");

    // A raise the person does not want is taken back from the app: the file is as confirmed.
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, text.replace("per_day = \"1000\"", "per_day = \"5000\"")).unwrap();
    let request = client().post(format!("{}/app/api/settings/discard", server.base));
    let discarded = request.header("x-paperchain-token", token.clone()).send().await.unwrap();
    assert_eq!(discarded.status(), 200);
    let settings: Value = discarded.json().await.unwrap();
    assert_eq!(settings["unconfirmed"], Value::Null, "{settings:#}");
    assert!(std::fs::read_to_string(&file).unwrap().contains("per_day = \"1000\""));
}

/// `paperchain call` on a terminal, answering `answer` to the approval question; its
/// output, terminal and all.
fn call_on_a_terminal(home: &Home, input: &Path, answer: &str) -> (bool, String) {
    let input = input.to_str().unwrap();
    home.on_a_terminal(&["call", "get_wallet_balance", "--route", "hosted", "--input", input], answer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn above_the_threshold_the_cli_asks_and_pays_only_on_yes() {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "policy.approve_above", "0.001"], "");
    let input = home.dir.path().join("balance.json");
    std::fs::write(&input, balance_body().to_string()).unwrap();
    let payer = hosted.chain.payer();
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    let before = hosted.balance(payer).await;

    let (paid, text) = call_on_a_terminal(&home, &input, "n\n");
    assert!(!paid, "{text}");
    assert!(text.contains("above policy.approve_above. Pay it? [y/N]"), "the question was asked: {text}");
    assert!(text.contains("the user did not approve"), "{text}");
    assert_eq!(hosted.balance(payer).await, before, "nothing was paid");

    let (paid, text) = call_on_a_terminal(&home, &input, "y\n");
    assert!(paid, "{text}");
    assert!(text.contains("\"chain\": \"base\""), "the answer is printed: {text}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, on yes");

    // Without a terminal nothing can ask: refused, saying so.
    let mut command = home.command(&["call", "get_wallet_balance", "--route", "hosted", "--input"]);
    let output = command.arg(&input).stdin(Stdio::null()).output().unwrap();
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("nothing here can ask"), "{output:?}");
    assert_eq!(hosted.balance(payer).await, before - price);
}

/// An agent on the default MCP surface of a server that pays: it can read the spend limits
/// and what is left, and ask what a call would cost, but no tool changes a limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_reads_its_budget_and_a_quote_and_no_tool_changes_them() {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    home.run(&["config", "set", "policy.per_day", "0.01"], "");
    let server = home.serve();
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_paperchain"));
    command.args(["mcp", "--stdio"]);
    home.apply(command.as_std_mut());
    let mcp = ().serve(TokioChildProcess::new(command).unwrap()).await.unwrap();
    let tools = mcp.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["chain_read", "document_operation", "describe_operation", "wallet_budget", "quote_operation"]);
    for tool in &tools {
        let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint);
        let runs = ["chain_read", "document_operation"].contains(&tool.name.as_ref());
        assert!(runs || read_only == Some(true), "{} is not read-only", tool.name);
    }
    let call = |name: &'static str, arguments: Value| {
        let params = CallToolRequestParams::new(name).with_arguments(arguments.as_object().cloned().unwrap());
        let mcp = &mcp;
        async move { mcp.call_tool(params).await.unwrap() }
    };
    let structured = |result: &rmcp::model::CallToolResult| {
        assert_ne!(result.is_error, Some(true), "{result:?}");
        result.structured_content.clone().unwrap()
    };

    // A quote: what the service asks, what the policy would pay; nothing moves.
    let payer = hosted.chain.payer();
    let before = hosted.balance(payer).await;
    let price = quote(&hosted, "/v1/chain/balance", &balance_body()).await;
    let quoted =
        structured(&call("quote_operation", json!({"operation": "get_wallet_balance", "input": balance_body()})).await);
    assert_eq!(quoted["payment_required"], true, "{quoted}");
    assert_eq!(quoted["policy_allows"], true, "{quoted}");
    assert_eq!(quoted["would_pay"]["amount"], price.to_string(), "{quoted}");
    assert_eq!(hosted.balance(payer).await, before, "a quote pays nothing");

    // A paid call, then the budget counts it.
    let paid = call("chain_read", json!({"operation": "get_wallet_balance", "input": balance_body()})).await;
    assert_eq!(structured(&paid)["chain"], "base");
    assert_eq!(hosted.balance(payer).await, before - price);
    let budget = structured(&call("wallet_budget", json!({})).await);
    assert_eq!(budget["today"], json!({"cap": "$0.01", "spent": "$0.002", "left": "$0.008"}), "{budget}");
    assert_eq!(budget["this_session"]["cap"], Value::Null, "{budget}");
    let client_name = rmcp::ClientHandler::get_info(&()).client_info.name;
    assert_eq!(budget["this_client_today"]["client"], client_name.as_str(), "{budget}");
    assert_eq!(budget["this_client_today"]["spent"], "$0.002", "{budget}");
    assert_eq!(budget["routing"]["service"], hosted.base.trim_end_matches('/'), "{budget}");

    // The user lowers the day cap: the next budget shows it, from the file, at once.
    home.run(&["config", "set", "policy.per_day", "0.003"], "");
    let budget = structured(&call("wallet_budget", json!({})).await);
    assert_eq!(budget["today"]["left"], "$0.001", "{budget}");
    assert_eq!(budget["waiting_for_the_user"], Value::Null, "{budget}");
    // The user raises it again: the agent sees the cap still followed, and the raise waiting.
    home.run(&["config", "set", "policy.per_day", "5"], "");
    let budget = structured(&call("wallet_budget", json!({})).await);
    assert_eq!(budget["today"]["cap"], "$0.003", "{budget}");
    assert_eq!(budget["waiting_for_the_user"]["changes"], json!(["policy.per_day: $0.003 → $5.00"]), "{budget}");
    mcp.cancel().await.unwrap();
    drop(server);
}

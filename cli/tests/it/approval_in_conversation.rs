//! Payment approval in the conversation: a routed call above `policy.approve_above`, from
//! the official MCP TypeScript SDK client over `/mcp` of `paperchain serve`, asks the user
//! through URL-mode elicitation. The client opens the one-time page and answers it as the
//! user would: approve pays once, deny pays nothing and the ledger says denied, and the page
//! is gone once answered. A client without elicitation waits for the app's dialog, as before.

use std::time::Duration;

use alloy::primitives::U256;
use paperchain_testkit::sandbox::{self, HostedServer, Setup};
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

use crate::common::{Home, app_token};

fn balance_body() -> Value {
    json!({"chain": "base", "address": "0x000000000000000000000000000000000000dEaD"})
}

/// The sandbox's price of one balance read.
async fn price(hosted: &HostedServer) -> U256 {
    let required: Value = hosted.post("/v1/chain/balance", &balance_body(), &[]).await.json().await.unwrap();
    U256::from_str_radix(required["accepts"][0]["amount"].as_str().unwrap(), 10).unwrap()
}

/// One session of the TypeScript SDK client at `/mcp` of `base` reading a balance routed
/// to the service; with `elicitation` the client takes URL-mode elicitation and answers so.
async fn session(base: &str, elicitation: Option<&str>) -> Value {
    session_with(json!({ "url": format!("{base}/mcp") }), elicitation).await
}

/// The same session with the client speaking to `server` (a URL, or a command over stdio).
async fn session_with(server: Value, elicitation: Option<&str>) -> Value {
    let mut plan = json!({
        "server": server,
        "steps": [{ "call": "chain_read", "arguments": { "operation": "get_wallet_balance", "input": balance_body() } }],
    });
    if let Some(decision) = elicitation {
        plan["elicitation"] = json!(decision);
    }
    crate::common::ts_sdk_session(&plan, Duration::from_secs(120), elicitation.unwrap_or("no elicitation")).await
}

fn last_row(home: &Home) -> Value {
    let rows = home.json(&["ledger", "--json"]);
    rows.as_array().unwrap().iter().rev().find(|r| r["route"] == "get_wallet_balance").cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_the_user_to_approve_a_payment_through_its_client() {
    require_node_packages(&tools_dir(), "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    home.run(&["config", "set", "policy.approve_above", "0.001"], "");
    let server = home.serve();
    let payer = hosted.chain.payer();
    let price = price(&hosted).await;
    let before = hosted.balance(payer).await;

    // Approved on the page the client opened: paid once.
    let line = session(&server.base, Some("approve")).await;
    let result = &line["steps"][0]["result"];
    assert_ne!(result["isError"], true, "{line}");
    assert_eq!(result["structuredContent"]["chain"], "base", "{line}");
    let asked = &line["elicitations"][0];
    assert_eq!(asked["params"]["mode"], "url", "{line}");
    let url = asked["params"]["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{}/app/approve/", server.base)), "{url}");
    let message = asked["params"]["message"].as_str().unwrap();
    assert!(message.contains("get_wallet_balance") && message.contains("USDC"), "{message}");
    let page = asked["page"]["text"].as_str().unwrap();
    assert_eq!(asked["page"]["status"], 200, "{asked}");
    assert_eq!(asked["page"]["frameOptions"], "DENY", "no other page can frame it");
    let host = hosted.base.trim_start_matches("http://").rsplit_once(':').unwrap().0;
    for shown in ["paperchain-interop", "get_wallet_balance", host, "Approve", "Deny"] {
        assert!(page.contains(shown), "the page shows {shown}: {page}");
    }
    assert_eq!(asked["answer"]["status"], 200, "{asked}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, after the approval");
    assert_eq!(last_row(&home)["state"], "paid");
    // Answered: its page is gone.
    let again = reqwest::get(url).await.unwrap();
    assert_eq!(again.status(), 404);

    // Denied on the page: nothing signed or paid, and the ledger says denied.
    let before = hosted.balance(payer).await;
    let line = session(&server.base, Some("deny")).await;
    let result = &line["steps"][0]["result"];
    assert_eq!(result["isError"], true, "{line}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("refused"), "{line}");
    assert!(line["elicitations"][0]["answer"]["text"].as_str().unwrap().contains("Denied"), "{line}");
    assert_eq!(hosted.balance(payer).await, before, "nothing paid");
    let row = last_row(&home);
    assert_eq!((row["state"].as_str(), row["micros"].as_i64()), (Some("denied"), Some(0)), "{row}");

    // Over stdio, relayed to the running server: the request to open the page reaches the
    // client through the relay, and its approval pays once.
    let before = hosted.balance(payer).await;
    let home_dir = home.dir.path();
    let env = json!({
        "HOME": home_dir,
        "XDG_CONFIG_HOME": home_dir.join("config"),
        "XDG_DATA_HOME": home_dir.join("data"),
        "PAPERCHAIN_WALLET_STORE": "keystore",
        "PAPERCHAIN_WALLET_PASSWORD_FILE": home_dir.join("password"),
        "PAPERCHAIN_RPC_BASE": home.rpc,
    });
    let stdio = json!({ "command": env!("CARGO_BIN_EXE_paperchain"), "args": ["mcp", "--stdio"], "env": env });
    let line = session_with(stdio, Some("approve")).await;
    assert_ne!(line["steps"][0]["result"]["isError"], true, "{line}");
    assert_eq!(line["elicitations"][0]["answer"]["status"], 200, "{line}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, approved through the relay");

    // A page of another approval's id, or with a wrong token, answers nothing.
    let forged = reqwest::Client::new()
        .post(format!("{}/app/approve/1", server.base))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={}&decision=approve", "0".repeat(32)))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 404);

    // A client without elicitation: the call waits for the app's dialog, which approves it.
    let before = hosted.balance(payer).await;
    let base = server.base.clone();
    let waiting_call = tokio::spawn(async move { session(&base, None).await });
    let token = app_token(&server.base).await;
    let http = reqwest::Client::new();
    let id = loop {
        let waiting: Value = http
            .get(format!("{}/app/api/approvals", server.base))
            .header("x-paperchain-token", &token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if let Some(first) = waiting["waiting"].as_array().and_then(|w| w.first()) {
            assert_eq!(first["client"], "paperchain-interop", "{waiting}");
            break first["id"].as_u64().unwrap();
        }
        assert!(!waiting_call.is_finished(), "the call ended without waiting for approval");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let answered = http
        .post(format!("{}/app/api/approvals/{id}", server.base))
        .header("x-paperchain-token", &token)
        .json(&json!({ "approve": true }))
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 200);
    let line = waiting_call.await.unwrap();
    assert_ne!(line["steps"][0]["result"]["isError"], true, "{line}");
    assert_eq!(line["elicitations"], json!([]), "nothing elicited from a client without it");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, approved in the app");
}

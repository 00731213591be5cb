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

use crate::common::{Home, Server, app_token};

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

/// The sandbox, a user whose balance reads go to it with approval above $0.001, and the
/// user's `paperchain serve`.
async fn approving_server() -> (HostedServer, Home, Server) {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    home.run(&["config", "set", "policy.approve_above", "0.001"], "");
    let server = home.serve();
    (hosted, home, server)
}

fn last_row(home: &Home) -> Value {
    let rows = home.json(&["ledger", "--json"]);
    rows.as_array().unwrap().iter().rev().find(|r| r["route"] == "get_wallet_balance").cloned().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_asks_the_user_to_approve_a_payment_through_its_client() {
    require_node_packages(&tools_dir(), "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let (hosted, home, server) = approving_server().await;
    let payer = hosted.chain.payer();
    let price = price(&hosted).await;
    let before = hosted.balance(payer).await;

    // Approved on the page the client opened: paid once.
    let line = session(&server.base, Some("approve")).await;
    let asked = &line["elicitations"][0];
    let url = answered_after_asking(&line, &server.base);
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

/// One session of the Python SDK client speaking protocol 2026-07-28 (no handshake; the
/// server sends no request of its own) at `/mcp` of `base`, with `steps`; with `decision`
/// the client takes elicitation and answers the page so.
async fn modern_session(base: &str, decision: Option<&str>, steps: Value) -> Value {
    let mut plan = json!({ "server": { "url": format!("{base}/mcp") }, "protocol": "2026-07-28", "steps": steps });
    if let Some(decision) = decision {
        plan["elicitation"] = json!(decision);
    }
    let mut command = tokio::process::Command::new(tools_dir().join("bin/python"));
    command.arg(paperchain_testkit::node::interop_script("mcp_sdk_session.py"));
    let plan = plan.to_string();
    let label = format!("python 2026-07-28 {}", decision.unwrap_or("no elicitation"));
    let line =
        paperchain_testkit::node::last_json_line_of(command, Some(plan.as_bytes()), Duration::from_secs(120), &label)
            .await;
    assert!(line["sdk"].as_str().is_some_and(|v| !v.is_empty()), "{label}: {line}");
    line
}

/// Checks that the session's first step read the balance after its client was asked to
/// open this server's approval page, by URL-mode elicitation; that page's URL.
fn answered_after_asking<'a>(line: &'a Value, base: &str) -> &'a str {
    let result = &line["steps"][0]["result"];
    assert_ne!(result["isError"], true, "{line}");
    assert_eq!(result["structuredContent"]["chain"], "base", "{line}");
    let asked = &line["elicitations"][0];
    assert_eq!(asked["params"]["mode"], "url", "{line}");
    let url = asked["params"]["url"].as_str().unwrap();
    assert!(url.starts_with(&format!("{base}/app/approve/")), "{url}");
    url
}

/// The `error` object of a tool error's text.
fn tool_error(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    let text: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
    text["error"].clone()
}

fn balance_step() -> Value {
    json!({ "call": "chain_read", "arguments": { "operation": "get_wallet_balance", "input": balance_body() } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_2026_07_28_client_is_asked_by_a_round_trip_and_the_payment_waits_for_its_return() {
    let (hosted, home, server) = approving_server().await;
    let payer = hosted.chain.payer();
    let price = price(&hosted).await;

    // The SDK drives the rounds: the call answers input_required with the page, the client
    // opens it (the user approves), comes back with `accept` and the requestState, and the
    // held call pays once.
    let before = hosted.balance(payer).await;
    let line = modern_session(&server.base, Some("approve"), json!([balance_step()])).await;
    let asked = &line["elicitations"][0];
    answered_after_asking(&line, &server.base);
    assert!(asked["params"]["message"].as_str().unwrap().contains("get_wallet_balance"), "{asked}");
    assert_eq!(asked["page"]["status"], 200, "{asked}");
    assert_eq!(asked["answer"]["status"], 200, "{asked}");
    assert_eq!(line["elicitations"].as_array().unwrap().len(), 1, "asked once: {line}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, after the approval");
    assert_eq!(last_row(&home)["state"], "paid");

    // Denied on the page: the repeat gets the refusal, nothing is paid, the ledger says denied.
    let before = hosted.balance(payer).await;
    let line = modern_session(&server.base, Some("deny"), json!([balance_step()])).await;
    let result = &line["steps"][0]["result"];
    assert_eq!(result["isError"], true, "{line}");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("refused"), "{line}");
    assert_eq!(hosted.balance(payer).await, before, "nothing paid");
    let row = last_row(&home);
    assert_eq!((row["state"].as_str(), row["micros"].as_i64()), (Some("denied"), Some(0)), "{row}");

    // Rounds taken by hand: the first answer is the question and the state; a repeat with
    // other arguments, or with a state nobody was given, is refused naming requestState; a
    // repeat with no answer is asked again; a decline in the client denies.
    let before = hosted.balance(payer).await;
    let mut other = balance_step();
    other["arguments"]["input"]["address"] = json!("0x000000000000000000000000000000000000bEEF");
    other["round"] = json!({ "request_state": "previous" });
    let mut again = balance_step();
    again["round"] = json!({ "request_state": "previous" });
    let mut declined = balance_step();
    declined["round"] =
        json!({ "request_state": "previous", "input_responses": { "payment_approval": { "action": "decline" } } });
    let mut forged = balance_step();
    forged["round"] = json!({ "request_state": "0".repeat(32), "input_responses": {} });
    let mut first = balance_step();
    first["round"] = json!({});
    let line = modern_session(&server.base, Some("approve"), json!([first, again, declined, forged])).await;
    let steps = &line["steps"];
    let question = &steps[0]["result"];
    assert_eq!(question["resultType"], "input_required", "{line}");
    let state = question["requestState"].as_str().unwrap();
    assert_eq!(state.len(), 32, "{question}");
    assert_eq!(question["inputRequests"]["payment_approval"]["params"]["mode"], "url", "{question}");
    assert_eq!(steps[1]["result"]["resultType"], "input_required", "asked again: {line}");
    assert_eq!(steps[1]["result"]["requestState"], state, "{line}");
    let refusal = &steps[2]["result"];
    assert_eq!(refusal["isError"], true, "{line}");
    assert!(refusal["content"][0]["text"].as_str().unwrap().contains("refused"), "{line}");
    let unknown = &steps[3]["result"];
    assert_eq!(unknown["isError"], true, "{line}");
    let error = tool_error(unknown);
    assert_eq!(error["code"], "approval_not_waiting", "{line}");
    assert_eq!(error["field"], "/requestState", "{line}");
    assert_eq!(line["elicitations"], json!([]), "rounds by hand elicit nothing: {line}");
    assert_eq!(hosted.balance(payer).await, before, "nothing paid");
    assert_eq!(last_row(&home)["state"], "denied");

    // Another call's repeat: refused, and the held call stays for its own.
    let mut first = balance_step();
    first["round"] = json!({});
    let line = modern_session(&server.base, Some("approve"), json!([first, other])).await;
    let wrong = &line["steps"][1]["result"];
    let error = tool_error(wrong);
    assert_eq!(error["code"], "approval_not_waiting", "{line}");
    assert!(error["message"].as_str().unwrap().contains("another call"), "{line}");

    // Approved on the page while the client is away: nothing is paid until it comes back
    // (from another session: the requestState alone names the held call), then once.
    let before = hosted.balance(payer).await;
    let mut first = balance_step();
    first["round"] = json!({});
    let line = modern_session(&server.base, Some("approve"), json!([first])).await;
    let question = &line["steps"][0]["result"];
    let state = question["requestState"].as_str().unwrap().to_string();
    let url = question["inputRequests"]["payment_approval"]["params"]["url"].as_str().unwrap();
    let token = url.split("token=").nth(1).unwrap();
    let page = reqwest::Client::new()
        .post(url.split('?').next().unwrap())
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}&decision=approve"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(hosted.balance(payer).await, before, "approved, but the client has not come back");
    let mut back = balance_step();
    back["round"] =
        json!({ "request_state": state, "input_responses": { "payment_approval": { "action": "accept" } } });
    let line = modern_session(&server.base, Some("approve"), json!([back])).await;
    let result = &line["steps"][0]["result"];
    assert_ne!(result["isError"], true, "{line}");
    assert_eq!(result["structuredContent"]["chain"], "base", "{line}");
    assert_eq!(hosted.balance(payer).await, before - price, "paid once, on its return");
    assert_eq!(last_row(&home)["state"], "paid");
}

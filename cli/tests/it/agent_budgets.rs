//! Agents are the clients the policy counts. An MCP client that names itself
//! `claude-desktop` (the official TypeScript and Python SDKs) reads balances routed to the
//! hosted sandbox, over `/mcp` of `paperchain serve` and through `paperchain mcp --stdio`
//! relayed to it: every call is recorded under that name, and the name's day budget
//! (`policy.clients`) holds across both doors: one call is paid, the ones past the budget
//! are refused naming it, and nothing more moves.

use std::time::Duration;

use alloy::primitives::U256;
use paperchain_testkit::node::{interop_script, last_json_line_of};
use paperchain_testkit::sandbox::{self, Setup};
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

use crate::common::Home;

const AGENT: &str = "claude-desktop";

fn balance_call() -> Value {
    json!({ "call": "chain_read", "arguments": { "operation": "get_wallet_balance", "input": {
        "chain": "base", "address": "0x000000000000000000000000000000000000dEaD" } } })
}

/// One session of the SDK client named `AGENT` at `server` taking `calls` balance reads.
async fn agent_session(server: Value, calls: usize) -> Value {
    let plan = json!({ "server": server, "client_name": AGENT, "steps": vec![balance_call(); calls] });
    crate::common::ts_sdk_session(&plan, Duration::from_secs(120), "an agent's session").await
}

fn refused_for_the_budget(step: &Value) -> bool {
    let text = step["result"]["content"][0]["text"].as_str().unwrap_or_default();
    step["result"]["isError"] == true && text.contains(AGENT) && text.contains("policy.clients")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agents_day_budget_holds_over_mcp_and_the_stdio_relay() {
    require_node_packages(&tools_dir(), "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    home.run(&["config", "set", "routing.routes.get_wallet_balance", "hosted"], "");
    let required: Value = hosted
        .post(
            "/v1/chain/balance",
            &json!({"chain": "base", "address": "0x000000000000000000000000000000000000dEaD"}),
            &[],
        )
        .await
        .json()
        .await
        .unwrap();
    let price: u64 = required["accepts"][0]["amount"].as_str().unwrap().parse().unwrap();
    // One and a half calls' worth a day (USDC has six decimals).
    let budget = format!("{:.6}", price as f64 * 1.5 / 1e6);
    home.run(&["config", "set", &format!("policy.clients.\"{AGENT}\""), &budget], "");
    let server = home.serve();
    let payer = hosted.chain.payer();
    let before = hosted.balance(payer).await;

    // Over /mcp: the first read is paid, the second is past the agent's budget.
    let line = agent_session(json!({ "url": format!("{}/mcp", server.base) }), 2).await;
    assert_ne!(line["steps"][0]["result"]["isError"], true, "{line}");
    assert!(refused_for_the_budget(&line["steps"][1]), "{line}");
    assert_eq!(hosted.balance(payer).await, before - U256::from(price), "paid once");

    // The official Python SDK client, named the same, over /mcp: the same spent budget.
    let plan = json!({ "server": { "url": format!("{}/mcp", server.base) }, "client_name": AGENT,
        "steps": [balance_call()] })
    .to_string();
    let mut command = tokio::process::Command::new(tools_dir().join("bin/python"));
    command.arg(interop_script("mcp_sdk_session.py"));
    let line = last_json_line_of(command, Some(plan.as_bytes()), Duration::from_secs(120), "python").await;
    assert!(refused_for_the_budget(&line["steps"][0]), "{line}\nledger: {}", home.json(&["ledger", "--json"]));

    // Through the stdio relay to the same server: the same agent, the same spent budget.
    let dir = home.dir.path();
    let env = json!({
        "HOME": dir,
        "XDG_CONFIG_HOME": dir.join("config"),
        "XDG_DATA_HOME": dir.join("data"),
        "PAPERCHAIN_WALLET_STORE": "keystore",
        "PAPERCHAIN_WALLET_PASSWORD_FILE": dir.join("password"),
        "PAPERCHAIN_RPC_BASE": home.rpc,
    });
    let stdio = json!({ "command": env!("CARGO_BIN_EXE_paperchain"), "args": ["mcp", "--stdio"], "env": env });
    let line = agent_session(stdio, 1).await;
    assert!(refused_for_the_budget(&line["steps"][0]), "{line}");
    assert_eq!(hosted.balance(payer).await, before - U256::from(price), "nothing more moved");

    // The ledger has every call under the agent's name, one of them paid.
    let rows = home.json(&["ledger", "--json"]);
    let reads: Vec<&Value> = rows.as_array().unwrap().iter().filter(|r| r["route"] == "get_wallet_balance").collect();
    assert_eq!(reads.len(), 4, "{rows}");
    assert!(reads.iter().all(|r| r["client"] == AGENT && r["front_door"] == "mcp"), "{rows}");
    assert_eq!(reads.iter().filter(|r| r["state"] == "paid").count(), 1, "{rows}");
}

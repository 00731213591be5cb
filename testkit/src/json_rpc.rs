//! A JSON-RPC call to a local node (anvil, the Solana validator), as the tests make them.

use serde_json::{Value, json};

/// Calls `method` at `url`: its result, or its error object (or a transport error as a string).
pub async fn call(client: &reqwest::Client, url: &str, method: &str, params: Value) -> Result<Value, Value> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .map_err(|e| json!(e.to_string()))?;
    let bytes = response.bytes().await.map_err(|e| json!(e.to_string()))?;
    let mut answer: Value = serde_json::from_slice(&bytes).map_err(|e| json!(e.to_string()))?;
    match answer.get_mut("error").map(Value::take) {
        Some(error) if !error.is_null() => Err(error),
        _ => Ok(answer.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
    }
}

//! The funding upstream's stand-in: a loopback server that replays recorded-shape
//! Hyperliquid answers (`engine/tests/fixtures/hyperliquid`) to `POST /info`.

use tokio::net::TcpListener;

use crate::loopback::{read_request, write_response};

/// A recorded answer by its file name, or None when there is none.
fn fixture(name: &str) -> Option<Vec<u8>> {
    std::fs::read(crate::workspace_root().join("engine/tests/fixtures/hyperliquid").join(name)).ok()
}

/// The recorded answer to one `/info` request body: the market listing, a coin's funding
/// history (`[]` for a coin with none recorded), or None for a request of another type.
pub fn answer(request: &serde_json::Value) -> Option<Vec<u8>> {
    match request["type"].as_str()? {
        "metaAndAssetCtxs" => fixture("meta_and_asset_ctxs.json"),
        "fundingHistory" => {
            let coin = request["coin"].as_str().unwrap_or("");
            Some(fixture(&format!("funding_history_{coin}.json")).unwrap_or_else(|| b"[]".to_vec()))
        }
        _ => None,
    }
}

/// Starts a replaying server on a loopback port; answers its base URL (`http://127.0.0.1:<port>`).
pub async fn replay() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Some(request) = read_request(&mut socket).await else { return };
                let body = serde_json::from_slice(&request.body).ok();
                let recorded = if request.path() == "/info" { body.as_ref().and_then(answer) } else { None };
                match recorded {
                    Some(bytes) => {
                        write_response(&mut socket, 200, &[("Content-Type", "application/json".to_string())], &bytes)
                            .await
                    }
                    None => write_response(&mut socket, 400, &[], b"{\"error\":\"unknown request\"}").await,
                }
            });
        }
    });
    format!("http://{addr}")
}

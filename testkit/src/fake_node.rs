//! A scripted JSON-RPC node (or any JSON-over-HTTP upstream) on a loopback port: every
//! request is answered by the test's handler, and the JSON-RPC method of each request is
//! remembered, so a test can make an upstream fail in every way a real one can and count
//! what the code under test asked.

use std::future::Future;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::net::TcpListener;

use crate::loopback::{read_request_body, write_response};

/// What a fake node answers to one request: status, extra headers, body.
pub type Reply = (u16, Vec<(&'static str, String)>, String);

/// A loopback HTTP server answering every request with its handler; stopped when dropped.
pub struct FakeNode {
    /// `http://127.0.0.1:<port>/`.
    pub url: String,
    /// The JSON-RPC method of each request, in order: `batch` for a batch, `request` for
    /// anything else that has no method (not JSON, say).
    pub calls: Arc<Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeNode {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeNode {
    /// A node answering each request with `handler`, given the request's JSON body (Null
    /// when it is not JSON).
    pub async fn start(handler: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> FakeNode {
        FakeNode::serve(move |request, _| std::future::ready(handler(&request))).await
    }

    /// A node whose handler may wait (forward to a real node, say): it is given the
    /// request's JSON body (Null when it is not JSON) and its bytes as they came.
    pub async fn serve<F, Fut>(handler: F) -> FakeNode
    where
        F: Fn(Value, Vec<u8>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Reply> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/", listener.local_addr().unwrap());
        let calls = Arc::new(Mutex::new(Vec::new()));
        let handler = Arc::new(handler);
        let seen = calls.clone();
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let handler = handler.clone();
                let seen = seen.clone();
                tokio::spawn(async move {
                    let Some(body) = read_request_body(&mut socket).await else { return };
                    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    seen.lock().unwrap().push(method_of(&request));
                    let (status, headers, text) = handler(request, body).await;
                    write_response(&mut socket, status, &headers, text.as_bytes()).await;
                });
            }
        });
        FakeNode { url, calls, task }
    }

    /// How many requests were calls of `method` (`batch` counts batches).
    pub fn count(&self, method: &str) -> usize {
        self.calls.lock().unwrap().iter().filter(|m| *m == method).count()
    }
}

fn method_of(request: &Value) -> String {
    match &request["method"] {
        Value::String(m) => m.clone(),
        _ if request.is_array() => "batch".to_string(),
        _ => "request".to_string(),
    }
}

/// A JSON-RPC success answering `request` with `result`.
pub fn rpc_result(request: &Value, result: Value) -> Reply {
    (200, vec![], json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string())
}

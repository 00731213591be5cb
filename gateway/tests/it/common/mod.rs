//! A gateway in local mode on a random loopback port, for the HTTP tests (corpus files,
//! page counts and the hosted sandbox come from `paperchain-testkit`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use paperchain_engine::Context;
use paperchain_gateway::{HttpServer, ServerConfig};
use paperchain_testkit::server::spawn_router;
use serde_json::{Value, json};

pub struct Server {
    pub addr: SocketAddr,
    pub base: String,
    pub client: reqwest::Client,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub async fn start(data_dir: &Path) -> Server {
    start_with(data_dir, None).await
}

pub async fn start_with(data_dir: &Path, public_url: Option<&str>) -> Server {
    start_full(data_dir, public_url, Context::new()).await
}

pub async fn start_full(data_dir: &Path, public_url: Option<&str>, ctx: Context) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = ServerConfig::local(data_dir.to_path_buf());
    config.listen = addr;
    config.public_url = public_url.map(str::to_string);
    config.request_timeout = Duration::from_secs(60);
    let router = HttpServer::new(config, ctx).router(addr).unwrap();
    let task = spawn_router(listener, router);
    Server {
        addr,
        base: format!("http://{addr}"),
        client: reqwest::Client::builder().no_proxy().build().unwrap(),
        task,
    }
}

impl Server {
    pub async fn post(&self, path: &str, body: &Value) -> reqwest::Response {
        self.client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(serde_json::to_vec(body).unwrap())
            .send()
            .await
            .unwrap()
    }

    pub async fn post_json(&self, path: &str, body: &Value) -> (u16, Value) {
        let response = self.post(path, body).await;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.unwrap();
        let value = serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({ "raw_bytes": bytes.len() }));
        (status, value)
    }
}

//! A gateway on a random loopback port, and corpus files, for the HTTP tests.

#![allow(dead_code)]

pub mod hosted;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine as _;
use paperchain_engine::Context;
use paperchain_gateway::{HttpServer, ServerConfig};
use serde_json::{Value, json};

pub struct Server {
    pub addr: SocketAddr,
    pub base: String,
    pub data_dir: PathBuf,
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
    let task = tokio::spawn(async move {
        axum::serve(listener, router).await.unwrap();
    });
    Server {
        addr,
        base: format!("http://{addr}"),
        data_dir: data_dir.to_path_buf(),
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

pub fn corpus() -> PathBuf {
    let dir = std::env::var_os("PAPERCHAIN_CORPUS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus"));
    assert!(dir.join("pdf").is_dir(), "the test corpus is missing at {}; set PAPERCHAIN_CORPUS", dir.display());
    dir
}

pub fn corpus_file(relative: &str) -> Vec<u8> {
    std::fs::read(corpus().join("pdf").join(relative)).unwrap()
}

pub fn file_input(relative: &str) -> Value {
    json!({ "data": base64::engine::general_purpose::STANDARD.encode(corpus_file(relative)), "filename": Path::new(relative).file_name().unwrap().to_string_lossy() })
}

pub fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub fn qpdf_pages(bytes: &[u8]) -> u32 {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.pdf");
    std::fs::write(&path, bytes).unwrap();
    let check = std::process::Command::new("qpdf")
        .arg("--check")
        .arg(&path)
        .output()
        .expect("qpdf is installed (cargo xtask setup)");
    assert!(check.status.success(), "qpdf --check failed: {}", String::from_utf8_lossy(&check.stdout));
    let out = std::process::Command::new("qpdf").arg("--show-npages").arg(&path).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

//! The server as a library: started twice in one process, each time stopped by its own
//! caller, it leaves its port free and none of its tasks running; the sandbox starts each
//! run with a fresh store.

use std::net::SocketAddr;
use std::time::Duration;

use paperchain_engine::Context;
use paperchain_gateway::ServerConfig;
use paperchain_server::SandboxOptions;
use paperchain_server::{HostedMode, Options, Server};
use paperchain_testkit::b64;
use serde_json::{Value, json};

fn config(dir: &std::path::Path, port: u16) -> ServerConfig {
    let mut config = ServerConfig::local(dir.to_path_buf());
    config.listen = SocketAddr::from(([127, 0, 0, 1], port));
    config.request_timeout = Duration::from_secs(60);
    config
}

/// A client that keeps no connection open once a call is answered, so that what is left
/// running afterwards is the server's alone.
fn client() -> reqwest::Client {
    reqwest::Client::builder().no_proxy().pool_max_idle_per_host(0).build().unwrap()
}

fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// Waits (up to 10 s) for the runtime's task count to come back to `baseline`; returns the last count.
async fn settle_to(baseline: usize) -> usize {
    for _ in 0..200 {
        if alive_tasks() <= baseline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    alive_tasks()
}

/// Uses the HTTP API (a file result stored as a link, then downloaded) and an MCP endpoint.
async fn exercise(server: &Server) {
    let base = server.base_url().to_string();
    let http = client();
    let health: Value = http.get(format!("{base}/healthz")).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["status"], "ok");
    let pdf = one_page_pdf();
    let body = json!({ "file": { "data": b64(&pdf) }, "degrees": 90, "output": "url" });
    let link: Value =
        http.post(format!("{base}/v1/pdf/rotate")).json(&body).send().await.unwrap().json().await.unwrap();
    let url = link["url"].as_str().unwrap_or_else(|| panic!("a link: {link}"));
    let file = http.get(url).send().await.unwrap();
    assert_eq!(file.status(), 200);
    assert!(file.bytes().await.unwrap().starts_with(b"%PDF-"));
    // A local server's MCP endpoint keeps a session per client: the handshake opens one and
    // answers come as an event stream. The session is left open, as a client that goes
    // away leaves it: the server's stop must end it too.
    let endpoint = format!("{base}/mcp/docs");
    let post = |body: Value, session: Option<&str>| {
        let mut request = http
            .post(&endpoint)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "lifecycle", "version": "0" }
    }});
    let opened = post(init, None).await.unwrap();
    let session = opened.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let _ = opened.text().await.unwrap();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let _ = post(initialized, Some(&session)).await.unwrap().text().await.unwrap();
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {} });
    let text = post(list, Some(&session)).await.unwrap().text().await.unwrap();
    let data = text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).rfind(|d| !d.is_empty());
    let tools: Value = serde_json::from_str(data.unwrap_or(&text)).unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(tools["result"]["tools"].as_array().is_some_and(|t| !t.is_empty()), "{tools}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn started_twice_each_stop_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = alive_tasks();
    let mut port = 0;
    for run in 0..2 {
        let options = Options { ctx: Some(Context::new()), ..Options::local(config(dir.path(), port)) };
        let server = paperchain_server::start(options).await.unwrap_or_else(|e| panic!("run {run}: {e}"));
        port = server.local_addr().port();
        exercise(&server).await;
        assert!(alive_tasks() > baseline, "run {run}: the server runs in tasks of its own");
        server.stop().await.unwrap();
        // The port is free again: the second run binds the very same one.
        drop(
            std::net::TcpListener::bind(("127.0.0.1", port)).unwrap_or_else(|e| panic!("run {run}: port {port}: {e}")),
        );
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "run {run}: nothing answers");
        assert_eq!(settle_to(baseline).await, baseline, "run {run}: tasks left running after stop");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caller_owns_the_shutdown_signal() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = alive_tasks();
    let options = Options { ctx: Some(Context::new()), ..Options::local(config(dir.path(), 0)) };
    let server = paperchain_server::start(options).await.unwrap();
    let port = server.local_addr().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    let health = client().get(format!("http://127.0.0.1:{port}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    stop.send(()).unwrap();
    serving.await.unwrap().unwrap();
    drop(std::net::TcpListener::bind(("127.0.0.1", port)).unwrap());
    assert_eq!(settle_to(baseline).await, baseline, "tasks left running after the signal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sandbox_starts_each_run_with_a_fresh_store() {
    let dir = tempfile::tempdir().unwrap();
    let baseline = alive_tasks();
    for run in 0..2 {
        let options = Options {
            http: config(dir.path(), 0),
            hosted: Some(HostedMode { config_file: None, sandbox: Some(SandboxOptions::default()) }),
            ctx: Some(Context::new()),
            client: None,
            runtime_dir: None,
            approvals: None,
            desktop: None,
        };
        let server = paperchain_server::start(options).await.unwrap_or_else(|e| panic!("run {run}: {e}"));
        let line = server.sandbox().expect("the sandbox line").clone();
        assert_eq!(line["sandbox"]["base_url"], server.base_url());
        let free = client()
            .post(format!("{}/v1/chain/gas", server.base_url()))
            .header("x-svc-free", "1")
            .json(&json!({ "chain": "base" }))
            .send()
            .await
            .unwrap();
        assert_eq!(free.status(), 200, "run {run}");
        // Ten free chain reads a day: each run starts with its whole pool.
        assert_eq!(free.headers()["x-svc-free-remaining"], "9", "run {run}");
        let store = server.paywall().expect("hosted").store().path().expect("a file store").to_path_buf();
        assert_eq!(store, dir.path().join("sandbox.sqlite"), "run {run}");
        server.stop().await.unwrap();
        assert_eq!(settle_to(baseline).await, baseline, "run {run}: tasks left running after stop");
    }
}

/// A one-page PDF.
fn one_page_pdf() -> Vec<u8> {
    std::fs::read(paperchain_testkit::workspace_root().join("hosted/benches/one-page.pdf")).expect("the one-page PDF")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_local_server_for_a_data_folder_names_the_first_and_starts_once_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tempfile::tempdir().unwrap();
    let options = || Options {
        ctx: Some(Context::new()),
        runtime_dir: Some(runtime.path().to_path_buf()),
        ..Options::local(config(dir.path(), 0))
    };
    let first = paperchain_server::start(options()).await.unwrap();
    let found = paperchain_server::instance::find(runtime.path(), dir.path()).expect("the address file");
    assert_eq!(found.base_url, first.base_url());
    assert_eq!(found.pid, std::process::id());
    let refused = match paperchain_server::start(options()).await {
        Ok(_) => panic!("a second server started"),
        Err(e) => e,
    };
    assert_eq!(refused.running(), Some(&found));
    assert!(refused.to_string().contains(first.base_url()), "{refused}");
    // Hosted mode claims nothing: a sandbox may run beside the local server.
    let hosted = paperchain_server::start(Options {
        hosted: Some(HostedMode { config_file: None, sandbox: Some(SandboxOptions::default()) }),
        ..options()
    })
    .await
    .unwrap();
    hosted.stop().await.unwrap();
    first.stop().await.unwrap();
    assert_eq!(paperchain_server::instance::find(runtime.path(), dir.path()), None);
    paperchain_server::start(options()).await.unwrap().stop().await.unwrap();
}

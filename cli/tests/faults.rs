//! `paperchain serve` under faults: a full disk where result files are kept, and kill -9
//! while it writes them. A link never serves a truncated file, a full disk is a clean 503
//! that leaves nothing behind, and the server goes on once there is room again.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use paperchain_testkit::corpus::corpus;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// A child process killed when the test ends, however it ends.
struct Served {
    child: Child,
    base: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// `paperchain serve` for `data`, its result files on a tmpfs of `files_kib` KiB when
/// given (in a mount namespace of its own, so nothing is mounted for anyone else).
fn serve(data: &Path, files_kib: Option<u32>) -> Served {
    let port = free_port();
    let binary = env!("CARGO_BIN_EXE_paperchain");
    let listen = format!("127.0.0.1:{port}");
    let mut command = match files_kib {
        None => {
            let mut command = Command::new(binary);
            command.args(["serve", "--listen", &listen, "--data-dir"]).arg(data);
            command
        }
        Some(kib) => {
            std::fs::create_dir_all(data.join("files")).unwrap();
            let mut command = Command::new("unshare");
            command
                .args(["--user", "--map-root-user", "--mount", "sh", "-c"])
                .arg(format!(
                    "mount -t tmpfs -o size={kib}k tmpfs \"$1/files\" && exec \"$2\" serve --listen {listen} --data-dir \"$1\""
                ))
                .arg("sh")
                .arg(data)
                .arg(binary);
            command
        }
    };
    let child = common::unconfigured(&mut command, data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut served = Served { child, base: format!("http://{listen}") };
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = served.child.try_wait() {
            let mut stderr = String::new();
            std::io::Read::read_to_string(served.child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
            panic!("paperchain serve exited ({status}): {stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(30), "paperchain serve did not listen within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    served
}

/// The folder where `served` keeps result files, as the server sees it (inside its mount
/// namespace when it has one).
fn files_dir(served: &Served, data: &Path) -> PathBuf {
    let inside = data.join("files");
    PathBuf::from(format!("/proc/{}/root", served.child.id())).join(inside.strip_prefix("/").unwrap())
}

/// A to-images call of `pages` of the 117-page corpus document, answered as links.
fn to_images(pages: &str, dpi: u32) -> Value {
    let pdf = std::fs::read(corpus().join("pdf/sample-files/GeoTopo-komprimiert.pdf")).unwrap();
    json!({
        "file": { "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": "geo.pdf" },
        "format": "png", "dpi": dpi, "pages": pages, "output": "url",
    })
}

async fn post(base: &str, path: &str, body: &Value) -> reqwest::Response {
    reqwest::Client::new().post(format!("{base}{path}")).json(body).send().await.unwrap()
}

/// Every link the store holds serves the bytes its metadata promises, or nothing.
async fn every_link_is_whole(base: &str, dir: &Path) -> usize {
    let mut served = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        let Some(id) = name.strip_suffix(".json") else { continue };
        let meta: Value = match std::fs::read(dir.join(&name)).map(|b| serde_json::from_slice(&b)) {
            Ok(Ok(meta)) => meta,
            _ => continue,
        };
        let response = reqwest::get(format!("{base}/v1/files/{id}")).await.unwrap();
        if response.status() == 404 {
            continue;
        }
        assert_eq!(response.status(), 200);
        let bytes = response.bytes().await.unwrap();
        assert_eq!(bytes.len() as u64, meta["bytes"].as_u64().unwrap(), "{id}: served whole or not at all");
        assert_eq!(hex::encode(Sha256::digest(&bytes)), meta["sha256"].as_str().unwrap(), "{id}");
        served += 1;
    }
    served
}

#[tokio::test]
async fn a_full_disk_is_a_clean_503_that_leaves_nothing_and_passes() {
    let data = tempfile::tempdir().unwrap();
    // 1 MiB for result files: twenty pages at 150 dpi are several.
    let server = serve(data.path(), Some(1024));
    let dir = files_dir(&server, data.path());
    assert!(dir.is_dir(), "{}", dir.display());

    let response = post(&server.base, "/v1/pdf/to-images", &to_images("1-20", 150)).await;
    assert_eq!(response.status(), 503);
    assert_eq!(response.headers()["retry-after"], "60");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "insufficient_storage", "{body}");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "no file of the failed call is left, no part of one: {left:?}");

    // With room for it, the next call is kept and served whole.
    let response = post(&server.base, "/v1/pdf/to-images", &to_images("1", 36)).await;
    assert_eq!(response.status(), 200);
    let links: Value = response.json().await.unwrap();
    assert_eq!(links.as_array().map(Vec::len), Some(1), "{links}");
    assert_eq!(every_link_is_whole(&server.base, &dir).await, 1);

    // The same full disk for a file answer is no matter: nothing is kept.
    let mut file = to_images("1-20", 150);
    file["output"] = json!("file");
    assert_eq!(post(&server.base, "/v1/pdf/to-images", &file).await.status(), 200);
}

#[tokio::test]
async fn killed_while_writing_links_a_restart_serves_only_whole_files() {
    let data = tempfile::tempdir().unwrap();
    let files = data.path().join("files");
    let body = to_images("1-20", 150);
    // One call without a kill: all 20 links kept and served whole, and how long it takes
    // (the files are written at its end).
    let server = serve(data.path(), None);
    let started = std::time::Instant::now();
    let response = post(&server.base, "/v1/pdf/to-images", &body).await;
    let took = started.elapsed();
    assert_eq!(response.status(), 200);
    let links: Value = response.json().await.unwrap();
    assert_eq!(links.as_array().map(Vec::len), Some(20));
    assert_eq!(every_link_is_whole(&server.base, &files).await, 20);
    drop(server);

    // Killed at points spread over the call, the last ones where its files are written;
    // after each restart, every link serves its whole file or nothing.
    for share in [0.5, 0.95, 0.99, 1.0, 1.02] {
        let server = serve(data.path(), None);
        let call = tokio::spawn({
            let (base, body) = (server.base.clone(), body.clone());
            async move { reqwest::Client::new().post(format!("{base}/v1/pdf/to-images")).json(&body).send().await }
        });
        tokio::time::sleep(took.mul_f64(share)).await;
        let killed = Command::new("kill").args(["-KILL", &server.child.id().to_string()]).status().unwrap();
        assert!(killed.success());
        let _ = call.await;
        drop(server);
        let restarted = serve(data.path(), None);
        assert!(every_link_is_whole(&restarted.base, &files).await >= 20);
    }
}

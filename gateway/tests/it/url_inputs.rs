//! File inputs given by URL, end to end: fetched and used when the address is allowed,
//! refused with `blocked_target` when not, and held to the size cap.

use std::net::IpAddr;

use paperchain_engine::Context;
use paperchain_engine::fetch::AddressPolicy;
use paperchain_testkit::corpus::corpus_file;
use paperchain_testkit::pdf::qpdf_pages;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::*;

/// Serves `body` to every request on a loopback port, or a redirect when `redirect_to` is set.
async fn file_server(body: Vec<u8>, redirect_to: Option<String>) -> std::net::SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else { break };
            let body = body.clone();
            let redirect_to = redirect_to.clone();
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let head = match redirect_to {
                    Some(location) => format!(
                        "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    ),
                    None => format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    ),
                };
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
            });
        }
    });
    addr
}

fn loopback_allowed() -> Context {
    Context::with_policy(AddressPolicy::allowing(["127.0.0.1".parse::<IpAddr>().unwrap()]))
}

#[tokio::test]
async fn a_pdf_by_url_is_fetched_and_used() {
    let pdf = corpus_file("sample-files/pdflatex-4-pages.pdf");
    let origin = file_server(pdf, None).await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_full(dir.path(), None, loopback_allowed()).await;
    let (status, report) = server
        .post_json("/v1/pdf/inspect", &json!({ "file": { "url": format!("http://{origin}/reports/q3.pdf") } }))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["page_count"], 4);

    let response = server
        .post(
            "/v1/pdf/rotate",
            &json!({ "file": { "url": format!("http://{origin}/reports/q3.pdf") }, "degrees": 180 }),
        )
        .await;
    assert_eq!(response.status().as_u16(), 200);
    let disposition = response.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(disposition.contains("q3-rotated.pdf"), "the URL's file name names the output: {disposition}");
    assert_eq!(qpdf_pages(&response.bytes().await.unwrap()), 4);
}

#[tokio::test]
async fn redirects_to_refused_addresses_are_blocked() {
    // Allowed origin 127.0.0.1 redirects to 127.0.0.2, which the policy does not allow.
    let hidden = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let hidden_addr = hidden.local_addr().unwrap();
    let origin = file_server(Vec::new(), Some(format!("http://{hidden_addr}/secret.pdf"))).await;
    let dir = tempfile::tempdir().unwrap();
    let server = start_full(dir.path(), None, loopback_allowed()).await;
    let body = json!({ "files": [{ "file": { "url": format!("http://{origin}/a.pdf") } }, { "file": { "url": format!("http://{origin}/b.pdf") } }] });
    let (status, answer) = server.post_json("/v1/pdf/merge", &body).await;
    assert_eq!(status, 422, "{answer}");
    assert_eq!(answer["error"]["code"], "blocked_target");
    assert!(answer["error"]["field"].as_str().unwrap().ends_with("/file/url"));
    assert!(answer["error"]["message"].as_str().unwrap().contains("127.0.0.2"), "{answer}");
    // The refused address never saw a connection.
    let accepted = tokio::time::timeout(std::time::Duration::from_millis(200), hidden.accept()).await;
    assert!(accepted.is_err(), "the redirect target was contacted");
}

#[tokio::test]
async fn the_default_policy_refuses_loopback_urls() {
    let origin = file_server(corpus_file("sample-files/pdflatex-4-pages.pdf"), None).await;
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    for url in [
        format!("http://{origin}/a.pdf"),
        format!("http://localhost:{}/a.pdf", origin.port()),
        format!("http://2130706433:{}/a.pdf", origin.port()),
        format!("http://[::ffff:127.0.0.1]:{}/a.pdf", origin.port()),
        "http://169.254.169.254/latest/meta-data/".to_string(),
    ] {
        let (status, answer) = server.post_json("/v1/pdf/inspect", &json!({ "file": { "url": url } })).await;
        assert_eq!(status, 422, "{url}: {answer}");
        assert_eq!(answer["error"]["code"], "blocked_target", "{url}");
        assert_eq!(answer["error"]["field"], "/file/url");
    }
}

#[tokio::test]
async fn a_call_over_the_time_limit_is_answered_504() {
    // An origin that accepts the connection and never answers.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = silent.local_addr().unwrap();
    let _keep = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let mut config = paperchain_gateway::ServerConfig::local(dir.path().to_path_buf());
    config.request_timeout = std::time::Duration::from_secs(1);
    let router = paperchain_gateway::HttpServer::new(config, loopback_allowed()).router(addr).unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let started = std::time::Instant::now();
    let response = reqwest::Client::builder()
        .no_proxy()
        .build()
        .unwrap()
        .post(format!("http://{addr}/v1/pdf/inspect"))
        .header("content-type", "application/json")
        .body(json!({ "file": { "url": format!("http://{origin}/slow.pdf") } }).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 504);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "timeout");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(10),
        "answered at the limit, not at the fetch's own 20 s"
    );
}

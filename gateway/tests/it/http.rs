//! The HTTP API end to end on a loopback port: status rules, Host check, output modes,
//! file links, service documents.

use paperchain_testkit::b64;
use paperchain_testkit::corpus::{corpus_file, file_input};
use paperchain_testkit::pdf::qpdf_pages;
use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn health_and_unknown_paths_and_methods() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let health: Value =
        server.client.get(format!("{}/healthz", server.base)).send().await.unwrap().json().await.unwrap();
    assert_eq!(health["status"], "ok");

    let (status, body) = server.post_json("/v1/pdf/nope", &json!({})).await;
    assert_eq!(status, 404);
    assert_eq!(body["error"]["code"], "not_found");

    let response = server.client.get(format!("{}/v1/pdf/rotate", server.base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "POST");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "method_not_allowed");

    let response = server.client.delete(format!("{}/openapi.json", server.base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 405);
    assert_eq!(response.headers()["allow"], "GET");
}

#[tokio::test]
async fn refuses_foreign_host_headers_and_sends_no_cors_headers() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    for host in ["evil.example", "evil.example:8402", "127.0.0.1.nip.io", "10.0.0.1"] {
        let response = server.client.get(format!("{}/healthz", server.base)).header("host", host).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 403, "{host}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "forbidden_host");
    }
    let response = server
        .client
        .post(format!("{}/v1/pdf/rotate", server.base))
        .header("host", format!("localhost:{}", server.addr.port()))
        .header("origin", "https://evil.example")
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 422);
    assert!(response.headers().keys().all(|k| !k.as_str().starts_with("access-control-")));
    let preflight = server
        .client
        .request(reqwest::Method::OPTIONS, format!("{}/v1/pdf/rotate", server.base))
        .header("origin", "https://evil.example")
        .header("access-control-request-method", "POST")
        .send()
        .await
        .unwrap();
    assert_eq!(preflight.status().as_u16(), 405);
    assert!(preflight.headers().keys().all(|k| !k.as_str().starts_with("access-control-")));
}

#[tokio::test]
async fn a_public_url_adds_its_host_and_nothing_else() {
    let dir = tempfile::tempdir().unwrap();
    let server = start_with(dir.path(), Some("https://docs.example.com")).await;
    let get = |host: &'static str| server.client.get(format!("{}/healthz", server.base)).header("host", host).send();
    assert_eq!(get("docs.example.com").await.unwrap().status().as_u16(), 200);
    assert_eq!(get("localhost").await.unwrap().status().as_u16(), 200);
    assert_eq!(get("attacker.example").await.unwrap().status().as_u16(), 403);
}

#[tokio::test]
async fn content_type_and_size_rules() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let url = format!("{}/v1/pdf/rotate", server.base);
    for content_type in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("application/jsonx")]
    {
        let mut request = server.client.post(&url).body("{}");
        if let Some(ct) = content_type {
            request = request.header("content-type", ct);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status().as_u16(), 415, "{content_type:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"]["code"], "unsupported_media_type");
    }
    let ok_charset = server
        .client
        .post(&url)
        .header("content-type", "application/json; charset=utf-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(ok_charset.status().as_u16(), 422, "charset parameter is accepted");

    let big = vec![b' '; 64 * 1024 * 1024 + 1];
    let response = server.client.post(&url).header("content-type", "application/json").body(big).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 413);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "body_too_large");

    // Far past the limit, declared or streamed without a length: a sender that writes its
    // whole body before it reads (as most HTTP clients do without `Expect: 100-continue`)
    // still reads the 413 and its reason, not a reset: the rest is read and thrown away.
    let authority = server.base.trim_start_matches("http://").to_string();
    for chunked in [false, true] {
        use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
        let mut stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
        let length = 200 * 1024 * 1024;
        let framing =
            if chunked { "transfer-encoding: chunked".to_string() } else { format!("content-length: {length}") };
        let head = format!(
            "POST /v1/pdf/rotate HTTP/1.1\r\nhost: {authority}\r\nconnection: close\r\ncontent-type: application/json\r\n{framing}\r\n\r\n"
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        let block = vec![b' '; 1024 * 1024];
        for _ in 0..length / block.len() {
            if chunked {
                stream.write_all(format!("{:x}\r\n", block.len()).as_bytes()).await.unwrap();
            }
            stream.write_all(&block).await.unwrap_or_else(|e| panic!("chunked {chunked}: the body was cut off: {e}"));
            if chunked {
                stream.write_all(b"\r\n").await.unwrap();
            }
        }
        if chunked {
            stream.write_all(b"0\r\n\r\n").await.unwrap();
        }
        let mut answer = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(60), stream.read_to_end(&mut answer)).await;
        assert!(read.is_ok(), "chunked {chunked}: the connection ends after the answer");
        let answer = String::from_utf8_lossy(&answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "chunked {chunked}: {answer}");
        assert!(answer.contains("body_too_large"), "chunked {chunked}: {answer}");
    }

    // JSON that is not an object is refused as such, not read as a list of fields.
    for not_an_object in ["[]", "[\"x\"]", "1"] {
        let response = server
            .client
            .post(format!("{}/v1/chain/status", server.base))
            .header("content-type", "application/json")
            .body(not_an_object)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 422, "{not_an_object}");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"]["message"].as_str().unwrap().contains("must be a JSON object"), "{body}");
    }

    let (status, body) = {
        let response = server
            .client
            .post(&url)
            .header("content-type", "application/json")
            .body("{\"file\":")
            .send()
            .await
            .unwrap();
        (response.status().as_u16(), response.json::<Value>().await.unwrap())
    };
    assert_eq!(status, 422);
    assert_eq!(body["error"]["code"], "invalid_json");
}

#[tokio::test]
async fn output_modes_file_base64_and_url_links_that_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let file = file_input("sample-files/pdflatex-4-pages.pdf");

    let server = start(dir.path()).await;
    let response = server.post("/v1/pdf/rotate", &json!({ "file": file, "degrees": 90 })).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/pdf");
    let disposition = response.headers()["content-disposition"].to_str().unwrap().to_string();
    assert!(disposition.starts_with("attachment; filename=\"pdflatex-4-pages-rotated.pdf\""), "{disposition}");
    let direct = response.bytes().await.unwrap();
    assert_eq!(qpdf_pages(&direct), 4);

    let (status, inline) =
        server.post_json("/v1/pdf/rotate", &json!({ "file": file, "degrees": 90, "output": "base64" })).await;
    assert_eq!(status, 200);
    assert_eq!(inline["media_type"], "application/pdf");
    let data = base64_decode(inline["data"].as_str().unwrap());
    assert_eq!(inline["bytes"], data.len());
    assert_eq!(inline["sha256"], sha256_hex(&data));

    let (status, link) =
        server.post_json("/v1/pdf/rotate", &json!({ "file": file, "degrees": 90, "output": "url" })).await;
    assert_eq!(status, 200, "{link}");
    let url = link["url"].as_str().unwrap().to_string();
    assert!(url.starts_with(&format!("{}/v1/files/", server.base)), "{url}");
    let id = url.rsplit('/').next().unwrap().to_string();
    assert_eq!(id.len(), 64, "256-bit id");
    assert!(link["expires_at"].as_str().unwrap().ends_with('Z'));
    let downloaded = server.client.get(&url).send().await.unwrap();
    assert_eq!(downloaded.status().as_u16(), 200);
    assert_eq!(downloaded.headers()["content-type"], "application/pdf");
    let bytes = downloaded.bytes().await.unwrap();
    assert_eq!(sha256_hex(&bytes), link["sha256"].as_str().unwrap());
    drop(server);

    // A restarted server on the same data folder still serves the link.
    let again = start(dir.path()).await;
    let path = url.split("/v1/files/").nth(1).unwrap();
    let response = again.client.get(format!("{}/v1/files/{path}", again.base)).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(sha256_hex(&response.bytes().await.unwrap()), link["sha256"].as_str().unwrap());
    // Unknown and malformed ids are 404, never a path on disk.
    for bad in ["0".repeat(64), "..%2F..%2Fetc%2Fpasswd".to_string(), "abc".to_string()] {
        let response = again.client.get(format!("{}/v1/files/{bad}", again.base)).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 404, "{bad}");
    }
}

#[tokio::test]
async fn several_files_come_as_a_zip_or_a_list() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let file = file_input("sample-files/pdflatex-4-pages.pdf");
    let response = server.post("/v1/pdf/split", &json!({ "file": file, "ranges": ["1-2", "3", "4-last"] })).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["content-type"], "application/zip");
    let zip = response.bytes().await.unwrap();
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip.to_vec())).unwrap();
    assert_eq!(archive.len(), 3);
    let mut counts = Vec::new();
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).unwrap();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        counts.push(qpdf_pages(&bytes));
    }
    assert_eq!(counts, vec![2, 1, 1]);

    let (status, list) =
        server.post_json("/v1/pdf/split", &json!({ "file": file, "every": 3, "output": "base64" })).await;
    assert_eq!(status, 200);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(qpdf_pages(&base64_decode(list[1]["data"].as_str().unwrap())), 1);
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[tokio::test]
async fn a_report_comes_as_a_header_beside_the_bytes_and_as_a_field_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path()).await;
    let body = |output: &str| {
        json!({
            "file": { "data": b64(&corpus_file("qpdf/20-pages.pdf")), "password": "user" },
            "steps": [{ "op": "extract-pages", "pages": "1-3" }, { "op": "rotate", "degrees": 90 }],
            "output": output,
        })
    };
    let response = server.post("/v1/pdf/pipeline", &body("file")).await;
    assert_eq!(response.status(), 200);
    let header = response.headers().get("paperchain-report").expect("a report header").to_str().unwrap().to_string();
    let report: Value = serde_json::from_str(&header).unwrap();
    assert_eq!(report, json!({ "steps": [{ "op": "extract-pages", "pages": 3 }, { "op": "rotate", "pages": 3 }] }));
    assert_eq!(qpdf_pages(&response.bytes().await.unwrap()), 3);
    for output in ["base64", "url"] {
        let (status, answer) = server.post_json("/v1/pdf/pipeline", &body(output)).await;
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["report"], report, "{output}: {answer}");
    }
    // Files without a report carry no header and no field.
    let plain = json!({ "file": file_input("sample-files/pdflatex-4-pages.pdf"), "degrees": 90 });
    let response = server.post("/v1/pdf/rotate", &plain).await;
    assert!(response.headers().get("paperchain-report").is_none());
    let mut plain = plain;
    plain["output"] = json!("base64");
    let (_, answer) = server.post_json("/v1/pdf/rotate", &plain).await;
    assert!(answer.get("report").is_none(), "{answer}");
}

#[tokio::test]
async fn heavy_work_past_its_workers_and_queue_is_busy_and_light_routes_still_answer() {
    use paperchain_engine::work_gate::{GateConfig, WorkGate};
    use std::sync::Arc;

    let dir = tempfile::tempdir().unwrap();
    let mut ctx = paperchain_engine::Context::new();
    ctx.heavy = Arc::new(WorkGate::new(GateConfig { workers: 1, queue: 1 }));
    let gate = Arc::clone(&ctx.heavy);
    let server = start_full(dir.path(), None, ctx).await;
    let file = file_input("sample-files/pdflatex-4-pages.pdf");
    let compress = json!({ "file": file, "mode": "lossless" });

    // The one worker is taken; a first heavy call waits in the one place of the queue.
    let held = gate.enter().await.unwrap();
    let waiting = tokio::spawn({
        let (client, url, body) = (server.client.clone(), format!("{}/v1/pdf/compress", server.base), compress.clone());
        async move { client.post(url).json(&body).send().await.unwrap().status().as_u16() }
    });
    while gate.waiting() == 0 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }

    // One more is refused at once: 503 `busy`, Retry-After, nothing run.
    let response = server.post("/v1/pdf/to-images", &json!({ "file": file, "format": "png", "pages": "1" })).await;
    assert_eq!(response.status().as_u16(), 503);
    assert_eq!(response.headers()["retry-after"], "5");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy", "{body}");

    // Refused before its body is read: a 50 MB upload announced and never sent is answered
    // at once, so a burst of heavy uploads costs no memory past the queue.
    let host = server.base.trim_start_matches("http://").to_string();
    let mut socket = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "POST /v1/pdf/to-images HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Content-Length: 50000000\r\n\r\n{{\"file\""
    );
    tokio::io::AsyncWriteExt::write_all(&mut socket, head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        tokio::io::AsyncReadExt::read(&mut socket, &mut answer),
    )
    .await
    .expect("answered without waiting for the body")
    .unwrap();
    let answer = String::from_utf8_lossy(&answer[..read]);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains(r#""code":"busy""#), "{answer}");

    // A light route does not queue behind heavy work.
    let response = server.post("/v1/pdf/rotate", &json!({ "file": file, "degrees": 90 })).await;
    assert_eq!(response.status().as_u16(), 200);

    // The turn given back, the waiting call runs; after it the gate is empty again.
    drop(held);
    assert_eq!(waiting.await.unwrap(), 200);
    assert_eq!((gate.running(), gate.waiting()), (0, 0));
    let response = server.post("/v1/pdf/to-images", &json!({ "file": file, "format": "png", "pages": "1" })).await;
    assert_eq!(response.status().as_u16(), 200);

    // The published document says which routes can answer so.
    let openapi: Value =
        server.client.get(format!("{}/openapi.json", server.base)).send().await.unwrap().json().await.unwrap();
    let responses = |path: &str| openapi["paths"][path]["post"]["responses"].clone();
    assert!(responses("/v1/pdf/to-images").get("503").is_some());
    // A light route that answers files may find no room to keep them (output url)...
    assert!(responses("/v1/pdf/rotate").get("503").is_some());
    // ...one that answers JSON, of a document read in memory, never answers 503.
    assert!(responses("/v1/pdf/inspect").get("503").is_none());
}

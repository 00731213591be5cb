//! The MCP endpoints of a local gateway, driven by the rmcp client over streamable HTTP:
//! the tool lists are the catalog's, a document tool answers an embedded PDF or a link, a
//! chain tool reads anvil, bad input is a tool error naming the field, and the Host check
//! of the HTTP API guards /mcp/* too.

use paperchain_engine::{Context, Family};
use paperchain_testkit::anvil::Anvil;
use paperchain_testkit::corpus::file_input;
use paperchain_testkit::pdf::qpdf_pages;
use paperchain_testkit::sandbox::base_context;
use serde_json::{Value, json};

use crate::common::{call, embedded, http_client, serve, structured, tool_error};

fn operations(family: Family) -> Vec<String> {
    paperchain_engine::catalog::standard()
        .routes()
        .filter(|r| r.info().family == family)
        .map(|r| r.info().operation.to_string())
        .collect()
}

#[tokio::test]
async fn each_endpoint_lists_its_family_with_schemas() {
    let server = serve(Context::new(), None).await;
    for (family, path) in [(Family::Chain, "/mcp/chain"), (Family::Docs, "/mcp/docs")] {
        let client = http_client(&format!("{}{path}", server.base)).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<String> = tools.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, operations(family), "{path}");
        for tool in &tools {
            assert_eq!(tool.input_schema.get("type"), Some(&json!("object")), "{}", tool.name);
            assert!(tool.input_schema.get("properties").is_some(), "{} has input properties", tool.name);
            assert!(tool.output_schema.is_some(), "{} has an output schema", tool.name);
            assert!(tool.annotations.is_some() && tool.title.is_some(), "{}", tool.name);
        }
        let info = client.peer_info().expect("server info");
        assert_eq!(info.server_info.as_ref().map(|i| i.name.as_str()), Some("paperchain"));
        client.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_document_tool_answers_an_embedded_pdf_or_a_link() {
    let server = serve(Context::new(), None).await;
    let client = http_client(&format!("{}/mcp/docs", server.base)).await;
    let file = file_input("sample-files/pdflatex-4-pages.pdf");
    let result = call(&client, "rotate_pdf_pages", json!({ "file": file, "degrees": 90 }), None).await;
    let described = structured(&result);
    let files = embedded(&result);
    assert_eq!(files.len(), 1);
    let (media_type, filename, bytes) = &files[0];
    assert_eq!(media_type, "application/pdf");
    assert_eq!(filename, "pdflatex-4-pages-rotated.pdf");
    assert_eq!(qpdf_pages(bytes), 4);
    assert_eq!(described["files"][0]["filename"], "pdflatex-4-pages-rotated.pdf");
    assert_eq!(described["files"][0]["bytes"], bytes.len() as u64);

    // output "url": a resource link that downloads the same kind of file.
    let result = call(&client, "rotate_pdf_pages", json!({ "file": file, "degrees": 90, "output": "url" }), None).await;
    let described = structured(&result);
    let link = result.content.iter().find_map(|b| b.as_resource_link()).expect("a resource link");
    assert!(link.uri.starts_with(&format!("{}/v1/files/", server.base)), "{}", link.uri);
    assert_eq!(described["files"][0]["uri"], link.uri.as_str());
    assert!(described["files"][0]["expires_at"].is_string());
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let downloaded = http.get(&link.uri).send().await.unwrap();
    assert_eq!(downloaded.status(), 200);
    assert_eq!(qpdf_pages(&downloaded.bytes().await.unwrap()), 4);

    // Several files are several embedded resources.
    let result = call(&client, "split_pdf", json!({ "file": file, "every": 2 }), None).await;
    let parts = embedded(&result);
    assert_eq!(parts.len(), 2);
    assert!(parts.iter().all(|(_, _, bytes)| qpdf_pages(bytes) == 2));
    assert_eq!(structured(&result)["files"].as_array().unwrap().len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn invalid_input_is_a_tool_error_naming_the_field() {
    let server = serve(Context::new(), None).await;
    let client = http_client(&format!("{}/mcp/docs", server.base)).await;
    let file = file_input("sample-files/pdflatex-4-pages.pdf");
    let error = tool_error(&call(&client, "rotate_pdf_pages", json!({ "file": file, "degrees": 45 }), None).await);
    assert_eq!(error["field"], "/degrees", "{error}");
    assert_eq!(error["code"], "invalid_input");
    let error = tool_error(
        &call(&client, "rotate_pdf_pages", json!({ "file": file, "degrees": 90, "pages": "9" }), None).await,
    );
    assert_eq!(error["field"], "/pages", "{error}");
    let error = tool_error(&call(&client, "rotate_pdf_pages", json!({ "degrees": 90 }), None).await);
    assert_eq!(error["field"], "/file", "{error}");
    let error =
        tool_error(&call(&client, "rotate_pdf_pages", json!({ "file": file, "degrees": 90, "colour": 1 }), None).await);
    assert_eq!((error["code"].as_str(), error["field"].as_str()), (Some("unknown_field"), Some("/colour")));
    // A tool of the other family is not a tool here: a protocol error, not a tool error.
    let params = rmcp::model::CallToolRequestParams::new("get_gas_price");
    assert!(client.call_tool(params).await.is_err());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_chain_tool_reads_anvil() {
    // Chain id 8453: Base's.
    let anvil = Anvil::start(8453).await;
    let server = serve(base_context(&anvil.url), None).await;
    let client = http_client(&format!("{}/mcp/chain", server.base)).await;
    let block = structured(&call(&client, "get_latest_block", json!({ "chain": "base" }), None).await);
    assert!(block.as_object().is_some_and(|o| !o.is_empty()), "{block}");
    let gas = structured(&call(&client, "get_gas_price", json!({ "chain": "base" }), None).await);
    assert_eq!(gas["chain"], "base", "{gas}");
    let error = tool_error(&call(&client, "get_gas_price", json!({ "chain": "nowhere" }), None).await);
    assert_eq!(error["field"], "/chain", "{error}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn the_host_check_guards_the_mcp_endpoints() {
    let server = serve(Context::new(), None).await;
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": { "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }
    });
    let post = |host: &'static str| {
        http.post(format!("{}/mcp/docs", server.base))
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    let refused = post("evil.example").await.unwrap();
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden_host");
    let answered = post("localhost").await.unwrap();
    assert_eq!(answered.status(), 200);

    // Origin, as the MCP transport asks: none, or this server's own (any loopback name of
    // its port), is answered; another site's, `null` or another local port's is 403.
    let authority = server.base.trim_start_matches("http://").to_string();
    let port = authority.rsplit_once(':').unwrap().1.to_string();
    let with_origin = |origin: String| {
        http.post(format!("{}/mcp/docs", server.base))
            .header("origin", origin)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    for refused in ["https://attacker.example".to_string(), "null".into(), "http://localhost:1".into()] {
        let answer = with_origin(refused.clone()).await.unwrap();
        assert_eq!(answer.status(), 403, "{refused}");
        let body: Value = answer.json().await.unwrap();
        assert_eq!(body["error"]["code"], "forbidden_origin", "{refused}");
    }
    for own in [server.base.clone(), format!("http://localhost:{port}")] {
        assert_eq!(with_origin(own.clone()).await.unwrap().status(), 200, "{own}");
    }

    // Two Host headers, the good one and another: refused, the app's page included.
    let mut socket = tokio::net::TcpStream::connect(&authority).await.unwrap();
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let head = format!("GET /app/ HTTP/1.1\r\nHost: {authority}\r\nHost: evil.example\r\nConnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await.unwrap();
    let mut answer = String::new();
    socket.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 403") || answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(!answer.contains("paperchain-token"), "no token in the answer: {answer}");
}

/// Sends a request head announcing `length` body bytes and the first of them, nothing
/// more; the socket, to keep the upload open, and what the server answered within `wait`
/// (empty when it is still waiting for the body).
async fn announce(base: &str, path: &str, length: usize, wait: std::time::Duration) -> (tokio::net::TcpStream, String) {
    let host = base.trim_start_matches("http://").to_string();
    let mut socket = tokio::net::TcpStream::connect(&host).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {length}\r\n\r\n{{"
    );
    tokio::io::AsyncWriteExt::write_all(&mut socket, head.as_bytes()).await.unwrap();
    let mut answer = vec![0; 4096];
    let read = tokio::time::timeout(wait, tokio::io::AsyncReadExt::read(&mut socket, &mut answer)).await;
    let text = match read {
        Ok(Ok(n)) => String::from_utf8_lossy(&answer[..n]).into_owned(),
        _ => String::new(),
    };
    (socket, text)
}

#[tokio::test]
async fn mcp_request_bodies_share_the_servers_body_budget() {
    use paperchain_testkit::server::{loopback_listener, server_config, spawn_router};
    let dir = tempfile::tempdir().unwrap();
    let (listener, addr, base) = loopback_listener().await;
    let mut config = server_config(dir.path(), addr, &base);
    // The least a budget can be: one body of the largest size.
    config.body_budget = 64 << 20;
    let app = paperchain_gateway::HttpServer::new(config, Context::new())
        .mount(paperchain_mcp::http::mount)
        .router(addr)
        .unwrap();
    let _task = spawn_router(listener, app);
    let wait = std::time::Duration::from_millis(500);

    // An MCP upload of 60 MiB, announced and not sent: the server waits for it, holding its share.
    let (held, answer) = announce(&base, "/mcp", 60 << 20, wait).await;
    assert_eq!(answer, "", "the first upload is waited for");
    // Another MCP body, and an API one, are refused at once: 503 `busy` with Retry-After.
    for path in ["/mcp/docs", "/v1/chain/calldata"] {
        let (_socket, answer) = announce(&base, path, 10 << 20, std::time::Duration::from_secs(10)).await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{path}: {answer}");
        assert!(answer.to_ascii_lowercase().contains("retry-after"), "{path}: {answer}");
        assert!(answer.contains(r#""code":"busy""#), "{path}: {answer}");
    }
    // The upload gone, its share comes back and MCP answers.
    drop(held);
    let started = std::time::Instant::now();
    loop {
        let (_socket, answer) = announce(&base, "/mcp/docs", 10 << 20, wait).await;
        if answer.is_empty() {
            break;
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(10), "the share never came back: {answer}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let client = http_client(&format!("{base}/mcp/docs")).await;
    assert!(!client.list_all_tools().await.unwrap().is_empty());
}

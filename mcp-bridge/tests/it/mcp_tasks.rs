//! Heavy document operations as MCP tasks (the 2026-07-28 tasks extension), driven by the
//! rmcp client declaring the extension at `/mcp` of a local gateway: an OCR of a 20-page
//! scan is answered at once with a task handle; `tasks/get` shows the pages done, strictly
//! increasing, until the task completes with the tool's result. A second one cancelled
//! with `tasks/cancel` once it has started ends `cancelled`, and its work stops: the gate
//! has no heavy work running within two seconds. A light operation still answers at once,
//! and a client that does not declare the extension gets the plain result.

use std::time::{Duration, Instant};

use base64::Engine as _;
use paperchain_engine::Context;
use paperchain_testkit::scan::{image_pdf, render, sample_page};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig, GetTaskParams,
    Implementation,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::common::{http_client, serve};

/// A client that takes tasks.
struct TaskClient;

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::builder().enable_tasks().build(),
            Implementation::new("task-client", "0.0.0"),
        )
    }
}

/// A 20-page scan at 150 dpi, as a file input.
fn scan() -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (pdf, _) = sample_page();
    std::fs::write(dir.path().join("page.pdf"), pdf).unwrap();
    let page = render(&dir.path().join("page.pdf"), 1, 150);
    json!({ "data": base64::engine::general_purpose::STANDARD.encode(image_pdf(&[&page; 20], 150)) })
}

fn ocr(file: &Value) -> CallToolRequestParams {
    let arguments = json!({ "operation": "ocr_pdf", "input": { "file": file } });
    CallToolRequestParams::new("document_operation").with_arguments(arguments.as_object().cloned().unwrap())
}

/// The task's state as the wire carries it.
async fn state(client: &RunningService<RoleClient, TaskClient>, id: &str) -> Value {
    serde_json::to_value(client.get_task(GetTaskParams::new(id)).await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_ocr_runs_as_a_task_shows_its_pages_and_stops_when_cancelled() {
    let ctx = Context::new();
    let gate = ctx.heavy.clone();
    let server = serve(ctx, None).await;
    let url = format!("{}/mcp", server.base);
    let client = TaskClient.serve(StreamableHttpClientTransport::from_uri(url.clone())).await.unwrap();
    let file = scan();

    // Answered at once with a handle; polled until done, the pages counted as they go.
    let asked = Instant::now();
    let CallToolResponse::Task(created) = client.call_tool_once(ocr(&file)).await.unwrap() else {
        panic!("a heavy call from a client that takes tasks is a task");
    };
    assert!(asked.elapsed() < Duration::from_secs(2), "the handle comes at once: {:?}", asked.elapsed());
    let id = created.task.task_id.clone();
    let mut pages_seen = Vec::new();
    let done = loop {
        let now = state(&client, &id).await;
        if let Some(pages) = now["statusMessage"].as_str().and_then(|m| m.strip_suffix(" of 20 pages")) {
            let pages: u64 = pages.parse().unwrap();
            if pages_seen.last() != Some(&pages) {
                pages_seen.push(pages);
            }
        }
        if now["status"] != "working" {
            break now;
        }
        assert!(asked.elapsed() < Duration::from_secs(300), "the task ends: {now}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(done["status"], "completed", "{done}");
    assert!(pages_seen.windows(2).all(|w| w[0] < w[1]), "strictly increasing: {pages_seen:?}");
    assert_eq!(pages_seen.last(), Some(&20), "{pages_seen:?}");
    assert!(pages_seen.len() > 2, "seen as it went: {pages_seen:?}");
    let result = &done["result"];
    assert_ne!(result["isError"], true, "{result}");
    let report = &result["structuredContent"];
    assert_eq!(report["files"][0]["media_type"], "application/pdf", "{report}");

    // Cancelled once working: the task ends cancelled and the work stops.
    let CallToolResponse::Task(created) = client.call_tool_once(ocr(&file)).await.unwrap() else {
        panic!("a task");
    };
    let id = created.task.task_id.clone();
    let started = Instant::now();
    while !state(&client, &id).await["statusMessage"].as_str().is_some_and(|m| m.ends_with("pages")) {
        assert!(started.elapsed() < Duration::from_secs(120), "the second OCR starts");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(gate.running(), 1, "the OCR runs");
    client.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    let cancelled = Instant::now();
    while gate.running() > 0 {
        assert!(cancelled.elapsed() < Duration::from_secs(2), "the work stops within two seconds of the cancel");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut now = state(&client, &id).await;
    while now["status"] == "working" && cancelled.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = state(&client, &id).await;
    }
    assert_eq!(now["status"], "cancelled", "{now}");

    // A light operation still answers at once, and a client without the extension gets results.
    let light = json!({ "operation": "inspect_pdf_document", "input": { "file": file } });
    let light = CallToolRequestParams::new("document_operation").with_arguments(light.as_object().cloned().unwrap());
    assert!(matches!(client.call_tool_once(light).await.unwrap(), CallToolResponse::Complete(_)));
    let plain = http_client(&url).await;
    let one_page = json!({ "operation": "ocr_pdf", "input": { "file": file, "pages": "1" } });
    let one_page =
        CallToolRequestParams::new("document_operation").with_arguments(one_page.as_object().cloned().unwrap());
    let result = plain.call_tool(one_page).await.unwrap();
    assert_ne!(result.is_error, Some(true), "{:?}", result.content);
}

//! Work ends when its call ends. `paperchain serve` with one heavy worker and no queue runs
//! a 20-page OCR, which takes far longer than its call may: the call stops by its time-out,
//! by its HTTP client going away (what the app's Cancel does: it aborts its request), and
//! by an MCP client's `notifications/cancelled` (the official TypeScript SDK aborting a tool
//! call). Each time the server's CPU is back at rest within two seconds, measured on the
//! process itself, and the ledger says how the call ended; a time-out keeps the call's place
//! at the heavy-work gate only until its work has stopped.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use paperchain_testkit::sandbox::{self, Setup};
use paperchain_testkit::scan::{image_pdf, render, sample_page};
use paperchain_testkit::tools::{require_node_packages, tools_dir};
use serde_json::{Value, json};

use crate::common::procs::{TICKS_PER_SECOND, cpu_ticks, descendants, peak_memory, tree_cpu_in_the_next_second};
use crate::common::{Home, Server, unconfigured_server};

/// A 20-page scan at 300 dpi: minutes of OCR on this machine's cores.
fn twenty_page_scan(dir: &Path) -> std::path::PathBuf {
    let (pdf, _) = sample_page();
    let source = dir.join("page.pdf");
    std::fs::write(&source, pdf).unwrap();
    let page = render(&source, 1, 300);
    let pages: Vec<_> = (0..20).map(|_| &page).collect();
    let scan = dir.join("scan.pdf");
    std::fs::write(&scan, image_pdf(&pages, 300)).unwrap();
    scan
}

/// The CPU a process used, sampled every 100 ms while the trace lives.
struct CpuTrace {
    samples: Arc<Mutex<Vec<(Instant, u64)>>>,
    running: Arc<std::sync::atomic::AtomicBool>,
}

impl CpuTrace {
    fn start(pid: u32) -> CpuTrace {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let running = Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (kept, on) = (Arc::clone(&samples), Arc::clone(&running));
        std::thread::spawn(move || {
            while on.load(std::sync::atomic::Ordering::SeqCst) {
                kept.lock().unwrap().push((Instant::now(), cpu_ticks(pid)));
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        CpuTrace { samples, running }
    }

    /// CPU seconds used from `from` to `to` (the samples nearest inside the window).
    /// CPU seconds from `from` until the last sample, 0 while the window holds fewer than two.
    fn seconds_so_far(&self, from: Instant) -> f64 {
        let samples = self.samples.lock().unwrap();
        let mut window = samples.iter().filter(|(at, _)| *at >= from);
        match (window.next(), window.next_back()) {
            (Some(first), Some(last)) => (last.1 - first.1) as f64 / TICKS_PER_SECOND,
            _ => 0.0,
        }
    }

    fn seconds(&self, from: Instant, to: Instant) -> f64 {
        let samples = self.samples.lock().unwrap();
        let first = samples.iter().find(|(at, _)| *at >= from).expect("a sample after the window's start");
        let last = samples.iter().rev().find(|(at, _)| *at <= to).expect("a sample before the window's end");
        assert!(last.0 > first.0, "the window holds samples");
        (last.1 - first.1) as f64 / TICKS_PER_SECOND
    }
}

impl Drop for CpuTrace {
    fn drop(&mut self) {
        self.running.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Waits until `at`, then says the CPU seconds used in the second after it.
async fn cpu_in_the_second_after(trace: &CpuTrace, at: Instant) -> f64 {
    tokio::time::sleep_until((at + Duration::from_millis(1100)).into()).await;
    trace.seconds(at, at + Duration::from_secs(1))
}

fn ocr_body(scan: &Path) -> Value {
    json!({ "file": { "path": scan.display().to_string() } })
}

fn last_ocr_row(home: &Home) -> Value {
    let rows = home.json(&["ledger", "--json"]);
    rows.as_array().unwrap().iter().rev().find(|r| r["route"] == "ocr_pdf").cloned().expect("an OCR row")
}

/// A user's home with a wallet (so calls are in the ledger) whose folder with the scan is
/// granted, and its server with one heavy worker, no queue, and calls of at most 3 s.
async fn rig() -> (sandbox::HostedServer, Home, Server, std::path::PathBuf) {
    let hosted = sandbox::start(Setup::default()).await;
    let home = Home::new(&hosted);
    home.set_up(&hosted, &hosted.base);
    let files = home.dir.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let scan = twenty_page_scan(&files);
    home.run(&["config", "add", "files.folders", files.to_str().unwrap()], "");
    let server = home.serve_with(&[
        ("PAPERCHAIN_HEAVY_WORKERS", "1"),
        ("PAPERCHAIN_HEAVY_QUEUE", "0"),
        ("PAPERCHAIN_REQUEST_TIMEOUT", "3"),
        ("OMP_THREAD_LIMIT", "1"),
    ]);
    (hosted, home, server, scan)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_stopped_by_its_time_out_or_its_caller_stops_its_work() {
    let (_hosted, home, server, scan) = rig().await;
    let trace = CpuTrace::start(server.child.id());
    let http = reqwest::Client::new();
    let ocr =
        || http.post(format!("{}/v1/pdf/ocr", server.base)).header("paperchain-route", "local").json(&ocr_body(&scan));

    // The time-out: 504 after 3 s, the CPU at rest 2 s later, the ledger says timed_out.
    let sent = Instant::now();
    let answer = ocr().send().await.unwrap();
    let answered = Instant::now();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    assert_eq!(status, 504, "{text}");
    assert!(text.contains("\"timeout\""), "{text}");
    assert!(answered - sent < Duration::from_secs(6), "answered at the time-out: {:?}", answered - sent);
    let working = trace.seconds(sent + Duration::from_millis(500), answered);
    assert!(working > 1.0, "the OCR was really working before its time-out: {working:.2} CPU s");
    let after = cpu_in_the_second_after(&trace, answered + Duration::from_secs(2)).await;
    eprintln!("time-out: {working:.2} CPU s before it, {after:.2} CPU s in the second 2 s after it");
    assert!(after < 0.15, "2 s after the time-out the server still works: {after:.2} CPU s in one second");
    let row = last_ocr_row(&home);
    assert_eq!(row["state"], "timed_out", "{row}");

    // The place at the gate was given back once the work stopped: the next heavy call runs
    // (and times out in turn) instead of being refused as busy.
    let next = ocr().send().await.unwrap();
    assert_eq!(next.status(), 504, "{}", next.text().await.unwrap());
    tokio::time::sleep(Duration::from_secs(2)).await;

    // The caller goes away (the app's Cancel aborts its request the same way): the work
    // stops, and the ledger says cancelled.
    // It leaves once the OCR is seen working (half a CPU second), well before the 3 s
    // time-out: on a busy machine that takes longer than on an idle one.
    let sent = Instant::now();
    let call = tokio::spawn(ocr().send());
    let start = sent + Duration::from_millis(500);
    while sent.elapsed() < Duration::from_millis(2500) && trace.seconds_so_far(start) < 0.5 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if call.is_finished() {
        let answer = call.await.unwrap().unwrap();
        let status = answer.status();
        panic!("the call ended before its caller left: {status} {}", answer.text().await.unwrap_or_default());
    }
    call.abort();
    let left = Instant::now();
    let working = trace.seconds(start, left);
    assert!(working > 0.4, "the OCR was really working before its caller left: {working:.2} CPU s");
    let after = cpu_in_the_second_after(&trace, left + Duration::from_secs(2)).await;
    eprintln!("caller gone: {working:.2} CPU s before, {after:.2} CPU s in the second 2 s after");
    assert!(after < 0.15, "2 s after its caller left the server still works: {after:.2} CPU s in one second");
    let row = last_ocr_row(&home);
    assert_eq!(row["state"], "cancelled", "{row}");
    assert_eq!(row["status"], 499, "{row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_that_cancels_a_tool_call_stops_its_work() {
    require_node_packages(&tools_dir(), "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let (_hosted, home, server, scan) = rig().await;
    let trace = CpuTrace::start(server.child.id());
    // Called with no time-out of its own: the route's 3 s would stop it first otherwise.
    // The session stays open for 4 s after the cancel: what stops the work is the
    // notification, not the end of the session.
    let plan = json!({
        "server": { "url": format!("{}/mcp", server.base) },
        "steps": [
            { "call": "document_operation", "cancel_after_ms": 1500,
              "arguments": { "operation": "ocr_pdf", "input": ocr_body(&scan) } },
            { "sleep_ms": 4000 },
        ],
    });
    let started = SystemTime::now();
    let started_at = Instant::now();
    let line = crate::common::ts_sdk_session(&plan, Duration::from_secs(120), "a cancelled tool call").await;
    let step = &line["steps"][0];
    let cancelled_ms = step["cancelled_at"].as_u64().unwrap_or_else(|| panic!("the call was cancelled: {line}"));
    let since_start = cancelled_ms - started.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let cancelled = started_at + Duration::from_millis(since_start);
    let working = trace.seconds(cancelled - Duration::from_millis(1000), cancelled);
    assert!(working > 0.5, "the OCR was really working before the cancel: {working:.2} CPU s");
    let after = trace.seconds(cancelled + Duration::from_secs(2), cancelled + Duration::from_secs(3));
    eprintln!("MCP cancel: {working:.2} CPU s in the second before, {after:.2} CPU s in the second 2 s after");
    assert!(after < 0.15, "2 s after the cancel the server still works: {after:.2} CPU s in one second");
    let row = last_ocr_row(&home);
    assert_eq!(row["state"], "cancelled", "{row}");
    assert_eq!(row["front_door"], "mcp", "{row}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_apps_cancel_stops_its_work() {
    let (_hosted, home, server, scan) = rig().await;
    let trace = CpuTrace::start(server.child.id());
    let artifacts = crate::app_ui::ui_dir().join("test-artifacts");
    let _ = std::fs::remove_file(artifacts.join("cancelled-at.json"));
    let started = SystemTime::now();
    let started_at = Instant::now();
    let env = [("PAPERCHAIN_APP_URL", server.base.clone()), ("PAPERCHAIN_PDF", scan.display().to_string())];
    crate::app_ui::run_browser_tests("cancel.test.mjs", &env, 1).await;
    let said: Value = serde_json::from_slice(&std::fs::read(artifacts.join("cancelled-at.json")).unwrap()).unwrap();
    let since_start =
        said["cancelled_at"].as_u64().unwrap() - started.duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
    let cancelled = started_at + Duration::from_millis(since_start);
    let working = trace.seconds(cancelled - Duration::from_millis(1000), cancelled);
    assert!(working > 0.5, "the OCR was really working before Cancel: {working:.2} CPU s");
    let after = cpu_in_the_second_after(&trace, cancelled + Duration::from_secs(2)).await;
    eprintln!("app's Cancel: {working:.2} CPU s in the second before, {after:.2} CPU s in the second 2 s after");
    assert!(after < 0.15, "2 s after Cancel the server still works: {after:.2} CPU s in one second");
    let row = last_ocr_row(&home);
    assert_eq!(row["state"], "cancelled", "{row}");
}

/// Sends `body` to `path` of `server`: its status, its text, and how much the server's
/// peak memory grew meanwhile.
async fn peak_growth(server: &Server, path: &str, body: String) -> (u16, String, u64) {
    let before = peak_memory(server.child.id());
    let answer = reqwest::Client::new()
        .post(format!("{}{path}", server.base))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let text = answer.text().await.unwrap();
    (status, text, peak_memory(server.child.id()).saturating_sub(before))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_far_over_the_limits_is_refused_while_it_is_read() {
    let data = tempfile::tempdir().unwrap();
    let server = unconfigured_server(data.path(), &[]);

    // Any route: 60 MiB of numbers where data of any shape goes (a template's data) is
    // refused by its count of values, before it is parsed.
    let numbers = vec!["1"; (60 << 20) / 2].join(",");
    let body = format!(r#"{{"template": {{"data": "AA=="}}, "data": {{"rows": [{numbers}]}}}}"#);
    let (status, text, grew) = peak_growth(&server, "/v1/docs/fill-template", body).await;
    eprintln!("a 60 MiB body of 31 million values: {status}, the server's peak memory grew {} MiB", grew >> 20);
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("too_many_values"), "{text}");
    assert!(grew < 256 << 20, "the server's peak memory grew {} MiB", grew >> 20);

    // xlsx-build: 60 MiB of ten-number rows, about 29 million cells, 14 times the limit; the
    // cells past the limit are counted, not kept, and the sheet at fault is named.
    let row = "[1,2,3,4,5,6,7,8,9,0]";
    let rows = (60 << 20) / (row.len() + 1);
    let columns = [r#"{"name": "n", "type": "number"}"#; 10].join(",");
    let rows = vec![row; rows].join(",");
    let body = format!(r#"{{"sheets": [{{"name": "big", "columns": [{columns}], "rows": [{rows}]}}]}}"#);
    let (status, text, grew) = peak_growth(&server, "/v1/docs/xlsx-build", body).await;
    eprintln!(
        "a 60 MiB xlsx-build body over the cell limit: {status}, the server's peak memory grew {} MiB",
        grew >> 20
    );
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("too_many_cells") && text.contains("/sheets/0/rows"), "{text}");
    assert!(grew < 256 << 20, "the server's peak memory grew {} MiB", grew >> 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversion_stopped_by_its_time_out_kills_libreoffice() {
    let data = tempfile::tempdir().unwrap();
    let server = unconfigured_server(data.path(), &[("PAPERCHAIN_REQUEST_TIMEOUT", "5")]);
    let http = reqwest::Client::new();

    // A workbook of 1,000,000 numbers, some 20,000 pages: far more than LibreOffice prints
    // in 5 s on any machine. It is built by a server of its own, without the 5 s limit: on
    // a machine busy with other tests, building it can take longer than that.
    let builder_data = tempfile::tempdir().unwrap();
    let builder = unconfigured_server(builder_data.path(), &[]);
    let columns: Vec<Value> = (0..50).map(|i| json!({"name": format!("c{i}"), "type": "number"})).collect();
    let rows: Vec<Value> = (0..20_000).map(|r| json!((0..50).map(|c| r * 50 + c).collect::<Vec<_>>())).collect();
    let workbook = json!({"sheets": [{"name": "numbers", "columns": columns, "rows": rows}], "output": "base64"});
    let built: Value = http
        .post(format!("{}/v1/docs/xlsx-build", builder.base))
        .json(&workbook)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let xlsx = built["data"].as_str().unwrap_or_else(|| panic!("a workbook: {}", built["error"])).to_string();
    drop(builder);

    let answer = http
        .post(format!("{}/v1/docs/to-pdf", server.base))
        .json(&json!({"file": {"data": xlsx, "filename": "numbers.xlsx"}}))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let text: String = String::from_utf8_lossy(&answer.bytes().await.unwrap()[..]).chars().take(300).collect();
    assert_eq!(status, 504, "{text}");
    let office_after =
        descendants(server.child.id()).into_iter().filter(|(_, name)| name.starts_with("soffice")).count();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let office = descendants(server.child.id());
    assert!(
        office.iter().all(|(_, name)| !name.starts_with("soffice")),
        "2 s after the time-out LibreOffice still runs ({office_after} right after): {office:?}"
    );
    let cpu = tree_cpu_in_the_next_second(server.child.id()).await;
    eprintln!("office time-out: {cpu:.2} CPU s in the second 2 s after, for the server and its children");
    assert!(cpu < 0.15, "2 s after the time-out the server or a child still works: {cpu:.2} CPU s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_that_asks_for_progress_gets_each_page() {
    require_node_packages(&tools_dir(), "the MCP TypeScript SDK", &["@modelcontextprotocol/sdk"]);
    let data = tempfile::tempdir().unwrap();
    let files = data.path().join("files");
    std::fs::create_dir(&files).unwrap();
    let (pdf, _) = sample_page();
    std::fs::write(files.join("page.pdf"), pdf).unwrap();
    let page = render(&files.join("page.pdf"), 1, 150);
    use base64::Engine as _;
    let scan = base64::engine::general_purpose::STANDARD.encode(image_pdf(&[&page; 6], 150));
    let server = unconfigured_server(data.path(), &[("OMP_THREAD_LIMIT", "1")]);
    // The progress notifications the TypeScript SDK client got for `operation` on the scan:
    // the progress values, the totals and the messages.
    let reports = |operation: &'static str| {
        let plan = json!({
            "server": { "url": format!("{}/mcp", server.base) },
            "steps": [{ "call": "document_operation", "progress": true,
                        "arguments": { "operation": operation, "input": { "file": { "data": scan } } } }],
        });
        async move {
            let line = crate::common::ts_sdk_session(&plan, Duration::from_secs(300), operation).await;
            let step = &line["steps"][0];
            assert_ne!(step["result"]["isError"], true, "{line}");
            let progress = step["progress"].as_array().unwrap_or_else(|| panic!("{line}"));
            let number = |p: &Value, key: &str| p[key].as_f64().unwrap_or_else(|| panic!("{p}"));
            let done: Vec<f64> = progress.iter().map(|p| number(p, "progress")).collect();
            let totals: Vec<f64> = progress.iter().map(|p| number(p, "total")).collect();
            let messages: Vec<String> = progress.iter().map(|p| p["message"].as_str().unwrap().to_string()).collect();
            (done, totals, messages)
        }
    };

    let (done, totals, messages) = reports("ocr_pdf").await;
    assert_eq!(done, vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0], "one report a page, strictly increasing");
    assert_eq!(totals, vec![6.0; 6]);
    assert_eq!(messages[5], "6 of 6 pages");

    // A conversion of the same scan: each page's layout, then each scanned page read by
    // OCR, counted on from the first phase; the total grows when the second phase starts.
    let (done, totals, messages) = reports("convert_to_markdown").await;
    assert_eq!(done, (1..=12).map(f64::from).collect::<Vec<_>>());
    assert_eq!(totals, [[6.0; 6], [12.0; 6]].concat());
    assert_eq!((messages[5].as_str(), messages[11].as_str()), ("6 of 6 pages", "6 of 6 scanned pages read by OCR"));
}

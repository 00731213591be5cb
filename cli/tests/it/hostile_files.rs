//! Hostile files against every route that takes them, on `paperchain serve` with its
//! default settings: decompression bombs in every container the engine opens, nesting
//! bombs, huge dimensions and spans (`paperchain_testkit::hostile`, generated here).
//!
//! Every call is answered within 30 s with a refusal or a bounded result (never a 5xx),
//! the server's memory stays under 1.5 GiB all along, and afterwards it is alive, back
//! near its resting size, and nothing it started is still working.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use paperchain_testkit::b64;
use paperchain_testkit::hostile::{self, Case, Kind};
use serde_json::{Value, json};

use crate::common::procs::{descendants, resident_memory, tree_cpu_in_the_next_second};
use crate::common::unconfigured_server;

/// A route that takes a file of some kinds: the body around the file input.
struct Target {
    path: &'static str,
    takes: &'static [Kind],
    body: fn(Value) -> Value,
}

const PDF: &[Kind] = &[Kind::Pdf];
const OFFICE: &[Kind] = &[Kind::Docx, Kind::Xlsx, Kind::Pptx, Kind::Odt];
const MARKDOWN: &[Kind] =
    &[Kind::Pdf, Kind::Docx, Kind::Xlsx, Kind::Pptx, Kind::Odt, Kind::Epub, Kind::Html, Kind::Csv];

fn targets() -> Vec<Target> {
    let pdf = |path, body| Target { path, takes: PDF, body };
    vec![
        pdf("/v1/pdf/merge", |f| json!({ "files": [{ "file": f }, { "file": f }] })),
        pdf("/v1/pdf/split", |f| json!({ "file": f, "every": 1 })),
        pdf("/v1/pdf/extract-pages", |f| json!({ "file": f, "pages": "1" })),
        pdf("/v1/pdf/remove-pages", |f| json!({ "file": f, "pages": "1" })),
        pdf("/v1/pdf/reorder", |f| json!({ "file": f, "order": [1, 1] })),
        pdf("/v1/pdf/rotate", |f| json!({ "file": f, "degrees": 90 })),
        pdf("/v1/pdf/watermark", |f| json!({ "file": f, "text": "DRAFT" })),
        pdf("/v1/pdf/page-numbers", |f| json!({ "file": f })),
        pdf("/v1/pdf/crop", |f| json!({ "file": f, "margins": { "top": 10 } })),
        pdf("/v1/pdf/resize", |f| json!({ "file": f, "size": "A4" })),
        pdf("/v1/pdf/outline", |f| json!({ "file": f })),
        pdf("/v1/pdf/set-outline", |f| json!({ "file": f, "outline": [{ "title": "A", "page": 1 }] })),
        pdf("/v1/pdf/metadata", |f| json!({ "file": f, "action": "read" })),
        pdf("/v1/pdf/inspect", |f| json!({ "file": f })),
        pdf("/v1/pdf/attachments", |f| json!({ "file": f, "action": "list" })),
        pdf("/v1/pdf/form-fields", |f| json!({ "file": f })),
        pdf("/v1/pdf/flatten", |f| json!({ "file": f })),
        pdf("/v1/pdf/fill-form", |f| json!({ "file": f, "values": {} })),
        pdf("/v1/pdf/protect", |f| json!({ "file": f, "user_password": "open sesame" })),
        pdf("/v1/pdf/unlock", |f| json!({ "file": f })),
        pdf("/v1/pdf/repair", |f| json!({ "file": f })),
        pdf("/v1/pdf/to-images", |f| json!({ "file": f, "format": "png" })),
        pdf("/v1/pdf/rasterize", |f| json!({ "file": f })),
        pdf("/v1/pdf/compress", |f| json!({ "file": f })),
        pdf(
            "/v1/pdf/pipeline",
            |f| json!({ "file": f, "steps": [{ "op": "compress" }, { "op": "rotate", "degrees": 90 }] }),
        ),
        pdf("/v1/pdf/tables", |f| json!({ "file": f })),
        pdf("/v1/pdf/bank-statement", |f| json!({ "file": f })),
        pdf("/v1/pdf/to-docx", |f| json!({ "file": f })),
        pdf("/v1/pdf/ocr", |f| json!({ "file": f, "force": true })),
        Target { path: "/v1/docs/to-markdown", takes: MARKDOWN, body: |f| json!({ "file": f }) },
        Target { path: "/v1/docs/to-pdf", takes: OFFICE, body: |f| json!({ "file": f }) },
        Target { path: "/v1/docs/fill-template", takes: &[Kind::Docx], body: |f| json!({ "template": f, "data": {} }) },
        Target { path: "/v1/docs/xlsx-to-json", takes: &[Kind::Xlsx], body: |f| json!({ "file": f }) },
        Target { path: "/v1/pdf/from-images", takes: &[Kind::Png, Kind::Jpeg], body: |f| json!({ "images": [f] }) },
    ]
}

/// Where a JSON body goes: a route whose body is free-form data, and one whose body is small.
const JSON_ROUTES: &[&str] = &["/v1/docs/fill-template", "/v1/docs/xlsx-build", "/v1/chain/status"];

/// The highest memory the server (and its whole process tree) held since the last reset,
/// sampled every 20 ms.
struct Sampler {
    server: Arc<AtomicU64>,
    tree: Arc<AtomicU64>,
    on: Arc<AtomicBool>,
}

impl Sampler {
    fn start(root: u32) -> Sampler {
        let (server, tree, on) =
            (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(true)));
        let (s, t, o) = (Arc::clone(&server), Arc::clone(&tree), Arc::clone(&on));
        std::thread::spawn(move || {
            let mut below = Vec::new();
            let mut round = 0u32;
            while o.load(Ordering::SeqCst) {
                // The tree is walked every 200 ms (reading all of /proc), its members read every time.
                if round.is_multiple_of(10) {
                    below = descendants(root).into_iter().map(|(pid, _)| pid).collect();
                }
                round += 1;
                let own = resident_memory(root);
                let all = own + below.iter().map(|pid| resident_memory(*pid)).sum::<u64>();
                s.fetch_max(own, Ordering::SeqCst);
                t.fetch_max(all, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Sampler { server, tree, on }
    }

    /// The peaks since the last call, and a new window from now.
    fn take(&self) -> (u64, u64) {
        (self.server.swap(0, Ordering::SeqCst), self.tree.swap(0, Ordering::SeqCst))
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.on.store(false, Ordering::SeqCst);
    }
}

/// One call of the suite, as reported.
struct Row {
    case: &'static str,
    path: &'static str,
    status: Option<u16>,
    code: String,
    seconds: f64,
    server_mib: u64,
    tree_mib: u64,
}

fn file_of(case: &Case) -> Value {
    json!({ "data": b64(&case.bytes), "filename": format!("{}.{}", case.name, case.kind.extension()) })
}

async fn send(client: &reqwest::Client, base: &str, path: &str, body: Vec<u8>) -> (Option<u16>, String) {
    let answer = client
        .post(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .timeout(Duration::from_secs(30))
        .send()
        .await;
    match answer {
        Ok(answer) => {
            let status = answer.status().as_u16();
            let text = answer.text().await.unwrap_or_default();
            let code = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["error"]["code"].as_str().or(v["code"].as_str()).map(str::to_string))
                .unwrap_or_else(|| if status == 200 { "ok".into() } else { text.chars().take(80).collect() });
            (Some(status), code)
        }
        Err(e) => (None, format!("no answer: {e}")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_files_are_answered_in_bounded_time_and_memory() {
    let made = Instant::now();
    let cases = hostile::all();
    eprintln!("{} hostile inputs made in {:.1} s", cases.len(), made.elapsed().as_secs_f64());
    // To replay a case by hand: PAPERCHAIN_HOSTILE_DIR=<folder> keeps every file there.
    if let Some(dir) = std::env::var_os("PAPERCHAIN_HOSTILE_DIR") {
        for case in &cases {
            let name = format!("{}.{}", case.name, case.kind.extension());
            std::fs::write(std::path::Path::new(&dir).join(name), &case.bytes).unwrap();
        }
    }

    let data = tempfile::tempdir().unwrap();
    // Its log (serve.log in `data`) says each call's memory peak at debug level.
    let server = unconfigured_server(data.path(), &[("PAPERCHAIN_LOG", "debug,lopdf=off")]);
    let pid = server.child.id();
    let client = reqwest::Client::new();
    // Resting means warm: pdfium, Tesseract and the HTML reader loaded by one small call
    // each, as after any day of use.
    let (page, _) = paperchain_testkit::scan::sample_page();
    let page = json!({ "data": b64(&page), "filename": "page.pdf" });
    for (path, body) in [
        ("/v1/pdf/to-images", json!({ "file": page, "format": "png", "dpi": 72 })),
        ("/v1/pdf/ocr", json!({ "file": page, "force": true })),
        ("/v1/docs/to-markdown", json!({ "file": { "data": b64(b"<h1>Hi</h1>"), "filename": "a.html" } })),
    ] {
        let (status, code) = send(&client, &server.base, path, serde_json::to_vec(&body).unwrap()).await;
        assert_eq!(status, Some(200), "warming up with {path}: {code}");
    }
    let resting_before = resident_memory(pid);
    let sampler = Sampler::start(pid);

    let mut rows = Vec::new();
    for case in &cases {
        let mut calls: Vec<(&'static str, Vec<u8>)> = Vec::new();
        if matches!(case.kind, Kind::Json) {
            calls.extend(JSON_ROUTES.iter().map(|path| (*path, case.bytes.clone())));
        } else {
            let file = file_of(case);
            for target in targets().into_iter().filter(|t| t.takes.contains(&case.kind)) {
                calls.push((target.path, serde_json::to_vec(&(target.body)(file.clone())).unwrap()));
            }
            if matches!(case.kind, Kind::Html) {
                let html = String::from_utf8_lossy(&case.bytes).into_owned();
                calls.push(("/v1/pdf/html-to-pdf", serde_json::to_vec(&json!({ "html": html })).unwrap()));
            }
        }
        for (path, body) in calls {
            sampler.take();
            let started = Instant::now();
            let (status, code) = send(&client, &server.base, path, body).await;
            let seconds = started.elapsed().as_secs_f64();
            // One more sample after the answer, so a peak at the very end is seen.
            tokio::time::sleep(Duration::from_millis(40)).await;
            let (server_peak, tree_peak) = sampler.take();
            let row = Row {
                case: case.name,
                path,
                status,
                code,
                seconds,
                server_mib: server_peak >> 20,
                tree_mib: tree_peak >> 20,
            };
            eprintln!(
                "{:<28} {:<26} {:>4} {:<24} {:>6.1} s {:>6} MiB {:>6} MiB",
                row.case,
                row.path,
                row.status.map_or("-".to_string(), |s| s.to_string()),
                row.code,
                row.seconds,
                row.server_mib,
                row.tree_mib
            );
            rows.push(row);
        }
    }
    drop(sampler);

    // Afterwards: alive, nothing still working, back near the resting size.
    let alive = client.get(format!("{}/healthz", server.base)).send().await.map(|a| a.status().as_u16());
    let cpu = tree_cpu_in_the_next_second(pid).await;
    let resting_after = resident_memory(pid);
    eprintln!(
        "resting: {} MiB before, {} MiB after; the tree used {cpu:.2} CPU s in the second after the suite",
        resting_before >> 20,
        resting_after >> 20
    );

    let unanswered: Vec<String> =
        rows.iter().filter(|r| r.status.is_none()).map(|r| format!("{} {}: {}", r.case, r.path, r.code)).collect();
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.status.is_some_and(|s| s >= 500))
        .map(|r| format!("{} {}: {:?} {}", r.case, r.path, r.status, r.code))
        .collect();
    let heavy: Vec<String> = rows
        .iter()
        .filter(|r| r.server_mib >= 1536)
        .map(|r| format!("{} {}: {} MiB", r.case, r.path, r.server_mib))
        .collect();
    assert!(unanswered.is_empty(), "not answered within 30 s: {unanswered:#?}");
    assert!(failed.is_empty(), "answered with a server error: {failed:#?}");
    assert!(heavy.is_empty(), "the server held 1.5 GiB or more: {heavy:#?}");
    assert_eq!(alive.ok(), Some(200), "the server is alive after the suite");
    assert!(cpu < 0.3, "nothing the server started is still working: {cpu:.2} CPU s in a second");
    assert!(
        resting_after < resting_before + (256 << 20),
        "back near its resting size: {} MiB before, {} MiB after",
        resting_before >> 20,
        resting_after >> 20
    );
}

/// The server's ceiling (`PAPERCHAIN_MEMORY_MIB`): a heavy call is refused with 503 `busy`
/// while the process holds more than the ceiling less one call's budget, before it reads
/// the body; light calls go on. Here the ceiling is 256 MiB (the least it may be) and a
/// call's budget 128: the first OCR is let in (the server holds about 50 MiB), and once
/// pdfium and Tesseract are loaded (the server holds over 128 MiB) the next heavy call is
/// refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heavy_work_past_the_memory_ceiling_is_refused_as_busy() {
    let data = tempfile::tempdir().unwrap();
    let server =
        unconfigured_server(data.path(), &[("PAPERCHAIN_MEMORY_MIB", "256"), ("PAPERCHAIN_CALL_MEMORY_MIB", "128")]);
    let pid = server.child.id();
    let client = reqwest::Client::new();
    let (page, _) = paperchain_testkit::scan::sample_page();
    let page = json!({ "data": b64(&page), "filename": "page.pdf" });
    let render = serde_json::to_vec(&json!({ "file": page, "format": "png", "dpi": 72 })).unwrap();
    let ocr = serde_json::to_vec(&json!({ "file": page, "force": true })).unwrap();

    let held = resident_memory(pid);
    assert!(held < 128 << 20, "a fresh server holds {} MiB", held >> 20);
    let (status, code) = send(&client, &server.base, "/v1/pdf/ocr", ocr).await;
    assert_eq!(status, Some(200), "the first OCR is let in: {code}");

    let held = resident_memory(pid);
    assert!(held > 128 << 20, "pdfium and Tesseract loaded, the server holds {} MiB", held >> 20);
    let answer = client
        .post(format!("{}/v1/pdf/to-images", server.base))
        .header("content-type", "application/json")
        .body(render)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 503);
    assert!(answer.headers().contains_key("retry-after"));
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["error"]["code"], "busy", "{body}");
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("ceiling of 256 MiB (PAPERCHAIN_MEMORY_MIB)"), "{message}");

    // Light work is not held back: a rotation needs no heavy turn.
    let rotate = serde_json::to_vec(&json!({ "file": page, "degrees": 90 })).unwrap();
    let (status, code) = send(&client, &server.base, "/v1/pdf/rotate", rotate).await;
    assert_eq!(status, Some(200), "{code}");
}

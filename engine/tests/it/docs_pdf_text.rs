//! `/v1/pdf`: a PDF fetched by URL from a loopback server (allowed for these tests only),
//! its page texts checked against pdftotext's, its metadata against the file's; blocked
//! targets, non-PDFs, passwords and the 200-page limit.

use crate::common;

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

use common::route::call;
use paperchain_engine::fetch::AddressPolicy;
use paperchain_engine::{Context, EngineError, ErrorKind};
use paperchain_testkit::corpus::corpus;
use paperchain_testkit::loopback::serve_files;
use serde_json::{Value, json};

/// Serves each PDF at `/<name>` on a loopback port.
async fn serve(files: HashMap<String, Vec<u8>>) -> String {
    serve_files(files.into_iter().map(|(name, bytes)| (name, ("application/pdf", bytes))).collect()).await
}

fn loopback_allowed() -> Context {
    Context::with_policy(AddressPolicy::allowing(["127.0.0.1".parse::<IpAddr>().unwrap()]))
}

fn pdftotext(pdf: &Path, page: u32) -> String {
    let page = page.to_string();
    let out = Command::new("pdftotext").args(["-f", &page, "-l", &page]).arg(pdf).arg("-").output().unwrap();
    assert!(out.status.success(), "pdftotext: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Dice similarity of the two texts' word multisets.
fn word_similarity(a: &str, b: &str) -> f64 {
    let count = |text: &str| {
        let mut words: HashMap<String, i64> = HashMap::new();
        for word in text.split_whitespace() {
            *words.entry(word.to_string()).or_default() += 1;
        }
        words
    };
    let (a, b) = (count(a), count(b));
    let total: i64 = a.values().sum::<i64>() + b.values().sum::<i64>();
    if total == 0 {
        return 1.0;
    }
    let common: i64 = a.iter().map(|(w, n)| (*n).min(*b.get(w).unwrap_or(&0))).sum();
    2.0 * common as f64 / total as f64
}

const TEXT_PDFS: &[&str] = &[
    "pdf/sample-files/pdflatex-4-pages.pdf",
    "docling/pdf/sources/multi_page.pdf",
    "docling/pdf/sources/2305.03393v1-pg9.pdf",
    "docling/pdf/sources/redp5110_sampled.pdf",
];

#[tokio::test]
async fn page_texts_match_pdftotext_and_metadata_the_file() {
    let files: HashMap<String, Vec<u8>> = TEXT_PDFS
        .iter()
        .map(|p| {
            (Path::new(p).file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(corpus().join(p)).unwrap())
        })
        .collect();
    let base = serve(files).await;
    let ctx = loopback_allowed();
    for relative in TEXT_PDFS {
        let path = corpus().join(relative);
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let answer = call(&ctx, "/v1/pdf", json!({"url": format!("{base}/{name}")})).await.unwrap();
        let pages = answer["pages"].as_array().unwrap();
        let info = Command::new("pdfinfo").arg(&path).output().unwrap();
        let info = String::from_utf8_lossy(&info.stdout).into_owned();
        let count: u64 = info.lines().find_map(|l| l.strip_prefix("Pages:")).unwrap().trim().parse().unwrap();
        assert_eq!(answer["page_count"].as_u64(), Some(count), "{name}");
        assert_eq!(pages.len() as u64, count, "{name}");
        let (mut similarities, mut textless) = (Vec::new(), Vec::new());
        for page in pages {
            let number = page["number"].as_u64().unwrap() as u32;
            let ours = page["text"].as_str().unwrap();
            assert!(!ours.contains('\r') && !ours.contains("\n\n\n"), "{name} page {number}: {ours:?}");
            let theirs = pdftotext(&path, number);
            if theirs.trim().is_empty() {
                textless.push(number);
            }
            let similarity = word_similarity(ours, &theirs);
            eprintln!("{name} page {number}: word similarity to pdftotext {similarity:.3}");
            similarities.push(similarity);
        }
        let mean = similarities.iter().sum::<f64>() / similarities.len() as f64;
        let worst = similarities.iter().copied().fold(1.0, f64::min);
        assert!(mean >= 0.95 && worst >= 0.8, "{name}: mean word similarity {mean:.3}, worst page {worst:.3}");
        let joined: Vec<&str> = pages.iter().map(|p| p["text"].as_str().unwrap()).collect();
        assert_eq!(answer["text"], joined.join("\u{c}"), "{name}: pages joined by form feeds");
        assert_eq!(answer["pages_without_text"], json!(textless), "{name}: the pages pdftotext finds no text on");
        if let Some(title) = info.lines().find_map(|l| l.strip_prefix("Title:")) {
            assert_eq!(answer["metadata"]["title"].as_str(), Some(title.trim()), "{name}");
        }
        assert_eq!(answer["url"], format!("{base}/{name}"));
    }
}

async fn err(ctx: &Context, body: Value) -> EngineError {
    call(ctx, "/v1/pdf", body).await.expect_err("the call must fail")
}

#[tokio::test]
async fn blocked_targets_wrong_files_passwords_and_long_pdfs() {
    let locked = std::fs::read(corpus().join("pdf/qpdf/enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("long.pdf");
    let four = corpus().join("pdf/sample-files/pdflatex-4-pages.pdf");
    let mut qpdf = Command::new("qpdf");
    qpdf.args(["--empty", "--pages"]);
    for _ in 0..51 {
        qpdf.arg(&four);
    }
    assert!(qpdf.arg("--").arg(&long).status().unwrap().success());
    let files = HashMap::from([
        ("locked.pdf".to_string(), locked),
        ("note.txt".to_string(), b"just text".to_vec()),
        ("long.pdf".to_string(), std::fs::read(&long).unwrap()),
    ]);
    let base = serve(files).await;

    // Without the loopback exception, the same URL is a blocked target.
    let error = err(&Context::new(), json!({"url": format!("{base}/locked.pdf")})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("blocked_target", Some("/url")));
    let ctx = loopback_allowed();
    let error = err(&ctx, json!({"url": format!("{base}/missing.pdf")})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("fetch_failed", Some("/url")));
    let error = err(&ctx, json!({"url": format!("{base}/note.txt")})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("not_a_pdf", Some("/url")));
    let error = err(&ctx, json!({"url": "ftp://example.com/a.pdf"})).await;
    assert_eq!((error.kind, error.field.as_deref()), (ErrorKind::InvalidInput, Some("/url")));
    let error = err(&ctx, json!({"url": " "})).await;
    assert_eq!(error.field.as_deref(), Some("/url"));

    let error = err(&ctx, json!({"url": format!("{base}/locked.pdf")})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("password_required", Some("/password")));
    let error = err(&ctx, json!({"url": format!("{base}/locked.pdf"), "password": "nope"})).await;
    assert_eq!((error.code.as_ref(), error.field.as_deref()), ("wrong_password", Some("/password")));
    let answer = call(&ctx, "/v1/pdf", json!({"url": format!("{base}/locked.pdf"), "password": "view"})).await.unwrap();
    assert_eq!(answer["encrypted"], true);
    assert!(answer["page_count"].as_u64().unwrap() >= 1);

    let error = err(&ctx, json!({"url": format!("{base}/long.pdf")})).await;
    assert_eq!(
        (error.kind, error.code.as_ref(), error.field.as_deref()),
        (ErrorKind::TooLarge, "too_many_pages", Some("/url"))
    );
    assert!(error.message.contains("204 pages"), "{}", error.message);
}

//! Mutation fuzzing of every route, in process, on stable Rust (`cargo xtask fuzz`).
//!
//! A worker process takes a seed body of a route ([`seeds`]), mutates it ([`mutate`]): the
//! corpus file inside it (PDF tokens, one part of an Office ZIP, raw bytes) or the JSON
//! around it, and runs it through the route's `prepare` and `run` as the front doors do.
//! What counts as a finding:
//! - a panic (caught here, with its location);
//! - an internal error (`ErrorKind::Internal`): input alone must never cause one;
//! - an answer whose files do not open again (a PDF lopdf cannot load, a ZIP that does not
//!   read);
//! - a call over the time cap, or the worker over the memory cap (its watchdog ends it);
//! - the worker dying (an abort, a stack overflow, a signal).
//!
//! Every other answer is fine: an input error naming its field is what a damaged or hostile
//! input should get. Answers are told apart by their code and field; an input that draws
//! an answer its route never gave before is kept and mutated further, a poor man's coverage
//! guidance (stable Rust has no coverage-instrumented fuzzing).
//!
//! Chain routes run against a closed port, so their input checks and error paths run, not
//! a node. URL inputs go through the production fetcher (public addresses only).

pub mod mutate;
pub mod seeds;
pub mod selftest;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use paperchain_engine::catalog::Catalog;
use paperchain_engine::catalog::media;
use paperchain_engine::context::Context;
use paperchain_engine::error::ErrorKind;
use paperchain_engine::output::Reply;
use serde_json::{Value, json};

/// A call taking longer than this is a hang (the corpus test's cap).
pub const TIME_CAP: Duration = Duration::from_secs(60);
/// A worker holding more than this is over its memory (the corpus test's address-space
/// cap, counted as resident memory: Chromium, which some routes start, does not run under
/// an address-space limit).
pub const MEMORY_CAP_BYTES: u64 = 4 << 30;
/// Where chain nodes and the funding venue are: a port nothing listens on.
pub const CLOSED_UPSTREAM: &str = "http://127.0.0.1:9";

/// One input: a route and the body it is called with.
#[derive(Clone, Debug, PartialEq)]
pub struct Case {
    /// The operation name.
    pub route: String,
    /// The request body (JSON, or bytes a mutation left as something else).
    pub body: Vec<u8>,
}

/// What went wrong in a finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// `panic`, `internal`, `bad_output`, `hang`, `memory` or `crash`.
    pub kind: String,
    /// The panic message and location, the error, what did not open, the signal.
    pub detail: String,
}

/// How one call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// A proper answer: `ok`, or the error's code and field (indexes as `N`).
    Answered(String),
    /// A defect.
    Finding(Finding),
}

impl Case {
    /// The case as a regression file records it: the body as JSON when it is JSON, else
    /// base64; with the finding that made it one.
    pub fn to_record(&self, finding: Option<&Finding>) -> Value {
        let mut record = json!({ "route": self.route });
        if let Some(finding) = finding {
            record["finding"] = json!(finding.kind);
            record["detail"] = json!(finding.detail);
        }
        match serde_json::from_slice::<Value>(&self.body) {
            Ok(body) => record["body"] = body,
            Err(_) => record["body_base64"] = json!(base64::engine::general_purpose::STANDARD.encode(&self.body)),
        }
        record
    }

    /// A case from [`Case::to_record`]'s form.
    pub fn from_record(record: &Value) -> anyhow::Result<Case> {
        let route = record["route"].as_str().ok_or_else(|| anyhow::anyhow!("no `route`"))?.to_owned();
        let body = match (record.get("body"), record["body_base64"].as_str()) {
            (Some(body), _) => serde_json::to_vec(body)?,
            (None, Some(encoded)) => base64::engine::general_purpose::STANDARD.decode(encoded)?,
            (None, None) => anyhow::bail!("neither `body` nor `body_base64`"),
        };
        Ok(Case { route, body })
    }
}

/// The catalog under test: every standard route, and with `selftest` the route that fails
/// on request ([`selftest`]), which the fuzzer's own tests use.
pub fn catalog(selftest: bool) -> Catalog {
    let mut catalog = paperchain_engine::catalog::standard();
    if selftest {
        catalog.add::<selftest::SelfTestRoute>();
    }
    catalog
}

/// The production context with every upstream at a closed port: chain nodes (EVM and
/// Solana), the funding venue. URL inputs keep the production fetcher, which fetches public addresses only.
pub fn offline_context() -> Context {
    use paperchain_engine::chain::funding::{FundingClient, FundingConfig};
    let closed = |name: &str| name.starts_with("PAPERCHAIN_RPC_").then(|| CLOSED_UPSTREAM.to_owned());
    let chains = paperchain_engine::evm::Chains::try_from_vars(closed).expect("the built-in chains take any URL");
    let solana = paperchain_engine::solana::Clusters::from_vars(closed);
    let ctx = Context { chains: Arc::new(chains), solana: Arc::new(solana), ..Context::new() };
    ctx.state.insert(FundingClient::new(FundingConfig::with_upstream(Some(CLOSED_UPSTREAM))));
    ctx
}

/// The message and location of the last panic, kept by the hook [`capture_panics`] sets.
static LAST_PANIC: Mutex<Option<String>> = Mutex::new(None);

/// Records every panic's message and location instead of printing it; [`run_case`] reports
/// it as a finding.
pub fn capture_panics() {
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = Some(text);
        }
    }));
}

/// Runs `case` through its route's `prepare` and `run`, as a front door calls it, and
/// judges the outcome. An unknown route is a proper `not_found` answer.
pub async fn run_case(catalog: &Arc<Catalog>, ctx: &Context, case: &Case) -> Verdict {
    if catalog.by_operation(&case.route).is_none() {
        return Verdict::Answered("not_found".into());
    }
    let (task_catalog, task_ctx, task_case) = (catalog.clone(), ctx.clone(), case.clone());
    // A panic of an earlier case that was caught and answered is not this case's clue.
    if let Ok(mut last) = LAST_PANIC.lock() {
        last.take();
    }
    let task = tokio::spawn(async move {
        let entry = task_catalog.by_operation(&task_case.route).expect("checked above");
        entry.call(&task_case.body, &task_ctx).await
    });
    match task.await {
        Err(error) => {
            let detail = LAST_PANIC.lock().ok().and_then(|mut last| last.take()).unwrap_or_else(|| error.to_string());
            Verdict::Finding(Finding { kind: "panic".into(), detail })
        }
        Ok(Err(error)) if error.kind == ErrorKind::Internal => {
            // A panic in a blocking task comes back as an internal error: its place is the clue.
            let panic = LAST_PANIC.lock().ok().and_then(|mut last| last.take());
            let detail = match panic {
                Some(panic) => format!("{}: {} ({panic})", error.code, error.message),
                None => format!("{}: {}", error.code, error.message),
            };
            Verdict::Finding(Finding { kind: "internal".into(), detail })
        }
        Ok(Err(error)) => Verdict::Answered(match &error.field {
            // Deeply nested fields are one answer, not one per depth.
            Some(field) => format!("{}@{}", error.code, without_indexes(field).chars().take(80).collect::<String>()),
            None => error.code.to_string(),
        }),
        Ok(Ok(reply)) => match check_reply(&case.route, &reply) {
            Ok(()) => Verdict::Answered("ok".into()),
            Err(detail) => Verdict::Finding(Finding { kind: "bad_output".into(), detail }),
        },
    }
}

/// A JSON pointer with its array indexes as `N`, so `/files/3/pages` and `/files/0/pages`
/// are the same answer.
fn without_indexes(field: &str) -> String {
    field
        .split('/')
        .map(|part| if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) { "N" } else { part })
        .collect::<Vec<_>>()
        .join("/")
}

/// Whether a successful answer's files open again: PDFs in lopdf (except the encrypted
/// ones `password_protect_pdf` writes), ZIPs and Office files as archives whose every
/// entry reads.
pub fn check_reply(route: &str, reply: &Reply<Value>) -> Result<(), String> {
    let Reply::Files(set) = reply else { return Ok(()) };
    if set.files.is_empty() {
        return Err("a file answer without files".into());
    }
    for file in &set.files {
        let zip_like = [media::ZIP, media::DOCX, media::XLSX, media::PPTX].contains(&file.media_type.as_str());
        if file.media_type == media::PDF && route != "password_protect_pdf" {
            if !file.bytes.starts_with(b"%PDF-") {
                return Err(format!("{}: a PDF that does not start with %PDF-", file.filename));
            }
            if let Err(error) = lopdf::Document::load_mem(&file.bytes) {
                return Err(format!("{}: the PDF does not open: {error}", file.filename));
            }
        } else if zip_like {
            check_zip(&file.bytes).map_err(|error| format!("{}: {error}", file.filename))?;
        }
    }
    Ok(())
}

fn check_zip(bytes: &[u8]) -> Result<(), String> {
    use std::io::Read;
    let mut archive =
        zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(|e| format!("the archive does not open: {e}"))?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(|e| format!("entry {i}: {e}"))?;
        std::io::copy(&mut (&mut entry).take(1 << 30), &mut std::io::sink()).map_err(|e| format!("entry {i}: {e}"))?;
    }
    Ok(())
}

/// The resident memory of this process, in bytes (Linux; 0 elsewhere).
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|n| n.parse::<u64>().ok()))
        .map_or(0, |pages| pages * 4096)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_json_bodies_readable_and_other_bytes_exact() {
        let json_case = Case { route: "inspect_pdf_document".into(), body: br#"{"file":{"data":"JVBE"}}"#.to_vec() };
        let record = json_case.to_record(Some(&Finding { kind: "panic".into(), detail: "x".into() }));
        assert_eq!(record["body"]["file"]["data"], "JVBE");
        assert_eq!(record["finding"], "panic");
        assert_eq!(Case::from_record(&record).unwrap(), json_case);

        let raw = Case { route: "split_pdf".into(), body: vec![b'{', 0xff, 0, b'"'] };
        let record = raw.to_record(None);
        assert!(record.get("body").is_none());
        assert_eq!(Case::from_record(&record).unwrap(), raw);
    }

    #[test]
    fn answers_differing_only_in_indexes_are_the_same() {
        assert_eq!(without_indexes("/files/12/pages"), "/files/N/pages");
        assert_eq!(without_indexes("/steps/0/op"), "/steps/N/op");
        assert_eq!(without_indexes("/file"), "/file");
    }

    #[test]
    fn every_standard_route_has_a_seed_body() {
        let catalog = catalog(false);
        let missing: Vec<&str> = catalog
            .routes()
            .map(|r| r.info().operation)
            .filter(|operation| seeds::templates(operation).is_empty())
            .collect();
        assert!(missing.is_empty(), "routes without a seed body: {missing:?}");
    }

    #[test]
    fn a_file_answer_that_does_not_open_is_a_finding() {
        use paperchain_engine::output::{FileSet, OutFile, OutputMode};
        let broken =
            Reply::Files(FileSet::single(OutFile::pdf("a.pdf", b"%PDF-1.7\n garbage".to_vec()), OutputMode::File));
        assert!(check_reply("rotate_pdf_pages", &broken).unwrap_err().contains("does not open"));
        let zip =
            OutFile { filename: "a.zip".into(), media_type: media::ZIP.into(), bytes: b"PK\x03\x04junk".to_vec() };
        assert!(check_reply("split_pdf", &Reply::Files(FileSet::single(zip, OutputMode::File))).is_err());
        assert!(check_reply("inspect_pdf_document", &Reply::Json(json!({ "pages": 1 }))).is_ok());
    }
}

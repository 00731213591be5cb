//! `POST /v1/pdf/repair`: rebuild a damaged PDF with qpdf's recovery, optionally linearized.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use lopdf::Document;

use crate::context::{Context, Limits, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::qpdf::{self as qp, QpdfSource, WriteOptions};
use crate::pdf::repair_pass;
use crate::pdf::transform::{Pdf, PdfJob, Transform};
use crate::price::Price;

/// A checked repair call.
pub struct RepairCall {
    source: QpdfSource,
    linearize: bool,
    output: OutputMode,
}

/// The route's description, shared by the route and the pipeline step.
const INFO: RouteInfo = RouteInfo {
    path: "/v1/pdf/repair",
    operation: "repair_damaged_pdf",
    family: Family::Docs,
    summary: "Rebuild a damaged PDF, optionally for fast web view",
    description: "Reads a damaged PDF the way qpdf recovers it (rebuilding a broken or missing \
        cross-reference table, recovering wrong stream lengths, skipping unreadable objects) and writes \
        every page into a fresh, consistent file; `linearize: true` also optimizes it for fast web view. \
        Damage inside objects is then fixed so that the file reads without warnings: a stream whose data no longer \
        decodes keeps what precedes the damage (an image's missing rows are blank), content that stops parsing \
        keeps the operations that parse, a /Contents that is not a stream is removed, a /Filter given as a string \
        becomes a name, a name with a stray # is written properly. An encrypted file stays encrypted. An intact \
        file comes back rewritten, with the same pages. A file without a recoverable page tree is refused with \
        damaged_pdf (not_a_pdf when it has no %PDF- header either). A report says what was repaired: pages, \
        linearized, encrypted, recovered (qpdf had to work around damage while reading), fixes (what was done, \
        in words; empty for an intact file) and notes (what could not be checked); it comes as the \
        Paperchain-Report header for output=file and as a `report` field for base64 and url. output=url gives a \
        24 h link.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
    holds_secrets: false,
    accepts: crate::catalog::accepts::PDF,
};

/// The route.
pub struct RepairRoute;

impl Route for RepairRoute {
    const HEAVY: bool = true;
    type Input = PdfJob<RepairOptions>;
    type Prepared = RepairCall;
    type Output = NoJson;

    const INFO: RouteInfo = INFO;

    async fn prepare(input: PdfJob<RepairOptions>, ctx: &Context) -> Result<RepairCall, EngineError> {
        let source = QpdfSource::load_damaged(&input.file, "/file", ctx).await?;
        Ok(RepairCall { source, linearize: input.options.linearize, output: input.output })
    }

    fn quote(call: &RepairCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: RepairCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let limits = ctx.limits;
        blocking(move || {
            let RepairCall { source, linearize, output } = call;
            let repaired = repair_pass::repair(&source.bytes, source.password.as_deref(), linearize, &limits)
                .map_err(|e| e.under(&source.field))?;
            tracing::debug!(pages = repaired.pages, report = %repaired.report, "repaired a PDF");
            let name = derived_name(&source.filename, "repaired", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, repaired.bytes), output).with_report(repaired.report)))
        })
        .await
    }
}

/// Fields of `/v1/pdf/repair` besides `file` and `output` (an encrypted file opens with its
/// `password` and stays encrypted).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RepairOptions {
    /// Linearize the result ("fast web view"). Default false.
    #[serde(default)]
    pub linearize: bool,
}

/// The operation, as a pipeline step: the document so far rewritten by qpdf, optionally
/// linearized (a later step that edits the document writes it plainly again).
pub struct Repair;

impl Transform for Repair {
    type Options = RepairOptions;
    type Plan = bool;

    const INFO: RouteInfo = INFO;
    const SUFFIX: &'static str = "repaired";

    fn plan(options: RepairOptions, _: &Document, _: &Limits) -> Result<bool, EngineError> {
        Ok(options.linearize)
    }

    fn apply(linearize: bool, mut doc: Document, limits: &Limits) -> Result<Pdf, EngineError> {
        let options = WriteOptions { linearize, ..WriteOptions::default() };
        Ok(Pdf::Bytes(qp::rewrite(&mut doc, options, limits)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pdf::qpdf::testing::*;
    use serde_json::{Value, json};

    async fn repair(bytes: &[u8], linearize: bool) -> Result<OutFile, EngineError> {
        run_single::<RepairRoute>(&json!({ "file": file_json(bytes, "broken.pdf", None), "linearize": linearize }))
            .await
    }

    /// A sample whose cross-reference offsets all point to the wrong place.
    fn shifted_xref(pages: u32) -> Vec<u8> {
        let mut bytes = sample_pdf(pages);
        let at = bytes.windows(5).position(|w| w == b"1 0 o").unwrap();
        bytes.splice(at..at, b"%% twenty junk bytes\n".iter().copied());
        bytes
    }

    #[tokio::test]
    async fn rebuilds_a_broken_cross_reference_table() {
        let broken = shifted_xref(3);
        let file = temp_pdf(&broken);
        let (code, _) = qpdf_cli(&["--check", file.path().to_str().unwrap()]);
        assert_ne!(code, 0, "the input is damaged");
        let out = repair(&broken, false).await.unwrap();
        assert_eq!(out.filename, "broken-repaired.pdf");
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), 3);
    }

    #[tokio::test]
    async fn linearizes_on_request() {
        let out = repair(&shifted_xref(4), true).await.unwrap();
        let file = temp_pdf(&out.bytes);
        let (code, text) = qpdf_cli(&["--check-linearization", file.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("no linearization errors"), "{text}");
        assert_qpdf_check(&out.bytes, None);
        assert_eq!(qpdf_pages(&out.bytes, None), 4);
        let plain = repair(&sample_pdf(1), false).await.unwrap();
        let file = temp_pdf(&plain.bytes);
        let (_, text) = qpdf_cli(&["--check-linearization", file.path().to_str().unwrap()]);
        assert!(text.contains("not linearized"), "{text}");
    }

    #[tokio::test]
    async fn repairs_damaged_corpus_files_and_refuses_hopeless_ones() {
        for name in ["bad-xref.pdf", "append-xref-loop.pdf", "global_damaged.pdf", "dangling-bad-xref.pdf", "bad2.pdf"]
        {
            let bytes = std::fs::read(corpus(name)).unwrap();
            let out = repair(&bytes, false).await.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_qpdf_check(&out.bytes, None);
            assert!(qpdf_pages(&out.bytes, None) >= 1);
        }
        // Recovered without a /Size in its trailer: the output must still have one.
        let out = repair(&std::fs::read(corpus("bad16.pdf")).unwrap(), false).await.unwrap();
        assert_qpdf_check(&out.bytes, None);
        // Its %PDF- header is damaged too.
        let out = repair(&std::fs::read(corpus("issue-1503.pdf")).unwrap(), false).await.unwrap();
        assert_eq!(qpdf_pages(&out.bytes, None), 2);
        let e = repair(&std::fs::read(corpus("bad1.pdf")).unwrap(), false).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        for name in ["issue-99.pdf", "issue-100.pdf", "issue-119.pdf"] {
            let e = repair(&std::fs::read(corpus(name)).unwrap(), false).await.unwrap_err();
            assert_eq!((e.code.as_ref(), e.field.as_deref()), ("damaged_pdf", Some("/file")), "{name}");
            assert!(!e.message.contains("/tmp") && !e.message.contains("memory"), "{}", e.message);
        }
    }

    #[tokio::test]
    async fn keeps_an_encrypted_file_encrypted() {
        let bytes = std::fs::read(corpus("enc-XI-R6,V5,U=view,O=master.pdf")).unwrap();
        let out =
            run_single::<RepairRoute>(&json!({ "file": file_json(&bytes, "e.pdf", Some("view")) })).await.unwrap();
        assert_qpdf_check(&out.bytes, Some("view"));
        let file = temp_pdf(&out.bytes);
        let (code, _) = qpdf_cli(&["--check", file.path().to_str().unwrap()]);
        assert_ne!(code, 0, "still needs its password");
        let e = run_single::<RepairRoute>(&json!({ "file": file_json(&bytes, "e.pdf", None) })).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("password_required", Some("/file/password")));
    }

    /// Runs the route on `bytes`; returns the file and its report.
    async fn repair_reported(bytes: &[u8], password: Option<&str>) -> (OutFile, Value) {
        let body = json!({ "file": file_json(bytes, "broken.pdf", password) });
        match crate::pdf::testing::call::<RepairRoute>(&body).await.unwrap() {
            Reply::Files(set) => {
                let report = set.report.clone().expect("a report");
                (set.into_single_file().unwrap(), report)
            }
            Reply::Json(_) => panic!("a file was expected"),
        }
    }

    fn fixes(report: &Value) -> Vec<String> {
        report["fixes"].as_array().unwrap().iter().map(|f| f.as_str().unwrap().to_string()).collect()
    }

    #[tokio::test]
    async fn fixes_what_qpdf_check_still_warned_about() {
        // Each came out of the structural repair alone with `qpdf --check` warnings (exit 3).
        for (name, pages, expected) in [
            ("damaged-stream.pdf", 1, "(LZWDecoder: bad code received)"),
            ("issue-117.pdf", 1, "page 1: its content did not parse cleanly; rewrote it"),
            ("issue-1503.pdf", 2, "page 2: /Contents was a number instead of a content stream; removed it"),
            ("bad21.pdf", 1, "trailer: dropped the key /Som..."),
            ("bad30.pdf", 1, "object 7: its /Filter was written as a string instead of a name"),
            ("bad33.pdf", 1, "object 7: its /Filter was written as a string instead of a name"),
        ] {
            let bytes = std::fs::read(corpus(name)).unwrap();
            let (out, report) = repair_reported(&bytes, None).await;
            assert_qpdf_check(&out.bytes, None);
            assert_eq!(qpdf_pages(&out.bytes, None), pages, "{name}");
            assert_eq!(report["pages"], pages, "{name}");
            let fixes = fixes(&report);
            assert!(fixes.iter().any(|f| f.contains(expected)), "{name}: {fixes:?}");
            assert!(fixes.len() <= 51, "{name}: the list is capped");
            assert!(!report.to_string().contains("memory"), "{name}: {report}");
        }
    }

    #[tokio::test]
    async fn keeps_what_the_damaged_files_still_hold() {
        let open = |bytes: &[u8]| Document::load_mem(bytes).unwrap();
        // bad30: the stream whose /Filter was the string (FlateDecode) now decodes.
        let (out, _) = repair_reported(&std::fs::read(corpus("bad30.pdf")).unwrap(), None).await;
        let doc = open(&out.bytes);
        let id = doc.trailer.get(b"QTest").unwrap().as_reference().unwrap();
        let stream = doc.get_object(id).unwrap().as_stream().unwrap();
        assert_eq!(stream.dict.get(b"Filter").unwrap().as_name().unwrap(), b"FlateDecode");
        assert!(!stream.decompressed_content().unwrap().is_empty());
        // bad21: the trailer key with a stray # is gone, the rest is there.
        let (out, _) = repair_reported(&std::fs::read(corpus("bad21.pdf")).unwrap(), None).await;
        assert!(!out.bytes.windows(4).any(|w| w == b"Som#"));
        assert!(open(&out.bytes).trailer.get(b"Root").is_ok());
        // issue-1503: page 2 lost its non-stream /Contents, and keeps the rest.
        let (out, _) = repair_reported(&std::fs::read(corpus("issue-1503.pdf")).unwrap(), None).await;
        let doc = open(&out.bytes);
        let pages: Vec<_> = doc.get_pages().into_values().collect();
        let page = doc.get_dictionary(pages[1]).unwrap();
        assert!(page.get(b"Contents").is_err() && page.get(b"Thumb").is_ok());
        // issue-117: the content keeps its drawing operations, and qpdf parses it cleanly.
        let (out, _) = repair_reported(&std::fs::read(corpus("issue-117.pdf")).unwrap(), None).await;
        let doc = open(&out.bytes);
        let page = doc.get_pages().into_values().next().unwrap();
        let content = String::from_utf8_lossy(&doc.get_page_content(page)).into_owned();
        assert!(content.contains("/Im4 Do") && content.contains("0 0.1 595.2 841.8 re"), "{content}");
        // damaged-stream: the LZW stream keeps what decodes, stored unfiltered.
        let (out, _) = repair_reported(&std::fs::read(corpus("damaged-stream.pdf")).unwrap(), None).await;
        let doc = open(&out.bytes);
        let page = doc.get_pages().into_values().next().unwrap();
        let other = doc.get_dictionary(page).unwrap().get(b"Other").unwrap().as_reference().unwrap();
        let stream = doc.get_object(other).unwrap().as_stream().unwrap();
        assert!(stream.dict.get(b"Filter").map_or(true, |f| f.as_name().unwrap() == b"FlateDecode"));
    }

    #[tokio::test]
    async fn leaves_an_intact_file_as_it_was() {
        let (out, report) = repair_reported(&sample_pdf(3), None).await;
        assert_eq!(
            report,
            json!({ "pages": 3, "linearized": false, "encrypted": false, "recovered": false, "fixes": [], "notes": [] })
        );
        assert_qpdf_check(&out.bytes, None);
        let doc = Document::load_mem(&out.bytes).unwrap();
        assert_eq!(doc.extract_text(&[2]).unwrap().trim(), "Page 2");
        // A real-world file too.
        let bytes = std::fs::read("/work/shared/corpus/pdf/sample-files/pdflatex-4-pages.pdf").unwrap();
        let (out, report) = repair_reported(&bytes, None).await;
        assert_eq!(report["fixes"], json!([]));
        assert_eq!(qpdf_pages(&out.bytes, None), 4);
    }

    #[tokio::test]
    async fn repairs_an_encrypted_file_and_keeps_it_encrypted() {
        // damaged-stream.pdf encrypted (AES-256) by the qpdf CLI, which copies its broken LZW
        // stream as it is.
        let dir = tempfile::tempdir().unwrap();
        let encrypted = dir.path().join("e.pdf");
        let (code, text) = qpdf_cli(&[
            "--encrypt",
            "user",
            "owner",
            "256",
            "--",
            corpus("damaged-stream.pdf").to_str().unwrap(),
            encrypted.to_str().unwrap(),
        ]);
        assert!(matches!(code, 0 | 3), "{text}");
        let bytes = std::fs::read(&encrypted).unwrap();
        let (code, _) = qpdf_cli(&["--check", "--password=user", encrypted.to_str().unwrap()]);
        assert_eq!(code, 3, "the input still warns");
        let (out, report) = repair_reported(&bytes, Some("user")).await;
        assert_qpdf_check(&out.bytes, Some("user"));
        let file = temp_pdf(&out.bytes);
        let (code, text) = qpdf_cli(&["--show-encryption", "--password=user", file.path().to_str().unwrap()]);
        assert_eq!(code, 0, "{text}");
        assert!(text.contains("R = 6"), "still AES-256: {text}");
        assert_eq!(report["encrypted"], true);
        assert!(fixes(&report).iter().any(|f| f.contains("LZW")), "{report}");
    }

    #[tokio::test]
    async fn input_errors_name_their_fields() {
        let e = repair(b"no pdf here", false).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let body = json!({ "file": file_json(&sample_pdf(1), "a.pdf", None), "linearize": "yes" });
        let e = run_single::<RepairRoute>(&body).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_input", Some("/linearize")));
    }
}

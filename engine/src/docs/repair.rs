//! `POST /v1/pdf/repair`: rebuild a damaged PDF with qpdf's recovery, optionally linearized.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use lopdf::Document;

use crate::context::{Context, Limits, blocking};
use crate::docs::qpdf::{self as qp, QpdfSource, WriteOptions};
use crate::docs::transform::{Pdf, PdfJob, Transform};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
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
        An intact file comes back rewritten, with the same pages. A file without a recoverable page tree is \
        refused with damaged_pdf (not_a_pdf when it has no %PDF- header either). The answer is the file only. output=url gives a 24 h link.",
    base_price: Price::micros(2_000),
    price_rule: PAGE_EDIT_PRICE_RULE,
    free_pool: FreePool::Docs,
    produces: Produces::File,
    open_world: false,
};

/// The route.
pub struct RepairRoute;

impl Route for RepairRoute {
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
            let pdf = source.reopen(&limits)?;
            let options = WriteOptions { linearize, ..WriteOptions::default() };
            let bytes = qp::write(&pdf, options).map_err(|e| e.under(&source.field))?;
            tracing::debug!(pages = source.page_count, warned = pdf.more_warnings(), "repaired a PDF");
            let name = derived_name(&source.filename, "repaired", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output)))
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

    fn check(_: &RepairOptions, pages: u32, _: &Limits) -> Result<u32, EngineError> {
        Ok(pages)
    }

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
    use crate::docs::qpdf::testing::*;
    use serde_json::json;

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

    #[tokio::test]
    async fn input_errors_name_their_fields() {
        let e = repair(b"no pdf here", false).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("not_a_pdf", Some("/file")));
        let body = json!({ "file": file_json(&sample_pdf(1), "a.pdf", None), "linearize": "yes" });
        let e = run_single::<RepairRoute>(&body).await.unwrap_err();
        assert_eq!((e.code.as_ref(), e.field.as_deref()), ("invalid_input", Some("/linearize")));
    }
}

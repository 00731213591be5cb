//! `POST /v1/pdf`: the text, page by page, and the metadata of a public PDF given by URL.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::fetch_error;
use crate::pdf::metadata::{InfoReport, read_report};
use crate::pdf::{self, pdfium};
use crate::price::Price;

/// Most pages one call reads (route book §4: larger is 413).
pub const MAX_PAGES: u32 = 200;

/// Request of `/v1/pdf`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PdfTextInput {
    /// A public http(s) URL of the PDF (at most 200 pages, 50 MiB).
    #[schemars(length(min = 1, max = 8192))]
    pub url: String,
    /// The password of an encrypted PDF (user or owner password).
    #[serde(default)]
    pub password: Option<String>,
}

/// The text and metadata of the PDF.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PdfTextReport {
    /// The URL that answered, after redirects.
    pub url: String,
    /// Number of pages.
    pub page_count: u32,
    /// The text of all pages, pages separated by a form feed (`\f`), as pdftotext does. Untrusted text from the
    /// file.
    pub text: String,
    /// Each page's text.
    pub pages: Vec<PageText>,
    /// Pages with no text at all: scanned or drawn pages that need OCR (`/v1/pdf/ocr`).
    pub pages_without_text: Vec<u32>,
    /// The document information (title, author, dates as RFC 3339…); null where absent.
    pub metadata: InfoReport,
    /// The PDF version of the file header.
    pub version: String,
    /// Whether the file is encrypted (it was opened with the password given, or with none when only an owner
    /// password protects it).
    pub encrypted: bool,
}

/// One page's text.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PageText {
    /// The 1-based page number.
    pub number: u32,
    /// The page's text, lines separated by `\n`.
    pub text: String,
}

/// A fetched and checked PDF.
pub struct PdfText {
    bytes: Vec<u8>,
    url: String,
    password: Option<String>,
    metadata: InfoReport,
    version: String,
    page_count: u32,
    encrypted: bool,
}

/// The route.
pub struct PdfTextRoute;

impl Route for PdfTextRoute {
    const HEAVY: bool = true;
    type Input = PdfTextInput;
    type Prepared = PdfText;
    type Output = PdfTextReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf",
        operation: "read_pdf_url",
        family: Family::Docs,
        summary: "Text and metadata of a PDF by URL",
        description: "Fetches a public PDF (http/https; private, loopback and metadata addresses refused, every \
            redirect checked again; at most 50 MiB) and answers its text page by page, the whole text with pages \
            separated by form feeds, the pages that have no text (scans that need OCR) and the document \
            information. More than 200 pages is 413. An encrypted PDF takes its `password`.",
        base_price: Price::micros(2_000),
        price_rule: "flat (at most 200 pages)",
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::NONE,
    };

    async fn prepare(input: PdfTextInput, ctx: &Context) -> Result<PdfText, EngineError> {
        if input.url.trim().is_empty() {
            return Err(EngineError::invalid("/url", "/url: give the http(s) URL of a PDF"));
        }
        let fetched = ctx.fetcher.fetch(input.url.trim()).await.map_err(|e| fetch_error(e, "/url"))?;
        if fetched.bytes.is_empty() {
            return Err(EngineError::invalid_with("empty_file", "/url", "/url: the URL answered no bytes"));
        }
        let url = fetched.final_url.to_string();
        let bytes = fetched.bytes;
        let password = input.password.clone();
        let limits = ctx.limits;
        blocking(move || {
            let doc = pdf::open(&bytes, password.as_deref(), &limits).map_err(|e| match e.field.as_deref() {
                // Password errors name the password; every other one the URL.
                Some(field) if field.ends_with("password") => e.at("/password"),
                _ => e.under("/url"),
            })?;
            let page_count = pdf::page_count(&doc);
            if page_count > MAX_PAGES {
                return Err(EngineError::too_large(
                    "too_many_pages",
                    Some("/url".into()),
                    format!("/url: the PDF has {page_count} pages; this route reads at most {MAX_PAGES}"),
                ));
            }
            let encrypted = doc.trailer.get(b"Encrypt").is_ok() || doc.encryption_state.is_some();
            let report = read_report(&doc, page_count);
            Ok(PdfText { bytes, url, password, metadata: report.info, version: report.version, page_count, encrypted })
        })
        .await
    }

    fn quote(_: &PdfText) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: PdfText, _ctx: &Context) -> Result<crate::output::Reply<PdfTextReport>, EngineError> {
        blocking(move || {
            let PdfText { bytes, url, password, metadata, version, page_count, encrypted } = call;
            let texts = pdfium::page_texts(&bytes, password.as_deref(), "/url")?;
            let pages: Vec<PageText> =
                texts.into_iter().zip(1..).map(|(text, number)| PageText { number, text }).collect();
            let pages_without_text = pages.iter().filter(|p| p.text.trim().is_empty()).map(|p| p.number).collect();
            let text = pages.iter().map(|p| p.text.as_str()).collect::<Vec<_>>().join("\u{c}");
            Ok(crate::output::Reply::Json(PdfTextReport {
                url,
                page_count,
                text,
                pages,
                pages_without_text,
                metadata,
                version,
                encrypted,
            }))
        })
        .await
    }
}

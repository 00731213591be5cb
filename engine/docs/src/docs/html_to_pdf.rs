//! `POST /v1/pdf/html-to-pdf`: a web page (a public URL, or HTML given in the call) printed
//! to PDF by a warm, boxed Chromium ([`crate::chromium`]), every request of the page
//! answered through the SSRF-safe fetcher or refused.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::chromium::{self, BrowserHost, Network, Page, PrintLayout};
use crate::context::{Context, blocking};
use crate::docs::{SIZE_PRICE_RULE, size_price};
use crate::error::EngineError;
use crate::input::fetch_error;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply};
use crate::price::Price;

/// Longest `html`, in bytes.
pub const MAX_HTML_BYTES: usize = 10 * 1024 * 1024;
const MM_PER_INCH: f64 = 25.4;

/// Request of `/v1/pdf/html-to-pdf`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
// Exactly one of `html` and `url` (a null counts as absent), said without a top-level `oneOf`,
// which some agents' tool schemas refuse.
#[schemars(extend(
    "if" = { "required": ["html"], "properties": { "html": { "type": "string" } } },
    "then" = { "not": { "required": ["url"], "properties": { "url": { "type": "string" } } } },
    "else" = { "required": ["url"], "properties": { "url": { "type": "string" }, "allow_network": { "const": false } } }
))]
pub struct HtmlToPdfInput {
    /// A public http(s) URL of the page (private, loopback and metadata addresses refused, for the page and for
    /// every image, style sheet, font, script and redirect it loads). Give `url` or `html`.
    #[serde(default)]
    #[schemars(length(min = 1, max = 8192))]
    pub url: Option<String>,
    /// The page's HTML (at most 10 MiB). Give `url` or `html`. It loads nothing from the network unless
    /// `allow_network` is true; data: URLs always work.
    #[serde(default)]
    #[schemars(length(min = 1, max = 10_485_760), extend("contentMediaType" = "text/html"))]
    pub html: Option<String>,
    /// With `html`: let the page load images, style sheets, fonts and scripts from public http(s) addresses.
    /// Default false.
    #[serde(default)]
    pub allow_network: bool,
    /// `A4` (default), `Letter`, `Legal`, `A3`, `A5`, `Tabloid`, or `{"width_mm": …, "height_mm": …}` (25 to 2,000 mm).
    #[serde(default)]
    pub page_size: PaperSize,
    /// Landscape orientation. Default false.
    #[serde(default)]
    pub landscape: bool,
    /// Margins in millimetres: one number for all sides, or `{"top", "right", "bottom", "left"}`
    /// (0 to 100 each; missing sides 10). Default 10 on every side.
    #[serde(default)]
    pub margins_mm: Option<Margins>,
    /// Print background colours and images. Default true, as the page looks on screen.
    #[serde(default = "yes")]
    pub print_background: bool,
    /// How the PDF is delivered: `file` (default), `base64` or `url`.
    #[serde(default)]
    pub output: OutputMode,
}

fn yes() -> bool {
    true
}

/// A paper size.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum PaperSize {
    /// A standard size by name.
    Named(PaperName),
    /// A size in millimetres.
    Custom {
        /// Width, 25 to 2,000 mm.
        #[schemars(range(min = 25, max = 2000))]
        width_mm: f64,
        /// Height, 25 to 2,000 mm.
        #[schemars(range(min = 25, max = 2000))]
        height_mm: f64,
    },
}

impl Default for PaperSize {
    fn default() -> Self {
        PaperSize::Named(PaperName::A4)
    }
}

/// Standard paper sizes.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
pub enum PaperName {
    /// 210 × 297 mm.
    A4,
    /// 297 × 420 mm.
    A3,
    /// 148 × 210 mm.
    A5,
    /// 8.5 × 11 in.
    Letter,
    /// 8.5 × 14 in.
    Legal,
    /// 11 × 17 in.
    Tabloid,
}

/// Margins: one for all sides, or each side.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(untagged)]
pub enum Margins {
    /// The same on every side, in mm.
    All(#[schemars(range(min = 0, max = 100))] f64),
    /// Each side, in mm (missing: 10).
    Sides {
        /// Top, mm.
        #[serde(default)]
        #[schemars(range(min = 0, max = 100))]
        top: Option<f64>,
        /// Right, mm.
        #[serde(default)]
        #[schemars(range(min = 0, max = 100))]
        right: Option<f64>,
        /// Bottom, mm.
        #[serde(default)]
        #[schemars(range(min = 0, max = 100))]
        bottom: Option<f64>,
        /// Left, mm.
        #[serde(default)]
        #[schemars(range(min = 0, max = 100))]
        left: Option<f64>,
    },
}

/// A checked call.
pub struct HtmlToPdf {
    page: Page,
    input_bytes: u64,
    allow_network: bool,
    layout: PrintLayout,
    filename: String,
    field: &'static str,
    output: OutputMode,
}

/// The route.
pub struct HtmlToPdfRoute;

impl Route for HtmlToPdfRoute {
    const HEAVY: bool = true;
    type Input = HtmlToPdfInput;
    type Prepared = HtmlToPdf;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/html-to-pdf",
        operation: "html_to_pdf",
        family: Family::Docs,
        summary: "Web page or HTML to PDF",
        description: "Prints a web page to PDF with Chromium: a public http(s) `url`, or `html` given in the call. Page \
            size (A4, Letter, Legal, A3, A5, Tabloid or millimetres), landscape, margins in mm, backgrounds. Every \
            request the page makes (images, style sheets, fonts, scripts, redirects) goes through the same address \
            rules as a URL input: public addresses only; `html` loads nothing from the network unless \
            allow_network is true (data: URLs always work). Each call runs in a fresh browser context. A page that \
            does not load and print within 25 s (a script that never stops) is 422 page_timeout; more than 2,000 \
            pages is 413.",
        base_price: Price::micros(10_000),
        price_rule: SIZE_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: true,
        holds_secrets: false,
        accepts: crate::catalog::accepts::HTML,
    };

    async fn prepare(input: HtmlToPdfInput, ctx: &Context) -> Result<HtmlToPdf, EngineError> {
        // Known before anything is fetched, so a server without Chromium charges nothing.
        chromium::ensure_available().await?;
        let layout = layout_of(&input)?;
        let (page, input_bytes, filename, field) = match (input.url, input.html) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(EngineError::invalid("/url", "/url: give either `url` or `html` (exactly one)"));
            }
            (None, Some(html)) => {
                if html.is_empty() {
                    return Err(EngineError::invalid("/html", "/html: the page is empty; give its HTML"));
                }
                if html.len() > MAX_HTML_BYTES {
                    return Err(EngineError::too_large(
                        "file_too_large",
                        Some("/html".into()),
                        format!("/html: at most {} MiB", MAX_HTML_BYTES >> 20),
                    ));
                }
                let bytes = html.len() as u64;
                (Page::Html(html), bytes, "page.pdf".to_string(), "/html")
            }
            (Some(url), None) => {
                if input.allow_network {
                    return Err(EngineError::invalid(
                        "/allow_network",
                        "/allow_network: goes with `html`; a `url` page always loads its public resources",
                    ));
                }
                let fetched = ctx.fetcher.fetch(url.trim()).await.map_err(|e| fetch_error(e, "/url"))?;
                if fetched.content_type.as_deref().is_some_and(|t| t.contains("pdf"))
                    || fetched.bytes.starts_with(b"%PDF")
                {
                    return Err(EngineError::invalid_with(
                        "unsupported_format",
                        "/url",
                        "/url: the URL answers a PDF already; /v1/pdf reads a PDF by URL",
                    ));
                }
                let stem = fetched
                    .final_url
                    .path_segments()
                    .and_then(|mut s| s.next_back().filter(|l| !l.is_empty()).map(str::to_string))
                    .map(|last| crate::input::sanitize_filename(&last))
                    .unwrap_or_else(|| fetched.final_url.host_str().unwrap_or("page").to_string());
                let stem = stem.rsplit_once('.').map_or(stem.clone(), |(s, _)| s.to_string());
                let bytes = fetched.bytes.len() as u64;
                let page = Page::Fetched {
                    url: fetched.final_url.to_string(),
                    content_type: fetched.content_type,
                    body: fetched.bytes,
                };
                (page, bytes, format!("{stem}.pdf"), "/url")
            }
        };
        // A page by URL loads its public resources; HTML only when the call allows it.
        let allow_network = input.allow_network || matches!(page, Page::Fetched { .. });
        Ok(HtmlToPdf { page, input_bytes, allow_network, layout, filename, field, output: input.output })
    }

    fn quote(call: &HtmlToPdf) -> Price {
        size_price(Self::INFO.base_price, call.input_bytes)
    }

    async fn run(call: HtmlToPdf, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let host = ctx.state.get_or_insert_with(BrowserHost::default);
        let fetcher = ctx.fetcher.clone();
        let runtime = tokio::runtime::Handle::current();
        let limits = ctx.limits;
        blocking(move || {
            let HtmlToPdf { page, allow_network, layout, filename, field, output, .. } = call;
            let network = Network { fetcher: allow_network.then_some(&fetcher), runtime };
            let printed = chromium::print(&host, &page, &network, &layout)
                .map_err(|e| if e.field.as_deref() == Some("") { e.at(field) } else { e })?;
            let doc = crate::pdf::open(&printed.pdf, None, &limits).map_err(|e| {
                EngineError::internal(format!("Chromium printed a PDF that does not open: {}", e.message))
            })?;
            let pages = crate::pdf::page_count(&doc);
            if u64::from(pages) > chromium::MAX_PAGES {
                return Err(EngineError::too_large(
                    "too_many_pages",
                    Some(field.into()),
                    format!("{field}: the page prints to {pages} pages, more than {}", chromium::MAX_PAGES),
                ));
            }
            let report = serde_json::json!({
                "pages": pages,
                "requests_loaded": printed.loaded,
                "requests_refused": printed.refused,
            });
            let file = OutFile::pdf(filename, printed.pdf);
            Ok(Reply::Files(FileSet::single(file, output).with_report(report)))
        })
        .await
    }
}

/// The print layout of `input`, in inches; errors name the field.
fn layout_of(input: &HtmlToPdfInput) -> Result<PrintLayout, EngineError> {
    let (width_mm, height_mm) = match input.page_size {
        PaperSize::Named(name) => match name {
            PaperName::A4 => (210.0, 297.0),
            PaperName::A3 => (297.0, 420.0),
            PaperName::A5 => (148.0, 210.0),
            PaperName::Letter => (215.9, 279.4),
            PaperName::Legal => (215.9, 355.6),
            PaperName::Tabloid => (279.4, 431.8),
        },
        PaperSize::Custom { width_mm, height_mm } => {
            for (value, side) in [(width_mm, "width_mm"), (height_mm, "height_mm")] {
                if !(25.0..=2000.0).contains(&value) {
                    return Err(EngineError::invalid(
                        format!("/page_size/{side}"),
                        format!("/page_size/{side}: 25 to 2,000 mm, not {value}"),
                    ));
                }
            }
            (width_mm, height_mm)
        }
    };
    let default = 10.0;
    let (sides, named): ([Option<f64>; 4], bool) = match input.margins_mm {
        None => ([None; 4], false),
        Some(Margins::All(all)) => ([Some(all); 4], false),
        Some(Margins::Sides { top, right, bottom, left }) => ([top, right, bottom, left], true),
    };
    let mut margins = [0.0; 4];
    for (i, (side, value)) in ["top", "right", "bottom", "left"].iter().zip(sides).enumerate() {
        let value = value.unwrap_or(default);
        if !(0.0..=100.0).contains(&value) {
            let field = if named { format!("/margins_mm/{side}") } else { "/margins_mm".to_string() };
            return Err(EngineError::invalid(field.clone(), format!("{field}: 0 to 100 mm, not {value}")));
        }
        margins[i] = value;
    }
    let (across, down) = if input.landscape { (height_mm, width_mm) } else { (width_mm, height_mm) };
    if margins[1] + margins[3] > across - 10.0 || margins[0] + margins[2] > down - 10.0 {
        return Err(EngineError::invalid_with(
            "inconsistent_fields",
            "/margins_mm",
            "/margins_mm: the margins leave less than 10 mm of the page",
        ));
    }
    Ok(PrintLayout {
        paper_in: (width_mm / MM_PER_INCH, height_mm / MM_PER_INCH),
        landscape: input.landscape,
        margins_in: margins.map(|m| m / MM_PER_INCH),
        background: input.print_background,
    })
}

//! `POST /v1/pdf/to-docx`: a PDF as an editable Word document: paragraphs (not one per
//! line) in the PDF's fonts and sizes, bold and italic kept, tables as Word tables,
//! pictures placed, each page size a section with its margins. The conversion is in
//! `office/from_pdf.rs`, the writing in `office/docx_write.rs`.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, Progress, blocking};
use crate::docs::to_images::{ImageFormat, encode};
use crate::docs::{CONVERSION_PRICE_RULE, SelectedPdf, conversion_price, select_pdf_pages};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::layout;
use crate::office::docx_write::{self, Block};
use crate::office::from_pdf::{PICTURE_DPI, Pictures, document};
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf::pdfium::{self, RgbPage};
use crate::price::Price;

/// Request of `/v1/pdf/to-docx`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToDocxInput {
    /// The PDF (with a text layer: a scan needs `/v1/pdf/ocr` first).
    pub file: FileInput,
    /// Pages to convert (`"1-3,5"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// How the Word file is delivered: `file` (default), `base64` or `url`.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked call.
pub struct ToDocx {
    pdf: SelectedPdf,
    output: OutputMode,
}

/// The route.
pub struct ToDocxRoute;

impl Route for ToDocxRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::DOCX];
    const HEAVY: bool = true;
    type Input = ToDocxInput;
    type Prepared = ToDocx;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/to-docx",
        operation: "convert_pdf_to_docx",
        family: Family::Docs,
        summary: "PDF to an editable Word document",
        description: "Converts the pages of a PDF to a Word document (.docx) to edit: text in reading order across \
            columns as paragraphs (lines joined, hyphenated words mended), in the PDF's fonts and sizes with bold \
            and italic kept, alignment and indents; tables (ruled or not) as Word tables with their merged cells; \
            pictures placed where they stand; each page on a new page, each page size a section with its margins. \
            The report gives the counts of paragraphs, tables and pictures.",
        base_price: Price::micros(5_000),
        price_rule: CONVERSION_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: ToDocxInput, ctx: &Context) -> Result<ToDocx, EngineError> {
        let selection = input.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        let file = input.file.resolve(ctx, "/file", "document.pdf").await?;
        let pdf = select_pdf_pages(file, selection, ctx).await?;
        Ok(ToDocx { pdf, output: input.output })
    }

    fn quote(call: &ToDocx) -> Price {
        conversion_price(call.pdf.pages.len() as u64)
    }

    async fn run(call: ToDocx, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || convert(call, &*progress)).await
    }
}

fn convert(call: ToDocx, progress: &dyn Progress) -> Result<Reply<NoJson>, EngineError> {
    let ToDocx { pdf, output } = call;
    // Scanned pages are read by OCR (English).
    let (layouts, _) =
        crate::ocr::layouts_with_ocr(&pdf.bytes, pdf.password.as_deref(), &pdf.pages, "/file", "eng", progress)?;
    // Pictures: cut from the page rendered at PICTURE_DPI, only on pages that have some.
    let mut pictures: Vec<Pictures> = vec![Vec::new(); layouts.len()];
    let with_pictures: Vec<u32> =
        layouts.iter().filter(|l| l.images.iter().any(|i| layout::is_content_image(i, l))).map(|l| l.number).collect();
    if !with_pictures.is_empty() {
        pdfium::render_pages(
            &pdf.bytes,
            pdf.password.as_deref(),
            &with_pictures,
            PICTURE_DPI,
            "/file",
            "/file",
            |page| {
                let i = layouts.iter().position(|l| l.number == page.number).expect("a selected page");
                let layout = &layouts[i];
                for image in layout.images.iter().filter(|a| layout::is_content_image(a, layout)) {
                    if let Some(png) = cut(&page, [image.x0, image.y0, image.x1, image.y1])? {
                        pictures[i].push(([image.x0, image.y0, image.x1, image.y1], png));
                    }
                }
                Ok(())
            },
        )?;
    }
    let title = pdf.title.clone().unwrap_or_default();
    let doc = document(&layouts, &pictures, &title)?;
    let count = |f: fn(&Block) -> bool| doc.sections.iter().flat_map(|s| &s.blocks).filter(|b| f(b)).count();
    let report = serde_json::json!({
        "pages": pdf.pages.len(),
        "sections": doc.sections.len(),
        "paragraphs": count(|b| matches!(b, Block::Paragraph(_))),
        "tables": count(|b| matches!(b, Block::Table(_))),
        "pictures": count(|b| matches!(b, Block::Picture { .. })),
    });
    let bytes = docx_write::write(&doc).map_err(|e| EngineError::internal(format!("writing the document: {e}")))?;
    let file = OutFile { filename: derived_name(&pdf.filename, "", "docx"), media_type: media::DOCX.into(), bytes };
    Ok(Reply::Files(FileSet::single(file, output).with_report(report)))
}

/// The part of a rendered page inside `bbox` (points, top-down) as PNG; `None` when it is
/// empty.
fn cut(page: &RgbPage, bbox: [f32; 4]) -> Result<Option<Vec<u8>>, EngineError> {
    let scale = page.width as f64 / page.width_pt.max(1.0);
    let px = |v: f32, max: u32| ((v as f64 * scale).round().max(0.0) as u32).min(max);
    let (x0, y0, x1, y1) =
        (px(bbox[0], page.width), px(bbox[1], page.height), px(bbox[2], page.width), px(bbox[3], page.height));
    if x1 <= x0 || y1 <= y0 {
        return Ok(None);
    }
    let (w, h) = (x1 - x0, y1 - y0);
    let mut rgb = Vec::with_capacity((w * h * 3) as usize);
    for y in y0..y1 {
        let start = ((y * page.width + x0) * 3) as usize;
        rgb.extend_from_slice(&page.rgb[start..start + (w * 3) as usize]);
    }
    let part = RgbPage { number: page.number, width: w, height: h, width_pt: 0.0, height_pt: 0.0, rgb };
    encode(&part, ImageFormat::Png, 90).map(Some)
}

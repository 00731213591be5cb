//! The document family: PDF and Office operations, one route per file.

use crate::catalog::Catalog;
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::FileBytes;
use crate::pages::PageSelection;
use crate::pdf::transform::{ErasedStep, StepKind};
use crate::pdf::{self, pdfium};
use crate::price::Price;

pub mod attachments;
pub mod bank_statement;
pub mod booklet;
pub mod compare;
pub mod compress;
pub mod crop;
pub mod e_invoice;
pub mod extract_images;
pub mod extract_pages;
pub mod fill_form;
pub mod fill_template;
pub mod flatten;
pub mod form_fields;
pub mod from_images;
pub mod html_to_pdf;
pub mod inspect;
pub mod merge;
pub mod metadata;
pub mod n_up;
pub mod ocr;
pub mod ocr_url;
pub mod outline;
pub mod page_numbers;
pub mod pdf_text;
pub mod pipeline;
pub mod poster;
pub mod pptx_build;
pub mod protect;
pub mod rasterize;
pub mod redact;
pub mod remove_blank_pages;
pub mod remove_pages;
pub mod remove_signatures;
pub mod reorder;
pub mod repair;
pub mod resize;
pub mod rotate;
pub mod sanitize;
pub mod set_outline;
pub mod sign;
pub mod split;
pub mod split_by;
pub mod tables;
pub mod to_docx;
pub mod to_images;
pub mod to_markdown;
pub mod to_pdf;
pub mod to_pdfa;
pub mod unlock;
pub mod verify_signatures;
pub mod watermark;
pub mod xlsx_build;
pub mod xlsx_to_json;

/// Adds every document route to the catalog.
pub fn register(catalog: &mut Catalog) {
    catalog.add::<merge::MergeRoute>();
    catalog.add::<split::SplitRoute>();
    catalog.add::<split_by::SplitByRoute>();
    catalog.add::<extract_pages::ExtractPagesRoute>();
    catalog.add::<remove_pages::RemovePagesRoute>();
    catalog.add::<remove_blank_pages::RemoveBlankPagesRoute>();
    catalog.add::<reorder::ReorderRoute>();
    catalog.add::<rotate::RotateRoute>();
    catalog.add::<watermark::WatermarkRoute>();
    catalog.add::<page_numbers::PageNumbersRoute>();
    catalog.add::<crop::CropRoute>();
    catalog.add::<resize::ResizeRoute>();
    catalog.add::<n_up::NUpRoute>();
    catalog.add::<booklet::BookletRoute>();
    catalog.add::<poster::PosterRoute>();
    catalog.add::<outline::OutlineRoute>();
    catalog.add::<set_outline::SetOutlineRoute>();
    catalog.add::<metadata::MetadataRoute>();
    catalog.add::<inspect::InspectRoute>();
    catalog.add::<attachments::AttachmentsRoute>();
    catalog.add::<form_fields::FormFieldsRoute>();
    catalog.add::<flatten::FlattenRoute>();
    catalog.add::<fill_form::FillFormRoute>();
    catalog.add::<protect::ProtectRoute>();
    catalog.add::<unlock::UnlockRoute>();
    catalog.add::<repair::RepairRoute>();
    catalog.add::<sanitize::SanitizeRoute>();
    catalog.add::<to_pdfa::ToPdfaRoute>();
    catalog.add::<e_invoice::EInvoiceRoute>();
    catalog.add::<sign::SignRoute>();
    catalog.add::<verify_signatures::VerifySignaturesRoute>();
    catalog.add::<remove_signatures::RemoveSignaturesRoute>();
    catalog.add::<compare::CompareRoute>();
    catalog.add::<redact::RedactRoute>();
    catalog.add::<to_images::ToImagesRoute>();
    catalog.add::<extract_images::ExtractImagesRoute>();
    catalog.add::<rasterize::RasterizeRoute>();
    catalog.add::<from_images::FromImagesRoute>();
    catalog.add::<compress::CompressRoute>();
    catalog.add::<pipeline::PipelineRoute>();
    catalog.add::<xlsx_to_json::XlsxToJsonRoute>();
    catalog.add::<xlsx_build::XlsxBuildRoute>();
    catalog.add::<pdf_text::PdfTextRoute>();
    catalog.add::<pptx_build::PptxBuildRoute>();
    catalog.add::<to_pdf::ToPdfRoute>();
    catalog.add::<fill_template::FillTemplateRoute>();
    catalog.add::<html_to_pdf::HtmlToPdfRoute>();
    catalog.add::<to_markdown::ToMarkdownRoute>();
    catalog.add::<tables::TablesRoute>();
    catalog.add::<bank_statement::BankStatementRoute>();
    catalog.add::<to_docx::ToDocxRoute>();
    catalog.add::<ocr::OcrRoute>();
    catalog.add::<ocr_url::OcrUrlRoute>();
}

/// The operations `/v1/pdf/pipeline` chains, by their `op` (the route's last path segment).
pub fn pipeline_steps() -> Vec<Box<dyn ErasedStep>> {
    vec![
        StepKind::<extract_pages::ExtractPages>::boxed(),
        StepKind::<remove_pages::RemovePages>::boxed(),
        StepKind::<reorder::Reorder>::boxed(),
        StepKind::<rotate::Rotate>::boxed(),
        StepKind::<crop::Crop>::boxed(),
        StepKind::<resize::Resize>::boxed(),
        StepKind::<n_up::NUp>::boxed(),
        StepKind::<booklet::Booklet>::boxed(),
        StepKind::<watermark::Watermark>::boxed(),
        StepKind::<page_numbers::PageNumbers>::boxed(),
        StepKind::<set_outline::SetOutline>::boxed(),
        StepKind::<fill_form::FillForm>::boxed(),
        StepKind::<flatten::Flatten>::boxed(),
        StepKind::<metadata::Metadata>::boxed(),
        StepKind::<unlock::Unlock>::boxed(),
        StepKind::<repair::Repair>::boxed(),
        StepKind::<sanitize::Sanitize>::boxed(),
        StepKind::<compress::Compress>::boxed(),
        StepKind::<rasterize::Rasterize>::boxed(),
        StepKind::<ocr::Ocr>::boxed(),
        StepKind::<protect::Protect>::boxed(),
    ]
}

/// The page-edit price rule in words (`../shared/spec/routebook.md` §4).
pub const PAGE_EDIT_PRICE_RULE: &str =
    "$0.002 covers 50 pages (of the input, or of the result when it has more); + $0.00002 a page beyond";

/// Page edits: $0.002 covers 50 pages, + $0.00002 a page beyond.
pub fn page_edit_price(pages: u32) -> Price {
    Price::tiered(Price::micros(2_000), 50, Price::micros(20), pages as u64)
}

/// The builders' price rule in words (`../shared/spec/routebook.md` §4: fill-template,
/// pptx-build, xlsx-build, xlsx-to-json).
pub const BUILDER_PRICE_RULE: &str = "flat";

/// Bytes of input the base price covers; each started million beyond adds [`PER_MB`].
pub const INCLUDED_BYTES: u64 = 1_000_000;
/// Price of each started million bytes of input beyond the first.
pub const PER_MB: Price = Price::micros(1_000);
/// The price rule of the browser and Office conversions (html-to-pdf, to-pdf), as the catalog states it.
pub const SIZE_PRICE_RULE: &str = "$0.01, + $0.001 for each started MB (10^6 bytes) of input beyond the first";

/// The price of converting `bytes` bytes of input.
pub fn size_price(base: Price, bytes: u64) -> Price {
    Price::tiered(base, 1, PER_MB, bytes.div_ceil(INCLUDED_BYTES).max(1))
}

/// The conversion price rule in words (`../shared/spec/routebook.md` §4: to-markdown,
/// tables, bank-statement, to-docx).
pub const CONVERSION_PRICE_RULE: &str =
    "$0.005 + $0.001 a page converted (a PDF's selected pages; other files: a page per started 100 KB)";

/// Conversion: $0.005 + $0.001 a page.
pub fn conversion_price(pages: u64) -> Price {
    Price::tiered(Price::micros(5_000), 0, Price::micros(1_000), pages)
}

/// A PDF input of a conversion route, opened and checked, with the pages to read.
pub struct SelectedPdf {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// Its password, when it is encrypted.
    pub password: Option<String>,
    /// Its file name (given, or the fallback).
    pub filename: String,
    /// The pages chosen (1-based, ascending, each once); every page when none were named.
    pub pages: Vec<u32>,
    /// The title in its metadata, when it has one.
    pub title: Option<String>,
}

/// Opens the PDF in `file` under the engine's limits (errors under `/file`) and resolves
/// the page selection (errors under `/pages`; every page when there is none).
pub async fn select_pdf_pages(
    file: FileBytes,
    selection: Option<PageSelection>,
    ctx: &Context,
) -> Result<SelectedPdf, EngineError> {
    pdfium::ensure_library().await?;
    let limits = ctx.limits;
    blocking(move || {
        let doc = pdf::open(&file.bytes, file.password.as_deref(), &limits).map_err(|e| e.under("/file"))?;
        // pdfium inflates streams outside the call's counted memory: refused here first.
        pdf::decoded::check(&file.bytes, &doc, &limits, pdf::decoded::For::Rendering).map_err(|e| e.under("/file"))?;
        let page_count = pdf::page_count(&doc);
        let pages = match selection {
            Some(selection) => selection.resolve_set(page_count, "/pages")?,
            None => (1..=page_count).collect(),
        };
        let title = crate::pdf::metadata::read_report(&doc, page_count).info.title.filter(|t| !t.trim().is_empty());
        Ok(SelectedPdf { bytes: file.bytes, password: file.password, filename: file.filename, pages, title })
    })
    .await
}

//! `POST /v1/pdf/to-pdfa`: make a PDF conform to PDF/A-2b or PDF/A-3b, with a report of
//! what was changed. The conversion is [`crate::pdf::pdfa`]'s; this file is the route.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{PAGE_EDIT_PRICE_RULE, page_edit_price};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::pdfa::{self, Level};
use crate::pdf::transform::PdfJob;
use crate::pdf::{self, SourcePdf};
use crate::price::Price;

/// Fields of `/v1/pdf/to-pdfa` besides `file` and `output`.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToPdfaOptions {
    /// The PDF/A part and level to make: `2b` (default) or `3b`, which keeps embedded files.
    #[serde(default)]
    pub level: Level,
}

/// A checked call.
pub struct ToPdfaCall {
    source: SourcePdf,
    level: Level,
    output: OutputMode,
}

/// The route.
pub struct ToPdfaRoute;

impl Route for ToPdfaRoute {
    type Input = PdfJob<ToPdfaOptions>;
    type Prepared = ToPdfaCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/to-pdfa",
        operation: "convert_pdf_to_pdfa",
        family: Family::Docs,
        summary: "Make a PDF conform to PDF/A-2b or PDF/A-3b for archiving",
        description: "Converts a PDF to PDF/A-2b (default) or PDF/A-3b, the archival standard (ISO 19005, level B: every \
            page looks the same wherever and whenever it is opened). Fonts that are not embedded are embedded, \
            replaced by an installed font of the same metrics (Liberation for Helvetica, Arial, Times and Courier; \
            Carlito and Caladea for Calibri and Cambria) cut to the glyphs used; a font with no such match refuses the \
            call (422 font_not_embedded, naming the font and page). An sRGB output intent is added, and device CMYK is \
            described by a CMYK profile that keeps its look. What PDF/A forbids is removed: JavaScript, actions that launch, \
            play, hide or reset, automatic actions, XFA, hidden and media annotations, transfer functions, LZW \
            compression, encryption, and for PDF/A-2b embedded files (PDF/A-3b keeps them, associated with the \
            document). Annotations are made printable with an appearance. New XMP metadata names the part and \
            conformance and matches the document information. The report lists each change with its count and \
            every font embedded (Paperchain-Report header for output=file, `report` field for base64 and url). \
            Level B does not add tags for accessibility.",
        base_price: Price::micros(2_000),
        price_rule: PAGE_EDIT_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: PdfJob<ToPdfaOptions>, ctx: &Context) -> Result<ToPdfaCall, EngineError> {
        let source = SourcePdf::load(&input.file, "/file", ctx).await?;
        Ok(ToPdfaCall { source, level: input.options.level, output: input.output })
    }

    fn quote(call: &ToPdfaCall) -> Price {
        page_edit_price(call.source.page_count)
    }

    async fn run(call: ToPdfaCall, _: &Context) -> Result<Reply<NoJson>, EngineError> {
        blocking(move || {
            let ToPdfaCall { mut source, level, output } = call;
            let report = pdfa::convert(&mut source.doc, level, pdf::dates::now(), Vec::new())?;
            let bytes = pdf::save(&mut source.doc)?;
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(format!("report: {e}")))?;
            let name = derived_name(&source.filename, &format!("pdfa-{}b", level.part()), "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(report)))
        })
        .await
    }
}

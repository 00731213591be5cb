//! `POST /v1/docs/to-pdf`: Word, Excel, PowerPoint, OpenDocument and RTF files to PDF,
//! converted by LibreOffice in a warm pool of boxed workers ([`crate::soffice`]).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::{SIZE_PRICE_RULE, size_price};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::price::Price;
use crate::soffice::{self, Format};

/// Request of `/v1/docs/to-pdf`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToPdfInput {
    /// The document: DOCX, XLSX, PPTX (macro-enabled forms too; macros never run), ODT, ODS, ODP, ODG, RTF,
    /// DOC, XLS or PPT. The format is read from the bytes, not the name.
    pub file: FileInput,
    /// How the PDF is delivered: `file` (default), `base64` or `url`.
    #[serde(default)]
    pub output: OutputMode,
}

/// A checked call.
pub struct ToPdf {
    bytes: Vec<u8>,
    filename: String,
    format: Format,
    output: OutputMode,
}

/// The route.
pub struct ToPdfRoute;

impl Route for ToPdfRoute {
    type Input = ToPdfInput;
    type Prepared = ToPdf;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/to-pdf",
        operation: "office_to_pdf",
        family: Family::Docs,
        summary: "Office document to PDF",
        description: "Converts a Word, Excel, PowerPoint, OpenDocument or RTF file (DOCX, XLSX, PPTX and their \
            macro-enabled forms, ODT, ODS, ODP, ODG, RTF, DOC, XLS, PPT) to PDF with LibreOffice: pages, fonts \
            (metric-compatible substitutes for Calibri, Cambria, Arial, Times New Roman), tables, images and charts \
            as LibreOffice lays them out. Macros never run; linked images and files are not fetched; the \
            conversion runs in a box without network. A password-protected file is 422 password_required; one \
            LibreOffice cannot open is 422 conversion_failed; over 120 s is 504; when every worker is busy, 503 \
            busy with Retry-After.",
        base_price: Price::micros(10_000),
        price_rule: SIZE_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::OFFICE,
    };

    async fn prepare(input: ToPdfInput, ctx: &Context) -> Result<ToPdf, EngineError> {
        // Found before the file is read or fetched, so a server without LibreOffice charges nothing.
        soffice::ensure_available().await?;
        let file = input.file.resolve(ctx, "/file", "document").await?;
        let (bytes, filename) = (file.bytes, file.filename);
        let (bytes, format) = blocking(move || {
            let format = soffice::sniff(&bytes, "/file")?;
            Ok((bytes, format))
        })
        .await?;
        Ok(ToPdf { bytes, filename, format, output: input.output })
    }

    fn quote(call: &ToPdf) -> Price {
        size_price(Self::INFO.base_price, call.bytes.len() as u64)
    }

    async fn run(call: ToPdf, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let pool = soffice::pool(&ctx.state)?;
        let limits = ctx.limits;
        blocking(move || {
            let ToPdf { bytes, filename, format, output } = call;
            let pdf = pool.convert(&bytes, format, "/file")?;
            let pages = crate::pdf::open(&pdf, None, &limits).map(|doc| crate::pdf::page_count(&doc)).map_err(|e| {
                EngineError::internal(format!("LibreOffice wrote a PDF that does not open: {}", e.message))
            })?;
            let report = serde_json::json!({ "pages": pages, "format": format.extension() });
            let file = OutFile::pdf(derived_name(&filename, "", "pdf"), pdf);
            Ok(Reply::Files(FileSet::single(file, output).with_report(report)))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_price_grows_by_started_megabyte_past_the_first() {
        let base = ToPdfRoute::INFO.base_price;
        assert_eq!(size_price(base, 0), base);
        assert_eq!(size_price(base, 1_000_000), base);
        assert_eq!(size_price(base, 1_000_001), Price::micros(11_000));
        assert_eq!(size_price(base, 50 * 1_048_576), Price::micros(10_000 + 52 * 1_000));
    }
}

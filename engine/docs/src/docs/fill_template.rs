//! `POST /v1/docs/fill-template`: a Word template's `{{placeholders}}` filled from JSON
//! (`crate::office::template` has the syntax), answered as DOCX or as PDF through the
//! LibreOffice pool.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::BUILDER_PRICE_RULE;
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::price::Price;
use crate::soffice::{self, Format};

/// Largest `data`, as JSON text: templates are filled with records, not databases.
pub const MAX_DATA_BYTES: usize = 10 * 1024 * 1024;

/// Request of `/v1/docs/fill-template`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FillTemplateInput {
    /// The template: a Word document (.docx) with `{{name}}` placeholders, `{{customer.name}}` for a field of an
    /// object, `{{#items}}…{{/items}}` to repeat a table row (both markers in the row) or the paragraphs between
    /// two marker paragraphs for each item of a list (or to show them when a value is true), `{{^items}}…{{/items}}`
    /// when it is false or empty, `{{.}}` for the item itself. Headers, footers and notes are filled too.
    pub template: FileInput,
    /// The values: a JSON object. Text is inserted as text (never as markup); numbers as written; true/false;
    /// null as nothing; a line break in a value is a line break in Word.
    pub data: Map<String, Value>,
    /// `docx` (default) or `pdf` (the filled document converted by LibreOffice).
    #[serde(default)]
    pub format: TemplateFormat,
    /// How the file is delivered: `file` (default), `base64` or `url`.
    #[serde(default)]
    pub output: OutputMode,
}

/// What the filled template is answered as.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TemplateFormat {
    /// A Word document.
    #[default]
    Docx,
    /// A PDF.
    Pdf,
}

/// A checked call.
pub struct FillTemplate {
    template: Vec<u8>,
    filename: String,
    data: Value,
    format: TemplateFormat,
    output: OutputMode,
}

/// The route.
pub struct FillTemplateRoute;

impl Route for FillTemplateRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::DOCX, media::PDF];
    type Input = FillTemplateInput;
    type Prepared = FillTemplate;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/fill-template",
        operation: "fill_docx_template",
        family: Family::Docs,
        summary: "Fill a Word template from JSON",
        description: "Fills the {{placeholders}} of a .docx template from a JSON object and answers the document as \
            DOCX or PDF (format=pdf, converted by LibreOffice). {{customer.name}} reads a field of an object; \
            {{#items}}…{{/items}} repeats a table row (both markers in the row) or the paragraphs between two \
            marker paragraphs for each item of a list, or shows them when a value is true; {{^items}}…{{/items}} \
            when false or empty; {{.}} is the item itself. Placeholders Word split across runs are found; the \
            inserted text keeps the placeholder's formatting and is never read as markup. Every key the template \
            uses and the data lacks is listed in one 422 missing_keys; template mistakes are 422 invalid_template.",
        base_price: Price::micros(3_000),
        price_rule: BUILDER_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::DOCX,
    };

    async fn prepare(input: FillTemplateInput, ctx: &Context) -> Result<FillTemplate, EngineError> {
        let data = Value::Object(input.data);
        if serde_json::to_vec(&data).map_or(0, |v| v.len()) > MAX_DATA_BYTES {
            return Err(EngineError::too_large(
                "file_too_large",
                Some("/data".into()),
                format!("/data: at most {} MiB of JSON", MAX_DATA_BYTES >> 20),
            ));
        }
        if input.format == TemplateFormat::Pdf {
            // Known before the template is read, so a server without LibreOffice charges nothing.
            soffice::ensure_available().await?;
        }
        let file = input.template.resolve(ctx, "/template", "template.docx").await?;
        Ok(FillTemplate {
            template: file.bytes,
            filename: file.filename,
            data,
            format: input.format,
            output: input.output,
        })
    }

    fn quote(_: &FillTemplate) -> Price {
        Self::INFO.base_price
    }

    async fn run(call: FillTemplate, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let pool = if call.format == TemplateFormat::Pdf { Some(soffice::pool(&ctx.state)?) } else { None };
        blocking(move || {
            let FillTemplate { template, filename, data, format, output } = call;
            let filled = crate::office::template::fill(&template, &data, "/template")?;
            let report = serde_json::json!({
                "placeholders": filled.placeholders,
                "section_items": filled.section_items,
                "format": format,
            });
            let file = match pool {
                None => OutFile {
                    filename: derived_name(&filename, "filled", "docx"),
                    media_type: media::DOCX.into(),
                    bytes: filled.docx,
                },
                Some(pool) => OutFile::pdf(
                    derived_name(&filename, "filled", "pdf"),
                    pool.convert(&filled.docx, Format::Docx { macros: false }, "/template")?,
                ),
            };
            Ok(Reply::Files(FileSet::single(file, output).with_report(report)))
        })
        .await
    }
}

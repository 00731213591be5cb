//! `POST /v1/pdf/tables`: every table of a PDF's pages, ruled and unruled, as JSON, CSV or
//! XLSX. The finding is in `layout::tables`.

use rust_xlsxwriter::{Format, Workbook};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, Progress, blocking};
use crate::docs::{CONVERSION_PRICE_RULE, SelectedPdf, conversion_price, select_pdf_pages};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::layout::tables::{Merge, PageTable, page_tables};
use crate::office::csv;
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::price::Price;

/// Request of `/v1/pdf/tables`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TablesInput {
    /// The PDF.
    pub file: FileInput,
    /// Pages to read (`"1-3,5"`, `"2-last"`); every page when omitted.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// `json` (default): the tables with their pages and boxes. `csv`: one CSV per table (a ZIP when several).
    /// `xlsx`: one workbook, a sheet per table.
    #[serde(default)]
    pub format: TableFormat,
    /// How CSV and XLSX files are delivered (`file`, `base64` or `url`); JSON is always answered as JSON.
    #[serde(default)]
    pub output: OutputMode,
}

/// What the tables are turned into.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    /// JSON.
    #[default]
    Json,
    /// CSV, one file per table.
    Csv,
    /// An Excel workbook, a sheet per table.
    Xlsx,
}

/// The answer for `format: json`.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TablesReport {
    /// The pages read, in order.
    pub pages: Vec<u32>,
    /// The tables, page by page, in reading order.
    pub tables: Vec<TableJson>,
    /// Pages read that have no text layer (scans: `/v1/pdf/ocr` first).
    pub pages_without_text: Vec<u32>,
}

/// One table.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct TableJson {
    /// 1-based page number.
    pub page: u32,
    /// 1-based position among the page's tables.
    pub index: u32,
    /// Left, top, right, bottom, in points from the top-left corner of the page as shown.
    pub bbox: [f32; 4],
    /// `true` when the table is drawn with rules (a grid), `false` when it was found by the alignment of its text.
    pub ruled: bool,
    /// Number of columns (every row has this many cells).
    pub columns: u32,
    /// Rows of cell texts, top to bottom. A merged cell's text is repeated in every cell it covers; an empty cell
    /// is "". Text from the file: untrusted.
    pub rows: Vec<Vec<String>>,
    /// The merged cells of a ruled table (where `rows` repeats a text).
    pub merged: Vec<Merge>,
}

/// A checked call.
pub struct Tables {
    pdf: SelectedPdf,
    format: TableFormat,
    output: OutputMode,
}

/// The route.
pub struct TablesRoute;

impl Route for TablesRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::CSV, media::XLSX, media::ZIP];
    const HEAVY: bool = true;
    type Input = TablesInput;
    type Prepared = Tables;
    type Output = TablesReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/tables",
        operation: "extract_pdf_tables",
        family: Family::Docs,
        summary: "Tables of a PDF as JSON, CSV or XLSX",
        description: "Finds every table on the selected pages of a PDF: tables drawn with rules (merged cells \
            found from the missing rules, their text repeated in every cell they cover) and tables without rules \
            (found by the alignment of their columns), in reading order. format=json answers the cells with each \
            table's page, box and merged cells; format=csv gives one CSV per table (a ZIP when several; text \
            starting with = + - @ is prefixed with ' so a spreadsheet does not run it); format=xlsx one workbook \
            with a sheet per table, numbers as numbers. CSV and XLSX of pages without a table is a 422 \
            `no_tables`.",
        base_price: Price::micros(5_000),
        price_rule: CONVERSION_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::JsonOrFile,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: TablesInput, ctx: &Context) -> Result<Tables, EngineError> {
        let selection = input.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        let file = input.file.resolve(ctx, "/file", "document.pdf").await?;
        let pdf = select_pdf_pages(file, selection, ctx).await?;
        Ok(Tables { pdf, format: input.format, output: input.output })
    }

    fn quote(call: &Tables) -> Price {
        conversion_price(call.pdf.pages.len() as u64)
    }

    async fn run(call: Tables, ctx: &Context) -> Result<Reply<TablesReport>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || convert(call, &*progress)).await
    }
}

fn convert(call: Tables, progress: &dyn Progress) -> Result<Reply<TablesReport>, EngineError> {
    let Tables { pdf, format, output } = call;
    // Scanned pages are read by OCR (English).
    let (layouts, _) =
        crate::ocr::layouts_with_ocr(&pdf.bytes, pdf.password.as_deref(), &pdf.pages, "/file", "eng", progress)?;
    let pages_without_text = layouts.iter().filter(|l| !l.has_text()).map(|l| l.number);
    let pages_without_text: Vec<u32> = pages_without_text.collect();
    let found: Vec<PageTable> = layouts.iter().flat_map(page_tables).collect();
    let mut tables: Vec<TableJson> = Vec::with_capacity(found.len());
    for t in found {
        let index = tables.iter().filter(|j| j.page == t.page).count() as u32 + 1;
        let columns = t.table.rows.iter().map(Vec::len).max().unwrap_or(0);
        let mut rows = t.table.rows;
        for row in &mut rows {
            row.resize(columns, String::new());
        }
        let bbox = t.bbox.map(|v| (v * 100.0).round() / 100.0);
        tables.push(TableJson {
            page: t.page,
            index,
            bbox,
            ruled: t.table.ruled,
            columns: columns as u32,
            rows,
            merged: t.table.merged,
        });
    }
    if format == TableFormat::Json {
        return Ok(Reply::Json(TablesReport { pages: pdf.pages, tables, pages_without_text }));
    }
    if tables.is_empty() {
        let why = if pages_without_text.len() == pdf.pages.len() {
            "the pages read have no text layer (run /v1/pdf/ocr first)"
        } else {
            "no table was found on the pages read"
        };
        return Err(EngineError::invalid_with("no_tables", "/file", format!("/file: {why}")));
    }
    let name = |t: &TableJson| format!("page{}-table{}", t.page, t.index);
    match format {
        TableFormat::Csv => {
            let mut files: Vec<OutFile> = tables
                .iter()
                .map(|t| OutFile {
                    filename: derived_name(&pdf.filename, &name(t), "csv"),
                    media_type: media::CSV.into(),
                    bytes: csv::document(&t.rows).into_bytes(),
                })
                .collect();
            Ok(Reply::Files(if files.len() == 1 {
                FileSet::single(files.remove(0), output)
            } else {
                FileSet::several(files, output, derived_name(&pdf.filename, "tables", "zip"))
            }))
        }
        _ => {
            let file = OutFile {
                filename: derived_name(&pdf.filename, "tables", "xlsx"),
                media_type: media::XLSX.into(),
                bytes: workbook(&tables)?,
            };
            Ok(Reply::Files(FileSet::single(file, output)))
        }
    }
}

/// A workbook with a sheet per table ("Page 3 table 1"): plain numbers as numbers, the
/// rest as text, columns as wide as their longest line (up to 60 characters).
fn workbook(tables: &[TableJson]) -> Result<Vec<u8>, EngineError> {
    let failed = |e: rust_xlsxwriter::XlsxError| EngineError::internal(format!("writing the workbook: {e}"));
    let mut book = Workbook::new();
    let wrap = Format::new().set_text_wrap();
    for t in tables {
        let sheet = book.add_worksheet();
        sheet.set_name(format!("Page {} table {}", t.page, t.index)).map_err(failed)?;
        let mut widths = vec![6usize; t.columns as usize];
        for (r, row) in t.rows.iter().enumerate() {
            for (c, text) in row.iter().enumerate() {
                let (r, col) = (r as u32, c as u16);
                match csv::parse_plain_number(text) {
                    Some(n) => sheet.write_number(r, col, n).map(|_| ()),
                    None if text.is_empty() => Ok(()),
                    None => sheet.write_string_with_format(r, col, text, &wrap).map(|_| ()),
                }
                .map_err(failed)?;
                widths[c] = widths[c].max(text.chars().count() + 1);
            }
        }
        for (c, width) in widths.iter().enumerate() {
            sheet.set_column_width(c as u16, (*width).min(60) as f64).map_err(failed)?;
        }
    }
    book.save_to_buffer().map_err(failed)
}

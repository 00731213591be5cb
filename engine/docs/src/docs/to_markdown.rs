//! `POST /v1/docs/to-markdown`: PDF, DOCX, XLSX, PPTX, HTML, EPUB and CSV files as
//! Markdown, for people and for language models. The readers are in `markdown/`.

use std::io::Cursor;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Progress, blocking};
use crate::docs::{conversion_price, select_pdf_pages};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::markdown::{self, Document};
use crate::ocr;
use crate::output::Reply;
use crate::pages::PageSelection;
use crate::pdf;
use crate::price::Price;

/// The conversion price rule (`crate::docs::CONVERSION_PRICE_RULE`), and what `upto` leaves out.
pub const TO_MARKDOWN_PRICE_RULE: &str = "$0.005 + $0.001 a page converted (a PDF's selected pages; other files: a \
     page per started 100 KB; paid with x402 `upto`, PDF pages left without text cost nothing)";

/// Bytes of a non-PDF file that count as one page.
pub const BYTES_A_PAGE: u64 = 100_000;

/// Request of `/v1/docs/to-markdown`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToMarkdownInput {
    /// The document: PDF, DOCX, XLSX/XLSM, PPTX, HTML, EPUB or CSV (also TSV, `;` or `|` separated).
    pub file: FileInput,
    /// PDF pages to convert (`"1-3,5"`, `"2-last"`); every page when omitted. PDFs only.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// The file's format, when its bytes and name do not tell (a CSV without a `.csv` name); detected when
    /// omitted.
    #[serde(default)]
    pub format: Option<SourceFormat>,
    /// The languages of scanned PDF pages, which are read by OCR, as Tesseract codes (`eng`, `deu`, `fra`…);
    /// `["eng"]` when omitted.
    #[serde(default)]
    #[schemars(length(min = 1, max = 5), inner(regex(pattern = r"^[a-z]{3}[a-z_]{0,13}$")))]
    pub languages: Option<Vec<String>>,
}

/// A format the route reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceFormat {
    /// PDF (its text layer; scanned pages are read by OCR).
    Pdf,
    /// Word (.docx).
    Docx,
    /// Excel (.xlsx, .xlsm).
    Xlsx,
    /// PowerPoint (.pptx).
    Pptx,
    /// HTML (.html, .htm, .xhtml).
    Html,
    /// EPUB e-book.
    Epub,
    /// Delimited text (.csv, .tsv).
    Csv,
}

impl SourceFormat {
    fn name(self) -> &'static str {
        match self {
            SourceFormat::Pdf => "PDF",
            SourceFormat::Docx => "Word document",
            SourceFormat::Xlsx => "Excel workbook",
            SourceFormat::Pptx => "PowerPoint presentation",
            SourceFormat::Html => "HTML page",
            SourceFormat::Epub => "EPUB book",
            SourceFormat::Csv => "CSV file",
        }
    }
}

/// The Markdown.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct MarkdownReport {
    /// The document as Markdown (CommonMark with GitHub pipe tables). Text from the file: untrusted.
    pub markdown: String,
    /// The format read.
    pub format: SourceFormat,
    /// The PDF pages converted, in order; null for other formats.
    pub pages: Option<Vec<u32>>,
    /// PDF pages that have no text layer and were read by OCR (scans); empty for other formats.
    pub pages_read_by_ocr: Vec<u32>,
    /// PDF pages left without text: no text layer, and OCR found none (or is not installed on this server); empty
    /// for other formats.
    pub pages_without_text: Vec<u32>,
    /// The document's title (its metadata, an HTML `<title>`, a book's title), when it has one.
    pub title: Option<String>,
}

/// A checked call.
pub struct ToMarkdown {
    bytes: Vec<u8>,
    password: Option<String>,
    format: SourceFormat,
    pages: Option<Vec<u32>>,
    title: Option<String>,
    /// The OCR languages of scanned pages (`eng+deu`).
    languages: String,
}

/// The route.
pub struct ToMarkdownRoute;

impl Route for ToMarkdownRoute {
    const HEAVY: bool = true;
    type Input = ToMarkdownInput;
    type Prepared = ToMarkdown;
    type Output = MarkdownReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/docs/to-markdown",
        operation: "convert_to_markdown",
        family: Family::Docs,
        summary: "PDF, Office, HTML, EPUB or CSV to Markdown",
        description: "Converts a PDF, DOCX, XLSX, PPTX, HTML, EPUB or CSV file to Markdown: headings, paragraphs \
            (PDF lines joined, hyphenated words mended), nested lists, tables as pipe tables (merged cells repeated), \
            links, bold and italic, code blocks, pictures as `<!-- image: alt -->`. PDFs are read in reading order \
            across columns, running heads, feet and page numbers left out; `pages` selects PDF pages; scanned pages \
            (no text layer) are read by OCR (Tesseract, `languages`) and listed in `pages_read_by_ocr`. The format is detected from the bytes and the \
            file name (`format` overrides). Macros never run; zip and XML bombs are refused.",
        base_price: Price::micros(5_000),
        price_rule: TO_MARKDOWN_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Json,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::TO_MARKDOWN,
    };

    async fn prepare(input: ToMarkdownInput, ctx: &Context) -> Result<ToMarkdown, EngineError> {
        // Languages given are checked (the engine must be there); the default is checked only
        // when a scanned page needs it.
        let languages = match input.languages.as_deref() {
            Some(list) => {
                ocr::ensure_library().await?;
                ocr::check_languages(Some(list), "/languages")?
            }
            None => "eng".to_string(),
        };
        let selection = input.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        let file = input.file.resolve(ctx, "/file", "document").await?;
        let format = match input.format {
            Some(format) => format,
            None => detect(&file.bytes, &file.filename)?,
        };
        if format != SourceFormat::Pdf {
            if selection.is_some() {
                return Err(EngineError::invalid_with(
                    "option_not_applicable",
                    "/pages",
                    format!("/pages: selects PDF pages, and this file is a {}", format.name()),
                ));
            }
            if file.password.is_some() {
                return Err(EngineError::invalid_with(
                    "option_not_applicable",
                    "/file/password",
                    format!("/file/password: only PDFs take a password, and this file is a {}", format.name()),
                ));
            }
            if input.languages.is_some() {
                return Err(EngineError::invalid(
                    "/languages",
                    format!("/languages: OCR languages are for scanned PDFs, and this file is a {}", format.name()),
                ));
            }
            return Ok(ToMarkdown { bytes: file.bytes, password: None, format, pages: None, title: None, languages });
        }
        let pdf = select_pdf_pages(file, selection, ctx).await?;
        Ok(ToMarkdown {
            bytes: pdf.bytes,
            password: pdf.password,
            format,
            pages: Some(pdf.pages),
            title: pdf.title,
            languages,
        })
    }

    const METERED: bool = true;

    fn quote(call: &ToMarkdown) -> Price {
        let pages = match &call.pages {
            Some(pages) => pages.len() as u64,
            None => (call.bytes.len() as u64).div_ceil(BYTES_A_PAGE).max(1),
        };
        conversion_price(pages)
    }

    /// A PDF's pages that gave text: a page left without text (blank, or a scan OCR found
    /// nothing on) costs nothing to a payer charged by use. Other formats: the quote.
    fn used(reply: &Reply<MarkdownReport>) -> Option<Price> {
        let Reply::Json(report) = reply else { return None };
        let pages = report.pages.as_ref()?.len().saturating_sub(report.pages_without_text.len());
        Some(conversion_price(pages as u64))
    }

    async fn run(call: ToMarkdown, ctx: &Context) -> Result<Reply<MarkdownReport>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || convert(call, &*progress)).await
    }
}

fn convert(call: ToMarkdown, progress: &dyn Progress) -> Result<Reply<MarkdownReport>, EngineError> {
    let ToMarkdown { bytes, password, format, pages, title, languages } = call;
    let field = "/file";
    let mut pages_without_text = Vec::new();
    let mut pages_read_by_ocr = Vec::new();
    let document: Document = match format {
        SourceFormat::Pdf => {
            let selected = pages.as_deref().unwrap_or_default();
            let read = markdown::pdf::read(&bytes, password.as_deref(), selected, field, &languages, progress)?;
            pages_without_text = read.pages_without_text;
            pages_read_by_ocr = read.pages_read_by_ocr;
            read.document
        }
        SourceFormat::Docx => markdown::docx::read(&bytes, field)?,
        SourceFormat::Xlsx => markdown::xlsx::read(&bytes, field)?,
        SourceFormat::Pptx => markdown::pptx::read(&bytes, field)?,
        SourceFormat::Html => markdown::html::read(&bytes, field)?,
        SourceFormat::Epub => markdown::epub::read(&bytes, field)?,
        SourceFormat::Csv => markdown::csv::read(&bytes, field)?,
    };
    let title = title.or_else(|| document.title.clone()).or_else(|| first_heading(&document));
    Ok(Reply::Json(MarkdownReport {
        markdown: markdown::render(&document),
        format,
        pages,
        pages_read_by_ocr,
        pages_without_text,
        title,
    }))
}

fn first_heading(document: &Document) -> Option<String> {
    document.blocks.iter().find_map(|block| match block {
        markdown::Block::Heading { level: 1, text } => Some(text.clone()),
        _ => None,
    })
}

/// The format of a file, from its first bytes, its ZIP members or its name.
pub fn detect(bytes: &[u8], filename: &str) -> Result<SourceFormat, EngineError> {
    let head = &bytes[..bytes.len().min(1024)];
    if pdf::looks_like_pdf(bytes) {
        return Ok(SourceFormat::Pdf);
    }
    let extension = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    if crate::office::package::is_ole2(bytes) {
        return Err(unsupported(
            "this is a legacy binary Office file (.doc, .xls, .ppt) or a password-protected one; save it as .docx, \
             .xlsx or .pptx, or convert it with /v1/docs/to-pdf first",
        ));
    }
    if bytes.starts_with(b"PK\x03\x04") {
        return zip_format(bytes);
    }
    match extension.as_str() {
        "html" | "htm" | "xhtml" => return Ok(SourceFormat::Html),
        "csv" | "tsv" => return Ok(SourceFormat::Csv),
        _ => {}
    }
    let text = String::from_utf8_lossy(head).to_ascii_lowercase();
    let start = text.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n']);
    let start = start.strip_prefix("\u{feff}").unwrap_or(start);
    if start.starts_with("<!doctype html")
        || start.starts_with("<html")
        || (start.starts_with('<')
            && ["<body", "<head", "<p>", "<div", "<table", "<h1"].iter().any(|t| text.contains(t)))
    {
        return Ok(SourceFormat::Html);
    }
    if looks_delimited(bytes) {
        return Ok(SourceFormat::Csv);
    }
    Err(unsupported(
        "the format is not one this route reads (PDF, DOCX, XLSX, PPTX, HTML, EPUB, CSV); name the file with its \
         extension or give `format`",
    ))
}

fn zip_format(bytes: &[u8]) -> Result<SourceFormat, EngineError> {
    let archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| {
        EngineError::invalid_with("damaged_office_file", "/file", format!("/file: the ZIP structure is damaged: {e}"))
    })?;
    let has = |name: &str| archive.index_for_name(name).is_some();
    if has("word/document.xml") {
        Ok(SourceFormat::Docx)
    } else if has("ppt/presentation.xml") {
        Ok(SourceFormat::Pptx)
    } else if has("xl/workbook.xml") {
        Ok(SourceFormat::Xlsx)
    } else if has("META-INF/container.xml") || has("mimetype") {
        Ok(SourceFormat::Epub)
    } else {
        Err(unsupported(
            "this ZIP is not a DOCX, XLSX, PPTX or EPUB file (OpenDocument files: convert them with /v1/docs/to-pdf)",
        ))
    }
}

/// Whether text looks like delimited rows: valid text, and its first records split into
/// the same number (two or more) of fields by one of the usual separators. Separators
/// inside double quotes are part of a field (`"Lozano, Dr"`), and a quoted field may run
/// over several lines, as RFC 4180 has it.
fn looks_delimited(bytes: &[u8]) -> bool {
    let head = &bytes[..bytes.len().min(8192)];
    let text = match std::str::from_utf8(head) {
        Ok(t) => t,
        // The cut may fall inside a character.
        Err(e) if e.valid_up_to() + 4 >= head.len() => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return false,
    };
    if text.chars().any(|c| c.is_control() && !matches!(c, '\t' | '\r' | '\n')) {
        return false;
    }
    [',', ';', '\t', '|'].into_iter().any(|separator| {
        let counts = field_counts(text, separator);
        // The head may end inside its last record: that one is not compared.
        let whole = &counts[..counts.len().saturating_sub(usize::from(head.len() < bytes.len()))];
        let first = whole.first().copied().unwrap_or(0);
        whole.len() >= 2 && first >= 2 && whole.iter().take(10).all(|&n| n == first)
    })
}

/// The number of fields in each non-blank record of `text` split by `separator`, quotes
/// respected.
fn field_counts(text: &str, separator: char) -> Vec<usize> {
    let mut counts = Vec::new();
    let (mut fields, mut quoted, mut blank) = (1, false, true);
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                blank = false;
            }
            '\n' if !quoted => {
                if !blank {
                    counts.push(fields);
                }
                (fields, blank) = (1, true);
            }
            c if c == separator && !quoted => {
                fields += 1;
                blank = false;
            }
            c if !c.is_whitespace() => blank = false,
            _ => {}
        }
    }
    if !blank {
        counts.push(fields);
    }
    counts
}

fn unsupported(why: &str) -> EngineError {
    EngineError::new(crate::error::ErrorKind::InvalidInput, "unsupported_format", format!("/file: {why}")).at("/file")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_by_bytes_then_name() {
        assert_eq!(detect(b"%PDF-1.7\n...", "x.bin").unwrap(), SourceFormat::Pdf);
        assert_eq!(detect(b"<!DOCTYPE html><p>x", "page").unwrap(), SourceFormat::Html);
        assert_eq!(detect(b"anything", "page.htm").unwrap(), SourceFormat::Html);
        assert_eq!(detect(b"a;b\n1;2\n", "data").unwrap(), SourceFormat::Csv);
        assert_eq!(detect(b"one line", "notes.csv").unwrap(), SourceFormat::Csv);
        assert!(detect(b"one line, no rows", "notes").is_err());
        let legacy = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1, 0, 0];
        assert_eq!(detect(&legacy, "a.doc").unwrap_err().code, "unsupported_format");
        let binary = detect(&[0u8, 159, 146, 150, 1, 2], "blob").unwrap_err();
        assert_eq!((binary.code.as_ref(), binary.field.as_deref()), ("unsupported_format", Some("/file")));
    }

    #[test]
    fn delimited_text_is_told_with_its_quoted_fields() {
        // A quoted field holding the separator, or running over two lines, is one field.
        let quoted = b"id,name,city\n1,\"Lozano, Dr\",Lima\n2,Berry,\"East\nLeonard\"\n3,Olsen,Oslo\n";
        assert_eq!(detect(quoted, "").unwrap(), SourceFormat::Csv);
        assert_eq!(detect(b"a\tb\n\n1\t2\n", "").unwrap(), SourceFormat::Csv);
        // Prose with commas is not a table: the counts differ from line to line.
        assert!(detect(b"Dear all, thanks.\nSee you, then, on Monday.\n", "").is_err());
        // Quotes do not hide a ragged row.
        assert!(detect(b"a,b,c\n1,\"2,3\"\n", "").is_err());
        // A head cut inside its last record still reads as the table it is.
        let mut long = b"x,y\n".to_vec();
        while long.len() < 9000 {
            long.extend_from_slice(b"12345,\"a, b\"\n");
        }
        assert_eq!(detect(&long, "").unwrap(), SourceFormat::Csv);
    }

    #[test]
    fn zip_members_tell_office_files_and_books_apart() {
        let zip_of = |name: &str| crate::office::package::zip_of(&[(name, b"<x/>")]);
        assert_eq!(detect(&zip_of("word/document.xml"), "a").unwrap(), SourceFormat::Docx);
        assert_eq!(detect(&zip_of("ppt/presentation.xml"), "a").unwrap(), SourceFormat::Pptx);
        assert_eq!(detect(&zip_of("xl/workbook.xml"), "a").unwrap(), SourceFormat::Xlsx);
        assert_eq!(detect(&zip_of("META-INF/container.xml"), "a").unwrap(), SourceFormat::Epub);
        assert_eq!(detect(&zip_of("content.xml"), "a.odt").unwrap_err().code, "unsupported_format");
    }

    #[test]
    fn price_counts_pdf_pages_or_started_100_kb() {
        assert_eq!(conversion_price(3), Price::micros(8_000));
        let call = |bytes: usize, pages: Option<Vec<u32>>| ToMarkdown {
            bytes: vec![0; bytes],
            password: None,
            format: SourceFormat::Html,
            pages,
            title: None,
            languages: "eng".into(),
        };
        assert_eq!(ToMarkdownRoute::quote(&call(10, None)), Price::micros(6_000));
        assert_eq!(ToMarkdownRoute::quote(&call(250_000, None)), Price::micros(8_000));
        assert_eq!(ToMarkdownRoute::quote(&call(10, Some(vec![1, 2, 5, 9]))), Price::micros(9_000));
    }
}

//! `POST /v1/pdf/split-by`: split where the document itself says: at blank pages (a batch
//! of scans with blank sheets between documents), at separator pages (a sheet with a
//! word such as "SEPARATOR"), at bookmarks of a chosen level (one part a chapter), or
//! into parts no larger than a size (for a mail or upload limit).
//!
//! `parts.json`, beside the parts, says which pages each holds and what was dropped.
//!
//! What this module must not do: lose a page that is not a separator, or write a part
//! larger than the size asked for (a page larger on its own is a part alone, and said).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo, media};
use crate::context::{Context, blocking};
use crate::docs::page_edit_price;
use crate::docs::remove_blank_pages::{self, PageInk};
use crate::error::EngineError;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::outline_tree::{self, OutlineItem};
use crate::pdf::pdfium::{self, RenderSource, rendering_price};
use crate::pdf::transform::PdfJob;
use crate::pdf::{self, SourcePdf, assemble};
use crate::price::Price;

/// Most parts one call may produce (as split).
const MAX_PARTS: usize = 5_000;
/// The deepest bookmark level one may split at.
const MAX_LEVEL: u32 = 10;
/// The smallest and largest part size one may ask for, in MB (10⁶ bytes).
const MB_RANGE: std::ops::RangeInclusive<f64> = 0.01..=256.0;
/// Longest separator text.
const MAX_TEXT: usize = 200;

/// The price rule in words: page edits, except blank pages, which are rendered.
pub const PRICE_RULE: &str = "$0.002 covers 50 pages, + $0.00002 a page beyond; at=blank_pages: $0.003 + $0.0005 a \
    page rendered";

/// Where a new part starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SplitAt {
    /// At each run of blank pages (scanned blank sheets included), which are dropped.
    BlankPages,
    /// At each page whose text holds `text`; the page is dropped unless `keep_separators`.
    Separator,
    /// At each bookmark of `level`; each part is named after its bookmark.
    Bookmarks,
    /// Wherever the part would grow past `max_mb`.
    Size,
}

/// Fields of `/v1/pdf/split-by` besides `file` and `output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SplitByOptions {
    /// Where a new part starts: `blank_pages` (each run of blank pages, dropped), `separator` (each page whose text holds `text`), `bookmarks` (each bookmark of `level`) or `size` (parts of at most `max_mb`).
    pub at: SplitAt,
    /// at=blank_pages: a page without text is blank when ink covers at most this percent of it, 0 to 5 (0.1).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 5.0))]
    pub threshold_percent: Option<f64>,
    /// at=separator: the text a separator page holds (1 to 200 characters, not only spaces; spaces and line breaks match any white space).
    #[serde(default)]
    #[schemars(length(min = 1, max = 200), regex(pattern = r"\S"))]
    pub text: Option<String>,
    /// at=separator: match `text` with its case (false: any case).
    #[serde(default)]
    pub match_case: bool,
    /// at=separator: keep each separator page as the first page of the part it starts (false: drop it).
    #[serde(default)]
    pub keep_separators: bool,
    /// at=bookmarks: the bookmark level, 1 (the top) to 10 (1).
    #[serde(default)]
    #[schemars(range(min = 1, max = 10))]
    pub level: Option<u32>,
    /// at=size: the largest part, in MB (10⁶ bytes), 0.01 to 256.
    #[serde(default)]
    #[schemars(range(min = 0.01, max = 256))]
    pub max_mb: Option<f64>,
}

/// What was split where.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct SplitByReport {
    /// The split asked for.
    pub at: SplitAt,
    /// Pages in the input.
    pub pages_in: u32,
    /// The parts, in order.
    pub parts: Vec<PartReport>,
    /// Pages in no part: the blank pages, or the separator pages dropped (1-based).
    pub dropped: Vec<u32>,
    /// at=size: pages larger than `max_mb` on their own, each written as a part alone.
    pub oversized: Vec<u32>,
}

/// One part.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PartReport {
    /// Its file name.
    pub file: String,
    /// Its first page in the input (1-based).
    pub first_page: u32,
    /// Its last page in the input.
    pub last_page: u32,
    /// Its number of pages.
    pub pages: u32,
    /// at=bookmarks: the bookmark it starts at (null for pages before the first bookmark).
    pub title: Option<String>,
    /// Its size in bytes.
    pub bytes: u64,
}

/// A checked call.
pub struct SplitByCall {
    source: SourcePdf,
    /// The file's bytes and password, for pdfium (blank pages and separators).
    render: Option<(Vec<u8>, Option<String>)>,
    options: SplitByOptions,
    output: OutputMode,
}

/// The route.
pub struct SplitByRoute;

/// One part before it is written.
struct Part {
    pages: Vec<u32>,
    title: Option<String>,
}

impl Route for SplitByRoute {
    const FILE_TYPES: &'static [&'static str] = &[media::ZIP];
    type Input = PdfJob<SplitByOptions>;
    type Prepared = SplitByCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/split-by",
        operation: "split_pdf_by_content",
        family: Family::Docs,
        summary: "Split at blank or separator pages, bookmarks, or by size",
        description: "Splits a PDF where the document says: at=blank_pages at each run of blank pages (scanned blank \
            sheets with specks and paper tone too, measured as remove-blank-pages does; the blank pages are \
            dropped), at=separator at each page whose text holds `text` (dropped unless keep_separators), \
            at=bookmarks at each bookmark of `level` (each part named after its bookmark), at=size into parts of at \
            most `max_mb` (a page larger on its own is a part alone, listed in `oversized`). Each part keeps its \
            bookmarks, links between its own pages and its form fields. A report lists each part's pages, title and \
            size and the pages dropped: `parts.json`, beside the parts. output=file answers one ZIP; base64 and url a \
            JSON list.",
        base_price: Price::micros(2_000),
        price_rule: PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::Files,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: PdfJob<SplitByOptions>, ctx: &Context) -> Result<SplitByCall, EngineError> {
        let options = input.options;
        check(&options)?;
        let (source, render) = if matches!(options.at, SplitAt::BlankPages | SplitAt::Separator) {
            // Found before the file is read, so a server without the renderer charges nothing.
            pdfium::ensure_library().await?;
            let RenderSource { pdf, bytes, password } = RenderSource::load(&input.file, "/file", ctx).await?;
            (pdf, Some((bytes, password)))
        } else {
            (SourcePdf::load(&input.file, "/file", ctx).await?, None)
        };
        Ok(SplitByCall { source, render, options, output: input.output })
    }

    fn quote(call: &SplitByCall) -> Price {
        match call.options.at {
            SplitAt::BlankPages => rendering_price(call.source.page_count),
            _ => page_edit_price(call.source.page_count),
        }
    }

    async fn run(call: SplitByCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let SplitByCall { source, render, options, output } = call;
            let n = source.page_count;
            let all: Vec<u32> = (1..=n).collect();
            let (bytes, password) = render.unwrap_or_default();
            let mut dropped = Vec::new();
            let mut oversized = Vec::new();
            let parts = match options.at {
                SplitAt::BlankPages => {
                    let threshold = remove_blank_pages::threshold(options.threshold_percent)?;
                    let measured =
                        remove_blank_pages::measure(&bytes, password.as_deref(), n, &all, threshold, &*progress)?;
                    let blank: Vec<bool> = measured.iter().map(|p: &PageInk| p.blank).collect();
                    dropped = all.iter().copied().filter(|p| blank[*p as usize - 1]).collect();
                    runs_between(&all, |p| blank[p as usize - 1], false)
                }
                SplitAt::Separator => {
                    let texts = pdfium::page_texts(&bytes, password.as_deref(), "/file")?;
                    let needle = options.text.as_deref().unwrap_or_default();
                    let is_separator =
                        |p: u32| texts.get(p as usize - 1).is_some_and(|t| holds(t, needle, options.match_case));
                    if !options.keep_separators {
                        dropped = all.iter().copied().filter(|&p| is_separator(p)).collect();
                    }
                    runs_between(&all, is_separator, options.keep_separators)
                }
                SplitAt::Bookmarks => bookmark_parts(&source.doc, options.level.unwrap_or(1))?,
                SplitAt::Size => {
                    let limit = (options.max_mb.unwrap_or(1.0) * 1e6) as usize;
                    let (parts, alone) = size_parts(&source.doc, &all, limit, &*progress)?;
                    oversized = alone;
                    parts
                }
            };
            if parts.is_empty() {
                return Err(EngineError::invalid_with(
                    "no_pages_left",
                    "/file",
                    format!("/file: every one of the {n} pages is a separator or blank; no part would have a page"),
                ));
            }
            if parts.len() > MAX_PARTS {
                return Err(EngineError::too_large(
                    "too_many_pages",
                    Some("/at".into()),
                    format!("/at: the split would make {} parts; at most {MAX_PARTS}", parts.len()),
                ));
            }
            let width = parts.len().to_string().len();
            let mut files = Vec::with_capacity(parts.len());
            let mut reports = Vec::with_capacity(parts.len());
            let mut written = 0usize;
            for (i, part) in parts.into_iter().enumerate() {
                let bytes = assemble::pages_of(&source.doc, &part.pages)?;
                written += bytes.len();
                if written > pdf::MAX_OUTPUT_BYTES {
                    return Err(pdf::output_too_large());
                }
                let mut suffix = format!("part-{:0width$}", i + 1);
                if let Some(slug) = part.title.as_deref().map(slug).filter(|s| !s.is_empty()) {
                    suffix = format!("{suffix}-{slug}");
                }
                let name = derived_name(&source.filename, &suffix, "pdf");
                reports.push(PartReport {
                    file: name.clone(),
                    first_page: part.pages[0],
                    last_page: *part.pages.last().unwrap_or(&part.pages[0]),
                    pages: part.pages.len() as u32,
                    title: part.title,
                    bytes: bytes.len() as u64,
                });
                files.push(OutFile::pdf(name, bytes));
            }
            let report = SplitByReport { at: options.at, pages_in: n, parts: reports, dropped, oversized };
            files.push(OutFile::json("parts.json", &report)?);
            let zip = derived_name(&source.filename, "split", "zip");
            Ok(Reply::Files(FileSet::several(files, output, zip)))
        })
        .await
    }
}

/// Refuses options that do not fit `at`, naming the field.
fn check(options: &SplitByOptions) -> Result<(), EngineError> {
    let at = options.at;
    let only = |given: bool, field: &str, mode: &str| -> Result<(), EngineError> {
        if given {
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                field,
                format!("{field}: applies only with at={mode}"),
            ));
        }
        Ok(())
    };
    only(options.threshold_percent.is_some() && at != SplitAt::BlankPages, "/threshold_percent", "blank_pages")?;
    only(options.text.is_some() && at != SplitAt::Separator, "/text", "separator")?;
    only(options.match_case && at != SplitAt::Separator, "/match_case", "separator")?;
    only(options.keep_separators && at != SplitAt::Separator, "/keep_separators", "separator")?;
    only(options.level.is_some() && at != SplitAt::Bookmarks, "/level", "bookmarks")?;
    only(options.max_mb.is_some() && at != SplitAt::Size, "/max_mb", "size")?;
    match at {
        SplitAt::BlankPages => {
            remove_blank_pages::threshold(options.threshold_percent)?;
        }
        SplitAt::Separator => match options.text.as_deref().map(str::trim) {
            None | Some("") => {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    "/text",
                    "/text: at=separator needs the text a separator page holds",
                ));
            }
            Some(text) if text.chars().count() > MAX_TEXT => {
                return Err(EngineError::invalid("/text", format!("/text: at most {MAX_TEXT} characters")));
            }
            Some(_) => {}
        },
        SplitAt::Bookmarks => {
            if let Some(level) = options.level
                && !(1..=MAX_LEVEL).contains(&level)
            {
                return Err(EngineError::invalid("/level", format!("/level: must be 1 to {MAX_LEVEL}, not {level}")));
            }
        }
        SplitAt::Size => match options.max_mb {
            None => {
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    "/max_mb",
                    "/max_mb: at=size needs the largest part, in MB",
                ));
            }
            Some(mb) if !MB_RANGE.contains(&mb) => {
                return Err(EngineError::invalid(
                    "/max_mb",
                    format!("/max_mb: must be {} to {} MB, not {mb}", MB_RANGE.start(), MB_RANGE.end()),
                ));
            }
            Some(_) => {}
        },
    }
    Ok(())
}

/// The runs of `pages` between the pages `split_at` picks. Those pages are left out, or
/// start the next run when `keep` is set.
fn runs_between(pages: &[u32], split_at: impl Fn(u32) -> bool, keep: bool) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current = Vec::new();
    for &page in pages {
        if split_at(page) {
            if !current.is_empty() {
                parts.push(Part { pages: std::mem::take(&mut current), title: None });
            }
            if keep {
                current.push(page);
            }
        } else {
            current.push(page);
        }
    }
    if !current.is_empty() {
        parts.push(Part { pages: current, title: None });
    }
    parts
}

/// Whether `text` holds `needle`, any run of white space matching any other.
fn holds(text: &str, needle: &str, match_case: bool) -> bool {
    let squeeze = |s: &str| -> String {
        let words: Vec<&str> = s.split_whitespace().collect();
        let joined = words.join(" ");
        if match_case { joined } else { joined.to_lowercase() }
    };
    squeeze(text).contains(&squeeze(needle))
}

/// One part per bookmark of `level` (1 = the top), each from its page to the page before
/// the next one; pages before the first are a part without a title.
fn bookmark_parts(doc: &lopdf::Document, level: u32) -> Result<Vec<Part>, EngineError> {
    let ids: Vec<lopdf::ObjectId> = doc.page_iter().collect();
    let number: std::collections::HashMap<lopdf::ObjectId, u32> =
        ids.iter().enumerate().map(|(i, id)| (*id, i as u32 + 1)).collect();
    let mut marks: Vec<(u32, String)> = Vec::new();
    let mut per_level = [0usize; MAX_LEVEL as usize];
    collect(&outline_tree::read(doc), 1, level, &number, &mut marks, &mut per_level);
    if marks.is_empty() {
        let found: Vec<String> = per_level
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(i, n)| format!("{n} at level {}", i + 1))
            .collect();
        let had = if found.is_empty() { "no bookmarks that open a page".to_string() } else { found.join(", ") };
        return Err(EngineError::invalid_with(
            "no_bookmarks",
            "/level",
            format!("/level: the document has no bookmark at level {level} that opens a page (it has {had})"),
        ));
    }
    // In page order; of several on one page, the first in the outline names the part.
    marks.sort_by_key(|(page, _)| *page);
    marks.dedup_by_key(|(page, _)| *page);
    let n = ids.len() as u32;
    let mut parts = Vec::new();
    if marks[0].0 > 1 {
        parts.push(Part { pages: (1..marks[0].0).collect(), title: None });
    }
    for (i, (start, title)) in marks.iter().enumerate() {
        let end = marks.get(i + 1).map_or(n, |(next, _)| next - 1);
        parts.push(Part { pages: (*start..=end).collect(), title: Some(title.clone()) });
    }
    Ok(parts)
}

/// Gathers the (page, title) of the bookmarks at `level`, counting those at each level.
fn collect(
    items: &[OutlineItem],
    depth: u32,
    level: u32,
    number: &std::collections::HashMap<lopdf::ObjectId, u32>,
    marks: &mut Vec<(u32, String)>,
    per_level: &mut [usize],
) {
    for item in items {
        let page = item.page.and_then(|id| number.get(&id).copied());
        if let (Some(page), Some(count)) = (page, per_level.get_mut(depth as usize - 1)) {
            *count += 1;
            if depth == level {
                marks.push((page, item.title.clone()));
            }
        }
        if depth < MAX_LEVEL {
            collect(&item.children, depth + 1, level, number, marks, per_level);
        }
    }
}

/// Parts of consecutive pages, each written at most `limit` bytes, found by writing them:
/// a part grows by doubling, then the largest that fits is searched between the last two
/// tries. A page over the limit alone is a part alone, and listed.
fn size_parts(
    doc: &lopdf::Document,
    pages: &[u32],
    limit: usize,
    progress: &dyn crate::context::Progress,
) -> Result<(Vec<Part>, Vec<u32>), EngineError> {
    let size = |range: &[u32]| -> Result<usize, EngineError> { Ok(assemble::pages_of(doc, range)?.len()) };
    let mut parts = Vec::new();
    let mut oversized = Vec::new();
    let mut start = 0;
    while start < pages.len() {
        // `fits` pages from `start` fit; `over` do not (or run past the end).
        let mut fits = 0;
        let mut next = 1;
        let over = loop {
            let end = (start + next).min(pages.len());
            if size(&pages[start..end])? <= limit {
                fits = end - start;
                if end == pages.len() {
                    break None;
                }
                next *= 2;
            } else {
                break Some(end - start);
            }
        };
        if let Some(mut over) = over {
            while over - fits > 1 {
                let mid = (fits + over) / 2;
                if size(&pages[start..start + mid])? <= limit {
                    fits = mid;
                } else {
                    over = mid;
                }
            }
        }
        if fits == 0 {
            oversized.push(pages[start]);
            fits = 1;
        }
        parts.push(Part { pages: pages[start..start + fits].to_vec(), title: None });
        start += fits;
        progress.advance("pages", start as u64, pages.len() as u64);
    }
    Ok((parts, oversized))
}

/// A bookmark title as part of a file name: letters, digits and dashes, at most 40.
fn slug(title: &str) -> String {
    let mut out = String::new();
    for c in title.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
        if out.chars().count() >= 40 {
            break;
        }
    }
    out.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pages_of(parts: &[Part]) -> Vec<Vec<u32>> {
        parts.iter().map(|p| p.pages.clone()).collect()
    }

    #[test]
    fn separators_split_and_go_or_stay() {
        let pages: Vec<u32> = (1..=8).collect();
        let at = |p: u32| p == 1 || p == 4 || p == 5;
        assert_eq!(pages_of(&runs_between(&pages, at, false)), [vec![2, 3], vec![6, 7, 8]]);
        assert_eq!(pages_of(&runs_between(&pages, at, true)), [vec![1, 2, 3], vec![4], vec![5, 6, 7, 8]]);
        assert!(runs_between(&pages, |_| true, false).is_empty());
    }

    #[test]
    fn separator_text_matches_across_spaces_and_case() {
        assert!(holds("Batch\n  SEPARATOR sheet", "batch separator", false));
        assert!(!holds("Batch SEPARATOR", "batch separator", true));
        assert!(!holds("SEPARA TOR", "separator", false));
    }

    #[test]
    fn titles_become_short_file_names() {
        assert_eq!(slug("Chapter 2: Über «Maps» / and ../../etc"), "chapter-2-über-maps-and-etc");
        assert_eq!(slug("***"), "");
        assert_eq!(slug(&"a".repeat(100)).len(), 40);
    }
}

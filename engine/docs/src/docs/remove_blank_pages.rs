//! `POST /v1/pdf/remove-blank-pages`: drop the pages that carry nothing, scanned blank
//! sheets with their specks and paper tone included.
//!
//! A page with text (any character that is not white space, visible or an OCR layer) is
//! not blank. Any other page is rendered in gray at [`DPI`] and its ink measured: a pixel is
//! ink when it is darker than [`INK_BELOW`] (a quarter of the way to black: paper tone,
//! pale backgrounds and show-through are not ink) and touches another ink pixel (a lone
//! speck of dust or scanner noise is not). The page is blank when its ink covers at most
//! `threshold_percent` of the page.
//!
//! What this module must not do: drop a page with text, or leave a document without pages.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, Progress, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf::pdfium::{self, RENDERING_PRICE_RULE, RenderSource, rendering_price};
use crate::pdf::{self, SourcePdf, assemble};
use crate::price::Price;

/// Resolution pages are measured at: enough for a line of text to be many pixels, low
/// enough that a speck of dust is one.
pub const DPI: u32 = 50;
/// Gray level (0 black, 255 white) below which a pixel is ink.
pub const INK_BELOW: u8 = 192;
/// The threshold when none is given, in percent of the page.
pub const DEFAULT_THRESHOLD: f64 = 0.1;
/// The highest threshold a caller may give.
pub const MAX_THRESHOLD: f64 = 5.0;

/// Request of `/v1/pdf/remove-blank-pages`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RemoveBlankPagesInput {
    /// The PDF.
    pub file: FileInput,
    /// A page without text is blank when ink covers at most this percent of it: 0 to 5, 0.1 when omitted (a page number alone on a scan is below it; a line of text is above).
    #[serde(default)]
    #[schemars(range(min = 0.0, max = 5.0))]
    pub threshold_percent: Option<f64>,
    /// Pages that may be removed (`"1-3,5"`, `"2-last"`); every page when omitted. The others stay whatever they hold.
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// How to deliver the PDF.
    #[serde(default)]
    pub output: OutputMode,
}

/// What was measured and removed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct BlankPagesReport {
    /// Pages in the input.
    pub pages_in: u32,
    /// Pages in the result.
    pub pages_out: u32,
    /// The pages removed (1-based, of the input).
    pub removed: Vec<u32>,
    /// The threshold applied, in percent of the page.
    pub threshold_percent: f64,
    /// Every page looked at: its ink in percent of the page (null when it has text and was not measured).
    pub pages: Vec<PageInk>,
}

/// One page looked at.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct PageInk {
    /// 1-based page number.
    pub page: u32,
    /// Whether the page has text.
    pub text: bool,
    /// Ink in percent of the page, rounded to 0.001 (null for a page with text).
    pub ink_percent: Option<f64>,
    /// Whether it was removed.
    pub blank: bool,
}

/// A checked call.
pub struct RemoveBlankPages {
    source: SourcePdf,
    bytes: Vec<u8>,
    password: Option<String>,
    pages: Vec<u32>,
    threshold: f64,
    output: OutputMode,
}

/// The route.
pub struct RemoveBlankPagesRoute;

impl Route for RemoveBlankPagesRoute {
    const HEAVY: bool = true;
    type Input = RemoveBlankPagesInput;
    type Prepared = RemoveBlankPages;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/remove-blank-pages",
        operation: "remove_blank_pdf_pages",
        family: Family::Docs,
        summary: "Remove blank pages, scanned ones included",
        description: "Removes the pages that carry nothing. A page with text is never blank; any other page is rendered \
            and is blank when its ink (pixels a quarter of the way to black or darker, lone specks of dust and scanner \
            noise not counted, paper tone and show-through ignored) covers at most `threshold_percent` of it (0.1 by \
            default). `pages` limits which pages may go. Bookmarks and links to removed pages are dropped. A report \
            gives every page's ink and the pages removed (Paperchain-Report header for output=file, `report` field \
            for base64 and url). A document whose every page is blank is refused, not emptied.",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: RemoveBlankPagesInput, ctx: &Context) -> Result<RemoveBlankPages, EngineError> {
        let threshold = threshold(input.threshold_percent)?;
        let selection = PageSelection::parse_or_all(input.pages.as_deref(), "/pages")?;
        // Found before the file is read, so a server without the renderer charges nothing.
        pdfium::ensure_library().await?;
        let RenderSource { pdf: source, bytes, password } = RenderSource::load(&input.file, "/file", ctx).await?;
        let pages = selection.resolve_set(source.page_count, "/pages")?;
        Ok(RemoveBlankPages { source, bytes, password, pages, threshold, output: input.output })
    }

    fn quote(call: &RemoveBlankPages) -> Price {
        rendering_price(call.pages.len() as u32)
    }

    async fn run(call: RemoveBlankPages, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let RemoveBlankPages { source, bytes, password, pages, threshold, output } = call;
            let report_pages = measure(&bytes, password.as_deref(), source.page_count, &pages, threshold, &*progress)?;
            let removed: Vec<u32> = report_pages.iter().filter(|p| p.blank).map(|p| p.page).collect();
            let keep: Vec<u32> = (1..=source.page_count).filter(|p| removed.binary_search(p).is_err()).collect();
            if keep.is_empty() {
                return Err(EngineError::invalid_with(
                    "no_pages_left",
                    "/file",
                    format!(
                        "/file: all {} pages are blank at a threshold of {threshold}%; nothing would remain",
                        source.page_count
                    ),
                ));
            }
            let out = if removed.is_empty() {
                // Nothing to drop: the file is written as every other edit writes it.
                let mut doc = source.doc;
                pdf::save(&mut doc)?
            } else {
                assemble::pages_of(&source.doc, &keep)?
            };
            let report = BlankPagesReport {
                pages_in: source.page_count,
                pages_out: keep.len() as u32,
                removed,
                threshold_percent: threshold,
                pages: report_pages,
            };
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(format!("report: {e}")))?;
            let name = derived_name(&source.filename, "no-blanks", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, out), output).with_report(report)))
        })
        .await
    }
}

/// The threshold asked for (in percent of the page), or the default; errors name
/// `/threshold_percent`.
pub fn threshold(asked: Option<f64>) -> Result<f64, EngineError> {
    match asked {
        None => Ok(DEFAULT_THRESHOLD),
        Some(t) if (0.0..=MAX_THRESHOLD).contains(&t) => Ok(t),
        Some(t) => Err(EngineError::invalid(
            "/threshold_percent",
            format!("/threshold_percent: must be from 0 to {MAX_THRESHOLD} (percent of the page), not {t}"),
        )),
    }
}

/// Looks at `pages` (1-based) of a document of `page_count` pages as lopdf reads it: which
/// have text, the ink of the others, and which are blank at `threshold` percent. Errors
/// name `/file`.
pub fn measure(
    bytes: &[u8],
    password: Option<&str>,
    page_count: u32,
    pages: &[u32],
    threshold: f64,
    progress: &dyn Progress,
) -> Result<Vec<PageInk>, EngineError> {
    // The pages measured (pdfium's) must be the pages kept or dropped (lopdf's).
    let rendered = pdfium::page_count(bytes, password, "/file")?;
    if rendered != page_count {
        return Err(EngineError::invalid_with(
            "damaged_pdf",
            "/file",
            format!(
                "/file: the page tree reads as {page_count} pages one way and {rendered} another; repair the file \
                 first (repair_damaged_pdf)"
            ),
        ));
    }
    let with_text = pdfium::pages_with_text(bytes, password, pages, "/file")?;
    let to_render: Vec<u32> = pages.iter().zip(&with_text).filter(|(_, text)| !**text).map(|(p, _)| *p).collect();
    let total = pages.len() as u64;
    let mut done = (pages.len() - to_render.len()) as u64;
    let mut ink = std::collections::HashMap::new();
    pdfium::render_pages(bytes, password, &to_render, DPI, "/file", "/file", |page| {
        ink.insert(page.number, ink_percent(&page.rgb, page.width as usize, page.height as usize));
        done += 1;
        progress.advance("pages", done, total);
        Ok(())
    })?;
    Ok(pages
        .iter()
        .zip(&with_text)
        .map(|(&page, &text)| {
            // The figure reported is the one decided on.
            let ink_percent = ink.get(&page).map(|p| (p * 1000.0).round() / 1000.0);
            let blank = !text && ink_percent.is_some_and(|p| p <= threshold);
            PageInk { page, text, ink_percent, blank }
        })
        .collect())
}

/// Percent of the page that is ink: pixels darker than [`INK_BELOW`] with at least one
/// such neighbour (of the eight around it).
pub fn ink_percent(rgb: &[u8], width: usize, height: usize) -> f64 {
    if width == 0 || height == 0 {
        return 0.0;
    }
    let dark: Vec<bool> = rgb
        .chunks_exact(3)
        .map(|px| {
            // Rec. 601 luma, in integers.
            let luma = (299 * px[0] as u32 + 587 * px[1] as u32 + 114 * px[2] as u32) / 1000;
            luma < INK_BELOW as u32
        })
        .collect();
    let at = |x: isize, y: isize| -> bool {
        x >= 0 && y >= 0 && (x as usize) < width && (y as usize) < height && dark[y as usize * width + x as usize]
    };
    let mut ink = 0usize;
    for y in 0..height as isize {
        for x in 0..width as isize {
            if !at(x, y) {
                continue;
            }
            let touching = (-1..=1).any(|dy| (-1..=1).any(|dx| (dx, dy) != (0, 0) && at(x + dx, y + dy)));
            ink += usize::from(touching);
        }
    }
    ink as f64 * 100.0 / (width * height) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(width: usize, height: usize, dark: &[(usize, usize)], background: u8) -> Vec<u8> {
        let mut rgb = vec![background; width * height * 3];
        for &(x, y) in dark {
            rgb[(y * width + x) * 3..(y * width + x) * 3 + 3].copy_from_slice(&[20, 20, 20]);
        }
        rgb
    }

    #[test]
    fn lone_specks_and_paper_tone_are_not_ink() {
        // Paper tone (gray 225) and three specks far apart.
        let specks = page(100, 100, &[(10, 10), (50, 50), (90, 20)], 225);
        assert_eq!(ink_percent(&specks, 100, 100), 0.0);
        // A stroke of 20 pixels is ink, every pixel of it.
        let stroke: Vec<(usize, usize)> = (10..30).map(|x| (x, 40)).collect();
        assert_eq!(ink_percent(&page(100, 100, &stroke, 255), 100, 100), 0.2);
        // Two specks side by side touch: a mark, not noise.
        assert_eq!(ink_percent(&page(10, 10, &[(3, 3), (4, 4)], 255), 10, 10), 2.0);
        // A mid-gray fill is ink all over.
        assert_eq!(ink_percent(&page(4, 4, &[], 120), 4, 4), 100.0);
    }
}

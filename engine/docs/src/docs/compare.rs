//! `POST /v1/pdf/compare`: what changed between two versions of a document, in words and
//! in looks.
//!
//! The words of each document, in pdfium's reading order, are compared as one sequence
//! (so text that moved to the next page is not a change), and each run of deleted,
//! inserted or replaced words is one change with its page and boxes. The pages are also
//! rendered in gray, page 1 against page 1 and so on, and the areas where they differ
//! are listed: a moved picture or a changed drawing shows there even with no word
//! changed. The answer is JSON, or the pages side by side with the changes highlighted
//! (deleted words in red on the original, inserted ones in green on the revision, areas
//! that look different framed in orange on both).

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, OutFile, OutputMode, Reply, derived_name};
use crate::pdf::assemble::{Assembler, Carry};
use crate::pdf::impose::{self, Draw, Sheet};
use crate::pdf::pdfium::{self, PageLayout, RENDERING_PRICE_RULE, RenderSource, rendering_price};
use crate::pdf::stamp::num;
use crate::pdf::words::{Word, words_of};
use crate::pdf::{self, Rect};
use crate::price::Price;

/// Resolution the pages are compared at.
pub const DPI: u32 = 36;
/// Gray levels two pixels may differ by and still look the same (anti-aliasing, a font
/// rendered a shade apart).
const TOLERANCE: u8 = 48;
/// Side of the square cells differing pixels are grouped in, in pixels (about 16 pt).
const CELL: usize = 8;
/// Most pages compared by their looks (the originals are held rendered meanwhile).
pub const MAX_VISUAL_PAGES: u32 = 500;
/// Most changes listed; the counts cover them all.
pub const MAX_CHANGES: usize = 10_000;
/// Most areas listed a page.
const MAX_REGIONS: usize = 50;
/// How long the word comparison may search for the smallest difference, in seconds;
/// past it the difference found is coarser (larger changes), never wrong.
const DIFF_SECONDS: u64 = 20;

/// Request of `/v1/pdf/compare`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CompareInput {
    /// The original PDF.
    pub original: FileInput,
    /// The revised PDF.
    pub revised: FileInput,
    /// `json` (the changes as JSON, the default) or `pdf` (the pages side by side, the changes highlighted).
    #[serde(default)]
    pub format: CompareFormat,
    /// Also compare how the pages look, rendered (true): finds changes that are not words (pictures, drawings, colours).
    #[serde(default = "yes")]
    pub visual: bool,
    /// Compare words without their case (false).
    #[serde(default)]
    pub ignore_case: bool,
    /// How to deliver the PDF (format=pdf).
    #[serde(default)]
    pub output: OutputMode,
}

fn yes() -> bool {
    true
}

/// What the comparison answers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompareFormat {
    /// The changes as JSON.
    #[default]
    Json,
    /// A PDF of the pages side by side with the changes highlighted (a summary in the report).
    Pdf,
}

/// The differences.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct CompareReport {
    /// Whether nothing differs: no word changed and, when compared, no page looks different.
    pub identical: bool,
    /// Pages of the original.
    pub original_pages: u32,
    /// Pages of the revision.
    pub revised_pages: u32,
    /// Words of the original.
    pub original_words: u64,
    /// Words of the revision.
    pub revised_words: u64,
    /// Words of the original that are not in the revision.
    pub words_deleted: u64,
    /// Words of the revision that are not in the original.
    pub words_inserted: u64,
    /// Each change, in reading order (at most 10,000; the counts cover them all).
    pub changes: Vec<Change>,
    /// Whether there were more changes than listed.
    pub changes_truncated: bool,
    /// Page by page, how the rendered pages differ (empty when visual=false); at most 500 pages.
    pub visual: Vec<PageLook>,
}

/// One run of deleted, inserted or replaced words.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Change {
    /// `deleted`, `inserted` or `replaced`.
    pub kind: ChangeKind,
    /// The words as they were (absent for an insertion).
    pub original: Option<Words>,
    /// The words as they are (absent for a deletion).
    pub revised: Option<Words>,
}

/// What a change did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// Words removed.
    Deleted,
    /// Words added.
    Inserted,
    /// Words replaced by others.
    Replaced,
}

/// Words of one document in a change.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct Words {
    /// The words, separated by single spaces.
    pub text: String,
    /// The page of the first word (1-based).
    pub page: u32,
    /// Where they are: one box per line, `[left, top, right, bottom]` in points from the visible page's top left corner, each with its page.
    pub boxes: Vec<WordBox>,
}

/// A box on a page.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct WordBox {
    /// 1-based page number.
    pub page: u32,
    /// `[left, top, right, bottom]` in points from the visible page's top left corner.
    pub box_pt: [f64; 4],
}

/// How one pair of pages differs when rendered.
#[derive(Clone, Debug, Serialize, Deserialize, JsonSchema)]
pub struct PageLook {
    /// 1-based page number (of both documents).
    pub page: u32,
    /// Percent of the page's pixels that differ (100 when the page is in one document only or the sizes differ).
    pub differs_percent: f64,
    /// Areas that look different, `[left, top, right, bottom]` in points from the top left corner (at most 50).
    pub areas: Vec<[f64; 4]>,
}

/// A checked call.
pub struct CompareCall {
    original: RenderSource,
    revised: RenderSource,
    format: CompareFormat,
    visual: bool,
    ignore_case: bool,
    output: OutputMode,
}

/// The route.
pub struct CompareRoute;

impl Route for CompareRoute {
    const HEAVY: bool = true;
    type Input = CompareInput;
    type Prepared = CompareCall;
    type Output = CompareReport;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/compare",
        operation: "compare_pdfs",
        family: Family::Docs,
        summary: "What changed between two versions of a PDF",
        description: "Compares an original and a revised PDF. Words are compared across the whole document (text \
            that moved to another page is not a change): each run of deleted, inserted or replaced words is listed \
            with its page and boxes. With visual=true (the default) the pages are also rendered and compared page by \
            page, giving the share of each page that looks different and where, which catches pictures, drawings \
            and colours. format=json answers the changes; format=pdf answers the pages side by side with deleted \
            words in red, inserted words in green and areas that look different framed in orange (a summary in the \
            report: Paperchain-Report header for output=file, `report` field for base64 and url).",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::JsonOrFile,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: CompareInput, ctx: &Context) -> Result<CompareCall, EngineError> {
        // Found before the files are read, so a server without the renderer charges nothing.
        pdfium::ensure_library().await?;
        let original = RenderSource::load(&input.original, "/original", ctx).await?;
        let revised = RenderSource::load(&input.revised, "/revised", ctx).await?;
        Ok(CompareCall {
            original,
            revised,
            format: input.format,
            visual: input.visual,
            ignore_case: input.ignore_case,
            output: input.output,
        })
    }

    fn quote(call: &CompareCall) -> Price {
        rendering_price(call.original.pdf.page_count + call.revised.pdf.page_count)
    }

    async fn run(call: CompareCall, ctx: &Context) -> Result<Reply<CompareReport>, EngineError> {
        let progress = ctx.progress.clone();
        let limits = ctx.limits;
        blocking(move || {
            let CompareCall { original, revised, format, visual, ignore_case, output } = call;
            let (a_pages, b_pages) = (original.pdf.page_count, revised.pdf.page_count);
            let total = (a_pages + b_pages) as u64 * if visual { 2 } else { 1 };
            let mut done = 0u64;
            let mut layouts = |source: &RenderSource, field: &str| -> Result<Vec<PageLayout>, EngineError> {
                let pages: Vec<u32> = (1..=source.pdf.page_count).collect();
                let read = pdfium::page_layouts(
                    &source.bytes,
                    source.password.as_deref(),
                    &pages,
                    field,
                    &crate::context::NoProgress,
                )?;
                done += pages.len() as u64;
                progress.advance("pages", done, total);
                Ok(read)
            };
            let a_layouts = layouts(&original, "/original")?;
            let b_layouts = layouts(&revised, "/revised")?;
            let a_words = words_of(&a_layouts);
            let b_words = words_of(&b_layouts);
            let (changes, deleted, inserted) = diff(&a_words, &b_words, ignore_case);
            let looks = if visual { looks(&original, &revised, &*progress, done, total)? } else { Vec::new() };
            let identical = deleted == 0 && inserted == 0 && looks.iter().all(|l| l.differs_percent == 0.0);
            let changes_truncated = changes.len() > MAX_CHANGES;
            let report = CompareReport {
                identical,
                original_pages: a_pages,
                revised_pages: b_pages,
                original_words: a_words.len() as u64,
                revised_words: b_words.len() as u64,
                words_deleted: deleted,
                words_inserted: inserted,
                changes: changes.into_iter().take(MAX_CHANGES).collect(),
                changes_truncated,
                visual: looks,
            };
            if format == CompareFormat::Json {
                return Ok(Reply::Json(report));
            }
            let sizes = (page_sizes(&a_layouts), page_sizes(&b_layouts));
            let bytes = side_by_side(&original, &revised, &report, sizes, &limits)?;
            let summary = serde_json::json!({
                "identical": report.identical,
                "words_deleted": report.words_deleted,
                "words_inserted": report.words_inserted,
                "changes": report.changes.len(),
                "pages_that_look_different": report.visual.iter().filter(|l| l.differs_percent > 0.0).count(),
            });
            let name = derived_name(&original.pdf.filename, "compared", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, bytes), output).with_report(summary)))
        })
        .await
    }
}

/// The changes between two word sequences, and the words deleted and inserted.
fn diff(a: &[Word], b: &[Word], ignore_case: bool) -> (Vec<Change>, u64, u64) {
    let key = |w: &Word| if ignore_case { w.text.to_lowercase() } else { w.text.clone() };
    let ak: Vec<String> = a.iter().map(key).collect();
    let bk: Vec<String> = b.iter().map(key).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(DIFF_SECONDS);
    let ops =
        similar::capture_diff_deadline(similar::Algorithm::Myers, &ak, 0..ak.len(), &bk, 0..bk.len(), Some(deadline));
    let (mut deleted, mut inserted) = (0u64, 0u64);
    let mut changes = Vec::new();
    for op in ops {
        let (kind, old, new) = match op {
            similar::DiffOp::Equal { .. } => continue,
            similar::DiffOp::Delete { old_index, old_len, .. } => {
                (ChangeKind::Deleted, Some(&a[old_index..old_index + old_len]), None)
            }
            similar::DiffOp::Insert { new_index, new_len, .. } => {
                (ChangeKind::Inserted, None, Some(&b[new_index..new_index + new_len]))
            }
            similar::DiffOp::Replace { old_index, old_len, new_index, new_len } => (
                ChangeKind::Replaced,
                Some(&a[old_index..old_index + old_len]),
                Some(&b[new_index..new_index + new_len]),
            ),
        };
        deleted += old.map_or(0, |w| w.len() as u64);
        inserted += new.map_or(0, |w| w.len() as u64);
        if changes.len() <= MAX_CHANGES {
            changes.push(Change { kind, original: old.map(words), revised: new.map(words) });
        }
    }
    (changes, deleted, inserted)
}

/// A run of words as reported: their text, first page and one box a line.
fn words(run: &[Word]) -> Words {
    let mut boxes: Vec<WordBox> = Vec::new();
    for w in run {
        let [x0, y0, x1, y1] = w.area.map(f64::from);
        let same_line = boxes.last_mut().filter(|b| {
            let [_, top, _, bottom] = b.box_pt;
            b.page == w.page && y0 < bottom && y1 > top && x0 >= b.box_pt[0]
        });
        match same_line {
            Some(b) => {
                b.box_pt = [b.box_pt[0].min(x0), b.box_pt[1].min(y0), b.box_pt[2].max(x1), b.box_pt[3].max(y1)];
            }
            None => boxes.push(WordBox { page: w.page, box_pt: [x0, y0, x1, y1] }),
        }
    }
    for b in &mut boxes {
        b.box_pt = b.box_pt.map(|v| (v * 100.0).round() / 100.0);
    }
    let text: Vec<&str> = run.iter().map(|w| w.text.as_str()).collect();
    Words { text: text.join(" "), page: run[0].page, boxes }
}

/// Renders both documents page by page in gray and compares them.
fn looks(
    original: &RenderSource,
    revised: &RenderSource,
    progress: &dyn crate::context::Progress,
    mut done: u64,
    total: u64,
) -> Result<Vec<PageLook>, EngineError> {
    let a_count = original.pdf.page_count.min(MAX_VISUAL_PAGES);
    let b_count = revised.pdf.page_count.min(MAX_VISUAL_PAGES);
    let mut held: HashMap<u32, (usize, usize, Vec<u8>)> = HashMap::new();
    let a_pages: Vec<u32> = (1..=a_count).collect();
    pdfium::render_pages(
        &original.bytes,
        original.password.as_deref(),
        &a_pages,
        DPI,
        "/original",
        "/original",
        |p| {
            held.insert(p.number, (p.width as usize, p.height as usize, crate::ocr::grey_of_rgb(&p.rgb)));
            done += 1;
            progress.advance("pages", done, total);
            Ok(())
        },
    )?;
    let mut looks = Vec::new();
    let b_pages: Vec<u32> = (1..=b_count).collect();
    pdfium::render_pages(&revised.bytes, revised.password.as_deref(), &b_pages, DPI, "/revised", "/revised", |p| {
        let look = match held.remove(&p.number) {
            Some((w, h, a)) if (w, h) == (p.width as usize, p.height as usize) => {
                compare_pixels(p.number, w, h, &a, &crate::ocr::grey_of_rgb(&p.rgb))
            }
            _ => whole(p.number, p.width_pt, p.height_pt),
        };
        looks.push(look);
        done += 1;
        progress.advance("pages", done, total);
        Ok(())
    })?;
    // Pages only the original has.
    let mut rest: Vec<_> = held.into_iter().collect();
    rest.sort_by_key(|(n, _)| *n);
    for (number, (w, h, _)) in rest {
        let pt = 72.0 / DPI as f64;
        looks.push(whole(number, w as f64 * pt, h as f64 * pt));
    }
    Ok(looks)
}

/// A page in one document only, or of another size: all of it differs.
fn whole(page: u32, width_pt: f64, height_pt: f64) -> PageLook {
    PageLook { page, differs_percent: 100.0, areas: vec![[0.0, 0.0, round(width_pt), round(height_pt)]] }
}

fn round(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// How two renderings of one size differ: the share of pixels, and the areas (cells of
/// differing pixels that touch, as boxes).
fn compare_pixels(page: u32, w: usize, h: usize, a: &[u8], b: &[u8]) -> PageLook {
    let (cols, rows) = (w.div_ceil(CELL), h.div_ceil(CELL));
    let mut marked = vec![false; cols * rows];
    let mut differing = 0usize;
    for y in 0..h {
        for x in 0..w {
            if a[y * w + x].abs_diff(b[y * w + x]) > TOLERANCE {
                differing += 1;
                marked[(y / CELL) * cols + x / CELL] = true;
            }
        }
    }
    let pt = 72.0 / DPI as f64;
    let mut areas = Vec::new();
    let mut seen = vec![false; cols * rows];
    for start in 0..marked.len() {
        if !marked[start] || seen[start] {
            continue;
        }
        // Flood fill of touching cells (diagonals included).
        let (mut c0, mut r0, mut c1, mut r1) = (start % cols, start / cols, start % cols, start / cols);
        let mut stack = vec![start];
        seen[start] = true;
        while let Some(i) = stack.pop() {
            let (c, r) = (i % cols, i / cols);
            (c0, r0, c1, r1) = (c0.min(c), r0.min(r), c1.max(c), r1.max(r));
            for dr in -1i64..=1 {
                for dc in -1i64..=1 {
                    let (nc, nr) = (c as i64 + dc, r as i64 + dr);
                    if nc < 0 || nr < 0 || nc >= cols as i64 || nr >= rows as i64 {
                        continue;
                    }
                    let j = nr as usize * cols + nc as usize;
                    if marked[j] && !seen[j] {
                        seen[j] = true;
                        stack.push(j);
                    }
                }
            }
        }
        let px = |cell: usize, limit: usize| ((cell * CELL).min(limit)) as f64 * pt;
        areas.push([px(c0, w), px(r0, h), px(c1 + 1, w), px(r1 + 1, h)].map(round));
    }
    // The largest first.
    let size = |r: &[f64; 4]| (r[2] - r[0]) * (r[3] - r[1]);
    areas.sort_by(|x, y| size(y).total_cmp(&size(x)));
    areas.truncate(MAX_REGIONS);
    let share = differing as f64 * 100.0 / (w * h).max(1) as f64;
    PageLook { page, differs_percent: (share * 1000.0).round() / 1000.0, areas }
}

/// The visible size (width, height) of each page, by number.
type Sizes = HashMap<u32, (f64, f64)>;

/// The visible size of each page, by number.
fn page_sizes(layouts: &[PageLayout]) -> Sizes {
    layouts.iter().map(|l| (l.number, (l.width as f64, l.height as f64))).collect()
}

/// Space around and between the two pages, and the height of the label strip, in points.
const MARGIN: f64 = 18.0;
const LABEL: f64 = 22.0;

/// The pages side by side, the changes drawn over them.
fn side_by_side(
    original: &RenderSource,
    revised: &RenderSource,
    report: &CompareReport,
    (a_sizes, b_sizes): (Sizes, Sizes),
    limits: &crate::context::Limits,
) -> Result<Vec<u8>, EngineError> {
    let (a_count, b_count) = (original.pdf.page_count, revised.pdf.page_count);
    let mut asm = Assembler::new();
    let all = |n: u32| (1..=n).collect::<Vec<u32>>();
    asm.append(&original.pdf.doc, &all(a_count), Carry { outline: false, info: true })?;
    asm.append(&revised.pdf.doc, &all(b_count), Carry { outline: false, info: false })?;
    let doc = asm.finish()?;

    // Marks for each page of each side: (fill colour, top-down boxes, framed).
    let mut marks: HashMap<(bool, u32), String> = HashMap::new();
    let mut mark = |revised_side: bool, page: u32, b: [f64; 4], colour: &str, fill: bool| {
        let entry = marks.entry((revised_side, page)).or_default();
        let op = if fill { "f" } else { "S" };
        entry.push_str(&format!(
            "{colour} {} {} {} {} re {op}\n",
            num(b[0]),
            num(-b[3]),
            num(b[2] - b[0]),
            num(b[3] - b[1])
        ));
    };
    for change in &report.changes {
        for b in change.original.iter().flat_map(|w| &w.boxes) {
            mark(false, b.page, b.box_pt, "1 0.2 0.2 rg", true);
        }
        for b in change.revised.iter().flat_map(|w| &w.boxes) {
            mark(true, b.page, b.box_pt, "0.1 0.8 0.2 rg", true);
        }
    }
    for look in report.visual.iter().filter(|l| l.differs_percent > 0.0 && l.differs_percent < 100.0) {
        for area in &look.areas {
            mark(false, look.page, *area, "1 0.55 0 RG", false);
            mark(true, look.page, *area, "1 0.55 0 RG", false);
        }
    }

    let mut sheets = Vec::new();
    for page in 1..=a_count.max(b_count) {
        let a = (page <= a_count).then(|| a_sizes.get(&page).copied()).flatten();
        let b = (page <= b_count).then(|| b_sizes.get(&page).copied()).flatten();
        let (aw, ah) = a.unwrap_or((0.0, 0.0));
        let (bw, bh) = b.or(a).unwrap_or((0.0, 0.0));
        let (aw, ah) = if a.is_some() { (aw, ah) } else { (bw, bh) };
        let width = MARGIN * 3.0 + aw + bw;
        let height = MARGIN * 2.0 + LABEL + ah.max(bh);
        // Sheets past the largest page a reader takes are drawn smaller.
        let scale = (pdf::paper::MAX_SIDE / width).min(pdf::paper::MAX_SIDE / height).min(1.0);
        let mut sheet = Sheet { size: (width * scale, height * scale), ..Sheet::default() };
        sheet.marks.push_str(&format!("{} 0 0 {} 0 0 cm\n", num(scale), num(scale)));
        for (side, size, x, label) in [
            (false, a.map(|_| (aw, ah)), MARGIN, format!("Original, page {page}")),
            (true, b.map(|_| (bw, bh)), MARGIN * 2.0 + aw, format!("Revised, page {page}")),
        ] {
            let top = height - MARGIN - LABEL;
            sheet.marks.push_str(&impose::label(&label, x, top + 7.0, 11.0));
            let Some((w, h)) = size else {
                sheet.marks.push_str(&impose::label("(no such page)", x, top - 20.0, 10.0));
                continue;
            };
            let at = [scale, 0.0, 0.0, scale, x * scale, (top - h) * scale];
            let number = if side { a_count + page } else { page };
            sheet.draws.push(Draw { page: number, at, clip: None });
            sheet.marks.push_str(&impose::frame(Rect { x0: x, y0: top - h, x1: x + w, y1: top }));
            if let Some(drawn) = marks.get(&(side, page)) {
                // Boxes are top-down from the page's top left: flip onto the page.
                sheet.marks.push_str(&format!("q /Hl gs 1 0 0 1 {} {} cm\n{drawn}Q\n", num(x), num(top)));
            }
        }
        sheets.push(sheet);
    }
    let mut doc = impose::impose(doc, sheets, limits)?;
    pdf::save(&mut doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn word(text: &str, page: u32, x: f32) -> Word {
        Word { text: text.into(), page, area: [x, 100.0, x + 20.0, 110.0] }
    }

    #[test]
    fn words_moved_to_another_page_are_not_a_change() {
        let a = [word("one", 1, 10.0), word("two", 1, 40.0), word("three", 2, 10.0)];
        let b = [word("one", 1, 10.0), word("two", 2, 10.0), word("three", 2, 40.0)];
        let (changes, deleted, inserted) = diff(&a, &b, false);
        assert!(changes.is_empty() && deleted == 0 && inserted == 0);
        let b = [word("One", 1, 10.0), word("2", 1, 40.0), word("three", 2, 10.0), word("four", 2, 40.0)];
        let (changes, deleted, inserted) = diff(&a, &b, true);
        assert_eq!((deleted, inserted), (1, 2));
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].kind, ChangeKind::Replaced);
        assert_eq!(changes[0].original.as_ref().unwrap().text, "two");
        assert_eq!(changes[1].revised.as_ref().unwrap().text, "four");
        // Two words on one line are one box.
        assert_eq!(changes[1].revised.as_ref().unwrap().boxes.len(), 1);
    }

    #[test]
    fn differing_pixels_that_touch_are_one_area() {
        let (w, h) = (64, 64);
        let a = vec![255u8; w * h];
        let mut b = a.clone();
        for y in 10..20 {
            for x in 10..30 {
                b[y * w + x] = 0;
            }
        }
        b[60 * w + 60] = 0;
        // A shade apart is the same.
        b[0] = 230;
        let look = compare_pixels(1, w, h, &a, &b);
        assert_eq!(look.areas.len(), 2);
        assert_eq!(look.areas[0], [16.0, 16.0, 64.0, 48.0]);
        assert!((look.differs_percent - 201.0 * 100.0 / 4096.0).abs() < 0.001);
    }
}

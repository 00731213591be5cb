//! `POST /v1/pdf/redact`: remove text, areas or whole pages from a PDF for good.
//!
//! What to remove is found on the pages as a reader sees them: text (literal or a
//! regular expression) through pdfium's reading of every character, invisible ones
//! included, and areas or pages as given. A page with anything to remove is rebuilt
//! from its rendering: the page is rendered, the boxes painted over in the fill colour,
//! and the page's content, resources and annotations replaced by that picture, so nothing
//! that was under a box survives in any form (text, the glyphs of a partly covered line,
//! vector drawings, image pixels, form values, hidden layers). The words outside the boxes
//! are put back as invisible text over the picture, so the page stays searchable and
//! selectable (in Tesseract's glyph-less font, whose codes are the characters' own). Pages with nothing to remove are not touched.
//!
//! Around the pages: the form fields of rebuilt pages go, the tag structure goes (its
//! alternate texts could repeat what was removed), annotations and form fields elsewhere
//! whose text or value holds what was found go, and, with `metadata`, the text found is
//! replaced in the document information and bookmark titles, and XMP metadata holding it
//! is dropped. The file is written anew, so no earlier revision remains.
//!
//! What this module must not do: leave a found string anywhere in the file's pages, or
//! paint a box without removing what is under it.

use std::collections::{BTreeSet, HashMap, HashSet};

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{Family, FreePool, Produces, Route, RouteInfo};
use crate::context::{Context, blocking};
use crate::docs::rasterize::{image_page, jpeg};
use crate::error::EngineError;
use crate::input::FileInput;
use crate::output::{FileSet, NoJson, OutFile, OutputMode, Reply, derived_name};
use crate::pages::PageSelection;
use crate::pdf;
use crate::pdf::pdfium::{self, PageLayout, RENDERING_PRICE_RULE, RenderSource, RgbPage, rendering_price};
use crate::pdf::stamp::{self, num};
use crate::pdf::words::{Word, words_of};
use crate::price::Price;

/// Most strings and patterns, and the longest of each.
const MAX_TEXTS: usize = 100;
const MAX_TEXT_CHARS: usize = 200;
const MAX_PATTERNS: usize = 20;
const MAX_PATTERN_CHARS: usize = 500;
/// Most areas one call takes.
const MAX_AREAS: usize = 1_000;
/// Resolution of rebuilt pages when none is given, and the range allowed.
pub const DEFAULT_DPI: u32 = 200;
const DPI_RANGE: std::ops::RangeInclusive<i64> = 72..=600;
/// Points added around each found run of text, so its glyphs' edges are covered too.
const PAD: f64 = 1.0;
/// What replaces found text in the document information and bookmark titles.
const REPLACEMENT: &str = "[redacted]";

/// Request of `/v1/pdf/redact`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactInput {
    /// The PDF.
    pub file: FileInput,
    /// Text to remove wherever it appears: up to 100 strings of 1 to 200 characters, not only spaces; white space matches any white space.
    #[serde(default)]
    #[schemars(length(max = 100), inner(length(min = 1, max = 200), regex(pattern = r"\S")))]
    pub text: Vec<String>,
    /// Regular expressions to remove wherever they match (up to 20, e.g. `\d{3}-\d{2}-\d{4}`); `(?i)` makes one ignore case.
    #[serde(default)]
    #[schemars(
        length(max = 20),
        extend("items" = { "type": "string", "minLength": 1, "maxLength": 500, "format": "rust-regex" })
    )]
    pub patterns: Vec<String>,
    /// Match `text` with its case (false: any case).
    #[serde(default)]
    pub match_case: bool,
    /// Areas to remove (up to 1,000): `{"page": 1, "box_pt": [left, top, right, bottom]}`, points from the visible page's top left corner.
    #[serde(default)]
    #[schemars(length(max = 1000))]
    pub areas: Vec<RedactArea>,
    /// Pages to remove whole, left as a page of the fill colour (`"3,5-6"`).
    #[serde(default)]
    #[schemars(regex(pattern = crate::pages::PATTERN))]
    pub pages: Option<String>,
    /// Colour of the boxes, `#rrggbb` (black).
    #[serde(default)]
    #[schemars(regex(pattern = r"^#[0-9A-Fa-f]{6}$"))]
    pub fill: Option<String>,
    /// Also replace the text found in the document information and bookmark titles, and drop XMP metadata that holds it (true).
    #[serde(default = "yes")]
    pub metadata: bool,
    /// Resolution the redacted pages are rebuilt at, 72 to 600 dpi (200).
    #[serde(default)]
    #[schemars(range(min = 72, max = 600))]
    pub dpi: Option<i64>,
    /// How to deliver the PDF.
    #[serde(default)]
    pub output: OutputMode,
}

fn yes() -> bool {
    true
}

/// An area to remove.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RedactArea {
    /// 1-based page number.
    pub page: u32,
    /// `[left, top, right, bottom]` in points from the visible page's top left corner.
    pub box_pt: [f64; 4],
}

/// What was removed.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RedactReport {
    /// Matches of `text` and `patterns` found, on all pages.
    pub matches: u32,
    /// Entries of `text` and `patterns` found nowhere.
    pub not_found: Vec<String>,
    /// Each page rebuilt, with what was removed from it.
    pub pages: Vec<RedactedPage>,
    /// Form fields removed with their page, or whose value held found text.
    pub form_fields_removed: u32,
    /// Annotations on pages not rebuilt whose text (comment, title, field value) held found text, removed.
    pub annotations_removed: u32,
    /// Whether the tag structure was removed.
    pub tags_removed: bool,
    /// Document information entries in which found text was replaced.
    pub info_fields: Vec<String>,
    /// Bookmark titles in which found text was replaced.
    pub bookmarks: u32,
    /// Whether XMP metadata holding found text was removed.
    pub xmp_removed: bool,
}

/// One page rebuilt.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct RedactedPage {
    /// 1-based page number.
    pub page: u32,
    /// The boxes painted, `[left, top, right, bottom]` in points from the visible page's top left corner.
    pub boxes: Vec<[f64; 4]>,
    /// Matches of `text` and `patterns` on it.
    pub matches: u32,
    /// Words under the boxes, removed.
    pub words_removed: u32,
    /// Words kept, put back as invisible text.
    pub words_kept: u32,
    /// Annotations removed (their looks are in the picture when outside the boxes).
    pub annotations_removed: u32,
}

/// A checked call.
pub struct RedactCall {
    source: RenderSource,
    finders: Vec<(String, regex::Regex)>,
    areas: Vec<RedactArea>,
    whole: Vec<u32>,
    fill: [u8; 3],
    metadata: bool,
    dpi: u32,
    output: OutputMode,
}

/// The route.
pub struct RedactRoute;

impl Route for RedactRoute {
    const HEAVY: bool = true;
    type Input = RedactInput;
    type Prepared = RedactCall;
    type Output = NoJson;

    const INFO: RouteInfo = RouteInfo {
        path: "/v1/pdf/redact",
        operation: "redact_pdf",
        family: Family::Docs,
        summary: "Remove text, areas or pages for good (true redaction)",
        description: "Removes what is asked from the file, not just covers it: text (`text`, literal, any case unless \
            match_case; `patterns`, regular expressions), `areas` (boxes on pages) and whole `pages`. Each page with \
            something to remove is rebuilt from its rendering at `dpi` (200) with the boxes painted in `fill` \
            (black): nothing under a box survives, neither text (the rest of a partly covered line included), \
            drawings, image pixels, form values nor hidden layers. The words outside the boxes are put back as \
            invisible text, so the page stays searchable. Other pages are untouched. \
            The form fields of rebuilt pages and the tag structure go, and so do comments and form fields \
            elsewhere whose text or value holds what was found; with metadata=true the text found is \
            replaced in the document information and bookmark titles, and XMP holding it is dropped. A report \
            lists every box per page (Paperchain-Report header for output=file, `report` field for base64 and url).",
        base_price: Price::micros(3_000),
        price_rule: RENDERING_PRICE_RULE,
        free_pool: FreePool::Docs,
        produces: Produces::File,
        open_world: false,
        holds_secrets: false,
        accepts: crate::catalog::accepts::PDF,
    };

    async fn prepare(input: RedactInput, ctx: &Context) -> Result<RedactCall, EngineError> {
        let finders = finders(&input)?;
        if finders.is_empty() && input.areas.is_empty() && input.pages.is_none() {
            return Err(EngineError::invalid_with(
                "inconsistent_fields",
                "/text",
                "/text: say what to remove: `text`, `patterns`, `areas` or `pages`",
            ));
        }
        if input.areas.len() > MAX_AREAS {
            return Err(EngineError::invalid("/areas", format!("/areas: at most {MAX_AREAS} areas")));
        }
        for (i, area) in input.areas.iter().enumerate() {
            let [l, t, r, b] = area.box_pt;
            if !(area.box_pt.iter().all(|v| v.is_finite()) && l < r && t < b) {
                let field = format!("/areas/{i}/box_pt");
                return Err(EngineError::invalid_with(
                    "inconsistent_fields",
                    &field,
                    format!("{field}: give [left, top, right, bottom] with left < right and top < bottom"),
                ));
            }
        }
        let fill = match input.fill.as_deref() {
            None => [0, 0, 0],
            Some(text) => stamp::parse_color(text, "/fill")?.map(|c| (c * 255.0).round() as u8),
        };
        let dpi = match input.dpi {
            None => DEFAULT_DPI,
            Some(d) if DPI_RANGE.contains(&d) => d as u32,
            Some(d) => return Err(EngineError::invalid("/dpi", format!("/dpi: must be from 72 to 600, not {d}"))),
        };
        let selection = input.pages.as_deref().map(|p| PageSelection::parse(p, "/pages")).transpose()?;
        pdfium::ensure_library().await?;
        let source = RenderSource::load(&input.file, "/file", ctx).await?;
        let count = source.pdf.page_count;
        let whole = match selection {
            Some(s) => s.resolve_set(count, "/pages")?,
            None => Vec::new(),
        };
        for (i, area) in input.areas.iter().enumerate() {
            if area.page == 0 || area.page > count {
                let field = format!("/areas/{i}/page");
                return Err(EngineError::invalid_with(
                    "page_out_of_range",
                    &field,
                    format!("{field}: page {} is out of range; the document has {count} pages", area.page),
                ));
            }
        }
        Ok(RedactCall {
            source,
            finders,
            areas: input.areas,
            whole,
            fill,
            metadata: input.metadata,
            dpi,
            output: input.output,
        })
    }

    fn quote(call: &RedactCall) -> Price {
        rendering_price(call.source.pdf.page_count)
    }

    async fn run(call: RedactCall, ctx: &Context) -> Result<Reply<NoJson>, EngineError> {
        let progress = ctx.progress.clone();
        blocking(move || {
            let RedactCall { source, finders, areas, whole, fill, metadata, dpi, output } = call;
            let RenderSource { mut pdf, bytes, password } = source;
            let count = pdf.page_count;
            let all: Vec<u32> = (1..=count).collect();
            let layouts = pdfium::page_layouts(&bytes, password.as_deref(), &all, "/file", &*progress)?;
            let sizes: HashMap<u32, (f64, f64)> =
                layouts.iter().map(|l| (l.number, (l.width as f64, l.height as f64))).collect();

            // The boxes of each page, top-down points.
            let mut boxes: HashMap<u32, Vec<[f64; 4]>> = HashMap::new();
            let mut matches_on: HashMap<u32, u32> = HashMap::new();
            let mut found_any = vec![false; finders.len()];
            let mut found_text = BTreeSet::new();
            for layout in &layouts {
                // The text as drawn, then joined at hyphenated line ends (only the matches
                // across a join are new there).
                let (drawn, joined) = (PageText::of(layout), PageText::joined(layout));
                for (i, (_, re)) in finders.iter().enumerate() {
                    let across = joined.iter().flat_map(|joined| {
                        re.find_iter(&joined.text)
                            .filter(|m| joined.crosses_join(m.start(), m.end()))
                            .map(move |m| (joined, m))
                    });
                    let matches = re.find_iter(&drawn.text).map(|m| (&drawn, m)).chain(across);
                    for (text, m) in matches.filter(|(_, m)| !m.is_empty()) {
                        let runs = text.boxes(layout, m.start(), m.end());
                        if runs.is_empty() {
                            continue;
                        }
                        found_any[i] = true;
                        found_text.insert(m.as_str().to_string());
                        *matches_on.entry(layout.number).or_default() += 1;
                        boxes.entry(layout.number).or_default().extend(runs);
                    }
                }
            }
            for area in &areas {
                boxes.entry(area.page).or_default().push(area.box_pt);
            }
            for &page in &whole {
                let (w, h) = sizes.get(&page).copied().unwrap_or((0.0, 0.0));
                boxes.entry(page).or_default().push([0.0, 0.0, w, h]);
            }

            let mut words: HashMap<u32, Vec<Word>> = HashMap::new();
            for word in words_of(&layouts) {
                words.entry(word.page).or_default().push(word);
            }
            let mut report_pages = Vec::new();
            let mut rebuilt: Vec<u32> = boxes.keys().copied().collect();
            rebuilt.sort_unstable();
            let page_ids: Vec<ObjectId> = pdf.doc.page_iter().collect();
            if page_ids.len() as u32 != count {
                return Err(EngineError::internal("the page count changed while redacting"));
            }
            let font = invisible_font(&mut pdf.doc);
            let mut removed_annots: HashSet<ObjectId> = HashSet::new();
            // Each page is rebuilt as it is rendered: one rendering held at a time.
            pdfium::render_pages(&bytes, password.as_deref(), &rebuilt, dpi, "/file", "/dpi", |mut page| {
                let number = page.number;
                let page_boxes = &boxes[&number];
                paint(&mut page, page_boxes, fill);
                let (kept, gone): (Vec<&Word>, Vec<&Word>) = words
                    .get(&number)
                    .into_iter()
                    .flatten()
                    .partition(|w| !page_boxes.iter().any(|b| overlaps(inner(w.area.map(f64::from)), *b)));
                let annots = rebuild_page(&mut pdf.doc, page_ids[number as usize - 1], &page, &kept, font)?;
                let annotations_removed = annots.len() as u32;
                removed_annots.extend(annots);
                report_pages.push(RedactedPage {
                    page: number,
                    boxes: page_boxes.iter().map(|b| b.map(|v| (v * 100.0).round() / 100.0)).collect(),
                    matches: matches_on.get(&number).copied().unwrap_or(0),
                    words_removed: gone.len() as u32,
                    words_kept: kept.len() as u32,
                    annotations_removed,
                });
                Ok(())
            })?;

            let mut report = RedactReport {
                matches: matches_on.values().sum(),
                not_found: finders
                    .iter()
                    .zip(&found_any)
                    .filter(|(_, found)| !**found)
                    .map(|((asked, _), _)| asked.clone())
                    .collect(),
                pages: report_pages,
                form_fields_removed: 0,
                annotations_removed: 0,
                tags_removed: false,
                info_fields: Vec::new(),
                bookmarks: 0,
                xmp_removed: false,
            };
            if !rebuilt.is_empty() {
                report.form_fields_removed = remove_fields(&mut pdf.doc, &removed_annots);
                if let Ok(catalog) = pdf.doc.catalog_mut() {
                    report.tags_removed = catalog.remove(b"StructTreeRoot").is_some();
                    catalog.remove(b"MarkInfo");
                }
            }
            if !found_text.is_empty() {
                // Comments and field values elsewhere are not page text, but they are in the file.
                let gone = holding_annotations(&pdf.doc, &found_text);
                report.annotations_removed = gone.len() as u32;
                report.form_fields_removed += remove_fields(&mut pdf.doc, &gone);
                drop_annotations(&mut pdf.doc, &gone);
            }
            if metadata && !found_text.is_empty() {
                scrub_metadata(&mut pdf.doc, &found_text, &mut report);
            }
            pdf.doc.prune_objects();
            let out = pdf::save(&mut pdf.doc)?;
            let report = serde_json::to_value(&report).map_err(|e| EngineError::internal(format!("report: {e}")))?;
            let name = derived_name(&pdf.filename, "redacted", "pdf");
            Ok(Reply::Files(FileSet::single(OutFile::pdf(name, out), output).with_report(report)))
        })
        .await
    }
}

/// The searches asked for: each `text` entry as a literal, each pattern as given.
fn finders(input: &RedactInput) -> Result<Vec<(String, regex::Regex)>, EngineError> {
    if input.text.len() > MAX_TEXTS {
        return Err(EngineError::invalid("/text", format!("/text: at most {MAX_TEXTS} strings")));
    }
    if input.patterns.len() > MAX_PATTERNS {
        return Err(EngineError::invalid("/patterns", format!("/patterns: at most {MAX_PATTERNS} patterns")));
    }
    let build = |source: &str, field: &str| {
        regex::RegexBuilder::new(source)
            .size_limit(1 << 20)
            .dfa_size_limit(1 << 22)
            .build()
            .map_err(|e| EngineError::invalid(field, format!("{field}: not a regular expression we can use: {e}")))
    };
    let mut out = Vec::new();
    for (i, text) in input.text.iter().enumerate() {
        let field = format!("/text/{i}");
        let squeezed = text.split_whitespace().collect::<Vec<_>>().join(" ");
        if squeezed.is_empty() || text.chars().count() > MAX_TEXT_CHARS {
            return Err(EngineError::invalid(&field, format!("{field}: give 1 to {MAX_TEXT_CHARS} characters")));
        }
        let flags = if input.match_case { "" } else { "(?i)" };
        out.push((text.clone(), build(&format!("{flags}{}", regex::escape(&squeezed)), &field)?));
    }
    for (i, pattern) in input.patterns.iter().enumerate() {
        let field = format!("/patterns/{i}");
        if pattern.is_empty() || pattern.chars().count() > MAX_PATTERN_CHARS {
            return Err(EngineError::invalid(&field, format!("{field}: give 1 to {MAX_PATTERN_CHARS} characters")));
        }
        // A pattern that can match empty text removes only what it matches that is not empty.
        out.push((pattern.clone(), build(pattern, &field)?));
    }
    Ok(out)
}

/// A page's text with each run of white space as one space, and the glyph of each byte.
struct PageText {
    text: String,
    /// The glyph (index into the layout's glyphs) each byte of `text` comes from; none for spaces.
    glyph: Vec<Option<usize>>,
    /// Where a word hyphenated at the end of a line was joined ([`PageText::joined`]): the
    /// byte of `text` after the join, and the hyphen's glyph, which a match across the join
    /// removes too.
    joins: Vec<(usize, usize)>,
}

/// Characters a word is hyphenated with at the end of a line (pdfium reads a hyphen it
/// takes for a line-end one as U+0002).
fn is_hyphen(ch: char) -> bool {
    matches!(ch, '-' | '\u{2}' | '\u{ad}' | '\u{2010}')
}

impl PageText {
    /// The page's text as drawn.
    fn of(layout: &PageLayout) -> PageText {
        PageText::read(layout, false)
    }

    /// The page's text with each word hyphenated at the end of a line joined again ("Abbil-"
    /// then "dung" on the next line reads "Abbildung"), so a search finds it as a reader does;
    /// none when no line ends so.
    fn joined(layout: &PageLayout) -> Option<PageText> {
        Some(PageText::read(layout, true)).filter(|joined| !joined.joins.is_empty())
    }

    fn read(layout: &PageLayout, join: bool) -> PageText {
        let glyphs = &layout.glyphs;
        let mut text = String::new();
        let mut glyph = Vec::new();
        let mut joins = Vec::new();
        let mut i = 0;
        while i < glyphs.len() {
            let g = &glyphs[i];
            if join && is_hyphen(g.ch) && text.chars().last().is_some_and(char::is_alphanumeric) {
                // A hyphen, then white space with a line break, then a letter: joined.
                let after = (i + 1..glyphs.len()).find(|&j| !glyphs[j].ch.is_whitespace());
                let breaks = glyphs[i + 1..after.unwrap_or(glyphs.len())].iter().any(|w| matches!(w.ch, '\n' | '\r'));
                if let Some(next) = after.filter(|&j| (breaks || g.ch == '\u{2}') && glyphs[j].ch.is_alphabetic()) {
                    joins.push((text.len(), i));
                    i = next;
                    continue;
                }
            }
            i += 1;
            if g.ch.is_whitespace() {
                if !text.is_empty() && !text.ends_with(' ') {
                    text.push(' ');
                    glyph.push(None);
                }
                continue;
            }
            let before = text.len();
            text.push(g.ch);
            glyph.extend(std::iter::repeat_n(Some(i - 1), text.len() - before));
        }
        PageText { text, glyph, joins }
    }

    /// The hyphens of the joined line ends bytes `start..end` run across.
    fn hyphens_within(&self, start: usize, end: usize) -> impl Iterator<Item = &usize> {
        self.joins.iter().filter(move |&&(at, _)| start < at && at < end).map(|(_, hyphen)| hyphen)
    }

    /// Whether bytes `start..end` run across a joined line end.
    fn crosses_join(&self, start: usize, end: usize) -> bool {
        self.hyphens_within(start, end).next().is_some()
    }

    /// The boxes (one a line, padded) of the drawn glyphs of bytes `start..end`.
    fn boxes(&self, layout: &PageLayout, start: usize, end: usize) -> Vec<[f64; 4]> {
        let mut seen = HashSet::new();
        let mut runs: Vec<[f64; 4]> = Vec::new();
        for index in self.glyph[start..end].iter().flatten().chain(self.hyphens_within(start, end)) {
            if !seen.insert(*index) {
                continue;
            }
            let g = &layout.glyphs[*index];
            if g.generated {
                continue;
            }
            let b = [g.x0, g.y0, g.x1, g.y1].map(f64::from);
            let mid = (b[1] + b[3]) / 2.0;
            match runs.last_mut().filter(|r| mid >= r[1] && mid <= r[3]) {
                Some(r) => *r = [r[0].min(b[0]), r[1].min(b[1]), r[2].max(b[2]), r[3].max(b[3])],
                None => runs.push(b),
            }
        }
        runs.into_iter().map(|[l, t, r, b]| [l - PAD, t - PAD, r + PAD, b + PAD]).collect()
    }
}

/// A word's box less the padding a redaction box has, so a box that only reaches into the
/// line above or below by its padding (lines set close) does not take that line's words.
fn inner([l, t, r, b]: [f64; 4]) -> [f64; 4] {
    let (x, y) = (PAD.min((r - l) / 4.0), PAD.min((b - t) / 4.0));
    [l + x, t + y, r - x, b - y]
}

fn overlaps(a: [f64; 4], b: [f64; 4]) -> bool {
    a[0] < b[2] && b[0] < a[2] && a[1] < b[3] && b[1] < a[3]
}

/// Paints `boxes` (top-down points) over the rendered page.
fn paint(page: &mut RgbPage, boxes: &[[f64; 4]], fill: [u8; 3]) {
    let (w, h) = (page.width as usize, page.height as usize);
    let sx = w as f64 / page.width_pt;
    let sy = h as f64 / page.height_pt;
    for b in boxes {
        let x0 = ((b[0] * sx).floor().max(0.0) as usize).min(w);
        let x1 = ((b[2] * sx).ceil().max(0.0) as usize).min(w);
        let y0 = ((b[1] * sy).floor().max(0.0) as usize).min(h);
        let y1 = ((b[3] * sy).ceil().max(0.0) as usize).min(h);
        for y in y0..y1 {
            for x in x0..x1 {
                page.rgb[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&fill);
            }
        }
    }
}

/// The font of the invisible words: Tesseract's glyph-less font (every character one
/// empty glyph, its Unicode value as its code, so any script is put back), or the standard
/// Helvetica when the font is not installed (then only Windows-1252 characters are).
fn invisible_font(doc: &mut Document) -> (ObjectId, bool) {
    let program = crate::ocr::tesseract::tessdata_dir(&|name| std::env::var_os(name))
        .and_then(|dir| std::fs::read(dir.join("pdf.ttf")).ok());
    match program {
        Some(program) => (glyphless(doc, program), true),
        None => (helvetica(doc), false),
    }
}

/// A Type 0 font over `program` (Tesseract's `pdf.ttf`): two-byte codes that are UTF-16
/// code units, each drawn with glyph 1 (nothing) half an em wide, read back as themselves.
fn glyphless(doc: &mut Document, program: Vec<u8>) -> ObjectId {
    let length = program.len() as i64;
    let mut file = Stream::new(Dictionary::new(), program);
    file.dict.set("Length1", Object::Integer(length));
    let _ = file.compress();
    let file = doc.add_object(file);
    let mut descriptor = Dictionary::new();
    descriptor.set("Type", Object::Name(b"FontDescriptor".to_vec()));
    descriptor.set("FontName", Object::Name(b"GlyphLessFont".to_vec()));
    descriptor.set("Flags", Object::Integer(5));
    descriptor.set("FontBBox", Object::Array(vec![0.into(), 0.into(), 500.into(), 1000.into()]));
    descriptor.set("ItalicAngle", Object::Integer(0));
    descriptor.set("Ascent", Object::Integer(1000));
    descriptor.set("Descent", Object::Integer(0));
    descriptor.set("CapHeight", Object::Integer(1000));
    descriptor.set("StemV", Object::Integer(80));
    descriptor.set("FontFile2", Object::Reference(file));
    let descriptor = doc.add_object(descriptor);
    // Every code to glyph 1.
    let mut map = Stream::new(Dictionary::new(), [0u8, 1].repeat(65_536));
    let _ = map.compress();
    let map = doc.add_object(map);
    let mut info = Dictionary::new();
    info.set("Registry", Object::string_literal("Adobe"));
    info.set("Ordering", Object::string_literal("Identity"));
    info.set("Supplement", Object::Integer(0));
    let mut cid = Dictionary::new();
    cid.set("Type", Object::Name(b"Font".to_vec()));
    cid.set("Subtype", Object::Name(b"CIDFontType2".to_vec()));
    cid.set("BaseFont", Object::Name(b"GlyphLessFont".to_vec()));
    cid.set("CIDSystemInfo", info);
    cid.set("FontDescriptor", Object::Reference(descriptor));
    cid.set("CIDToGIDMap", Object::Reference(map));
    cid.set("DW", Object::Integer(500));
    let cid = doc.add_object(cid);
    let cmap = "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
        /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
        /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
        1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n\
        1 beginbfrange\n<0000> <FFFF> <0000>\nendbfrange\n\
        endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n";
    let to_unicode = doc.add_object(Stream::new(Dictionary::new(), cmap.as_bytes().to_vec()));
    let mut font = Dictionary::new();
    font.set("Type", Object::Name(b"Font".to_vec()));
    font.set("Subtype", Object::Name(b"Type0".to_vec()));
    font.set("BaseFont", Object::Name(b"GlyphLessFont".to_vec()));
    font.set("Encoding", Object::Name(b"Identity-H".to_vec()));
    font.set("DescendantFonts", Object::Array(vec![Object::Reference(cid)]));
    font.set("ToUnicode", Object::Reference(to_unicode));
    doc.add_object(font)
}

/// The standard Helvetica, for the invisible words.
fn helvetica(doc: &mut Document) -> ObjectId {
    doc.add_object(stamp::helvetica())
}

/// Replaces page `id`'s content by the painted rendering and the kept words as invisible
/// text; answers the annotations it had.
fn rebuild_page(
    doc: &mut Document,
    id: ObjectId,
    page: &RgbPage,
    kept: &[&Word],
    (font, glyphless): (ObjectId, bool),
) -> Result<Vec<ObjectId>, EngineError> {
    let picture = image_page(doc, page, jpeg(page)?);
    let h = page.height_pt;
    // Each word stretched over its box, invisible (render mode 3).
    let mut content = String::from("BT 3 Tr\n");
    for word in kept {
        let [x0, y0, x1, y1] = word.area.map(f64::from);
        let size = (y1 - y0).max(1.0);
        // The word's codes, and its width at `size` before stretching.
        let (codes, natural) = if glyphless {
            // Characters of the Basic Multilingual Plane, each one UTF-16 unit.
            let units: Vec<u16> = word.text.chars().filter(|c| (*c as u32) < 0x1_0000).map(|c| c as u16).collect();
            let hex: String = units.iter().map(|u| format!("{u:04X}")).collect();
            (format!("<{hex}>"), units.len() as f64 * size / 2.0)
        } else {
            let text: String = word.text.chars().filter(|c| stamp::win_ansi(&c.to_string(), "").is_ok()).collect();
            let Ok(bytes) = stamp::win_ansi(&text, "") else { continue };
            (stamp::literal(&bytes), stamp::text_width(&bytes, size))
        };
        if natural <= 0.0 {
            continue;
        }
        let scale = ((x1 - x0) / natural * 100.0).clamp(1.0, 1000.0);
        content.push_str(&format!(
            "/F0 {} Tf {} Tz 1 0 0 1 {} {} Tm {codes} Tj\n",
            num(size),
            num(scale),
            num(x0),
            num(h - y1 + size * 0.2),
        ));
    }
    content.push_str("ET\n");
    let mut stream = Stream::new(Dictionary::new(), content.into_bytes());
    let _ = stream.compress();
    let contents = doc.add_object(stream);

    let annots: Vec<ObjectId> = match doc.get_dictionary(id).ok().and_then(|p| p.get(b"Annots").ok()) {
        Some(object) => match doc.dereference(object) {
            Ok((_, Object::Array(items))) => items.iter().filter_map(|o| o.as_reference().ok()).collect(),
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    let mut resources = picture.resources;
    let mut fonts = Dictionary::new();
    fonts.set("F0", Object::Reference(font));
    resources.set("Font", fonts);
    let media = picture.media_box;
    let dict = doc.get_dictionary_mut(id).map_err(|e| pdf::edit_error("redacting a page", e))?;
    // What the page drew, and what could act or carry text, goes; the picture is the page as seen.
    for key in [
        &b"Annots"[..],
        b"Thumb",
        b"PieceInfo",
        b"StructParents",
        b"AA",
        b"B",
        b"Group",
        b"Metadata",
        b"BleedBox",
        b"TrimBox",
        b"ArtBox",
        b"Tabs",
        b"VP",
        b"SeparationInfo",
    ] {
        dict.remove(key);
    }
    dict.set("MediaBox", media.to_object());
    // Set on the page itself: a crop box or turn inherited from the page tree would apply too.
    dict.set("CropBox", media.to_object());
    dict.set("Rotate", Object::Integer(0));
    dict.set("Resources", resources);
    dict.set("Contents", vec![Object::Reference(picture.contents), Object::Reference(contents)]);
    Ok(annots)
}

/// Removes the form fields whose widgets were among `gone` (and parents left without
/// kids); answers how many terminal fields went.
fn remove_fields(doc: &mut Document, gone: &HashSet<ObjectId>) -> u32 {
    if gone.is_empty() {
        return 0;
    }
    let Some(fields) = doc
        .catalog()
        .ok()
        .and_then(|c| pdf::dict_at(doc, c, b"AcroForm"))
        .and_then(|f| f.get(b"Fields").ok())
        .and_then(|f| doc.dereference(f).ok())
        .and_then(|(_, f)| f.as_array().ok().cloned())
    else {
        return 0;
    };
    let mut removed = 0;
    let kept = prune_fields(doc, fields, gone, &mut removed, 0);
    let form_id = doc.catalog().ok().and_then(|c| c.get(b"AcroForm").ok()).and_then(|f| f.as_reference().ok());
    let form = match form_id {
        Some(id) => doc.get_dictionary_mut(id).ok(),
        None => doc.catalog_mut().ok().and_then(|c| c.get_mut(b"AcroForm").ok()).and_then(|f| f.as_dict_mut().ok()),
    };
    if let Some(form) = form {
        form.set("Fields", kept);
        form.remove(b"XFA");
    }
    removed
}

/// `fields` less those whose widgets are all in `gone`, recursively.
fn prune_fields(
    doc: &mut Document,
    fields: Vec<Object>,
    gone: &HashSet<ObjectId>,
    removed: &mut u32,
    depth: usize,
) -> Vec<Object> {
    let mut kept = Vec::new();
    for field in fields {
        let Ok(id) = field.as_reference() else { continue };
        if gone.contains(&id) {
            *removed += 1;
            continue;
        }
        let kids = doc
            .get_dictionary(id)
            .ok()
            .and_then(|d| d.get(b"Kids").ok())
            .and_then(|k| doc.dereference(k).ok())
            .and_then(|(_, k)| k.as_array().ok().cloned());
        match kids {
            Some(kids) if depth < 32 && !kids.is_empty() => {
                let left = prune_fields(doc, kids, gone, removed, depth + 1);
                if left.is_empty() {
                    continue;
                }
                if let Ok(dict) = doc.get_dictionary_mut(id) {
                    dict.set("Kids", left);
                }
                kept.push(field);
            }
            _ => kept.push(field),
        }
    }
    kept
}

/// The annotations (form widgets included) whose text entries or field value, their own
/// or inherited from their field, hold any of `found`, any case.
fn holding_annotations(doc: &Document, found: &BTreeSet<String>) -> HashSet<ObjectId> {
    let lowered: Vec<String> = found.iter().map(|f| f.to_lowercase()).collect();
    let holds = |dict: &Dictionary| {
        [&b"Contents"[..], b"T", b"TU", b"Subj", b"RC", b"V", b"DV"].iter().any(|key| {
            dict.get(key)
                .ok()
                .and_then(|v| pdf::text_string(doc, v))
                .is_some_and(|t| lowered.iter().any(|f| t.to_lowercase().contains(f.as_str())))
        })
    };
    let mut gone = HashSet::new();
    for page in doc.page_iter() {
        let Some(annots) = doc
            .get_dictionary(page)
            .ok()
            .and_then(|p| p.get(b"Annots").ok())
            .and_then(|a| doc.dereference(a).ok())
            .and_then(|(_, a)| a.as_array().ok())
        else {
            continue;
        };
        for id in annots.iter().filter_map(|a| a.as_reference().ok()) {
            let Ok(annot) = doc.get_dictionary(id) else { continue };
            // The annotation, then the fields it belongs to, up to a few levels.
            let mut current = Some(annot);
            let mut depth = 0;
            while let Some(dict) = current {
                if holds(dict) {
                    gone.insert(id);
                    break;
                }
                depth += 1;
                current = (depth < 8)
                    .then(|| dict.get(b"Parent").ok().and_then(|p| p.as_reference().ok()))
                    .flatten()
                    .and_then(|p| doc.get_dictionary(p).ok());
            }
        }
    }
    gone
}

/// Removes annotations `gone` from every page.
fn drop_annotations(doc: &mut Document, gone: &HashSet<ObjectId>) {
    if gone.is_empty() {
        return;
    }
    let pages: Vec<ObjectId> = doc.page_iter().collect();
    for page in pages {
        let list = match doc.get_dictionary(page).ok().and_then(|p| p.get(b"Annots").ok()) {
            Some(Object::Reference(id)) => Some(*id),
            _ => None,
        };
        let keep = |items: &mut Vec<Object>| items.retain(|a| !a.as_reference().is_ok_and(|id| gone.contains(&id)));
        match list {
            Some(id) => {
                if let Ok(Object::Array(items)) = doc.get_object_mut(id) {
                    keep(items);
                }
            }
            None => {
                if let Ok(Object::Array(items)) = doc.get_dictionary_mut(page).and_then(|p| p.get_mut(b"Annots")) {
                    keep(items);
                }
            }
        }
    }
}

/// Replaces found text in the document information and bookmark titles; drops XMP
/// packets that hold it.
fn scrub_metadata(doc: &mut Document, found: &BTreeSet<String>, report: &mut RedactReport) {
    let lowered: Vec<String> = found.iter().map(|f| f.to_lowercase()).collect();
    // Any case: metadata is often typed differently from the page.
    let finders: Vec<regex::Regex> = found
        .iter()
        .filter_map(|f| regex::RegexBuilder::new(&regex::escape(f)).case_insensitive(true).build().ok())
        .collect();
    let scrub = |text: &str| -> Option<String> {
        let mut out = text.to_string();
        let mut changed = false;
        for re in &finders {
            if re.is_match(&out) {
                out = re.replace_all(&out, REPLACEMENT).into_owned();
                changed = true;
            }
        }
        changed.then_some(out)
    };
    // Document information.
    let info_id = doc.trailer.get(b"Info").ok().and_then(|i| i.as_reference().ok());
    if let Some(info) = info_id.and_then(|id| doc.get_dictionary(id).ok()).cloned() {
        let mut updated = info.clone();
        for (key, value) in info.iter() {
            if let Some(text) = pdf::text_string(doc, value)
                && let Some(clean) = scrub(&text)
            {
                updated.set(key.clone(), pdf::encode_text_string(&clean));
                report.info_fields.push(String::from_utf8_lossy(key).into_owned());
            }
        }
        if let Some(id) = info_id {
            doc.objects.insert(id, Object::Dictionary(updated));
        }
    }
    // Bookmark titles.
    let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
    for id in ids {
        let title = match doc.get_dictionary(id) {
            Ok(d) if d.has(b"Title") && (d.has(b"Dest") || d.has(b"A") || d.has(b"Parent")) => {
                d.get(b"Title").ok().and_then(|t| pdf::text_string(doc, t))
            }
            _ => None,
        };
        if let Some(clean) = title.as_deref().and_then(scrub)
            && let Ok(d) = doc.get_dictionary_mut(id)
        {
            d.set("Title", pdf::encode_text_string(&clean));
            report.bookmarks += 1;
        }
    }
    // XMP packets: any holding found text (in any case) goes.
    let mut holders = Vec::new();
    for (id, object) in &doc.objects {
        if let Object::Stream(stream) = object
            && stream.dict.get(b"Type").and_then(Object::as_name).ok() == Some(&b"Metadata"[..])
        {
            let content = stream.decompressed_content().unwrap_or_else(|_| stream.content.clone());
            let text = String::from_utf8_lossy(&content).to_lowercase();
            if lowered.iter().any(|f| text.contains(f.as_str())) {
                holders.push(*id);
            }
        }
    }
    for id in holders {
        doc.objects.remove(&id);
        report.xmp_removed = true;
    }
    if report.xmp_removed {
        // References to a removed packet would dangle.
        let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
        for id in ids {
            let dangling = matches!(
                doc.get_dictionary(id).ok().and_then(|d| d.get(b"Metadata").ok()),
                Some(Object::Reference(r)) if !doc.objects.contains_key(r)
            );
            if dangling && let Ok(d) = doc.get_dictionary_mut(id) {
                d.remove(b"Metadata");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_searches_that_cannot_work() {
        let input = |text: Vec<&str>, patterns: Vec<&str>| RedactInput {
            file: serde_json::from_value(serde_json::json!({ "data": "JVBERi0=" })).unwrap(),
            text: text.into_iter().map(String::from).collect(),
            patterns: patterns.into_iter().map(String::from).collect(),
            match_case: false,
            areas: Vec::new(),
            pages: None,
            fill: None,
            metadata: true,
            dpi: None,
            output: OutputMode::default(),
        };
        assert_eq!(finders(&input(vec!["  "], vec![])).unwrap_err().field.as_deref(), Some("/text/0"));
        assert_eq!(finders(&input(vec![], vec!["(unclosed"])).unwrap_err().field.as_deref(), Some("/patterns/0"));
        let found = finders(&input(vec!["John  Smith"], vec![r"\d{3}-\d{4}"])).unwrap();
        assert!(found[0].1.is_match("to JOHN SMITH."));
        assert!(found[1].1.is_match("call 555-1234"));
    }
}

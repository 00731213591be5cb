//! PDF to Markdown: pdfium gives the characters with their boxes and fonts
//! (`pdf::pdfium::page_layouts`); the layout analysis here is ours.
//!
//! 1. **Segments**: characters become runs of text on one baseline; a gap wider than
//!    [`SEGMENT_GAP_EMS`] font sizes starts a new segment (a column gutter or a table cell).
//! 2. **Running heads**: segments in the top or bottom margin band whose text, digits
//!    aside, repeats on other pages, and lone page numbers there, are left out.
//! 3. **Reading order**: segments are grouped into bands of overlapping height; runs of
//!    bands that share an empty vertical strip with text on both sides are columns, read
//!    left column first (recursively, so a column may hold columns).
//! 4. **Blocks**: lines join into paragraphs while the spacing, size and indentation
//!    agree; a paragraph is a heading when its size stands above the body text's (or it is
//!    a short bold line over regular body text), a list item when it starts with a bullet
//!    or a number, code when its font is fixed-pitch. Words hyphenated across lines are
//!    joined. Pictures are placed where they stand.

use crate::error::EngineError;
use crate::markdown::{Block, Document, Inline, Style};
use crate::pdf::pdfium::{self, Area, Glyph, PageLayout};

/// A gap between characters wider than this many font sizes splits a line into segments.
pub const SEGMENT_GAP_EMS: f32 = 1.5;
/// The share of the page's height at its top and at its bottom where running heads live.
const MARGIN_BAND: f32 = 0.09;
/// Most segments a page may have before its order is simply top to bottom (a page of tens
/// of thousands of scattered characters is a drawing, not prose).
const MAX_SEGMENTS: usize = 20_000;
/// How deep columns may nest.
const MAX_COLUMN_DEPTH: u32 = 4;

/// A PDF read for Markdown.
pub struct PdfMarkdown {
    /// The document.
    pub document: Document,
    /// Pages with no text at all (scans and drawings: they need OCR).
    pub pages_without_text: Vec<u32>,
}

/// Reads `pages` (1-based) of the PDF in `bytes`; errors name `field`.
pub fn read(bytes: &[u8], password: Option<&str>, pages: &[u32], field: &str) -> Result<PdfMarkdown, EngineError> {
    let layouts = pdfium::page_layouts(bytes, password, pages, field)?;
    Ok(from_layouts(&layouts))
}

/// A run of characters on one baseline.
#[derive(Clone, Debug)]
struct Segment {
    page: u32,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    /// The most common font size of its characters.
    size: f32,
    /// Characters with their styles (spaces included).
    chars: Vec<(char, Style)>,
    /// A picture rather than text.
    image: bool,
    /// A table found on the page (rows of escaped cells), standing in for its text.
    table: Option<Vec<Vec<String>>>,
}

impl Segment {
    fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| *c).collect()
    }

    fn visible_chars(&self) -> impl Iterator<Item = &(char, Style)> {
        self.chars.iter().filter(|(c, _)| !c.is_whitespace())
    }

    fn height(&self) -> f32 {
        self.y1 - self.y0
    }
}

/// Reads laid-out pages into a document.
pub fn from_layouts(layouts: &[PageLayout]) -> PdfMarkdown {
    let mut pages_without_text = Vec::new();
    let mut per_page: Vec<Vec<Segment>> = Vec::with_capacity(layouts.len());
    for layout in layouts {
        let segments = segments_of(layout);
        if !segments.iter().any(|s| !s.image) {
            pages_without_text.push(layout.number);
        }
        per_page.push(segments);
    }
    drop_running_heads(&mut per_page, layouts);
    plain_when_mostly_mono(&mut per_page);
    let body_size = body_size(&per_page);
    let mut lines: Vec<Line> = Vec::new();
    for (segments, layout) in per_page.into_iter().zip(layouts) {
        if pages_without_text.contains(&layout.number) {
            lines.push(Line::no_text(layout.number));
            continue;
        }
        let rtl = is_rtl(&segments.iter().flat_map(|s| s.chars.iter().copied()).collect::<Vec<_>>());
        let ordered = reading_order(segments, layout.width, rtl);
        lines.extend(lines_of(ordered));
    }
    let document = blocks_of(lines, body_size);
    PdfMarkdown { document, pages_without_text }
}

fn style_of(glyph: &Glyph) -> Style {
    Style { bold: glyph.bold, italic: glyph.italic, strike: false, code: glyph.mono }
}

/// Whether text is mostly right-to-left (Arabic, Hebrew).
fn is_rtl(chars: &[(char, Style)]) -> bool {
    let (rtl, ltr) = chars.iter().fold((0, 0), |(r, l), (c, _)| match direction(*c) {
        Some(true) => (r + 1, l),
        Some(false) => (r, l + 1),
        None => (r, l),
    });
    rtl > ltr
}

/// `Some(true)` for a strong right-to-left character, `Some(false)` for a strong
/// left-to-right one (letters and digits), `None` for spaces and punctuation.
fn direction(c: char) -> Option<bool> {
    match c as u32 {
        0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF => Some(true),
        _ if c.is_alphanumeric() => Some(false),
        _ => None,
    }
}

/// Presentation forms (Arabic contextual shapes, Latin ligatures such as `ﬁ`) as the
/// letters they stand for.
fn plain_letters(c: char, mut each: impl FnMut(char)) {
    use unicode_normalization::UnicodeNormalization;
    if matches!(c as u32, 0xFB00..=0xFDFF | 0xFE70..=0xFEFF) {
        for d in std::iter::once(c).nfkc() {
            each(d);
        }
    } else {
        each(c);
    }
}

fn is_alef(c: char) -> bool {
    matches!(c, '\u{0622}' | '\u{0623}' | '\u{0625}' | '\u{0627}')
}

/// A character of a line, before it is cut into segments.
#[derive(Clone, Copy)]
struct Placed {
    c: char,
    style: Style,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    size: f32,
    /// A space (drawn, generated or inferred): it has no box of its own.
    space: bool,
}

/// Characters to segments. pdfium gives the characters of a line in logical order (right
/// to left text already reversed, runs of numbers and Latin inside it kept), with `\r\n`
/// between lines; a line is cut into segments where a horizontal gap between neighbouring
/// characters, measured on the page, is wider than [`SEGMENT_GAP_EMS`] font sizes. Each
/// segment keeps pdfium's order.
fn segments_of(layout: &PageLayout) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut line: Vec<Placed> = Vec::new();
    let mut line_box: Option<(f32, f32)> = None;
    for glyph in &layout.glyphs {
        let c = match glyph.ch {
            '\u{0}' | '\u{feff}' | '\u{fffe}' | '\u{2}' => continue,
            '\r' | '\n' => {
                cut_line(std::mem::take(&mut line), layout.number, &mut out);
                line_box = None;
                continue;
            }
            '\u{ad}' => '-',
            '\u{a0}' | '\t' => ' ',
            c if c.is_control() => continue,
            c => c,
        };
        let valid_box = glyph.x1 >= glyph.x0 && glyph.y1 >= glyph.y0 && glyph.x0.is_finite() && glyph.y0.is_finite();
        if c == ' ' || !valid_box {
            if let Some(last) = line.last()
                && !last.space
            {
                line.push(Placed { c: ' ', style: last.style, space: true, ..*last });
            }
            continue;
        }
        let size = glyph.size.max(1.0);
        let center = (glyph.y0 + glyph.y1) / 2.0;
        if let Some((top, bottom)) = line_box
            && !(center > top - size * 0.2 && center < bottom + size * 0.2)
        {
            cut_line(std::mem::take(&mut line), layout.number, &mut out);
            line_box = None;
        }
        line_box = Some(match line_box {
            Some((top, bottom)) => (top.min(glyph.y0), bottom.max(glyph.y1)),
            None => (glyph.y0, glyph.y1),
        });
        let style = style_of(glyph);
        // pdfium writes the lam-alef ligature as alef then lam, both in the ligature's box;
        // Unicode's order is lam then alef.
        if c == '\u{0644}'
            && let Some(last) = line.last_mut()
            && is_alef(last.c)
            && (last.x0 - glyph.x0).abs() < 0.01
            && (last.x1 - glyph.x1).abs() < 0.01
        {
            let alef = last.c;
            last.c = c;
            line.push(Placed { c: alef, ..*line.last().expect("just seen") });
            continue;
        }
        if let Some(last) = line.last() {
            // A visible gap wider than a quarter of the font size is a space pdfium did not mark.
            let gap = (glyph.x0 - last.x1).max(last.x0 - glyph.x1);
            if !last.space && gap > size * 0.25 {
                line.push(Placed { c: ' ', space: true, ..*last });
            }
        }
        plain_letters(c, |d| {
            line.push(Placed {
                c: d,
                style,
                x0: glyph.x0,
                y0: glyph.y0,
                x1: glyph.x1,
                y1: glyph.y1,
                size: glyph.size,
                space: false,
            })
        });
    }
    cut_line(line, layout.number, &mut out);
    out.retain(|s| s.chars.len() > 1 || s.height() < s.size * 2.0);
    for image in &layout.images {
        if is_content_image(image, layout) {
            out.push(Segment {
                page: layout.number,
                x0: image.x0,
                y0: image.y0,
                x1: image.x1,
                y1: image.y1,
                size: 0.0,
                chars: Vec::new(),
                image: true,
                table: None,
            });
        }
    }
    out
}

/// Cuts one line at its wide gaps into segments, in pdfium's order within each.
fn cut_line(line: Vec<Placed>, page: u32, out: &mut Vec<Segment>) {
    let drawn: Vec<&Placed> = line.iter().filter(|p| !p.space).collect();
    if drawn.is_empty() {
        return;
    }
    // The line's columns: drawn boxes sorted left to right, merged across small gaps.
    let mut spans: Vec<(f32, f32)> = drawn.iter().map(|p| (p.x0, p.x1)).collect();
    spans.sort_by(|a, b| a.0.total_cmp(&b.0));
    let gap = SEGMENT_GAP_EMS * drawn.iter().map(|p| p.size).fold(1.0, f32::max);
    let mut clusters: Vec<(f32, f32)> = Vec::new();
    for (x0, x1) in spans {
        match clusters.last_mut() {
            Some(last) if x0 - last.1 <= gap => last.1 = last.1.max(x1),
            _ => clusters.push((x0, x1)),
        }
    }
    let cluster_of = |x: f32| clusters.iter().position(|c| x >= c.0 - 0.01 && x <= c.1 + 0.01).unwrap_or(0);
    let mut parts: Vec<Vec<&Placed>> = vec![Vec::new(); clusters.len()];
    let mut last_cluster = 0;
    for p in &line {
        let cluster = if p.space { last_cluster } else { cluster_of((p.x0 + p.x1) / 2.0) };
        last_cluster = cluster;
        parts[cluster].push(p);
    }
    for part in parts {
        let mut chars: Vec<(char, Style)> = Vec::with_capacity(part.len());
        let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        let mut sizes = Vec::new();
        for p in &part {
            if p.space {
                if chars.last().is_some_and(|(c, _)| *c != ' ') {
                    chars.push((' ', p.style));
                }
                continue;
            }
            chars.push((p.c, p.style));
            x0 = x0.min(p.x0);
            y0 = y0.min(p.y0);
            x1 = x1.max(p.x1);
            y1 = y1.max(p.y1);
            sizes.push(p.size);
        }
        while chars.last().is_some_and(|(c, _)| c.is_whitespace()) {
            chars.pop();
        }
        if chars.is_empty() {
            continue;
        }
        out.push(Segment { page, x0, y0, x1, y1, size: mode(&sizes), chars, image: false, table: None });
    }
}

/// A picture worth a placeholder: not a speck, not a page-filling background.
fn is_content_image(image: &Area, layout: &PageLayout) -> bool {
    let (w, h) = (image.x1 - image.x0, image.y1 - image.y0);
    let page = layout.width * layout.height;
    w >= 24.0 && h >= 24.0 && w * h >= page * 0.01 && w * h < page * 0.9
}

fn mode(values: &[f32]) -> f32 {
    let mut counts: Vec<(i32, usize)> = Vec::new();
    for v in values {
        let key = (v * 2.0).round() as i32;
        match counts.iter_mut().find(|(k, _)| *k == key) {
            Some((_, n)) => *n += 1,
            None => counts.push((key, 1)),
        }
    }
    counts.into_iter().max_by_key(|&(k, n)| (n, -k)).map(|(k, _)| k as f32 / 2.0).unwrap_or(0.0)
}

/// The font size most characters have: the body text's.
fn body_size(pages: &[Vec<Segment>]) -> f32 {
    let mut sizes = Vec::new();
    for segment in pages.iter().flatten().filter(|s| !s.image) {
        sizes.extend(std::iter::repeat_n(segment.size, segment.visible_chars().count()));
    }
    let size = mode(&sizes);
    if size > 0.0 { size } else { 10.0 }
}

/// A document set mostly in a fixed-pitch font is not code: its pitch says nothing.
fn plain_when_mostly_mono(pages: &mut [Vec<Segment>]) {
    let (mut mono, mut all) = (0usize, 0usize);
    for segment in pages.iter().flatten() {
        for (_, style) in segment.visible_chars() {
            all += 1;
            mono += style.code as usize;
        }
    }
    if mono * 2 > all {
        for segment in pages.iter_mut().flatten() {
            for (_, style) in &mut segment.chars {
                style.code = false;
            }
        }
    }
}

/// The text of a margin segment with its digits blanked, so "Page 3" and "Page 4" match.
fn head_key(text: &str) -> String {
    text.chars().filter(|c| !c.is_whitespace()).map(|c| if c.is_ascii_digit() { '#' } else { c }).collect()
}

fn is_page_number(text: &str) -> bool {
    let t = text.trim();
    let t = t.strip_prefix("Page ").or_else(|| t.strip_prefix("page ")).unwrap_or(t);
    let t = t.split(" of ").next().unwrap_or(t).split('/').next().unwrap_or(t).trim();
    let t = t.trim_matches(|c| c == '-' || c == '–' || c == ' ');
    !t.is_empty() && t.len() <= 6 && (t.bytes().all(|b| b.is_ascii_digit()) || is_roman(t))
}

fn is_roman(text: &str) -> bool {
    text.len() <= 6 && text.chars().all(|c| matches!(c, 'i' | 'v' | 'x' | 'l' | 'I' | 'V' | 'X' | 'L'))
}

/// Leaves out running heads and feet: margin segments repeated on other pages, and page numbers.
fn drop_running_heads(pages: &mut [Vec<Segment>], layouts: &[PageLayout]) {
    let in_band = |s: &Segment, layout: &PageLayout| {
        let band = layout.height * MARGIN_BAND;
        s.y1 <= band || s.y0 >= layout.height - band
    };
    let mut seen: std::collections::HashMap<String, std::collections::BTreeSet<u32>> = Default::default();
    for (segments, layout) in pages.iter().zip(layouts) {
        for s in segments.iter().filter(|s| !s.image && in_band(s, layout)) {
            seen.entry(head_key(&s.text())).or_default().insert(layout.number);
        }
    }
    let page_count = pages.len();
    for (segments, layout) in pages.iter_mut().zip(layouts) {
        // Margin lines that carry a page number ("Title of the paper   9") are running heads.
        let numbered: Vec<(f32, f32)> = segments
            .iter()
            .filter(|s| !s.image && in_band(s, layout) && is_page_number(&s.text()))
            .map(|s| (s.y0, s.y1))
            .collect();
        segments.retain(|s| {
            if s.image || !in_band(s, layout) {
                return true;
            }
            let text = s.text();
            let center = (s.y0 + s.y1) / 2.0;
            if is_page_number(&text) || numbered.iter().any(|(top, bottom)| center > *top && center < *bottom) {
                return false;
            }
            let repeats = seen.get(&head_key(&text)).map_or(0, |pages| pages.len());
            !(page_count >= 2 && repeats >= 2)
        });
    }
}

/// Fewest rows a table without rules must have (three for two columns, which prose
/// beside a margin note could also make).
const MIN_TABLE_ROWS: usize = 2;

/// A table found among a page's segments: its segments (by index) and cells.
#[derive(Debug)]
struct FoundTable {
    members: Vec<usize>,
    /// Rows of cell texts (plain, not escaped).
    rows: Vec<Vec<String>>,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
}

/// Replaces the segments of every table on the page by one table segment.
fn with_tables(segments: Vec<Segment>) -> Vec<Segment> {
    let tables = find_tables(&segments);
    if tables.is_empty() {
        return segments;
    }
    let mut taken = vec![false; segments.len()];
    let mut out = Vec::with_capacity(segments.len());
    let page = segments.first().map_or(0, |s| s.page);
    for table in tables {
        for &i in &table.members {
            taken[i] = true;
        }
        let rows =
            table.rows.iter().map(|row| row.iter().map(|cell| crate::markdown::escape(cell)).collect()).collect();
        out.push(Segment {
            page,
            x0: table.x0,
            y0: table.y0,
            x1: table.x1,
            y1: table.y1,
            size: 0.0,
            chars: Vec::new(),
            image: false,
            table: Some(rows),
        });
    }
    out.extend(segments.into_iter().zip(taken).filter(|(_, t)| !t).map(|(s, _)| s));
    out
}

/// Tables drawn without rules, found by alignment: runs of lines split into the same
/// columns by gutters no line of the run crosses. Page columns of prose (two wide columns
/// of long lines) are not tables; nor are bullets set apart from their text.
fn find_tables(segments: &[Segment]) -> Vec<FoundTable> {
    let mut order: Vec<usize> =
        (0..segments.len()).filter(|&i| !segments[i].image && segments[i].table.is_none()).collect();
    order.sort_by(|&a, &b| segments[a].y0.total_cmp(&segments[b].y0).then(segments[a].x0.total_cmp(&segments[b].x0)));
    let bands = bands_by(order, |&i| place(&segments[i]));
    let gutters_of = |band: &[usize]| -> Vec<(f32, f32)> {
        band.windows(2)
            .filter_map(|w| {
                let (a, b) = (&segments[w[0]], &segments[w[1]]);
                (b.x0 - a.x1 >= 3.0).then_some((a.x1, b.x0))
            })
            .collect()
    };
    // A gutter narrows to what a row leaves free of it (a wider cell below a narrower one),
    // and is gone when nothing 3 points wide is left.
    let narrowed = |band: &[usize], gutter: (f32, f32)| -> Option<(f32, f32)> {
        let mut free = vec![gutter];
        for &i in band {
            let (x0, x1) = (segments[i].x0, segments[i].x1);
            free = free
                .into_iter()
                .flat_map(|(a, b)| if x1 <= a || x0 >= b { vec![(a, b)] } else { vec![(a, x0.max(a)), (x1.min(b), b)] })
                .filter(|(a, b)| b - a >= 3.0)
                .collect();
        }
        free.into_iter().max_by(|p, q| (p.1 - p.0).total_cmp(&(q.1 - q.0)))
    };
    let mut tables = Vec::new();
    let mut i = 0;
    while i < bands.len() {
        if bands[i].2.len() < 2 {
            i += 1;
            continue;
        }
        let mut gutters = gutters_of(&bands[i].2);
        let line_height = bands[i].1 - bands[i].0;
        let (mut left, mut right) = extent_of(segments, &bands[i].2);
        let mut end = i + 1;
        while end < bands.len() {
            let (top, bottom, band) = &bands[end];
            let gap = top - bands[end - 1].1;
            if gap > line_height.max(bottom - top) * 2.5 {
                break;
            }
            let (l, r) = extent_of(segments, band);
            let size = band.iter().map(|&k| segments[k].size).fold(1.0, f32::max);
            if l < left - size * 3.0 || r > right + size * 3.0 {
                break;
            }
            let kept: Vec<(f32, f32)> = gutters.iter().filter_map(|g| narrowed(band, *g)).collect();
            // Every gutter of a row with several cells must survive, or the columns changed;
            // a line of one cell (a wrapped cell) must fit between two gutters.
            let lost = gutters.len() - kept.len();
            if kept.is_empty()
                || (band.len() >= 2 && kept.len() < gutters.len().min(band.len() - 1))
                || (band.len() == 1 && lost > 0)
            {
                break;
            }
            gutters = kept;
            left = left.min(l);
            right = right.max(r);
            end += 1;
        }
        let run = &bands[i..end];
        let multi = run.iter().filter(|b| b.2.len() >= 2).count();
        let columns = gutters.len() + 1;
        let members: Vec<usize> = run.iter().flat_map(|b| b.2.iter().copied()).collect();
        gutters.sort_by(|a, b| a.0.total_cmp(&b.0));
        let prose = is_prose(segments, &members, &gutters) || columns == 1;
        let first_column_markers = run.iter().all(|b| {
            let first = segments[b.2[0]].text();
            let t = first.trim();
            t.chars().count() <= 2 && !t.chars().any(char::is_alphanumeric)
        });
        let enough_rows = if columns == 2 { multi >= 3 } else { multi >= MIN_TABLE_ROWS };
        if enough_rows && !prose && !first_column_markers {
            let rows = table_rows(segments, run, &gutters);
            let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
            for &k in &members {
                x0 = x0.min(segments[k].x0);
                y0 = y0.min(segments[k].y0);
                x1 = x1.max(segments[k].x1);
                y1 = y1.max(segments[k].y1);
            }
            tables.push(FoundTable { members, rows, x0, y0, x1, y1 });
            i = end;
        } else {
            i += 1;
        }
    }
    tables
}

/// Whether a column of the run is running text: most of its lines fill its width and
/// hold several words (page columns of prose look like a two-column table otherwise).
fn is_prose(segments: &[Segment], members: &[usize], gutters: &[(f32, f32)]) -> bool {
    let columns = gutters.len() + 1;
    let column_of = |s: &Segment| {
        let center = (s.x0 + s.x1) / 2.0;
        gutters.iter().take_while(|g| center > (g.0 + g.1) / 2.0).count()
    };
    (0..columns).any(|c| {
        let cells: Vec<&Segment> = members.iter().map(|&i| &segments[i]).filter(|s| column_of(s) == c).collect();
        if cells.len() < 3 {
            return false;
        }
        let left = cells.iter().map(|s| s.x0).fold(f32::MAX, f32::min);
        let right = cells.iter().map(|s| s.x1).fold(f32::MIN, f32::max);
        let full = cells.iter().filter(|s| s.x1 - s.x0 >= (right - left) * 0.85).count();
        let words =
            cells.iter().map(|s| s.text().split_whitespace().count()).sum::<usize>() as f32 / cells.len() as f32;
        full as f32 >= cells.len() as f32 * 0.6 && words >= 5.0
    })
}

fn extent_of(segments: &[Segment], band: &[usize]) -> (f32, f32) {
    band.iter().fold((f32::MAX, f32::MIN), |(l, r), &i| (l.min(segments[i].x0), r.max(segments[i].x1)))
}

/// The cells of a run of bands cut by `gutters`: a band whose first cell is empty while
/// the row above has one continues that row (a cell's text wrapped onto a second line).
fn table_rows(segments: &[Segment], run: &[(f32, f32, Vec<usize>)], gutters: &[(f32, f32)]) -> Vec<Vec<String>> {
    let columns = gutters.len() + 1;
    let column_of = |s: &Segment| {
        let center = (s.x0 + s.x1) / 2.0;
        gutters.iter().take_while(|g| center > (g.0 + g.1) / 2.0).count()
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (_, _, band) in run {
        let mut cells = vec![String::new(); columns];
        for &i in band {
            let s = &segments[i];
            let cell = &mut cells[column_of(s).min(columns - 1)];
            if !cell.is_empty() {
                cell.push(' ');
            }
            cell.push_str(s.text().trim());
        }
        let continues = cells[0].is_empty() && rows.last().is_some_and(|row: &Vec<String>| !row[0].is_empty());
        match rows.last_mut() {
            Some(last) if continues => {
                for (into, more) in last.iter_mut().zip(cells) {
                    if !more.is_empty() {
                        if !into.is_empty() {
                            into.push(' ');
                        }
                        into.push_str(&more);
                    }
                }
            }
            _ => rows.push(cells),
        }
    }
    rows
}

/// Orders a page's segments for reading: bands top to bottom, columns left to right.
/// Right-to-left pages read their columns from the right.
fn reading_order(mut segments: Vec<Segment>, page_width: f32, rtl: bool) -> Vec<Segment> {
    if segments.len() > MAX_SEGMENTS {
        segments.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
        return segments;
    }
    let mut regions = Vec::new();
    order_region(segments, page_width, rtl, 0, &mut regions);
    let mut out = Vec::new();
    for region in regions {
        // Tables are looked for inside a column, once the page's columns are apart.
        let mut region = with_tables(region);
        region.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
        for mut band in bands_of(region) {
            if rtl {
                band.reverse();
            }
            out.extend(band);
        }
    }
    out
}

/// Splits a region into the regions it is read in: runs of bands that share an empty strip
/// with running text beside it are columns, read one after the other (recursively); the
/// bands between such runs stay together as one region.
fn order_region(mut segments: Vec<Segment>, page_width: f32, rtl: bool, depth: u32, regions: &mut Vec<Vec<Segment>>) {
    segments.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
    let bands = bands_of(segments);
    if depth >= MAX_COLUMN_DEPTH {
        regions.push(bands.into_iter().flatten().collect());
        return;
    }
    let min_gutter = 6.0f32;
    let min_column = page_width * 0.18;
    let mut current: Vec<Segment> = Vec::new();
    let mut i = 0;
    while i < bands.len() {
        // The longest run of bands from `i` that leave a common vertical strip empty
        // with text on both sides of it.
        let (left_edge, right_edge) = extent(&bands[i..]);
        let mut free = free_strips(&bands[i], left_edge, right_edge, min_gutter);
        let mut end = i + 1;
        let mut best: Option<(usize, (f32, f32))> = None;
        loop {
            let two_sided = free.iter().copied().find(|strip| {
                let run = &bands[i..end];
                let left = run.iter().flatten().filter(|s| s.x1 <= strip.0).map(|s| s.x0).fold(f32::MAX, f32::min);
                let right = run.iter().flatten().filter(|s| s.x0 >= strip.1).map(|s| s.x1).fold(f32::MIN, f32::max);
                let both = run
                    .iter()
                    .filter(|b| b.iter().any(|s| s.x1 <= strip.0) && b.iter().any(|s| s.x0 >= strip.1))
                    .count();
                strip.0 - left >= min_column && right - strip.1 >= min_column && (both >= 2 || end - i >= 4)
            });
            if let Some(strip) = two_sided {
                best = Some((end, strip));
            }
            if end >= bands.len() {
                break;
            }
            let next = free_strips(&bands[end], left_edge, right_edge, min_gutter);
            let narrowed = intersect(&free, &next, min_gutter);
            if narrowed.is_empty() {
                break;
            }
            free = narrowed;
            end += 1;
        }
        // Columns hold running text, or are wide and long; a run whose sides are both
        // short cells is a table, left whole for the table finder.
        let columns = best.filter(|(end, strip)| {
            let run: Vec<Segment> = bands[i..*end].iter().flatten().cloned().collect();
            let all: Vec<usize> = (0..run.len()).collect();
            let left = run.iter().filter(|s| s.x1 <= strip.0).map(|s| s.x0).fold(f32::MAX, f32::min);
            let right = run.iter().filter(|s| s.x0 >= strip.1).map(|s| s.x1).fold(f32::MIN, f32::max);
            let wide = strip.0 - left >= page_width * 0.25 && right - strip.1 >= page_width * 0.25;
            *end - i >= 2 && (is_prose(&run, &all, &[*strip]) || (wide && *end - i >= 12))
        });
        match columns {
            Some((end, strip)) => {
                if !current.is_empty() {
                    regions.push(std::mem::take(&mut current));
                }
                let run: Vec<Segment> = bands[i..end].iter().flatten().cloned().collect();
                let (left, right): (Vec<Segment>, Vec<Segment>) =
                    run.into_iter().partition(|s| (s.x0 + s.x1) / 2.0 <= (strip.0 + strip.1) / 2.0);
                let (first, second) = if rtl { (right, left) } else { (left, right) };
                order_region(first, page_width, rtl, depth + 1, regions);
                order_region(second, page_width, rtl, depth + 1, regions);
                i = end;
            }
            None => {
                current.extend(bands[i].iter().cloned());
                i += 1;
            }
        }
    }
    if !current.is_empty() {
        regions.push(current);
    }
}

/// Segments sorted by top, grouped where their heights overlap; each band by left edge.
fn bands_of(segments: Vec<Segment>) -> Vec<Vec<Segment>> {
    bands_by(segments, place).into_iter().map(|(_, _, band)| band).collect()
}

/// Where a segment stands for banding: left edge, top, bottom, and the height its
/// neighbour must reach past its top to share its band (half a line).
fn place(s: &Segment) -> (f32, f32, f32, f32) {
    (s.x0, s.y0, s.y1, s.y0 + s.height().min(s.size.max(1.0)) * 0.5)
}

/// Items (sorted by top) grouped into bands where their heights overlap by half a line,
/// each band's items left to right, with the band's top and bottom; `place` gives an
/// item's [`place`].
fn bands_by<T>(items: Vec<T>, place: impl Fn(&T) -> (f32, f32, f32, f32)) -> Vec<(f32, f32, Vec<T>)> {
    let mut bands: Vec<(f32, f32, Vec<T>)> = Vec::new();
    for item in items {
        let (_, top, bottom, overlap_limit) = place(&item);
        match bands.last_mut() {
            Some((_, band_bottom, band)) if overlap_limit < *band_bottom => {
                *band_bottom = band_bottom.max(bottom);
                band.push(item);
            }
            _ => bands.push((top, bottom, vec![item])),
        }
    }
    for (_, _, band) in &mut bands {
        band.sort_by(|a, b| place(a).0.total_cmp(&place(b).0));
    }
    bands
}

fn extent(bands: &[Vec<Segment>]) -> (f32, f32) {
    let mut left = f32::MAX;
    let mut right = f32::MIN;
    for s in bands.iter().flatten() {
        left = left.min(s.x0);
        right = right.max(s.x1);
    }
    (left, right)
}

/// The empty horizontal strips of a band between `left` and `right`, at least `min` wide.
fn free_strips(band: &[Segment], left: f32, right: f32, min: f32) -> Vec<(f32, f32)> {
    let mut covered: Vec<(f32, f32)> = band.iter().map(|s| (s.x0, s.x1)).collect();
    covered.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut strips = Vec::new();
    let mut cursor = left;
    for (x0, x1) in covered {
        if x0 - cursor >= min {
            strips.push((cursor, x0));
        }
        cursor = cursor.max(x1);
    }
    if right - cursor >= min {
        strips.push((cursor, right));
    }
    strips
}

fn intersect(a: &[(f32, f32)], b: &[(f32, f32)], min: f32) -> Vec<(f32, f32)> {
    let mut out = Vec::new();
    for x in a {
        for y in b {
            let (l, r) = (x.0.max(y.0), x.1.min(y.1));
            if r - l >= min {
                out.push((l, r));
            }
        }
    }
    out
}

/// One line of a column: segments of one band side by side.
#[derive(Clone, Debug)]
struct Line {
    page: u32,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    size: f32,
    chars: Vec<(char, Style)>,
    image: bool,
    /// A table.
    table: Option<Vec<Vec<String>>>,
    /// A page without a text layer.
    no_text: bool,
}

impl Line {
    fn no_text(page: u32) -> Line {
        Line {
            page,
            x0: 0.0,
            y0: 0.0,
            x1: 0.0,
            y1: 0.0,
            size: 0.0,
            chars: Vec::new(),
            image: false,
            table: None,
            no_text: true,
        }
    }

    fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| *c).collect()
    }

    fn all(&self, test: impl Fn(&Style) -> bool) -> bool {
        let mut any = false;
        for (c, style) in &self.chars {
            if c.is_whitespace() {
                continue;
            }
            if !test(style) {
                return false;
            }
            any = true;
        }
        any
    }
}

/// Ordered segments to lines: neighbours on the same baseline are joined.
fn lines_of(segments: Vec<Segment>) -> Vec<Line> {
    let mut lines: Vec<Line> = Vec::new();
    for s in segments {
        if s.image || s.table.is_some() {
            lines.push(Line {
                page: s.page,
                x0: s.x0,
                y0: s.y0,
                x1: s.x1,
                y1: s.y1,
                size: 0.0,
                chars: Vec::new(),
                image: s.image,
                table: s.table,
                no_text: false,
            });
            continue;
        }
        let joins = lines.last().is_some_and(|l| {
            !l.image && l.table.is_none() && !l.no_text && l.page == s.page && {
                let center = (s.y0 + s.y1) / 2.0;
                let apart = (s.x0 - l.x1).max(l.x0 - s.x1);
                center > l.y0 && center < l.y1 && apart >= -1.0 && apart < s.size * 4.0
            }
        });
        if joins {
            let line = lines.last_mut().expect("checked above");
            // Segments come in reading order (right-to-left pages from the right).
            line.chars.push((' ', Style::default()));
            line.chars.extend(s.chars.iter().copied());
            line.x0 = line.x0.min(s.x0);
            line.x1 = line.x1.max(s.x1);
            line.y0 = line.y0.min(s.y0);
            line.y1 = line.y1.max(s.y1);
            line.size = line.size.max(s.size);
        } else {
            lines.push(Line {
                page: s.page,
                x0: s.x0,
                y0: s.y0,
                x1: s.x1,
                y1: s.y1,
                size: s.size,
                chars: s.chars,
                image: false,
                table: None,
                no_text: false,
            });
        }
    }
    lines
}

/// Bullets that start a list item.
fn bullet_len(text: &str) -> Option<usize> {
    let mut chars = text.char_indices();
    let (_, first) = chars.next()?;
    let is_bullet = matches!(
        first,
        '•' | '◦'
            | '▪'
            | '▫'
            | '■'
            | '□'
            | '●'
            | '○'
            | '‣'
            | '⁃'
            | '–'
            | '—'
            | '-'
            | '*'
            | '·'
            | '➢'
            | '►'
            | '▶'
            | '✓'
            | '✔'
            | '❖'
            | '➤'
            | '\u{f0b7}'
            | '\u{f0a7}'
            | '\u{f076}'
            | '\u{f0d8}'
            | '\u{f0fc}'
            | '\u{f06e}'
            | '\u{f0a8}'
    );
    if !is_bullet {
        return None;
    }
    let rest = &text[first.len_utf8()..];
    // "-5" and "--" are not bullets; a bullet is followed by a space.
    rest.starts_with(' ').then_some(first.len_utf8())
}

/// An ordered-list marker: `1.`, `1)`, `(1)`, `a.`, `a)`, followed by a space.
fn number_marker(text: &str) -> Option<(usize, u64)> {
    let t = text.strip_prefix('(').unwrap_or(text);
    let lead = text.len() - t.len();
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = &t[digits..];
        if (rest.starts_with(". ") || rest.starts_with(") ")) && !(lead == 1 && rest.starts_with('.')) {
            let n: u64 = t[..digits].parse().ok()?;
            return Some((lead + digits + 1, n));
        }
    }
    let mut chars = t.chars();
    if let (Some(c), Some(mark), Some(' ')) = (chars.next(), chars.next(), chars.next())
        && c.is_ascii_lowercase()
        && (mark == ')' || (mark == '.' && lead == 0))
    {
        return Some((lead + 2, (c as u8 - b'a' + 1) as u64));
    }
    None
}

/// What a paragraph being assembled will be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Text,
    Item { ordered: Option<u64>, x: f32 },
    Code,
}

struct Pending {
    kind: Kind,
    lines: Vec<Line>,
}

/// Lines to blocks.
fn blocks_of(lines: Vec<Line>, body: f32) -> Document {
    let mut document = Document::default();
    let mut pending: Option<Pending> = None;
    let mut list_base: Option<f32> = None;
    let heading_sizes = heading_sizes(&lines, body);
    let mut previous: Option<Line> = None;
    for line in lines {
        if line.no_text {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            document
                .push(Block::Paragraph(format!("<!-- page {} has no text layer; /v1/pdf/ocr reads it -->", line.page)));
            previous = None;
            continue;
        }
        if line.image {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            document.push(Block::Image { alt: String::new() });
            previous = None;
            continue;
        }
        if let Some(rows) = line.table {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            document.push(Block::Table(rows));
            previous = None;
            continue;
        }
        let text = line.text();
        let mono = line.all(is_mono);
        let marker = if mono {
            None
        } else {
            bullet_len(&text).map(|_| None).or_else(|| number_marker(&text).map(|(_, n)| Some(n)))
        };
        let starts_item = marker.is_some();
        let continues = match (&pending, &previous) {
            (Some(p), Some(prev)) if !starts_item => continues_paragraph(p, prev, &line, body),
            _ => false,
        };
        if continues {
            if let Some(p) = &mut pending {
                p.lines.push(line.clone());
            }
        } else {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            let kind = match marker {
                Some(ordered) => Kind::Item { ordered, x: line.x0 },
                None if mono => Kind::Code,
                None => Kind::Text,
            };
            if !matches!(kind, Kind::Item { .. }) {
                list_base = None;
            }
            pending = Some(Pending { kind, lines: vec![line.clone()] });
        }
        previous = Some(line);
    }
    flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
    document
}

fn is_mono(style: &Style) -> bool {
    style.code
}

/// Whether `line` goes on with the paragraph whose last line is `prev`.
fn continues_paragraph(p: &Pending, prev: &Line, line: &Line, body: f32) -> bool {
    if line.page != prev.page {
        // A paragraph that runs over a page break goes on when the last line did not end a sentence.
        let last = prev.text();
        let ends = last.trim_end().ends_with(['.', ':', '!', '?']);
        let first_lower = line.text().chars().next().is_some_and(|c| c.is_lowercase());
        return p.kind == Kind::Text && !ends && first_lower && (line.size - prev.size).abs() < 0.5;
    }
    let size = prev.size.max(line.size).max(1.0);
    if (line.size - prev.size).abs() > size * 0.12 {
        return false;
    }
    let gap = line.y0 - prev.y1;
    let height = (prev.y1 - prev.y0).max(size * 0.7);
    if gap > height * 0.9 || gap < -height * 0.5 {
        return false;
    }
    if p.kind == Kind::Code {
        return line.all(is_mono);
    }
    // A bold line over regular text (a run-in heading) ends its paragraph.
    let prev_bold = prev.all(|s| s.bold);
    if prev_bold != line.all(|s| s.bold) && (prev_bold || p.lines.len() == 1) {
        return false;
    }
    // So does a short italic line standing alone over regular text.
    let prev_italic = prev.all(|s| s.italic);
    if p.lines.len() == 1 && prev_italic && !line.all(|s| s.italic) && prev.x1 < line.x1 - size * 2.0 {
        return false;
    }
    match p.kind {
        // Item text wraps to the right of its bullet, not left of it.
        Kind::Item { x, .. } => line.x0 > x + size * 0.3,
        _ => {
            let first = &p.lines[0];
            // A line that starts far left of the block's lines starts something new.
            line.x0 > first.x0.min(prev.x0) - size * 1.5 && body > 0.0
        }
    }
}

/// Font sizes that mark headings, largest first.
fn heading_sizes(lines: &[Line], body: f32) -> Vec<f32> {
    let mut sizes: Vec<f32> = lines
        .iter()
        .filter(|l| !l.image && l.table.is_none() && !l.no_text && l.size >= body * 1.15)
        .map(|l| (l.size * 2.0).round() / 2.0)
        .collect();
    sizes.sort_by(|a, b| b.total_cmp(a));
    sizes.dedup();
    sizes
}

fn flush(
    document: &mut Document,
    pending: Option<Pending>,
    body: f32,
    heading_sizes: &[f32],
    list_base: &mut Option<f32>,
) {
    let Some(p) = pending else { return };
    match p.kind {
        Kind::Code => {
            let left = p.lines.iter().map(|l| l.x0).fold(f32::MAX, f32::min);
            let text = p
                .lines
                .iter()
                .map(|l| {
                    let width = (l.size * 0.6).max(1.0);
                    let indent = ((l.x0 - left) / width).round().clamp(0.0, 40.0) as usize;
                    format!("{}{}", " ".repeat(indent), l.text().trim_end())
                })
                .collect::<Vec<_>>()
                .join("\n");
            document.push(Block::Code { language: String::new(), text });
        }
        Kind::Item { ordered, x } => {
            let base = *list_base.get_or_insert(x);
            let size = p.lines[0].size.max(1.0);
            // Nested lists step in by about a quarter of an inch or more a level.
            let level = ((x - base) / (size * 1.8).max(12.0)).round().clamp(0.0, 4.0) as u8;
            let mut inline = joined(&p.lines, false);
            let text = inline.plain();
            let skip = match ordered {
                None => bullet_len(&text).unwrap_or(0),
                Some(_) => number_marker(&text).map_or(0, |(n, _)| n),
            };
            inline = skip_chars(&p.lines, skip);
            document.push(Block::ListItem { level, ordered, text: inline.finish() });
        }
        Kind::Text => {
            if let Some(cut) = run_in_heading(&p.lines[0]) {
                let mut head = p.lines[0].clone();
                let mut rest = p.lines.clone();
                head.chars.truncate(cut);
                rest[0].chars.drain(..cut);
                let level = (heading_sizes.len() as u8 + 1).min(4);
                document.push(Block::Heading { level, text: joined(&[head], true).finish() });
                document.push(Block::Paragraph(joined(&rest, false).finish()));
                return;
            }
            let inline = joined(&p.lines, false);
            let plain = inline.plain();
            if let Some(level) = heading_level(&p.lines, &plain, body, heading_sizes) {
                let plain_inline = joined(&p.lines, true);
                document.push(Block::Heading { level, text: plain_inline.finish() });
            } else {
                document.push(Block::Paragraph(inline.finish()));
            }
        }
    }
}

/// A numbered bold heading that runs into its paragraph's first line ("5.1 Results  We
/// ..."): the number of characters it takes.
fn run_in_heading(line: &Line) -> Option<usize> {
    let first_plain = line.chars.iter().position(|(c, style)| !c.is_whitespace() && !style.bold)?;
    let head: String = line.chars[..first_plain].iter().map(|(c, _)| *c).collect();
    let mut words = head.split_whitespace();
    let number = words.next()?;
    let numbered = number
        .trim_end_matches('.')
        .split('.')
        .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()));
    let count = head.split_whitespace().count();
    let fits = numbered && number.len() <= 8 && (2..=12).contains(&count) && !head.trim_end().ends_with(',');
    (fits && head.chars().any(char::is_alphabetic)).then_some(first_plain)
}

/// A caption ("Figure 1-2 …", "Table 3. …"): a paragraph, even when it is set in bold.
fn is_caption(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let (Some(first), Some(second)) = (words.next(), words.next()) else { return false };
    let label = ["figure", "fig.", "table", "example", "listing", "chart", "exhibit", "plate", "scheme"];
    label.contains(&first.to_lowercase().as_str()) && second.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// The heading level of a paragraph, if it is one.
fn heading_level(lines: &[Line], text: &str, body: f32, heading_sizes: &[f32]) -> Option<u8> {
    let words = text.split_whitespace().count();
    let trimmed = text.trim();
    if lines.len() > 3 || words == 0 || words > 24 || trimmed.ends_with([',', ';']) {
        return None;
    }
    if trimmed.chars().filter(|c| c.is_alphabetic()).count() < 2 || is_caption(trimmed) {
        return None;
    }
    let size = (lines.iter().map(|l| l.size).fold(0.0, f32::max) * 2.0).round() / 2.0;
    if size >= body * 1.15 {
        let rank = heading_sizes.iter().position(|s| (*s - size).abs() < 0.3).unwrap_or(0);
        return Some((rank as u8 + 1).min(4));
    }
    let bold = lines.iter().all(|l| l.all(|s| s.bold));
    let level = (heading_sizes.len() as u8 + 1).min(4);
    let body_sized = (size - body).abs() < body * 0.15;
    if bold && words <= 14 && !trimmed.ends_with('.') && body_sized {
        return Some(level);
    }
    // A short italic line of its own, capitalised and unpunctuated, heads what follows
    // (the lowest heading style of many handbooks).
    let italic = lines.len() == 1 && lines[0].all(|s| s.italic);
    let capital = trimmed.chars().next().is_some_and(char::is_uppercase);
    if italic && capital && words <= 8 && !trimmed.ends_with(['.', ':', '!', '?', ')']) && body_sized {
        return Some(level);
    }
    None
}

/// A paragraph's lines as inline Markdown: lines joined with a space, or without one
/// where a word was hyphenated across the break. `plain` drops bold and italic.
fn joined(lines: &[Line], plain: bool) -> Inline {
    let mut inline = Inline::new();
    push_lines(&mut inline, lines, 0, plain);
    inline
}

fn skip_chars(lines: &[Line], skip: usize) -> Inline {
    let mut inline = Inline::new();
    push_lines(&mut inline, lines, skip, false);
    inline
}

fn push_lines(inline: &mut Inline, lines: &[Line], mut skip: usize, plain: bool) {
    for (i, line) in lines.iter().enumerate() {
        let mut chars: &[(char, Style)] = &line.chars;
        // Skip `skip` bytes of the first line (a list marker).
        if i == 0 && skip > 0 {
            let mut consumed = 0;
            let mut n = 0;
            for (c, _) in chars {
                if consumed >= skip {
                    break;
                }
                consumed += c.len_utf8();
                n += 1;
            }
            chars = &chars[n..];
            skip = 0;
        }
        let next_first = lines.get(i + 1).and_then(|l| l.chars.iter().map(|(c, _)| *c).find(|c| !c.is_whitespace()));
        let ends_hyphen = chars.iter().rev().find(|(c, _)| !c.is_whitespace()).is_some_and(|(c, _)| *c == '-');
        let before_hyphen =
            chars.iter().rev().filter(|(c, _)| !c.is_whitespace()).nth(1).is_some_and(|(c, _)| c.is_alphabetic());
        let dehyphen = ends_hyphen && before_hyphen && next_first.is_some_and(char::is_lowercase);
        let mut end = chars.len();
        while end > 0 && chars[end - 1].0.is_whitespace() {
            end -= 1;
        }
        if dehyphen {
            end -= 1;
        }
        let mut previous = Style::default();
        for (c, style) in &chars[..end] {
            // Spaces take the style before them, so a bold phrase stays one run.
            let style = if plain {
                Style::default()
            } else if c.is_whitespace() {
                previous
            } else {
                *style
            };
            previous = style;
            let mut buffer = [0u8; 4];
            inline.push(c.encode_utf8(&mut buffer), style, None);
        }
        if i + 1 < lines.len() && !(ends_hyphen && before_hyphen) && !joins_without_space(chars, next_first) {
            inline.text(" ");
        }
    }
}

/// CJK text wraps without spaces between lines.
fn joins_without_space(chars: &[(char, Style)], next: Option<char>) -> bool {
    let last = chars.iter().rev().map(|(c, _)| *c).find(|c| !c.is_whitespace());
    let cjk = |c: char| matches!(c as u32, 0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF);
    last.is_some_and(cjk) && next.is_some_and(cjk)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glyphs(text: &str, x: f32, y: f32, size: f32, bold: bool) -> Vec<Glyph> {
        let width = size * 0.5;
        text.chars()
            .enumerate()
            .map(|(i, ch)| Glyph {
                ch,
                x0: x + i as f32 * width,
                y0: y,
                x1: x + (i as f32 + 1.0) * width - 0.5,
                y1: y + size,
                size,
                bold,
                italic: false,
                mono: false,
                generated: false,
            })
            .chain(std::iter::once(Glyph {
                ch: '\n',
                x0: 0.0,
                y0: 0.0,
                x1: 0.0,
                y1: 0.0,
                size,
                bold: false,
                italic: false,
                mono: false,
                generated: true,
            }))
            .collect()
    }

    fn page(number: u32, lines: Vec<Vec<Glyph>>) -> PageLayout {
        PageLayout { number, width: 600.0, height: 800.0, glyphs: lines.concat(), images: vec![], paths: vec![] }
    }

    fn markdown(pages: &[PageLayout]) -> String {
        crate::markdown::render(&from_layouts(pages).document)
    }

    #[test]
    fn paragraphs_join_lines_and_hyphenated_words() {
        let p = page(
            1,
            vec![
                glyphs("A title", 50.0, 60.0, 20.0, false),
                glyphs("The first line of a para-", 50.0, 100.0, 10.0, false),
                glyphs("graph goes on here.", 50.0, 112.0, 10.0, false),
                glyphs("A second paragraph.", 50.0, 140.0, 10.0, false),
            ],
        );
        assert_eq!(markdown(&[p]), "# A title\n\nThe first line of a paragraph goes on here.\n\nA second paragraph.\n");
    }

    #[test]
    fn two_columns_are_read_left_column_first() {
        let mut lines = vec![glyphs("Across both columns of the page", 50.0, 60.0, 10.0, false)];
        for i in 0..6 {
            let y = 100.0 + i as f32 * 12.0;
            lines.push(glyphs(&format!("left line {i} goes on and"), 50.0, y, 10.0, false));
            lines.push(glyphs(&format!("right line {i} goes on and"), 320.0, y, 10.0, false));
        }
        let md = markdown(&[page(1, lines)]);
        let left = md.find("left line 5").unwrap();
        let right = md.find("right line 0").unwrap();
        assert!(left < right, "{md}");
        assert!(md.starts_with("Across both columns"), "{md}");
    }

    #[test]
    fn running_heads_and_page_numbers_are_left_out() {
        let pages: Vec<PageLayout> = (1..=3)
            .map(|n| {
                page(
                    n,
                    vec![
                        glyphs("Annual report 2024", 50.0, 20.0, 9.0, false),
                        glyphs(&format!("Body text of page {n}."), 50.0, 200.0, 10.0, false),
                        glyphs(&n.to_string(), 300.0, 770.0, 9.0, false),
                    ],
                )
            })
            .collect();
        assert_eq!(markdown(&pages), "Body text of page 1.\n\nBody text of page 2.\n\nBody text of page 3.\n");
    }

    #[test]
    fn bullets_and_numbers_make_list_items() {
        let p = page(
            1,
            vec![
                glyphs("• first item that wraps", 50.0, 100.0, 10.0, false),
                glyphs("onto a second line", 60.0, 112.0, 10.0, false),
                glyphs("◦ nested item", 70.0, 124.0, 10.0, false),
                glyphs("2. numbered", 50.0, 136.0, 10.0, false),
            ],
        );
        assert_eq!(markdown(&[p]), "- first item that wraps onto a second line\n    - nested item\n2. numbered\n");
    }

    #[test]
    fn a_page_without_text_is_reported() {
        let read = from_layouts(&[page(1, vec![glyphs("Text.", 50.0, 100.0, 10.0, false)]), page(2, vec![])]);
        assert_eq!(read.pages_without_text, vec![2]);
        assert!(crate::markdown::render(&read.document).contains("page 2 has no text layer"));
    }

    fn italic(mut line: Vec<Glyph>) -> Vec<Glyph> {
        for g in &mut line {
            g.italic = !g.generated;
        }
        line
    }

    #[test]
    fn a_short_italic_line_over_body_text_is_a_heading_and_a_bold_caption_is_not() {
        let p = page(
            1,
            vec![
                italic(glyphs("Elastic Stop Nut", 50.0, 100.0, 10.0, false)),
                glyphs("The elastic stop nut is a standard nut with the height increased to", 50.0, 112.0, 10.0, false),
                glyphs("hold a fiber locking collar.", 50.0, 124.0, 10.0, false),
                glyphs("Figure 7-27 Stainless steel self-locking nut", 50.0, 150.0, 10.0, true),
                glyphs("Body text after the figure goes on for a while here.", 50.0, 170.0, 10.0, false),
            ],
        );
        assert_eq!(
            markdown(&[p]),
            "# Elastic Stop Nut\n\nThe elastic stop nut is a standard nut with the height increased to hold a fiber \
             locking collar.\n\n**Figure 7-27 Stainless steel self-locking nut**\n\nBody text after the figure goes on \
             for a while here.\n"
        );
    }

    /// A line of cells: each `(text, x)` drawn from `x`.
    fn cells(row: &[(&str, f32)], y: f32) -> Vec<Glyph> {
        let mut line: Vec<Glyph> = row.iter().flat_map(|(text, x)| glyphs(text, *x, y, 10.0, false)).collect();
        line.retain(|g| !g.generated);
        line.extend(glyphs("", 0.0, y, 10.0, false));
        line
    }

    #[test]
    fn an_unruled_table_is_found_and_a_wrapped_cell_joins_its_row() {
        let p = page(
            1,
            vec![
                glyphs("Results of the runs are below.", 50.0, 80.0, 10.0, false),
                cells(&[("Model", 50.0), ("Score", 200.0), ("Time", 320.0)], 100.0),
                cells(&[("OTSL", 50.0), ("0.965", 200.0), ("2.73", 320.0)], 112.0),
                cells(&[("HTML", 50.0), ("0.969", 200.0), ("5.39", 320.0)], 124.0),
                cells(&[("large", 200.0), ("s", 320.0)], 136.0),
                glyphs("The text after the table goes on in a paragraph of its own.", 50.0, 170.0, 10.0, false),
            ],
        );
        assert_eq!(
            markdown(&[p]),
            "Results of the runs are below.\n\n| Model | Score       | Time   |\n|-------|-------------|--------|\n\
             | OTSL  | 0.965       | 2.73   |\n| HTML  | 0.969 large | 5.39 s |\n\n\
             The text after the table goes on in a paragraph of its own.\n"
        );
    }

    #[test]
    fn a_bold_line_over_body_text_is_a_heading() {
        let p = page(
            1,
            vec![
                glyphs("Background", 50.0, 100.0, 10.0, true),
                glyphs("Regular body text follows the heading line here.", 50.0, 112.0, 10.0, false),
                glyphs("And more body text on another line.", 50.0, 124.0, 10.0, false),
            ],
        );
        assert_eq!(
            markdown(&[p]),
            "# Background\n\nRegular body text follows the heading line here. And more body text on another line.\n"
        );
    }
}

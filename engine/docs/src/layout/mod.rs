//! Layout analysis of PDF pages, shared by the routes that read a PDF's structure
//! (to-markdown, tables, bank-statement, to-docx). pdfium gives the characters with their
//! boxes and fonts and the rules drawn on the page (`pdf::pdfium::page_layouts`); the
//! analysis here is ours.
//!
//! 1. **Segments**: characters become runs of text on one baseline; a gap wider than
//!    [`SEGMENT_GAP_EMS`] font sizes, or a drawn vertical rule, starts a new segment (a
//!    column gutter or a table cell).
//! 2. **Tables**: ruled tables from the page's rules, unruled ones by alignment
//!    ([`tables`]); each stands in for its text as one segment.
//! 3. **Reading order**: segments are grouped into bands of overlapping height; runs of
//!    bands that share an empty vertical strip with text on both sides are columns, read
//!    left column first (recursively, so a column may hold columns).

pub mod tables;

use crate::markdown::Style;
use crate::pdf::pdfium::{Area, Glyph, PageLayout};

/// A gap between characters wider than this many font sizes splits a line into segments.
pub const SEGMENT_GAP_EMS: f32 = 1.5;

/// Font sizes of gap that part two figures (`16,802.15   42,507.41`) into two segments.
pub const FIGURE_GAP_EMS: f32 = 0.75;

/// A character a figure is written with: digits, marks of thousands and decimals, signs,
/// brackets, percent and currency signs.
fn is_figure_char(c: char) -> bool {
    c.is_ascii_digit() || matches!(c, '.' | ',' | '\'' | '-' | '+' | '(' | ')' | '%' | '$' | '€' | '£' | '¥' | '−')
}
/// Most segments a page may have before its order is simply top to bottom (a page of tens
/// of thousands of scattered characters is a drawing, not prose).
const MAX_SEGMENTS: usize = 20_000;
/// How deep columns may nest.
const MAX_COLUMN_DEPTH: u32 = 4;

/// A run of characters on one baseline, a picture, or a table found on the page.
#[derive(Clone, Debug)]
pub struct Segment {
    /// 1-based page number.
    pub page: u32,
    /// Left edge (points from the page's left).
    pub x0: f32,
    /// Top edge (points from the page's top).
    pub y0: f32,
    /// Right edge.
    pub x1: f32,
    /// Bottom edge.
    pub y1: f32,
    /// The most common font size of its characters.
    pub size: f32,
    /// The font most of its characters use (an index into the page's
    /// [`PageLayout::fonts`]).
    pub font: u16,
    /// Characters with their styles (spaces included).
    pub chars: Vec<(char, Style)>,
    /// A picture rather than text.
    pub image: bool,
    /// A table found on the page, standing in for its text.
    pub table: Option<Box<tables::Table>>,
}

impl Segment {
    /// The characters as text.
    pub fn text(&self) -> String {
        self.chars.iter().map(|(c, _)| *c).collect()
    }

    /// The characters that are not spaces.
    pub fn visible_chars(&self) -> impl Iterator<Item = &(char, Style)> {
        self.chars.iter().filter(|(c, _)| !c.is_whitespace())
    }

    /// Top to bottom.
    pub fn height(&self) -> f32 {
        self.y1 - self.y0
    }
}

/// A page's text as segments cut at wide gaps and at vertical rules, with its pictures;
/// no tables.
pub fn text_segments(layout: &PageLayout) -> Vec<Segment> {
    let (_, vertical) = tables::merged_rules(layout);
    segments_of(layout, &tables::cuts(&vertical))
}

/// A page's segments: its text cut at wide gaps and at vertical rules, its pictures, and
/// its ruled tables standing in for the text inside them (unruled tables are found later,
/// within columns, by [`reading_order`]).
pub fn segments(layout: &PageLayout) -> Vec<Segment> {
    let (horizontal, vertical) = tables::merged_rules(layout);
    let segments = segments_of(layout, &tables::cuts(&vertical));
    let grids = tables::grids(&horizontal, &vertical);
    let rtl = reads_right_to_left(&segments);
    tables::with_ruled(segments, &grids, rtl)
}

fn style_of(glyph: &Glyph) -> Style {
    Style { bold: glyph.bold, italic: glyph.italic, strike: false, code: glyph.mono }
}

/// Whether the text of `segments` is mostly right-to-left.
pub fn reads_right_to_left(segments: &[Segment]) -> bool {
    is_rtl(&segments.iter().flat_map(|s| s.chars.iter().copied()).collect::<Vec<_>>())
}

/// Whether text is mostly right-to-left (Arabic, Hebrew).
pub fn is_rtl(chars: &[(char, Style)]) -> bool {
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
    font: u16,
    /// A space (drawn, generated or inferred): it has no box of its own.
    space: bool,
}

/// Characters to segments. pdfium gives the characters of a line in logical order (right
/// to left text already reversed, runs of numbers and Latin inside it kept), with `\r\n`
/// between lines; a line is cut into segments where a horizontal gap between neighbouring
/// characters, measured on the page, is wider than [`SEGMENT_GAP_EMS`] font sizes. Each
/// segment keeps pdfium's order.
///
/// pdfium's `\r\n` is a guess, and a wrong one where a writer draws each character as a
/// text object of its own (Chromium does on the later pages of a print): it then puts one
/// between every two characters. A break is therefore kept only where the next character
/// does not go on along the same line: on another line, to the left of the last one, or
/// a segment gap away.
fn segments_of(layout: &PageLayout, cuts: &[Area]) -> Vec<Segment> {
    let mut out: Vec<Segment> = Vec::new();
    let mut line: Vec<Placed> = Vec::new();
    let mut line_box: Option<(f32, f32)> = None;
    let (mut break_here, mut space_after_break) = (false, false);
    for glyph in &layout.glyphs {
        let c = match glyph.ch {
            '\u{0}' | '\u{feff}' | '\u{fffe}' | '\u{2}' => continue,
            '\r' | '\n' => {
                break_here = true;
                continue;
            }
            '\u{ad}' => '-',
            '\u{a0}' | '\t' => ' ',
            c if c.is_control() => continue,
            c => c,
        };
        let valid_box = glyph.x1 >= glyph.x0 && glyph.y1 >= glyph.y0 && glyph.x0.is_finite() && glyph.y0.is_finite();
        if c == ' ' || !valid_box {
            // After a break the space belongs to the line only if the line goes on.
            if break_here {
                space_after_break = true;
            } else if let Some(last) = line.last()
                && !last.space
            {
                line.push(Placed { c: ' ', style: last.style, space: true, ..*last });
            }
            continue;
        }
        let size = glyph.size.max(1.0);
        let center = (glyph.y0 + glyph.y1) / 2.0;
        let same_line = line_box.is_some_and(|(top, bottom)| center > top - size * 0.2 && center < bottom + size * 0.2);
        let broke = std::mem::take(&mut break_here);
        let spaced = std::mem::take(&mut space_after_break);
        let goes_on =
            same_line
                && line.iter().rev().find(|p| !p.space).is_some_and(|last| {
                    glyph.x0 >= last.x1 - size * 0.1 && glyph.x0 - last.x1 < size * SEGMENT_GAP_EMS
                });
        if (broke && !goes_on) || (line_box.is_some() && !same_line) {
            cut_line(std::mem::take(&mut line), layout.number, cuts, &mut out);
            line_box = None;
        } else if (spaced || (broke && glyph.x0 - line.last().map_or(glyph.x0, |l| l.x1) > size * 0.1))
            && let Some(last) = line.last()
            && !last.space
        {
            // A break that goes on along the line is a word's end where the characters do
            // not touch: such writers draw no space there, and pdfium's break stands for it.
            line.push(Placed { c: ' ', style: last.style, space: true, ..*last });
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
                font: glyph.font,
                space: false,
            })
        });
    }
    cut_line(line, layout.number, cuts, &mut out);
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
                font: 0,
                chars: Vec::new(),
                image: true,
                table: None,
            });
        }
    }
    out
}

/// Cuts one line at its wide gaps and at the vertical rules in `cuts` (sorted by x) into
/// segments, in pdfium's order within each.
fn cut_line(line: Vec<Placed>, page: u32, cuts: &[Area], out: &mut Vec<Segment>) {
    let drawn: Vec<&Placed> = line.iter().filter(|p| !p.space).collect();
    if drawn.is_empty() {
        return;
    }
    // The line's columns: drawn boxes sorted left to right, merged across small gaps and
    // parted where a vertical rule runs between two characters' centres.
    let gap = SEGMENT_GAP_EMS * drawn.iter().map(|p| p.size).fold(1.0, f32::max);
    let middle = (drawn.iter().map(|p| p.y0).fold(f32::MAX, f32::min)
        + drawn.iter().map(|p| p.y1).fold(f32::MIN, f32::max))
        / 2.0;
    let ruled_between = |a: f32, b: f32| {
        let first = cuts.partition_point(|c| c.x0 <= a);
        cuts[first..].iter().take_while(|c| c.x0 < b).any(|c| c.y0 <= middle && c.y1 >= middle)
    };
    // Words (runs parted by more than a narrow space) that are figures: between two of them
    // a gap wider than [`FIGURE_GAP_EMS`] parts columns too, since tight tables of numbers
    // leave less than a segment gap between their columns.
    let mut sorted = drawn.clone();
    sorted.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    let mut word_of: Vec<usize> = Vec::with_capacity(sorted.len());
    // Per word: only figure characters, and at least one digit.
    let mut figures: Vec<(bool, bool)> = Vec::new();
    let mut end = f32::MIN;
    for p in &sorted {
        if figures.is_empty() || p.x0 - end > p.size.max(1.0) * 0.2 {
            figures.push((true, false));
        }
        let word = figures.len() - 1;
        figures[word].0 &= is_figure_char(p.c);
        figures[word].1 |= p.c.is_ascii_digit();
        word_of.push(word);
        end = end.max(p.x1);
    }
    let figure = |w: usize| figures[w].0 && figures[w].1;
    let mut clusters: Vec<(f32, f32)> = Vec::new();
    let mut last_center = f32::MIN;
    for (i, p) in sorted.iter().enumerate() {
        let (x0, x1) = (p.x0, p.x1);
        let center = (x0 + x1) / 2.0;
        let between_figures = i > 0
            && word_of[i] != word_of[i - 1]
            && figure(word_of[i])
            && figure(word_of[i - 1])
            && clusters.last().is_some_and(|last| x0 - last.1 > FIGURE_GAP_EMS * p.size.max(1.0));
        match clusters.last_mut() {
            Some(last) if x0 - last.1 <= gap && !between_figures && !ruled_between(last_center, center) => {
                last.1 = last.1.max(x1)
            }
            _ => clusters.push((x0, x1)),
        }
        last_center = center;
    }
    let cluster_of = |x: f32| clusters.iter().rposition(|c| x >= c.0 - 0.01 && x <= c.1 + 0.01).unwrap_or(0);
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
        let mut fonts: Vec<(u16, usize)> = Vec::new();
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
            match fonts.iter_mut().find(|(f, _)| *f == p.font) {
                Some((_, n)) => *n += 1,
                None => fonts.push((p.font, 1)),
            }
        }
        let font = fonts.iter().max_by_key(|(_, n)| *n).map_or(0, |(f, _)| *f);
        while chars.last().is_some_and(|(c, _)| c.is_whitespace()) {
            chars.pop();
        }
        if chars.is_empty() {
            continue;
        }
        out.push(Segment { page, x0, y0, x1, y1, size: mode(&sizes), font, chars, image: false, table: None });
    }
}

/// A picture worth a placeholder: not a speck, not a page-filling background.
pub(crate) fn is_content_image(image: &Area, layout: &PageLayout) -> bool {
    let (w, h) = (image.x1 - image.x0, image.y1 - image.y0);
    let page = layout.width * layout.height;
    w >= 24.0 && h >= 24.0 && w * h >= page * 0.01 && w * h < page * 0.9
}

pub fn mode(values: &[f32]) -> f32 {
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

pub fn reading_order(mut segments: Vec<Segment>, page_width: f32, rtl: bool) -> Vec<Segment> {
    if segments.len() > MAX_SEGMENTS {
        segments.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
        return segments;
    }
    // Pictures are placed after the text is ordered: a tall picture beside the text would
    // otherwise join every line it spans into one band.
    let (mut pictures, text): (Vec<Segment>, Vec<Segment>) = segments.into_iter().partition(|s| s.image);
    let mut regions = Vec::new();
    order_region(text, page_width, rtl, 0, &mut regions);
    let mut out: Vec<Segment> = Vec::new();
    for region in regions {
        // Tables are looked for inside a column, once the page's columns are apart.
        let mut region = tables::with_unruled(region);
        region.sort_by(|a, b| a.y0.total_cmp(&b.y0).then(a.x0.total_cmp(&b.x0)));
        for mut band in bands_of(region) {
            if rtl {
                band.reverse();
            }
            out.extend(band);
        }
    }
    // Each picture goes before the first text below its top that shares its horizontal
    // extent (its column), else before the first text below its top, else at the end.
    pictures.sort_by(|a, b| a.y0.total_cmp(&b.y0));
    for picture in pictures {
        let below = |s: &Segment| !s.image && s.y0 >= picture.y0;
        let beside = |s: &Segment| s.x0 < picture.x1 && s.x1 > picture.x0;
        let at =
            out.iter().position(|s| below(s) && beside(s)).or_else(|| out.iter().position(below)).unwrap_or(out.len());
        out.insert(at, picture);
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
            *end - i >= 2 && (tables::is_prose(&run, &all, &[*strip]) || (wide && *end - i >= 12))
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
pub(crate) fn bands_of(segments: Vec<Segment>) -> Vec<Vec<Segment>> {
    bands_by(segments, place).into_iter().map(|(_, _, band)| band).collect()
}

/// Where a segment stands for banding: left edge, top, bottom, and the height its
/// neighbour must reach past its top to share its band (half a line).
pub(crate) fn place(s: &Segment) -> (f32, f32, f32, f32) {
    (s.x0, s.y0, s.y1, s.y0 + s.height().min(s.size.max(1.0)) * 0.5)
}

/// Items (sorted by top) grouped into bands where their heights overlap by half a line,
/// each band's items left to right, with the band's top and bottom; `place` gives an
/// item's [`place`].
pub(crate) fn bands_by<T>(items: Vec<T>, place: impl Fn(&T) -> (f32, f32, f32, f32)) -> Vec<(f32, f32, Vec<T>)> {
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

//! PDF to Markdown on the shared layout analysis ([`crate::layout`]: segments, tables,
//! reading order), then:
//!
//! 1. **Running heads**: segments in the top or bottom margin band whose text, digits
//!    aside, repeats on other pages, and lone page numbers there, are left out.
//! 2. **Blocks**: lines join into paragraphs while the spacing, size and indentation
//!    agree; a paragraph is a heading when its size stands above the body text's (or it is
//!    a short bold line over regular body text), a list item when it starts with a bullet
//!    or a number, code when its font is fixed-pitch. Words hyphenated across lines are
//!    joined. Pictures and tables are placed where they stand.

use crate::error::EngineError;
use crate::layout::{self, Segment};
use crate::markdown::{Block, Document, Inline, Style};
use crate::ocr;
use crate::pdf::pdfium::PageLayout;

/// The share of the page's height at its top and at its bottom where running heads live.
const MARGIN_BAND: f32 = 0.09;

/// A PDF read for Markdown.
pub struct PdfMarkdown {
    /// The document.
    pub document: Document,
    /// Pages with no text at all (drawings, or scans OCR found no text on).
    pub pages_without_text: Vec<u32>,
    /// Pages without a text layer that OCR read.
    pub pages_read_by_ocr: Vec<u32>,
}

/// Reads `pages` (1-based) of the PDF in `bytes`, scanned pages by OCR in `languages`
/// (`eng+deu`), each page reported to `progress`; errors name `field`. Without the OCR engine, scanned pages stay without text.
pub fn read(
    bytes: &[u8],
    password: Option<&str>,
    pages: &[u32],
    field: &str,
    languages: &str,
    progress: &dyn crate::context::Progress,
) -> Result<PdfMarkdown, EngineError> {
    let (layouts, read) = ocr::layouts_with_ocr(bytes, password, pages, field, languages, progress)?;
    let mut markdown = from_layouts(&layouts);
    markdown.pages_read_by_ocr = read.into_iter().filter(|p| !markdown.pages_without_text.contains(p)).collect();
    Ok(markdown)
}

pub fn from_layouts(layouts: &[PageLayout]) -> PdfMarkdown {
    let mut pages_without_text = Vec::new();
    let mut per_page: Vec<Vec<Segment>> = Vec::with_capacity(layouts.len());
    for layout in layouts {
        let segments = layout::segments(layout);
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
        let rtl = layout::reads_right_to_left(&segments);
        let mut ordered = layout::reading_order(segments, layout.width, rtl);
        if rtl {
            // Markdown is text in reading order: a right-to-left table's first column is
            // its rightmost, as an HTML table with `dir="rtl"` places it.
            for table in ordered.iter_mut().filter_map(|s| s.table.as_mut()) {
                table.rows.iter_mut().for_each(|row| row.reverse());
            }
        }
        lines.extend(lines_of(ordered));
    }
    let document = blocks_of(lines, body_size);
    PdfMarkdown { document, pages_without_text, pages_read_by_ocr: Vec::new() }
}

/// The font size most characters have: the body text's.
fn body_size(pages: &[Vec<Segment>]) -> f32 {
    let mut sizes = Vec::new();
    for segment in pages.iter().flatten().filter(|s| !s.image) {
        sizes.extend(std::iter::repeat_n(segment.size, segment.visible_chars().count()));
    }
    let size = layout::mode(&sizes);
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
            if s.image || s.table.is_some() || !in_band(s, layout) {
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
    table: Option<Box<layout::tables::Table>>,
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
            document.push(Block::Paragraph(format!("<!-- page {} has no text -->", line.page)));
            previous = None;
            continue;
        }
        if line.image {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            document.push(Block::Image { alt: String::new() });
            previous = None;
            continue;
        }
        if let Some(table) = line.table {
            flush(&mut document, pending.take(), body, &heading_sizes, &mut list_base);
            let rows = table.rows.iter().map(|row| row.iter().map(|cell| crate::markdown::escape(cell)).collect());
            document.push(Block::Table(rows.collect()));
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
    use crate::pdf::pdfium::Glyph;

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
                font: 0,
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
                font: 0,
            }))
            .collect()
    }

    fn page(number: u32, lines: Vec<Vec<Glyph>>) -> PageLayout {
        PageLayout {
            number,
            width: 600.0,
            height: 800.0,
            glyphs: lines.concat(),
            fonts: vec![],
            images: vec![],
            rules: vec![],
        }
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
        assert!(crate::markdown::render(&read.document).contains("page 2 has no text -->"));
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

    /// A line of cells on a right-to-left page: Hebrew cells drawn from their right edge
    /// leftwards (`x` is where each cell ends), numbers left to right from `x` less their width.
    fn rtl_cells(row: &[(&str, f32)], y: f32) -> Vec<Glyph> {
        let mut line = Vec::new();
        for (text, right) in row {
            let width = 5.0;
            let n = text.chars().count() as f32;
            let mut cell = glyphs(text, right - n * width, y, 10.0, false);
            if text.chars().any(|c| ('\u{0590}'..='\u{05FF}').contains(&c)) {
                let xs: Vec<(f32, f32)> = cell.iter().filter(|g| !g.generated).map(|g| (g.x0, g.x1)).rev().collect();
                for (g, (x0, x1)) in cell.iter_mut().filter(|g| !g.generated).zip(xs) {
                    (g.x0, g.x1) = (x0, x1);
                }
            }
            cell.retain(|g| !g.generated);
            line.extend(cell);
        }
        line.extend(glyphs("", 0.0, y, 10.0, false));
        line
    }

    #[test]
    fn a_right_to_left_table_is_written_from_its_rightmost_column() {
        let p = page(
            1,
            vec![
                rtl_cells(&[("1403/09/19", 150.0), ("תאריך הגשה", 500.0)], 100.0),
                rtl_cells(&[("436", 150.0), ("מספר ישיבה", 500.0)], 112.0),
                rtl_cells(&[("20300", 150.0), ("מספר תקן", 500.0)], 124.0),
                rtl_cells(&[("47500", 150.0), ("כמות מינימלית", 500.0)], 136.0),
            ],
        );
        let markdown = markdown(&[p]);
        let rows: Vec<&str> = markdown.lines().filter(|l| !l.starts_with("|-")).collect();
        assert_eq!(rows.len(), 4, "{markdown}");
        for (row, (label, value)) in rows.iter().zip([
            ("תאריך הגשה", "1403/09/19"),
            ("מספר ישיבה", "436"),
            ("מספר תקן", "20300"),
            ("כמות מינימלית", "47500"),
        ]) {
            let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
            assert_eq!(cells, [label, value], "{markdown}");
        }
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

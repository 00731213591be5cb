//! A PDF's pages as an editable Word document, on the shared layout analysis
//! ([`crate::layout`]): each page's segments in reading order become lines, lines become
//! paragraphs (while their spacing, size and left edge agree and the line above runs as
//! far right as this one), with runs in the PDF's fonts, sizes, bold and italic; tables
//! become Word tables with their merged cells; pictures are cut from the rendered page and
//! placed where they stand. Each page size is a section with its own margins (the text's
//! extent), and each page starts on a new page.

use crate::error::EngineError;
use crate::layout::{self, Segment};
use crate::office::docx_write::{Align, Block, Document, Paragraph, Run, Section, Table};
use crate::pdf::pdfium::PageLayout;

/// Resolution pictures are cut at.
pub const PICTURE_DPI: u32 = 150;

/// A page's pictures as PNG, keyed by their boxes (points, top-down).
pub type Pictures = Vec<([f32; 4], Vec<u8>)>;

/// One line: segments side by side.
struct Line<'a> {
    segments: Vec<&'a Segment>,
    x0: f32,
    y0: f32,
    x1: f32,
    y1: f32,
    size: f32,
}

impl Line<'_> {
    fn first_text(&self) -> String {
        self.segments.first().map(|s| s.text()).unwrap_or_default()
    }
}

/// Words and signs that start a list item: a bullet or `1.`, `a)`.
fn starts_item(text: &str) -> bool {
    let t = text.trim_start();
    let mut chars = t.chars();
    match chars.next() {
        Some('•' | '◦' | '▪' | '‣' | '–' | '-' | '*' | '·' | '●' | '○' | '■') => {
            chars.next() == Some(' ')
        }
        Some(c) if c.is_ascii_digit() || c.is_ascii_lowercase() => {
            let head: String = t.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            head.len() <= 3
                && matches!(t[head.len()..].chars().next(), Some('.' | ')'))
                && t[head.len() + 1..].starts_with(' ')
        }
        _ => false,
    }
}

/// The document of `layouts`; `pictures` gives each page's pictures (same order).
pub fn document(layouts: &[PageLayout], pictures: &[Pictures], title: &str) -> Result<Document, EngineError> {
    let mut doc = Document { sections: Vec::new(), title: title.to_string() };
    let mut section_key: Option<(i64, i64)> = None;
    for (layout, pictures) in layouts.iter().zip(pictures) {
        let segments = layout::segments(layout);
        let rtl = layout::reads_right_to_left(&segments);
        let ordered = layout::reading_order(segments, layout.width, rtl);
        let text_box = text_box(&ordered, layout);
        let key = ((layout.width * 10.0).round() as i64, (layout.height * 10.0).round() as i64);
        if section_key != Some(key) {
            section_key = Some(key);
            doc.sections.push(Section {
                width: layout.width,
                height: layout.height,
                margins: [f32::MAX; 4],
                blocks: Vec::new(),
            });
        } else if let Some(section) = doc.sections.last_mut() {
            section.blocks.push(Block::PageBreak);
        }
        let section = doc.sections.last_mut().expect("a section was pushed");
        let margins = [text_box[1], layout.width - text_box[2], layout.height - text_box[3], text_box[0]];
        for (m, page) in section.margins.iter_mut().zip(margins) {
            *m = m.min(page);
        }
        let blocks = page_blocks(&ordered, layout, pictures, text_box);
        section.blocks.extend(blocks);
    }
    // Margins: the text's extent over the section's pages, within sensible bounds; paragraphs
    // were indented from each page's own text box, so the section's left margin is the least.
    for section in &mut doc.sections {
        for m in &mut section.margins {
            *m = if m.is_finite() { m.clamp(18.0, 144.0) } else { 72.0 };
        }
    }
    Ok(doc)
}

/// Left, top, right, bottom of the page's text and pictures.
fn text_box(segments: &[Segment], layout: &PageLayout) -> [f32; 4] {
    let mut b = [f32::MAX, f32::MAX, f32::MIN, f32::MIN];
    for s in segments {
        b = [b[0].min(s.x0), b[1].min(s.y0), b[2].max(s.x1), b[3].max(s.y1)];
    }
    if b[0] > b[2] {
        return [72.0, 72.0, layout.width - 72.0, layout.height - 72.0];
    }
    // Keep the margins within the page and at least a quarter inch. Ragged lines stop short
    // of the right margin: it is taken as wide as the left one unless text reaches further.
    let left = b[0].clamp(18.0, layout.width / 3.0);
    let right = b[2].max(layout.width - left).clamp(layout.width * 2.0 / 3.0, layout.width - 18.0);
    [left, b[1].clamp(18.0, layout.height / 3.0), right, b[3].clamp(layout.height * 2.0 / 3.0, layout.height - 18.0)]
}

fn font_name(layout: &PageLayout, index: u16) -> String {
    let raw = layout.fonts.get(index as usize).map(String::as_str).unwrap_or("");
    family(raw)
}

/// A PDF font name as the family Word should use: style suffixes and PostScript tags
/// dropped, CamelCase spaced (`TimesNewRomanPS-BoldMT` → `Times New Roman`).
pub fn family(name: &str) -> String {
    let base = name.split([',', '-']).next().unwrap_or(name).trim();
    let base = base
        .strip_suffix("PSMT")
        .or_else(|| base.strip_suffix("MT"))
        .or_else(|| base.strip_suffix("PS"))
        .unwrap_or(base);
    let lower = base.to_ascii_lowercase();
    // The base 14 and TeX's fonts, which no word processor has: their usual stand-ins.
    let known: [(&[&str], &str); 4] = [
        (&["helvetica", "nimbussan", "arial"], "Arial"),
        (&["courier", "nimbusmon", "cmtt", "sftt", "lmmono"], "Courier New"),
        (
            &["times", "nimbusrom", "cmr", "cmbx", "cmti", "cmsl", "sfrm", "sfbx", "sfti", "lmroman", "ptm"],
            "Times New Roman",
        ),
        (&["symbol", "cmsy", "cmmi", "cmex"], "Symbol"),
    ];
    if let Some((_, family)) = known.iter().find(|(prefixes, _)| prefixes.iter().any(|p| lower.starts_with(p))) {
        return family.to_string();
    }
    let mut out = String::new();
    let chars: Vec<char> = base.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let split = i > 0 && c.is_uppercase() && chars[i - 1].is_lowercase();
        if split {
            out.push(' ');
        }
        out.push(c);
    }
    if out.trim().is_empty() { "Liberation Serif".into() } else { out }
}

fn page_blocks(ordered: &[Segment], layout: &PageLayout, pictures: &Pictures, text_box: [f32; 4]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let body =
        layout::mode(&ordered.iter().filter(|s| s.table.is_none() && !s.image).map(|s| s.size).collect::<Vec<_>>());
    let body_font = ordered
        .iter()
        .find(|s| s.table.is_none() && !s.image)
        .map_or_else(|| "Liberation Serif".into(), |s| font_name(layout, s.font));
    let mut bottom = text_box[1];
    let mut lines: Vec<Line> = Vec::new();
    let flush = |lines: &mut Vec<Line>, blocks: &mut Vec<Block>, bottom: &mut f32| {
        for paragraph in paragraphs(std::mem::take(lines)) {
            let top = paragraph[0].y0;
            let p = paragraph_of(&paragraph, layout, text_box, top - *bottom);
            *bottom = paragraph.last().map_or(*bottom, |l| l.y1);
            blocks.push(Block::Paragraph(p));
        }
    };
    for s in ordered {
        if let Some(table) = &s.table {
            flush(&mut lines, &mut blocks, &mut bottom);
            let columns = table.rows.iter().map(Vec::len).max().unwrap_or(1).max(1);
            let width = (s.x1 - s.x0).max(36.0);
            blocks.push(Block::Table(Table {
                rows: table.rows.clone(),
                merged: table.merged.iter().map(|m| (m.row, m.column, m.rows, m.columns)).collect(),
                widths: vec![width / columns as f32; columns],
                font: body_font.clone(),
                size: if body > 0.0 { body } else { 10.0 },
                space_before: (s.y0 - bottom).max(0.0),
            }));
            bottom = s.y1;
            continue;
        }
        if s.image {
            flush(&mut lines, &mut blocks, &mut bottom);
            if let Some((_, png)) =
                pictures.iter().find(|(b, _)| (b[0] - s.x0).abs() < 0.5 && (b[1] - s.y0).abs() < 0.5)
            {
                let most = text_box[2] - text_box[0];
                let scale = if s.x1 - s.x0 > most { most / (s.x1 - s.x0) } else { 1.0 };
                blocks.push(Block::Picture {
                    png: png.clone(),
                    width: (s.x1 - s.x0) * scale,
                    height: (s.y1 - s.y0) * scale,
                    space_before: (s.y0 - bottom).max(0.0),
                });
                bottom = s.y1;
            }
            continue;
        }
        match lines.last_mut() {
            Some(line) if s.y0 < line.y1 - 0.3 * (line.y1 - line.y0).min(s.y1 - s.y0) && s.x0 >= line.x1 - 1.0 => {
                line.segments.push(s);
                line.x1 = line.x1.max(s.x1);
                line.y0 = line.y0.min(s.y0);
                line.y1 = line.y1.max(s.y1);
                line.size = line.size.max(s.size);
            }
            _ => lines.push(Line { segments: vec![s], x0: s.x0, y0: s.y0, x1: s.x1, y1: s.y1, size: s.size }),
        }
    }
    flush(&mut lines, &mut blocks, &mut bottom);
    blocks
}

/// The width of a line's first word, from its share of the line's characters.
fn first_word_width(line: &Line) -> f32 {
    let text = line.first_text();
    let all = text.chars().count().max(1) as f32;
    let word = text.split_whitespace().next().map_or(0, |w| w.chars().count()) as f32;
    let first = line.segments[0];
    (first.x1 - first.x0) * word / all
}

/// Lines grouped into paragraphs: a line continues the paragraph above when it follows
/// closely in the same size and column, and the line above ended only because the next
/// word would not fit (a short line ends its paragraph).
fn paragraphs(lines: Vec<Line>) -> Vec<Vec<Line>> {
    let mut out: Vec<Vec<Line>> = Vec::new();
    for line in lines {
        let joins = out.last().is_some_and(|p: &Vec<Line>| {
            let prev = p.last().expect("paragraphs are not empty");
            let left = p.iter().skip(usize::from(p.len() > 1)).map(|l| l.x0).fold(f32::MAX, f32::min);
            let right = p.iter().map(|l| l.x1).fold(line.x1, f32::max);
            let size = prev.size.max(1.0);
            let gap = line.y0 - prev.y1;
            gap > -1.0
                && gap < size * 0.8
                && (line.size - prev.size).abs() < size * 0.15
                && line.x0 >= left - 2.0
                && line.x0 <= left + size * 4.0
                && prev.x1 + size * 0.3 + first_word_width(&line) >= right - size * 0.5
                && !starts_item(&line.first_text())
        });
        if joins {
            out.last_mut().expect("checked").push(line);
        } else {
            out.push(vec![line]);
        }
    }
    out
}

fn paragraph_of(lines: &[Line], layout: &PageLayout, text_box: [f32; 4], gap_above: f32) -> Paragraph {
    let mut runs: Vec<Run> = Vec::new();
    fn push(runs: &mut Vec<Run>, text: &str, font: String, size: f32, bold: bool, italic: bool) {
        match runs.last_mut() {
            Some(r) if r.font == font && (r.size - size).abs() < 0.25 && r.bold == bold && r.italic == italic => {
                r.text.push_str(text)
            }
            _ => runs.push(Run { text: text.to_string(), font, size, bold, italic }),
        }
    }
    for (i, line) in lines.iter().enumerate() {
        for (k, s) in line.segments.iter().enumerate() {
            let font = font_name(layout, s.font);
            if i > 0 && k == 0 {
                // Join with the line above: a word hyphenated at its end is mended.
                let prev_text: String = runs.iter().map(|r| r.text.as_str()).collect();
                let next = s.text();
                let hyphen = prev_text.ends_with('-')
                    && prev_text[..prev_text.len() - 1].ends_with(char::is_alphabetic)
                    && next.starts_with(char::is_lowercase);
                if hyphen {
                    if let Some(r) = runs.iter_mut().rev().find(|r| !r.text.is_empty()) {
                        r.text.pop();
                    }
                } else if !prev_text.ends_with(' ') {
                    push(&mut runs, " ", font.clone(), s.size, false, false);
                }
            } else if k > 0 {
                push(&mut runs, " ", font.clone(), s.size, false, false);
            }
            let mut chunk = String::new();
            let mut style = None;
            for (c, st) in &s.chars {
                if style.is_some_and(|x: (bool, bool)| x != (st.bold, st.italic)) {
                    let (b, it) = style.expect("checked");
                    push(&mut runs, &chunk, font.clone(), s.size, b, it);
                    chunk.clear();
                }
                style = Some((st.bold, st.italic));
                chunk.push(*c);
            }
            if let Some((b, it)) = style {
                push(&mut runs, &chunk, font.clone(), s.size, b, it);
            }
        }
    }
    let left = lines.iter().skip(usize::from(lines.len() > 1)).map(|l| l.x0).fold(f32::MAX, f32::min);
    let first = lines[0].x0;
    let size = lines[0].size.max(1.0);
    let (text_left, text_right) = (text_box[0], text_box[2]);
    let center = (text_left + text_right) / 2.0;
    let single = lines.len() == 1;
    let line_center = |l: &Line| (l.x0 + l.x1) / 2.0;
    let centred = lines.iter().all(|l| (line_center(l) - center).abs() < 3.0) && first > text_left + size * 2.0;
    let right =
        lines.iter().all(|l| (l.x1 - text_right).abs() < 2.0) && first > text_left + (text_right - text_left) * 0.4;
    let justified = !single && lines[..lines.len() - 1].iter().all(|l| (l.x1 - lines[0].x1).abs() < 1.5);
    let rtl = layout::is_rtl(
        &lines.iter().flat_map(|l| l.segments.iter().flat_map(|s| s.chars.iter().copied())).collect::<Vec<_>>(),
    );
    // In a right-to-left paragraph Word's `left` is its start, on the right.
    let align = if centred {
        Align::Center
    } else if justified {
        Align::Both
    } else if right && !rtl {
        Align::Right
    } else {
        Align::Left
    };
    let (indent, first_line) = match align {
        _ if rtl => (0.0, 0.0),
        Align::Left | Align::Both if single => ((first - text_left).max(0.0), 0.0),
        Align::Left | Align::Both => ((left - text_left).max(0.0), first - left),
        _ => (0.0, 0.0),
    };
    let line_height =
        if lines.len() > 1 { (lines[lines.len() - 1].y0 - lines[0].y0) / (lines.len() - 1) as f32 } else { 0.0 };
    Paragraph {
        runs,
        align,
        indent,
        first_line,
        space_before: (gap_above - size * 0.25).clamp(0.0, 144.0),
        line_height,
        rtl,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn font_names_become_families() {
        assert_eq!(family("TimesNewRomanPS-BoldMT"), "Times New Roman");
        assert_eq!(family("Arial-BoldMT"), "Arial");
        assert_eq!(family("Helvetica-Oblique"), "Arial");
        assert_eq!(family("CMBX10"), "Times New Roman");
        assert_eq!(family("NimbusRomNo9L-Medi"), "Times New Roman");
        assert_eq!(family("Courier"), "Courier New");
        assert_eq!(family("LiberationSans,Bold"), "Liberation Sans");
        assert_eq!(family(""), "Liberation Serif");
    }

    #[test]
    fn list_items_are_told() {
        assert!(starts_item("• one"));
        assert!(starts_item("1. one"));
        assert!(starts_item("b) two"));
        assert!(!starts_item("1.5 million"));
        assert!(!starts_item("Dear sir"));
    }
}

//! Words of pages as pdfium reads them: runs of drawn characters between spaces and line
//! breaks, each with its box. What compare diffs and redact keeps or finds.

use crate::pdf::pdfium::PageLayout;

/// One word and where it is.
#[derive(Clone, Debug)]
pub struct Word {
    /// Its characters.
    pub text: String,
    /// 1-based page number.
    pub page: u32,
    /// `[left, top, right, bottom]` in points from the visible page's top left corner.
    pub area: [f32; 4],
}

/// The words of every page, in reading order.
pub fn words_of(layouts: &[PageLayout]) -> Vec<Word> {
    let mut words = Vec::new();
    for layout in layouts {
        let mut current: Option<Word> = None;
        for g in &layout.glyphs {
            let new_line = current.as_ref().is_some_and(|w| {
                let mid = (g.y0 + g.y1) / 2.0;
                mid < w.area[1] || mid > w.area[3] || g.x0 + 0.5 < w.area[0]
            });
            if g.ch.is_whitespace() || new_line {
                words.extend(current.take());
            }
            if g.ch.is_whitespace() {
                continue;
            }
            match current.as_mut() {
                Some(w) => {
                    w.text.push(g.ch);
                    w.area = [w.area[0].min(g.x0), w.area[1].min(g.y0), w.area[2].max(g.x1), w.area[3].max(g.y1)];
                }
                None => {
                    current = Some(Word { text: g.ch.to_string(), page: layout.number, area: [g.x0, g.y0, g.x1, g.y1] })
                }
            }
        }
        words.extend(current);
    }
    words
}

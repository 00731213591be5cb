//! Reading a TrueType font program, and cutting it down to the glyphs a simple font can
//! reach, for embedding (PDF/A's `/FontFile2`).
//!
//! The cut keeps every glyph's number: glyphs not kept are emptied in `glyf`, so the
//! font's own `cmap` and `hmtx` stay true and the widths written in the PDF match the
//! program, as PDF/A requires. Only the tables a PDF reader uses are written.

use std::collections::BTreeSet;

/// Tables written into the cut font, sorted by tag as the table directory wants.
const KEPT_TABLES: [&[u8; 4]; 14] = [
    b"OS/2", b"cmap", b"cvt ", b"fpgm", b"gasp", b"glyf", b"head", b"hhea", b"hmtx", b"loca", b"maxp", b"name",
    b"post", b"prep",
];

/// Deepest nesting of composite glyphs followed.
const MAX_COMPOSITE_DEPTH: usize = 16;

/// A parsed TrueType font: its bytes and table directory.
pub struct TrueType<'a> {
    data: &'a [u8],
    tables: Vec<([u8; 4], &'a [u8])>,
}

fn u16_at(data: &[u8], at: usize) -> Option<u16> {
    data.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]]))
}

fn i16_at(data: &[u8], at: usize) -> Option<i16> {
    u16_at(data, at).map(|v| v as i16)
}

fn u32_at(data: &[u8], at: usize) -> Option<u32> {
    data.get(at..at + 4).map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl<'a> TrueType<'a> {
    /// Parses the table directory; None for anything but a TrueType-outline font.
    pub fn parse(data: &'a [u8]) -> Option<TrueType<'a>> {
        let version = u32_at(data, 0)?;
        if version != 0x0001_0000 && &data[..4] != b"true" {
            return None;
        }
        let count = u16_at(data, 4)? as usize;
        let mut tables = Vec::with_capacity(count);
        for i in 0..count {
            let record = 12 + 16 * i;
            let tag: [u8; 4] = data.get(record..record + 4)?.try_into().ok()?;
            let offset = u32_at(data, record + 8)? as usize;
            let length = u32_at(data, record + 12)? as usize;
            tables.push((tag, data.get(offset..offset.checked_add(length)?)?));
        }
        let font = TrueType { data, tables };
        // What every use below needs.
        for tag in [b"head", b"hhea", b"hmtx", b"maxp", b"cmap", b"loca", b"glyf"] {
            font.table(tag)?;
        }
        Some(font)
    }

    fn table(&self, tag: &[u8; 4]) -> Option<&'a [u8]> {
        self.tables.iter().find(|(t, _)| t == tag).map(|(_, data)| *data)
    }

    /// Font units per em.
    pub fn units_per_em(&self) -> u16 {
        self.table(b"head").and_then(|h| u16_at(h, 18)).filter(|&u| u > 0).unwrap_or(1000)
    }

    /// Scales font units to the PDF's thousandths of an em.
    pub fn to_pdf(&self, units: f64) -> f64 {
        units * 1000.0 / self.units_per_em() as f64
    }

    /// The font's bounding box, in font units.
    pub fn bbox(&self) -> [i16; 4] {
        let head = self.table(b"head").unwrap_or_default();
        [0, 2, 4, 6].map(|i| i16_at(head, 36 + i).unwrap_or(0))
    }

    /// Ascender and descender (hhea), in font units.
    pub fn ascent_descent(&self) -> (i16, i16) {
        let hhea = self.table(b"hhea").unwrap_or_default();
        (i16_at(hhea, 4).unwrap_or(0), i16_at(hhea, 6).unwrap_or(0))
    }

    /// Capital height (OS/2 version 2 and later), in font units.
    pub fn cap_height(&self) -> Option<i16> {
        let os2 = self.table(b"OS/2")?;
        (u16_at(os2, 0)? >= 2).then(|| i16_at(os2, 88)).flatten()
    }

    /// Weight class (400 regular, 700 bold).
    pub fn weight(&self) -> u16 {
        self.table(b"OS/2").and_then(|t| u16_at(t, 4)).unwrap_or(400)
    }

    /// Italic angle in degrees, and whether every glyph has the same width.
    pub fn italic_angle_and_fixed(&self) -> (f64, bool) {
        let Some(post) = self.table(b"post") else { return (0.0, false) };
        let angle = i16_at(post, 4).unwrap_or(0) as f64 + u16_at(post, 6).unwrap_or(0) as f64 / 65536.0;
        (angle, u32_at(post, 12).unwrap_or(0) != 0)
    }

    /// The PostScript name (name ID 6).
    pub fn postscript_name(&self) -> Option<String> {
        let name = self.table(b"name")?;
        let count = u16_at(name, 2)? as usize;
        let strings = u16_at(name, 4)? as usize;
        for i in 0..count {
            let r = 6 + 12 * i;
            let (platform, id) = (u16_at(name, r)?, u16_at(name, r + 6)?);
            if id != 6 {
                continue;
            }
            let length = u16_at(name, r + 8)? as usize;
            let offset = strings + u16_at(name, r + 10)? as usize;
            let bytes = name.get(offset..offset + length)?;
            let text = match platform {
                3 | 0 => {
                    let units: Vec<u16> = bytes.chunks_exact(2).map(|c| u16::from_be_bytes([c[0], c[1]])).collect();
                    String::from_utf16(&units).ok()?
                }
                _ => bytes.iter().map(|&b| b as char).collect(),
            };
            // A PDF name must be printable ASCII without delimiters.
            let clean: String = text.chars().filter(|c| c.is_ascii_graphic() && !"()<>[]{}/%#".contains(*c)).collect();
            if !clean.is_empty() {
                return Some(clean);
            }
        }
        None
    }

    fn num_glyphs(&self) -> u16 {
        self.table(b"maxp").and_then(|m| u16_at(m, 4)).unwrap_or(0)
    }

    /// A glyph's advance width, in font units.
    pub fn advance(&self, glyph: u16) -> u16 {
        let hhea = self.table(b"hhea").unwrap_or_default();
        let hmtx = self.table(b"hmtx").unwrap_or_default();
        let metrics = u16_at(hhea, 34).unwrap_or(0).max(1);
        let index = glyph.min(metrics - 1) as usize;
        u16_at(hmtx, 4 * index).unwrap_or(0)
    }

    /// The glyph the font's Unicode cmap gives `c`; None when it has none.
    pub fn glyph_for(&self, c: char) -> Option<u16> {
        let cmap = self.table(b"cmap")?;
        let count = u16_at(cmap, 2)? as usize;
        let mut best: Option<(u8, &[u8])> = None;
        for i in 0..count {
            let r = 4 + 8 * i;
            let (platform, encoding) = (u16_at(cmap, r)?, u16_at(cmap, r + 2)?);
            let sub = cmap.get(u32_at(cmap, r + 4)? as usize..)?;
            let rank = match (platform, encoding, u16_at(sub, 0)?) {
                (3, 10, 12) | (0, 4, 12) => 2,
                (3, 1, 4) | (0, 3, 4) => 1,
                _ => continue,
            };
            if best.is_none_or(|(r, _)| rank > r) {
                best = Some((rank, sub));
            }
        }
        let (_, sub) = best?;
        let code = c as u32;
        let glyph = match u16_at(sub, 0)? {
            4 => format4(sub, u16::try_from(code).ok()?)?,
            _ => format12(sub, code)?,
        };
        (glyph != 0 && glyph < self.num_glyphs()).then_some(glyph)
    }

    /// The outline bytes of every glyph, from `loca` and `glyf`.
    fn glyphs(&self) -> Vec<&'a [u8]> {
        let head = self.table(b"head").unwrap_or_default();
        let loca = self.table(b"loca").unwrap_or_default();
        let glyf = self.table(b"glyf").unwrap_or_default();
        let long = i16_at(head, 50) == Some(1);
        let offset = |i: usize| -> Option<usize> {
            if long { u32_at(loca, 4 * i).map(|v| v as usize) } else { u16_at(loca, 2 * i).map(|v| 2 * v as usize) }
        };
        (0..self.num_glyphs() as usize)
            .map(|i| match (offset(i), offset(i + 1)) {
                (Some(a), Some(b)) if a <= b => glyf.get(a..b).unwrap_or_default(),
                _ => &[],
            })
            .collect()
    }

    /// The font with only the glyphs `keep` (and .notdef, and the parts of kept composite
    /// glyphs) drawn; every glyph keeps its number.
    pub fn cut(&self, keep: &BTreeSet<u16>) -> Vec<u8> {
        let glyphs = self.glyphs();
        let mut kept: BTreeSet<u16> = keep.iter().copied().filter(|&g| (g as usize) < glyphs.len()).collect();
        kept.insert(0);
        let mut todo: Vec<(u16, usize)> = kept.iter().map(|&g| (g, 0)).collect();
        while let Some((glyph, depth)) = todo.pop() {
            if depth >= MAX_COMPOSITE_DEPTH {
                continue;
            }
            for part in components(glyphs[glyph as usize]) {
                if (part as usize) < glyphs.len() && kept.insert(part) {
                    todo.push((part, depth + 1));
                }
            }
        }
        let mut glyf = Vec::new();
        let mut loca = Vec::with_capacity(4 * (glyphs.len() + 1));
        for (i, outline) in glyphs.iter().enumerate() {
            loca.extend_from_slice(&(glyf.len() as u32).to_be_bytes());
            if kept.contains(&(i as u16)) {
                glyf.extend_from_slice(outline);
                glyf.resize(glyf.len().next_multiple_of(4), 0);
            }
        }
        loca.extend_from_slice(&(glyf.len() as u32).to_be_bytes());
        let mut head = self.table(b"head").unwrap_or_default().to_vec();
        if head.len() >= 54 {
            head[8..12].copy_from_slice(&[0; 4]);
            head[50..52].copy_from_slice(&1i16.to_be_bytes());
        }
        // Glyph names are not needed: the PDF maps codes through the Unicode cmap.
        let post = self.table(b"post").map(|p| {
            let mut p = p.get(..32).unwrap_or(p).to_vec();
            p.resize(32, 0);
            p[..4].copy_from_slice(&0x0003_0000u32.to_be_bytes());
            p
        });
        let mut tables: Vec<([u8; 4], Vec<u8>)> = Vec::new();
        for tag in KEPT_TABLES {
            let data = match tag {
                b"glyf" => Some(std::mem::take(&mut glyf)),
                b"loca" => Some(std::mem::take(&mut loca)),
                b"head" => Some(std::mem::take(&mut head)),
                b"post" => post.clone(),
                _ => self.table(tag).map(<[u8]>::to_vec),
            };
            if let Some(data) = data {
                tables.push((*tag, data));
            }
        }
        write_font(self.data, tables)
    }
}

fn format4(sub: &[u8], code: u16) -> Option<u16> {
    let segments = u16_at(sub, 6)? as usize / 2;
    let ends = 14;
    let starts = ends + 2 * segments + 2;
    let deltas = starts + 2 * segments;
    let ranges = deltas + 2 * segments;
    for s in 0..segments {
        if code > u16_at(sub, ends + 2 * s)? {
            continue;
        }
        let start = u16_at(sub, starts + 2 * s)?;
        if code < start {
            return None;
        }
        let delta = u16_at(sub, deltas + 2 * s)?;
        let range = u16_at(sub, ranges + 2 * s)? as usize;
        if range == 0 {
            return Some(code.wrapping_add(delta));
        }
        let at = ranges + 2 * s + range + 2 * (code - start) as usize;
        let glyph = u16_at(sub, at)?;
        return (glyph != 0).then(|| glyph.wrapping_add(delta));
    }
    None
}

fn format12(sub: &[u8], code: u32) -> Option<u16> {
    let groups = u32_at(sub, 12)? as usize;
    for g in 0..groups.min(sub.len() / 12) {
        let at = 16 + 12 * g;
        let (start, end, first) = (u32_at(sub, at)?, u32_at(sub, at + 4)?, u32_at(sub, at + 8)?);
        if (start..=end).contains(&code) {
            return u16::try_from(first + (code - start)).ok();
        }
    }
    None
}

/// The glyphs a composite glyph is made of.
fn components(outline: &[u8]) -> Vec<u16> {
    let mut parts = Vec::new();
    if i16_at(outline, 0).is_none_or(|contours| contours >= 0) {
        return parts;
    }
    let mut at = 10;
    while let (Some(flags), Some(glyph)) = (u16_at(outline, at), u16_at(outline, at + 2)) {
        parts.push(glyph);
        at += 4 + if flags & 0x0001 != 0 { 4 } else { 2 };
        at += match flags {
            f if f & 0x0008 != 0 => 2,
            f if f & 0x0040 != 0 => 4,
            f if f & 0x0080 != 0 => 8,
            _ => 0,
        };
        if flags & 0x0020 == 0 {
            break;
        }
    }
    parts
}

fn checksum(data: &[u8]) -> u32 {
    data.chunks(4).fold(0u32, |sum, chunk| {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        sum.wrapping_add(u32::from_be_bytes(word))
    })
}

/// Writes a font file of `tables` (sorted by tag), with checksums and the head adjustment.
fn write_font(original: &[u8], tables: Vec<([u8; 4], Vec<u8>)>) -> Vec<u8> {
    let count = tables.len() as u16;
    let mut power = 1u16;
    while power * 2 <= count {
        power *= 2;
    }
    let mut out = Vec::new();
    out.extend_from_slice(&original[..4]);
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&(power * 16).to_be_bytes());
    out.extend_from_slice(&(power.trailing_zeros() as u16).to_be_bytes());
    out.extend_from_slice(&(count * 16 - power * 16).to_be_bytes());
    let mut offset = 12 + 16 * tables.len();
    let mut head_at = None;
    for (tag, data) in &tables {
        out.extend_from_slice(tag);
        out.extend_from_slice(&checksum(data).to_be_bytes());
        out.extend_from_slice(&(offset as u32).to_be_bytes());
        out.extend_from_slice(&(data.len() as u32).to_be_bytes());
        if tag == b"head" {
            head_at = Some(offset);
        }
        offset += data.len().next_multiple_of(4);
    }
    for (_, data) in &tables {
        out.extend_from_slice(data);
        out.resize(out.len().next_multiple_of(4), 0);
    }
    if let Some(at) = head_at.filter(|at| at + 12 <= out.len()) {
        let adjustment = 0xB1B0_AFBAu32.wrapping_sub(checksum(&out));
        out[at + 8..at + 12].copy_from_slice(&adjustment.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_truetype_font() {
        assert!(TrueType::parse(b"").is_none());
        assert!(TrueType::parse(b"OTTO\0\0\0\0\0\0\0\0").is_none());
        // A directory pointing past the end.
        let mut bad = vec![0, 1, 0, 0, 0, 1, 0, 16, 0, 0, 0, 0];
        bad.extend_from_slice(b"head\0\0\0\0\0\0\x10\0\0\0\x10\0");
        assert!(TrueType::parse(&bad).is_none());
    }

    #[test]
    fn reads_segment_mapping() {
        // One segment 0x41..=0x43 with delta 1 (A → 66), then the closing 0xFFFF segment.
        // ends, pad, starts, deltas, ranges.
        let mut s = vec![0, 4, 0, 32, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0];
        for v in [0x43u16, 0xFFFF, 0, 0x41, 0xFFFF, 1, 1, 0, 0] {
            s.extend_from_slice(&v.to_be_bytes());
        }
        assert_eq!(format4(&s, 0x41), Some(0x42));
        assert_eq!(format4(&s, 0x43), Some(0x44));
        assert_eq!(format4(&s, 0x40), None);
        assert_eq!(components(&[0xFF, 0xFF]), Vec::<u16>::new());
    }
}

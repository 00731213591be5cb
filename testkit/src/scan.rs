//! Scans made from PDFs whose text is known: pages rendered by poppler's `pdftoppm` to
//! grey pixels, optionally spoiled the way a scanner spoils them (noise, a slight skew,
//! fed sideways), and put back into an image-only PDF, for the OCR tests and benchmark.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use crate::page_pdf::{Font, PagePdf, write_objects};

/// The page's text, line by line: ordinary prose with capitals, digits and punctuation.
pub const SAMPLE_LINES: &[&str] = &[
    "Annual report of the harbour board, 2024",
    "The board met eleven times during the year and approved",
    "the new quay wall, which was finished in September at a",
    "cost of 4,215,000 euros, some 3.5% below the estimate.",
    "Cargo handled rose to 1,842 ships and 27,300 containers;",
    "passenger traffic fell slightly, mostly in the winter.",
    "Dredging of the northern channel will begin next spring.",
    "Questions about this report may be sent to the secretary",
    "at the harbour office, Quay Street 12, before 30 June.",
    "Members thanked the pilots, the tug crews and the staff",
    "of the customs house for a safe and busy season.",
];

const LEFT: f64 = 72.0;
const TOP: f64 = 96.0;
const LEADING: f64 = 18.0;
/// The font size of the sample page's text, in points.
pub const SAMPLE_SIZE: f64 = 12.0;

/// A page of prose (US Letter, Helvetica 12 pt) and its text.
pub fn sample_page() -> (Vec<u8>, String) {
    let mut pdf = PagePdf::new(612.0, 792.0);
    for (i, line) in SAMPLE_LINES.iter().enumerate() {
        pdf.text(LEFT, TOP + LEADING * i as f64, SAMPLE_SIZE, Font::Regular, line);
    }
    (pdf.finish(), SAMPLE_LINES.join("\n"))
}

/// A grey page image: one byte a pixel, rows top to bottom.
#[derive(Clone, Debug, PartialEq)]
pub struct Gray {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width × height` bytes, 0 black to 255 white.
    pub pixels: Vec<u8>,
}

/// Page `page` (1-based) of the PDF at `pdf` rendered at `dpi` by `pdftoppm`.
pub fn render(pdf: &Path, page: u32, dpi: u32) -> Gray {
    let dir = std::env::temp_dir().join(format!("paperchain-scan-{}-{page}-{dpi}-{}", std::process::id(), nonce()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = dir.join("page");
    let out = Command::new("pdftoppm")
        .args(["-gray", "-r", &dpi.to_string(), "-f", &page.to_string(), "-l", &page.to_string(), "-singlefile"])
        .arg(pdf)
        .arg(&base)
        .output()
        .expect("pdftoppm (poppler-utils) is installed");
    assert!(out.status.success(), "pdftoppm failed: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(base.with_extension("pgm")).unwrap();
    std::fs::remove_dir_all(&dir).ok();
    parse_pgm(&bytes)
}

fn nonce() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A binary PGM (`P5`, 8 bits).
fn parse_pgm(bytes: &[u8]) -> Gray {
    let mut fields = Vec::new();
    let mut at = 0;
    while fields.len() < 4 {
        while bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if bytes[at] == b'#' {
            while bytes[at] != b'\n' {
                at += 1;
            }
            continue;
        }
        let start = at;
        while !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        fields.push(String::from_utf8_lossy(&bytes[start..at]).into_owned());
    }
    assert_eq!(fields[0], "P5", "not a binary PGM");
    assert_eq!(fields[3], "255", "not 8 bits a pixel");
    let (width, height): (usize, usize) = (fields[1].parse().unwrap(), fields[2].parse().unwrap());
    let pixels = bytes[at + 1..at + 1 + width * height].to_vec();
    Gray { width, height, pixels }
}

/// A small deterministic random sequence (xorshift), so spoiled scans are the same in every run.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

impl Gray {
    /// Scanner noise: every pixel jittered by up to ±`jitter` levels, and `specks` of
    /// every 10,000 pixels turned black or white (dust and dropouts).
    pub fn noisy(&self, jitter: u8, specks: u32, seed: u64) -> Gray {
        let mut random = Xorshift(seed | 1);
        let pixels = self
            .pixels
            .iter()
            .map(|&p| {
                let r = random.next();
                if (r % 10_000) < specks as u64 {
                    return if r & 1 << 20 == 0 { 0 } else { 255 };
                }
                let delta = ((r >> 32) % (2 * jitter as u64 + 1)) as i32 - jitter as i32;
                (p as i32 + delta).clamp(0, 255) as u8
            })
            .collect();
        Gray { pixels, ..self.clone() }
    }

    /// Turned by `degrees` (positive is clockwise) about the centre, same size, corners
    /// filled white: a page fed slightly askew.
    pub fn skewed(&self, degrees: f64) -> Gray {
        let (sin, cos) = degrees.to_radians().sin_cos();
        let (cx, cy) = (self.width as f64 / 2.0, self.height as f64 / 2.0);
        let mut pixels = vec![255u8; self.pixels.len()];
        for y in 0..self.height {
            for x in 0..self.width {
                // The source pixel that lands here (the inverse turn), bilinear.
                let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                let sx = cos * dx + sin * dy + cx - 0.5;
                let sy = -sin * dx + cos * dy + cy - 0.5;
                if sx < 0.0 || sy < 0.0 || sx >= (self.width - 1) as f64 || sy >= (self.height - 1) as f64 {
                    continue;
                }
                let (x0, y0) = (sx as usize, sy as usize);
                let (fx, fy) = (sx - x0 as f64, sy - y0 as f64);
                let at = |x: usize, y: usize| self.pixels[y * self.width + x] as f64;
                let top = at(x0, y0) * (1.0 - fx) + at(x0 + 1, y0) * fx;
                let bottom = at(x0, y0 + 1) * (1.0 - fx) + at(x0 + 1, y0 + 1) * fx;
                pixels[y * self.width + x] = (top * (1.0 - fy) + bottom * fy).round() as u8;
            }
        }
        Gray { pixels, ..self.clone() }
    }

    /// Turned a quarter clockwise (a page fed sideways).
    pub fn quarter_turned(&self) -> Gray {
        let (w, h) = (self.width, self.height);
        let mut pixels = vec![0u8; w * h];
        for y in 0..h {
            for x in 0..w {
                pixels[x * h + (h - 1 - y)] = self.pixels[y * w + x];
            }
        }
        Gray { width: h, height: w, pixels }
    }
}

/// An image-only PDF: each page one grey picture drawn over a page of `dpi` resolution
/// (so its size in points is the picture's at that resolution), Flate-compressed.
pub fn image_pdf(pages: &[&Gray], dpi: u32) -> Vec<u8> {
    let mut objects: Vec<Vec<u8>> = Vec::new();
    // 1: catalog, 2: pages, then per page: the page, its content, its image.
    let kids: Vec<String> = (0..pages.len()).map(|i| format!("{} 0 R", 3 + 3 * i)).collect();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    objects.push(format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), pages.len()).into_bytes());
    for (i, page) in pages.iter().enumerate() {
        let (content_id, image_id) = (4 + 3 * i, 5 + 3 * i);
        let (w, h) = (page.width as f64 * 72.0 / dpi as f64, page.height as f64 * 72.0 / dpi as f64);
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w:.3} {h:.3}] /Contents {content_id} 0 R /Resources << \
                 /XObject << /Im0 {image_id} 0 R >> >> >>"
            )
            .into_bytes(),
        );
        let content = format!("q {w:.3} 0 0 {h:.3} 0 0 cm /Im0 Do Q");
        objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len() + 1).into_bytes());
        let mut deflate = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        deflate.write_all(&page.pixels).unwrap();
        let data = deflate.finish().unwrap();
        let mut image = format!(
            "<< /Type /XObject /Subtype /Image /Width {} /Height {} /ColorSpace /DeviceGray /BitsPerComponent 8 \
             /Filter /FlateDecode /Length {} >>\nstream\n",
            page.width,
            page.height,
            data.len()
        )
        .into_bytes();
        image.extend_from_slice(&data);
        image.extend_from_slice(b"\nendstream");
        objects.push(image);
    }
    write_objects(&objects)
}

/// Character accuracy of `read` against `truth`: 1 − (edit distance / characters of the
/// truth), white space runs counted as one space on both sides.
pub fn char_accuracy(read: &str, truth: &str) -> f64 {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ").chars().collect::<Vec<char>>();
    let (a, b) = (squeeze(read), squeeze(truth));
    if b.is_empty() {
        return if a.is_empty() { 1.0 } else { 0.0 };
    }
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    1.0 - row[b.len()] as f64 / b.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accuracy_counts_edits_against_the_truth() {
        assert_eq!(char_accuracy("hello  world", "hello world"), 1.0);
        assert!((char_accuracy("hallo world", "hello world") - (1.0 - 1.0 / 11.0)).abs() < 1e-9);
        assert_eq!(char_accuracy("", "abcd"), 0.0);
    }

    #[test]
    fn a_quarter_turn_moves_the_top_left_to_the_top_right() {
        let g = Gray { width: 3, height: 2, pixels: vec![1, 2, 3, 4, 5, 6] };
        assert_eq!(g.quarter_turned(), Gray { width: 2, height: 3, pixels: vec![4, 1, 5, 2, 6, 3] });
        // No skew is the same image.
        let big = Gray { width: 4, height: 4, pixels: (0..16).map(|v| v * 10).collect() };
        assert_eq!(big.skewed(0.0).pixels[5], big.pixels[5]);
    }
}

//! Writes simple PDFs whose content is known exactly, for tests of the routes that read a
//! PDF's layout (tables, bank statements, to-docx): text in the standard Helvetica fonts at
//! given places, and ruled lines. Coordinates are points from the page's top-left corner.

/// A PDF being drawn, page by page.
pub struct PagePdf {
    width: f64,
    height: f64,
    /// Each page's content and size.
    pages: Vec<(String, f64, f64)>,
}

/// A font of the standard 14 (no file embedded; every reader has them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Font {
    /// Helvetica.
    Regular,
    /// Helvetica-Bold.
    Bold,
    /// Helvetica-Oblique.
    Italic,
    /// Courier.
    Mono,
}

impl Font {
    fn resource(self) -> &'static str {
        match self {
            Font::Regular => "F1",
            Font::Bold => "F2",
            Font::Italic => "F3",
            Font::Mono => "F4",
        }
    }
}

impl PagePdf {
    /// A document with one empty page of `width` × `height` points (A4 is 595 × 842).
    pub fn new(width: f64, height: f64) -> PagePdf {
        PagePdf { width, height, pages: vec![(String::new(), width, height)] }
    }

    /// Starts a new page of the same size.
    pub fn page(&mut self) -> &mut Self {
        self.sized_page(self.width, self.height)
    }

    /// Starts a new page of `width` × `height` points.
    pub fn sized_page(&mut self, width: f64, height: f64) -> &mut Self {
        self.pages.push((String::new(), width, height));
        self.width = width;
        self.height = height;
        self
    }

    fn content(&mut self) -> &mut String {
        &mut self.pages.last_mut().expect("a page").0
    }

    /// `text` (Latin-1) with its left end at `x` and its baseline `y` points from the top.
    pub fn text(&mut self, x: f64, y: f64, size: f64, font: Font, text: &str) -> &mut Self {
        let y = self.height - y;
        let escaped: String = text
            .chars()
            .map(|c| match c {
                '(' | ')' | '\\' => format!("\\{c}"),
                c if (c as u32) < 0x80 => c.to_string(),
                c if (c as u32) < 0x100 => format!("\\{:03o}", c as u32),
                '€' => "\\200".to_string(),
                '–' => "\\226".to_string(),
                _ => "?".to_string(),
            })
            .collect();
        let op = format!("BT /{} {size} Tf {x:.2} {y:.2} Td ({escaped}) Tj ET\n", font.resource());
        self.content().push_str(&op);
        self
    }

    /// `text` with its right end at `x` (numbers in a column), in Helvetica's widths.
    pub fn text_right(&mut self, x: f64, y: f64, size: f64, font: Font, text: &str) -> &mut Self {
        let width = text_width(text, size, font);
        self.text(x - width, y, size, font, text)
    }

    /// A line from (`x0`, `y0`) to (`x1`, `y1`), half a point wide.
    pub fn line(&mut self, x0: f64, y0: f64, x1: f64, y1: f64) -> &mut Self {
        let (y0, y1) = (self.height - y0, self.height - y1);
        let op = format!("0.5 w {x0:.2} {y0:.2} m {x1:.2} {y1:.2} l S\n");
        self.content().push_str(&op);
        self
    }

    /// A grid of rules: a horizontal line at each of `ys` from the first to the last of
    /// `xs`, a vertical one at each of `xs`.
    pub fn grid(&mut self, xs: &[f64], ys: &[f64]) -> &mut Self {
        let (left, right) = (xs[0], xs[xs.len() - 1]);
        let (top, bottom) = (ys[0], ys[ys.len() - 1]);
        for &y in ys {
            self.line(left, y, right, y);
        }
        for &x in xs {
            self.line(x, top, x, bottom);
        }
        self
    }

    /// The PDF's bytes.
    pub fn finish(&self) -> Vec<u8> {
        let fonts = ["Helvetica", "Helvetica-Bold", "Helvetica-Oblique", "Courier"];
        let mut objects: Vec<String> = Vec::new();
        // 1: catalog, 2: pages, 3..=6: fonts, then a page and its content per page.
        let first_page = 7;
        let kids: Vec<String> = (0..self.pages.len()).map(|i| format!("{} 0 R", first_page + 2 * i)).collect();
        objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
        objects.push(format!("<< /Type /Pages /Kids [{}] /Count {} >>", kids.join(" "), self.pages.len()));
        for font in fonts {
            objects.push(format!("<< /Type /Font /Subtype /Type1 /BaseFont /{font} /Encoding /WinAnsiEncoding >>"));
        }
        for (i, (content, width, height)) in self.pages.iter().enumerate() {
            let page = first_page + 2 * i;
            objects.push(format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {} {}] /Contents {} 0 R /Resources << /Font << /F1 3 0 R \
                 /F2 4 0 R /F3 5 0 R /F4 6 0 R >> >> >>",
                width,
                height,
                page + 1
            ));
            objects.push(format!("<< /Length {} >>\nstream\n{content}endstream", content.len()));
        }
        write_objects(&objects.into_iter().map(String::into_bytes).collect::<Vec<_>>())
    }
}

/// A PDF of `objects` (numbered from 1; the first is the catalog) with its cross-reference table.
pub fn write_objects(objects: &[Vec<u8>]) -> Vec<u8> {
    let mut out = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n", objects.len() + 1).as_bytes(),
    );
    out
}

/// The width of `text` in points: Helvetica's metrics for digits, punctuation and
/// letters (close enough to right-align numbers), Courier's fixed 0.6 em.
pub fn text_width(text: &str, size: f64, font: Font) -> f64 {
    if font == Font::Mono {
        return text.chars().count() as f64 * 0.6 * size;
    }
    let units: f64 = text
        .chars()
        .map(|c| match c {
            '0'..='9' | '$' | '€' => 556.0,
            '.' | ',' | ' ' | ':' | ';' | '\'' => 278.0,
            '-' | '(' | ')' | '/' => 333.0,
            'i' | 'j' | 'l' => 222.0,
            'f' | 't' | 'I' => 278.0,
            'm' | 'M' | 'W' => 833.0,
            'w' => 722.0,
            c if c.is_uppercase() => 667.0,
            _ => 556.0,
        })
        .sum();
    units / 1000.0 * size
}

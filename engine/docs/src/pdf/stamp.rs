//! Placing one line of text on a page, shared by the stamping routes (watermark, page
//! numbers): a Helvetica font and an opacity state added to the page's resources, a
//! content stream appended after the page's own, and positions worked out in the page
//! as the reader sees it (the crop box turned by /Rotate).

use lopdf::{Dictionary, Document, Object, ObjectId, Stream};

use crate::error::EngineError;
use crate::pdf::{self, Rect};

/// Helvetica advance widths in 1/1000 em of the WinAnsiEncoding codes 32 to 255, in code
/// order. Source: Adobe's Core14 AFM metrics, `Helvetica.afm` (version 002.000), the `WX`
/// of the glyph WinAnsiEncoding gives each code. 0 marks the codes WinAnsiEncoding leaves
/// unassigned (127, 129, 141, 143, 144, 157), which [`win_ansi`] never produces.
const HELVETICA_WIDTHS: [u16; 224] = [
    // 32-47: space ! " # $ % & ' ( ) * + , - . /
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278, // 48-63: 0-9 : ; < = > ?
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556, // 64-79: @ A-O
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778, // 80-95: P-Z [ \ ] ^ _
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556, // 96-111: ` a-o
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    // 112-127: p-z { | } ~ (127 unassigned)
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584, 0,
    // 128-143: Euro, -, quotesinglbase, florin, quotedblbase, ellipsis, dagger, daggerdbl,
    // circumflex, perthousand, Scaron, guilsinglleft, OE, -, Zcaron, -
    556, 0, 222, 556, 333, 1000, 556, 556, 333, 1000, 667, 333, 1000, 0, 611, 0,
    // 144-159: -, quoteleft, quoteright, quotedblleft, quotedblright, bullet, endash, emdash,
    // tilde, trademark, scaron, guilsinglright, oe, -, zcaron, Ydieresis
    0, 222, 222, 333, 333, 350, 556, 1000, 333, 1000, 500, 333, 944, 0, 500, 667,
    // 160-175: nbsp ¡ ¢ £ ¤ ¥ ¦ § ¨ © ª « ¬ soft-hyphen ® ¯
    278, 333, 556, 556, 556, 556, 260, 556, 333, 737, 370, 556, 584, 333, 737, 333,
    // 176-191: ° ± ² ³ ´ µ ¶ · ¸ ¹ º » ¼ ½ ¾ ¿
    400, 584, 333, 333, 333, 556, 537, 278, 333, 333, 365, 556, 834, 834, 834, 611,
    // 192-207: À-Å Æ Ç È-Ë Ì-Ï
    667, 667, 667, 667, 667, 667, 1000, 722, 667, 667, 667, 667, 278, 278, 278, 278,
    // 208-223: Ð Ñ Ò-Ö × Ø Ù-Ü Ý Þ ß
    722, 722, 778, 778, 778, 778, 778, 584, 778, 722, 722, 722, 722, 667, 667, 611,
    // 224-239: à-å æ ç è-ë ì-ï
    556, 556, 556, 556, 556, 556, 889, 500, 556, 556, 556, 556, 278, 278, 278, 278,
    // 240-255: ð ñ ò-ö ÷ ø ù-ü ý þ ÿ
    556, 556, 556, 556, 556, 556, 556, 584, 611, 556, 556, 556, 556, 500, 556, 500,
];

/// Helvetica's cap height and descender (Helvetica.afm), in 1/1000 em: the text box a
/// stamp is placed by runs from the descender to the cap height.
const CAP_HEIGHT: f64 = 718.0;
const DESCENDER: f64 = -207.0;

/// The characters WinAnsiEncoding puts at 0x80-0x9F (Latin-1 has controls there).
const WIN_ANSI_HIGH: [(char, u8); 27] = [
    ('€', 0x80),
    ('‚', 0x82),
    ('ƒ', 0x83),
    ('„', 0x84),
    ('…', 0x85),
    ('†', 0x86),
    ('‡', 0x87),
    ('ˆ', 0x88),
    ('‰', 0x89),
    ('Š', 0x8A),
    ('‹', 0x8B),
    ('Œ', 0x8C),
    ('Ž', 0x8E),
    ('\u{2018}', 0x91),
    ('\u{2019}', 0x92),
    ('\u{201C}', 0x93),
    ('\u{201D}', 0x94),
    ('•', 0x95),
    ('–', 0x96),
    ('—', 0x97),
    ('˜', 0x98),
    ('™', 0x99),
    ('š', 0x9A),
    ('›', 0x9B),
    ('œ', 0x9C),
    ('ž', 0x9E),
    ('Ÿ', 0x9F),
];

/// Encodes `text` in WinAnsiEncoding; a character the standard Helvetica cannot show
/// (outside Windows-1252, or a control character) is refused at `field`, named.
pub fn win_ansi(text: &str, field: &str) -> Result<Vec<u8>, EngineError> {
    text.chars()
        .map(|c| {
            let code = c as u32;
            let byte = match code {
                0x20..=0x7E | 0xA0..=0xFF => Some(code as u8),
                _ => WIN_ANSI_HIGH.iter().find(|(ch, _)| *ch == c).map(|(_, b)| *b),
            };
            byte.ok_or_else(|| {
                let shown = if c.is_control() { String::new() } else { format!("'{c}' ") };
                EngineError::invalid(
                    field,
                    format!(
                        "{field}: the character {shown}(U+{code:04X}) cannot be drawn with the standard Helvetica font; \
                         use characters of Windows-1252 (Western European) on one line"
                    ),
                )
            })
        })
        .collect()
}

/// The characters [`win_ansi`] encodes, less `except`, as the inside of a regex character
/// class (`\u0020-\u007E...`): the published patterns are built from the encoder's own table.
fn win_ansi_class(except: &[char]) -> String {
    let mut chars: Vec<char> = (0x20u32..=0x7E)
        .chain(0xA0..=0xFF)
        .filter_map(char::from_u32)
        .chain(WIN_ANSI_HIGH.iter().map(|(c, _)| *c))
        .filter(|c| !except.contains(c))
        .collect();
    chars.sort_unstable();
    let mut class = String::new();
    let mut i = 0;
    while i < chars.len() {
        let start = chars[i];
        while i + 1 < chars.len() && chars[i + 1] as u32 == chars[i] as u32 + 1 {
            i += 1;
        }
        class.push_str(&escaped(start));
        if chars[i] != start {
            class.push('-');
            class.push_str(&escaped(chars[i]));
        }
        i += 1;
    }
    class
}

/// The blanks `str::trim` removes that [`win_ansi`] takes: a text of only these is empty.
const BLANKS: [char; 2] = [' ', '\u{A0}'];

/// The pattern of a stamped line of text: [`win_ansi`]'s characters, not only blanks.
pub fn text_pattern() -> String {
    let blanks = win_ansi_class_of(&BLANKS);
    format!("^[{blanks}]*[{}][{}]*$", win_ansi_class(&BLANKS), win_ansi_class(&[]))
}

/// The pattern of a page-number label: [`win_ansi`]'s characters with `{n}` and `{total}`
/// as the only uses of `{`, not only blanks.
pub fn label_pattern() -> String {
    let blanks = win_ansi_class_of(&BLANKS);
    let piece = format!("[{}]|\\{{n\\}}|\\{{total\\}}", win_ansi_class(&['{']));
    let first = format!("[{}]|\\{{n\\}}|\\{{total\\}}", win_ansi_class(&[BLANKS[0], BLANKS[1], '{']));
    format!("^[{blanks}]*(?:{first})(?:{piece})*$")
}

/// `chars` as the inside of a regex character class.
fn win_ansi_class_of(chars: &[char]) -> String {
    chars.iter().copied().map(escaped).collect()
}

/// `c` as a `\uXXXX` escape of a pattern (every character [`win_ansi`] takes is below U+10000).
fn escaped(c: char) -> String {
    format!("\\u{:04X}", c as u32)
}

/// The standard Helvetica in WinAnsiEncoding, the font of everything this module draws.
pub fn helvetica() -> Dictionary {
    let mut font = Dictionary::new();
    font.set("Type", Object::Name(b"Font".to_vec()));
    font.set("Subtype", Object::Name(b"Type1".to_vec()));
    font.set("BaseFont", Object::Name(b"Helvetica".to_vec()));
    font.set("Encoding", Object::Name(b"WinAnsiEncoding".to_vec()));
    font
}

/// Width of WinAnsi-encoded `text` in Helvetica at `font_size`, in points.
pub fn text_width(text: &[u8], font_size: f64) -> f64 {
    let units: u32 = text
        .iter()
        .map(|&b| (b as usize).checked_sub(32).and_then(|i| HELVETICA_WIDTHS.get(i)).copied().unwrap_or(0) as u32)
        .sum();
    units as f64 * font_size / 1000.0
}

/// Parses a `#rrggbb` colour at `field` into RGB components from 0 to 1.
pub fn parse_color(text: &str, field: &str) -> Result<[f64; 3], EngineError> {
    let bad =
        || EngineError::invalid(field, format!("{field}: `{text}` is not a colour; give it as #rrggbb, e.g. #808080"));
    let hex = text.strip_prefix('#').ok_or_else(bad)?;
    if hex.len() != 6 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad());
    }
    let mut rgb = [0.0; 3];
    for (i, slot) in rgb.iter_mut().enumerate() {
        let part = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        *slot = part as f64 / 255.0;
    }
    Ok(rgb)
}

/// Refuses a number outside `min..=max` at `field`.
pub fn check_range(value: f64, min: f64, max: f64, field: &str) -> Result<f64, EngineError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(value)
    } else {
        Err(EngineError::invalid(field, format!("{field}: must be {} to {}, not {}", num(min), num(max), value)))
    }
}

/// Horizontal placement of the text box in the visible page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HAlign {
    /// `margin` from the left edge.
    Left,
    /// Centred.
    Center,
    /// `margin` from the right edge.
    Right,
}

/// Vertical placement of the text box in the visible page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VAlign {
    /// `margin` above the bottom edge.
    Bottom,
    /// Centred.
    Middle,
    /// `margin` below the top edge.
    Top,
}

/// How one line of text is drawn.
#[derive(Clone, Copy, Debug)]
pub struct Style {
    /// Font size in points.
    pub font_size: f64,
    /// Fill colour, RGB from 0 to 1.
    pub color: [f64; 3],
    /// Counter-clockwise turn of the text around its centre, in degrees, as the reader sees it.
    pub angle: f64,
    /// Where the (turned) text box goes.
    pub h: HAlign,
    /// Where the (turned) text box goes.
    pub v: VAlign,
    /// Distance of the text box from the edges it is placed against, in points.
    pub margin: f64,
}

/// The page as the reader sees it: its size, and the matrix taking visible coordinates
/// (origin at the lower-left corner the reader sees, y up) to the page's user space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Frame {
    /// Visible width in points.
    pub width: f64,
    /// Visible height in points.
    pub height: f64,
    /// `[a b c d e f]`, for `cm`.
    pub matrix: [f64; 6],
}

impl Frame {
    /// The frame of a page showing `crop` turned clockwise by `rotation` (0, 90, 180, 270).
    pub fn new(crop: Rect, rotation: i64) -> Frame {
        let (w, h) = (crop.width(), crop.height());
        let Rect { x0, y0, x1, y1 } = crop;
        // Where the visible lower-left corner lies in user space, and which user-space
        // directions the visible x and y axes run along once the page is turned.
        match rotation {
            90 => Frame { width: h, height: w, matrix: [0.0, 1.0, -1.0, 0.0, x1, y0] },
            180 => Frame { width: w, height: h, matrix: [-1.0, 0.0, 0.0, -1.0, x1, y1] },
            270 => Frame { width: h, height: w, matrix: [0.0, -1.0, 1.0, 0.0, x0, y1] },
            _ => Frame { width: w, height: h, matrix: [1.0, 0.0, 0.0, 1.0, x0, y0] },
        }
    }

    /// The frame of a page of `doc`.
    pub fn of_page(doc: &Document, page_id: ObjectId) -> Frame {
        Frame::new(pdf::crop_box(doc, page_id), pdf::rotation(doc, page_id))
    }

    /// A visible point in user space.
    pub fn to_user(&self, x: f64, y: f64) -> (f64, f64) {
        let [a, b, c, d, e, f] = self.matrix;
        (a * x + c * y + e, b * x + d * y + f)
    }
}

/// The text matrix `[cos sin -sin cos tx ty]` drawing `text` in visible coordinates so
/// that its box (width by descender-to-cap-height) is placed per `style`.
pub fn text_matrix(frame: &Frame, text: &[u8], style: &Style) -> [f64; 6] {
    let w = text_width(text, style.font_size);
    let h = (CAP_HEIGHT - DESCENDER) * style.font_size / 1000.0;
    let (sin, cos) = style.angle.to_radians().sin_cos();
    // Half the extent of the turned box along each visible axis.
    let hx = (cos.abs() * w + sin.abs() * h) / 2.0;
    let hy = (sin.abs() * w + cos.abs() * h) / 2.0;
    let m = style.margin;
    let cx = match style.h {
        HAlign::Left => m + hx,
        HAlign::Center => frame.width / 2.0,
        HAlign::Right => frame.width - m - hx,
    };
    let cy = match style.v {
        VAlign::Bottom => m + hy,
        VAlign::Middle => frame.height / 2.0,
        VAlign::Top => frame.height - m - hy,
    };
    // The baseline starts half the width left of the centre and below it by the box
    // centre's height above the baseline, both turned with the text.
    let (dx, dy) = (-w / 2.0, -(CAP_HEIGHT + DESCENDER) / 2.0 * style.font_size / 1000.0);
    [cos, sin, -sin, cos, cx + cos * dx - sin * dy, cy + sin * dx + cos * dy]
}

/// Adds text to pages: holds the objects every stamped page shares.
pub struct Stamper {
    font: ObjectId,
    state: Option<ObjectId>,
    open: ObjectId,
}

impl Stamper {
    /// Adds the shared Helvetica font, the opacity state (when `opacity` is given) and the
    /// `q` that opens each page's own content.
    pub fn new(doc: &mut Document, opacity: Option<f64>) -> Stamper {
        let font = doc.add_object(helvetica());
        let state = opacity.map(|alpha| {
            let mut gs = Dictionary::new();
            gs.set("Type", Object::Name(b"ExtGState".to_vec()));
            gs.set("ca", Object::Real(alpha as f32));
            gs.set("CA", Object::Real(alpha as f32));
            doc.add_object(gs)
        });
        let open = doc.add_object(Stream::new(Dictionary::new(), b"q\n".to_vec()));
        Stamper { font, state, open }
    }

    /// Draws WinAnsi-encoded `text` on the page, over its content, placed per `style`.
    pub fn stamp(&self, doc: &mut Document, page_id: ObjectId, text: &[u8], style: &Style) -> Result<(), EngineError> {
        let frame = Frame::of_page(doc, page_id);

        // The page gets its own copy of its resources (and of their /Font and /ExtGState
        // dictionaries): resources are often shared by many pages, and pages left out of
        // the selection must not change. Only the small dictionaries are copied; fonts,
        // images and the like stay shared by reference.
        let mut resources = pdf::own_resources(doc, page_id);
        let mut fonts = owned_dict(doc, &resources, b"Font");
        let font_name = unused_name(&fonts, "PcF");
        fonts.set(font_name.as_bytes(), Object::Reference(self.font));
        resources.set("Font", fonts);
        let state_name = match self.state {
            Some(id) => {
                let mut states = owned_dict(doc, &resources, b"ExtGState");
                let name = unused_name(&states, "PcGS");
                states.set(name.as_bytes(), Object::Reference(id));
                resources.set("ExtGState", states);
                Some(name)
            }
            None => None,
        };

        let content = stamp_content(&frame, text, style, &font_name, state_name.as_deref());
        pdf::draw_over(doc, page_id, self.open, content.into_bytes(), resources, "stamping a page")
    }
}

/// The stamp's content stream: it closes the `q` opened before the page's own content,
/// so the text is drawn in the page's initial graphics state whatever that content left.
fn stamp_content(frame: &Frame, text: &[u8], style: &Style, font: &str, state: Option<&str>) -> String {
    let mut out = String::from("\nQ\nq\n");
    out.push_str(&format!("{} cm\n", nums(&frame.matrix)));
    if let Some(state) = state {
        out.push_str(&format!("/{state} gs\n"));
    }
    out.push_str(&format!("{} rg\n", nums(&style.color)));
    out.push_str(&format!("BT\n/{font} {} Tf\n", num(style.font_size)));
    out.push_str(&format!("{} Tm\n", nums(&text_matrix(frame, text, style))));
    out.push_str(&format!("{} Tj\nET\nQ\n", literal(text)));
    out
}

/// A PDF literal string of `bytes`, ASCII only: delimiters and backslash escaped, other
/// bytes outside printable ASCII as octal escapes.
pub fn literal(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('(');
    for &b in bytes {
        match b {
            b'(' | b')' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7E => out.push(b as char),
            _ => out.push_str(&format!("\\{b:03o}")),
        }
    }
    out.push(')');
    out
}

/// The dictionary at `key` of `dict` as an owned copy (a reference followed); empty when
/// missing or not a dictionary.
fn owned_dict(doc: &Document, dict: &Dictionary, key: &[u8]) -> Dictionary {
    pdf::dict_at(doc, dict, key).cloned().unwrap_or_default()
}

/// `prefix1`, `prefix2`, … : the first name `dict` does not use.
pub fn unused_name(dict: &Dictionary, prefix: &str) -> String {
    (1..).map(|i| format!("{prefix}{i}")).find(|name| !dict.has(name.as_bytes())).unwrap_or_default()
}

/// A number for a content stream: plain decimal notation (PDF has no exponents),
/// trailing zeros dropped.
pub fn num(value: f64) -> String {
    let text = format!("{value:.6}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    if text == "-0" { "0".into() } else { text.into() }
}

fn nums(values: &[f64]) -> String {
    values.iter().map(|v| num(*v)).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use lopdf::content::Content;
    use lopdf::dictionary;
    use serde_json::{Value, json};

    use crate::catalog::Route;
    use crate::output::Reply;

    /// A PDF of Letter pages with the given extra page entries. Every page has its own
    /// content, which leaves the CTM scaled (to prove the stamp is drawn in a clean state),
    /// and resources shared by reference with a font named /F1 and a state /GS1.
    pub(crate) fn build(pages: Vec<Vec<(&str, Object)>>) -> Vec<u8> {
        let mut doc = Document::with_version("1.7");
        let pages_id = doc.new_object_id();
        let font = doc.add_object(dictionary! {
            "Type" => "Font", "Subtype" => "Type1", "BaseFont" => "Times-Roman",
        });
        let gs = doc.add_object(dictionary! { "Type" => "ExtGState", "LW" => 2 });
        let resources = doc.add_object(dictionary! {
            "Font" => dictionary! { "F1" => font },
            "ExtGState" => dictionary! { "GS1" => gs },
        });
        let mut kids = Vec::new();
        for extra in pages {
            let content =
                doc.add_object(Stream::new(Dictionary::new(), b"0.5 0 0 0.5 0 0 cm 0 0 m 100 100 l S".to_vec()));
            let mut page = dictionary! {
                "Type" => "Page", "Parent" => pages_id, "Contents" => content, "Resources" => resources,
                "MediaBox" => vec![0.into(), 0.into(), 612.into(), 792.into()],
            };
            for (k, v) in extra {
                page.set(k, v);
            }
            kids.push(Object::Reference(doc.add_object(page)));
        }
        let count = kids.len() as i64;
        doc.objects
            .insert(pages_id, Object::Dictionary(dictionary! { "Type" => "Pages", "Kids" => kids, "Count" => count }));
        let catalog = doc.add_object(dictionary! { "Type" => "Catalog", "Pages" => pages_id });
        doc.trailer.set("Root", catalog);
        let mut out = Vec::new();
        doc.save_to(&mut out).unwrap();
        out
    }

    pub(crate) fn rect(v: [f64; 4]) -> Object {
        Rect { x0: v[0], y0: v[1], x1: v[2], y1: v[3] }.to_object()
    }

    /// Runs route `R` on `pdf` named `filename`; returns the output's name and bytes.
    pub(crate) async fn run<R: Route>(
        pdf: &[u8],
        filename: &str,
        mut body: Value,
    ) -> Result<(String, Vec<u8>), EngineError> {
        use base64::Engine as _;
        body["file"] = json!({ "data": base64::engine::general_purpose::STANDARD.encode(pdf), "filename": filename });
        match crate::pdf::testing::call::<R>(&body).await? {
            Reply::Files(set) => {
                let file = set.into_single_file()?;
                Ok((file.filename, file.bytes))
            }
            Reply::Json(_) => panic!("{} answered JSON where a file was expected", R::INFO.path),
        }
    }

    /// Runs a command-line tool on `pdf` (its path appended last) and returns its stdout.
    pub(crate) fn tool(program: &str, args: &[&str], pdf: &[u8]) -> (bool, String) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.pdf");
        std::fs::write(&path, pdf).unwrap();
        let mut command = std::process::Command::new(program);
        command.args(args).arg(&path);
        if program == "pdftotext" {
            command.arg("-");
        }
        let out = command.output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Asserts `qpdf --check` passes.
    pub(crate) fn qpdf_check(pdf: &[u8]) {
        let (ok, text) = tool("qpdf", &["--check"], pdf);
        assert!(ok, "qpdf --check: {text}");
    }

    /// The text of page `n` per pdftotext.
    pub(crate) fn page_text(pdf: &[u8], n: u32) -> String {
        let n = n.to_string();
        tool("pdftotext", &["-f", &n, "-l", &n], pdf).1
    }

    /// The word boxes (xMin, yMin, xMax, yMax, word) of page `n` per `pdftotext -bbox`:
    /// visible coordinates, y down from the top. (Poppler 22 reports the unturned page size
    /// beside them, so tests give the visible size themselves.)
    pub(crate) fn page_words(pdf: &[u8], n: u32) -> Vec<(f64, f64, f64, f64, String)> {
        let n = n.to_string();
        let (_, html) = tool("pdftotext", &["-bbox", "-f", &n, "-l", &n], pdf);
        let attr = |tag: &str, name: &str| -> f64 {
            let start = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            tag[start..].split('"').next().unwrap().parse().unwrap()
        };
        html.split("<word ")
            .skip(1)
            .map(|part| {
                let (tag, rest) = part.split_once('>').unwrap();
                let word = rest.split("</word>").next().unwrap().to_string();
                (attr(tag, "xMin"), attr(tag, "yMin"), attr(tag, "xMax"), attr(tag, "yMax"), word)
            })
            .collect()
    }

    /// The text of page `n` in content order with all white space removed: Poppler 22
    /// breaks diagonal text into single letters, but keeps their order in `-raw` mode.
    pub(crate) fn page_letters(pdf: &[u8], n: u32) -> String {
        let n = n.to_string();
        tool("pdftotext", &["-raw", "-f", &n, "-l", &n], pdf).1.split_whitespace().collect()
    }

    /// The last content stream of page `n`: the stamp.
    pub(crate) fn stamp_ops(doc: &Document, n: u32) -> Vec<(String, Vec<Object>)> {
        let page = doc.get_dictionary(doc.get_pages()[&n]).unwrap();
        let contents = page.get(b"Contents").unwrap().as_array().unwrap();
        let last = contents.last().unwrap().as_reference().unwrap();
        let stream = doc.get_object(last).unwrap().as_stream().unwrap();
        let content = Content::decode(&stream.decompressed_content().unwrap_or(stream.content.clone())).unwrap();
        content.operations.into_iter().map(|op| (op.operator, op.operands)).collect()
    }

    /// The numeric operands of the first `operator` of the stamp on page `n`.
    pub(crate) fn operands(doc: &Document, n: u32, operator: &str) -> Vec<f64> {
        let ops = stamp_ops(doc, n);
        let (_, operands) = ops.iter().find(|(op, _)| op == operator).unwrap_or_else(|| panic!("no {operator}"));
        operands.iter().filter_map(|o| pdf::number(doc, o)).collect()
    }

    pub(crate) fn close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len(), "{actual:?} vs {expected:?}");
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() < 0.01, "got {actual:?}, expected {expected:?}");
        }
    }

    #[test]
    fn widths_follow_the_afm() {
        assert_eq!(text_width(b"Hello", 1000.0), (722 + 556 + 222 + 222 + 556) as f64);
        assert_eq!(text_width(&win_ansi("€é—", "/t").unwrap(), 1000.0), (556 + 556 + 1000) as f64);
        assert_eq!(text_width(b" ", 10.0), 2.78);
    }

    #[test]
    fn encodes_win_ansi_and_refuses_the_rest() {
        assert_eq!(win_ansi("A€’é", "/text").unwrap(), vec![b'A', 0x80, 0x92, 0xE9]);
        let e = win_ansi("Preis: 5 ₽", "/text").unwrap_err();
        assert_eq!(e.field.as_deref(), Some("/text"));
        assert!(
            e.message.starts_with("/text:") && e.message.contains("'₽'") && e.message.contains("U+20BD"),
            "{}",
            e.message
        );
        let e = win_ansi("two\nlines", "/format").unwrap_err();
        assert!(e.message.contains("U+000A"), "{}", e.message);
    }

    #[test]
    fn the_published_text_pattern_accepts_exactly_what_the_encoder_accepts() {
        let validator = crate::patterns::validator(&text_pattern());
        let takes = |text: &str| win_ansi(text, "/text").is_ok() && !text.trim().is_empty();
        for code in (0..0x2200).chain([0x20AC, 0x2122, 0xFFFD, 0x1F600]) {
            let Some(c) = char::from_u32(code) else { continue };
            for text in [c.to_string(), format!(" {c}"), format!("A{c}"), format!("{c}\u{a0}")] {
                assert_eq!(validator.is_valid(&serde_json::json!(text)), takes(&text), "{text:?} (U+{code:04X})");
            }
        }
    }

    #[test]
    fn literals_escape_delimiters_and_high_bytes() {
        assert_eq!(literal(b"a(b)c\\d"), "(a\\(b\\)c\\\\d)");
        assert_eq!(literal(&[0x80, b'x', 0xE9]), "(\\200x\\351)");
    }

    #[test]
    fn colours_are_hex_triplets() {
        close(&parse_color("#FF8000", "/color").unwrap(), &[1.0, 128.0 / 255.0, 0.0]);
        for bad in ["red", "#fff", "808080", "#80808g", "#8080800", "#ééé"] {
            let e = parse_color(bad, "/color").unwrap_err();
            assert_eq!(e.field.as_deref(), Some("/color"), "{bad}");
        }
    }

    #[test]
    fn frames_map_the_visible_corners_onto_the_crop_box() {
        let crop = Rect { x0: 100.0, y0: 100.0, x1: 712.0, y1: 892.0 };
        // For each rotation: the user-space points the visible lower-left and lower-right corners are.
        let cases = [
            (0, (612.0, 792.0), (100.0, 100.0), (712.0, 100.0)),
            (90, (792.0, 612.0), (712.0, 100.0), (712.0, 892.0)),
            (180, (612.0, 792.0), (712.0, 892.0), (100.0, 892.0)),
            (270, (792.0, 612.0), (100.0, 892.0), (100.0, 100.0)),
        ];
        for (rotation, size, lower_left, lower_right) in cases {
            let frame = Frame::new(crop, rotation);
            assert_eq!((frame.width, frame.height), size, "{rotation}");
            let ll = frame.to_user(0.0, 0.0);
            let lr = frame.to_user(frame.width, 0.0);
            close(&[ll.0, ll.1, lr.0, lr.1], &[lower_left.0, lower_left.1, lower_right.0, lower_right.1]);
            // The whole visible page is the crop box.
            let ur = frame.to_user(frame.width, frame.height);
            assert!(
                crop.x0 - 1e-9 <= ur.0 && ur.0 <= crop.x1 + 1e-9 && crop.y0 - 1e-9 <= ur.1 && ur.1 <= crop.y1 + 1e-9
            );
        }
    }

    #[test]
    fn turned_text_is_kept_inside_the_margins() {
        let frame = Frame::new(Rect { x0: 0.0, y0: 0.0, x1: 600.0, y1: 800.0 }, 0);
        let text = b"DRAFT";
        let w = text_width(text, 40.0);
        let style =
            Style { font_size: 40.0, color: [0.0; 3], angle: 90.0, h: HAlign::Left, v: VAlign::Bottom, margin: 36.0 };
        let m = text_matrix(&frame, text, &style);
        close(&m[..4], &[0.0, 1.0, -1.0, 0.0]);
        // Turned a quarter: the box is 925/1000 em wide and `w` high, its corner at (36, 36);
        // the baseline runs up at x = 36 + cap height (the glyph tops face left).
        close(&m[4..], &[36.0 + 0.718 * 40.0, 36.0]);
        assert!(w > 100.0);
    }
}

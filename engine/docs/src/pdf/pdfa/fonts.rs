//! Fonts for PDF/A: every font a page draws with must be embedded.
//!
//! The fonts used are found from the pages' resources down (form XObjects, patterns,
//! annotation appearances, Type 3 glyphs); a font only a form's default resources name is
//! not drawn with and is left alone. A simple font that is not embedded gets an installed
//! font of the same metrics (Liberation for Helvetica, Arial, Times and Courier; Carlito
//! and Caladea for Calibri and Cambria), cut to the glyphs its 256 codes can reach,
//! written as a non-symbolic TrueType font with WinAnsi encoding and widths read from the
//! program. A font with no such stand-in (Symbol, ZapfDingbats, a CID font, an unusual
//! family), or whose stated widths the stand-in does not match, refuses the call, naming
//! the font and the page.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use lopdf::{Dictionary, Document, Object, ObjectId, Stream, dictionary};
use sha2::{Digest, Sha256};

use super::scan::Scan;
use super::truetype::TrueType;
use crate::error::EngineError;

/// Largest difference, in thousandths of an em, between a width the PDF states and the
/// stand-in's, before the stand-in is judged not to have the same metrics.
const WIDTH_TOLERANCE: f64 = 15.0;
/// Largest font file read as a stand-in.
const MAX_FONT_FILE: u64 = 32 * 1024 * 1024;

/// A font given an installed stand-in.
#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct EmbeddedFont {
    /// The font's name in the document.
    pub font: String,
    /// The font embedded in its place (a subset: only the glyphs its codes reach).
    pub embedded: String,
}

/// Embeds a stand-in for every simple font `used` finds drawn and not embedded; refuses,
/// naming them, when some font cannot be.
pub fn embed_missing(doc: &mut Document, used: &Scan) -> Result<Vec<EmbeddedFont>, EngineError> {
    let mut embedded = Vec::new();
    let mut refused: Vec<String> = Vec::new();
    for &(id, page) in &used.fonts {
        // Codes shown, when every content was read (none: the font draws nothing).
        let none = BTreeSet::new();
        let shown = if used.complete { Some(used.codes.get(&id).unwrap_or(&none)) } else { None };
        let Ok(font) = doc.get_dictionary(id).cloned() else { continue };
        match check(doc, &font) {
            Status::Embedded => {}
            Status::Missing(reason) => refused.push(format!("{} (page {page}): {reason}", font_name(&font))),
            Status::Simple => match stand_in(doc, &font, shown) {
                Ok((replacement, descriptor, program, report)) => {
                    let key = if program.dict.has(b"Length2") { "FontFile" } else { "FontFile2" };
                    let program = doc.add_object(program);
                    let mut descriptor = descriptor;
                    descriptor.set(key, program);
                    let descriptor = doc.add_object(descriptor);
                    let mut replacement = replacement;
                    replacement.set("FontDescriptor", descriptor);
                    doc.objects.insert(id, Object::Dictionary(replacement));
                    embedded.push(report);
                }
                Err(reason) => refused.push(format!("{} (page {page}): {reason}", font_name(&font))),
            },
        }
    }
    if !refused.is_empty() {
        refused.sort();
        refused.dedup();
        return Err(EngineError::invalid_with(
            "font_not_embedded",
            "/file",
            format!("/file: PDF/A needs every font embedded, and these are not and cannot be: {}", refused.join("; ")),
        ));
    }
    Ok(embedded)
}

enum Status {
    Embedded,
    /// A simple font without its program: a stand-in may be found.
    Simple,
    Missing(String),
}

fn name_of(doc: &Document, dict: &Dictionary, key: &[u8]) -> Option<Vec<u8>> {
    let value = dict.get(key).ok()?;
    doc.dereference(value).ok()?.1.as_name().ok().map(<[u8]>::to_vec)
}

fn font_name(font: &Dictionary) -> String {
    font.get(b"BaseFont")
        .ok()
        .and_then(|n| n.as_name().ok())
        .map(|n| String::from_utf8_lossy(n).into_owned())
        .unwrap_or_else(|| "an unnamed font".into())
}

fn has_program(doc: &Document, descriptor: Option<&Dictionary>) -> bool {
    descriptor.is_some_and(|d| {
        [&b"FontFile"[..], b"FontFile2", b"FontFile3"]
            .iter()
            .any(|k| d.get(k).ok().and_then(|o| doc.dereference(o).ok()).is_some_and(|(_, o)| o.as_stream().is_ok()))
    })
}

fn descriptor<'a>(doc: &'a Document, font: &'a Dictionary) -> Option<&'a Dictionary> {
    doc.dereference(font.get(b"FontDescriptor").ok()?).ok()?.1.as_dict().ok()
}

fn check(doc: &Document, font: &Dictionary) -> Status {
    match name_of(doc, font, b"Subtype").as_deref() {
        Some(b"Type3") => Status::Embedded,
        Some(b"Type0") => {
            let descendant = font
                .get(b"DescendantFonts")
                .ok()
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_array().ok())
                .and_then(|a| a.first())
                .and_then(|o| doc.dereference(o).ok())
                .and_then(|(_, o)| o.as_dict().ok());
            match descendant {
                Some(cid) if has_program(doc, descriptor(doc, cid)) => Status::Embedded,
                _ => Status::Missing("a CID font that is not embedded (no stand-in is made for those)".into()),
            }
        }
        _ if has_program(doc, descriptor(doc, font)) => Status::Embedded,
        _ => Status::Simple,
    }
}

/// Moves font dictionaries written inside other objects into objects of their own, so
/// each can be replaced by its id (and found by [`super::scan`]).
pub(super) fn promote_direct_fonts(doc: &mut Document) {
    let ids: Vec<ObjectId> = doc.objects.keys().copied().collect();
    for id in ids {
        let Some(mut object) = doc.objects.remove(&id) else { continue };
        let dict = match &mut object {
            Object::Dictionary(d) => Some(d),
            Object::Stream(s) => Some(&mut s.dict),
            _ => None,
        };
        if let Some(dict) = dict {
            promote_in(doc, dict, 0);
        }
        doc.objects.insert(id, object);
    }
}

fn is_font(dict: &Dictionary) -> bool {
    dict.get(b"Type").ok().and_then(|t| t.as_name().ok()) == Some(b"Font")
        || (dict.has(b"BaseFont") && dict.has(b"Subtype"))
}

fn promote_in(doc: &mut Document, dict: &mut Dictionary, depth: usize) {
    if depth > 4 {
        return;
    }
    for (key, value) in dict.iter_mut() {
        // The descendant of a Type 0 font stays inside its array.
        if key == b"DescendantFonts" {
            continue;
        }
        if let Object::Dictionary(inner) = value {
            if is_font(inner) && depth > 0 {
                let font = std::mem::take(inner);
                *value = Object::Reference(doc.add_object(font));
            } else {
                promote_in(doc, inner, depth + 1);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Stand-ins

/// The installed TrueType fonts, by file name, found once.
fn installed() -> &'static HashMap<String, PathBuf> {
    static FONTS: OnceLock<HashMap<String, PathBuf>> = OnceLock::new();
    FONTS.get_or_init(|| {
        let mut found = HashMap::new();
        for root in ["/usr/share/fonts", "/usr/local/share/fonts"] {
            walk(Path::new(root), 0, &mut found);
        }
        found
    })
}

fn walk(dir: &Path, depth: usize, found: &mut HashMap<String, PathBuf>) {
    if depth > 6 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_dir() => walk(&path, depth + 1, found),
            Ok(_) => {
                if let Some(name) = path.file_name().and_then(|n| n.to_str())
                    && name.to_ascii_lowercase().ends_with(".ttf")
                {
                    found.entry(name.to_string()).or_insert(path);
                }
            }
            Err(_) => {}
        }
    }
}

/// Families with a free font of the same metrics: name prefixes (lowercase letters and
/// digits only), prefixes that are another design, and the stand-in's file name stem.
const FAMILIES: [(&[&str], &[&str], &str, bool); 6] = [
    (
        &["helvetica", "arial", "liberationsans"],
        &[
            "arialnarrow",
            "arialblack",
            "arialunicode",
            "arialrounded",
            "helveticanarrow",
            "helveticaneue",
            "liberationsansnarrow",
        ],
        "LiberationSans",
        false,
    ),
    (&["timesnewroman", "times", "liberationserif"], &[], "LiberationSerif", true),
    (&["couriernew", "courier", "liberationmono"], &[], "LiberationMono", false),
    (&["calibri", "carlito"], &[], "Carlito", false),
    (&["cambria", "caladea"], &["cambriamath"], "Caladea", true),
    (&["arialnarrow", "liberationsansnarrow"], &[], "LiberationSansNarrow", false),
];

/// The stand-in's file for a font name, and whether the family has serifs.
fn stand_in_file(name: &str, bold: bool, italic: bool) -> Result<(PathBuf, bool), String> {
    let plain: String = name
        .rsplit('+')
        .next()
        .unwrap_or(name)
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect::<String>()
        .to_ascii_lowercase();
    let (stem, serif) = FAMILIES
        .iter()
        .find(|(names, others, _, _)| {
            names.iter().any(|n| plain.starts_with(n)) && !others.iter().any(|o| plain.starts_with(o))
        })
        .map(|(_, _, stem, serif)| (*stem, *serif))
        .ok_or_else(|| "not embedded, and no font of the same metrics is known for it".to_string())?;
    let style = match (bold, italic) {
        (false, false) => "Regular",
        (true, false) => "Bold",
        (false, true) => "Italic",
        (true, true) => "BoldItalic",
    };
    let file = format!("{stem}-{style}.ttf");
    installed()
        .get(&file)
        .cloned()
        .map(|path| (path, serif))
        .ok_or_else(|| format!("not embedded, and {file}, the font of the same metrics, is not installed"))
}

/// StandardEncoding's glyph names at the codes where WinAnsiEncoding has another glyph.
const STANDARD_NAMES: [(u8, &str); 56] = [
    (0x27, "quoteright"),
    (0x60, "quoteleft"),
    (0xA1, "exclamdown"),
    (0xA2, "cent"),
    (0xA3, "sterling"),
    (0xA4, "fraction"),
    (0xA5, "yen"),
    (0xA6, "florin"),
    (0xA7, "section"),
    (0xA8, "currency"),
    (0xA9, "quotesingle"),
    (0xAA, "quotedblleft"),
    (0xAB, "guillemotleft"),
    (0xAC, "guilsinglleft"),
    (0xAD, "guilsinglright"),
    (0xAE, "fi"),
    (0xAF, "fl"),
    (0xB1, "endash"),
    (0xB2, "dagger"),
    (0xB3, "daggerdbl"),
    (0xB4, "periodcentered"),
    (0xB6, "paragraph"),
    (0xB7, "bullet"),
    (0xB8, "quotesinglbase"),
    (0xB9, "quotedblbase"),
    (0xBA, "quotedblright"),
    (0xBB, "guillemotright"),
    (0xBC, "ellipsis"),
    (0xBD, "perthousand"),
    (0xBF, "questiondown"),
    (0xC1, "grave"),
    (0xC2, "acute"),
    (0xC3, "circumflex"),
    (0xC4, "tilde"),
    (0xC5, "macron"),
    (0xC6, "breve"),
    (0xC7, "dotaccent"),
    (0xC8, "dieresis"),
    (0xCA, "ring"),
    (0xCB, "cedilla"),
    (0xCD, "hungarumlaut"),
    (0xCE, "ogonek"),
    (0xCF, "caron"),
    (0xD0, "emdash"),
    (0xE1, "AE"),
    (0xE3, "ordfeminine"),
    (0xE8, "Lslash"),
    (0xE9, "Oslash"),
    (0xEA, "OE"),
    (0xEB, "ordmasculine"),
    (0xF1, "ae"),
    (0xF5, "dotlessi"),
    (0xF8, "lslash"),
    (0xF9, "oslash"),
    (0xFA, "oe"),
    (0xFB, "germandbls"),
];

/// The glyph names an /Encoding's /Differences gives, by code.
fn differences(doc: &Document, font: &Dictionary) -> HashMap<u8, Vec<u8>> {
    let mut names = HashMap::new();
    let Some(array) = font
        .get(b"Encoding")
        .ok()
        .and_then(|e| doc.dereference(e).ok())
        .and_then(|(_, e)| e.as_dict().ok())
        .and_then(|e| e.get(b"Differences").ok())
        .and_then(|d| doc.dereference(d).ok())
        .and_then(|(_, d)| d.as_array().ok())
    else {
        return names;
    };
    let mut code: i64 = 0;
    for item in array {
        match item {
            Object::Integer(n) => code = *n,
            Object::Name(name) => {
                if let Ok(c) = u8::try_from(code) {
                    names.insert(c, name.clone());
                }
                code += 1;
            }
            _ => {}
        }
    }
    names
}

/// The text each code of a simple font stands for, as the font's encoding says.
fn code_chars(doc: &Document, font: &Dictionary) -> [Option<char>; 256] {
    let mut chars = [None; 256];
    // An encoding name that is not one of the standard ones is ignored, as readers do.
    let known = [&b"WinAnsiEncoding"[..], b"MacRomanEncoding", b"StandardEncoding", b"MacExpertEncoding"];
    let mut font = font.clone();
    if let Ok(Object::Name(name)) = font.get(b"Encoding")
        && !known.contains(&name.as_slice())
    {
        font.remove(b"Encoding");
    }
    let Ok(encoding) = font.get_font_encoding(doc) else { return chars };
    for (code, slot) in chars.iter_mut().enumerate() {
        if let Ok(text) = encoding.bytes_to_string(&[code as u8]) {
            let mut it = text.chars();
            if let (Some(c), None) = (it.next(), it.next())
                && !c.is_control()
                && c != '\u{FFFD}'
            {
                *slot = Some(c);
            }
        }
    }
    chars
}

/// The replacement font dictionary (without its descriptor's id), the descriptor, the
/// program stream and the report line; or why no stand-in fits.
fn stand_in(
    doc: &Document,
    font: &Dictionary,
    shown: Option<&BTreeSet<u8>>,
) -> Result<(Dictionary, Dictionary, Stream, EmbeddedFont), String> {
    let name = font_name(font);
    let lower = name.to_ascii_lowercase();
    let old_descriptor = descriptor(doc, font);
    let number = |key: &[u8]| old_descriptor.and_then(|d| d.get(key).ok()).and_then(|v| crate::pdf::number(doc, v));
    let flags = number(b"Flags").unwrap_or(0.0) as u32;
    let bold = lower.contains("bold")
        || lower.contains("black")
        || number(b"FontWeight").is_some_and(|w| w >= 600.0)
        || flags & (1 << 18) != 0;
    let italic = lower.contains("italic")
        || lower.contains("oblique")
        || number(b"ItalicAngle").is_some_and(|a| a != 0.0)
        || flags & (1 << 6) != 0;
    if let Some(symbols) = symbol_font(&name) {
        return type1_stand_in(doc, font, symbols, shown);
    }
    let (path, serif) = stand_in_file(&name, bold, italic)?;
    let data = std::fs::File::open(&path)
        .and_then(|f| {
            use std::io::Read;
            let mut bytes = Vec::new();
            f.take(MAX_FONT_FILE).read_to_end(&mut bytes).map(|_| bytes)
        })
        .map_err(|e| format!("not embedded, and {} cannot be read: {e}", path.display()))?;
    let program =
        TrueType::parse(&data).ok_or_else(|| format!("not embedded, and {} is not a TrueType font", path.display()))?;
    let chars = code_chars(doc, font);
    let given_widths = stated_widths(doc, font);
    let mut glyphs = [None; 256];
    let mut keep = BTreeSet::new();
    for (code, c) in chars.iter().enumerate() {
        if let Some(glyph) = c.and_then(|c| program.glyph_for(c)) {
            glyphs[code] = Some(glyph);
            // Only the glyphs the text shows are drawn in the cut (all when none was found).
            if shown.is_none_or(|s| s.contains(&(code as u8))) {
                keep.insert(glyph);
            }
        }
    }
    // The stand-in must draw each code shown as wide as the PDF says it is.
    let mut off = Vec::new();
    for (code, stated) in &given_widths {
        if shown.is_some_and(|s| !s.contains(code)) {
            continue;
        }
        let Some(glyph) = glyphs[*code as usize] else { continue };
        let width = program.to_pdf(program.advance(glyph) as f64);
        if *stated > 0.0 && (width - stated).abs() > WIDTH_TOLERANCE {
            off.push(format!(
                "{:?} is {stated:.0} wide, {width:.0} in {}",
                chars[*code as usize].unwrap_or(' '),
                path.display()
            ));
        }
    }
    if !off.is_empty() {
        off.truncate(3);
        return Err(format!("not embedded, and the font of the same family has other widths ({})", off.join(", ")));
    }
    let mapped: Vec<u8> = (0..=255u8).filter(|&c| glyphs[c as usize].is_some()).collect();
    let (Some(&first), Some(&last)) = (mapped.first(), mapped.last()) else {
        return Err(
            "not embedded, and none of its codes stands for a character the font of the same metrics has".into()
        );
    };
    let winansi = winansi_chars(doc);
    let old_names = differences(doc, font);
    let mut changed = Vec::new();
    for &code in &mapped {
        let c = chars[code as usize];
        if c == winansi[code as usize] {
            continue;
        }
        let name = old_names.get(&code).cloned().or_else(|| {
            STANDARD_NAMES
                .iter()
                .find(|(k, _)| *k == code)
                .filter(|(_, n)| lopdf_char(n) == c)
                .map(|(_, n)| n.as_bytes().to_vec())
        });
        let name = name.unwrap_or_else(|| format!("uni{:04X}", c.map(|c| c as u32).unwrap_or(0)).into_bytes());
        changed.push((code, name));
    }
    let encoding = if changed.is_empty() {
        Object::Name(b"WinAnsiEncoding".to_vec())
    } else {
        let mut differences = Vec::new();
        let mut previous: Option<u8> = None;
        for (code, name) in changed {
            if previous.is_none_or(|p| p.checked_add(1) != Some(code)) {
                differences.push(Object::Integer(code as i64));
            }
            differences.push(Object::Name(name));
            previous = Some(code);
        }
        Object::Dictionary(
            dictionary! { "Type" => "Encoding", "BaseEncoding" => "WinAnsiEncoding", "Differences" => differences },
        )
    };
    let widths: Vec<Object> = (first..=last)
        .map(|code| {
            let width = glyphs[code as usize].map(|g| program.to_pdf(program.advance(g) as f64)).unwrap_or(0.0);
            Object::Real(((width * 1000.0).round() / 1000.0) as f32)
        })
        .collect();
    let postscript = program.postscript_name().unwrap_or_else(|| "Font".into());
    let tag: String = {
        let mut hash = Sha256::new();
        hash.update(postscript.as_bytes());
        for g in &keep {
            hash.update(g.to_be_bytes());
        }
        hash.finalize().iter().take(6).map(|b| (b'A' + b % 26) as char).collect()
    };
    let base_font = format!("{tag}+{postscript}");
    let cut = program.cut(&keep);
    let mut stream = Stream::new(dictionary! { "Length1" => cut.len() as i64 }, cut);
    stream.compress().map_err(|e| format!("compressing the stand-in failed: {e}"))?;
    let [x0, y0, x1, y1] = program.bbox().map(|v| Object::Integer(program.to_pdf(v as f64).round() as i64));
    let (ascent, descent) = program.ascent_descent();
    let (angle, fixed) = program.italic_angle_and_fixed();
    let mut flags = 32;
    if fixed {
        flags |= 1;
    }
    if serif {
        flags |= 2;
    }
    if italic {
        flags |= 64;
    }
    let weight = program.weight();
    let descriptor = dictionary! {
        "Type" => "FontDescriptor",
        "FontName" => Object::Name(base_font.clone().into_bytes()),
        "Flags" => flags,
        "FontBBox" => vec![x0, y0, x1, y1],
        "ItalicAngle" => Object::Real(angle as f32),
        "Ascent" => program.to_pdf(ascent as f64).round() as i64,
        "Descent" => program.to_pdf(descent as f64).round() as i64,
        "CapHeight" => program.to_pdf(program.cap_height().unwrap_or((ascent as f64 * 0.7) as i16) as f64).round() as i64,
        "StemV" => if weight >= 600 { 120 } else { 80 },
        "FontWeight" => weight as i64,
    };
    let mut replacement = dictionary! {
        "Type" => "Font",
        "Subtype" => "TrueType",
        "BaseFont" => Object::Name(base_font.into_bytes()),
        "FirstChar" => first as i64,
        "LastChar" => last as i64,
        "Widths" => widths,
        "Encoding" => encoding,
    };
    if let Ok(to_unicode) = font.get(b"ToUnicode") {
        replacement.set("ToUnicode", to_unicode.clone());
    }
    let report = EmbeddedFont { font: name, embedded: postscript };
    Ok((replacement, descriptor, stream, report))
}

/// The symbol fonts of the standard 14 and the file stem of their URW stand-ins.
fn symbol_font(name: &str) -> Option<&'static str> {
    let plain: String = name.rsplit('+').next().unwrap_or(name).chars().filter(char::is_ascii_alphanumeric).collect();
    match plain.to_ascii_lowercase().as_str() {
        "zapfdingbats" | "dingbats" | "itczapfdingbats" => Some("D050000L"),
        "symbol" | "symbolmt" => Some("StandardSymbolsPS"),
        _ => None,
    }
}

/// Where the URW fonts (metric clones of the standard 14, installed with Ghostscript) are.
const URW_DIRS: [&str; 2] = ["/usr/share/fonts/type1/urw-base35", "/usr/share/fonts/type1/gsfonts"];

/// A Type 1 stand-in for Symbol or ZapfDingbats: the URW program whole, its own
/// encoding, widths from its metrics file.
fn type1_stand_in(
    doc: &Document,
    font: &Dictionary,
    stem: &str,
    shown: Option<&BTreeSet<u8>>,
) -> Result<(Dictionary, Dictionary, Stream, EmbeddedFont), String> {
    let found = URW_DIRS.iter().map(|d| Path::new(d).join(format!("{stem}.t1"))).find(|p| p.is_file());
    let Some(path) = found else {
        return Err(format!(
            "not embedded, and {stem}.t1, the font of the same metrics (fonts-urw-base35), is not installed"
        ));
    };
    let program =
        std::fs::read(&path).map_err(|e| format!("not embedded, and {} cannot be read: {e}", path.display()))?;
    let afm = std::fs::read_to_string(path.with_extension("afm"))
        .map_err(|e| format!("not embedded, and the metrics of {} cannot be read: {e}", path.display()))?;
    let metrics = Afm::parse(&afm);
    let (length1, length2) =
        type1_segments(&program).ok_or_else(|| format!("{} is not a Type 1 font program", path.display()))?;
    let names = differences(doc, font);
    let width_of = |code: u8| -> Option<f64> {
        match names.get(&code) {
            Some(name) => metrics.by_name.get(name.as_slice()).copied(),
            None => metrics.by_code.get(&code).copied(),
        }
    };
    for (code, stated) in stated_widths(doc, font) {
        if shown.is_some_and(|s| !s.contains(&code)) {
            continue;
        }
        if let Some(width) = width_of(code)
            && stated > 0.0
            && (width - stated).abs() > WIDTH_TOLERANCE
        {
            return Err(format!(
                "not embedded, and {stem} draws code {code} {width:.0} wide where the PDF says {stated:.0}"
            ));
        }
    }
    let first = 32u8;
    let last = 255u8;
    let widths: Vec<Object> =
        (first..=last).map(|c| Object::Integer(width_of(c).unwrap_or(0.0).round() as i64)).collect();
    let mut stream = Stream::new(
        dictionary! { "Length1" => length1 as i64, "Length2" => length2 as i64, "Length3" => (program.len() - length1 - length2) as i64 },
        program,
    );
    stream.compress().map_err(|e| format!("compressing the stand-in failed: {e}"))?;
    // The font keeps its name: readers know the symbols of ZapfDingbats and Symbol by it.
    let base: String = font_name(font).rsplit('+').next().unwrap_or(stem).to_string();
    let program_name = metrics.font_name.clone().unwrap_or_else(|| stem.to_string());
    let [x0, y0, x1, y1] = metrics.bbox;
    let descriptor = dictionary! {
        "Type" => "FontDescriptor",
        "FontName" => Object::Name(base.clone().into_bytes()),
        "Flags" => 4,
        "FontBBox" => vec![x0.into(), y0.into(), x1.into(), y1.into()],
        "ItalicAngle" => 0,
        "Ascent" => y1,
        "Descent" => y0,
        "CapHeight" => y1,
        "StemV" => 80,
    };
    let mut replacement = font.clone();
    replacement.remove(b"FontDescriptor");
    replacement.set("Subtype", "Type1");
    replacement.set("BaseFont", Object::Name(base.clone().into_bytes()));
    replacement.set("FirstChar", first as i64);
    replacement.set("LastChar", last as i64);
    replacement.set("Widths", widths);
    Ok((replacement, descriptor, stream, EmbeddedFont { font: font_name(font), embedded: program_name }))
}

/// The clear-text and encrypted lengths of a Type 1 program (the rest is its trailer of zeros).
fn type1_segments(program: &[u8]) -> Option<(usize, usize)> {
    let eexec = program.windows(5).position(|w| w == b"eexec")? + 5;
    let mut length1 = eexec;
    while program.get(length1).is_some_and(|b| matches!(b, b'\r' | b'\n' | b' ' | b'\t')) {
        length1 += 1;
    }
    let zeros = program[length1..].windows(64).position(|w| w.iter().all(|&b| b == b'0'))?;
    // The trailer starts at the line holding the zeros.
    let mut end = length1 + zeros;
    while end > length1 && matches!(program[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    Some((length1, end - length1))
}

/// What a font metrics file says.
struct Afm {
    font_name: Option<String>,
    bbox: [i64; 4],
    by_code: HashMap<u8, f64>,
    by_name: HashMap<Vec<u8>, f64>,
}

impl Afm {
    fn parse(text: &str) -> Afm {
        let mut afm =
            Afm { font_name: None, bbox: [0, -200, 1000, 900], by_code: HashMap::new(), by_name: HashMap::new() };
        for line in text.lines() {
            if let Some(name) = line.strip_prefix("FontName ") {
                afm.font_name = Some(name.trim().to_string());
            } else if let Some(bbox) = line.strip_prefix("FontBBox ") {
                let v: Vec<i64> = bbox.split_whitespace().filter_map(|n| n.parse().ok()).collect();
                if let [a, b, c, d] = v[..] {
                    afm.bbox = [a, b, c, d];
                }
            } else if line.starts_with("C ") {
                let (mut code, mut width, mut name) = (None, None, None);
                for part in line.split(';') {
                    let mut words = part.split_whitespace();
                    match (words.next(), words.next()) {
                        (Some("C"), Some(c)) => code = c.parse::<i64>().ok(),
                        (Some("WX"), Some(w)) => width = w.parse::<f64>().ok(),
                        (Some("N"), Some(n)) => name = Some(n.as_bytes().to_vec()),
                        _ => {}
                    }
                }
                let Some(width) = width else { continue };
                if let Some(code) = code.and_then(|c| u8::try_from(c).ok()) {
                    afm.by_code.insert(code, width);
                }
                if let Some(name) = name {
                    afm.by_name.insert(name, width);
                }
            }
        }
        afm
    }
}

/// The character a glyph name stands for, through lopdf's glyph list.
fn lopdf_char(name: &str) -> Option<char> {
    let mut dict = dictionary! { "Type" => "Font", "Encoding" => dictionary! { "Differences" => vec![Object::Integer(65), Object::Name(name.as_bytes().to_vec())] } };
    dict.set("Subtype", "Type1");
    let doc = Document::new();
    let encoding = dict.get_font_encoding(&doc).ok()?;
    encoding.bytes_to_string(&[65]).ok()?.chars().next()
}

/// The character each code stands for in WinAnsiEncoding.
fn winansi_chars(doc: &Document) -> [Option<char>; 256] {
    code_chars(doc, &dictionary! { "Type" => "Font", "Subtype" => "TrueType", "Encoding" => "WinAnsiEncoding" })
}

/// The widths the font dictionary states, by code.
fn stated_widths(doc: &Document, font: &Dictionary) -> Vec<(u8, f64)> {
    let first = font.get(b"FirstChar").ok().and_then(|v| crate::pdf::number(doc, v)).unwrap_or(0.0) as i64;
    let Some(widths) =
        font.get(b"Widths").ok().and_then(|w| doc.dereference(w).ok()).and_then(|(_, w)| w.as_array().ok())
    else {
        return Vec::new();
    };
    widths
        .iter()
        .enumerate()
        .filter_map(|(i, w)| Some((u8::try_from(first + i as i64).ok()?, crate::pdf::number(doc, w)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_families_and_refuses_others() {
        let ok = |name: &str| {
            stand_in_file(name, false, false).map(|(p, _)| p.file_name().unwrap().to_string_lossy().into_owned())
        };
        assert_eq!(ok("Helvetica").as_deref(), Ok("LiberationSans-Regular.ttf"));
        assert_eq!(ok("ABCDEF+ArialMT").as_deref(), Ok("LiberationSans-Regular.ttf"));
        assert_eq!(ok("Times New Roman").as_deref(), Ok("LiberationSerif-Regular.ttf"));
        assert_eq!(ok("Arial Narrow").as_deref(), Ok("LiberationSansNarrow-Regular.ttf"));
        assert!(ok("Wingdings").unwrap_err().contains("no font of the same metrics"));
        assert_eq!(symbol_font("ABCDEF+ZapfDingbats"), Some("D050000L"));
        let program = b"%!PS-AdobeFont-1.0\ncurrentfile eexec\r\x01\x02\x03\n0000000000000000000000000000000000000000000000000000000000000000\ncleartomark\n";
        assert_eq!(type1_segments(program), Some((37, 3)));
        assert!(ok("Arial Black").is_err());
        assert_eq!(lopdf_char("quoteright"), Some('\u{2019}'));
    }
}
